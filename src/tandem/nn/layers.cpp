#include "tandem/nn/layers.h"

#include <cmath>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/nn/functional.h"
#include "tandem/nn/init.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/conv.h"
#include "tandem/ops/creation.h"
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
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  check_positive(in, "in_features", "Linear");
  check_positive(out, "out_features", "Linear");
  weight = register_parameter("weight", empty({out, in}));
  if (with_bias) bias = register_parameter("bias", empty({out}));
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
  weight = register_parameter("weight", empty({out, in1, in2}));
  double bound = 1.0 / std::sqrt(static_cast<double>(in1));
  init::uniform_(weight, -bound, bound);
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
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
  TANDEM_CHECK(in_c % opts.groups == 0 && out_c % opts.groups == 0, ValueError, "Conv1d", "in_channels (", in_c,
               ") and out_channels (", out_c, ") must be divisible by groups (", opts.groups, ")");
  weight = register_parameter("weight", empty({out_c, in_c / opts.groups, k}));
  if (opts.bias) bias = register_parameter("bias", empty({out_c}));
  reset_linear_like(weight, bias);
}
Tensor Conv1d::forward(const Tensor& x) {
  if (!opts.padding_mode_same.empty())
    return conv1d(x, weight, bias, opts.stride, opts.padding_mode_same == "same" ? PaddingMode::Same : PaddingMode::Valid,
                  opts.dilation, opts.groups);
  return conv1d(x, weight, bias, opts.stride, opts.padding, opts.dilation, opts.groups);
}

Conv2d::Conv2d(int64_t in_c, int64_t out_c, std::vector<int64_t> k, ConvOptions o)
    : Module("Conv2d"), in_channels(in_c), out_channels(out_c), kernel_size(expand2(std::move(k))), opts(std::move(o)) {
  check_positive(opts.groups, "groups", "Conv2d");
  TANDEM_CHECK(in_c % opts.groups == 0 && out_c % opts.groups == 0, ValueError, "Conv2d", "in_channels (", in_c,
               ") and out_channels (", out_c, ") must be divisible by groups (", opts.groups, ")");
  weight = register_parameter("weight", empty({out_c, in_c / opts.groups, kernel_size[0], kernel_size[1]}));
  if (opts.bias) bias = register_parameter("bias", empty({out_c}));
  reset_linear_like(weight, bias);
}
Tensor Conv2d::forward(const Tensor& x) {
  if (!opts.padding_mode_same.empty())
    return conv2d(x, weight, bias, opts.stride, opts.padding_mode_same == "same" ? PaddingMode::Same : PaddingMode::Valid,
                  opts.dilation, opts.groups);
  return conv2d(x, weight, bias, opts.stride, opts.padding, opts.dilation, opts.groups);
}
std::string Conv2d::extra_repr() const {
  return str_cat(in_channels, ", ", out_channels, ", kernel_size=", IntArrayRef(kernel_size), ", stride=", IntArrayRef(opts.stride),
                 ", padding=", IntArrayRef(opts.padding));
}

ConvTranspose2d::ConvTranspose2d(int64_t in_c, int64_t out_c, std::vector<int64_t> k, ConvOptions o)
    : Module("ConvTranspose2d"), opts(std::move(o)) {
  k = expand2(std::move(k));
  check_positive(opts.groups, "groups", "ConvTranspose2d");
  TANDEM_CHECK(in_c % opts.groups == 0 && out_c % opts.groups == 0, ValueError, "ConvTranspose2d", "in_channels (", in_c,
               ") and out_channels (", out_c, ") must be divisible by groups (", opts.groups, ")");
  weight = register_parameter("weight", empty({in_c, out_c / opts.groups, k[0], k[1]}));
  if (opts.bias) bias = register_parameter("bias", empty({out_c}));
  // PyTorch computes fan_in from weight.size(1) * kernel for transposed convs too.
  reset_linear_like(weight, bias);
}
Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight, bias, opts.stride, opts.padding, opts.output_padding, opts.groups, opts.dilation);
}

MaxPool2d::MaxPool2d(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> d, bool c)
    : Module("MaxPool2d"), kernel_size(std::move(k)), stride(std::move(s)), padding(std::move(p)), dilation(std::move(d)), ceil_mode(c) {}
Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode); }

AvgPool2d::AvgPool2d(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, bool c, bool cip,
                     std::optional<int64_t> dov)
    : Module("AvgPool2d"), kernel_size(std::move(k)), stride(std::move(s)), padding(std::move(p)), ceil_mode(c),
      count_include_pad(cip), divisor_override(dov) {}
Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::vector<int64_t> o) : Module("AdaptiveAvgPool2d"), output_size(expand2(std::move(o))) {}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, output_size); }

BatchNorm::BatchNorm(int64_t n, double e, double m, bool a, bool t, int64_t lo, int64_t hi, std::string name)
    : Module(std::move(name)), num_features(n), eps(e), momentum(m), affine(a), track_running_stats(t), lo_(lo), hi_(hi) {
  check_positive(n, "num_features", this->name().c_str());
  if (affine) {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({n}));
    running_var = register_buffer("running_var", ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}
Tensor BatchNorm::forward(const Tensor& x) {
  TANDEM_CHECK(x.dim() >= lo_ && x.dim() <= hi_, ShapeError, name(), "expected ", lo_ == hi_ ? str_cat(lo_, "D") : str_cat(lo_, "D or ", hi_, "D"),
               " input, got ", x.dim(), "D input of shape ", x.sizes());
  bool use_batch_stats = is_training() || !track_running_stats;
  if (is_training() && track_running_stats) {
    NoGradGuard ng;
    num_batches_tracked.add_(1);
  }
  return batch_norm(x, (is_training() && !track_running_stats) ? Tensor() : running_mean,
                    (is_training() && !track_running_stats) ? Tensor() : running_var, weight, bias, use_batch_stats, momentum, eps);
}
std::string BatchNorm::extra_repr() const {
  return str_cat(num_features, ", eps=", eps, ", momentum=", momentum, ", affine=", affine ? "True" : "False",
                 ", track_running_stats=", track_running_stats ? "True" : "False");
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double e, bool affine) : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(e) {
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    bias = register_parameter("bias", zeros(normalized_shape));
  }
}
Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, normalized_shape, weight, bias, eps); }

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double e, bool affine) : Module("GroupNorm"), num_groups(groups), eps(e) {
  check_positive(groups, "num_groups", "GroupNorm");
  TANDEM_CHECK(channels % groups == 0, ValueError, "GroupNorm", "num_channels (", channels, ") must be divisible by num_groups (", groups, ")");
  if (affine) {
    weight = register_parameter("weight", ones({channels}));
    bias = register_parameter("bias", zeros({channels}));
  }
}
Tensor GroupNorm::forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  TANDEM_CHECK(p >= 0 && p <= 1, ValueError, "Dropout", "dropout probability has to be between 0 and 1, but got ", p);
}
Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad) : Module("Embedding"), padding_idx(pad) {
  check_positive(num, "num_embeddings", "Embedding");
  check_positive(dim, "embedding_dim", "Embedding");
  if (padding_idx) {
    TANDEM_CHECK(*padding_idx >= -num && *padding_idx < num, IndexError, "Embedding", "padding_idx ", *padding_idx,
                 " must be within num_embeddings (", num, ")");
    if (*padding_idx < 0) *padding_idx += num;
  }
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard ng;
    weight.select(0, *padding_idx).zero_();
  }
}
Tensor Embedding::forward(const Tensor& idx) { return embedding(weight, idx, padding_idx); }

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
