#pragma once
// Layers with PyTorch's default initialisation (torch.nn). Each holds its parameters
// as registered tensors and applies the functional op of the same name in forward().
// Shapes follow PyTorch: N = batch, C = channels, H/W = spatial.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tandem/nn/module.h"

namespace tandem::nn {

/// y = x W^T + b. x: [*, in_features] -> [*, out_features]. W: [out, in], b: [out].
/// Init: W, b ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5)).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias;
  int64_t in_features, out_features;
};

/// y = x1^T A x2 + b. x1: [*, in1], x2: [*, in2] -> [*, out]; A: [out, in1, in2].
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;
  Tensor forward2(const Tensor& x1, const Tensor& x2);
  Tensor weight, bias;
};

/// Options shared by convolutions.
struct ConvOptions {
  std::vector<int64_t> stride{1};
  std::vector<int64_t> padding{0};
  std::vector<int64_t> dilation{1};
  int64_t groups = 1;
  bool bias = true;
  std::string padding_mode_same;  ///< "same" or "valid" to use string padding (conv1d/2d)
  std::vector<int64_t> output_padding{0};  ///< transposed convolution only
};

/// 1-D convolution: [N, C_in, L] -> [N, C_out, L_out]; weight [C_out, C_in/groups, k].
class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, ConvOptions opts = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  ConvOptions opts;
};

/// 2-D convolution: [N, C_in, H, W] -> [N, C_out, H_out, W_out]; weight [C_out, C_in/groups, kH, kW].
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, ConvOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias;
  int64_t in_channels, out_channels;
  std::vector<int64_t> kernel_size;
  ConvOptions opts;
};

/// Transposed 2-D convolution; weight [C_in, C_out/groups, kH, kW].
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, ConvOptions opts = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  ConvOptions opts;
};

/// Max pooling over [N, C, H, W] (stride defaults to kernel_size).
class MaxPool2d : public Module {
 public:
  MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
            std::vector<int64_t> dilation = {1}, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

/// Average pooling over [N, C, H, W].
class AvgPool2d : public Module {
 public:
  AvgPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
            bool ceil_mode = false, bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

/// Adaptive average pooling to output_size [oH, oW].
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::vector<int64_t> output_size);
  Tensor forward(const Tensor& x) override;
  std::vector<int64_t> output_size;
};

/// Batch normalisation over dim 1 (BatchNorm1d: [N, C] or [N, C, L]; BatchNorm2d:
/// [N, C, H, W]). Training: batch statistics, running stats updated with momentum;
/// eval: running stats. Buffers running_mean (zeros), running_var (ones),
/// num_batches_tracked; affine weight (ones) and bias (zeros).
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats, int64_t expected_dims_lo,
            int64_t expected_dims_hi, std::string name);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
  bool affine, track_running_stats;

 private:
  int64_t lo_, hi_;
};
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats, 2, 3, "BatchNorm1d") {}
};
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats, 4, 4, "BatchNorm2d") {}
};

/// Layer normalisation over the trailing normalized_shape dims.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  std::vector<int64_t> normalized_shape;
  double eps;
};

/// Group normalisation of [N, C, *] into num_groups groups.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  int64_t num_groups;
  double eps;
};

/// Zeroes elements with probability p in training (scaling the rest by 1/(1-p)).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  double p;
};

/// Lookup table: int64 indices [*] -> [*, embedding_dim]; weight ~ N(0, 1), padding row zero.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  Tensor weight;
  std::optional<int64_t> padding_idx;
};

/// Activations and shape layers without parameters.
class ReLU : public Module { public: ReLU() : Module("ReLU") {} Tensor forward(const Tensor& x) override; };
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : Module("LeakyReLU"), negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  double negative_slope;
};
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : Module("GELU"), approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override;
  std::string approximate;
};
class SiLU : public Module { public: SiLU() : Module("SiLU") {} Tensor forward(const Tensor& x) override; };
class Tanh : public Module { public: Tanh() : Module("Tanh") {} Tensor forward(const Tensor& x) override; };
class Sigmoid : public Module { public: Sigmoid() : Module("Sigmoid") {} Tensor forward(const Tensor& x) override; };
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : Module("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  int64_t dim;
};
class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  int64_t dim;
};
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  int64_t start_dim, end_dim;
};
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, std::vector<int64_t> sizes) : Module("Unflatten"), dim(dim), sizes(std::move(sizes)) {}
  Tensor forward(const Tensor& x) override;
  int64_t dim;
  std::vector<int64_t> sizes;
};
class Identity : public Module { public: Identity() : Module("Identity") {} Tensor forward(const Tensor& x) override { return x; } };

/// Runs children in order, each on the previous output.
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(std::vector<ModulePtr> mods);
  /// Appends a module named by its index.
  void push_back(ModulePtr m);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return children().size(); }
  /// The i-th module; IndexError when i >= size().
  ModulePtr operator[](size_t i) const;
};

/// A list of modules registered as children "0", "1", ... (no forward).
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  void push_back(ModulePtr m);
  size_t size() const { return children().size(); }
  /// The i-th module; IndexError when i >= size().
  ModulePtr operator[](size_t i) const;
};

/// Modules registered by name, in insertion order (no forward).
class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  void insert(const std::string& key, ModulePtr m);
  ModulePtr operator[](const std::string& key) const;
  bool contains(const std::string& key) const;
};

}  // namespace tandem::nn
