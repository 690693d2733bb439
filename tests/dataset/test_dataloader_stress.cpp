// DataLoader stress: stop epochs early, many times, at every stage of the prefetch thread
// (building a batch, blocked on a full queue, failing, finished), destroying the iterator
// and the loader in both orders. Run under AddressSanitizer (./run test --sanitize), a
// use-after-free or a race on the queue shows here; in the plain build it checks that
// nothing hangs and every batch that arrives is whole and in order.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "tandem/tandem.h"

using namespace tandem;
using namespace tandem::data;

namespace {

// Example i is data [i, i, i, i] (float32) and target i. get_batch spins for a
// pseudo-random few microseconds (so the consumer catches the worker at different
// points), allocates through tandem's allocator like MNIST does, and fails at `bad_`.
class Jittery : public Dataset {
 public:
  Jittery(int64_t n, int64_t bad) : n_(n), bad_(bad) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override { return {full({4}, static_cast<double>(i), kFloat32), scalar_tensor(i)}; }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    const auto spin = std::chrono::microseconds((indices[0] * 2654435761u >> 7) % 200);
    const auto until = std::chrono::steady_clock::now() + spin;
    while (std::chrono::steady_clock::now() < until) {
    }
    for (int64_t i : indices)
      if (i == bad_) throw ValueError("[Jittery] example " + std::to_string(i) + " is broken");
    const auto b = static_cast<int64_t>(indices.size());
    Tensor data = empty_tensor({b, 4}, kFloat32), target = empty_tensor({b}, kInt64);
    for (int64_t k = 0; k < b; ++k) {
      for (int64_t j = 0; j < 4; ++j) data.data_ptr<float>()[k * 4 + j] = static_cast<float>(indices[static_cast<size_t>(k)]);
      target.data_ptr<int64_t>()[k] = indices[static_cast<size_t>(k)];
    }
    return {data, target};
  }

 private:
  int64_t n_, bad_;
};

// Checks a batch is whole: each row's data equals its target.
void expect_whole(const Batch& b) {
  ASSERT_EQ(b.data.dim(), 2);
  for (int64_t k = 0; k < b.target.size(0); ++k)
    ASSERT_EQ(b.data.data_ptr<float>()[k * 4 + 3], static_cast<float>(b.target.data_ptr<int64_t>()[k]));
}

}  // namespace

TEST(DataLoaderStress, BreakingOutEarlyManyTimes) {
  std::mt19937 rng(7);
  const auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 400; ++rep) {
    const int64_t bad = rep % 5 == 0 ? static_cast<int64_t>(rng() % 40) : -1;
    auto ds = std::make_shared<Jittery>(40, bad);
    const int64_t batch = 1 + static_cast<int64_t>(rng() % 4);
    auto loader = std::make_unique<DataLoader>(ds, DataLoaderOptions{.batch_size = batch, .shuffle = rep % 2 == 1,
                                                                      .seed = static_cast<uint64_t>(rep)});
    const int stop_after = static_cast<int>(rng() % 6);  // 0: break at the first batch
    try {
      int seen = 0;
      for (auto& b : *loader) {
        expect_whole(b);
        Tensor work = b.data * 2.0 + 1.0;  // the consumer allocates too, as training does
        (void)work;
        if (seen++ == stop_after) break;
        if (rng() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      }
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("is broken"), std::string::npos) << e.what();
    }
    if (rep % 3 == 0) {
      // An iterator that outlives its loader, dropped mid-epoch while the worker runs.
      DataLoader::Iterator it;
      try {
        it = loader->begin();
      } catch (const ValueError&) {
        continue;
      }
      loader.reset();
      if (rng() % 2) {
        try {
          ++it;
        } catch (const ValueError&) {
        }
      }
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(120));
}

// Two loaders iterated in turn from one thread, each broken out of early, while the
// other's worker is still running (train and test loaders of the training loop).
TEST(DataLoaderStress, InterleavedLoadersStopEarly) {
  auto train = std::make_shared<Jittery>(64, -1), test = std::make_shared<Jittery>(16, -1);
  DataLoader a(train, {.batch_size = 2, .shuffle = true}), b(test, {.batch_size = 3});
  for (int rep = 0; rep < 100; ++rep) {
    auto ia = a.begin();
    auto ib = b.begin();
    for (int k = 0; k < rep % 7 && ia != a.end(); ++k, ++ia) expect_whole(*ia);
    for (int k = 0; k < rep % 4 && ib != b.end(); ++k, ++ib) expect_whole(*ib);
    if (rep % 2) std::swap(ia, ib);  // destroyed in either order
  }
}

namespace {
// Records, from inside get_batch (the prefetch thread), whether SIGINT and SIGTERM are
// blocked there.
class MaskProbe : public Dataset {
 public:
  int64_t size() const override { return 8; }
  Example get(int64_t i) const override { return {full({1}, static_cast<double>(i), kFloat32), scalar_tensor(i)}; }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, nullptr, &cur);
    int_blocked = sigismember(&cur, SIGINT) == 1 && sigismember(&cur, SIGTERM) == 1;
    segv_blocked = sigismember(&cur, SIGSEGV) == 1;
    on_caller = std::this_thread::get_id() == caller;
    return Dataset::get_batch(indices);
  }
  static inline std::atomic<bool> int_blocked{false}, segv_blocked{true}, on_caller{true};
  static inline std::thread::id caller;
};
}  // namespace

// Ctrl-C must reach the application's thread (where `tandem train` sets its flag), never
// the loader's: the prefetch thread blocks asynchronous signals from birth, and the
// caller's own mask is left as it was.
TEST(DataLoaderStress, PrefetchThreadBlocksAsynchronousSignals) {
  MaskProbe::caller = std::this_thread::get_id();
  DataLoader loader(std::make_shared<MaskProbe>(), {.batch_size = 8});
  for (auto& b : loader) EXPECT_EQ(b.data.size(0), 8);
  EXPECT_FALSE(MaskProbe::on_caller.load()) << "the batch was built on the prefetch thread";
  EXPECT_TRUE(MaskProbe::int_blocked.load());
  EXPECT_FALSE(MaskProbe::segv_blocked.load()) << "synchronous signals stay deliverable (crash reports)";
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, nullptr, &cur);
  EXPECT_EQ(sigismember(&cur, SIGINT), 0) << "the caller's mask is restored";
}
