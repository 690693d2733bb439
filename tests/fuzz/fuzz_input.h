#pragma once
// The fuzz targets' input as a file: the loaders take paths, so each input is written to
// an anonymous in-memory file (memfd) and named by its /proc/self/fd path. No disk
// writes, nothing left behind, and the same fd is reused for every input.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace tandem::fuzz {

/// Replaces the in-memory file's contents with data[0, size) and returns its path.
inline const std::string& input_file(const uint8_t* data, size_t size) {
  static int fd = -1;
  static std::string path;
  if (fd < 0) {
    fd = ::memfd_create("tandem-fuzz-input", 0);
    if (fd < 0) std::abort();
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  if (::ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    const ssize_t r = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (r <= 0) std::abort();
    done += static_cast<size_t>(r);
  }
  return path;
}

}  // namespace tandem::fuzz
