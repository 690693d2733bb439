#pragma once
// Allocators. Every tensor allocation goes through an Allocator; the CPU one is a
// caching allocator (freed blocks are kept per size class and reused), 64-byte
// aligned, with statistics the user can read and reset. The cache is bounded by a
// CachePolicy (large blocks, total cached bytes, idle blocks go back to the system), and
// empty_cache() releases all of it, as torch.cuda.empty_cache() does.
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
  int64_t num_system_frees = 0;    ///< cached blocks given back to the operating system (policy or empty_cache)
};

/// When the CPU caching allocator gives freed blocks back to the system instead of keeping
/// them for reuse. The defaults keep the blocks a training loop reuses every step and bound
/// what a run with ever-changing shapes can hold.
struct CachePolicy {
  /// A freed block larger than this (bytes, size-class rounded) is not cached. Mapping a
  /// large block again costs little next to filling it (PyTorch's CPU allocator caches nothing).
  int64_t max_cached_block = int64_t{64} << 20;
  /// Cached (free) bytes are kept at most this large: the blocks freed longest ago go first.
  int64_t max_cached_bytes = int64_t{1} << 30;
  /// A cached block not reused within this many allocations (of any size) is released;
  /// 0 keeps idle blocks.
  int64_t max_idle_allocations = int64_t{1} << 16;
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
  /// Sets the release policy (allocators without a cache ignore it); applies it at once.
  /// ValueError for a negative field.
  virtual void set_cache_policy(const CachePolicy& policy) { (void)policy; }
  virtual CachePolicy cache_policy() const { return {}; }
};

/// The allocator used for CPU tensors (a process-wide caching allocator).
Allocator& cpu_allocator();
/// Size the caching allocator rounds a request to (its size class), in bytes.
size_t cpu_allocator_round_size(size_t nbytes);

namespace memory {
/// Statistics of the CPU caching allocator.
AllocatorStats stats();
void reset_peak_stats();
/// Releases every cached, unused block of the CPU caching allocator to the system (and
/// asks the C library to return freed heap pages); blocks in use are untouched.
void empty_cache();
/// The CPU caching allocator's release policy (see CachePolicy).
void set_cache_policy(const CachePolicy& policy);
CachePolicy cache_policy();
}  // namespace memory

/// torch.cuda.empty_cache() for tandem's CPU caching allocator: memory::empty_cache().
inline void empty_cache() { memory::empty_cache(); }

}  // namespace tandem
