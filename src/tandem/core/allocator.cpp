#include "tandem/core/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "tandem/core/error.h"

namespace tandem {
namespace {

constexpr size_t kAlignment = 64;

// Size classes: multiples of 64 bytes up to 1 KiB, then 4 classes per power of two.
// Rounding up by at most 25% keeps reuse high without wasting much memory.
size_t round_size(size_t n) {
  if (n <= 1024) return (n + kAlignment - 1) / kAlignment * kAlignment;
  size_t p = size_t{1} << (63 - __builtin_clzll(n - 1));  // largest power of two < n
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

class CachingCPUAllocator final : public Allocator {
 public:
  ~CachingCPUAllocator() override { release_all(); }

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    size_t sz = round_size(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocations;
    void* p = nullptr;
    std::vector<void*>* cached = nullptr;
    if (sz <= kSmallMax) {
      cached = &small_free_[sz / kAlignment];
    } else {
      auto it = free_.find(sz);
      if (it != free_.end()) cached = &it->second;
    }
    if (cached && !cached->empty()) {
      p = cached->back();
      cached->pop_back();
      ++stats_.num_cache_hits;
    } else {
      p = std::aligned_alloc(kAlignment, sz);
      if (!p) {  // Out of memory: drop the cache and try once more.
        release_cached_locked();
        p = std::aligned_alloc(kAlignment, sz);
      }
      TANDEM_CHECK(p != nullptr, RuntimeError, "allocate",
                   "out of memory allocating ", nbytes, " bytes (", stats_.bytes_in_use,
                   " bytes in use)");
      ++stats_.num_system_allocations;
      stats_.bytes_reserved += static_cast<int64_t>(sz);
    }
    stats_.bytes_in_use += static_cast<int64_t>(sz);
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return p;
  }

  void deallocate(void* p, size_t nbytes) override {
    if (!p) return;
    size_t sz = round_size(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= static_cast<int64_t>(sz);
    if (sz <= kSmallMax) small_free_[sz / kAlignment].push_back(p);
    else free_[sz].push_back(p);
  }

  Device device() const override { return kCPU; }
  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
    stats_.num_allocations = 0;
    stats_.num_cache_hits = 0;
    stats_.num_system_allocations = 0;
  }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }

 private:
  void release_cached_locked() {
    for (size_t c = 0; c < kSmallClasses; ++c) {
      for (void* b : small_free_[c]) std::free(b);
      stats_.bytes_reserved -= static_cast<int64_t>(c * kAlignment * small_free_[c].size());
      small_free_[c].clear();
    }
    for (auto& [sz, blocks] : free_) {
      for (void* b : blocks) std::free(b);
      stats_.bytes_reserved -= static_cast<int64_t>(sz * blocks.size());
      blocks.clear();
    }
    free_.clear();
  }
  void release_all() { release_cached_locked(); }

  // Size classes up to kSmallMax (multiples of 64 bytes) are indexed directly: the blocks
  // of small tensors are found without a map lookup.
  static constexpr size_t kSmallMax = 1024;
  static constexpr size_t kSmallClasses = kSmallMax / kAlignment + 1;
  mutable std::mutex mu_;
  std::vector<void*> small_free_[kSmallClasses];  // [size / 64] -> cached blocks
  std::map<size_t, std::vector<void*>> free_;  // larger size class -> cached blocks (ordered: reproducible)
  AllocatorStats stats_;
};

}  // namespace

Allocator& cpu_allocator() {
  // Intentionally leaked: tensors in static storage may be freed after main returns.
  static auto* a = new CachingCPUAllocator();
  return *a;
}
size_t cpu_allocator_round_size(size_t nbytes) { return nbytes == 0 ? 0 : round_size(nbytes); }

namespace memory {
AllocatorStats stats() { return cpu_allocator().stats(); }
void reset_peak_stats() { cpu_allocator().reset_peak_stats(); }
void empty_cache() { cpu_allocator().empty_cache(); }
}  // namespace memory

}  // namespace tandem
