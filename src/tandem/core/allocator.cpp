#include "tandem/core/allocator.h"
#include "tandem/core/memory_watch.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

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
    ++tick_;
    if (tick_ >= next_sweep_) sweep_idle_locked();
    void* p = nullptr;
    std::vector<Cached>* cached = nullptr;
    if (sz <= kSmallMax) {
      cached = &small_free_[sz / kAlignment];
    } else {
      auto it = free_.find(sz);
      if (it != free_.end()) cached = &it->second;
    }
    if (cached && !cached->empty()) {
      p = cached->back().ptr;
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
    if (stats_.bytes_in_use > watch_peak_) watch_peak_ = stats_.bytes_in_use;
    return p;
  }

  void deallocate(void* p, size_t nbytes) override {
    if (!p) return;
    size_t sz = round_size(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= static_cast<int64_t>(sz);
    if (static_cast<int64_t>(sz) > policy_.max_cached_block) {
      release_block_locked(p, sz);
      return;
    }
    if (sz <= kSmallMax) small_free_[sz / kAlignment].push_back({p, tick_});
    else free_[sz].push_back({p, tick_});
    trim_to_limit_locked();
  }

  Device device() const override { return kCPU; }
  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void watch_reset() {
    std::lock_guard<std::mutex> lock(mu_);
    watch_peak_ = stats_.bytes_in_use;
  }
  int64_t watch_peak() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_peak_;
  }

  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
    stats_.num_allocations = 0;
    stats_.num_cache_hits = 0;
    stats_.num_system_allocations = 0;
    stats_.num_system_frees = 0;
  }
  void empty_cache() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_cached_locked();
    }
#if defined(__GLIBC__)
    // Freed blocks below glibc's mmap threshold stay in its heap; ask it to return them.
    malloc_trim(0);
#endif
  }
  void set_cache_policy(const CachePolicy& policy) override {
    TANDEM_CHECK(policy.max_cached_block >= 0 && policy.max_cached_bytes >= 0 && policy.max_idle_allocations >= 0,
                 ValueError, "set_cache_policy", "got max_cached_block ", policy.max_cached_block,
                 ", max_cached_bytes ", policy.max_cached_bytes, ", max_idle_allocations ",
                 policy.max_idle_allocations, ", expected non-negative values");
    std::lock_guard<std::mutex> lock(mu_);
    policy_ = policy;
    // Apply at once: blocks now too large, too many cached bytes, idle blocks.
    for_each_class([&](std::vector<Cached>& blocks, size_t sz) {
      if (static_cast<int64_t>(sz) <= policy_.max_cached_block) return;
      for (const Cached& b : blocks) release_block_locked(b.ptr, sz);
      blocks.clear();
    });
    trim_to_limit_locked();
    sweep_idle_locked();
  }
  CachePolicy cache_policy() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return policy_;
  }

 private:
  struct Cached {
    void* ptr;
    int64_t freed_at;  // tick_ when it was freed: the blocks of a class are in this order
  };

  template <typename F>
  void for_each_class(F&& f) {
    for (size_t c = 0; c < kSmallClasses; ++c) f(small_free_[c], c * kAlignment);
    for (auto& [sz, blocks] : free_) f(blocks, sz);
  }
  void release_block_locked(void* p, size_t sz) {
    std::free(p);
    stats_.bytes_reserved -= static_cast<int64_t>(sz);
    ++stats_.num_system_frees;
  }
  // Releases the blocks freed longest ago until the cached bytes fit the policy.
  void trim_to_limit_locked() {
    while (stats_.bytes_reserved - stats_.bytes_in_use > policy_.max_cached_bytes) {
      std::vector<Cached>* oldest = nullptr;
      size_t oldest_sz = 0;
      for_each_class([&](std::vector<Cached>& blocks, size_t sz) {
        if (!blocks.empty() && (!oldest || blocks.front().freed_at < oldest->front().freed_at)) {
          oldest = &blocks;
          oldest_sz = sz;
        }
      });
      if (!oldest) break;
      release_block_locked(oldest->front().ptr, oldest_sz);
      oldest->erase(oldest->begin());
    }
  }
  // Releases blocks not reused within policy_.max_idle_allocations allocations. Runs every
  // eighth of that many allocations, so a block is released at most 12.5% late.
  void sweep_idle_locked() {
    const int64_t idle = policy_.max_idle_allocations;
    if (idle <= 0) {
      next_sweep_ = std::numeric_limits<int64_t>::max();
      return;
    }
    next_sweep_ = tick_ + std::max<int64_t>(1, idle / 8);
    for_each_class([&](std::vector<Cached>& blocks, size_t sz) {
      size_t k = 0;
      while (k < blocks.size() && tick_ - blocks[k].freed_at > idle) release_block_locked(blocks[k++].ptr, sz);
      blocks.erase(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(k));
    });
    for (auto it = free_.begin(); it != free_.end();) it = it->second.empty() ? free_.erase(it) : std::next(it);
  }
  void release_cached_locked() {
    for_each_class([&](std::vector<Cached>& blocks, size_t sz) {
      for (const Cached& b : blocks) release_block_locked(b.ptr, sz);
      blocks.clear();
    });
    free_.clear();
  }
  void release_all() { release_cached_locked(); }

  // Size classes up to kSmallMax (multiples of 64 bytes) are indexed directly: the blocks
  // of small tensors are found without a map lookup.
  static constexpr size_t kSmallMax = 1024;
  static constexpr size_t kSmallClasses = kSmallMax / kAlignment + 1;
  mutable std::mutex mu_;
  std::vector<Cached> small_free_[kSmallClasses];  // [size / 64] -> cached blocks, oldest first
  std::map<size_t, std::vector<Cached>> free_;  // larger size class -> cached blocks (ordered: reproducible)
  AllocatorStats stats_;
  CachePolicy policy_;
  int64_t watch_peak_ = 0;  // memory::watch_peak (core/memory_watch.h)
  int64_t tick_ = 0;        // allocate() calls ever (the idle clock; never reset)
  int64_t next_sweep_ = 0;  // tick_ at which to look for idle blocks next
};

CachingCPUAllocator& caching_allocator() {
  // Intentionally leaked: tensors in static storage may be freed after main returns.
  static auto* a = new CachingCPUAllocator();
  return *a;
}

}  // namespace

Allocator& cpu_allocator() { return caching_allocator(); }
size_t cpu_allocator_round_size(size_t nbytes) { return nbytes == 0 ? 0 : round_size(nbytes); }

namespace memory {
AllocatorStats stats() { return cpu_allocator().stats(); }
void reset_peak_stats() { cpu_allocator().reset_peak_stats(); }
void empty_cache() { cpu_allocator().empty_cache(); }
void set_cache_policy(const CachePolicy& policy) { cpu_allocator().set_cache_policy(policy); }
CachePolicy cache_policy() { return cpu_allocator().cache_policy(); }
void watch_reset() { caching_allocator().watch_reset(); }
int64_t watch_peak() { return caching_allocator().watch_peak(); }
}  // namespace memory

}  // namespace tandem
