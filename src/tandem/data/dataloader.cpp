// DataLoader: epoch orders, synchronous and prefetching iteration (see dataloader.h).
#include "tandem/data/dataloader.h"

#include "tandem/distributed/process_group.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "tandem/core/generator.h"
#include "tandem/core/grad_mode.h"
#include "tandem/core/parallel.h"

namespace tandem::data {

namespace {
// Words of the Philox stream reserved for each epoch's permutation.
constexpr int kEpochOffsetShift = 40;
// Batches the prefetch thread may have ready ahead of the consumer.
constexpr size_t kQueueCapacity = 2;

// Uniform integer in [0, bound] from 64-bit draws, without modulo bias.
uint64_t uniform_upto(Generator& g, uint64_t bound) {
  const uint64_t range = bound + 1;
  if (range == 0) return g.next_u64();  // bound == 2^64 - 1
  const uint64_t limit = (0 - range) % range;  // 2^64 mod range: reject the first `limit` values
  uint64_t r;
  do r = g.next_u64();
  while (r < limit);
  return r % range;
}
}  // namespace

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch) {
  TANDEM_CHECK(n >= 0, ValueError, "shuffled_indices", "got n = ", n, ", expected n >= 0");
  TANDEM_CHECK(epoch >= 0 && epoch < (int64_t{1} << (64 - kEpochOffsetShift)), ValueError, "shuffled_indices",
               "got epoch ", epoch, ", expected 0 <= epoch < 2^", 64 - kEpochOffsetShift);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  Generator g(seed);
  g.set_offset(static_cast<uint64_t>(epoch) << kEpochOffsetShift);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_upto(g, static_cast<uint64_t>(i)));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

namespace detail {

// One iteration over an epoch. Owned by the iterators; the dataset is shared, so a run
// outlives its loader safely.
struct EpochRun {
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;
  int64_t batch_size = 1;
  int64_t num_batches = 0;
  int64_t consumed = 0;  // batches handed to the consumer so far
  Batch current;
  bool done = false;

  // Prefetch state (used when `prefetch`).
  bool prefetch = false;
  struct Item {
    Batch batch;
    std::exception_ptr error;
  };
  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;  // signals both directions: item ready / space or stop
  std::deque<Item> queue;
  bool stop = false;

  ~EpochRun() { shutdown(); }

  Batch make_batch(int64_t b) const {
    const size_t lo = static_cast<size_t>(b * batch_size);
    const size_t hi = std::min(order.size(), lo + static_cast<size_t>(batch_size));
    return dataset->get_batch(std::vector<int64_t>(order.begin() + static_cast<std::ptrdiff_t>(lo),
                                                   order.begin() + static_cast<std::ptrdiff_t>(hi)));
  }

  void start() {
    if (!prefetch || num_batches == 0) return;
    // The worker is born with every asynchronous signal blocked (a thread inherits its
    // creator's mask), so Ctrl-C and friends always reach the application's own threads:
    // their handlers never run on this thread, mid-batch, and it is never interrupted
    // while the consumer stops and joins it.
    sigset_t all, old;
    sigfillset(&all);
    for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigdelset(&all, sync);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    try {
      worker = std::thread([this] { produce(); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  void produce() {
    AutoGradMode no_grad(false);  // batches never need autograd history
    ThreadLimitGuard one_thread(1);  // transforms run serially here: the cores belong to training
    for (int64_t b = 0; b < num_batches; ++b) {
      Item item;
      try {
        item.batch = make_batch(b);
      } catch (...) {
        item.error = std::current_exception();
      }
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || queue.size() < kQueueCapacity; });
      if (stop) return;
      const bool failed = static_cast<bool>(item.error);
      queue.push_back(std::move(item));
      cv.notify_all();
      if (failed) return;
    }
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (worker.joinable()) worker.join();
  }

  // Moves to the next batch, or to the end. Rethrows a failure of that batch.
  void advance() {
    if (done) return;
    if (consumed == num_batches) {
      finish();
      return;
    }
    if (!prefetch) {
      try {
        current = make_batch(consumed);
      } catch (...) {
        finish();
        throw;
      }
      ++consumed;
      return;
    }
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !queue.empty(); });
      item = std::move(queue.front());
      queue.pop_front();
    }
    cv.notify_all();
    if (item.error) {
      finish();
      std::rethrow_exception(item.error);
    }
    current = std::move(item.batch);
    ++consumed;
  }

  void finish() {
    done = true;
    current = Batch();
    shutdown();
  }
};

}  // namespace detail

// ------------------------------------------------------------------ Iterator

Batch& DataLoader::Iterator::operator*() const {
  TANDEM_CHECK(!at_end(), RuntimeError, "DataLoader", "dereferenced an iterator at the end of the epoch");
  return run_->current;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  TANDEM_CHECK(!at_end(), RuntimeError, "DataLoader", "advanced an iterator past the end of the epoch");
  run_->advance();
  return *this;
}

bool DataLoader::Iterator::at_end() const { return !run_ || run_->done; }

bool DataLoader::Iterator::operator==(const Iterator& other) const {
  if (at_end() || other.at_end()) return at_end() && other.at_end();
  return run_ == other.run_;
}

// ------------------------------------------------------------------ DistributedSampler

DistributedSampler::DistributedSampler(DistributedSamplerOptions options) : options_(options) {
  const bool init = distributed::is_initialized();
  replicas_ = options_.num_replicas >= 0 ? options_.num_replicas : (init ? distributed::world_size() : 1);
  rank_ = options_.rank >= 0 ? options_.rank : (init ? distributed::rank() : 0);
  TANDEM_CHECK(replicas_ >= 1, ValueError, "DistributedSampler", "got num_replicas ", replicas_, ", expected >= 1");
  TANDEM_CHECK(rank_ >= 0 && rank_ < replicas_, ValueError, "DistributedSampler", "got rank ", rank_,
               ", expected a rank in [0, ", replicas_, ")");
}

int64_t DistributedSampler::size(int64_t n) const {
  TANDEM_CHECK(n >= 0, ValueError, "DistributedSampler", "got a dataset of ", n, " examples, expected n >= 0");
  return options_.drop_last ? n / replicas_ : (n + replicas_ - 1) / replicas_;
}

std::vector<int64_t> DistributedSampler::indices(int64_t n, int64_t epoch) const {
  const int64_t per_rank = size(n);
  TANDEM_CHECK(epoch >= 0, ValueError, "DistributedSampler", "got epoch ", epoch, ", expected epoch >= 0");
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = shuffled_indices(n, options_.seed, epoch);
  } else {
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const size_t total = static_cast<size_t>(per_rank * replicas_);
  // Pad by repeating the order from its start (cyclically, for tiny datasets), or cut.
  for (size_t i = 0; order.size() < total && n > 0; ++i) order.push_back(order[i % static_cast<size_t>(n)]);
  order.resize(total);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(replicas_)) mine.push_back(order[i]);
  return mine;
}

// ------------------------------------------------------------------ DataLoader

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  TANDEM_CHECK(dataset_ != nullptr, ValueError, "DataLoader", "dataset is null");
  TANDEM_CHECK(options_.batch_size >= 1, ValueError, "DataLoader", "got batch_size ", options_.batch_size,
               ", expected a positive integer");
  TANDEM_CHECK(!(options_.sampler && options_.shuffle), ValueError, "DataLoader",
               "got a sampler and shuffle=true, expected shuffle=false with a sampler (the sampler orders the examples)");
}

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler ? options_.sampler->size(dataset_->size()) : dataset_->size();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::set_epoch(int64_t epoch) {
  TANDEM_CHECK(epoch >= 0, ValueError, "DataLoader::set_epoch", "got epoch ", epoch, ", expected epoch >= 0");
  epoch_ = epoch;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  const int64_t n = dataset_->size();
  TANDEM_CHECK(epoch >= 0, ValueError, "DataLoader::order", "got epoch ", epoch, ", expected epoch >= 0");
  if (options_.sampler) {
    std::vector<int64_t> idx = options_.sampler->indices(n, epoch);
    for (int64_t i : idx)
      TANDEM_CHECK(i >= 0 && i < n, IndexError, "DataLoader::order", "the sampler returned index ", i,
                   ", expected one in [0, ", n, ")");
    return idx;
  }
  if (options_.shuffle) return shuffled_indices(n, options_.seed, epoch);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  auto run = std::make_shared<detail::EpochRun>();
  run->dataset = dataset_;
  run->order = order(epoch_);
  run->batch_size = options_.batch_size;
  run->num_batches = size();
  run->prefetch = options_.prefetch;
  ++epoch_;
  run->start();
  run->advance();  // load the first batch (or reach the end of an empty epoch)
  return Iterator(std::move(run));
}

}  // namespace tandem::data
