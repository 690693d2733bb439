// Datasets, collation and transforms (see dataset.h).
#include "tandem/data/dataset.h"

#include <sys/stat.h>

#include <cstring>

#include "tandem/core/grad_mode.h"
#include "tandem/data/idx.h"
#include "tandem/ops/creation.h"

namespace tandem::data {

namespace {

void check_index(int64_t index, int64_t size, const char* fn) {
  TANDEM_CHECK(index >= 0 && index < size, IndexError, fn, "index ", index, " is out of range for a dataset of size ",
               size);
}

DimVector with_batch_dim(int64_t b, IntArrayRef sizes) {
  DimVector out{b};
  for (int64_t s : sizes) out.push_back(s);
  return out;
}

// Stacks one field (data or target) of the examples.
Tensor collate_field(const std::vector<Example>& examples, bool target) {
  const char* fn = "collate";
  const char* field = target ? "target" : "data";
  auto get = [&](size_t i) -> const Tensor& { return target ? examples[i].target : examples[i].data; };
  const Tensor& first = get(0);
  for (size_t i = 1; i < examples.size(); ++i)
    TANDEM_CHECK(get(i).defined() == first.defined(), ValueError, fn, "example ", i, " has ",
                 get(i).defined() ? "a" : "no", " ", field, " but example 0 has ", first.defined() ? "one" : "none");
  if (!first.defined()) return Tensor();
  Tensor out = empty_tensor(with_batch_dim(static_cast<int64_t>(examples.size()), first.sizes()), first.dtype());
  const size_t row = static_cast<size_t>(first.nbytes());
  auto* dst = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < examples.size(); ++i) {
    const Tensor& t = get(i);
    TANDEM_CHECK(t.sizes().equals(first.sizes()), ShapeError, fn, "example ", i, " has ", field, " of shape ", t.sizes(),
                 ", expected ", first.sizes(), " like example 0");
    TANDEM_CHECK(t.dtype() == first.dtype(), TypeError, fn, "example ", i, " has ", field, " of dtype ",
                 dtype_name(t.dtype()), ", expected ", dtype_name(first.dtype()), " like example 0");
    Tensor c = t.contiguous();
    if (row) std::memcpy(dst + i * row, c.data_ptr(), row);
  }
  return out;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

// ------------------------------------------------------------------ Dataset, collation

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  TANDEM_CHECK(!indices.empty(), ValueError, "Dataset::get_batch", "got no indices, expected at least one");
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) {
    check_index(i, size(), "Dataset::get_batch");
    examples.push_back(get(i));
  }
  return collate(examples);
}

Batch collate(const std::vector<Example>& examples) {
  TANDEM_CHECK(!examples.empty(), ValueError, "collate", "got no examples, expected at least one");
  return Batch{collate_field(examples, false), collate_field(examples, true)};
}

Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& indices) {
  TANDEM_CHECK(src.defined() && src.dim() >= 1, ValueError, "gather_rows", "expected a tensor with at least 1 dim");
  const int64_t n = src.size(0);
  for (int64_t i : indices) check_index(i, n, "gather_rows");
  Tensor out = empty_tensor(with_batch_dim(static_cast<int64_t>(indices.size()), IntArrayRef(src.sizes().data() + 1, src.sizes().size() - 1)), src.dtype());
  if (out.numel() == 0) return out;
  // Rows must be contiguous blocks; otherwise gather from a contiguous copy.
  Tensor s = (n > 0 && src[0].is_contiguous()) ? src : src.contiguous();
  const size_t row = static_cast<size_t>(s[0].nbytes());
  const int64_t stride_bytes = s.stride(0) * s.element_size();
  const auto* base = static_cast<const char*>(s.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < indices.size(); ++k) std::memcpy(dst + k * row, base + indices[k] * stride_bytes, row);
  return out;
}

// ------------------------------------------------------------------ TensorDataset

TensorDataset::TensorDataset(Tensor data, Tensor targets) {
  TANDEM_CHECK(data.defined() && data.dim() >= 1, ShapeError, "TensorDataset",
               "data must have at least 1 dim (dim 0 indexes examples)");
  if (targets.defined()) {
    TANDEM_CHECK(targets.dim() >= 1, ShapeError, "TensorDataset", "targets must have at least 1 dim");
    TANDEM_CHECK(targets.size(0) == data.size(0), ShapeError, "TensorDataset", "data has ", data.size(0),
                 " examples but targets has ", targets.size(0), ", expected the same size(0)");
  }
  auto rows_contiguous = [](const Tensor& t) { return t.size(0) == 0 || t[0].is_contiguous(); };
  data_ = rows_contiguous(data) ? data : data.contiguous();
  if (targets.defined()) targets_ = rows_contiguous(targets) ? targets : targets.contiguous();
}

Example TensorDataset::get(int64_t index) const {
  check_index(index, size(), "TensorDataset::get");
  return Example{data_[index], targets_.defined() ? targets_[index] : Tensor()};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  TANDEM_CHECK(!indices.empty(), ValueError, "TensorDataset::get_batch", "got no indices, expected at least one");
  return Batch{gather_rows(data_, indices), targets_.defined() ? gather_rows(targets_, indices) : Tensor()};
}

// ------------------------------------------------------------------ TransformDataset

TransformDataset::TransformDataset(std::shared_ptr<const Dataset> base, Transform transform, bool batched)
    : base_(std::move(base)), transform_(std::move(transform)), batched_(batched) {
  TANDEM_CHECK(base_ != nullptr, ValueError, "TransformDataset", "base dataset is null");
  TANDEM_CHECK(static_cast<bool>(transform_), ValueError, "TransformDataset", "transform is empty");
}

Example TransformDataset::get(int64_t index) const {
  Example e = base_->get(index);
  e.data = transform_(e.data);
  return e;
}

Batch TransformDataset::get_batch(const std::vector<int64_t>& indices) const {
  if (!batched_) return Dataset::get_batch(indices);
  Batch b = base_->get_batch(indices);
  b.data = transform_(b.data);
  return b;
}

// ------------------------------------------------------------------ Subset

Subset::Subset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  TANDEM_CHECK(base_ != nullptr, ValueError, "Subset", "base dataset is null");
  const int64_t n = base_->size();
  for (size_t i = 0; i < indices_.size(); ++i)
    TANDEM_CHECK(indices_[i] >= 0 && indices_[i] < n, IndexError, "Subset", "index ", indices_[i], " at position ", i,
                 " is out of range for a dataset of size ", n);
}

Example Subset::get(int64_t index) const {
  TANDEM_CHECK(index >= 0 && index < size(), IndexError, "Subset", "index ", index,
               " is out of range for a subset of size ", size());
  return base_->get(indices_[static_cast<size_t>(index)]);
}

Batch Subset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    TANDEM_CHECK(indices[i] >= 0 && indices[i] < size(), IndexError, "Subset", "index ", indices[i],
                 " is out of range for a subset of size ", size());
    mapped[i] = indices_[static_cast<size_t>(indices[i])];
  }
  return base_->get_batch(mapped);
}

// ------------------------------------------------------------------ Normalize

namespace transforms {

Normalize::Normalize(std::vector<double> mean, std::vector<double> std) : mean_(std::move(mean)), std_(std::move(std)) {
  TANDEM_CHECK(!mean_.empty() && !std_.empty(), ValueError, "Normalize", "mean and std must not be empty");
  TANDEM_CHECK(mean_.size() == std_.size() || mean_.size() == 1 || std_.size() == 1, ValueError, "Normalize", "got ",
               mean_.size(), " means and ", std_.size(), " stds, expected equal counts (or one of them 1)");
  for (double s : std_)
    TANDEM_CHECK(s != 0.0, ValueError, "Normalize", "std evaluated to zero, leading to division by zero");
}

namespace {
// Rounds each step to T, like PyTorch's sub_ then div_ on a T tensor.
template <typename T>
void normalize_loop(const T* x, T* y, int64_t outer, int64_t channels, int64_t inner, const std::vector<double>& mean,
                    const std::vector<double>& stdv) {
  using opmath = std::conditional_t<std::is_same_v<T, double>, double, float>;
  std::vector<opmath> m(channels), s(channels);
  for (int64_t c = 0; c < channels; ++c) {
    m[c] = static_cast<opmath>(static_cast<T>(mean[mean.size() == 1 ? 0 : c]));
    s[c] = static_cast<opmath>(static_cast<T>(stdv[stdv.size() == 1 ? 0 : c]));
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const opmath mc = m[c], sc = s[c];
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        T centred = static_cast<T>(static_cast<opmath>(x[base + i]) - mc);
        y[base + i] = static_cast<T>(static_cast<opmath>(centred) / sc);
      }
    }
}
}  // namespace

Tensor Normalize::operator()(const Tensor& x) const {
  TANDEM_CHECK(x.defined(), ValueError, "Normalize", "got an undefined tensor");
  TANDEM_CHECK(x.is_floating_point(), TypeError, "Normalize", "got dtype ", dtype_name(x.dtype()),
               ", expected a floating tensor (convert images to float first)");
  const size_t count = std::max(mean_.size(), std_.size());
  int64_t channels = 1, inner = x.numel(), outer = 1;
  if (count > 1) {
    TANDEM_CHECK(x.dim() >= 3, ShapeError, "Normalize", "got shape ", x.sizes(), ", expected [..., C, H, W] for ",
                 count, " per-channel values");
    channels = x.size(-3);
    TANDEM_CHECK(channels == static_cast<int64_t>(count), ShapeError, "Normalize", "got ", channels,
                 " channels (shape ", x.sizes(), "), expected ", count, " to match mean/std");
    inner = x.size(-1) * x.size(-2);
    outer = channels * inner == 0 ? 0 : x.numel() / (channels * inner);
  }
  AutoGradMode no_grad(false);
  Tensor in = x.contiguous();
  Tensor out = empty_tensor(x.sizes(), x.dtype());
  switch (x.dtype()) {
    case kFloat32:
      normalize_loop<float>(in.data_ptr<float>(), out.data_ptr<float>(), outer, channels, inner, mean_, std_);
      break;
    case kFloat64:
      normalize_loop<double>(in.data_ptr<double>(), out.data_ptr<double>(), outer, channels, inner, mean_, std_);
      break;
    case kFloat16:
      normalize_loop<Half>(in.data_ptr<Half>(), out.data_ptr<Half>(), outer, channels, inner, mean_, std_);
      break;
    case kBFloat16:
      normalize_loop<BFloat16>(in.data_ptr<BFloat16>(), out.data_ptr<BFloat16>(), outer, channels, inner, mean_,
                                       std_);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace transforms

// ------------------------------------------------------------------ MNIST, FashionMNIST

namespace datasets {

namespace {
constexpr int64_t kMnistClasses = 10;

// root/name.gz if present, else root/name; RuntimeError with the hint when neither is.
std::string find_idx(const std::string& root, const std::string& name, const char* fn, const std::string& hint) {
  struct stat st {};
  const bool exists = ::stat(root.c_str(), &st) == 0;
  TANDEM_CHECK(exists && S_ISDIR(st.st_mode), RuntimeError, fn, "dataset directory ", root,
               exists ? " is not a directory; " : " does not exist; ", hint);
  const std::string base = root + (root.empty() || root.back() == '/' ? "" : "/") + name;
  if (is_file(base + ".gz")) return base + ".gz";
  if (is_file(base)) return base;
  for (const std::string& p : {base + ".gz", base})
    if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw RuntimeError(str_cat("[", fn, "] ", p, " is a directory, expected a file"));
  throw RuntimeError(str_cat("[", fn, "] dataset directory ", root, " has no ", name, ".gz (or ", name, "); ", hint));
}

// Passes `root` through; download=true is refused (tandem never fetches data).
const std::string& refuse_download(const std::string& root, bool download) {
  TANDEM_CHECK(!download, NotImplementedError, "FashionMNIST",
               "download=true is not supported: tandem never downloads data; install the Debian package "
               "dataset-fashion-mnist instead");
  return root;
}

// uint8 pixels -> float32 in [0, 1], value / 255 like torchvision's ToTensor.
void pixels_to_float(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
}
}  // namespace

MNIST::MNIST(const std::string& root, bool train)
    : MNIST(root, train, "MNIST", "put MNIST's IDX files (train-images-idx3-ubyte.gz, ...) there; tandem never downloads data") {}

MNIST::MNIST(const std::string& root, bool train, const char* name, const std::string& missing_hint) : train_(train) {
  const std::string split = train ? "train" : "t10k";
  const std::string images_path = find_idx(root, split + "-images-idx3-ubyte", name, missing_hint);
  const std::string labels_path = find_idx(root, split + "-labels-idx1-ubyte", name, missing_hint);
  images_file_ = images_path;
  images_ = read_idx(images_path);
  labels_ = read_idx(labels_path);
  TANDEM_CHECK(images_.dtype() == kUInt8 && images_.dim() == 3, RuntimeError, name, images_path, ": got ",
               dtype_name(images_.dtype()), " images of shape ", images_.sizes(), ", expected uint8 [N, H, W]");
  TANDEM_CHECK(labels_.dtype() == kUInt8 && labels_.dim() == 1, RuntimeError, name, labels_path, ": got ",
               dtype_name(labels_.dtype()), " labels of shape ", labels_.sizes(), ", expected uint8 [N]");
  TANDEM_CHECK(labels_.size(0) == images_.size(0), RuntimeError, name, labels_path, " has ", labels_.size(0),
               " labels but ", images_path, " has ", images_.size(0), " images");
  const uint8_t* l = labels_.data_ptr<uint8_t>();
  for (int64_t i = 0; i < labels_.numel(); ++i)
    TANDEM_CHECK(l[i] < kMnistClasses, RuntimeError, name, labels_path, ": label ", i, " is ", static_cast<int>(l[i]),
                 ", expected a class in [0, ", kMnistClasses, ")");
}

Example MNIST::get(int64_t index) const {
  check_index(index, size(), "MNIST::get");
  Tensor img = images_[index];
  Tensor data = empty_tensor({1, images_.size(1), images_.size(2)}, kFloat32);
  pixels_to_float(img.data_ptr<uint8_t>(), data.data_ptr<float>(), data.numel());
  Tensor target = empty_tensor({}, kInt64);
  *target.data_ptr<int64_t>() = labels_.data_ptr<uint8_t>()[index];
  return Example{data, target};
}

Batch MNIST::get_batch(const std::vector<int64_t>& indices) const {
  TANDEM_CHECK(!indices.empty(), ValueError, "MNIST::get_batch", "got no indices, expected at least one");
  const int64_t b = static_cast<int64_t>(indices.size()), h = images_.size(1), w = images_.size(2);
  Tensor data = empty_tensor({b, 1, h, w}, kFloat32);
  Tensor target = empty_tensor({b}, kInt64);
  const uint8_t* img = images_.data_ptr<uint8_t>();
  const uint8_t* lab = labels_.data_ptr<uint8_t>();
  float* d = data.data_ptr<float>();
  int64_t* t = target.data_ptr<int64_t>();
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = indices[static_cast<size_t>(k)];
    check_index(i, size(), "MNIST::get_batch");
    pixels_to_float(img + i * h * w, d + k * h * w, h * w);
    t[k] = lab[i];
  }
  return Batch{data, target};
}

Tensor MNIST::targets() const { return labels_.to(kInt64); }

FashionMNIST::FashionMNIST(const std::string& root, bool train, bool download)
    : MNIST(refuse_download(root, download), train, "FashionMNIST",
            root == kDefaultRoot
                ? str_cat("install the Debian package dataset-fashion-mnist (it puts the files in ", kDefaultRoot, ")")
                : std::string("put Fashion-MNIST's IDX files (train-images-idx3-ubyte.gz, ...) there")) {}

const std::vector<std::string>& FashionMNIST::classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace datasets

}  // namespace tandem::data
