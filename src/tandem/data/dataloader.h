#pragma once
// DataLoader: batches of a Dataset, optionally shuffled, prepared ahead by a background
// thread (torch.utils.data.DataLoader with one worker thread instead of worker processes).
//
//   data::DataLoader loader(data::datasets::FashionMNIST(), {.batch_size = 64, .shuffle = true, .seed = 1});
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) train_step(batch.data, batch.target);
//
// Order. Epoch e visits the examples in a permutation that depends only on (seed, e), so a
// run is reproducible and can resume mid-training: each iteration (each begin()) uses
// epoch() and then advances it by one; set_epoch(e) chooses the epoch of the next
// iteration (like DistributedSampler.set_epoch, but without it the epochs still differ).
//
// Prefetch. With prefetch on, begin() starts a thread that builds batches in order into a
// queue of at most 2 while the caller trains on the current one. The thread blocks all
// asynchronous signals (SIGINT, SIGTERM, ...), so an application's handlers run on its
// own threads only. Breaking out of the loop
// (destroying the iterator), starting a new iteration or destroying the loader stops the
// thread cleanly; an exception thrown while building a batch is rethrown by the
// iterator when that batch is reached, and ends the iteration. Batches are built with
// Dataset::get_batch, which for TensorDataset and MNIST is a plain memory gather (no
// OpenMP), so the thread does not compete with the training ops for cores; transforms run
// there under ThreadLimitGuard(1) for the same reason.
#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "tandem/data/dataset.h"

namespace tandem::data {

/// Chooses which examples an epoch visits, and in which order (torch.utils.data.Sampler).
/// DataLoader asks it when DataLoaderOptions::sampler is set. Implementations must be
/// deterministic in (n, epoch): a resumed run calls indices() for its epoch again.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The dataset indices (each in [0, n)) epoch `epoch` visits, in order.
  virtual std::vector<int64_t> indices(int64_t n, int64_t epoch) const = 0;
  /// How many indices() returns for a dataset of n examples (any epoch).
  virtual int64_t size(int64_t n) const = 0;
};

/// Settings of DistributedSampler (torch.utils.data.DistributedSampler's arguments).
struct DistributedSamplerOptions {
  /// Number of ranks (>= 1); -1: distributed::world_size() (1 before init_process_group).
  int num_replicas = -1;
  /// This rank, in [0, num_replicas); -1: distributed::rank() (0 before init_process_group).
  int rank = -1;
  /// Shuffle per epoch with shuffled_indices(n, seed, epoch): the same permutation on
  /// every rank, so the shards are disjoint.
  bool shuffle = true;
  uint64_t seed = 0;
  /// false: pad the order by repeating its first indices up to a multiple of
  /// num_replicas; true: drop its tail down to a multiple.
  bool drop_last = false;
};

/// This rank's share of each epoch (torch.utils.data.DistributedSampler): the epoch's
/// order (shuffled per (seed, epoch), or index order), padded or cut to a multiple of R
/// ranks, then every R-th index starting at `rank` (order[rank], order[rank + R], ...).
/// Shards are disjoint (apart from the padding's repeats), equally long, and together
/// they are the epoch's order: with per-rank batch b, step j of all ranks together covers
/// order[j*R*b, (j+1)*R*b), the same examples as one process with batch R*b. ValueError
/// for num_replicas < 1 or a rank outside [0, num_replicas).
class DistributedSampler : public Sampler {
 public:
  explicit DistributedSampler(DistributedSamplerOptions options = {});
  std::vector<int64_t> indices(int64_t n, int64_t epoch) const override;
  /// ceil(n / R) with padding, floor(n / R) with drop_last.
  int64_t size(int64_t n) const override;
  int num_replicas() const { return replicas_; }
  int rank() const { return rank_; }

 private:
  DistributedSamplerOptions options_;
  int replicas_ = 1, rank_ = 0;
};

/// DataLoader settings (torch.utils.data.DataLoader's arguments that apply).
struct DataLoaderOptions {
  /// Examples per batch, >= 1.
  int64_t batch_size = 1;
  /// Visit examples in a per-epoch random permutation (else in index order).
  bool shuffle = false;
  /// Seed of the shuffling permutations (see the file comment).
  uint64_t seed = 0;
  /// Drop the last batch when it is smaller than batch_size.
  bool drop_last = false;
  /// Build batches ahead on a background thread.
  bool prefetch = true;
  /// Which examples each epoch visits, in which order (null: all, shuffled or in index
  /// order as `shuffle` says). With a sampler, shuffle must be false (the sampler
  /// shuffles; ValueError otherwise, as in PyTorch).
  std::shared_ptr<const Sampler> sampler = nullptr;
};

/// The order in which DataLoader visits a dataset of n examples in epoch `epoch`: a
/// Fisher-Yates shuffle of 0..n-1 driven by a Philox Generator seeded with `seed`, drawing
/// from word offset epoch * 2^40 of its stream (so epochs never share random words).
/// Each swap position comes from unbiased 64-bit draws (rejection sampling).
/// ValueError for n < 0 or epoch < 0.
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch);

namespace detail {
struct EpochRun;
}

/// Iterates a dataset in batches (see the file comment). Copying a loader copies its
/// settings and current epoch; the dataset is shared.
class DataLoader {
 public:
  /// Input iterator over one epoch's batches; `*it` is the current Batch. Compares equal
  /// to end() when the epoch is over. Destroying it stops the prefetch thread.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Iterator() = default;
    /// The current batch.
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    /// Moves to the next batch; rethrows an exception raised while building it.
    Iterator& operator++();
    /// Equal when both are at the end (iterators of a live epoch equal only themselves).
    bool operator==(const Iterator& other) const;

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<detail::EpochRun> run) : run_(std::move(run)) {}
    bool at_end() const;
    std::shared_ptr<detail::EpochRun> run_;
  };

  /// A loader over `dataset` (shared). ValueError for a null dataset or batch_size < 1.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  /// A loader that owns a copy of `dataset` (any Dataset subclass, taken by value).
  template <typename D, typename = std::enable_if_t<std::is_base_of_v<Dataset, std::decay_t<D>>>>
  explicit DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::shared_ptr<const Dataset>(std::make_shared<std::decay_t<D>>(std::forward<D>(dataset))),
                   options) {}

  /// Starts an iteration over epoch() (building its order, and starting the prefetch
  /// thread) and advances epoch() by one.
  Iterator begin();
  /// The end sentinel.
  Iterator end() const { return Iterator(); }

  /// Batches per epoch: ceil(N / batch_size), or floor with drop_last (N: the sampler's
  /// size when one is set, else the dataset's).
  int64_t size() const;
  /// The epoch the next begin() will use.
  int64_t epoch() const { return epoch_; }
  /// Makes the next begin() iterate epoch `epoch` (>= 0, ValueError otherwise).
  void set_epoch(int64_t epoch);
  /// The example order of `epoch` (index order without shuffle).
  std::vector<int64_t> order(int64_t epoch) const;
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace tandem::data
