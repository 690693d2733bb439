#include "tandem/runtime/memory_planner.h"

#include <algorithm>
#include <numeric>

#include "tandem/core/error.h"

namespace tandem::runtime {

namespace {
int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) { return a.first <= b.last && b.first <= a.last; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& req, int64_t alignment) {
  TANDEM_CHECK(alignment > 0, ValueError, "plan_memory", "alignment must be positive, got ", alignment);
  MemoryPlan plan;
  const size_t n = req.size();
  plan.offsets.assign(n, 0);
  int max_step = 0;
  for (size_t i = 0; i < n; ++i) {
    TANDEM_CHECK(req[i].size >= 0 && req[i].first <= req[i].last && req[i].first >= 0, ValueError, "plan_memory",
                 "buffer ", i, " has size ", req[i].size, " and lifetime [", req[i].first, ", ", req[i].last,
                 "], expected size >= 0 and 0 <= first <= last");
    max_step = std::max(max_step, req[i].last);
  }
  // Lower bound: live bytes per step (difference array over steps).
  std::vector<int64_t> delta(static_cast<size_t>(max_step) + 2, 0);
  for (const auto& r : req) {
    int64_t s = align_up(r.size, alignment);
    delta[static_cast<size_t>(r.first)] += s;
    delta[static_cast<size_t>(r.last) + 1] -= s;
  }
  int64_t live = 0;
  for (size_t s = 0; s + 1 < delta.size(); ++s) {
    live += delta[s];
    plan.lower_bound = std::max(plan.lower_bound, live);
  }

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (req[a].size != req[b].size) return req[a].size > req[b].size;
    return req[a].first < req[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const int64_t size = align_up(req[i].size, alignment);
    // Collect the address ranges of placed buffers alive at the same time, sorted.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed)
      if (lifetimes_overlap(req[i], req[j])) busy.emplace_back(plan.offsets[j], plan.offsets[j] + align_up(req[j].size, alignment));
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the buffer; else after the last busy range.
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo > cursor) {
        int64_t gap = lo - cursor;
        if (gap >= size && gap < best_gap) {
          best = cursor;
          best_gap = gap;
        }
      }
      cursor = std::max(cursor, hi);
    }
    if (best < 0) best = cursor;
    plan.offsets[i] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
    placed.push_back(i);
  }
  return plan;
}

bool plan_is_valid(const std::vector<BufferRequest>& req, const MemoryPlan& plan) {
  for (size_t i = 0; i < req.size(); ++i)
    for (size_t j = i + 1; j < req.size(); ++j) {
      if (!lifetimes_overlap(req[i], req[j]) || req[i].size == 0 || req[j].size == 0) continue;
      int64_t a0 = plan.offsets[i], a1 = a0 + req[i].size, b0 = plan.offsets[j], b1 = b0 + req[j].size;
      if (a0 < b1 && b0 < a1) return false;
    }
  return true;
}

}  // namespace tandem::runtime
