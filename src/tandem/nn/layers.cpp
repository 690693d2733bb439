#include "tandem/nn/layers.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/nn/functional.h"
#include "tandem/nn/init.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/conv.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/linalg.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/shape.h"
#include "tandem/ops/unary.h"

namespace tandem::nn {

namespace {
// PyTorch's reset_parameters for Linear/Conv: kaiming_uniform(a=sqrt(5)) on the weight
// (bound 1/sqrt(fan_in)) and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias.
void reset_linear_like(Tensor& w, Tensor& b) {
  init::kaiming_uniform_(w, std::sqrt(5.0));
  if (b.defined()) {
    auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(w);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(b, -bound, bound);
  }
}
void check_positive(int64_t v, const char* what, const char* layer) {
  TANDEM_CHECK(v > 0, ValueError, layer, what, " must be positive, got ", v);
}
std::vector<int64_t> expand2(std::vector<int64_t> v) {
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

// Constructor checks of a convolution's padding options (torch.nn's _ConvNd.__init__).
void check_conv_padding(const ConvOptions& o, const char* layer, bool transposed) {
  const std::string& m = o.padding_mode;
  TANDEM_CHECK(m == "zeros" || m == "reflect" || m == "replicate" || m == "circular", ValueError, layer,
               "got padding_mode '", m, "', expected 'zeros', 'reflect', 'replicate' or 'circular'");
  TANDEM_CHECK(!transposed || m == "zeros", ValueError, layer, "got padding_mode '", m,
               "', expected 'zeros' (the only padding mode of transposed convolutions)");
  const std::string& s = o.padding_mode_same;
  TANDEM_CHECK(s.empty() || s == "same" || s == "valid", ValueError, layer, "got padding '", s,
               "', expected 'same' or 'valid'");
  if (s == "same")
    for (int64_t st : o.stride)
      TANDEM_CHECK(st == 1, ValueError, layer, "got padding 'same' with stride ", IntArrayRef(o.stride),
                   ", expected stride 1 (padding='same' is not supported for strided convolutions)");
}

// The pad list of F.pad for a convolution's padding (PyTorch's
// _reversed_padding_repeated_twice): {left_last, right_last, left_prev, ...}. "same"
// splits each dim's total d(k-1) with the extra element on the right; "valid" is zeros.
std::vector<int64_t> conv_pads(const ConvOptions& o, const Tensor& weight, size_t nd) {
  auto pick = [nd](const std::vector<int64_t>& v, size_t i) { return v.size() == 1 ? v[0] : v.at(i); };
  std::vector<int64_t> pads;
  for (size_t j = 0; j < nd; ++j) {
    const size_t i = nd - 1 - j;  // spatial dim, last first
    int64_t l = 0, r = 0;
    if (o.padding_mode_same == "same") {
      const int64_t k = weight.size(weight.dim() - static_cast<int64_t>(nd) + static_cast<int64_t>(i));
      const int64_t total = pick(o.dilation, i) * (k - 1);
      l = total / 2;
      r = total - l;
    } else if (o.padding_mode_same.empty()) {
      l = r = pick(o.padding, i);
    }
    pads.push_back(l);
    pads.push_back(r);
  }
  return pads;
}
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  check_positive(in, "in_features", "Linear");
  check_positive(out, "out_features", "Linear");
  weight = empty({out, in});
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = empty({out});
    register_parameter("bias", &bias);
  }
  reset_linear_like(weight, bias);
}
Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }
std::string Linear::extra_repr() const {
  return str_cat("in_features=", in_features, ", out_features=", out_features, ", bias=", bias.defined() ? "True" : "False");
}

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias) : Module("Bilinear") {
  check_positive(in1, "in1_features", "Bilinear");
  check_positive(in2, "in2_features", "Bilinear");
  check_positive(out, "out_features", "Bilinear");
  weight = empty({out, in1, in2});
  register_parameter("weight", &weight);
  double bound = 1.0 / std::sqrt(static_cast<double>(in1));
  init::uniform_(weight, -bound, bound);
  if (with_bias) {
    bias = empty({out});
    register_parameter("bias", &bias);
    init::uniform_(bias, -bound, bound);
  }
}
Tensor Bilinear::forward2(const Tensor& x1, const Tensor& x2) { return functional::bilinear(x1, x2, weight, bias); }
std::vector<Tensor> Bilinear::forward_list(const std::vector<Tensor>& in) {
  TANDEM_CHECK(in.size() == 2, ValueError, "Bilinear", "takes two inputs, got ", in.size());
  return {forward2(in[0], in[1])};
}

Conv1d::Conv1d(int64_t in_c, int64_t out_c, int64_t k, ConvOptions o) : Module("Conv1d"), opts(std::move(o)) {
  check_positive(opts.groups, "groups", "Conv1d");
  check_conv_padding(opts, "Conv1d", false);
  TANDEM_CHECK(in_c % opts.groups == 0 && out_c % opts.groups == 0, ValueError, "Conv1d", "in_channels (", in_c,
               ") and out_channels (", out_c, ") must be divisible by groups (", opts.groups, ")");
  weight = empty({out_c, in_c / opts.groups, k});
  register_parameter("weight", &weight);
  if (opts.bias) {
    bias = empty({out_c});
    register_parameter("bias", &bias);
  }
  reset_linear_like(weight, bias);
}
Tensor Conv1d::forward(const Tensor& x) {
  if (opts.padding_mode != "zeros")
    return conv1d(pad(x, conv_pads(opts, weight, 1), opts.padding_mode), weight, bias, opts.stride, {0}, opts.dilation,
                  opts.groups);
  if (!opts.padding_mode_same.empty())
    return conv1d(x, weight, bias, opts.stride, opts.padding_mode_same == "same" ? PaddingMode::Same : PaddingMode::Valid,
                  opts.dilation, opts.groups);
  return conv1d(x, weight, bias, opts.stride, opts.padding, opts.dilation, opts.groups);
}

Conv2d::Conv2d(int64_t in_c, int64_t out_c, std::vector<int64_t> k, ConvOptions o)
    : Module("Conv2d"), in_channels(in_c), out_channels(out_c), kernel_size(expand2(std::move(k))), opts(std::move(o)) {
  check_positive(opts.groups, "groups", "Conv2d");
  check_conv_padding(opts, "Conv2d", false);
  TANDEM_CHECK(in_c % opts.groups == 0 && out_c % opts.groups == 0, ValueError, "Conv2d", "in_channels (", in_c,
               ") and out_channels (", out_c, ") must be divisible by groups (", opts.groups, ")");
  weight = empty({out_c, in_c / opts.groups, kernel_size[0], kernel_size[1]});
  register_parameter("weight", &weight);
  if (opts.bias) {
    bias = empty({out_c});
    register_parameter("bias", &bias);
  }
  reset_linear_like(weight, bias);
}
Tensor Conv2d::forward(const Tensor& x) {
  if (opts.padding_mode != "zeros")
    return conv2d(pad(x, conv_pads(opts, weight, 2), opts.padding_mode), weight, bias, opts.stride, {0}, opts.dilation,
                  opts.groups);
  if (!opts.padding_mode_same.empty())
    return conv2d(x, weight, bias, opts.stride, opts.padding_mode_same == "same" ? PaddingMode::Same : PaddingMode::Valid,
                  opts.dilation, opts.groups);
  return conv2d(x, weight, bias, opts.stride, opts.padding, opts.dilation, opts.groups);
}
std::string Conv2d::extra_repr() const {
  return str_cat(in_channels, ", ", out_channels, ", kernel_size=", IntArrayRef(kernel_size), ", stride=", IntArrayRef(opts.stride),
                 ", padding=", opts.padding_mode_same.empty() ? str_cat(IntArrayRef(opts.padding)) : opts.padding_mode_same,
                 opts.padding_mode == "zeros" ? "" : ", padding_mode=" + opts.padding_mode);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_c, int64_t out_c, std::vector<int64_t> k, ConvOptions o)
    : Module("ConvTranspose2d"), opts(std::move(o)) {
  k = expand2(std::move(k));
  check_positive(opts.groups, "groups", "ConvTranspose2d");
  check_conv_padding(opts, "ConvTranspose2d", true);
  TANDEM_CHECK(in_c % opts.groups == 0 && out_c % opts.groups == 0, ValueError, "ConvTranspose2d", "in_channels (", in_c,
               ") and out_channels (", out_c, ") must be divisible by groups (", opts.groups, ")");
  weight = empty({in_c, out_c / opts.groups, k[0], k[1]});
  register_parameter("weight", &weight);
  if (opts.bias) {
    bias = empty({out_c});
    register_parameter("bias", &bias);
  }
  // PyTorch computes fan_in from weight.size(1) * kernel for transposed convs too.
  reset_linear_like(weight, bias);
}
Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight, bias, opts.stride, opts.padding, opts.output_padding, opts.groups, opts.dilation);
}

namespace {
// module(x) on a pool built with return_indices: its result is two tensors.
[[noreturn]] void throw_two_outputs(const std::string& layer) {
  throw ValueError(str_cat("[", layer, "] got a one-tensor call with return_indices=true, expected a list call "
                           "(module(std::vector<Tensor>{x}) returns {values, indices})"));
}
std::vector<Tensor> one_input(const std::vector<Tensor>& in, const std::string& layer) {
  TANDEM_CHECK(in.size() == 1, ValueError, layer, "forward takes one tensor, got ", in.size());
  return in;
}
}  // namespace

MaxPool1d::MaxPool1d(int64_t k, std::optional<int64_t> s, int64_t p, int64_t d, bool c, bool ri)
    : Module("MaxPool1d"), kernel_size(k), stride(s.value_or(k)), padding(p), dilation(d), ceil_mode(c), return_indices(ri) {
  check_positive(kernel_size, "kernel_size", "MaxPool1d");
  check_positive(stride, "stride", "MaxPool1d");
  check_positive(dilation, "dilation", "MaxPool1d");
  TANDEM_CHECK(padding >= 0 && padding <= kernel_size / 2, ValueError, "MaxPool1d", "got padding ", padding,
               ", expected between 0 and half the kernel size (", kernel_size, ")");
}
std::tuple<Tensor, Tensor> MaxPool1d::pool(const Tensor& x) const {
  TANDEM_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "MaxPool1d", "expected a 2D or 3D input, got ", x.dim(),
               "D input of shape ", x.sizes());
  // PyTorch's max_pool1d is max_pool2d over a height of 1: the indices into that plane are
  // the indices into L.
  auto [v, i] = max_pool2d_with_indices(x.unsqueeze(-2), {1, kernel_size}, {1, stride}, {0, padding}, {1, dilation},
                                        ceil_mode);
  return {v.squeeze(-2), i.squeeze(-2)};
}
Tensor MaxPool1d::forward(const Tensor& x) {
  if (return_indices) throw_two_outputs(name());
  return std::get<0>(pool(x));
}
std::vector<Tensor> MaxPool1d::forward_list(const std::vector<Tensor>& in) {
  if (!return_indices) return Module::forward_list(in);
  auto [v, i] = pool(one_input(in, name())[0]);
  return {v, i};
}
std::string MaxPool1d::extra_repr() const {
  return str_cat("kernel_size=", kernel_size, ", stride=", stride, ", padding=", padding, ", dilation=", dilation,
                 ", ceil_mode=", ceil_mode ? "True" : "False");
}

MaxPool2d::MaxPool2d(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> d, bool c,
                     bool ri)
    : Module("MaxPool2d"), kernel_size(std::move(k)), stride(std::move(s)), padding(std::move(p)), dilation(std::move(d)),
      ceil_mode(c), return_indices(ri) {}
Tensor MaxPool2d::forward(const Tensor& x) {
  if (return_indices) throw_two_outputs(name());
  return max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
}
std::vector<Tensor> MaxPool2d::forward_list(const std::vector<Tensor>& in) {
  if (!return_indices) return Module::forward_list(in);
  auto [v, i] = max_pool2d_with_indices(one_input(in, name())[0], kernel_size, stride, padding, dilation, ceil_mode);
  return {v, i};
}

MaxUnpool2d::MaxUnpool2d(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p)
    : Module("MaxUnpool2d"), kernel_size(expand2(std::move(k))), stride(expand2(s.empty() ? kernel_size : std::move(s))),
      padding(expand2(std::move(p))) {
  TANDEM_CHECK(kernel_size.size() == 2 && stride.size() == 2 && padding.size() == 2, ValueError, "MaxUnpool2d",
               "got kernel_size ", IntArrayRef(kernel_size), ", stride ", IntArrayRef(stride), ", padding ",
               IntArrayRef(padding), ", expected one value or two each");
  for (int d = 0; d < 2; ++d) {
    check_positive(kernel_size[d], "kernel_size", "MaxUnpool2d");
    check_positive(stride[d], "stride", "MaxUnpool2d");
    TANDEM_CHECK(padding[d] >= 0, ValueError, "MaxUnpool2d", "got padding ", IntArrayRef(padding), ", expected >= 0");
  }
}
Tensor MaxUnpool2d::unpool(const Tensor& x, const Tensor& indices, const std::optional<std::vector<int64_t>>& output_size) const {
  TANDEM_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, "MaxUnpool2d", "expected a 3D or 4D input, got ", x.dim(),
               "D input of shape ", x.sizes());
  TANDEM_CHECK(indices.dtype() == kInt64, TypeError, "MaxUnpool2d", "got indices of dtype ", dtype_name(indices.dtype()),
               ", expected int64");
  TANDEM_CHECK(indices.sizes().equals(x.sizes()), ShapeError, "MaxUnpool2d", "got indices of shape ", indices.sizes(),
               ", expected the input's shape ", x.sizes());
  const int64_t h = x.size(-2), w = x.size(-1);
  int64_t out[2] = {(h - 1) * stride[0] - 2 * padding[0] + kernel_size[0],
                    (w - 1) * stride[1] - 2 * padding[1] + kernel_size[1]};
  if (output_size) {
    const auto& os = *output_size;
    TANDEM_CHECK(os.size() >= 2, ValueError, "MaxUnpool2d", "got output_size ", IntArrayRef(os),
                 ", expected at least 2 values (the last two are used)");
    for (int d = 0; d < 2; ++d) {
      const int64_t want = os[os.size() - 2 + static_cast<size_t>(d)];
      TANDEM_CHECK(want > out[d] - stride[d] && want < out[d] + stride[d], ValueError, "MaxUnpool2d", "got output_size ",
                   IntArrayRef(os), ", expected sizes between ", out[0] - stride[0] + 1, "x", out[1] - stride[1] + 1,
                   " and ", out[0] + stride[0] - 1, "x", out[1] + stride[1] - 1);
      out[d] = want;
    }
  }
  TANDEM_CHECK(out[0] > 0 && out[1] > 0, ShapeError, "MaxUnpool2d", "got an empty output size ", out[0], "x", out[1],
               " for input of shape ", x.sizes());
  // One row per (n, c) plane: scatter the values to their flat positions in a zero plane.
  const int64_t planes = x.numel() / std::max<int64_t>(h * w, 1);
  Tensor flat = zeros({planes, out[0] * out[1]}, x.dtype());
  Tensor y = scatter(flat, 1, indices.reshape({planes, h * w}), x.reshape({planes, h * w}));
  DimVector shape = x.sizes().vec();
  shape[shape.size() - 2] = out[0];
  shape[shape.size() - 1] = out[1];
  return y.reshape(shape);
}
std::vector<Tensor> MaxUnpool2d::forward_list(const std::vector<Tensor>& in) {
  TANDEM_CHECK(in.size() == 2, ValueError, "MaxUnpool2d", "takes two inputs (input, indices), got ", in.size());
  return {unpool(in[0], in[1])};
}

AvgPool2d::AvgPool2d(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, bool c, bool cip,
                     std::optional<int64_t> dov)
    : Module("AvgPool2d"), kernel_size(std::move(k)), stride(std::move(s)), padding(std::move(p)), ceil_mode(c),
      count_include_pad(cip), divisor_override(dov) {}
Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::vector<int64_t> o) : Module("AdaptiveAvgPool2d"), output_size(expand2(std::move(o))) {}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, output_size); }

BatchNorm::BatchNorm(int64_t n, double e, std::optional<double> m, bool a, bool t, int64_t lo, int64_t hi, std::string name)
    : Module(std::move(name)), num_features(n), eps(e), momentum(m), affine(a), track_running_stats(t), lo_(lo), hi_(hi) {
  check_positive(n, "num_features", this->name().c_str());
  if (affine) {
    weight = ones({n});
    register_parameter("weight", &weight);
    bias = zeros({n});
    register_parameter("bias", &bias);
  }
  if (track_running_stats) {
    running_mean = zeros({n});
    register_buffer("running_mean", &running_mean);
    running_var = ones({n});
    register_buffer("running_var", &running_var);
    num_batches_tracked = zeros({}, kInt64);
    register_buffer("num_batches_tracked", &num_batches_tracked);
  }
}
Tensor BatchNorm::forward(const Tensor& x) {
  TANDEM_CHECK(x.dim() >= lo_ && x.dim() <= hi_, ShapeError, name(), "expected ", lo_ == hi_ ? str_cat(lo_, "D") : str_cat(lo_, "D or ", hi_, "D"),
               " input, got ", x.dim(), "D input of shape ", x.sizes());
  bool use_batch_stats = is_training() || !track_running_stats;
  const bool update = is_training() && track_running_stats;
  if (update) {
    NoGradGuard ng;
    num_batches_tracked.add_(1);
  }
  if (update && !momentum) {
    // Cumulative moving average. batch_norm with momentum 1 writes the batch's mean and
    // unbiased variance into two scratch tensors (0 * 0 + 1 * stat: exact); the factor is
    // read from the buffer with tensor ops, so a compiled program reads the buffer's value
    // at each call rather than baking the capture's count in.
    Tensor batch_mean = zeros_like(running_mean), batch_var = zeros_like(running_var);
    Tensor y = batch_norm(x, batch_mean, batch_var, weight, bias, true, 1.0, eps);
    NoGradGuard ng;
    Tensor f = reciprocal(num_batches_tracked.to(running_mean.dtype()));
    Tensor keep = 1.0 - f;
    running_mean.copy_(batch_mean * f + running_mean * keep);
    running_var.copy_(batch_var * f + running_var * keep);
    return y;
  }
  return batch_norm(x, (is_training() && !track_running_stats) ? Tensor() : running_mean,
                    (is_training() && !track_running_stats) ? Tensor() : running_var, weight, bias, use_batch_stats,
                    momentum.value_or(0.0), eps);
}
std::string BatchNorm::extra_repr() const {
  return str_cat(num_features, ", eps=", eps, ", momentum=", momentum ? str_cat(*momentum) : std::string("None"),
                 ", affine=", affine ? "True" : "False", ", track_running_stats=", track_running_stats ? "True" : "False");
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double e, bool affine) : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(e) {
  if (affine) {
    weight = ones(normalized_shape);
    register_parameter("weight", &weight);
    bias = zeros(normalized_shape);
    register_parameter("bias", &bias);
  }
}
Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, normalized_shape, weight, bias, eps); }

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double e, bool affine) : Module("GroupNorm"), num_groups(groups), eps(e) {
  check_positive(groups, "num_groups", "GroupNorm");
  TANDEM_CHECK(channels % groups == 0, ValueError, "GroupNorm", "num_channels (", channels, ") must be divisible by num_groups (", groups, ")");
  if (affine) {
    weight = ones({channels});
    register_parameter("weight", &weight);
    bias = zeros({channels});
    register_parameter("bias", &bias);
  }
}
Tensor GroupNorm::forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  TANDEM_CHECK(p >= 0 && p <= 1, ValueError, "Dropout", "dropout probability has to be between 0 and 1, but got ", p);
}
Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad, std::optional<double> mn, double nt, bool sgf)
    : Module("Embedding"), padding_idx(pad), max_norm(mn), norm_type(nt), scale_grad_by_freq(sgf) {
  check_positive(num, "num_embeddings", "Embedding");
  check_positive(dim, "embedding_dim", "Embedding");
  if (padding_idx) {
    TANDEM_CHECK(*padding_idx >= -num && *padding_idx < num, IndexError, "Embedding", "padding_idx ", *padding_idx,
                 " must be within num_embeddings (", num, ")");
    if (*padding_idx < 0) *padding_idx += num;
  }
  weight = empty({num, dim});
  register_parameter("weight", &weight);
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard ng;
    weight.select(0, *padding_idx).zero_();
  }
}
Tensor Embedding::forward(const Tensor& idx) {
  if (max_norm) functional::embedding_renorm_(weight, idx, *max_norm, norm_type);
  return embedding(weight, idx, padding_idx, scale_grad_by_freq);
}
std::string Embedding::extra_repr() const {
  std::string s = str_cat(weight.size(0), ", ", weight.size(1));
  if (padding_idx) s += str_cat(", padding_idx=", *padding_idx);
  if (max_norm) s += str_cat(", max_norm=", *max_norm);
  if (norm_type != 2.0) s += str_cat(", norm_type=", norm_type);
  if (scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  return s;
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope); }
Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim); }
Tensor LogSoftmax::forward(const Tensor& x) { return log_softmax(x, dim); }
Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
Tensor Unflatten::forward(const Tensor& x) { return x.unflatten(dim, sizes); }

Sequential::Sequential(std::vector<ModulePtr> mods) : Module("Sequential") {
  for (auto& m : mods) push_back(std::move(m));
}
void Sequential::push_back(ModulePtr m) { add_child(std::to_string(children().size()), std::move(m)); }
Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : children()) y = (*m)(y);
  return y;
}

namespace {
ModulePtr child_at(const Module& m, size_t i) {
  auto kids = m.children();
  TANDEM_CHECK(i < kids.size(), IndexError, m.name(), "index ", i, " is out of range for ", kids.size(), " modules");
  return kids[i];
}
}  // namespace
ModulePtr Sequential::operator[](size_t i) const { return child_at(*this, i); }

void ModuleList::push_back(ModulePtr m) { add_child(std::to_string(children().size()), std::move(m)); }
ModulePtr ModuleList::operator[](size_t i) const { return child_at(*this, i); }
void ModuleDict::insert(const std::string& key, ModulePtr m) { add_child(key, std::move(m)); }
ModulePtr ModuleDict::operator[](const std::string& key) const {
  for (auto& [n, m] : named_children())
    if (n == key) return m;
  throw IndexError(str_cat("[ModuleDict] no module named '", key, "'"));
}
bool ModuleDict::contains(const std::string& key) const {
  for (auto& [n, m] : named_children())
    if (n == key) return true;
  return false;
}

}  // namespace tandem::nn
