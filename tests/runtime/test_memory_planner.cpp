#include <gtest/gtest.h>

#include "tandem/core/error.h"
#include "tandem/core/generator.h"
#include "tandem/runtime/memory_planner.h"

using namespace tandem;
using runtime::BufferRequest;

TEST(MemoryPlanner, DisjointLifetimesShareMemory) {
  std::vector<BufferRequest> r = {{100, 0, 1}, {100, 2, 3}, {100, 4, 5}};
  auto p = runtime::plan_memory(r);
  EXPECT_EQ(p.arena_bytes, 128);
  EXPECT_EQ(p.lower_bound, 128);
  EXPECT_TRUE(runtime::plan_is_valid(r, p));
}

TEST(MemoryPlanner, OverlappingLifetimesDoNotOverlapInMemory) {
  std::vector<BufferRequest> r = {{64, 0, 3}, {128, 1, 2}, {64, 2, 4}};
  auto p = runtime::plan_memory(r);
  EXPECT_TRUE(runtime::plan_is_valid(r, p));
  EXPECT_EQ(p.lower_bound, 256);
  EXPECT_EQ(p.arena_bytes, 256);
  for (auto off : p.offsets) EXPECT_EQ(off % 64, 0);
}

TEST(MemoryPlanner, RandomProblemsAreValidAndNearLowerBound) {
  Generator g(3);
  double worst = 1.0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> r;
    int n = 1 + static_cast<int>(g.next_u32() % 40);
    for (int i = 0; i < n; ++i) {
      int a = static_cast<int>(g.next_u32() % 30), len = static_cast<int>(g.next_u32() % 6);
      r.push_back({static_cast<int64_t>(64 * (1 + g.next_u32() % 64)), a, a + len});
    }
    auto p = runtime::plan_memory(r);
    ASSERT_TRUE(runtime::plan_is_valid(r, p));
    ASSERT_GE(p.arena_bytes, p.lower_bound);
    worst = std::max(worst, static_cast<double>(p.arena_bytes) / static_cast<double>(p.lower_bound));
  }
  EXPECT_LT(worst, 1.6);  // greedy-by-size stays close to the bound on such problems
}

TEST(MemoryPlanner, ChainOfBuffersUsesTwoSlots) {
  // A chain a -> b -> c -> ...: each buffer lives for two steps, so two slots suffice.
  std::vector<BufferRequest> r;
  for (int i = 0; i < 10; ++i) r.push_back({1024, i, i + 1});
  auto p = runtime::plan_memory(r);
  EXPECT_EQ(p.arena_bytes, 2048);
  EXPECT_EQ(p.lower_bound, 2048);
}

TEST(MemoryPlanner, RejectsBadRequests) {
  EXPECT_THROW(runtime::plan_memory({{-1, 0, 0}}), ValueError);
  EXPECT_THROW(runtime::plan_memory({{8, 3, 1}}), ValueError);
  EXPECT_EQ(runtime::plan_memory({}).arena_bytes, 0);
}
