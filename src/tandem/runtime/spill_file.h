#pragma once
// The offload tier of a program under a memory budget (runtime/memory_budget.h): an
// unnamed temporary file. Bytes written there leave the process's heap for the kernel's
// page cache, which writes them to disk when memory is short; a read brings them back.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::runtime {

/// An anonymous file in `directory` (O_TMPFILE, else a created and unlinked name), removed
/// when closed. Not copyable; not thread-safe.
class SpillFile {
 public:
  /// RuntimeError naming the directory and the system's reason when no file can be made.
  explicit SpillFile(const std::string& directory);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  /// Writes `n` bytes at byte `offset`. RuntimeError (directory, offset, reason) on
  /// failure, e.g. a full disk.
  void write(int64_t offset, const void* data, size_t n);
  /// Reads `n` bytes at `offset` into `data`. RuntimeError on failure or a short file.
  void read(int64_t offset, void* data, size_t n);
  const std::string& directory() const { return dir_; }

 private:
  int fd_ = -1;
  std::string dir_;
};

}  // namespace tandem::runtime
