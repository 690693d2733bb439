#include "nn_factory.h"

#include <set>
#include <stdexcept>

using nlohmann::json;

namespace tandem::nn::testing {

namespace {

// Argument reader that remembers which keys were used, so an argument the factory does
// not understand fails the test instead of being silently ignored.
class Args {
 public:
  Args(std::string type, const json& j) : type_(std::move(type)), j_(j) {}
  ~Args() noexcept(false) {
    if (std::uncaught_exceptions() > 0) return;
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!used_.count(it.key())) throw std::runtime_error(type_ + ": argument '" + it.key() + "' is not handled");
  }
  bool has(const std::string& k) const { return j_.contains(k) && !j_.at(k).is_null(); }
  int64_t i(const std::string& k, int64_t def) { return has(use(k)) ? j_.at(k).get<int64_t>() : def; }
  double d(const std::string& k, double def) { return has(use(k)) ? j_.at(k).get<double>() : def; }
  bool b(const std::string& k, bool def) { return has(use(k)) ? j_.at(k).get<bool>() : def; }
  std::string s(const std::string& k, std::string def) { return has(use(k)) ? j_.at(k).get<std::string>() : def; }
  std::vector<int64_t> ints(const std::string& k, std::vector<int64_t> def) {
    if (!has(use(k))) return def;
    const json& v = j_.at(k);
    if (v.is_number_integer()) return {v.get<int64_t>()};
    return v.get<std::vector<int64_t>>();
  }
  /// The argument is given as None (JSON null).
  bool is_none(const std::string& k) { return j_.contains(use(k)) && j_.at(k).is_null(); }
  bool is_string(const std::string& k) const { return has(k) && j_.at(k).is_string(); }
  const json& raw(const std::string& k) { return j_.at(use(k)); }

 private:
  const std::string& use(const std::string& k) {
    used_.insert(k);
    return k;
  }
  std::string type_;
  const json& j_;
  std::set<std::string> used_;
};

ConvOptions conv_options(Args& a, bool transposed) {
  ConvOptions o;
  o.stride = a.ints("stride", {1});
  if (a.is_string("padding")) o.padding_mode_same = a.s("padding", "");
  else o.padding = a.ints("padding", {0});
  o.dilation = a.ints("dilation", {1});
  o.groups = a.i("groups", 1);
  o.bias = a.b("bias", true);
  o.padding_mode = a.s("padding_mode", "zeros");
  if (transposed) o.output_padding = a.ints("output_padding", {0});
  return o;
}

}  // namespace

ModulePtr make_module(const std::string& type, const json& args) {
  Args a(type, args);
  if (type == "Linear") return std::make_shared<Linear>(a.i("in_features", 0), a.i("out_features", 0), a.b("bias", true));
  if (type == "Bilinear")
    return std::make_shared<Bilinear>(a.i("in1_features", 0), a.i("in2_features", 0), a.i("out_features", 0), a.b("bias", true));
  if (type == "Conv1d") {
    int64_t ic = a.i("in_channels", 0), oc = a.i("out_channels", 0), k = a.i("kernel_size", 0);
    return std::make_shared<Conv1d>(ic, oc, k, conv_options(a, false));
  }
  if (type == "Conv2d") {
    int64_t ic = a.i("in_channels", 0), oc = a.i("out_channels", 0);
    auto k = a.ints("kernel_size", {});
    return std::make_shared<Conv2d>(ic, oc, k, conv_options(a, false));
  }
  if (type == "ConvTranspose2d") {
    int64_t ic = a.i("in_channels", 0), oc = a.i("out_channels", 0);
    auto k = a.ints("kernel_size", {});
    return std::make_shared<ConvTranspose2d>(ic, oc, k, conv_options(a, true));
  }
  if (type == "MaxPool2d") {
    auto k = a.ints("kernel_size", {});
    auto s = a.ints("stride", {}), p = a.ints("padding", {0}), d = a.ints("dilation", {1});
    bool ceil = a.b("ceil_mode", false);
    return std::make_shared<MaxPool2d>(k, s, p, d, ceil, a.b("return_indices", false));
  }
  if (type == "MaxUnpool2d") {
    auto k = a.ints("kernel_size", {});
    return std::make_shared<MaxUnpool2d>(k, a.ints("stride", {}), a.ints("padding", {0}));
  }
  if (type == "MaxPool1d") {
    int64_t k = a.i("kernel_size", 0);
    std::optional<int64_t> s;
    if (a.has("stride")) s = a.i("stride", 0);
    int64_t p = a.i("padding", 0), d = a.i("dilation", 1);
    bool ceil = a.b("ceil_mode", false);
    return std::make_shared<MaxPool1d>(k, s, p, d, ceil, a.b("return_indices", false));
  }
  if (type == "AvgPool2d") {
    auto k = a.ints("kernel_size", {});
    auto s = a.ints("stride", {});
    auto p = a.ints("padding", {0});
    bool ceil = a.b("ceil_mode", false), cip = a.b("count_include_pad", true);
    std::optional<int64_t> div;
    if (a.has("divisor_override")) div = a.i("divisor_override", 0);
    return std::make_shared<AvgPool2d>(k, s, p, ceil, cip, div);
  }
  if (type == "AdaptiveAvgPool2d") return std::make_shared<AdaptiveAvgPool2d>(a.ints("output_size", {}));
  if (type == "BatchNorm1d" || type == "BatchNorm2d") {
    int64_t n = a.i("num_features", 0);
    double eps = a.d("eps", 1e-5);
    std::optional<double> mom = a.is_none("momentum") ? std::nullopt : std::optional<double>(a.d("momentum", 0.1));
    bool affine = a.b("affine", true), track = a.b("track_running_stats", true);
    if (type == "BatchNorm1d") return std::make_shared<BatchNorm1d>(n, eps, mom, affine, track);
    return std::make_shared<BatchNorm2d>(n, eps, mom, affine, track);
  }
  if (type == "LayerNorm") {
    auto shape = a.ints("normalized_shape", {});
    return std::make_shared<LayerNorm>(shape, a.d("eps", 1e-5), a.b("elementwise_affine", true));
  }
  if (type == "GroupNorm") {
    int64_t g = a.i("num_groups", 0), c = a.i("num_channels", 0);
    return std::make_shared<GroupNorm>(g, c, a.d("eps", 1e-5), a.b("affine", true));
  }
  if (type == "Dropout") return std::make_shared<Dropout>(a.d("p", 0.5));
  if (type == "Embedding") {
    int64_t n = a.i("num_embeddings", 0), d = a.i("embedding_dim", 0);
    std::optional<int64_t> pad;
    if (a.has("padding_idx")) pad = a.i("padding_idx", 0);
    std::optional<double> max_norm;
    if (a.has("max_norm")) max_norm = a.d("max_norm", 0);
    double norm_type = a.d("norm_type", 2.0);
    return std::make_shared<Embedding>(n, d, pad, max_norm, norm_type, a.b("scale_grad_by_freq", false));
  }
  if (type == "ReLU") return std::make_shared<ReLU>();
  if (type == "LeakyReLU") return std::make_shared<LeakyReLU>(a.d("negative_slope", 0.01));
  if (type == "GELU") return std::make_shared<GELU>(a.s("approximate", "none"));
  if (type == "SiLU") return std::make_shared<SiLU>();
  if (type == "Tanh") return std::make_shared<Tanh>();
  if (type == "Sigmoid") return std::make_shared<Sigmoid>();
  if (type == "Softmax") return std::make_shared<Softmax>(a.i("dim", 0));
  if (type == "LogSoftmax") return std::make_shared<LogSoftmax>(a.i("dim", 0));
  if (type == "Flatten") return std::make_shared<Flatten>(a.i("start_dim", 1), a.i("end_dim", -1));
  if (type == "Unflatten") {
    int64_t dim = a.i("dim", 0);
    return std::make_shared<Unflatten>(dim, a.ints("unflattened_size", {}));
  }
  if (type == "Identity") return std::make_shared<Identity>();
  if (type == "Sequential" || type == "ModuleList" || type == "ModuleDict") {
    const json& kids = a.raw("children");
    if (type == "Sequential") {
      auto s = std::make_shared<Sequential>();
      for (const auto& c : kids) s->push_back(make_module(c.at("type"), c.at("args")));
      return s;
    }
    if (type == "ModuleList") {
      auto l = std::make_shared<ModuleList>();
      for (const auto& c : kids) l->push_back(make_module(c.at("type"), c.at("args")));
      return l;
    }
    auto d = std::make_shared<ModuleDict>();
    for (const auto& c : kids) d->insert(c.at("key"), make_module(c.at("type"), c.at("args")));
    return d;
  }
  throw std::runtime_error("make_module: unknown layer type " + type);
}

std::vector<Tensor> run_module(const std::string& type, Module& m, const std::vector<Tensor>& inputs) {
  if (type == "ModuleList" || type == "ModuleDict") {
    Tensor y = inputs.at(0);
    for (const auto& c : m.children()) y = (*c)(y);
    return {y};
  }
  return m(inputs);
}

}  // namespace tandem::nn::testing
