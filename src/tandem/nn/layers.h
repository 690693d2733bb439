#pragma once
// Layers with PyTorch's default initialisation (torch.nn). Each holds its parameters
// as registered tensors and applies the functional op of the same name in forward().
// Shapes follow PyTorch: N = batch, C = channels, H/W = spatial.
#include <map>
#include <optional>
#include <string>
#include <tuple>
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

/// y = x1^T A x2 + b (torch.nn.Bilinear). x1: [*, in1], x2: [*, in2] -> [*, out]; A:
/// [out, in1, in2]. Two inputs: call it with a list, module(std::vector<Tensor>{x1, x2}),
/// which runs the module's hooks (list hooks; see Module::operator()); forward2 is the
/// computation alone. module(x) raises NotImplementedError; forward_list ValueError unless
/// given two tensors; the errors of nn::functional::bilinear otherwise.
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;
  Tensor forward2(const Tensor& x1, const Tensor& x2);
  Tensor weight, bias;
};

/// Options shared by convolutions (torch.nn.Conv*d's keyword arguments). Int lists take
/// one value (every spatial dim) or one per spatial dim.
struct ConvOptions {
  std::vector<int64_t> stride{1};
  std::vector<int64_t> padding{0};
  std::vector<int64_t> dilation{1};
  int64_t groups = 1;
  bool bias = true;
  /// "same" or "valid" to use string padding instead of `padding` (Conv1d/Conv2d; "same"
  /// needs stride 1). Empty: numeric padding. ValueError (at construction) otherwise.
  std::string padding_mode_same;
  /// How the padding is filled (PyTorch's padding_mode): "zeros" (default), "reflect",
  /// "replicate" or "circular". Other modes than "zeros" pad the input with
  /// tandem::pad(input, pads, mode) (F.pad) and convolve with padding 0, as PyTorch does;
  /// F.pad's limits apply at forward time ("reflect": padding smaller than the input dim;
  /// "circular": padding at most the input dim, batched input only; errors name [pad]).
  /// ValueError at construction for other names, and for anything but "zeros" in
  /// ConvTranspose2d.
  std::string padding_mode = "zeros";
  std::vector<int64_t> output_padding{0};  ///< transposed convolution only
};

/// 1-D convolution (torch.nn.Conv1d): [N, C_in, L] or [C_in, L] -> [N, C_out, L_out];
/// weight [C_out, C_in/groups, k], bias [C_out]. Dtypes as tandem::conv1d. ValueError at
/// construction for non-positive groups, channels not divisible by groups, an unknown
/// padding string or padding_mode, and "same" with a stride other than 1.
class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, ConvOptions opts = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  ConvOptions opts;
};

/// 2-D convolution (torch.nn.Conv2d): [N, C_in, H, W] or [C_in, H, W] -> [N, C_out, H_out,
/// W_out]; weight [C_out, C_in/groups, kH, kW], bias [C_out]. Errors as Conv1d.
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

/// Transposed 2-D convolution; weight [C_in, C_out/groups, kH, kW]. padding_mode must be
/// "zeros" (ValueError otherwise, as in PyTorch).
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, ConvOptions opts = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  ConvOptions opts;
};

/// Max pooling (torch.nn.MaxPool1d) over [N, C, L] or [C, L] -> [N, C, L_out], L_out =
/// floor_or_ceil((L + 2 padding - dilation (k - 1) - 1) / stride) + 1; stride defaults to
/// kernel_size. return_indices: the call returns (values, int64 indices into L) and must
/// be made with a list, module(std::vector<Tensor>{x}) (module(x) raises ValueError), as
/// PyTorch returns a tuple. Dtypes: float32, float64, bfloat16. ValueError at construction
/// for a non-positive kernel, stride or dilation, or padding above half the kernel;
/// ShapeError for inputs that are not 2-D or 3-D.
class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                     int64_t dilation = 1, bool ceil_mode = false, bool return_indices = false);
  Tensor forward(const Tensor& x) override;
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;
  std::string extra_repr() const override;
  int64_t kernel_size, stride, padding, dilation;
  bool ceil_mode, return_indices;

 private:
  std::tuple<Tensor, Tensor> pool(const Tensor& x) const;
};

/// Max pooling (torch.nn.MaxPool2d) over [N, C, H, W] or [C, H, W] (stride defaults to
/// kernel_size; see tandem::max_pool2d for sizes, dtypes and errors). return_indices: the
/// call returns (values, int64 indices flattened over each H x W plane, as PyTorch's) and
/// must be made with a list, module(std::vector<Tensor>{x}); module(x) raises ValueError.
class MaxPool2d : public Module {
 public:
  MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
            std::vector<int64_t> dilation = {1}, bool ceil_mode = false, bool return_indices = false);
  Tensor forward(const Tensor& x) override;
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode, return_indices;
};

/// Partial inverse of MaxPool2d (torch.nn.MaxUnpool2d): puts each value of input
/// [N, C, H, W] (or [C, H, W]) at its index (int64, input's shape, flattened over each
/// output plane, as MaxPool2d's return_indices gives) of a zero output [N, C, OH, OW],
/// OH = (H - 1) stride - 2 padding + kernel (likewise OW), or the given output_size.
/// Two inputs: call it with a list, module(std::vector<Tensor>{input, indices}) (module(x)
/// raises NotImplementedError), or unpool(input, indices, output_size). Differentiable in
/// input (gradient: the output gradient gathered at the indices, as PyTorch). Stride
/// defaults to kernel_size. ValueError at construction for a non-positive kernel or
/// stride or a negative padding; forward: ShapeError for a rank other than 3 / 4 or
/// indices of another shape, TypeError for non-int64 indices, ValueError for an
/// output_size outside (default - stride, default + stride), IndexError for an index
/// outside the output plane (from scatter).
class MaxUnpool2d : public Module {
 public:
  explicit MaxUnpool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                       std::vector<int64_t> padding = {0});
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;
  /// output_size: [OH, OW] or with leading dims (only the last two are used), as PyTorch.
  Tensor unpool(const Tensor& input, const Tensor& indices,
                const std::optional<std::vector<int64_t>>& output_size = std::nullopt) const;
  std::vector<int64_t> kernel_size, stride, padding;
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

/// Batch normalisation over dim 1 (torch.nn.BatchNorm1d: [N, C] or [N, C, L]; BatchNorm2d:
/// [N, C, H, W]; float32 / float64 / bfloat16 as tandem::batch_norm). Training: batch
/// statistics; with track_running_stats, num_batches_tracked += 1 and the running stats
/// move towards the batch's (mean, unbiased variance) by a factor: `momentum`, or with
/// momentum = std::nullopt (PyTorch's momentum=None) 1 / num_batches_tracked, the
/// cumulative moving average of all batches seen. Eval: running stats (batch stats
/// without track_running_stats). Buffers running_mean (zeros), running_var (ones),
/// num_batches_tracked (int64 0); affine weight (ones) and bias (zeros). ValueError at
/// construction for num_features <= 0; ShapeError for an input of another rank; the op's
/// errors otherwise (channel mismatch, one value per channel in training).
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine, bool track_running_stats,
            int64_t expected_dims_lo, int64_t expected_dims_hi, std::string name);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps;
  std::optional<double> momentum;  ///< nullopt: cumulative moving average
  bool affine, track_running_stats;

 private:
  int64_t lo_, hi_;
};
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats, 2, 3, "BatchNorm1d") {}
};
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
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

/// Lookup table (torch.nn.Embedding): int64/int32 indices [*] -> [*, embedding_dim];
/// weight [num_embeddings, embedding_dim] ~ N(0, 1). padding_idx (negative counts from the
/// end; stored non-negative): that row starts at zero and gets no gradient. max_norm: each
/// call first rescales the looked-up rows whose norm_type-norm exceeds max_norm to that
/// norm, in place and without gradient (nn::functional::embedding_renorm_), as PyTorch
/// does; the weight changes. scale_grad_by_freq: row gradients divided by the index's
/// count in the batch. ValueError for non-positive sizes, IndexError for padding_idx
/// outside [-num_embeddings, num_embeddings) (construction); forward: IndexError for an
/// index outside [0, num_embeddings), TypeError for non-integer indices.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            std::optional<double> max_norm = std::nullopt, double norm_type = 2.0, bool scale_grad_by_freq = false);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  Tensor weight;
  std::optional<int64_t> padding_idx;
  std::optional<double> max_norm;
  double norm_type;
  bool scale_grad_by_freq;
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
