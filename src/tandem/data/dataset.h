#pragma once
// Datasets (PyTorch's torch.utils.data.Dataset and torchvision.datasets), the tensors
// they hold, and the transforms applied to their examples.
//
// A Dataset maps an index in [0, size()) to an Example {data, target}. DataLoader asks for
// whole batches through get_batch(indices); the default stacks get(i) one by one, and the
// datasets here override it to gather a batch with one copy (TensorDataset) or one
// conversion pass (MNIST), which is what keeps a data loader thread cheap.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::data {

/// One example of a dataset: the input and its target. `target` is undefined for
/// datasets without targets.
struct Example {
  Tensor data;
  Tensor target;
};

/// A batch: examples stacked along a new leading dim 0 (data [B, ...], target [B, ...]).
struct Batch {
  Tensor data;
  Tensor target;
};

/// Base class of map-style datasets (torch.utils.data.Dataset). Implementations must
/// allow concurrent const calls: DataLoader calls get_batch from its prefetch thread.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Number of examples.
  virtual int64_t size() const = 0;
  /// Example `index`, for 0 <= index < size() (IndexError otherwise).
  virtual Example get(int64_t index) const = 0;
  /// The examples at `indices`, stacked along dim 0. The default calls get() for each
  /// index and collate()s the results; override it when a batch can be gathered in one
  /// pass. IndexError for an index outside [0, size()); ValueError for no indices.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
};

/// Stacks examples into a batch (torch.utils.data.default_collate for tensors): all data
/// tensors must have one shape and dtype (ShapeError / TypeError naming the first example
/// that differs), and the same for targets; targets are either all defined or all
/// undefined (ValueError). One memcpy per example and field. ValueError if empty.
Batch collate(const std::vector<Example>& examples);

/// Rows `indices` of `src` along dim 0, as a new contiguous tensor
/// [indices.size(), src.sizes()[1:]...] of src's dtype: one memcpy per row, no OpenMP
/// (safe and cheap on a loader thread). `src` needs dim >= 1 (ValueError); IndexError
/// for an index outside [0, src.size(0)). Not recorded by autograd.
Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& indices);

/// A dataset over tensors whose dim 0 indexes examples (torch.utils.data.TensorDataset):
/// example i is {data[i], targets[i]}, views of the stored tensors.
class TensorDataset : public Dataset {
 public:
  /// `data` must have dim >= 1; `targets`, when given, dim >= 1 and the same size(0)
  /// (ShapeError otherwise). Data whose rows are not contiguous is copied once, so
  /// batches can be gathered row by row.
  explicit TensorDataset(Tensor data, Tensor targets = Tensor());
  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) const override;
  /// Gathers data and target rows with gather_rows: one copy per batch and field.
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  /// The stored tensors.
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

/// A function from tensor to tensor applied to examples (or batches) of a dataset.
using Transform = std::function<Tensor(const Tensor&)>;

/// `base` with `transform` applied to every example's data (torch's Dataset.map).
/// With `batched` (the default) get_batch applies the transform once to the whole batch,
/// which is only right for transforms that act on each example of a [B, ...] tensor
/// independently and identically, like transforms::Normalize; pass batched = false for
/// others (random crops, ...) so each example is transformed alone and then collated.
class TransformDataset : public Dataset {
 public:
  /// ValueError for a null base or an empty transform.
  TransformDataset(std::shared_ptr<const Dataset> base, Transform transform, bool batched = true);
  int64_t size() const override { return base_->size(); }
  Example get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  Transform transform_;
  bool batched_;
};

/// The examples of `base` at `indices`, in that order (torch.utils.data.Subset): example i
/// is base->get(indices[i]). Used to train on part of a dataset (`tandem train
/// --train-limit`). ValueError for a null base; IndexError naming the first index outside
/// [0, base->size()).
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
};

namespace transforms {

/// (x - mean[c]) / std[c] for each channel c (torchvision.transforms.Normalize, not in
/// place). With one mean and one std the tensor may have any shape; with per-channel
/// values it must be [..., C, H, W] with C equal to their count, so an example [C, H, W]
/// and a batch [B, C, H, W] are normalised alike. mean and std are converted to the
/// tensor's dtype first and the subtraction and division are rounded to it, as PyTorch
/// does, so float32 results match torchvision bit for bit. Not recorded by autograd.
class Normalize {
 public:
  /// ValueError if mean or std is empty, their sizes differ (unless one has size 1) or
  /// a std is 0.
  Normalize(std::vector<double> mean, std::vector<double> std);
  /// One mean and std for every channel.
  Normalize(double mean, double std) : Normalize(std::vector<double>{mean}, std::vector<double>{std}) {}
  /// Normalises `x`: TypeError for a non-floating dtype; ShapeError when per-channel
  /// values do not match x.size(-3) (or x has fewer than 3 dims).
  Tensor operator()(const Tensor& x) const;

 private:
  std::vector<double> mean_, std_;
};

}  // namespace transforms

namespace datasets {

/// MNIST handwritten digits from IDX files in `root`: train-images-idx3-ubyte and
/// train-labels-idx1-ubyte (train = true) or t10k-* (train = false), each gzip'd
/// (".gz", preferred) or plain (torchvision.datasets.MNIST's files, without its folder
/// layout). Images are kept as uint8 [N, H, W] (47 MB for the training set, not 188) and
/// converted per example or per batch to float32 [1, H, W] in [0, 1] (value / 255, as
/// torchvision's ToTensor does); targets are int64 class indices. tandem never downloads.
class MNIST : public Dataset {
 public:
  /// Loads the split from `root`. RuntimeError naming the directory when it or a file is
  /// missing (saying where to get the data), and read_idx's errors for corrupt files;
  /// RuntimeError when the files do not fit together (images not uint8 [N, H, W], labels
  /// not uint8 [N], different N, a label >= 10).
  explicit MNIST(const std::string& root, bool train = true);
  int64_t size() const override { return images_.size(0); }
  /// {float32 [1, H, W], int64 0-d}. IndexError outside [0, size()).
  Example get(int64_t index) const override;
  /// {float32 [B, 1, H, W], int64 [B]} gathered and converted in one pass.
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  /// The raw images, uint8 [N, H, W].
  const Tensor& images() const { return images_; }
  /// The raw labels, uint8 [N].
  const Tensor& labels() const { return labels_; }
  /// The labels as int64 [N] (torchvision's .targets).
  Tensor targets() const;
  /// Whether this is the training split.
  bool train() const { return train_; }
  /// The path of the images file read (for messages about its contents).
  const std::string& images_file() const { return images_file_; }

 protected:
  /// Loads a split for a subclass: `name` prefixes errors, `missing_hint` says how to
  /// get the files when they are missing.
  MNIST(const std::string& root, bool train, const char* name, const std::string& missing_hint);

 private:
  Tensor images_, labels_;
  std::string images_file_;
  bool train_ = true;
};

/// Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): 28x28 grey images of clothing in 10
/// classes, 60000 for training and 10000 for testing, in MNIST's file format and layout
/// (see MNIST). The default root is where the Debian package dataset-fashion-mnist
/// installs the files.
class FashionMNIST : public MNIST {
 public:
  /// Where `apt install dataset-fashion-mnist` puts the gzip'd IDX files.
  static constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  /// Loads the split from `root`. `download` must be false: tandem never fetches data
  /// (NotImplementedError, naming the Debian package). Missing files raise RuntimeError
  /// naming the directory and, when root is kDefaultRoot, "install the Debian package
  /// dataset-fashion-mnist" (a directory of the user's own gets no such hint).
  explicit FashionMNIST(const std::string& root = kDefaultRoot, bool train = true, bool download = false);
  /// Class names by label: "T-shirt/top", "Trouser", ..., "Ankle boot".
  static const std::vector<std::string>& classes();
};

}  // namespace datasets

}  // namespace tandem::data
