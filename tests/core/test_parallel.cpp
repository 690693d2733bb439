// Intra-op parallelism settings: set_num_threads and the per-thread ThreadLimitGuard.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tandem/core/error.h"
#include "tandem/core/parallel.h"

namespace {

using namespace tandem;

TEST(Parallel, ThreadLimitGuardCapsOnlyTheCallingThread) {
  const int before = get_num_threads();
  set_num_threads(2);
  {
    ThreadLimitGuard g(1);
    EXPECT_EQ(get_num_threads(), 1);
    // A loop above the grain runs as one chunk on this thread.
    std::atomic<int> calls{0};
    parallel_for(0, 10 * kGrainSize, kGrainSize, [&](int64_t, int64_t) { ++calls; });
    EXPECT_EQ(calls.load(), 1);
    int other = 0;
    std::thread([&] { other = get_num_threads(); }).join();
    EXPECT_EQ(other, 2) << "another thread is not limited";
    {
      ThreadLimitGuard inner(4);  // a cap, not a raise above the global setting
      EXPECT_EQ(get_num_threads(), 2);
    }
    EXPECT_EQ(get_num_threads(), 1);
  }
  EXPECT_EQ(get_num_threads(), 2);
  std::atomic<int> calls{0};
  parallel_for(0, 10 * kGrainSize, kGrainSize, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls.load(), 2);
  EXPECT_THROW(ThreadLimitGuard(0), ValueError);
  set_num_threads(before);
}

// Absurd counts are refused, not handed to OpenMP (set_num_threads(100000) then crashed in
// the first parallel oneDNN call); the setting stays as it was.
TEST(Parallel, SetNumThreadsRejectsOutOfRangeCounts) {
  const int before = get_num_threads();
  EXPECT_THROW(set_num_threads(0), ValueError);
  EXPECT_THROW(set_num_threads(-3), ValueError);
  EXPECT_THROW(set_num_threads(kMaxThreads + 1), ValueError);
  EXPECT_THROW(set_num_threads(100000), ValueError);
  EXPECT_EQ(get_num_threads(), before);
  set_num_threads(kMaxThreads);
  EXPECT_EQ(get_num_threads(), kMaxThreads);
  set_num_threads(before);
}

}  // namespace
