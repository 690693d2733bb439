// DataLoader: batch shapes, drop_last, shuffle determinism and coverage, prefetch thread
// shutdown, exception propagation, real Fashion-MNIST epochs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <set>
#include <thread>

#include "tandem/tandem.h"

using namespace tandem;
using namespace tandem::data;

namespace {

// Dataset whose example i has data [i, i] (int64) and target i.
std::shared_ptr<TensorDataset> indexed(int64_t n) {
  return std::make_shared<TensorDataset>(arange(n).view({n, 1}).expand({n, 2}).contiguous(), arange(n));
}

// The example indices of every batch of one iteration, in order.
std::vector<std::vector<int64_t>> run_epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    std::vector<int64_t> ids;
    for (int64_t k = 0; k < batch.target.size(0); ++k) {
      ids.push_back(batch.target[k].item<int64_t>());
      EXPECT_EQ(batch.data[k][1].item<int64_t>(), ids.back()) << "data and target stay paired";
    }
    out.push_back(ids);
  }
  return out;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Counts live instances; get() throws at one index and can be slowed down.
class Flaky : public Dataset {
 public:
  Flaky(int64_t n, int64_t bad) : n_(n), bad_(bad) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    if (i == bad_) throw ValueError("[Flaky] example " + std::to_string(i) + " is broken");
    calls.fetch_add(1);
    return {full({3}, static_cast<double>(i), kFloat32), scalar_tensor(i)};
  }
  static inline std::atomic<int64_t> calls{0};

 private:
  int64_t n_, bad_;
};

}  // namespace

TEST(DataLoader, BatchShapesAndDropLast) {
  auto ds = indexed(10);
  for (bool prefetch : {true, false}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "synchronous");
    DataLoader loader(ds, {.batch_size = 3, .prefetch = prefetch});
    EXPECT_EQ(loader.size(), 4);
    std::vector<int64_t> sizes;
    for (auto& batch : loader) {
      EXPECT_EQ(batch.data.dim(), 2);
      EXPECT_EQ(batch.data.size(1), 2);
      EXPECT_EQ(batch.data.dtype(), kInt64);
      sizes.push_back(batch.data.size(0));
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3, 1}));
    DataLoader dropping(ds, {.batch_size = 3, .drop_last = true, .prefetch = prefetch});
    EXPECT_EQ(dropping.size(), 3);
    auto batches = run_epoch(dropping);
    ASSERT_EQ(batches.size(), 3u);
    EXPECT_EQ(flatten(batches), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
    DataLoader big(ds, {.batch_size = 32, .prefetch = prefetch});
    EXPECT_EQ(run_epoch(big).size(), 1u);
    DataLoader big_drop(ds, {.batch_size = 32, .drop_last = true, .prefetch = prefetch});
    EXPECT_EQ(big_drop.size(), 0);
    EXPECT_TRUE(run_epoch(big_drop).empty());
  }
  EXPECT_THROW(DataLoader(ds, {.batch_size = 0}), ValueError);
  EXPECT_THROW(DataLoader(std::shared_ptr<const Dataset>(), {}), ValueError);
}

TEST(DataLoader, EmptyDataset) {
  auto ds = std::make_shared<TensorDataset>(empty({0, 2}), empty({0}, kInt64));
  DataLoader loader(ds, {.batch_size = 4, .shuffle = true});
  EXPECT_EQ(loader.size(), 0);
  EXPECT_TRUE(loader.begin() == loader.end());
}

TEST(DataLoader, UnshuffledOrderIsIndexOrder) {
  DataLoader loader(indexed(7), {.batch_size = 2});
  auto order = flatten(run_epoch(loader));
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(loader.order(5), order);
}

TEST(DataLoader, ShuffleIsDeterministicPerSeedAndEpoch) {
  auto ds = indexed(100);
  DataLoader a(ds, {.batch_size = 8, .shuffle = true, .seed = 42});
  DataLoader b(ds, {.batch_size = 8, .shuffle = true, .seed = 42, .prefetch = false});
  DataLoader c(ds, {.batch_size = 8, .shuffle = true, .seed = 43});
  auto a0 = run_epoch(a), b0 = run_epoch(b), c0 = run_epoch(c);
  EXPECT_EQ(a0, b0) << "same seed and epoch, with or without prefetch";
  EXPECT_NE(flatten(a0), flatten(c0)) << "different seed";
  EXPECT_EQ(a.epoch(), 1) << "each iteration advances the epoch";
  auto a1 = run_epoch(a);
  EXPECT_NE(flatten(a0), flatten(a1)) << "different epoch";
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  for (const auto& epoch : {a0, a1, c0}) {
    auto seen = flatten(epoch);
    EXPECT_NE(seen, identity) << "shuffled";
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, identity) << "every example exactly once";
  }
  // Resuming: set_epoch replays an epoch exactly; order() predicts it.
  a.set_epoch(0);
  EXPECT_EQ(run_epoch(a), a0);
  EXPECT_EQ(flatten(a1), a.order(1));
  EXPECT_EQ(shuffled_indices(100, 42, 1), a.order(1));
  EXPECT_THROW(a.set_epoch(-1), ValueError);
  EXPECT_THROW(shuffled_indices(-1, 0, 0), ValueError);
}

TEST(DataLoader, ShuffleIsUnbiasedEnough) {
  // Over many epochs of a 4-element dataset, every element lands in every slot about
  // equally often (24 permutations; 4800 epochs -> 1200 per cell, sd ~ 30).
  std::vector<std::vector<int>> counts(4, std::vector<int>(4, 0));
  for (int64_t e = 0; e < 4800; ++e) {
    auto order = shuffled_indices(4, 7, e);
    for (int slot = 0; slot < 4; ++slot) ++counts[static_cast<size_t>(slot)][static_cast<size_t>(order[slot])];
  }
  for (const auto& row : counts)
    for (int c : row) {
      EXPECT_GT(c, 1050);
      EXPECT_LT(c, 1350);
    }
}

TEST(DataLoader, EarlyBreakAndDestructionDoNotHang) {
  auto ds = indexed(1000);
  auto t0 = std::chrono::steady_clock::now();
  {
    DataLoader loader(ds, {.batch_size = 1, .shuffle = true});
    for (int rep = 0; rep < 50; ++rep) {
      int seen = 0;
      for (auto& batch : loader) {
        EXPECT_EQ(batch.data.size(0), 1);
        if (++seen == 3) break;  // the worker is blocked on a full queue here
      }
      EXPECT_EQ(seen, 3);
    }
    // An iterator left alive while a new iteration starts, and while the loader dies.
    auto it = loader.begin();
    auto it2 = loader.begin();
    EXPECT_FALSE(it == it2);
    ++it;
    EXPECT_EQ(it->data.size(0), 1);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(DataLoader, IteratorOutlivesLoader) {
  DataLoader::Iterator it;
  {
    DataLoader loader(indexed(5), {.batch_size = 2});
    it = loader.begin();
  }
  int n = 0;
  for (; it != DataLoader::Iterator(); ++it) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_THROW(*it, RuntimeError);
  EXPECT_THROW(++it, RuntimeError);
}

TEST(DataLoader, ExceptionInDatasetPropagates) {
  auto ds = std::make_shared<Flaky>(20, 13);
  for (bool prefetch : {true, false}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "synchronous");
    DataLoader loader(ds, {.batch_size = 4, .prefetch = prefetch});
    int batches = 0;
    try {
      for (auto& batch : loader) {
        EXPECT_EQ(batch.data.sizes().vec(), (DimVector{4, 3}));  // default collate path
        ++batches;
      }
      ADD_FAILURE() << "expected the dataset's ValueError";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("example 13 is broken"), std::string::npos) << e.what();
    }
    EXPECT_EQ(batches, 3) << "batches before the broken one arrive in order";
    // The iteration ended; the next one fails again rather than hanging.
    EXPECT_THROW(run_epoch(loader), ValueError);
  }
  // A failure in the very first batch is raised by begin().
  DataLoader first(std::make_shared<Flaky>(8, 0), {.batch_size = 4});
  EXPECT_THROW(first.begin(), ValueError);
}

TEST(DataLoader, PrefetchRunsAheadBoundedly) {
  auto ds = std::make_shared<Flaky>(400, -1);
  DataLoader loader(ds, {.batch_size = 1});
  Flaky::calls = 0;
  auto it = loader.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Current batch + a queue of 2 + at most one being built.
  EXPECT_LE(Flaky::calls.load(), 4);
  EXPECT_GE(Flaky::calls.load(), 3) << "the worker prepared batches ahead";
}

TEST(DataLoader, OwnsADatasetPassedByValue) {
  DataLoader loader(TensorDataset(arange(6).view({6, 1}).expand({6, 2}), arange(6)), {.batch_size = 4});
  auto batches = run_epoch(loader);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(loader.dataset().size(), 6);
}

TEST(DataLoader, FashionMnistEpoch) {
  if (!std::filesystem::exists(std::string(datasets::FashionMNIST::kDefaultRoot) + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << datasets::FashionMNIST::kDefaultRoot << " is missing (Debian package dataset-fashion-mnist)";
  auto test = std::make_shared<datasets::FashionMNIST>(datasets::FashionMNIST::kDefaultRoot, false);
  auto normalized = std::make_shared<TransformDataset>(test, transforms::Normalize(0.2860, 0.3530));
  DataLoader loader(normalized, {.batch_size = 64, .shuffle = true, .seed = 1});
  EXPECT_EQ(loader.size(), 157);
  int64_t n = 0, batches = 0;
  std::vector<int64_t> per_class(10, 0);
  for (auto& batch : loader) {
    ++batches;
    EXPECT_EQ(batch.data.dtype(), kFloat32);
    EXPECT_EQ(batch.data.size(1), 1);
    EXPECT_EQ(batch.data.size(2), 28);
    n += batch.data.size(0);
    for (int64_t k = 0; k < batch.target.size(0); ++k) ++per_class[static_cast<size_t>(batch.target[k].item<int64_t>())];
  }
  EXPECT_EQ(batches, 157);
  EXPECT_EQ(n, 10000);
  for (int64_t c : per_class) EXPECT_EQ(c, 1000);
}
