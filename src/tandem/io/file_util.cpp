// POSIX file helpers: positioned reads and atomic writes.
#include "tandem/io/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "tandem/core/error.h"

namespace tandem::io {

namespace {
constexpr size_t kBufferSize = 1 << 20;

std::string errno_text(int err) { return std::strerror(err); }

std::string parent_dir(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
}  // namespace

FileReader::FileReader(std::string path, const char* fn) : path_(std::move(path)), fn_(fn) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw RuntimeError(str_cat("[", fn_, "] ", path_, ": cannot open: ", errno_text(errno)));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    throw RuntimeError(str_cat("[", fn_, "] ", path_, ": cannot stat: ", errno_text(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw RuntimeError(str_cat("[", fn_, "] ", path_, ": is a directory, expected a file"));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::read_at(void* dst, uint64_t n, uint64_t offset) const {
  if (offset > size_ || n > size_ - offset)
    throw RuntimeError(str_cat("[", fn_, "] ", path_, ": read of ", n, " bytes at offset ", offset,
                               " runs past the end of the file (", size_, " bytes)"));
  auto* p = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < n) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - done, 1u << 30));
    ssize_t r = ::pread(fd_, p + done, chunk, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(str_cat("[", fn_, "] ", path_, ": read failed at offset ", offset + done, ": ",
                                 errno_text(errno)));
    }
    if (r == 0)
      throw RuntimeError(str_cat("[", fn_, "] ", path_, ": unexpected end of file at offset ", offset + done,
                                 " (the file shrank while reading?)"));
    done += static_cast<uint64_t>(r);
  }
}

void FileWriter::write_raw(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t r = ::write(fd_, p, std::min<size_t>(n, 1u << 30));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(str_cat("[", fn_, "] ", path_, ": write failed: ", errno_text(errno)));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
}

void FileWriter::write(const void* data, size_t n) {
  pos_ += n;
  if (buf_.size() + n <= kBufferSize) {
    const auto* p = static_cast<const char*>(data);
    buf_.insert(buf_.end(), p, p + n);
    return;
  }
  flush();
  write_raw(data, n);
}

void FileWriter::flush() {
  if (buf_.empty()) return;
  write_raw(buf_.data(), buf_.size());
  buf_.clear();
}

void atomic_write(const std::string& path, const char* fn, const std::function<void(FileWriter&)>& body) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = str_cat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      throw RuntimeError(str_cat("[", fn, "] ", path, ": cannot create temporary file ", tmp, ": ", errno_text(errno)));
  }
  if (fd < 0) throw RuntimeError(str_cat("[", fn, "] ", path, ": cannot create a temporary file (names taken)"));
  try {
    FileWriter w(fd, path, fn);
    body(w);
    w.flush();
    if (::fsync(fd) != 0) throw RuntimeError(str_cat("[", fn, "] ", path, ": fsync failed: ", errno_text(errno)));
    int rc = ::close(fd);
    fd = -1;
    if (rc != 0) throw RuntimeError(str_cat("[", fn, "] ", path, ": close failed: ", errno_text(errno)));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw RuntimeError(str_cat("[", fn, "] ", path, ": cannot rename ", tmp, " over it: ", errno_text(errno)));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable. Best effort: some filesystems refuse directory fsync.
  int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace tandem::io
