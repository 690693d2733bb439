// The CPU caching allocator: statistics, size classes, block reuse, empty_cache,
// alignment, borrowed memory (from_blob) and zero-size allocations.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "core/core_test_util.h"

using namespace tandem;

namespace {

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(Allocator, SizeClasses) {
  EXPECT_EQ(cpu_allocator_round_size(0), 0u);
  EXPECT_EQ(cpu_allocator_round_size(1), 64u);
  EXPECT_EQ(cpu_allocator_round_size(64), 64u);
  EXPECT_EQ(cpu_allocator_round_size(65), 128u);
  EXPECT_EQ(cpu_allocator_round_size(1024), 1024u);
  EXPECT_EQ(cpu_allocator_round_size(1025), 1280u);  // 4 classes per power of two above 1 KiB
  EXPECT_EQ(cpu_allocator_round_size(1500), 1536u);
  EXPECT_EQ(cpu_allocator_round_size(2048), 2048u);
  EXPECT_EQ(cpu_allocator_round_size(2049), 2560u);
  EXPECT_EQ(cpu_allocator_round_size(5000), 5120u);
  for (size_t n = 1; n < (1u << 22); n = n * 3 / 2 + 7) {
    size_t r = cpu_allocator_round_size(n);
    EXPECT_GE(r, n);
    EXPECT_EQ(r % 64, 0u) << n;
    EXPECT_LE(r, n + n / 4 + 64) << "rounding wastes at most 25%: " << n;
    EXPECT_EQ(cpu_allocator_round_size(r), r) << "a size class rounds to itself: " << n;
  }
}

TEST(Allocator, BytesInUseRisesByRoundedSizeAndReturns) {
  const AllocatorStats s0 = memory::stats();
  {
    Tensor t = empty({1000}, kFloat32);  // 4000 bytes -> class 4096
    const AllocatorStats s1 = memory::stats();
    EXPECT_EQ(s1.bytes_in_use - s0.bytes_in_use, static_cast<int64_t>(cpu_allocator_round_size(4000)));
    EXPECT_EQ(s1.bytes_in_use - s0.bytes_in_use, 4096);
    Tensor v = t.view({10, 100}).t();  // views allocate nothing
    EXPECT_EQ(memory::stats().bytes_in_use, s1.bytes_in_use);
    t = Tensor();
    EXPECT_EQ(memory::stats().bytes_in_use, s1.bytes_in_use) << "a live view keeps the block";
  }
  EXPECT_EQ(memory::stats().bytes_in_use, s0.bytes_in_use);
  // Raw allocator calls: 100 bytes -> 128.
  void* p = cpu_allocator().allocate(100);
  EXPECT_EQ(memory::stats().bytes_in_use - s0.bytes_in_use, 128);
  cpu_allocator().deallocate(p, 100);
  EXPECT_EQ(memory::stats().bytes_in_use, s0.bytes_in_use);
}

TEST(Allocator, PeakTrackingAndReset) {
  memory::reset_peak_stats();
  const AllocatorStats s0 = memory::stats();
  EXPECT_EQ(s0.peak_bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s0.num_allocations, 0);
  EXPECT_EQ(s0.num_cache_hits, 0);
  EXPECT_EQ(s0.num_system_allocations, 0);
  {
    Tensor a = empty({1 << 16}, kFloat64);  // 512 KiB
    Tensor b = empty({1 << 14}, kFloat64);  // 128 KiB
    EXPECT_EQ(memory::stats().peak_bytes_in_use, s0.bytes_in_use + (1 << 19) + (1 << 17));
  }
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s1.peak_bytes_in_use, s0.bytes_in_use + (1 << 19) + (1 << 17)) << "peak survives the frees";
  EXPECT_EQ(s1.num_allocations, 2);
  {
    Tensor c = empty({10}, kFloat64);  // smaller than the peak: peak unchanged
    EXPECT_EQ(memory::stats().peak_bytes_in_use, s1.peak_bytes_in_use);
  }
  memory::reset_peak_stats();
  const AllocatorStats s2 = memory::stats();
  EXPECT_EQ(s2.peak_bytes_in_use, s2.bytes_in_use);
  EXPECT_EQ(s2.num_allocations, 0);
  EXPECT_GE(s2.bytes_reserved, s2.bytes_in_use) << "reset_peak_stats does not touch reserved bytes";
}

TEST(Allocator, FreedBlockIsReusedForTheSameSizeClass) {
  Tensor a = empty({1000}, kFloat32);  // 4000 bytes, class 4096
  void* p = a.data_ptr();
  a = Tensor();
  memory::reset_peak_stats();
  const AllocatorStats s0 = memory::stats();
  Tensor b = empty({1010}, kFloat32);  // 4040 bytes: same class
  EXPECT_EQ(b.data_ptr(), p) << "the cached block comes back";
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.num_allocations, s0.num_allocations + 1);
  EXPECT_EQ(s1.num_cache_hits, s0.num_cache_hits + 1);
  EXPECT_EQ(s1.num_system_allocations, s0.num_system_allocations);
  EXPECT_EQ(s1.bytes_reserved, s0.bytes_reserved) << "a cache hit reserves nothing new";
  // A different size class does not take it.
  void* q = b.data_ptr();
  b = Tensor();
  Tensor c = empty({2000}, kFloat32);  // 8000 bytes -> class 8192
  EXPECT_NE(c.data_ptr(), q);
  // Raw allocator: LIFO reuse within a class.
  void* r1 = cpu_allocator().allocate(3000);
  void* r2 = cpu_allocator().allocate(3000);
  EXPECT_NE(r1, r2);
  cpu_allocator().deallocate(r1, 3000);
  void* r3 = cpu_allocator().allocate(2900);  // same class (3072)
  EXPECT_EQ(r3, r1);
  cpu_allocator().deallocate(r2, 3000);
  cpu_allocator().deallocate(r3, 2900);
}

TEST(Allocator, ReservedCountsCachedBlocksAndEmptyCacheReleasesThem) {
  memory::empty_cache();
  const AllocatorStats s0 = memory::stats();
  EXPECT_EQ(s0.bytes_reserved, s0.bytes_in_use) << "after empty_cache only live blocks are reserved";
  {
    Tensor big = empty({1 << 18}, kFloat32);  // 1 MiB
    EXPECT_EQ(memory::stats().bytes_reserved, s0.bytes_reserved + (1 << 20));
  }
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s1.bytes_reserved, s0.bytes_reserved + (1 << 20)) << "a freed block stays cached";
  memory::empty_cache();
  const AllocatorStats s2 = memory::stats();
  EXPECT_EQ(s2.bytes_reserved, s0.bytes_reserved);
  EXPECT_LT(s2.bytes_reserved, s1.bytes_reserved);
  EXPECT_EQ(s2.bytes_in_use, s0.bytes_in_use);
  // After empty_cache the next allocation goes to the system.
  memory::reset_peak_stats();
  Tensor again = empty({1 << 18}, kFloat32);
  EXPECT_EQ(memory::stats().num_system_allocations, 1);
  EXPECT_EQ(memory::stats().num_cache_hits, 0);
}

TEST(Allocator, DataPointersAre64ByteAligned) {
  std::vector<Tensor> keep;
  for (int64_t n : {1, 3, 7, 63, 64, 65, 100, 1000, 1025, 4097, 100000}) {
    for (DType d : {kBool, kInt8, kInt16, kFloat16, kFloat32, kInt64, kFloat64}) {
      keep.push_back(empty({n}, d));
      EXPECT_TRUE(aligned64(keep.back().data_ptr())) << n << " " << dtype_name(d);
    }
  }
  for (size_t n : {1u, 17u, 64u, 999u, 1u << 20}) {
    void* p = cpu_allocator().allocate(n);
    EXPECT_TRUE(aligned64(p)) << n;
    cpu_allocator().deallocate(p, n);
  }
  // Results of ops come from the allocator too.
  Tensor c = arange(10).clone();
  EXPECT_TRUE(aligned64(c.data_ptr()));
  EXPECT_TRUE(aligned64(zeros({3, 5}).data_ptr()));
}

TEST(Allocator, FromBlobDeleterRunsOnceWhenTheLastViewDies) {
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  int calls = 0;
  void* seen = nullptr;
  const AllocatorStats s0 = memory::stats();
  {
    Tensor t = from_blob(buf.data(), {2, 3}, kFloat32, [&](void* p) { ++calls; seen = p; });
    EXPECT_EQ(t.data_ptr(), buf.data()) << "from_blob borrows, no copy";
    EXPECT_EQ(memory::stats().bytes_in_use, s0.bytes_in_use) << "borrowed memory is not the allocator's";
    EXPECT_TRUE(t.storage()->is_borrowed());
    Tensor v1 = t.t();
    Tensor v2 = t.select(0, 1);
    std::vector<Tensor> pieces = t.unbind(1);
    t = Tensor();
    EXPECT_EQ(calls, 0);
    v1 = Tensor();
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(v2[2].item<float>(), 6.f);
    v2 = Tensor();
    EXPECT_EQ(calls, 0);
    pieces.pop_back();
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(pieces[0][1].item<float>(), 4.f);
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, buf.data());
  // Empty deleter: nothing runs, nothing is freed.
  { Tensor t = from_blob(buf.data(), {6}, kFloat32); }
  EXPECT_EQ(buf[5], 6.f);
  // A copy of a borrowed tensor owns allocator memory and outlives the deleter.
  Tensor c;
  {
    Tensor t = from_blob(buf.data(), {6}, kFloat32, [&](void*) { ++calls; });
    c = t.clone();
  }
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(c.storage()->is_borrowed());
  EXPECT_EQ(c[4].item<float>(), 5.f);
}

TEST(Allocator, ZeroSizeAllocations) {
  memory::reset_peak_stats();
  const AllocatorStats s0 = memory::stats();
  EXPECT_EQ(cpu_allocator().allocate(0), nullptr);
  cpu_allocator().deallocate(nullptr, 0);  // no-op
  {
    Tensor z = empty({0}, kFloat32);
    Tensor z2 = zeros({3, 0, 2}, kInt64);
    EXPECT_EQ(z.numel(), 0);
    EXPECT_EQ(z2.nbytes(), 0);
    EXPECT_EQ(z.storage()->nbytes(), 0u);
    Tensor zc = z2.clone();
    EXPECT_EQ(zc.sizes().vec(), (DimVector{3, 0, 2}));
  }
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s1.peak_bytes_in_use, s0.peak_bytes_in_use) << "zero-size tensors use no memory";
  EXPECT_EQ(s1.num_allocations, 0) << "zero-byte requests never reach the cache";
}

TEST(Allocator, ConcurrentAllocationsKeepStatsConsistent) {
  const AllocatorStats s0 = memory::stats();
  std::atomic<int> misaligned{0};
  auto work = [&] {
    for (int i = 0; i < 2000; ++i) {
      size_t n = static_cast<size_t>(64 + (i * 37) % 5000);
      void* p = cpu_allocator().allocate(n);
      if (!aligned64(p)) ++misaligned;
      static_cast<char*>(p)[n - 1] = 1;
      cpu_allocator().deallocate(p, n);
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  EXPECT_EQ(misaligned.load(), 0);
  EXPECT_EQ(memory::stats().bytes_in_use, s0.bytes_in_use);
}

// Restores the default policy when a test that changed it ends (or fails).
struct PolicyScope {
  CachePolicy saved = memory::cache_policy();
  explicit PolicyScope(const CachePolicy& p) { memory::set_cache_policy(p); }
  ~PolicyScope() { memory::set_cache_policy(saved); }
};

int64_t cached_bytes() {
  const AllocatorStats s = memory::stats();
  return s.bytes_reserved - s.bytes_in_use;
}

TEST(AllocatorPolicy, DefaultsKeepWhatATrainingLoopReuses) {
  const CachePolicy p = memory::cache_policy();
  EXPECT_EQ(p.max_cached_block, int64_t{64} << 20);
  EXPECT_EQ(p.max_cached_bytes, int64_t{1} << 30);
  EXPECT_EQ(p.max_idle_allocations, int64_t{1} << 16);
  EXPECT_TANDEM_ERROR(memory::set_cache_policy(CachePolicy{-1, 0, 0}), ValueError, "set_cache_policy", "non-negative");
  EXPECT_EQ(memory::cache_policy().max_cached_block, p.max_cached_block) << "a rejected policy changes nothing";
}

TEST(AllocatorPolicy, LargeBlocksGoBackToTheSystemOnFree) {
  PolicyScope scope(CachePolicy{int64_t{256} << 10, int64_t{1} << 30, 0});
  empty_cache();
  const AllocatorStats s0 = memory::stats();
  {
    Tensor big = empty({1 << 18}, kFloat32);  // 1 MiB > 256 KiB
    Tensor small = empty({1 << 14}, kFloat32);  // 64 KiB: cached when freed
    EXPECT_EQ(memory::stats().bytes_reserved, s0.bytes_reserved + (1 << 20) + (1 << 16));
  }
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s1.bytes_reserved, s0.bytes_reserved + (1 << 16)) << "only the small block stays cached";
  EXPECT_EQ(s1.num_system_frees - s0.num_system_frees, 1);
}

TEST(AllocatorPolicy, CachedBytesAreCappedOldestFirst) {
  PolicyScope scope(CachePolicy{int64_t{64} << 20, int64_t{1} << 20, 0});  // cache at most 1 MiB
  empty_cache();
  const AllocatorStats s0 = memory::stats();
  std::vector<void*> blocks;
  // 12 blocks, one per size class from 80 KiB to 512 KiB: 2.8 MiB in all, freed smallest first.
  std::vector<size_t> sizes;
  for (size_t kib : {80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512}) sizes.push_back(kib << 10);
  for (size_t n : sizes) {
    EXPECT_EQ(cpu_allocator_round_size(n), n);
    blocks.push_back(cpu_allocator().allocate(n));
  }
  const int64_t held = memory::stats().bytes_in_use - s0.bytes_in_use;
  EXPECT_EQ(held, int64_t{2912} << 10);
  for (size_t i = 0; i < sizes.size(); ++i) cpu_allocator().deallocate(blocks[i], sizes[i]);
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use) << "memory in use comes back down";
  EXPECT_LE(s1.bytes_reserved - s1.bytes_in_use, int64_t{1} << 20) << "memory held comes back down to the cap";
  EXPECT_EQ(s1.bytes_reserved - s1.bytes_in_use, int64_t{448 + 512} << 10) << "the two blocks freed last fit the cap";
  EXPECT_GT(s1.num_system_frees, s0.num_system_frees);
  // The blocks freed last are the ones kept: allocating the last size again is a cache hit.
  memory::reset_peak_stats();
  void* again = cpu_allocator().allocate(sizes.back());
  EXPECT_EQ(memory::stats().num_cache_hits, 1);
  void* first = cpu_allocator().allocate(sizes.front());
  EXPECT_EQ(memory::stats().num_system_allocations, 1) << "the block freed first was released";
  cpu_allocator().deallocate(again, sizes.back());
  cpu_allocator().deallocate(first, sizes.front());
}

TEST(AllocatorPolicy, IdleBlocksAreReleased) {
  PolicyScope scope(CachePolicy{int64_t{64} << 20, int64_t{1} << 30, 64});
  empty_cache();
  const AllocatorStats s0 = memory::stats();
  { Tensor t = empty({50000}, kFloat32); }  // ~195 KiB, cached
  EXPECT_GT(cached_bytes(), 190000);
  // 200 allocations of another size class, each reused: the big block idles.
  for (int i = 0; i < 200; ++i) Tensor small = empty({10}, kFloat32);
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_LT(cached_bytes(), 4096) << "only the small block (reused all along) is still cached";
  EXPECT_GT(s1.num_system_frees, s0.num_system_frees);
  // A block reused every few allocations is never idle.
  { Tensor t = empty({50000}, kFloat32); }
  for (int i = 0; i < 200; ++i) {
    Tensor small = empty({10}, kFloat32);
    if (i % 16 == 0) Tensor reuse = empty({50000}, kFloat32);
  }
  EXPECT_GT(cached_bytes(), 190000);
}

TEST(AllocatorPolicy, RandomizedRunReturnsMemoryAndEmptyCacheReleasesTheRest) {
  // Issue 19: a long randomized run held 8.5 GB with nothing in use. Here: ops on tensors
  // of ever-changing shapes under a 4 MiB cache cap.
  PolicyScope scope(CachePolicy{int64_t{1} << 20, int64_t{4} << 20, 1 << 12});
  empty_cache();
  const AllocatorStats s0 = memory::stats();
  std::mt19937 rng(3);
  int64_t peak_cached = 0;
  for (int it = 0; it < 400; ++it) {
    const int64_t r = 1 + static_cast<int64_t>(rng() % 300), c = 1 + static_cast<int64_t>(rng() % 300);
    Tensor a = randn({r, c});
    Tensor b = (a * 2.0 + 1.0).exp().sum(0);
    Tensor d = a.t().contiguous().relu();
    peak_cached = std::max(peak_cached, cached_bytes());
  }
  const AllocatorStats s1 = memory::stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use) << "memory in use comes back down";
  EXPECT_LE(peak_cached, int64_t{4} << 20) << "memory held never exceeds the cap";
  EXPECT_LE(s1.bytes_reserved - s1.bytes_in_use, int64_t{4} << 20);
  empty_cache();
  const AllocatorStats s2 = memory::stats();
  EXPECT_EQ(s2.bytes_reserved, s2.bytes_in_use) << "empty_cache releases every cached block";
  EXPECT_EQ(s2.bytes_reserved, s0.bytes_reserved);
}

#if !defined(__SANITIZE_ADDRESS__)
TEST(Allocator, OutOfMemoryRaisesRuntimeError) {
  // 2^50 bytes is beyond the x86-64 user address space: the system allocation fails.
  const AllocatorStats s0 = memory::stats();
  EXPECT_TANDEM_ERROR(empty({int64_t{1} << 47}, kFloat64), RuntimeError, "allocate", "out of memory");
  EXPECT_EQ(memory::stats().bytes_in_use, s0.bytes_in_use);
}
#endif

}  // namespace
