#include "tandem/runtime/spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "tandem/core/error.h"

namespace tandem::runtime {

SpillFile::SpillFile(const std::string& directory) : dir_(directory) {
#ifdef O_TMPFILE
  fd_ = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd_ < 0) {
    // File systems without O_TMPFILE: make a name and unlink it at once.
    std::string pattern = directory + "/tandem-spill-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    fd_ = ::mkstemp(name.data());
    if (fd_ >= 0) ::unlink(name.data());
  }
  TANDEM_CHECK(fd_ >= 0, RuntimeError, "spill file", "cannot create a spill file in '", directory, "': ",
               std::strerror(errno), " (set TANDEM_SPILL_DIR to a writable directory)");
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SpillFile::write(int64_t offset, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    TANDEM_CHECK(w > 0, RuntimeError, "spill file", "writing ", n, " bytes at offset ", offset, " of a spill file in '",
                 dir_, "' failed: ", w < 0 ? std::strerror(errno) : "nothing written");
    p += w;
    offset += w;
    n -= static_cast<size_t>(w);
  }
}

void SpillFile::read(int64_t offset, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    TANDEM_CHECK(r > 0, RuntimeError, "spill file", "reading ", n, " bytes at offset ", offset, " of a spill file in '",
                 dir_, "' failed: ", r < 0 ? std::strerror(errno) : "the file ends there");
    p += r;
    offset += r;
    n -= static_cast<size_t>(r);
  }
}

}  // namespace tandem::runtime
