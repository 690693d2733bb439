#pragma once
// Allocators. Every tensor allocation goes through an Allocator; the CPU one is a
// caching allocator (freed blocks are kept per size class and reused), 64-byte
// aligned, with statistics the user can read and reset.
#include <cstddef>
#include <cstdint>

#include "tandem/core/device.h"

namespace tandem {

/// Allocation statistics, in bytes unless named otherwise.
struct AllocatorStats {
  int64_t bytes_in_use = 0;        ///< bytes of blocks handed out and not yet freed (size-class rounded)
  int64_t peak_bytes_in_use = 0;   ///< maximum of bytes_in_use since the last reset_peak_stats()
  int64_t bytes_reserved = 0;      ///< bytes obtained from the system: in use plus cached
  int64_t num_allocations = 0;     ///< allocate() calls since the last reset (cache hits included)
  int64_t num_cache_hits = 0;      ///< allocate() calls served from the cache
  int64_t num_system_allocations = 0;  ///< blocks obtained from the operating system
};

/// Interface of a device memory allocator. Thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns a block of at least `nbytes` bytes, 64-byte aligned (nullptr for 0 bytes).
  /// Raises RuntimeError when the system is out of memory.
  virtual void* allocate(size_t nbytes) = 0;
  /// Returns a block obtained from allocate(); `nbytes` must be the requested size.
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual Device device() const = 0;
  virtual AllocatorStats stats() const = 0;
  /// Resets peak_bytes_in_use to bytes_in_use and zeroes the counters.
  virtual void reset_peak_stats() = 0;
  /// Releases every cached (free) block to the system.
  virtual void empty_cache() = 0;
};

/// The allocator used for CPU tensors (a process-wide caching allocator).
Allocator& cpu_allocator();
/// Size the caching allocator rounds a request to (its size class), in bytes.
size_t cpu_allocator_round_size(size_t nbytes);

namespace memory {
/// Statistics of the CPU caching allocator.
AllocatorStats stats();
void reset_peak_stats();
void empty_cache();
}  // namespace memory

}  // namespace tandem
