#pragma once
// A high-water mark of the CPU caching allocator kept apart from its peak statistics
// (memory::reset_peak_stats() belongs to the user): the executor of a program under a
// memory budget reads it around each node to learn what the node's kernel allocates for
// itself (oneDNN scratchpads, reordered copies), which only running the kernel reveals.
#include <cstdint>

namespace tandem::memory {

/// Sets the mark to the bytes in use now (size-class rounded, as AllocatorStats counts).
/// Process-wide: allocations of other threads in the meantime count too.
void watch_reset();
/// The most bytes in use since the last watch_reset().
int64_t watch_peak();

}  // namespace tandem::memory
