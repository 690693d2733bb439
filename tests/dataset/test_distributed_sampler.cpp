// DistributedSampler: disjoint shards that together are the epoch's order, the same
// shuffle on every rank per (seed, epoch), padding and dropping to equal lengths, its use
// through DataLoader (the step-by-step equivalence with one process and R times the
// batch), and its errors. The ranks are simulated (num_replicas/rank given), no MPI.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "tandem/tandem.h"

using namespace tandem;
using namespace tandem::data;

namespace {
DistributedSampler sampler(int r, int rank, bool shuffle = true, bool drop_last = false, uint64_t seed = 7) {
  return DistributedSampler({.num_replicas = r, .rank = rank, .shuffle = shuffle, .seed = seed, .drop_last = drop_last});
}
}  // namespace

TEST(DistributedSampler, ShardsAreDisjointAndCoverTheEpochOrder) {
  const int64_t n = 1000;
  for (int r : {1, 2, 3, 8}) {
    const std::vector<int64_t> order = shuffled_indices(n, 7, 3);
    std::vector<std::vector<int64_t>> shards;
    for (int k = 0; k < r; ++k) shards.push_back(sampler(r, k).indices(n, 3));
    // Interleaving the shards rebuilds the padded order: shard k holds order[k], order[k+r], ...
    const int64_t per = (n + r - 1) / r;
    for (int k = 0; k < r; ++k) {
      ASSERT_EQ(static_cast<int64_t>(shards[k].size()), per) << "r=" << r;
      for (int64_t i = 0; i < per; ++i) {
        const int64_t pos = i * r + k;
        const int64_t want = order[static_cast<size_t>(pos % n)];  // padding repeats the start
        ASSERT_EQ(shards[k][static_cast<size_t>(i)], want) << "r=" << r << " rank=" << k << " i=" << i;
      }
    }
    // Without the padding the shards are disjoint and cover every example once.
    std::multiset<int64_t> seen;
    for (int k = 0; k < r; ++k)
      for (int64_t i = 0; i < per; ++i)
        if (i * r + k < n) seen.insert(shards[k][static_cast<size_t>(i)]);
    EXPECT_EQ(static_cast<int64_t>(seen.size()), n);
    EXPECT_EQ(static_cast<int64_t>(std::set<int64_t>(seen.begin(), seen.end()).size()), n);
  }
}

TEST(DistributedSampler, SameShufflePerSeedAndEpochDifferentAcrossEpochs) {
  EXPECT_EQ(sampler(2, 0).indices(100, 4), sampler(2, 0).indices(100, 4));
  EXPECT_NE(sampler(2, 0).indices(100, 4), sampler(2, 0).indices(100, 5));
  EXPECT_NE(sampler(2, 0, true, false, 1).indices(100, 4), sampler(2, 0, true, false, 2).indices(100, 4));
  // No shuffle: index order, strided.
  EXPECT_EQ(sampler(3, 1, false).indices(7, 0), (std::vector<int64_t>{1, 4, 0}));  // padded with order[0]
  EXPECT_EQ(sampler(3, 2, false).indices(7, 0), (std::vector<int64_t>{2, 5, 1}));
}

TEST(DistributedSampler, PadOrDropToEqualLength) {
  EXPECT_EQ(sampler(4, 0).size(10), 3);
  EXPECT_EQ(sampler(4, 0, true, true).size(10), 2);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(sampler(4, k).indices(10, 0).size(), 3u);
    EXPECT_EQ(sampler(4, k, true, true).indices(10, 0).size(), 2u);
  }
  // drop_last: the 8 kept indices are the first 8 of the order, disjoint.
  const std::vector<int64_t> order = shuffled_indices(10, 7, 0);
  std::set<int64_t> kept;
  for (int k = 0; k < 4; ++k)
    for (int64_t i : sampler(4, k, true, true).indices(10, 0)) kept.insert(i);
  EXPECT_EQ(kept, std::set<int64_t>(order.begin(), order.begin() + 8));
  // More ranks than examples: padding cycles through the order.
  EXPECT_EQ(sampler(5, 4, false).indices(2, 0), (std::vector<int64_t>{0}));
  EXPECT_EQ(sampler(5, 0, false).indices(0, 0), (std::vector<int64_t>{}));
}

TEST(DistributedSampler, LoaderStepsMatchOneProcessWithRTimesTheBatch) {
  const int64_t n = 1000, b = 32;
  auto ds = std::make_shared<TensorDataset>(arange(n, DType::Float32).view({n, 1}), arange(n));
  DataLoader one(ds, {.batch_size = 2 * b, .shuffle = true, .seed = 11, .prefetch = false});
  std::vector<DataLoader> ranks;
  for (int k = 0; k < 2; ++k)
    ranks.emplace_back(ds, DataLoaderOptions{.batch_size = b, .seed = 0, .prefetch = false,
                                             .sampler = std::make_shared<DistributedSampler>(sampler(2, k, true, false, 11))});
  EXPECT_EQ(ranks[0].size(), one.size());
  one.set_epoch(1);
  ranks[0].set_epoch(1);
  ranks[1].set_epoch(1);
  auto it0 = ranks[0].begin(), it1 = ranks[1].begin();
  int64_t steps = 0;
  for (auto& big : one) {
    ASSERT_NE(it0, ranks[0].end());
    std::vector<int64_t> want, got;
    for (int64_t i = 0; i < big.target.size(0); ++i) want.push_back(big.target[i].item<int64_t>());
    for (auto* it : {&it0, &it1})
      for (int64_t i = 0; i < (**it).target.size(0); ++i) got.push_back((**it).target[i].item<int64_t>());
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << "step " << steps;
    ++it0;
    ++it1;
    ++steps;
  }
  EXPECT_EQ(steps, (n + 2 * b - 1) / (2 * b));
}

TEST(DistributedSampler, Errors) {
  EXPECT_THROW(DistributedSampler({.num_replicas = 0, .rank = 0}), ValueError);
  EXPECT_THROW(DistributedSampler({.num_replicas = 2, .rank = 2}), ValueError);
  EXPECT_THROW(sampler(2, 0).indices(10, -1), ValueError);
  auto ds = std::make_shared<TensorDataset>(arange(4, DType::Float32), arange(4));
  EXPECT_THROW(DataLoader(ds, {.batch_size = 1, .shuffle = true, .sampler = std::make_shared<DistributedSampler>(sampler(2, 0))}),
               ValueError);
  // Without MPI initialised the defaults are one rank.
  DistributedSampler solo;
  EXPECT_EQ(solo.num_replicas(), 1);
  EXPECT_EQ(solo.rank(), 0);
}
