// The ONNX op table: one converter per ONNX op type (ONNX's names), each handling the
// opset versions whose semantics differ (attributes that became inputs, changed
// defaults). Converters compute with tandem's public op API only, so every computation
// goes through the dispatcher. Semantics follow onnx/docs/Operators.md (ONNX 1.12,
// opsets 1-17); an op, version or attribute value with no mapping raises
// NotImplementedError naming the op and the opset (Ctx::unsupported).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "tandem/onnx/graph.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/conv.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/linalg.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/shape.h"
#include "tandem/ops/unary.h"

namespace tandem::onnx {
namespace {

using Outs = std::vector<Tensor>;

int64_t norm_axis(const Ctx& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    c.invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> sizes_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

Tensor as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

bool is_int(DType d) { return !is_floating_point(d) && d != DType::Bool; }

// Elementwise binary op with ONNX typing: the result keeps the first input's dtype.
template <typename F>
Converter binary_same(F f) {
  return [f](Ctx& c) -> Outs {
    const Tensor& a = c.in(0);
    return {as_dtype(f(a, c.in(1)), a.dtype())};
  };
}
template <typename F>
Converter compare(F f) {
  return [f](Ctx& c) -> Outs { return {f(c.in(0), c.in(1))}; };
}
template <typename F>
Converter unary(F f) {
  return [f](Ctx& c) -> Outs { return {f(c.in(0))}; };
}
// Variadic elementwise op (Sum, Max, Min, Mean): folds left over the inputs.
template <typename F>
Converter variadic(F f) {
  return [f](Ctx& c) -> Outs {
    Tensor acc = c.in(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) acc = f(acc, c.in(i));
    return {acc};
  };
}

// Axes of a Reduce*/Squeeze/Unsqueeze node: the `axes` attribute (older opsets) or the
// second input (ReduceSum 13+, Squeeze/Unsqueeze 13+, the other reductions 18+).
std::optional<std::vector<int64_t>> axes_of(const Ctx& c, size_t input) {
  if (c.has(input)) return c.ints(input);
  if (c.has_attr("axes")) return c.attr_ints("axes");
  return std::nullopt;
}

// A reduction: `f(x, dims, keepdim)` over the normalised axes (all when none given,
// or identity with noop_with_empty_axes).
template <typename F>
Converter reduce(F f, bool keep_input_dtype = true) {
  return [f, keep_input_dtype](Ctx& c) -> Outs {
    const Tensor& x = c.in(0);
    const int64_t rank = x.dim();
    auto axes = axes_of(c, 1);
    const bool keep = c.attr_i("keepdims", 1) != 0;
    std::vector<int64_t> dims;
    if (!axes || axes->empty()) {
      if (c.attr_i("noop_with_empty_axes", 0)) return {x};
      for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    } else {
      for (int64_t a : *axes) dims.push_back(norm_axis(c, a, rank));
      std::sort(dims.begin(), dims.end());
      dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    }
    Tensor y;
    if (dims.empty()) y = f(x, dims, keep);  // rank 0
    else y = f(x, dims, keep);
    return {keep_input_dtype ? as_dtype(y, x.dtype()) : y};
  };
}

// ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...] over the last k dims ->
// tandem/PyTorch pad order (last dim first: [last_begin, last_end, ...]).
std::vector<int64_t> torch_pads(const std::vector<int64_t>& pads, size_t k) {
  std::vector<int64_t> out;
  for (size_t i = k; i-- > 0;) {
    out.push_back(pads[i]);
    out.push_back(pads[i + k]);
  }
  return out;
}

// Spatial attributes shared by Conv and the pools: kernel, strides, dilations, pads
// (begin..., end...), resolved against auto_pad.
struct Spatial {
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool symmetric() const {
    size_t k = kernel.size();
    for (size_t i = 0; i < k; ++i)
      if (pads[i] != pads[i + k]) return false;
    return true;
  }
  std::vector<int64_t> begin_pads() const { return {pads.begin(), pads.begin() + kernel.size()}; }
};

Spatial spatial(const Ctx& c, const Tensor& x, std::vector<int64_t> kernel, bool ceil_mode = false) {
  Spatial s;
  const size_t k = kernel.size();
  s.kernel = kernel;
  s.strides = c.attr_ints("strides", std::vector<int64_t>(k, 1));
  s.dilations = c.attr_ints("dilations", std::vector<int64_t>(k, 1));
  s.pads = c.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (s.strides.size() != k || s.dilations.size() != k || s.pads.size() != 2 * k)
    c.invalid("strides/dilations/pads do not match the " + std::to_string(k) + " spatial dims");
  for (size_t i = 0; i < k; ++i)
    if (s.strides[i] <= 0 || s.dilations[i] <= 0 || s.kernel[i] <= 0 || s.pads[i] < 0 || s.pads[i + k] < 0)
      c.invalid("kernel, strides and dilations must be positive and pads non-negative");
  const std::string ap = c.attr_s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t in = x.size(static_cast<int64_t>(2 + i));
      int64_t out = (in + s.strides[i] - 1) / s.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * s.strides[i] + (s.kernel[i] - 1) * s.dilations[i] + 1 - in);
      int64_t small = total / 2, big = total - small;
      s.pads[i] = ap == "SAME_UPPER" ? small : big;
      s.pads[i + k] = ap == "SAME_UPPER" ? big : small;
    }
  } else if (ap == "VALID") {
    std::fill(s.pads.begin(), s.pads.end(), 0);
  } else if (ap != "NOTSET" && !ap.empty()) {
    c.invalid("auto_pad '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  (void)ceil_mode;
  return s;
}

// Runs a 2-D op on 1-D data by adding a height of 1: x [N, C, L] -> [N, C, 1, L].
Spatial to_2d(const Spatial& s) {
  Spatial r;
  r.kernel = {1, s.kernel[0]};
  r.strides = {1, s.strides[0]};
  r.dilations = {1, s.dilations[0]};
  r.pads = {0, s.pads[0], 0, s.pads[1]};
  return r;
}

Tensor softmax_like(Ctx& c, bool log) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.dim();
  if (c.opset() >= 13) {
    int64_t axis = norm_axis(c, c.attr_i("axis", -1), rank);
    return log ? log_softmax(x, axis) : softmax(x, axis);
  }
  // Opsets 1-12: coerce to 2-D [prod(shape[:axis]), prod(shape[axis:])], softmax over dim 1.
  int64_t axis = norm_axis(c, c.attr_i("axis", 1), rank);
  auto sz = sizes_of(x);
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= sz[i];
  Tensor flat = reshape(x, {outer, -1});
  Tensor y = log ? log_softmax(flat, 1) : softmax(flat, 1);
  return reshape(y, sz);
}

// Slice with ONNX's clamping rules for one axis; negative steps via index_select.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  const int64_t dim = x.size(axis);
  auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = clampi(start, 0, dim);
    end = clampi(end, 0, dim);
    if (end <= start) return narrow(x, axis, 0, 0);
    return slice(x, axis, start, end, step);
  }
  start = clampi(start, 0, dim - 1);
  end = clampi(end, -1, dim - 1);
  std::vector<int64_t> idx;
  for (int64_t i = start; i > end; i += step) idx.push_back(i);
  if (idx.empty()) return narrow(x, axis, 0, 0);
  return index_select(x, axis, from_vector(idx, {static_cast<int64_t>(idx.size())}));
}

Tensor gather_onnx(const Tensor& data, const Tensor& indices, int64_t axis) {
  const int64_t n = data.size(axis);
  Tensor idx = as_dtype(indices, DType::Int64);
  idx = where(lt(idx, 0), add(idx, n), idx);
  Tensor flat = index_select(data, axis, reshape(idx, {-1}));
  std::vector<int64_t> shape(data.sizes().begin(), data.sizes().begin() + axis);
  for (int64_t s : indices.sizes()) shape.push_back(s);
  for (int64_t i = axis + 1; i < data.dim(); ++i) shape.push_back(data.size(i));
  return reshape(flat, shape);
}

std::vector<int64_t> broadcast_shapes(const Ctx& c, std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  std::vector<int64_t> out = a;
  size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t x = a[off + i], y = b[i];
    if (x == y || y == 1) out[off + i] = x;
    else if (x == 1) out[off + i] = y;
    else c.invalid("shapes cannot be broadcast (" + std::to_string(x) + " vs " + std::to_string(y) + ")");
  }
  return out;
}

Tensor constant_value(const Ctx& c) {
  const Attr* a;
  if ((a = c.attr("value"))) return a->t;
  if ((a = c.attr("value_float"))) return scalar_tensor(a->f, DType::Float32);
  if ((a = c.attr("value_int"))) return scalar_tensor(a->i, DType::Int64);
  if ((a = c.attr("value_floats"))) {
    std::vector<float> v(a->floats.begin(), a->floats.end());
    return from_vector(v, {static_cast<int64_t>(v.size())});
  }
  if ((a = c.attr("value_ints"))) return from_vector(a->ints, {static_cast<int64_t>(a->ints.size())});
  if (c.has_attr("sparse_value")) c.unsupported("sparse_value is not supported");
  if (c.has_attr("value_string") || c.has_attr("value_strings")) c.unsupported("string constants are not supported");
  c.invalid("no value attribute");
}

Tensor pool(Ctx& c, bool is_max) {
  const Tensor& x = c.in(0);
  if (x.dim() != 3 && x.dim() != 4) c.unsupported("only 1-D and 2-D pooling (input rank 3 or 4), got rank " + std::to_string(x.dim()));
  Spatial s = spatial(c, x, c.attr_ints("kernel_shape"));
  if (s.kernel.size() != static_cast<size_t>(x.dim() - 2)) c.invalid("kernel_shape does not match the input rank");
  const bool ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  const bool one_d = x.dim() == 3;
  Tensor in = one_d ? unsqueeze(x, 2) : x;
  Spatial s2 = one_d ? to_2d(s) : s;
  // tandem (as PyTorch) pads symmetrically by at most half the kernel: otherwise pad first.
  bool direct = s2.symmetric();
  for (size_t i = 0; i < 2; ++i) direct = direct && s2.pads[i] * 2 <= s2.kernel[i];
  Tensor y;
  if (is_max) {
    if (direct) {
      y = max_pool2d(in, s2.kernel, s2.strides, s2.begin_pads(), s2.dilations, ceil_mode);
    } else {
      if (ceil_mode) c.unsupported("ceil_mode with asymmetric pads");
      Tensor p = pad(in, torch_pads(s2.pads, 2), "constant", -std::numeric_limits<double>::infinity());
      y = max_pool2d(p, s2.kernel, s2.strides, {0, 0}, s2.dilations, false);
    }
  } else {
    if (s2.dilations != std::vector<int64_t>{1, 1}) c.unsupported("AveragePool with dilations");
    const bool include = c.attr_i("count_include_pad", 0) != 0;
    if (direct) {
      y = avg_pool2d(in, s2.kernel, s2.strides, s2.begin_pads(), ceil_mode, include);
    } else {
      if (ceil_mode) c.unsupported("ceil_mode with asymmetric pads");
      Tensor p = pad(in, torch_pads(s2.pads, 2), "constant", 0.0);
      y = avg_pool2d(p, s2.kernel, s2.strides, {0, 0}, false, true);
      if (!include) {  // mean over the real elements: sums / counts, both from padded pools
        Tensor ones = ones_like(narrow(narrow(in, 0, 0, 1), 1, 0, 1));
        Tensor cnt = avg_pool2d(pad(ones, torch_pads(s2.pads, 2), "constant", 0.0), s2.kernel, s2.strides, {0, 0},
                                false, true);
        y = div(y, cnt);
      }
    }
  }
  return one_d ? squeeze(y, 2) : y;
}

Tensor conv(Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  Tensor b = c.has(2) ? c.in(2) : Tensor();
  if (x.dim() != 3 && x.dim() != 4) c.unsupported("only 1-D and 2-D convolution (input rank 3 or 4), got rank " + std::to_string(x.dim()));
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.sizes().begin() + 2, w.sizes().end()});
  Spatial s = spatial(c, x, kernel);
  const int64_t group = c.attr_i("group", 1);
  const bool one_d = x.dim() == 3;
  Tensor in = one_d ? unsqueeze(x, 2) : x;
  Tensor wt = one_d ? unsqueeze(w, 2) : w;
  Spatial s2 = one_d ? to_2d(s) : s;
  Tensor y;
  if (s2.symmetric()) {
    y = conv2d(in, wt, b, s2.strides, s2.begin_pads(), s2.dilations, group);
  } else {
    Tensor p = pad(in, torch_pads(s2.pads, 2), "constant", 0.0);
    y = conv2d(p, wt, b, s2.strides, {0, 0}, s2.dilations, group);
  }
  return one_d ? squeeze(y, 2) : y;
}

Tensor conv_transpose(Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  if (x.dim() != 4) c.unsupported("only 2-D ConvTranspose (input rank 4), got rank " + std::to_string(x.dim()));
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.sizes().begin() + 2, w.sizes().end()});
  const size_t k = 2;
  auto strides = c.attr_ints("strides", {1, 1});
  auto dil = c.attr_ints("dilations", {1, 1});
  auto pads = c.attr_ints("pads", {0, 0, 0, 0});
  auto outpad = c.attr_ints("output_padding", {0, 0});
  const int64_t group = c.attr_i("group", 1);
  if (kernel.size() != k || strides.size() != k || dil.size() != k || pads.size() != 2 * k || outpad.size() != k)
    c.invalid("kernel_shape/strides/dilations/pads/output_padding do not match 2 spatial dims");
  std::vector<int64_t> full(k);
  for (size_t i = 0; i < k; ++i) full[i] = strides[i] * (x.size(2 + i) - 1) + (kernel[i] - 1) * dil[i] + 1;
  const std::string ap = c.attr_s("auto_pad", "NOTSET");
  auto out_shape = c.attr_ints("output_shape");
  if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t target = !out_shape.empty() ? out_shape[out_shape.size() - k + i] : x.size(2 + i) * strides[i];
      int64_t total = full[i] + outpad[i] - target;
      int64_t small = total / 2, big = total - small;
      pads[i] = ap == "SAME_LOWER" ? big : small;
      pads[i + k] = ap == "SAME_LOWER" ? small : big;
    }
  } else if (ap == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  Tensor y = conv_transpose2d(x, w, Tensor(), strides, {0, 0}, {0, 0}, group, dil);
  // Crop pads (and extend by output_padding) per spatial dim.
  std::vector<int64_t> tp;
  for (size_t i = k; i-- > 0;) {
    tp.push_back(-pads[i]);
    tp.push_back(outpad[i] - pads[i + k]);
  }
  if (std::any_of(tp.begin(), tp.end(), [](int64_t v) { return v != 0; })) y = pad(y, tp, "constant", 0.0);
  if (c.has(2)) y = add(y, reshape(c.in(2), {1, -1, 1, 1}));
  return y;
}

Tensor arg_reduce(Ctx& c, bool is_max) {
  const Tensor& x = c.in(0);
  int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.dim());
  bool keep = c.attr_i("keepdims", 1) != 0;
  if (c.attr_i("select_last_index", 0)) {
    Tensor f = flip(x, {axis});
    Tensor i = is_max ? argmax(f, axis, keep) : argmin(f, axis, keep);
    return sub(scalar_tensor(x.size(axis) - 1, DType::Int64), i);
  }
  return is_max ? argmax(x, axis, keep) : argmin(x, axis, keep);
}

const std::map<std::string, Converter>& table() {
  static const std::map<std::string, Converter> tbl = {
      // ---------------------------------------------------------------- elementwise unary
      {"Abs", unary([](const Tensor& x) { return abs(x); })},
      {"Neg", unary([](const Tensor& x) { return neg(x); })},
      {"Exp", unary([](const Tensor& x) { return exp(x); })},
      {"Log", unary([](const Tensor& x) { return log(x); })},
      {"Sqrt", unary([](const Tensor& x) { return sqrt(x); })},
      {"Reciprocal", unary([](const Tensor& x) { return reciprocal(x); })},
      {"Sin", unary([](const Tensor& x) { return sin(x); })},
      {"Cos", unary([](const Tensor& x) { return cos(x); })},
      {"Tan", unary([](const Tensor& x) { return tan(x); })},
      {"Asin", unary([](const Tensor& x) { return asin(x); })},
      {"Acos", unary([](const Tensor& x) { return acos(x); })},
      {"Atan", unary([](const Tensor& x) { return atan(x); })},
      {"Sinh", unary([](const Tensor& x) { return sinh(x); })},
      {"Cosh", unary([](const Tensor& x) { return cosh(x); })},
      {"Tanh", unary([](const Tensor& x) { return tanh(x); })},
      {"Asinh", unary([](const Tensor& x) { return log(add(x, sqrt(add(mul(x, x), 1)))); })},
      {"Acosh", unary([](const Tensor& x) { return log(add(x, sqrt(sub(mul(x, x), 1)))); })},
      {"Atanh", unary([](const Tensor& x) { return mul(log(div(add(x, 1), add(neg(x), 1))), 0.5); })},
      {"Erf", unary([](const Tensor& x) { return erf(x); })},
      {"Sigmoid", unary([](const Tensor& x) { return sigmoid(x); })},
      {"Relu", unary([](const Tensor& x) { return relu(x); })},
      {"Floor", unary([](const Tensor& x) { return floor(x); })},
      {"Ceil", unary([](const Tensor& x) { return ceil(x); })},
      {"Round", unary([](const Tensor& x) { return round(x); })},
      {"Sign", unary([](const Tensor& x) { return sign(x); })},
      {"Not", unary([](const Tensor& x) { return logical_not(x); })},
      {"IsNaN", unary([](const Tensor& x) { return isnan(x); })},
      {"Identity", unary([](const Tensor& x) { return x; })},
      {"Softplus", unary([](const Tensor& x) { return softplus(x); })},
      {"Softsign", unary([](const Tensor& x) { return div(x, add(abs(x), 1)); })},
      {"HardSwish", unary([](const Tensor& x) { return hardswish(x); })},
      {"Mish", unary([](const Tensor& x) { return mish(x); })},
      {"IsInf",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         bool pos = c.attr_i("detect_positive", 1) != 0, neg_ = c.attr_i("detect_negative", 1) != 0;
         Tensor inf = isinf(x);
         if (pos && neg_) return {inf};
         if (!pos && !neg_) return {zeros_like(inf)};
         return {logical_and(inf, pos ? gt(x, 0) : lt(x, 0))};
       }},
      {"Elu", [](Ctx& c) -> Outs { return {elu(c.in(0), c.attr_f("alpha", 1.0))}; }},
      {"Selu",
       [](Ctx& c) -> Outs {
         double alpha = c.attr_f("alpha", 1.67326319217681884765625), gamma = c.attr_f("gamma", 1.05070102214813232421875);
         return {elu(c.in(0), alpha, gamma)};
       }},
      {"Celu",
       [](Ctx& c) -> Outs {
         double alpha = c.attr_f("alpha", 1.0);
         return {elu(c.in(0), alpha, 1.0, 1.0 / alpha)};
       }},
      {"LeakyRelu", [](Ctx& c) -> Outs { return {leaky_relu(c.in(0), c.attr_f("alpha", 0.01))}; }},
      {"ThresholdedRelu",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         return {where(gt(x, c.attr_f("alpha", 1.0)), x, zeros_like(x))};
       }},
      {"HardSigmoid",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         return {clamp(add(mul(x, c.attr_f("alpha", 0.2)), c.attr_f("beta", 0.5)), Scalar(0.0), Scalar(1.0))};
       }},
      {"PRelu",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         return {where(lt(x, 0), mul(x, c.in(1)), x)};
       }},
      {"Shrink",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         double b = c.attr_f("bias", 0.0), l = c.attr_f("lambd", 0.5);
         Tensor y = where(lt(x, -l), add(x, b), where(gt(x, l), sub(x, b), zeros_like(x)));
         return {as_dtype(y, x.dtype())};
       }},
      // ---------------------------------------------------------------- elementwise binary
      {"Add", binary_same([](const Tensor& a, const Tensor& b) { return add(a, b); })},
      {"Sub", binary_same([](const Tensor& a, const Tensor& b) { return sub(a, b); })},
      {"Mul", binary_same([](const Tensor& a, const Tensor& b) { return mul(a, b); })},
      {"Div", binary_same([](const Tensor& a, const Tensor& b) {
         return is_int(a.dtype()) ? div(a, b, std::string("trunc")) : div(a, b);
       })},
      {"Pow", binary_same([](const Tensor& a, const Tensor& b) { return pow(a, b); })},
      {"Mod",
       [](Ctx& c) -> Outs {
         const Tensor& a = c.in(0);
         Tensor y = c.attr_i("fmod", 0) ? fmod(a, c.in(1)) : remainder(a, c.in(1));
         return {as_dtype(y, a.dtype())};
       }},
      {"Equal", compare([](const Tensor& a, const Tensor& b) { return eq(a, b); })},
      {"Less", compare([](const Tensor& a, const Tensor& b) { return lt(a, b); })},
      {"LessOrEqual", compare([](const Tensor& a, const Tensor& b) { return le(a, b); })},
      {"Greater", compare([](const Tensor& a, const Tensor& b) { return gt(a, b); })},
      {"GreaterOrEqual", compare([](const Tensor& a, const Tensor& b) { return ge(a, b); })},
      {"And", compare([](const Tensor& a, const Tensor& b) { return logical_and(a, b); })},
      {"Or", compare([](const Tensor& a, const Tensor& b) { return logical_or(a, b); })},
      {"Xor", compare([](const Tensor& a, const Tensor& b) { return logical_xor(a, b); })},
      {"BitShift",
       [](Ctx& c) -> Outs {
         const Tensor& a = c.in(0);
         std::string dir = c.attr_s("direction", "");
         if (dir == "LEFT") return {as_dtype(bitwise_left_shift(a, c.in(1)), a.dtype())};
         if (dir == "RIGHT") return {as_dtype(bitwise_right_shift(a, c.in(1)), a.dtype())};
         c.invalid("direction must be LEFT or RIGHT, got '" + dir + "'");
       }},
      {"Sum", variadic([](const Tensor& a, const Tensor& b) { return add(a, b); })},
      {"Max", variadic([](const Tensor& a, const Tensor& b) { return maximum(a, b); })},
      {"Min", variadic([](const Tensor& a, const Tensor& b) { return minimum(a, b); })},
      {"Mean",
       [](Ctx& c) -> Outs {
         Tensor acc = c.in(0);
         for (size_t i = 1; i < c.num_inputs(); ++i) acc = add(acc, c.in(i));
         return {div(acc, static_cast<double>(c.num_inputs()))};
       }},
      {"Where", [](Ctx& c) -> Outs { return {where(c.in(0), c.in(1), c.in(2))}; }},
      {"Clip",
       [](Ctx& c) -> Outs {
         Tensor y = c.in(0);
         if (c.opset() < 11) {
           double lo = c.attr_f("min", -std::numeric_limits<float>::max());
           double hi = c.attr_f("max", std::numeric_limits<float>::max());
           return {clamp(y, Scalar(lo), Scalar(hi))};
         }
         if (c.has(1)) y = maximum(y, c.in(1));
         if (c.has(2)) y = minimum(y, c.in(2));
         return {y};
       }},
      // ---------------------------------------------------------------- dtype
      {"Cast",
       [](Ctx& c) -> Outs {
         DType d = dtype_from_onnx(c.attr_i("to", 0), c.where() + "attribute 'to': ");
         return {as_dtype(c.in(0), d)};
       }},
      {"CastLike", [](Ctx& c) -> Outs { return {as_dtype(c.in(0), c.in(1).dtype())}; }},
      // ---------------------------------------------------------------- linear algebra
      {"MatMul", [](Ctx& c) -> Outs { return {matmul(c.in(0), c.in(1))}; }},
      {"Gemm",
       [](Ctx& c) -> Outs {
         Tensor a = c.in(0), b = c.in(1);
         if (a.dim() != 2 || b.dim() != 2) c.invalid("A and B must be 2-D");
         if (c.attr_i("transA", 0)) a = t(a);
         if (c.attr_i("transB", 0)) b = t(b);
         double alpha = c.attr_f("alpha", 1.0), beta = c.attr_f("beta", 1.0);
         Tensor y = mm(a, b);
         if (alpha != 1.0) y = mul(y, alpha);
         if (c.has(2) && beta != 0.0) y = add(y, beta != 1.0 ? mul(c.in(2), beta) : c.in(2));
         return {as_dtype(y, c.in(0).dtype())};
       }},
      {"Einsum", [](Ctx& c) -> Outs {
         std::vector<Tensor> ops;
         for (size_t i = 0; i < c.num_inputs(); ++i) ops.push_back(c.in(i));
         return {einsum(c.attr_s("equation", ""), ops)};
       }},
      // ---------------------------------------------------------------- neural network
      {"Conv", [](Ctx& c) -> Outs { return {conv(c)}; }},
      {"ConvTranspose", [](Ctx& c) -> Outs { return {conv_transpose(c)}; }},
      {"MaxPool",
       [](Ctx& c) -> Outs {
         if (c.node().outputs.size() > 1 && !c.node().outputs[1].empty()) c.unsupported("the Indices output");
         if (c.attr_i("storage_order", 0)) c.unsupported("storage_order 1");
         return {pool(c, true)};
       }},
      {"AveragePool", [](Ctx& c) -> Outs { return {pool(c, false)}; }},
      {"GlobalAveragePool",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         std::vector<int64_t> dims;
         for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
         return {mean(x, dims, true)};
       }},
      {"GlobalMaxPool",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         std::vector<int64_t> dims;
         for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
         return {amax(x, dims, true)};
       }},
      {"BatchNormalization",
       [](Ctx& c) -> Outs {
         if (c.attr_i("training_mode", 0)) c.unsupported("training_mode 1");
         if (c.opset() < 6 && c.attr_i("is_test", 0) == 0 && c.node().outputs.size() > 1)
           c.unsupported("training-mode outputs (is_test 0)");
         return {batch_norm(c.in(0), c.in(3), c.in(4), c.in(1), c.in(2), false, 0.1, c.attr_f("epsilon", 1e-5))};
       }},
      {"InstanceNormalization",
       [](Ctx& c) -> Outs {
         return {instance_norm(c.in(0), {}, {}, c.in(1), c.in(2), true, 0.1, c.attr_f("epsilon", 1e-5))};
       }},
      {"LayerNormalization",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = norm_axis(c, c.attr_i("axis", -1), x.dim());
         if (c.node().outputs.size() > 1) c.unsupported("the Mean / InvStdDev outputs");
         std::vector<int64_t> shape(x.sizes().begin() + axis, x.sizes().end());
         Tensor w = c.in(1).dim() == static_cast<int64_t>(shape.size()) ? c.in(1) : broadcast_to(c.in(1), shape);
         Tensor b;
         if (c.has(2)) b = c.in(2).dim() == static_cast<int64_t>(shape.size()) ? c.in(2) : broadcast_to(c.in(2), shape);
         return {layer_norm(x, shape, w, b, c.attr_f("epsilon", 1e-5))};
       }},
      {"Softmax", [](Ctx& c) -> Outs { return {softmax_like(c, false)}; }},
      {"LogSoftmax", [](Ctx& c) -> Outs { return {softmax_like(c, true)}; }},
      {"Dropout",
       [](Ctx& c) -> Outs {
         if (c.has(2) && c.ints(2).at(0) != 0) c.unsupported("training_mode true (random)");
         if (c.opset() < 7 && c.attr_i("is_test", 0) == 0 && c.node().outputs.size() > 1)
           c.unsupported("training mode (is_test 0)");
         const Tensor& x = c.in(0);
         return {x, ones_like(x, TensorOptions(DType::Bool))};
       }},
      // ---------------------------------------------------------------- reductions
      {"ReduceSum", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return sum(x, d, k); })},
      {"ReduceMean", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return mean(x, d, k); })},
      {"ReduceMax", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return amax(x, d, k); })},
      {"ReduceMin", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return amin(x, d, k); })},
      {"ReduceProd", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return prod(x, d, k); })},
      {"ReduceL1", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return sum(abs(x), d, k); })},
      {"ReduceL2",
       reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return sqrt(sum(mul(x, x), d, k)); })},
      {"ReduceSumSquare",
       reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return sum(mul(x, x), d, k); })},
      {"ReduceLogSum", reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return log(sum(x, d, k)); })},
      {"ReduceLogSumExp",
       reduce([](const Tensor& x, const std::vector<int64_t>& d, bool k) { return logsumexp(x, d, k); })},
      {"ArgMax", [](Ctx& c) -> Outs { return {arg_reduce(c, true)}; }},
      {"ArgMin", [](Ctx& c) -> Outs { return {arg_reduce(c, false)}; }},
      {"CumSum",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = norm_axis(c, c.ints(1).at(0), x.dim());
         Tensor in = c.attr_i("reverse", 0) ? flip(x, {axis}) : x;
         Tensor y = cumsum(in, axis);
         if (c.attr_i("exclusive", 0)) {
           int64_t n = in.size(axis);
           y = cat({zeros_like(narrow(y, axis, 0, std::min<int64_t>(n, 1))), narrow(y, axis, 0, std::max<int64_t>(n - 1, 0))},
                   axis);
         }
         if (c.attr_i("reverse", 0)) y = flip(y, {axis});
         return {as_dtype(y, x.dtype())};
       }},
      {"TopK",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t k = c.opset() < 10 ? c.attr_i("k", 0) : c.ints(1).at(0);
         int64_t axis = norm_axis(c, c.attr_i("axis", -1), x.dim());
         auto [v, i] = topk(x, k, axis, c.attr_i("largest", 1) != 0, true);
         return {v, i};
       }},
      // ---------------------------------------------------------------- shapes
      {"Shape",
       [](Ctx& c) -> Outs {
         auto s = sizes_of(c.in(0));
         int64_t r = static_cast<int64_t>(s.size());
         int64_t start = c.attr_i("start", 0), end = c.attr_i("end", r);
         if (start < 0) start += r;
         if (end < 0) end += r;
         start = std::clamp<int64_t>(start, 0, r);
         end = std::clamp<int64_t>(end, start, r);
         std::vector<int64_t> v(s.begin() + start, s.begin() + end);
         return {from_vector(v, {static_cast<int64_t>(v.size())})};
       }},
      {"Size", [](Ctx& c) -> Outs { return {scalar_tensor(c.in(0).numel(), DType::Int64)}; }},
      {"Reshape",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         std::vector<int64_t> shape = c.opset() < 5 ? c.attr_ints("shape") : c.ints(1);
         bool allowzero = c.attr_i("allowzero", 0) != 0;
         for (size_t i = 0; i < shape.size(); ++i)
           if (shape[i] == 0 && !allowzero) {
             if (static_cast<int64_t>(i) >= x.dim()) c.invalid("shape has 0 at position beyond the input rank");
             shape[i] = x.size(static_cast<int64_t>(i));
           }
         return {reshape(x, shape)};
       }},
      {"Flatten",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = c.attr_i("axis", 1);
         if (axis < 0) axis += x.dim();
         if (axis < 0 || axis > x.dim()) c.invalid("axis out of range");
         int64_t outer = 1;
         for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
         int64_t inner = 1;
         for (int64_t i = axis; i < x.dim(); ++i) inner *= x.size(i);
         return {reshape(x, {outer, inner})};
       }},
      {"Transpose",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         std::vector<int64_t> perm = c.attr_ints("perm");
         if (perm.empty())
           for (int64_t i = x.dim(); i-- > 0;) perm.push_back(i);
         return {permute(x, perm)};
       }},
      {"Concat",
       [](Ctx& c) -> Outs {
         std::vector<Tensor> ts;
         for (size_t i = 0; i < c.num_inputs(); ++i) ts.push_back(c.in(i));
         int64_t axis = norm_axis(c, c.attr_i("axis", c.opset() < 4 ? 1 : 0), ts.at(0).dim());
         return {cat(ts, axis)};
       }},
      {"Split",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.dim());
         int64_t n = static_cast<int64_t>(c.node().outputs.size());
         std::vector<int64_t> split;
         if (c.has(1)) split = c.ints(1);
         else split = c.attr_ints("split");
         if (split.empty()) {
           if (x.size(axis) % n != 0) c.invalid("the axis does not split evenly into the outputs");
           split.assign(n, x.size(axis) / n);
         }
         return split_with_sizes(x, split, axis);
       }},
      {"Squeeze",
       [](Ctx& c) -> Outs {
         Tensor x = c.in(0);
         auto axes = axes_of(c, 1);
         if (!axes || axes->empty()) return {squeeze(x)};
         std::vector<int64_t> dims;
         for (int64_t a : *axes) dims.push_back(norm_axis(c, a, x.dim()));
         std::sort(dims.rbegin(), dims.rend());
         for (int64_t d : dims) {
           if (x.size(d) != 1) c.invalid("axis " + std::to_string(d) + " has size " + std::to_string(x.size(d)) + ", not 1");
           x = squeeze(x, d);
         }
         return {x};
       }},
      {"Unsqueeze",
       [](Ctx& c) -> Outs {
         Tensor x = c.in(0);
         auto axes = axes_of(c, 1);
         if (!axes) c.invalid("no axes");
         int64_t out_rank = x.dim() + static_cast<int64_t>(axes->size());
         std::vector<int64_t> dims;
         for (int64_t a : *axes) dims.push_back(norm_axis(c, a, out_rank));
         std::sort(dims.begin(), dims.end());
         for (int64_t d : dims) x = unsqueeze(x, d);
         return {x};
       }},
      {"Slice",
       [](Ctx& c) -> Outs {
         Tensor x = c.in(0);
         std::vector<int64_t> starts, ends, axes, steps;
         if (c.opset() < 10) {
           starts = c.attr_ints("starts");
           ends = c.attr_ints("ends");
           axes = c.attr_ints("axes");
         } else {
           starts = c.ints(1);
           ends = c.ints(2);
           if (c.has(3)) axes = c.ints(3);
           if (c.has(4)) steps = c.ints(4);
         }
         if (axes.empty())
           for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
         if (steps.empty()) steps.assign(starts.size(), 1);
         if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
           c.invalid("starts, ends, axes and steps differ in length");
         for (size_t i = 0; i < starts.size(); ++i) {
           if (steps[i] == 0) c.invalid("a step is 0");
           x = slice_axis(x, norm_axis(c, axes[i], x.dim()), starts[i], ends[i], steps[i]);
         }
         return {x};
       }},
      {"Gather",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         return {gather_onnx(x, c.in(1), norm_axis(c, c.attr_i("axis", 0), x.dim()))};
       }},
      {"GatherElements",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.dim());
         Tensor idx = as_dtype(c.in(1), DType::Int64);
         idx = where(lt(idx, 0), add(idx, x.size(axis)), idx);
         return {gather(x, axis, idx)};
       }},
      {"ScatterElements",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.dim());
         Tensor idx = as_dtype(c.in(1), DType::Int64);
         idx = where(lt(idx, 0), add(idx, x.size(axis)), idx);
         std::string red = c.attr_s("reduction", "none");
         if (red == "none") return {scatter(x, axis, idx, c.in(2))};
         if (red == "add") return {scatter_reduce(x, axis, idx, c.in(2), "sum")};
         if (red == "mul") return {scatter_reduce(x, axis, idx, c.in(2), "prod")};
         c.unsupported("reduction '" + red + "'");
       }},
      {"ScatterND",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         Tensor idx = as_dtype(c.in(1), DType::Int64);
         int64_t k = idx.size(-1);
         std::vector<Tensor> ix;
         for (int64_t j = 0; j < k; ++j) ix.push_back(select(idx, -1, j));
         std::string red = c.attr_s("reduction", "none");
         if (red == "none") return {index_put(x, ix, c.in(2), false)};
         if (red == "add") return {index_put(x, ix, c.in(2), true)};
         c.unsupported("reduction '" + red + "'");
       }},
      {"GatherND",
       [](Ctx& c) -> Outs {
         if (c.attr_i("batch_dims", 0) != 0) c.unsupported("batch_dims other than 0");
         const Tensor& x = c.in(0);
         Tensor idx = as_dtype(c.in(1), DType::Int64);
         std::vector<Tensor> ix;
         for (int64_t j = 0; j < idx.size(-1); ++j) {
           Tensor s = select(idx, -1, j);
           ix.push_back(where(lt(s, 0), add(s, x.size(j)), s));
         }
         return {index(x, ix)};
       }},
      {"Expand",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         return {expand(x, broadcast_shapes(c, sizes_of(x), c.ints(1)))};
       }},
      {"Tile", [](Ctx& c) -> Outs { return {repeat(c.in(0), c.ints(1))}; }},
      {"Pad",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         std::vector<int64_t> pads;
         double value = 0;
         if (c.opset() < 11) {
           pads = c.attr_ints(c.opset() < 2 ? "paddings" : "pads");
           value = c.attr_f("value", 0.0);
         } else {
           pads = c.ints(1);
           if (c.has(2)) value = c.doubles(2).at(0);
           if (c.has(3)) c.unsupported("the axes input");
         }
         if (pads.size() != static_cast<size_t>(2 * x.dim())) c.invalid("pads must hold 2 * rank values");
         std::string mode = c.attr_s("mode", "constant");
         size_t k = static_cast<size_t>(x.dim());
         // Trim leading dims without padding (tandem's reflect/replicate pad only the last dims).
         size_t first = 0;
         while (first < k && pads[first] == 0 && pads[first + k] == 0) ++first;
         std::vector<int64_t> tail;
         for (size_t i = first; i < k; ++i) tail.push_back(pads[i]);
         for (size_t i = first; i < k; ++i) tail.push_back(pads[i + k]);
         auto tp = torch_pads(tail, k - first);
         if (mode == "constant") return {pad(x, tp, "constant", value)};
         if (mode == "reflect") return {pad(x, tp, "reflect")};
         if (mode == "edge") return {pad(x, tp, "replicate")};
         c.invalid("mode '" + mode + "' is not constant, reflect or edge");
       }},
      {"ConstantOfShape",
       [](Ctx& c) -> Outs {
         std::vector<int64_t> shape = c.ints(0);
         const Attr* a = c.attr("value");
         if (!a) return {zeros(shape, DType::Float32)};
         if (a->t.numel() != 1) c.invalid("value must hold one element");
         return {expand(reshape(a->t, std::vector<int64_t>(shape.size(), 1)), shape).contiguous()};
       }},
      {"Constant", [](Ctx& c) -> Outs { return {constant_value(c)}; }},
      {"Range",
       [](Ctx& c) -> Outs {
         DType d = c.in(0).dtype();
         if (is_int(d)) {
           int64_t s = c.ints(0).at(0), l = c.ints(1).at(0), st = c.ints(2).at(0);
           if (st == 0) c.invalid("delta is 0");
           int64_t n = std::max<int64_t>(0, (l - s + st + (st > 0 ? -1 : 1)) / st);
           return {as_dtype(add(mul(arange(n), st), s), d)};
         }
         double s = c.doubles(0).at(0), l = c.doubles(1).at(0), st = c.doubles(2).at(0);
         if (st == 0) c.invalid("delta is 0");
         int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / st)));
         return {as_dtype(add(mul(arange(n, DType::Float64), st), s), d)};
       }},
      {"Trilu",
       [](Ctx& c) -> Outs {
         int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
         return {c.attr_i("upper", 1) ? triu(c.in(0), k) : tril(c.in(0), k)};
       }},
      {"NonZero", [](Ctx& c) -> Outs { return {t(nonzero(c.in(0))).contiguous()}; }},
      {"OneHot",
       [](Ctx& c) -> Outs {
         Tensor idx = as_dtype(c.in(0), DType::Int64);
         int64_t depth = static_cast<int64_t>(c.doubles(1).at(0));
         const Tensor& values = c.in(2);
         idx = where(lt(idx, 0), add(idx, depth), idx);
         int64_t rank = idx.dim() + 1;
         int64_t axis = c.attr_i("axis", -1);
         if (axis < 0) axis += rank;
         Tensor oh = one_hot(idx, depth);
         oh = movedim(oh, -1, axis);
         return {where(ne(oh, 0), select(values, 0, 1), select(values, 0, 0))};
       }},
      {"DepthToSpace",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t b = c.attr_i("blocksize", 0);
         if (x.dim() != 4 || b <= 0) c.invalid("needs a 4-D input and a positive blocksize");
         int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
         Tensor y;
         if (c.attr_s("mode", "DCR") == "DCR")
           y = permute(reshape(x, {n, b, b, ch / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
         else
           y = permute(reshape(x, {n, ch / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3});
         return {reshape(y, {n, ch / (b * b), h * b, w * b})};
       }},
      {"SpaceToDepth",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t b = c.attr_i("blocksize", 0);
         if (x.dim() != 4 || b <= 0) c.invalid("needs a 4-D input and a positive blocksize");
         int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
         Tensor y = permute(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
         return {reshape(y, {n, ch * b * b, h / b, w / b})};
       }},
  };
  return tbl;
}

}  // namespace

const Converter* find_converter(const std::string& op_type) {
  const auto& t = table();
  auto it = t.find(op_type);
  return it == t.end() ? nullptr : &it->second;
}

std::vector<std::string> converter_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : table()) names.push_back(k);
  return names;
}

}  // namespace tandem::onnx
