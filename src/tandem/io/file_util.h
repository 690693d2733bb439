#pragma once
// Small POSIX file helpers for the io layer: bounds-checked positioned reads and atomic
// writes (temporary file in the same directory, fsync, rename).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tandem::io {

/// A read-only file opened for positioned reads. Every read checks that it stays inside
/// the size seen at open time and that the bytes really arrive, so a file that is short
/// or shrinks raises RuntimeError instead of yielding garbage.
class FileReader {
 public:
  /// Opens `path`; RuntimeError "[fn] path: cannot open: <reason>" on failure (a
  /// directory is rejected too). `fn` prefixes every error message.
  FileReader(std::string path, const char* fn);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  /// File size in bytes at open time.
  uint64_t size() const { return size_; }
  /// Reads exactly n bytes at `offset` into dst. RuntimeError if [offset, offset + n)
  /// is not inside the file or the read fails or comes up short.
  void read_at(void* dst, uint64_t n, uint64_t offset) const;

 private:
  std::string path_;
  const char* fn_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Sequential writer handed to atomic_write's callback. Small writes are buffered.
class FileWriter {
 public:
  /// Writes to the open descriptor `fd`; `path` and `fn` name it in errors (both must
  /// outlive the writer).
  FileWriter(int fd, const std::string& path, const char* fn) : fd_(fd), path_(path), fn_(fn) {}
  /// Appends n bytes; RuntimeError naming the file and the system error on failure.
  void write(const void* data, size_t n);
  /// Writes out the buffer (atomic_write calls it before syncing).
  void flush();
  /// Bytes written so far (buffered included).
  uint64_t position() const { return pos_; }

 private:
  void write_raw(const void* data, size_t n);
  int fd_;
  const std::string& path_;
  const char* fn_;
  std::vector<char> buf_;
  uint64_t pos_ = 0;
};

/// Creates a temporary file next to `path`, lets `body` write it, then flushes, fsyncs,
/// closes and renames it over `path` (and fsyncs the directory, best effort). If
/// anything throws or fails, the temporary file is removed, `path` keeps its old
/// contents, and the exception propagates (system failures become RuntimeError
/// "[fn] path: <step>: <reason>"). The new file's permissions follow the umask.
void atomic_write(const std::string& path, const char* fn, const std::function<void(FileWriter&)>& body);

}  // namespace tandem::io
