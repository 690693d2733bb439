#pragma once
// Static memory planning for compiled programs (MindSpore's SOMAS, ggml-alloc, TFLite's
// greedy-by-size): every intermediate buffer gets an offset in one arena such that two
// buffers whose lifetimes overlap never overlap in memory. A pure function, so it is
// tested on synthetic inputs.
#include <cstdint>
#include <vector>

namespace tandem::runtime {

/// One buffer: `size` bytes live from step `first` to step `last` inclusive (execution
/// order: the node that creates it to the last node that reads it).
struct BufferRequest {
  int64_t size = 0;
  int first = 0;
  int last = 0;
};

/// Offsets (bytes, aligned) per request, the arena size, and the lower bound no plan can
/// beat: the maximum over steps of the bytes live at that step.
struct MemoryPlan {
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;
  int64_t lower_bound = 0;
};

/// Greedy by size: place buffers largest first (ties: earlier first, then index) at the
/// lowest aligned offset that does not collide with an already placed buffer whose
/// lifetime overlaps. Deterministic. ValueError for negative sizes or first > last.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, int64_t alignment = 64);

/// True when no two lifetime-overlapping buffers of `plan` overlap in memory.
bool plan_is_valid(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace tandem::runtime
