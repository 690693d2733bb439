// The ONNX op table: one converter per ONNX op type (ONNX's names), each handling the
// opset versions whose semantics differ (attributes that became inputs, changed
// defaults). Converters compute with tandem's public op API only, so every computation
// goes through the dispatcher. Semantics follow onnx/docs/Operators.md (ONNX 1.12,
// opsets 1-17); an op, version or attribute value with no mapping raises
// NotImplementedError naming the op and the opset (Ctx::unsupported).
#include <algorithm>
#include <cmath>
#include <cstring>
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

// The domain of ONNX's training operators (Adagrad, Adam, Momentum); its table keys are
// "ai.onnx.preview.training:Op".
const std::string kTrainingDomain = "ai.onnx.preview.training";

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

// One 2-D pooling of `in` [N, C, H, W] over the window `s2` (ONNX pads: begin, end).
Tensor pool2d(const Ctx& c, const Tensor& in, const Spatial& s2, bool is_max, bool ceil_mode, bool include) {
  // tandem (as PyTorch) pads symmetrically by at most half the kernel: otherwise pad first.
  bool direct = s2.symmetric();
  for (size_t i = 0; i < 2; ++i) direct = direct && s2.pads[i] * 2 <= s2.kernel[i];
  if (is_max) {
    if (direct) return max_pool2d(in, s2.kernel, s2.strides, s2.begin_pads(), s2.dilations, ceil_mode);
    if (ceil_mode) c.unsupported("ceil_mode with asymmetric pads");
    Tensor p = pad(in, torch_pads(s2.pads, 2), "constant", -std::numeric_limits<double>::infinity());
    return max_pool2d(p, s2.kernel, s2.strides, {0, 0}, s2.dilations, false);
  }
  if (s2.dilations != std::vector<int64_t>{1, 1}) c.unsupported("AveragePool with dilations");
  if (direct) return avg_pool2d(in, s2.kernel, s2.strides, s2.begin_pads(), ceil_mode, include);
  if (ceil_mode) c.unsupported("ceil_mode with asymmetric pads");
  Tensor p = pad(in, torch_pads(s2.pads, 2), "constant", 0.0);
  Tensor y = avg_pool2d(p, s2.kernel, s2.strides, {0, 0}, false, true);
  if (!include) {  // mean over the real elements: sums / counts, both from padded pools
    Tensor ones = ones_like(narrow(narrow(in, 0, 0, 1), 1, 0, 1));
    Tensor cnt = avg_pool2d(pad(ones, torch_pads(s2.pads, 2), "constant", 0.0), s2.kernel, s2.strides, {0, 0},
                            false, true);
    y = div(y, cnt);
  }
  return y;
}

// MaxPool / AveragePool, 1-D to 3-D. 1-D runs as 2-D with a height of 1. 3-D runs as two
// 2-D pools, since both poolings are separable over the spatial dims: first over (H, W)
// with the depth folded into the channels, then over D (a (kd, 1) window on [N, C, D,
// H'*W']). Max of maxima is the window's maximum; for averages the divisor (the window's
// size, or its count of real elements without count_include_pad) is the product of the
// per-dim divisors, so the mean of means is the window's mean.
Tensor pool(Ctx& c, bool is_max) {
  const Tensor& x0 = c.in(0);
  // Integer max pooling runs in float32 (exact for 8- and 16-bit values).
  const bool int_in = is_max && !is_floating_point(x0.dtype()) && element_size(x0.dtype()) <= 2;
  const Tensor x = int_in ? x0.to(DType::Float32) : x0;
  if (x.dim() < 3 || x.dim() > 5)
    c.unsupported("only 1-D, 2-D and 3-D pooling (input rank 3, 4 or 5), got rank " + std::to_string(x.dim()));
  Spatial s = spatial(c, x, c.attr_ints("kernel_shape"));
  if (s.kernel.size() != static_cast<size_t>(x.dim() - 2)) c.invalid("kernel_shape does not match the input rank");
  const bool ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  const bool include = c.attr_i("count_include_pad", 0) != 0;
  Tensor y;
  if (x.dim() == 5) {
    const int64_t n = x.size(0), ch = x.size(1), d = x.size(2);
    Spatial hw, dd;
    hw.kernel = {s.kernel[1], s.kernel[2]};
    hw.strides = {s.strides[1], s.strides[2]};
    hw.dilations = {s.dilations[1], s.dilations[2]};
    hw.pads = {s.pads[1], s.pads[2], s.pads[4], s.pads[5]};
    dd.kernel = {s.kernel[0], 1};
    dd.strides = {s.strides[0], 1};
    dd.dilations = {s.dilations[0], 1};
    dd.pads = {s.pads[0], 0, s.pads[3], 0};
    Tensor t = pool2d(c, reshape(x, {n, ch * d, x.size(3), x.size(4)}), hw, is_max, ceil_mode, include);
    const int64_t h2 = t.size(2), w2 = t.size(3);
    t = pool2d(c, reshape(t, {n, ch, d, h2 * w2}), dd, is_max, ceil_mode, include);
    y = reshape(t, {n, ch, t.size(2), h2, w2});
  } else {
    const bool one_d = x.dim() == 3;
    y = pool2d(c, one_d ? unsqueeze(x, 2) : x, one_d ? to_2d(s) : s, is_max, ceil_mode, include);
    if (one_d) y = squeeze(y, 2);
  }
  return int_in ? y.to(x0.dtype()) : y;
}

// MaxPool with its Indices output (2-D, symmetric pads): indices into the whole input
// flattened (row-major, or column-major within each plane for storage_order 1).
Outs max_pool_indices(Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.dim() != 4) c.unsupported("the Indices output for input rank " + std::to_string(x.dim()));
  Spatial s = spatial(c, x, c.attr_ints("kernel_shape"));
  if (!s.symmetric()) c.unsupported("the Indices output with asymmetric pads");
  auto [y, idx] = max_pool2d_with_indices(x, s.kernel, s.strides, s.begin_pads(), s.dilations, c.attr_i("ceil_mode", 0) != 0);
  const int64_t h = x.size(2), w = x.size(3);
  if (c.attr_i("storage_order", 0)) idx = add(mul(remainder(idx, w), h), div(idx, w, std::string("floor")));
  Tensor plane = reshape(mul(arange(x.size(0) * x.size(1)), h * w), {x.size(0), x.size(1), 1, 1});
  return {y, add(idx, plane)};
}

Tensor conv(Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  Tensor b = c.has(2) ? c.in(2) : Tensor();
  if (x.dim() < 3 || x.dim() > 5)
    c.unsupported("only 1-D, 2-D and 3-D convolution (input rank 3, 4 or 5), got rank " + std::to_string(x.dim()));
  if (w.dim() != x.dim()) c.invalid("the weight's rank " + std::to_string(w.dim()) + " differs from the input's");
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.sizes().begin() + 2, w.sizes().end()});
  Spatial s = spatial(c, x, kernel);
  const int64_t group = c.attr_i("group", 1);
  if (x.dim() == 5) {
    // 3-D: a sum over the kd depth taps of 2-D convolutions. Tap k reads the (padded) input
    // depths k*dilation + o*stride for each output depth o, which fold into the batch.
    if (static_cast<int64_t>(kernel.size()) != 3 || kernel[0] != w.size(2)) c.invalid("kernel_shape does not match the weight");
    Tensor xp = pad(x, torch_pads(s.pads, 3), "constant", 0.0);
    const int64_t n = x.size(0), dp = xp.size(2), kd = kernel[0];
    const int64_t span = (kd - 1) * s.dilations[0] + 1;
    if (dp < span) c.invalid("the padded depth is smaller than the dilated kernel");
    const int64_t dout = (dp - span) / s.strides[0] + 1;
    Spatial hw;
    hw.kernel = {kernel[1], kernel[2]};
    hw.strides = {s.strides[1], s.strides[2]};
    hw.dilations = {s.dilations[1], s.dilations[2]};
    hw.pads = {0, 0, 0, 0};
    Tensor y;
    for (int64_t k = 0; k < kd; ++k) {
      const int64_t start = k * s.dilations[0];
      Tensor xs = slice(xp, 2, start, start + (dout - 1) * s.strides[0] + 1, s.strides[0]);  // [N, C, Dout, H, W]
      xs = reshape(permute(xs, {0, 2, 1, 3, 4}), {n * dout, x.size(1), xp.size(3), xp.size(4)});
      Tensor t = conv2d(xs, select(w, 2, k), Tensor(), hw.strides, {0, 0}, hw.dilations, group);
      y = k == 0 ? t : add(y, t);
    }
    y = permute(reshape(y, {n, dout, y.size(1), y.size(2), y.size(3)}), {0, 2, 1, 3, 4});
    if (b.defined()) y = add(y, reshape(b, {1, b.size(0), 1, 1, 1}));
    return y.contiguous();
  }
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
  if (x.dim() == 3) {  // 1-D: a height of 1
    Node n2 = c.node();
    for (const char* a : {"kernel_shape", "strides", "dilations", "output_padding", "output_shape"})
      if (n2.attrs.count(a)) n2.attrs[a].ints.insert(n2.attrs[a].ints.begin(), 1);
    if (n2.attrs.count("pads")) {
      auto& p = n2.attrs["pads"].ints;
      if (p.size() == 2) p = {0, p[0], 0, p[1]};
    }
    std::vector<Value> vals;
    vals.push_back(Value{unsqueeze(x, 2), false});
    vals.push_back(Value{unsqueeze(w, 2), false});
    if (c.has(2)) vals.push_back(Value{c.in(2), false});
    std::vector<const Value*> ptrs;
    for (const auto& v : vals) ptrs.push_back(&v);
    Ctx c2(n2, ptrs, c.source());
    return squeeze(conv_transpose(c2), 2);
  }
  if (x.dim() != 4 && x.dim() != 5)
    c.unsupported("only 1-D, 2-D and 3-D ConvTranspose (input rank 3, 4 or 5), got rank " + std::to_string(x.dim()));
  if (w.dim() != x.dim()) c.invalid("the weight's rank " + std::to_string(w.dim()) + " differs from the input's");
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.sizes().begin() + 2, w.sizes().end()});
  const size_t k = static_cast<size_t>(x.dim() - 2);
  auto strides = c.attr_ints("strides", std::vector<int64_t>(k, 1));
  auto dil = c.attr_ints("dilations", std::vector<int64_t>(k, 1));
  auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  auto outpad = c.attr_ints("output_padding", std::vector<int64_t>(k, 0));
  const int64_t group = c.attr_i("group", 1);
  if (kernel.size() != k || strides.size() != k || dil.size() != k || pads.size() != 2 * k || outpad.size() != k)
    c.invalid("kernel_shape/strides/dilations/pads/output_padding do not match " + std::to_string(k) + " spatial dims");
  for (size_t i = 0; i < k; ++i)
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0) c.invalid("kernel_shape, strides and dilations must be positive");
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
  Tensor y;
  if (k == 2) {
    y = conv_transpose2d(x, w, Tensor(), strides, {0, 0}, {0, 0}, group, dil);
  } else {
    // 3-D: each depth tap kd is a 2-D transposed convolution of every input depth d (folded
    // into the batch), added into output depth d*stride + kd*dilation.
    if (kernel[0] != w.size(2)) c.invalid("kernel_shape does not match the weight");
    const int64_t n = x.size(0), d = x.size(2);
    const std::vector<int64_t> s_hw{strides[1], strides[2]}, d_hw{dil[1], dil[2]};
    Tensor xf = reshape(permute(x, {0, 2, 1, 3, 4}), {n * d, x.size(1), x.size(3), x.size(4)});
    for (int64_t t = 0; t < kernel[0]; ++t) {
      Tensor z = conv_transpose2d(xf, select(w, 2, t), Tensor(), s_hw, {0, 0}, {0, 0}, group, d_hw);
      z = permute(reshape(z, {n, d, z.size(1), z.size(2), z.size(3)}), {0, 2, 1, 3, 4});
      if (!y.defined()) y = zeros({n, z.size(1), full[0], z.size(3), z.size(4)}, x.dtype());
      y = index_add(y, 2, add(mul(arange(d), strides[0]), t * dil[0]), z.contiguous());
    }
  }
  // Crop pads (and extend by output_padding) per spatial dim.
  std::vector<int64_t> tp;
  for (size_t i = k; i-- > 0;) {
    tp.push_back(-pads[i]);
    tp.push_back(outpad[i] - pads[i + k]);
  }
  if (std::any_of(tp.begin(), tp.end(), [](int64_t v) { return v != 0; })) y = pad(y, tp, "constant", 0.0);
  if (c.has(2)) {
    std::vector<int64_t> bshape(k + 2, 1);
    bshape[1] = -1;
    y = add(y, reshape(c.in(2), bshape));
  }
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

// Negative log-likelihood of log-probabilities `logp` [N, C, d...] at `target` [N, d...]
// (ONNX NegativeLogLikelihoodLoss): weight [C] optional, ignore_index, reduction
// none / sum / mean (mean divides by the summed weights of the counted elements).
Tensor nll(Ctx& c, const Tensor& logp, const Tensor& target_in, const Tensor& weight) {
  Tensor target = as_dtype(target_in, DType::Int64);
  Tensor keep = ones_like(target, TensorOptions(DType::Bool));
  if (c.has_attr("ignore_index")) keep = ne(target, c.attr_i("ignore_index", 0));
  Tensor safe = where(keep, target, zeros_like(target));
  Tensor picked = squeeze(gather(logp, 1, unsqueeze(safe, 1)), 1);
  Tensor w = weight.defined() ? reshape(index_select(weight, 0, reshape(safe, {-1})), sizes_of(safe))
                              : ones_like(picked);
  w = mul(w, keep.to(w.dtype()));
  Tensor loss = neg(mul(picked, w));
  const std::string red = c.attr_s("reduction", "mean");
  if (red == "none") return loss;
  if (red == "sum") return sum(loss);
  if (red == "mean") return div(sum(loss), sum(w));
  c.invalid("reduction '" + red + "' is not none, sum or mean");
}

// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere.
Tensor hardmax_along(const Tensor& x, int64_t axis) {
  Tensor idx = argmax(x, axis, true);
  Tensor pos = arange(x.size(axis));
  std::vector<int64_t> shape(x.dim(), 1);
  shape[axis] = x.size(axis);
  return eq(reshape(pos, shape), idx).to(x.dtype());
}

// Resize along one axis: out[i] = sum_k x[idx_k[i]] * w_k[i] (nearest: one tap of weight
// 1, linear: two, cubic: four), indices and weights computed on the host from ONNX's
// coordinate transformation. `mask`: output positions outside the input
// (tf_crop_and_resize) get `extrapolation`.
Tensor resize_axis(const Ctx& c, const Tensor& x, int64_t axis, int64_t out_len, double out_len_f, double scale, const std::string& mode,
                   const std::string& ctm, const std::string& nearest_mode, double cubic_a, bool exclude_outside,
                   double roi_start, double roi_end, double extrapolation) {
  const int64_t in_len = x.size(axis);
  std::vector<std::vector<int64_t>> idx;
  std::vector<std::vector<double>> wts;
  std::vector<bool> outside(out_len, false);
  const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  idx.assign(taps, std::vector<int64_t>(out_len));
  wts.assign(taps, std::vector<double>(out_len));
  auto clampi = [&](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v, 0), in_len - 1); };
  for (int64_t i = 0; i < out_len; ++i) {
    double xo;
    if (ctm == "half_pixel") xo = (i + 0.5) / scale - 0.5;
    else if (ctm == "pytorch_half_pixel") xo = out_len > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
    else if (ctm == "align_corners") xo = out_len == 1 ? 0.0 : i * double(in_len - 1) / (out_len_f - 1);
    else if (ctm == "asymmetric") xo = i / scale;
    else if (ctm == "tf_half_pixel_for_nn") xo = (i + 0.5) / scale;
    else if (ctm == "tf_crop_and_resize") {
      xo = out_len > 1 ? roi_start * (in_len - 1) + i * (roi_end - roi_start) * (in_len - 1) / double(out_len - 1)
                       : 0.5 * (roi_start + roi_end) * (in_len - 1);
      if (xo < 0 || xo > in_len - 1) outside[i] = true;
    } else c.invalid("coordinate_transformation_mode '" + ctm + "' is not supported");
    if (mode == "nearest") {
      double f = std::floor(xo);
      int64_t n;
      if (nearest_mode == "round_prefer_floor") n = (xo - f == 0.5) ? int64_t(f) : int64_t(std::round(xo));
      else if (nearest_mode == "round_prefer_ceil") n = (xo - f == 0.5) ? int64_t(f) + 1 : int64_t(std::round(xo));
      else if (nearest_mode == "floor") n = int64_t(f);
      else if (nearest_mode == "ceil") n = int64_t(std::ceil(xo));
      else c.invalid("nearest_mode '" + nearest_mode + "' is not supported");
      idx[0][i] = clampi(n);
      wts[0][i] = 1.0;
    } else if (mode == "linear") {
      double xc = std::min(std::max(xo, 0.0), double(in_len - 1));
      int64_t x0 = int64_t(std::floor(xc));
      double t = xc - x0;
      idx[0][i] = clampi(x0);
      idx[1][i] = clampi(x0 + 1);
      wts[0][i] = 1 - t;
      wts[1][i] = t;
    } else {
      int64_t x0 = int64_t(std::floor(xo));
      double t = xo - x0;
      auto w = [&](double d) {
        d = std::fabs(d);
        if (d <= 1) return ((cubic_a + 2) * d - (cubic_a + 3)) * d * d + 1;
        if (d < 2) return ((cubic_a * d - 5 * cubic_a) * d + 8 * cubic_a) * d - 4 * cubic_a;
        return 0.0;
      };
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t src = x0 - 1 + k;
        double wk = w(t + 1 - k);
        if (exclude_outside && (src < 0 || src >= in_len)) wk = 0;
        idx[k][i] = clampi(src);
        wts[k][i] = wk;
        total += wk;
      }
      if (exclude_outside && total != 0)
        for (int k = 0; k < 4; ++k) wts[k][i] /= total;
    }
  }
  std::vector<int64_t> wshape(x.dim(), 1);
  wshape[axis] = out_len;
  Tensor y;
  for (int k = 0; k < taps; ++k) {
    Tensor sel = index_select(x, axis, from_vector(idx[k], {out_len}));
    Tensor term = taps == 1 ? sel : mul(sel, reshape(from_vector(wts[k], {out_len}).to(x.dtype()), wshape));
    y = k == 0 ? term : add(y, term);
  }
  if (std::find(outside.begin(), outside.end(), true) != outside.end()) {
    std::vector<uint8_t> m(outside.begin(), outside.end());
    Tensor mask = reshape(from_vector(m, {out_len}).to(DType::Bool), wshape);
    y = where(mask, full_like(y, extrapolation), y);
  }
  return as_dtype(y, x.dtype());
}

Tensor resize(Ctx& c, bool upsample) {
  const Tensor& x = c.in(0);
  const int64_t r = x.dim();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  std::vector<double> roi;
  if (upsample) {
    scales = c.opset() < 9 ? c.attr_floats("scales") : c.doubles(1);
  } else if (c.opset() < 11) {
    scales = c.doubles(1);
  } else {
    if (c.has(1) && c.in(1).numel() > 0) roi = c.doubles(1);
    if (c.has(2) && c.in(2).numel() > 0) scales = c.doubles(2);
    if (c.has(3) && c.in(3).numel() > 0) sizes = c.ints(3);
  }
  const bool from_scales = sizes.empty();
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != r) c.invalid("sizes must hold one value per input dim");
    scales.clear();
    for (int64_t d = 0; d < r; ++d) scales.push_back(double(sizes[d]) / double(x.size(d)));
  } else {
    if (static_cast<int64_t>(scales.size()) != r) c.invalid("scales must hold one value per input dim");
    for (int64_t d = 0; d < r; ++d) {
      if (!(scales[d] > 0)) c.invalid("scales must be positive");
      sizes.push_back(static_cast<int64_t>(std::floor(x.size(d) * scales[d])));
    }
  }
  std::string mode = c.attr_s("mode", "nearest");
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";  // Upsample-7 spellings
  if (mode != "nearest" && mode != "linear" && mode != "cubic") c.invalid("mode '" + mode + "' is not supported");
  std::string ctm = upsample || c.opset() < 11 ? "asymmetric" : c.attr_s("coordinate_transformation_mode", "half_pixel");
  std::string nm = upsample || c.opset() < 11 ? "floor" : c.attr_s("nearest_mode", "round_prefer_floor");
  if (c.has_attr("antialias") && c.attr_i("antialias", 0)) c.unsupported("antialias");
  Tensor y = x;
  for (int64_t d = 0; d < r; ++d) {
    if (sizes[d] == x.size(d) && scales[d] == 1.0 && ctm != "tf_crop_and_resize") continue;
    double rs = roi.size() == size_t(2 * r) ? roi[d] : 0.0, re = roi.size() == size_t(2 * r) ? roi[d + r] : 1.0;
    // align_corners divides by the unrounded resized length (in * scale) when scales are given.
    double len_f = from_scales ? x.size(d) * scales[d] : double(sizes[d]);
    y = resize_axis(c, y, d, sizes[d], len_f, scales[d], mode, ctm, nm, c.attr_f("cubic_coeff_a", -0.75),
                    c.attr_i("exclude_outside", 0) != 0, rs, re, c.attr_f("extrapolation_value", 0.0));
  }
  return y;
}

// ---------------------------------------------------------------- recurrent layers
// An RNN activation by ONNX name (with its alpha / beta where it takes them).
Tensor activation(const Ctx& c, const std::string& name, const Tensor& x, double alpha, double beta) {
  if (name == "Sigmoid") return sigmoid(x);
  if (name == "Tanh") return tanh(x);
  if (name == "Relu") return relu(x);
  if (name == "LeakyRelu") return leaky_relu(x, alpha);
  if (name == "HardSigmoid") return clamp(add(mul(x, alpha), beta), Scalar(0.0), Scalar(1.0));
  if (name == "Affine") return add(mul(x, alpha), beta);
  if (name == "ScaledTanh") return mul(tanh(mul(x, beta)), alpha);
  if (name == "Elu") return elu(x, alpha);
  if (name == "Softsign") return div(x, add(abs(x), 1));
  if (name == "Softplus") return softplus(x);
  c.unsupported("activation '" + name + "'");
}

// RNN (gates 1), GRU (3: z, r, h) and LSTM (4: i, o, f, c) over X [seq, batch, input]
// (layout 0) or [batch, seq, input] (layout 1), forward / reverse / bidirectional, with
// sequence_lens (steps past a sequence's length keep its state and output zeros).
Outs recurrent(Ctx& c, int gates) {
  const int64_t layout = c.attr_i("layout", 0);
  Tensor x = layout ? transpose(c.in(0), 0, 1) : c.in(0);
  const Tensor& W = c.in(1);
  const Tensor& R = c.in(2);
  const int64_t seq = x.size(0), batch = x.size(1);
  const int64_t hidden = c.attr_i("hidden_size", R.size(-1));
  const std::string dir = c.attr_s("direction", "forward");
  const int64_t ndir = dir == "bidirectional" ? 2 : 1;
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") c.invalid("direction '" + dir + "'");
  if (c.attr_i("input_forget", 0)) c.unsupported("input_forget 1");
  const double clip = c.attr_f("clip", 0.0);
  std::vector<std::string> acts = c.has_attr("activations") ? c.attr("activations")->strings : std::vector<std::string>{};
  std::vector<double> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  const int nact = gates == 4 ? 3 : gates == 3 ? 2 : 1;
  if (acts.empty()) {
    if (gates == 4) acts = {"Sigmoid", "Tanh", "Tanh"};
    else if (gates == 3) acts = {"Sigmoid", "Tanh"};
    else acts = {"Tanh"};
    if (ndir == 2) acts.insert(acts.end(), acts.begin(), acts.end());
  }
  if (static_cast<int64_t>(acts.size()) != nact * ndir) c.invalid("activations must name " + std::to_string(nact * ndir));
  std::vector<int64_t> lens;
  if (c.has(4)) lens = c.ints(4);
  Tensor mask;  // [seq, batch, 1], 1 where t < len
  if (!lens.empty()) {
    std::vector<float> m(seq * batch);
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t b = 0; b < batch; ++b) m[t * batch + b] = t < lens[b] ? 1.0f : 0.0f;
    mask = from_vector(m, {seq, batch, 1}).to(x.dtype());
  }
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < ndir; ++d) {
    const bool reverse = dir == "reverse" || d == 1;
    auto act = [&](int k, const Tensor& v) {
      size_t i = d * nact + k;
      // activation_alpha / beta hold values only for the activations that take them;
      // the suite's models give them for every activation or none.
      double a = i < alphas.size() ? alphas[i] : (acts[i] == "LeakyRelu" ? 0.01 : acts[i] == "HardSigmoid" ? 0.2 : 1.0);
      double b = i < betas.size() ? betas[i] : (acts[i] == "HardSigmoid" ? 0.5 : 1.0);
      return activation(c, acts[i], v, a, b);
    };
    auto clipped = [&](const Tensor& v) { return clip > 0 ? clamp(v, Scalar(-clip), Scalar(clip)) : v; };
    Tensor Wd = select(W, 0, d), Rd = select(R, 0, d);
    Tensor wb, rb;
    if (c.has(3)) {
      Tensor Bd = select(c.in(3), 0, d);
      wb = narrow(Bd, 0, 0, gates * hidden);
      rb = narrow(Bd, 0, gates * hidden, gates * hidden);
    }
    Tensor h = c.has(5) ? select(c.in(5), 0, d) : zeros({batch, hidden}, x.dtype());
    Tensor cell;
    if (gates == 4) cell = c.has(6) ? select(c.in(6), 0, d) : zeros({batch, hidden}, x.dtype());
    Tensor P = gates == 4 && c.has(7) ? select(c.in(7), 0, d) : Tensor();
    // Input projections for every step at once: [seq, batch, gates * hidden].
    Tensor xw = matmul(x, t(Wd));
    if (wb.defined()) xw = add(xw, wb);
    std::vector<Tensor> out(seq);
    for (int64_t step = 0; step < seq; ++step) {
      const int64_t tt = reverse ? seq - 1 - step : step;
      Tensor xt = select(xw, 0, tt);
      Tensor hr = matmul(h, t(Rd));
      if (rb.defined()) hr = add(hr, rb);
      Tensor hn, cn;
      if (gates == 1) {
        hn = act(0, clipped(add(xt, hr)));
      } else if (gates == 3) {
        auto xg = split(xt, hidden, 1);
        auto hg = split(hr, hidden, 1);
        Tensor z = act(0, clipped(add(xg[0], hg[0])));
        Tensor r = act(0, clipped(add(xg[1], hg[1])));
        Tensor cand;
        if (c.attr_i("linear_before_reset", 0)) {
          cand = act(1, clipped(add(xg[2], mul(r, hg[2]))));
        } else {
          Tensor rh = matmul(mul(r, h), t(narrow(Rd, 0, 2 * hidden, hidden)));
          if (rb.defined()) rh = add(rh, narrow(rb, 0, 2 * hidden, hidden));
          cand = act(1, clipped(add(xg[2], rh)));
        }
        hn = add(mul(add(neg(z), 1), cand), mul(z, h));
      } else {
        Tensor g = add(xt, hr);
        auto gs = split(g, hidden, 1);  // i, o, f, c
        Tensor gi = gs[0], go = gs[1], gf = gs[2];
        if (P.defined()) {
          gi = add(gi, mul(narrow(P, 0, 0, hidden), cell));
          gf = add(gf, mul(narrow(P, 0, 2 * hidden, hidden), cell));
        }
        Tensor i = act(0, clipped(gi)), f = act(0, clipped(gf)), cc = act(1, clipped(gs[3]));
        cn = add(mul(f, cell), mul(i, cc));
        if (P.defined()) go = add(go, mul(narrow(P, 0, hidden, hidden), cn));
        Tensor o = act(0, clipped(go));
        hn = mul(o, act(2, cn));
      }
      if (mask.defined()) {
        Tensor m = select(mask, 0, tt);
        hn = add(mul(hn, m), mul(h, add(neg(m), 1)));
        if (cn.defined()) cn = add(mul(cn, m), mul(cell, add(neg(m), 1)));
        out[tt] = mul(hn, m);
      } else {
        out[tt] = hn;
      }
      h = hn;
      if (cn.defined()) cell = cn;
    }
    ys.push_back(stack(out, 0));  // [seq, batch, hidden]
    hs.push_back(h);
    if (gates == 4) cs.push_back(cell);
  }
  Tensor Y = stack(ys, 1);  // [seq, ndir, batch, hidden]
  Tensor Yh = stack(hs, 0);
  if (layout) {
    Y = permute(Y, {2, 0, 1, 3});
    Yh = transpose(Yh, 0, 1);
  }
  Outs r = {Y, Yh};
  if (gates == 4) {
    Tensor Yc = stack(cs, 0);
    r.push_back(layout ? transpose(Yc, 0, 1) : Yc);
  }
  return r;
}

// ---------------------------------------------------------------- quantization
// Scale / zero point broadcast along `axis` of x (per-axis) or scalars (per-tensor).
Tensor along_axis(const Tensor& v, const Tensor& x, int64_t axis) {
  if (v.dim() == 0 || v.numel() == 1) return reshape(v, {});
  std::vector<int64_t> shape(x.dim(), 1);
  shape[axis] = v.numel();
  return reshape(v, shape);
}

// Rounds half to even and saturates to `d` (uint8 or int8), as QuantizeLinear does.
Tensor saturate_cast(const Tensor& v, DType d) {
  double lo = d == DType::UInt8 ? 0 : -128, hi = d == DType::UInt8 ? 255 : 127;
  return clamp(round(v), Scalar(lo), Scalar(hi)).to(d);
}

Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor& zp, int64_t axis) {
  DType d = zp.defined() ? zp.dtype() : DType::UInt8;
  Tensor q = div(x.to(DType::Float32), along_axis(scale, x, axis));
  if (zp.defined()) q = add(round(q), along_axis(zp, x, axis).to(DType::Float32));
  return saturate_cast(q, d);
}

Tensor dequantize(const Tensor& x, const Tensor& scale, const Tensor& zp, int64_t axis) {
  Tensor v = x.to(DType::Float32);
  if (zp.defined()) v = sub(v, along_axis(zp, x, axis).to(DType::Float32));
  return mul(v, along_axis(scale, x, axis));
}

Tensor int_minus_zp(const Tensor& v, const Tensor& zp, int64_t axis) {
  Tensor r = v.to(DType::Int32);
  if (zp.defined()) r = sub(r, along_axis(zp, v, axis).to(DType::Int32));
  return r;
}

// ---------------------------------------------------------------- host-side ops
// Unique (data-dependent, so computed on the host): slices along `axis` (or elements of
// the flattened input) compared exactly; Y in sorted or first-occurrence order, with
// the first-occurrence indices, the inverse indices and the counts.
Outs unique_onnx(Ctx& c) {
  Tensor x = c.in(0);
  const bool has_axis = c.has_attr("axis");
  int64_t axis = 0;
  if (has_axis) axis = norm_axis(c, c.attr_i("axis", 0), x.dim());
  else x = reshape(x, {-1});
  Tensor rows = reshape(movedim(x, axis, 0), {x.size(axis), -1}).to(DType::Float64).contiguous();
  const int64_t n = rows.size(0), w = rows.numel() / std::max<int64_t>(n, 1);
  std::vector<double> v(rows.numel());
  if (!v.empty()) std::memcpy(v.data(), rows.data_ptr(), v.size() * sizeof(double));
  auto less = [&](int64_t a, int64_t b) {
    return std::lexicographical_compare(v.begin() + a * w, v.begin() + (a + 1) * w, v.begin() + b * w, v.begin() + (b + 1) * w);
  };
  auto same = [&](int64_t a, int64_t b) { return std::equal(v.begin() + a * w, v.begin() + (a + 1) * w, v.begin() + b * w); };
  std::vector<int64_t> first;  // first occurrence of each distinct slice, in order of appearance
  std::vector<int64_t> group(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = -1;
    for (size_t k = 0; k < first.size() && g < 0; ++k)
      if (same(first[k], i)) g = static_cast<int64_t>(k);
    if (g < 0) {
      g = static_cast<int64_t>(first.size());
      first.push_back(i);
    }
    group[i] = g;
  }
  std::vector<int64_t> order(first.size());
  std::iota(order.begin(), order.end(), 0);
  if (c.attr_i("sorted", 1))
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return less(first[a], first[b]); });
  std::vector<int64_t> rank(order.size()), idx, counts(order.size(), 0), inverse(n);
  for (size_t k = 0; k < order.size(); ++k) {
    rank[order[k]] = static_cast<int64_t>(k);
    idx.push_back(first[order[k]]);
  }
  for (int64_t i = 0; i < n; ++i) {
    inverse[i] = rank[group[i]];
    ++counts[inverse[i]];
  }
  const int64_t u = static_cast<int64_t>(idx.size());
  Tensor it = from_vector(idx, {u});
  return {index_select(x, axis, it), it, from_vector(inverse, {n}), from_vector(counts, {u})};
}

// NonMaxSuppression on the host: per batch and class, boxes by descending score above
// score_threshold, each kept unless its IoU with a kept box exceeds iou_threshold, at
// most max_output_boxes_per_class; rows (batch, class, box) as int64 [K, 3].
Tensor non_max_suppression(Ctx& c) {
  Tensor boxes = c.in(0).to(DType::Float64).contiguous(), scores = c.in(1).to(DType::Float64).contiguous();
  if (boxes.dim() != 3 || boxes.size(2) != 4 || scores.dim() != 3 || scores.size(0) != boxes.size(0) ||
      scores.size(2) != boxes.size(1))
    c.invalid("boxes must be [B, N, 4] and scores [B, C, N]");
  const int64_t max_out = c.has(2) && c.in(2).numel() ? c.ints(2).at(0) : 0;
  const double iou_t = c.has(3) && c.in(3).numel() ? c.doubles(3).at(0) : 0.0;
  const bool has_st = c.has(4) && c.in(4).numel();
  const double st = has_st ? c.doubles(4).at(0) : 0.0;
  const bool center = c.attr_i("center_point_box", 0) != 0;
  const int64_t B = boxes.size(0), N = boxes.size(1), C = scores.size(1);
  const double* bx = boxes.data_ptr<double>();
  const double* sc = scores.data_ptr<double>();
  auto corners = [&](int64_t b, int64_t i, double out[4]) {  // y1, x1, y2, x2 with y1 <= y2
    const double* p = bx + (b * N + i) * 4;
    if (center) {
      out[0] = p[1] - p[3] / 2;
      out[1] = p[0] - p[2] / 2;
      out[2] = p[1] + p[3] / 2;
      out[3] = p[0] + p[2] / 2;
    } else {
      out[0] = std::min(p[0], p[2]);
      out[1] = std::min(p[1], p[3]);
      out[2] = std::max(p[0], p[2]);
      out[3] = std::max(p[1], p[3]);
    }
  };
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    double a[4], d[4];
    corners(b, i, a);
    corners(b, j, d);
    double ih = std::min(a[2], d[2]) - std::max(a[0], d[0]), iw = std::min(a[3], d[3]) - std::max(a[1], d[1]);
    if (ih <= 0 || iw <= 0) return 0.0;
    double inter = ih * iw, area = (a[2] - a[0]) * (a[3] - a[1]) + (d[2] - d[0]) * (d[3] - d[1]) - inter;
    return area <= 0 ? 0.0 : inter / area;
  };
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < C; ++k) {
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!has_st || sc[(b * C + k) * N + i] > st) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t i, int64_t j) { return sc[(b * C + k) * N + i] > sc[(b * C + k) * N + j]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t j : kept) ok = ok && !(iou(b, i, j) > iou_t);
        if (ok) kept.push_back(i);
      }
      for (int64_t i : kept) rows.insert(rows.end(), {b, k, i});
    }
  return from_vector(rows, {static_cast<int64_t>(rows.size() / 3), 3});
}

// Hann, Hamming and Blackman windows: sum_k a_k cos(2 pi k n / D) over n < size, with
// D = size (periodic) or size - 1 (symmetric).
Tensor window(Ctx& c, const std::vector<double>& coeffs) {
  const int64_t n = c.ints(0).at(0);
  if (n < 0) c.invalid("size must be non-negative");
  const double denom = c.attr_i("periodic", 1) ? double(n) : double(n - 1);
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0;
    for (size_t k = 0; k < coeffs.size(); ++k) acc += coeffs[k] * std::cos(2 * M_PI * double(k) * double(i) / denom);
    v[i] = acc;
  }
  return from_vector(v, {n}).to(dtype_from_onnx(c.attr_i("output_datatype", 1), c.where()));
}

// ---------------------------------------------------------------- GridSample
// Reflects pixel coordinates into [low, high] (twice_low / twice_high are doubled bounds,
// PyTorch's convention), as GridSample's reflection padding does.
Tensor reflect_coords(const Tensor& x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return zeros_like(x);
  const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  Tensor d = abs(sub(x, lo));
  Tensor extra = fmod(d, span);
  Tensor flips = floor(div(d, span));
  Tensor even = eq(remainder(flips, 2.0), 0.0);
  return where(even, add(extra, lo), add(neg(extra), span + lo));
}

// Values of x [N, C, H, W] at integer pixels (iy, ix) [N, Ho, Wo] (float tensors holding
// integers): [N, C, Ho, Wo]; pixels outside the image give 0.
Tensor sample_pixels(const Tensor& x, const Tensor& iy, const Tensor& ix) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  Tensor inside = logical_and(logical_and(ge(ix, 0.0), le(ix, double(W - 1))),
                              logical_and(ge(iy, 0.0), le(iy, double(H - 1))));
  Tensor cx = clamp(ix, Scalar(0.0), Scalar(double(W - 1))).to(DType::Int64);
  Tensor cy = clamp(iy, Scalar(0.0), Scalar(double(H - 1))).to(DType::Int64);
  Tensor lin = reshape(add(mul(cy, W), cx), {N, 1, -1});
  Tensor vals = gather(reshape(x, {N, C, H * W}), 2, expand(lin, {N, C, lin.size(2)}).contiguous());
  vals = reshape(vals, {N, C, iy.size(1), iy.size(2)});
  return mul(vals, unsqueeze(inside, 1).to(x.dtype()));
}

Tensor grid_sample_onnx(Ctx& c) {
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  if (x.dim() != 4 || grid.dim() != 4 || grid.size(3) != 2) c.unsupported("only 4-D input with a [N, H, W, 2] grid");
  const std::string mode = c.attr_s("mode", "bilinear"), padding = c.attr_s("padding_mode", "zeros");
  const bool align = c.attr_i("align_corners", 0) != 0;
  const int64_t H = x.size(2), W = x.size(3);
  auto unnormalize = [&](const Tensor& g, int64_t size) {
    return align ? mul(add(g, 1.0), double(size - 1) / 2) : div(sub(mul(add(g, 1.0), double(size)), 1.0), 2.0);
  };
  auto pad_coords = [&](Tensor v, int64_t size) {
    if (padding == "border") return clamp(v, Scalar(0.0), Scalar(double(size - 1)));
    if (padding == "reflection") {
      v = align ? reflect_coords(v, 0, 2.0 * (size - 1)) : reflect_coords(v, -1, 2.0 * size - 1);
      return clamp(v, Scalar(0.0), Scalar(double(size - 1)));
    }
    if (padding != "zeros") c.invalid("padding_mode '" + padding + "' is not zeros, border or reflection");
    return v;
  };
  Tensor g = grid.to(x.dtype());
  Tensor fx = unnormalize(select(g, 3, 0), W), fy = unnormalize(select(g, 3, 1), H);
  if (mode == "nearest") return sample_pixels(x, round(pad_coords(fy, H)), round(pad_coords(fx, W)));
  if (mode == "bilinear") {
    fx = pad_coords(fx, W);
    fy = pad_coords(fy, H);
    Tensor x0 = floor(fx), y0 = floor(fy);
    Tensor wx = unsqueeze(sub(fx, x0), 1), wy = unsqueeze(sub(fy, y0), 1);
    Tensor x1 = add(x0, 1.0), y1 = add(y0, 1.0);
    Tensor top = add(mul(sample_pixels(x, y0, x0), add(neg(wx), 1.0)), mul(sample_pixels(x, y0, x1), wx));
    Tensor bot = add(mul(sample_pixels(x, y1, x0), add(neg(wx), 1.0)), mul(sample_pixels(x, y1, x1), wx));
    return add(mul(top, add(neg(wy), 1.0)), mul(bot, wy));
  }
  if (mode == "bicubic") {
    // 4 x 4 taps around floor(coordinate), cubic convolution weights (A = -0.75); the
    // padding applies to each tap's coordinate.
    Tensor x0 = floor(fx), y0 = floor(fy);
    Tensor tx = sub(fx, x0), ty = sub(fy, y0);
    const double A = -0.75;
    auto weights = [&](const Tensor& t) {
      auto near = [&](const Tensor& d) { return add(mul(mul(sub(mul(d, A + 2), A + 3), d), d), 1.0); };
      auto far = [&](const Tensor& d) { return sub(mul(add(mul(sub(mul(d, A), 5 * A), d), 8 * A), d), 4 * A); };
      return std::vector<Tensor>{far(add(t, 1.0)), near(t), near(add(neg(t), 1.0)), far(add(neg(t), 2.0))};
    };
    auto wxs = weights(tx), wys = weights(ty);
    Tensor out;
    for (int j = 0; j < 4; ++j) {
      Tensor row;
      Tensor yy = pad_coords(add(y0, double(j - 1)), H);
      for (int i = 0; i < 4; ++i) {
        Tensor xx = pad_coords(add(x0, double(i - 1)), W);
        Tensor v = mul(sample_pixels(x, yy, xx), unsqueeze(wxs[i], 1));
        row = i == 0 ? v : add(row, v);
      }
      Tensor v = mul(row, unsqueeze(wys[j], 1));
      out = j == 0 ? v : add(out, v);
    }
    return out;
  }
  c.invalid("mode '" + mode + "' is not bilinear, nearest or bicubic");
}

// Det: determinants of the trailing n x n matrices of x [..., n, n] by Gaussian elimination
// with partial pivoting (LU), in tensor ops only (no host reads, so it captures): at step
// k the row with the largest |a[i, k]|, i >= k, is swapped into row k (each swap flips
// the sign), the pivot multiplies the determinant and rows below are eliminated. A zero
// pivot (a singular matrix) gives 0; it is replaced by 1 in the division so that no NaN
// appears (the column below it is all zero then).
Tensor det(const Ctx& c, const Tensor& x0) {
  if (x0.dim() < 2 || x0.size(-1) != x0.size(-2))
    c.invalid("needs square matrices [..., n, n], got rank " + std::to_string(x0.dim()));
  if (!is_floating_point(x0.dtype())) c.invalid("needs a floating-point input");
  const int64_t n = x0.size(-1);
  Tensor a = x0.contiguous();
  std::vector<int64_t> batch(x0.sizes().begin(), x0.sizes().end() - 2);
  Tensor result = ones(batch, x0.dtype());
  Tensor rows = arange(n);  // int64 [n]
  for (int64_t k = 0; k < n; ++k) {
    Tensor col = abs(narrow(select(a, -1, k), -1, k, n - k));         // [..., n - k]
    Tensor p = add(argmax(col, -1, /*keepdim=*/true), k);              // [..., 1] int64
    // perm[i] = p if i == k, k if i == p, i otherwise; rows gathered by perm.
    Tensor perm = where(eq(rows, k), p, where(eq(rows, p), full({}, k, DType::Int64), rows));  // [..., n]
    std::vector<int64_t> full_shape = batch;
    full_shape.push_back(n);
    full_shape.push_back(n);
    a = gather(a, -2, expand(unsqueeze(perm, -1), full_shape));
    result = where(eq(squeeze(p, -1), k), result, neg(result));
    Tensor pivot = select(select(a, -2, k), -1, k);                    // [...]
    result = mul(result, pivot);
    if (k + 1 == n) break;
    Tensor safe = where(eq(pivot, 0), ones_like(pivot), pivot);
    Tensor below = narrow(a, -2, k + 1, n - k - 1);                    // [..., n-k-1, n]
    Tensor factor = div(select(below, -1, k), unsqueeze(safe, -1));    // [..., n-k-1]
    Tensor row_k = unsqueeze(select(a, -2, k), -2);                    // [..., 1, n]
    Tensor updated = sub(below, mul(unsqueeze(factor, -1), row_k));
    a = cat({narrow(a, -2, 0, k + 1), updated}, -2);
  }
  return result;
}

// RoiAlign (opset 10 / 16): for each region of interest, output_height x output_width bins,
// each the average (or maximum) of sampling_ratio^2 bilinear samples (sampling_ratio 0:
// ceil(roi size / bins) per axis). The sample positions and bilinear weights are computed
// on the host from `rois` (a data read); the values are gathered from X with tensor ops.
// Sampling follows ONNX's reference: a sample outside [-1, size] contributes 0, one in
// [-1, 0) is clamped to 0, and the last row / column repeats; max mode takes the largest
// weighted corner of each sample, then the largest sample.
Outs roi_align(Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.dim() != 4) c.invalid("needs X [N, C, H, W]");
  if (!is_floating_point(x.dtype())) c.invalid("needs a floating-point X");
  const Tensor& rois_t = c.in(1);
  if (rois_t.dim() != 2 || rois_t.size(1) != 4) c.invalid("rois must be [num_rois, 4]");
  std::vector<double> rois = c.doubles(1);
  std::vector<int64_t> bidx = c.ints(2);
  const int64_t nr = rois_t.size(0);
  if (static_cast<int64_t>(bidx.size()) != nr) c.invalid("batch_indices must hold one index per roi");
  const int64_t oh = c.attr_i("output_height", 1), ow = c.attr_i("output_width", 1), ratio = c.attr_i("sampling_ratio", 0);
  if (oh <= 0 || ow <= 0 || ratio < 0 || oh > 4096 || ow > 4096) c.invalid("output_height/width must be in [1, 4096], sampling_ratio >= 0");
  const double scale = c.attr_f("spatial_scale", 1.0);
  const std::string ctm = c.attr_s("coordinate_transformation_mode", c.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") c.invalid("coordinate_transformation_mode '" + ctm + "'");
  const std::string mode = c.attr_s("mode", "avg");
  if (mode != "avg" && mode != "max") c.invalid("mode '" + mode + "' is not avg or max");
  const bool half = ctm == "half_pixel";
  const int64_t nb = x.size(0), ch = x.size(1), H = x.size(2), W = x.size(3);
  Tensor flat = reshape(x, {nb, ch, H * W});
  std::vector<Tensor> outs;
  for (int64_t r = 0; r < nr; ++r) {
    if (bidx[r] < 0 || bidx[r] >= nb) c.invalid("batch index " + std::to_string(bidx[r]) + " is out of range");
    const double off = half ? 0.5 : 0.0;
    const double x1 = rois[r * 4] * scale - off, y1 = rois[r * 4 + 1] * scale - off;
    double rw = rois[r * 4 + 2] * scale - off - x1, rh = rois[r * 4 + 3] * scale - off - y1;
    if (!half) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
    const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
    if (gh < 0 || gw < 0 || gh > 1024 || gw > 1024) c.invalid("roi " + std::to_string(r) + " needs an absurd sampling grid");
    const int64_t samples = std::max<int64_t>(gh * gw, 1);
    if (oh * ow * samples > (int64_t{1} << 24))
      c.invalid("roi " + std::to_string(r) + ": " + std::to_string(oh * ow) + " bins of " + std::to_string(samples) +
                " samples exceed 2^24 samples");
    // Per bin, per sample, per corner: a flat index into H * W and a weight.
    std::vector<int64_t> idx(static_cast<size_t>(oh * ow * samples * 4), 0);
    std::vector<double> wt(idx.size(), 0.0);
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double yy = y1 + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
            double xx = x1 + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
            const size_t base = static_cast<size_t>((((ph * ow + pw) * samples) + iy * gw + ix) * 4);
            if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) continue;
            yy = std::max(yy, 0.0);
            xx = std::max(xx, 0.0);
            int64_t ylo = static_cast<int64_t>(yy), xlo = static_cast<int64_t>(xx), yhi, xhi;
            if (ylo >= H - 1) { yhi = ylo = H - 1; yy = static_cast<double>(ylo); } else { yhi = ylo + 1; }
            if (xlo >= W - 1) { xhi = xlo = W - 1; xx = static_cast<double>(xlo); } else { xhi = xlo + 1; }
            const double ly = yy - ylo, lx = xx - xlo, hy = 1.0 - ly, hx = 1.0 - lx;
            const int64_t corner[4] = {ylo * W + xlo, ylo * W + xhi, yhi * W + xlo, yhi * W + xhi};
            const double w[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
            for (int k = 0; k < 4; ++k) {
              idx[base + k] = corner[k];
              wt[base + k] = w[k];
            }
          }
    Tensor vals = index_select(select(flat, 0, bidx[r]), 1, from_vector(idx, {static_cast<int64_t>(idx.size())}));
    vals = reshape(vals, {ch, oh, ow, samples, 4});
    Tensor weighted = mul(vals, from_vector(wt, {oh, ow, samples, 4}).to(x.dtype()));
    Tensor y = mode == "avg" ? div(sum(weighted, {3, 4}), static_cast<double>(samples))
                             : amax(amax(weighted, {4}), {3});
    outs.push_back(y);
  }
  if (outs.empty()) return {empty({0, ch, oh, ow}, x.dtype())};
  return {stack(outs, 0)};
}

// ---------------------------------------------------------------- signal processing
// DFT of the real and imaginary parts xr, xi [..., n] (last axis): X[k] = sum_m x[m]
// exp(-+2 pi i k m / n), as products with cos / sin matrices [n, bins] built on the host
// in float64 (k < bins: all n, or n / 2 + 1 one-sided); `inverse` uses exp(+...) and
// divides by n. Returns [..., bins, 2] (real, imaginary).
// Longest DFT tandem builds a matrix for (n x n float64 = 512 MiB at this size).
constexpr int64_t kMaxDftLength = 8192;

Tensor dft_last(const Tensor& xr, const Tensor* xi, int64_t n, int64_t bins, bool inverse) {
  std::vector<double> cs(static_cast<size_t>(n * bins)), sn(static_cast<size_t>(n * bins));
  const double two_pi = 2.0 * std::acos(-1.0);
  for (int64_t m = 0; m < n; ++m)
    for (int64_t k = 0; k < bins; ++k) {
      // (k * m) mod n keeps the angle small, so cos / sin stay exact for large n.
      const double ang = two_pi * static_cast<double>((k * m) % n) / static_cast<double>(n);
      cs[m * bins + k] = std::cos(ang);
      sn[m * bins + k] = std::sin(ang);
    }
  const DType dt = xr.dtype();
  Tensor c = from_vector(cs, {n, bins}).to(dt), sm = from_vector(sn, {n, bins}).to(dt);
  // forward: (xr + i xi)(cos - i sin); inverse: (xr + i xi)(cos + i sin).
  Tensor re = matmul(xr, c), im = neg(matmul(xr, sm));
  if (inverse) im = neg(im);
  if (xi) {
    re = inverse ? sub(re, matmul(*xi, sm)) : add(re, matmul(*xi, sm));
    im = add(im, matmul(*xi, c));
  }
  if (inverse) {
    re = div(re, static_cast<double>(n));
    im = div(im, static_cast<double>(n));
  }
  return stack({re, im}, -1);
}

Outs dft(Ctx& c) {
  const Tensor& x = c.in(0);
  const int64_t r = x.dim();
  if (r < 2 || (x.size(-1) != 1 && x.size(-1) != 2))
    c.invalid("needs an input [..., signal, 1 or 2] (real or complex), got rank " + std::to_string(r));
  if (!is_floating_point(x.dtype())) c.invalid("needs a floating-point input");
  int64_t axis = c.attr_i("axis", 1);
  if (axis < -r || axis >= r - 1 || axis == -1) c.invalid("axis " + std::to_string(axis) + " is out of range (the last dim holds real/imaginary)");
  if (axis < 0) axis += r;
  const bool inverse = c.attr_i("inverse", 0) != 0, onesided = c.attr_i("onesided", 0) != 0;
  Tensor xr = movedim(select(x, -1, 0), axis, -1);
  Tensor xi;
  if (x.size(-1) == 2) xi = movedim(select(x, -1, 1), axis, -1);
  int64_t n = xr.size(-1);
  if (c.has(1)) {
    std::vector<int64_t> len = c.ints(1);
    if (len.size() != 1 || len[0] <= 0) c.invalid("dft_length must be one positive integer");
    if (len[0] > (int64_t{1} << 24)) c.invalid("dft_length " + std::to_string(len[0]) + " exceeds 2^24");
    auto fit = [&](const Tensor& t) {
      if (len[0] <= n) return narrow(t, -1, 0, len[0]);
      std::vector<int64_t> pads{0, len[0] - n};
      return pad(t, pads, "constant", 0.0);
    };
    xr = fit(xr);
    if (xi.defined()) xi = fit(xi);
    n = len[0];
  }
  const int64_t bins = onesided ? n / 2 + 1 : n;
  if (n > kMaxDftLength)
    c.unsupported("a DFT of length " + std::to_string(n) +
                  " (more than 8192: tandem multiplies by an n x n matrix, it has no FFT)");
  Tensor y = dft_last(xr, xi.defined() ? &xi : nullptr, n, bins, inverse);  // [..., bins, 2]
  return {movedim(y, -2, axis)};
}

Outs stft(Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.dim() != 3 || (x.size(2) != 1 && x.size(2) != 2))
    c.invalid("needs a signal [batch, length, 1 or 2]");
  if (!is_floating_point(x.dtype())) c.invalid("needs a floating-point signal");
  std::vector<int64_t> st = c.ints(1);
  if (st.size() != 1 || st[0] <= 0) c.invalid("frame_step must be one positive integer");
  const int64_t step = st[0];
  Tensor window;
  int64_t len = -1;
  if (c.has(2)) {
    window = c.in(2);
    if (window.dim() != 1) c.invalid("window must be 1-D");
    len = window.size(0);
  }
  if (c.has(3)) {
    std::vector<int64_t> fl = c.ints(3);
    if (fl.size() != 1 || fl[0] <= 0) c.invalid("frame_length must be one positive integer");
    if (len >= 0 && fl[0] != len) c.invalid("frame_length differs from the window's length");
    len = fl[0];
  }
  if (len < 0) c.invalid("needs a window or a frame_length");
  const int64_t total = x.size(1);
  if (len > total) c.invalid("the frame is longer than the signal");
  if (len > kMaxDftLength)
    c.unsupported("frames of " + std::to_string(len) +
                  " samples (more than 8192: tandem multiplies by an n x n matrix, it has no FFT)");
  const int64_t frames = (total - len) / step + 1;
  const bool onesided = c.attr_i("onesided", 1) != 0;
  // frames [batch, frames, len] gathered with index frame * step + j.
  Tensor idx = add(unsqueeze(mul(arange(frames), step), 1), unsqueeze(arange(len), 0));  // [frames, len]
  auto framed = [&](const Tensor& part) {  // part [batch, length]
    Tensor f = reshape(index_select(part, 1, reshape(idx, {frames * len})), {x.size(0), frames, len});
    return window.defined() ? mul(f, as_dtype(window, f.dtype())) : f;
  };
  Tensor xr = framed(select(x, 2, 0));
  Tensor xi;
  if (x.size(2) == 2) xi = framed(select(x, 2, 1));
  return {dft_last(xr, xi.defined() ? &xi : nullptr, len, onesided ? len / 2 + 1 : len, false)};
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters between mel-spaced
// points (ONNX's reference: the num_mel_bins + 2 points are mel-spaced from the lower to the
// upper edge in steps of (mel(upper) - mel(lower)) / (num_mel_bins + 2), converted back to
// Hz and to bins as floor((dft_length + 1) * hz / sample_rate)). Computed on the host.
Outs mel_weight_matrix(Ctx& c) {
  auto one_int = [&](size_t i, const char* what) {
    std::vector<int64_t> v = c.ints(i);
    if (v.size() != 1) c.invalid(std::string(what) + " must be a scalar");
    return v[0];
  };
  auto one_double = [&](size_t i, const char* what) {
    std::vector<double> v = c.doubles(i);
    if (v.size() != 1) c.invalid(std::string(what) + " must be a scalar");
    return v[0];
  };
  const int64_t mels = one_int(0, "num_mel_bins"), dft_len = one_int(1, "dft_length"), rate = one_int(2, "sample_rate");
  const double lo = one_double(3, "lower_edge_hertz"), hi = one_double(4, "upper_edge_hertz");
  if (mels <= 0 || dft_len <= 0 || rate <= 0 || mels > (1 << 16) || dft_len > (1 << 24))
    c.invalid("num_mel_bins, dft_length and sample_rate must be positive (at most 2^16 mel bins, 2^24 DFT points)");
  const int64_t bins = dft_len / 2 + 1;
  if (bins * mels > (int64_t{1} << 26))
    c.invalid("a " + std::to_string(bins) + " x " + std::to_string(mels) + " matrix exceeds 2^26 elements");
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double lo_mel = mel(lo), step = (mel(hi) - lo_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> pt(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1.0);
    pt[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= bins) c.invalid("a filter edge falls outside the " + std::to_string(bins) + " DFT bins");
    w[j * mels + i] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = pt[i], m = pt[i + 1], h = pt[i + 2];
    if (m == l) set(m, i, 1.0);
    else
      for (int64_t j = l; j <= m; ++j) set(j, i, static_cast<double>(j - l) / static_cast<double>(m - l));
    for (int64_t j = m; j < h; ++j) set(j, i, static_cast<double>(h - j) / static_cast<double>(h - m));
  }
  const DType dt = dtype_from_onnx(c.attr_i("output_datatype", 1), c.where() + "output_datatype: ");
  return {from_vector(w, {bins, mels}).to(dt)};
}

// TfIdfVectorizer (ai.onnx v9; integer pools: tandem has no string dtype). Counts, per row
// of X ([C] or [N, C], int32/int64), each pool n-gram's occurrences: for n = 1 every
// position once; for n >= 2 the tokens at i, i + d, ..., i + (n - 1) d for every distance
// d = 1 .. max_skip_count + 1 (Operators.md: "all skips up to S"). Y[ngram_indexes[g]] is
// n-gram g's count (TF), min(count, 1) * weights[g] (IDF) or count * weights[g] (TFIDF),
// float32 [max(ngram_indexes) + 1] or [N, that]. In tensor ops (window slices compared
// with the pool), so a capture records it.
Outs tfidf_vectorizer(Ctx& c) {
  if (c.has_attr("pool_strings")) c.unsupported("pool_strings: tandem has no string dtype (integer pools only)");
  auto required = [&](const char* name) {
    if (!c.has_attr(name)) c.invalid(std::string("the attribute ") + name + " is required");
  };
  for (const char* name : {"min_gram_length", "max_gram_length", "max_skip_count", "mode", "ngram_counts",
                           "ngram_indexes", "pool_int64s"})
    required(name);
  const Tensor& x_in = c.in(0);
  if (x_in.dtype() != DType::Int32 && x_in.dtype() != DType::Int64)
    c.invalid("X must be int32 or int64 with an integer pool, got " + std::string(dtype_name(x_in.dtype())));
  if (x_in.dim() != 1 && x_in.dim() != 2) c.invalid("X must be 1-D or 2-D, got " + std::to_string(x_in.dim()) + "-D");
  const int64_t lo = c.attr_i("min_gram_length", 0), hi = c.attr_i("max_gram_length", 0);
  const int64_t skips = c.attr_i("max_skip_count", 0);
  const std::string mode = c.attr_s("mode", "");
  const std::vector<int64_t> counts = c.attr_ints("ngram_counts"), indexes = c.attr_ints("ngram_indexes");
  const std::vector<int64_t> pool = c.attr_ints("pool_int64s");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.invalid("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  if (lo < 1 || hi < lo || hi > static_cast<int64_t>(counts.size()))
    c.invalid("expected 1 <= min_gram_length <= max_gram_length <= len(ngram_counts) (" +
              std::to_string(counts.size()) + "), got " + std::to_string(lo) + " and " + std::to_string(hi));
  if (skips < 0 || skips > (1 << 16)) c.invalid("max_skip_count must be in [0, 65536], got " + std::to_string(skips));
  // Pool n-grams of length n: pool[counts[n-1] .. counts[n]) (the last run to the end).
  const int64_t pool_len = static_cast<int64_t>(pool.size());
  std::vector<int64_t> first(counts.size() + 1);  // index of the first n-gram of each length
  for (size_t n = 1; n <= counts.size(); ++n) {
    const int64_t b = counts[n - 1], e = n < counts.size() ? counts[n] : pool_len;
    if (b < 0 || e < b || e > pool_len || (e - b) % static_cast<int64_t>(n) != 0)
      c.invalid("ngram_counts must be non-decreasing offsets into pool_int64s (" + std::to_string(pool_len) +
                " values) splitting it into whole n-grams; entry " + std::to_string(n - 1) + " is " + std::to_string(b));
    first[n] = first[n - 1] + (e - b) / static_cast<int64_t>(n);
  }
  const int64_t grams = first[counts.size()];
  if (static_cast<int64_t>(indexes.size()) != grams)
    c.invalid("ngram_indexes must have one entry per pool n-gram (" + std::to_string(grams) + "), got " +
              std::to_string(indexes.size()));
  int64_t width = 0;
  for (int64_t i : indexes) {
    if (i < 0 || i >= (int64_t{1} << 24)) c.invalid("ngram_indexes entries must be in [0, 2^24), got " + std::to_string(i));
    width = std::max(width, i + 1);
  }
  std::vector<double> w(static_cast<size_t>(grams), 1.0);
  if (c.has_attr("weights")) {
    w = c.attr_floats("weights");
    if (static_cast<int64_t>(w.size()) != grams)
      c.invalid("weights must have one entry per pool n-gram (" + std::to_string(grams) + "), got " +
                std::to_string(w.size()));
  }
  Tensor x = (x_in.dim() == 1 ? x_in.unsqueeze(0) : x_in).to(DType::Int64);
  const int64_t rows = x.size(0), len = x.size(1);
  Tensor count = zeros({rows, grams}, DType::Float32);
  int64_t work = 0;  // comparisons made, bounded like the other converters' hostile sizes
  for (int64_t n = lo; n <= hi; ++n) {
    const int64_t g0 = first[n - 1], gn = first[n] - g0;
    if (gn == 0) continue;
    const int64_t b = counts[n - 1];
    Tensor grams_n = from_vector(std::vector<int64_t>(pool.begin() + b, pool.begin() + b + gn * n), {gn, n});
    Tensor found = zeros({rows, gn}, DType::Float32);
    for (int64_t d = 1; d <= (n == 1 ? 1 : skips + 1); ++d) {
      const int64_t span = (n - 1) * d + 1;
      if (span > len) break;
      const int64_t positions = len - span + 1;
      work += rows * positions * gn * n;
      if (work > (int64_t{1} << 26)) c.invalid("more than 2^26 token comparisons (X, pool and skips too large)");
      std::vector<Tensor> cols;
      for (int64_t k = 0; k < n; ++k) cols.push_back(x.narrow(1, k * d, positions));
      Tensor windows = stack(cols, 2).unsqueeze(2);                 // [rows, positions, 1, n]
      Tensor hit = eq(windows, grams_n).all({3}).to(DType::Float32);  // [rows, positions, gn]
      found = found + hit.sum({1});
    }
    count = count.index_add(1, arange(g0, g0 + gn, 1, DType::Int64), found);
  }
  Tensor weights = from_vector(w, {grams}).to(DType::Float32);
  if (mode == "IDF") count = clamp_max(count, 1.0) * weights;
  else if (mode == "TFIDF") count = count * weights;
  Tensor y = zeros({rows, width}, DType::Float32)
                 .index_add(1, from_vector(indexes, {grams}), count);
  return {x_in.dim() == 1 ? y.squeeze(0) : y};
}

// ---------------------------------------------------------------- training (ai.onnx.preview.training)
// Inputs R (learning rate, scalar), T (update count, int64 scalar), then n tensors of each
// group (X, G, and the optimizer state); outputs the updated X, then the updated state,
// group by group. The formulas and attribute defaults are ONNX's (Operators.md, Adagrad /
// Adam / Momentum v1: epsilon defaults to 1e-6; Momentum's attributes are required).

// The number n of optimized tensors of a node with `groups` input groups after R and T.
int64_t optimizer_count(const Ctx& c, int64_t groups) {
  const int64_t rest = static_cast<int64_t>(c.num_inputs()) - 2;
  if (rest <= 0 || rest % groups != 0)
    c.invalid("takes R, T and " + std::to_string(groups) + " groups of tensors of equal count, got " +
              std::to_string(c.num_inputs()) + " inputs");
  return rest / groups;
}

// T (the update count, an integer scalar) as a float64 tensor: the converters compute
// with it in tensor ops, so a capture records them (no host read).
Tensor update_count(const Ctx& c) {
  const Tensor& t = c.in(1);
  if (t.numel() != 1 || is_floating_point(t.dtype()) || t.dtype() == DType::Bool)
    c.invalid("T must be an integer scalar");
  return reshape(t, {}).to(DType::Float64);
}

Outs adagrad(Ctx& c) {
  const int64_t n = optimizer_count(c, 3);
  const double decay = c.attr_f("decay_factor", 0.0), eps = c.attr_f("epsilon", 1e-6),
               norm = c.attr_f("norm_coefficient", 0.0);
  // r = R / (1 + T * decay_factor)
  const Tensor& rate = c.in(0);
  const Tensor r = div(rate, add(mul(update_count(c), decay), 1.0).to(rate.dtype()));
  Outs xs, hs;
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& x = c.in(2 + i);
    Tensor g = add(mul(x, norm), c.in(2 + n + i));
    Tensor h = add(c.in(2 + 2 * n + i), mul(g, g));
    xs.push_back(sub(x, div(mul(r, g), add(sqrt(h), eps))));
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

Outs momentum(Ctx& c) {
  const int64_t n = optimizer_count(c, 3);
  for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!c.has_attr(a)) c.invalid(std::string("attribute ") + a + " is required");
  const double alpha = c.attr_f("alpha", 0.0), beta = c.attr_f("beta", 0.0), norm = c.attr_f("norm_coefficient", 0.0);
  const std::string mode = c.attr_s("mode", "standard");
  if (mode != "standard" && mode != "nesterov") c.invalid("mode '" + mode + "' is not standard or nesterov");
  const Tensor& r = c.in(0);
  // beta_adjusted = T > 0 ? beta : 1
  const Tensor beta_adj = where(gt(update_count(c), 0), beta, 1.0).to(r.dtype());
  Outs xs, vs;
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& x = c.in(2 + i);
    Tensor g = add(mul(x, norm), c.in(2 + n + i));
    Tensor v = add(mul(c.in(2 + 2 * n + i), alpha), mul(g, beta_adj));
    xs.push_back(mode == "standard" ? sub(x, mul(r, v)) : sub(x, mul(r, add(g, mul(v, alpha)))));
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

Outs adam(Ctx& c) {
  const int64_t n = optimizer_count(c, 4);
  const double alpha = c.attr_f("alpha", 0.9), beta = c.attr_f("beta", 0.999), eps = c.attr_f("epsilon", 1e-6),
               norm = c.attr_f("norm_coefficient", 0.0), post = c.attr_f("norm_coefficient_post", 0.0);
  // R_adjusted = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R, in float64 (beta^T as
  // exp(T log beta); the branch T > 0 is taken by where, so T = 0's 0/0 is never used).
  const Tensor t = update_count(c);
  const Tensor& rate = c.in(0);
  Tensor bt = exp(mul(t, std::log(beta))), at = exp(mul(t, std::log(alpha)));
  Tensor factor = where(gt(t, 0), div(sqrt(neg(sub(bt, 1.0))), neg(sub(at, 1.0))), 1.0);
  const Tensor r = mul(rate, factor.to(rate.dtype()));
  Outs xs, vs, hs;
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& x = c.in(2 + i);
    Tensor g = add(mul(x, norm), c.in(2 + n + i));
    Tensor v = add(mul(c.in(2 + 2 * n + i), alpha), mul(g, 1.0 - alpha));
    Tensor h = add(mul(c.in(2 + 3 * n + i), beta), mul(mul(g, g), 1.0 - beta));
    Tensor xn = sub(x, mul(r, div(v, add(sqrt(h), eps))));
    xs.push_back(mul(xn, 1.0 - post));
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

const std::map<std::string, Converter>& table() {
  static const std::map<std::string, Converter> tbl = {
      // ---------------------------------------------------------------- training domain
      {kTrainingDomain + ":Adagrad", adagrad},
      {kTrainingDomain + ":Adam", adam},
      {kTrainingDomain + ":Momentum", momentum},
      {"Det", [](Ctx& c) -> Outs { return {det(c, c.in(0))}; }},
      {"DFT", dft},
      {"RoiAlign", roi_align},
      {"STFT", stft},
      {"MelWeightMatrix", mel_weight_matrix},
      {"TfIdfVectorizer", tfidf_vectorizer},
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
         Tensor slope = c.in(1);
         // Opsets before 7 broadcast a [C] slope over the channel dim (dim 1).
         if (slope.dim() == 1 && x.dim() > 2 && slope.size(0) == x.size(1) && slope.size(0) != x.size(-1)) {
           std::vector<int64_t> shape(x.dim() - 1, 1);
           shape[0] = slope.size(0);
           slope = reshape(slope, shape);
         }
         return {where(lt(x, 0), mul(x, slope), x)};
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
         if (c.node().outputs.size() > 1 && !c.node().outputs[1].empty()) return max_pool_indices(c);
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
         if (c.attr_i("training_mode", 0)) {
           // Batch statistics (biased variance); running stats blended with momentum.
           const Tensor& x = c.in(0);
           std::vector<int64_t> dims = {0}, bshape(x.dim(), 1);
           for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
           bshape[1] = x.size(1);
           double eps = c.attr_f("epsilon", 1e-5), mom = c.attr_f("momentum", 0.9);
           Tensor m = mean(x, dims, false);
           Tensor v = mean(mul(sub(x, reshape(m, bshape)), sub(x, reshape(m, bshape))), dims, false);
           Tensor y = add(mul(div(sub(x, reshape(m, bshape)), sqrt(add(reshape(v, bshape), eps))),
                              reshape(c.in(1), bshape)),
                          reshape(c.in(2), bshape));
           Tensor rm = add(mul(c.in(3), mom), mul(m, 1 - mom));
           Tensor rv = add(mul(c.in(4), mom), mul(v, 1 - mom));
           return {y, rm, rv};
         }
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
         std::vector<int64_t> shape(x.sizes().begin() + axis, x.sizes().end());
         Tensor w = c.in(1).dim() == static_cast<int64_t>(shape.size()) ? c.in(1) : broadcast_to(c.in(1), shape);
         Tensor b;
         if (c.has(2)) b = c.in(2).dim() == static_cast<int64_t>(shape.size()) ? c.in(2) : broadcast_to(c.in(2), shape);
         if (c.node().outputs.size() == 1) return {layer_norm(x, shape, w, b, c.attr_f("epsilon", 1e-5))};
         auto [y, mu, rstd] = native_layer_norm(x, shape, w, b, c.attr_f("epsilon", 1e-5));
         return {y, mu, rstd};
       }},
      {"NegativeLogLikelihoodLoss",
       [](Ctx& c) -> Outs { return {nll(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : Tensor())}; }},
      {"SoftmaxCrossEntropyLoss",
       [](Ctx& c) -> Outs {
         Tensor logp = log_softmax(c.in(0), 1);
         Tensor loss = nll(c, logp, c.in(1), c.has(2) ? c.in(2) : Tensor());
         return {loss, logp};
       }},
      {"Hardmax",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         if (c.opset() >= 13) return {hardmax_along(x, norm_axis(c, c.attr_i("axis", -1), x.dim()))};
         int64_t axis = norm_axis(c, c.attr_i("axis", 1), x.dim());
         int64_t outer = 1;
         for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
         return {reshape(hardmax_along(reshape(x, {outer, -1}), 1), sizes_of(x))};
       }},
      {"EyeLike",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         if (x.dim() != 2) c.invalid("input must be 2-D");
         DType d = c.has_attr("dtype") ? dtype_from_onnx(c.attr_i("dtype", 1), c.where()) : x.dtype();
         Tensor rows = unsqueeze(arange(x.size(0)), 1), cols = unsqueeze(arange(x.size(1)), 0);
         return {eq(sub(cols, rows), c.attr_i("k", 0)).to(d)};
       }},
      {"MeanVarianceNormalization",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
         for (auto& a : axes) a = norm_axis(c, a, x.dim());
         Tensor m = mean(x, axes, true);
         Tensor d = sub(x, m);
         Tensor var = sub(mean(mul(x, x), axes, true), mul(m, m));
         return {div(d, add(sqrt(var), 1e-9))};
       }},
      {"LRN",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t size = c.attr_i("size", 0);
         if (size <= 0 || x.dim() < 3) c.invalid("size must be positive and the input at least 3-D");
         double alpha = c.attr_f("alpha", 1e-4), beta = c.attr_f("beta", 0.75), bias = c.attr_f("bias", 1.0);
         int64_t before = (size - 1) / 2, after = size - 1 - before;
         Tensor sq = movedim(mul(x, x), 1, -1);
         Tensor win = sum(unfold(pad(sq, {before, after}, "constant", 0.0), -1, size, 1), {-1});
         Tensor denom = pow(add(mul(movedim(win, -1, 1), alpha / double(size)), bias), beta);
         return {div(x, denom)};
       }},
      {"Compress",
       [](Ctx& c) -> Outs {
         Tensor x = c.in(0);
         int64_t axis = 0;
         if (c.has_attr("axis")) axis = norm_axis(c, c.attr_i("axis", 0), x.dim());
         else x = reshape(x, {-1});
         Tensor cond = as_dtype(c.in(1), DType::Bool);
         if (cond.numel() > x.size(axis)) cond = narrow(cond, 0, 0, x.size(axis));
         return {index_select(x, axis, reshape(nonzero(cond), {-1}))};
       }},
      {"Resize", [](Ctx& c) -> Outs { return {resize(c, false)}; }},
      {"Upsample", [](Ctx& c) -> Outs { return {resize(c, true)}; }},
      {"RNN", [](Ctx& c) -> Outs { return recurrent(c, 1); }},
      {"GRU", [](Ctx& c) -> Outs { return recurrent(c, 3); }},
      {"LSTM", [](Ctx& c) -> Outs { return recurrent(c, 4); }},
      {"QuantizeLinear",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = c.in(1).numel() > 1 ? norm_axis(c, c.attr_i("axis", 1), x.dim()) : 0;
         return {quantize(x, c.in(1), c.has(2) ? c.in(2) : Tensor(), axis)};
       }},
      {"DequantizeLinear",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         int64_t axis = c.in(1).numel() > 1 ? norm_axis(c, c.attr_i("axis", 1), x.dim()) : 0;
         return {dequantize(x, c.in(1), c.has(2) ? c.in(2) : Tensor(), axis)};
       }},
      {"DynamicQuantizeLinear",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         Tensor lo = minimum(amin(x), zeros({}, x.dtype())), hi = maximum(amax(x), zeros({}, x.dtype()));
         Tensor scale = div(sub(hi, lo), 255.0);
         Tensor zp = saturate_cast(neg(div(lo, scale)), DType::UInt8);
         return {quantize(x, scale, zp, 0), scale, zp};
       }},
      {"MatMulInteger",
       [](Ctx& c) -> Outs {
         Tensor a = int_minus_zp(c.in(0), c.has(2) ? c.in(2) : Tensor(), std::max<int64_t>(c.in(0).dim() - 2, 0));
         Tensor b = int_minus_zp(c.in(1), c.has(3) ? c.in(3) : Tensor(), c.in(1).dim() - 1);
         return {matmul(a, b)};
       }},
      {"ConvInteger",
       [](Ctx& c) -> Outs {
         // Integer convolution computed in float64 (exact for 8-bit operands and any
         // realistic kernel size), then cast to int32.
         std::vector<Value> vals;
         vals.push_back(Value{int_minus_zp(c.in(0), c.has(2) ? c.in(2) : Tensor(), 0).to(DType::Float64), false});
         vals.push_back(Value{int_minus_zp(c.in(1), c.has(3) ? c.in(3) : Tensor(), 0).to(DType::Float64), false});
         std::vector<const Value*> ptrs = {&vals[0], &vals[1]};
         Ctx c2(c.node(), ptrs, c.source());
         return {conv(c2).to(DType::Int32)};
       }},
      {"QLinearMatMul",
       [](Ctx& c) -> Outs {
         Tensor a = dequantize(c.in(0), c.in(1), c.in(2), std::max<int64_t>(c.in(0).dim() - 2, 0));
         Tensor b = dequantize(c.in(3), c.in(4), c.in(5), c.in(3).dim() - 1);
         return {quantize(matmul(a.to(DType::Float64), b.to(DType::Float64)), c.in(6), c.in(7), 0)};
       }},
      {"QLinearConv",
       [](Ctx& c) -> Outs {
         std::vector<Value> vals;
         vals.push_back(Value{dequantize(c.in(0), c.in(1), c.in(2), 1).to(DType::Float64), false});
         vals.push_back(Value{dequantize(c.in(3), c.in(4), c.in(5), 0).to(DType::Float64), false});
         if (c.has(8)) vals.push_back(Value{mul(c.in(8).to(DType::Float64), mul(c.in(1), c.in(4)).to(DType::Float64)), false});
         std::vector<const Value*> ptrs;
         for (const auto& v : vals) ptrs.push_back(&v);
         Ctx c2(c.node(), ptrs, c.source());
         return {quantize(conv(c2), c.in(6), c.in(7), 1)};
       }},
      {"Unique", [](Ctx& c) -> Outs { return unique_onnx(c); }},
      {"NonMaxSuppression", [](Ctx& c) -> Outs { return {non_max_suppression(c)}; }},
      {"HannWindow", [](Ctx& c) -> Outs { return {window(c, {0.5, -0.5})}; }},
      {"HammingWindow", [](Ctx& c) -> Outs { return {window(c, {25.0 / 46.0, -21.0 / 46.0})}; }},
      {"BlackmanWindow", [](Ctx& c) -> Outs { return {window(c, {0.42, -0.5, 0.08})}; }},
      {"ReverseSequence",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         const int64_t bax = c.attr_i("batch_axis", 1), tax = c.attr_i("time_axis", 0);
         if (x.dim() < 2 || (bax != 0 && bax != 1) || (tax != 0 && tax != 1) || bax == tax)
           c.invalid("batch_axis and time_axis must be 0 and 1 in some order");
         std::vector<int64_t> lens = c.ints(1);
         const int64_t T = x.size(tax), Bn = x.size(bax);
         if (static_cast<int64_t>(lens.size()) != Bn) c.invalid("sequence_lens must hold one length per batch entry");
         std::vector<int64_t> src(T * Bn);  // [T, B] source time index
         for (int64_t t = 0; t < T; ++t)
           for (int64_t b = 0; b < Bn; ++b) src[t * Bn + b] = t < lens[b] ? lens[b] - 1 - t : t;
         std::vector<int64_t> shape(x.dim(), 1);
         shape[tax] = T;
         shape[bax] = Bn;
         Tensor idx = from_vector(src, {T, Bn});
         if (tax == 1) idx = t(idx);
         idx = expand(reshape(idx.contiguous(), shape), sizes_of(x));
         return {gather(x, tax, idx.contiguous())};
       }},
      {"MaxUnpool",
       [](Ctx& c) -> Outs {
         const Tensor& x = c.in(0);
         Tensor idx = as_dtype(c.in(1), DType::Int64);
         auto kernel = c.attr_ints("kernel_shape");
         const size_t k = kernel.size();
         if (static_cast<int64_t>(k) != x.dim() - 2) c.invalid("kernel_shape does not match the input rank");
         auto strides = c.attr_ints("strides", std::vector<int64_t>(k, 1));
         auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
         // Indices address the default output shape; a larger output_shape pads its end.
         std::vector<int64_t> out = {x.size(0), x.size(1)};
         for (size_t i = 0; i < k; ++i)
           out.push_back((x.size(2 + i) - 1) * strides[i] + kernel[i] - pads[i] - pads[i + k]);
         int64_t total = 1;
         for (int64_t d : out) total *= d;
         Tensor y = zeros({total}, x.dtype());
         y = reshape(scatter(y, 0, reshape(idx, {-1}), reshape(x, {-1})), out);
         if (c.has(2)) {
           std::vector<int64_t> want = c.ints(2), tp;
           if (want.size() != out.size()) c.invalid("output_shape must have the input's rank");
           for (size_t i = out.size(); i-- > 2;) {
             if (want[i] < out[i]) c.invalid("output_shape is smaller than the unpooled shape");
             tp.push_back(0);
             tp.push_back(want[i] - out[i]);
           }
           y = pad(y, tp, "constant", 0.0);
         }
         return {y};
       }},
      {"GridSample", [](Ctx& c) -> Outs { return {grid_sample_onnx(c)}; }},
      {"Softmax", [](Ctx& c) -> Outs { return {softmax_like(c, false)}; }},
      {"LogSoftmax", [](Ctx& c) -> Outs { return {softmax_like(c, true)}; }},
      {"Dropout",
       [](Ctx& c) -> Outs {
         if (c.has(2) && c.doubles(2).at(0) != 0) {
           double ratio = c.has(1) ? c.doubles(1).at(0) : 0.5;
           if (ratio != 0) c.unsupported("training_mode true with a nonzero ratio (random)");
         }
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
      {"Scatter",  // opsets 9-10: ScatterElements under its old name
       [](Ctx& c) -> Outs { return (*find_converter("ScatterElements"))(c); }},
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
         if (red == "mul") {
           // One index tuple at a time, so that repeated indices multiply in turn.
           Tensor out = x;
           Tensor upd = c.in(2);
           const int64_t n = idx.numel() / std::max<int64_t>(k, 1);
           if (n > (int64_t{1} << 20))
             c.unsupported("reduction 'mul' with more than 2^20 index tuples (applied one by one)");
           Tensor idx2 = reshape(idx, {n, k});
           std::vector<int64_t> ushape{n};
           ushape.insert(ushape.end(), upd.sizes().begin() + (idx.dim() - 1), upd.sizes().end());
           upd = reshape(upd, ushape);
           for (int64_t j = 0; j < n; ++j) {
             std::vector<Tensor> one;
             for (int64_t d = 0; d < k; ++d) one.push_back(narrow(select(idx2, 1, d), 0, j, 1));
             out = index_put(out, one, mul(index(out, one), narrow(upd, 0, j, 1)), false);
           }
           return {out};
         }
         c.unsupported("reduction '" + red + "'");
       }},
      {"GatherND",
       [](Ctx& c) -> Outs {
         // batch_dims b: the leading b dims of data and indices are flattened into one batch
         // dim, which indexes alongside the index tuples (arange over the batch).
         const int64_t b = c.attr_i("batch_dims", 0);
         Tensor x = c.in(0);
         Tensor idx = as_dtype(c.in(1), DType::Int64);
         if (b < 0 || b >= std::min(x.dim(), idx.dim())) c.invalid("batch_dims out of range");
         std::vector<int64_t> batch_shape(idx.sizes().begin(), idx.sizes().begin() + b);
         std::vector<Tensor> ix;
         if (b > 0) {
           x = flatten(x, 0, b - 1);
           idx = flatten(idx, 0, b - 1);
           std::vector<int64_t> bshape(idx.dim() - 1, 1);
           bshape[0] = idx.size(0);
           ix.push_back(expand(reshape(arange(idx.size(0)), bshape), std::vector<int64_t>(idx.sizes().begin(), idx.sizes().end() - 1)));
         }
         const int64_t off = b > 0 ? 1 : 0;
         for (int64_t j = 0; j < idx.size(-1); ++j) {
           Tensor s = select(idx, -1, j);
           ix.push_back(where(lt(s, 0), add(s, x.size(j + off)), s));
         }
         Tensor y = index(x, ix);
         if (b > 1) {
           std::vector<int64_t> shape = batch_shape;
           shape.insert(shape.end(), y.sizes().begin() + 1, y.sizes().end());
           y = reshape(y, shape);
         }
         return {y};
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

const Converter* find_converter(const std::string& op_type, const std::string& domain) {
  if (!domain.empty() && domain != kTrainingDomain) return nullptr;
  const auto& t = table();
  auto it = t.find(domain.empty() ? op_type : domain + ":" + op_type);
  return it == t.end() ? nullptr : &it->second;
}

std::vector<std::string> converter_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : table()) names.push_back(k);
  for (const auto& k : value_converter_names()) names.push_back(k);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tandem::onnx
