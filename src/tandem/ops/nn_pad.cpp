// Padding and resampling: pad (constant / reflect / replicate / circular) with
// pad_backward, upsample_nearest{1,2,3}d and upsample_bilinear2d with their backward ops,
// and the interpolate functional. Every one of these is a gather along per-dim index maps
// (or a 2x2 tap for bilinear); each backward is the adjoint scatter-add, and the adjoint
// of that is the forward op again, so all of them are differentiable twice.
#include <algorithm>
#include <cmath>

#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/nn_util.h"

namespace tandem {

const OpDef& op_pad();
const OpDef& op_pad_backward();
const OpDef& op_upsample_bilinear2d();
const OpDef& op_upsample_bilinear2d_backward();

namespace {

using Maps = std::vector<std::vector<int64_t>>;

// ---------------------------------------------------------------- pad
enum class PadMode { Constant, Reflect, Replicate, Circular };

PadMode parse_mode(const char* op, const std::string& m) {
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "replicate") return PadMode::Replicate;
  if (m == "circular") return PadMode::Circular;
  throw NotImplementedError(str_cat("[", op, "] got padding mode '", m,
                                    "', expected 'constant', 'reflect', 'replicate' or 'circular'"));
}

// Validates a pad call and returns the output sizes; fills `maps` (one per input dim:
// source index per output index, -1 = fill) when given.
DimVector pad_plan(const char* op, IntArrayRef in, const std::vector<int64_t>& pads, const std::string& mode_s,
                   bool has_value, Maps* maps) {
  const PadMode mode = parse_mode(op, mode_s);
  const int64_t nd = static_cast<int64_t>(in.size());
  TANDEM_CHECK(pads.size() % 2 == 0, ValueError, op, "got pad ", IntArrayRef(pads),
               ", expected an even number of values (padding length must be divisible by 2)");
  const int64_t k = static_cast<int64_t>(pads.size() / 2);
  TANDEM_CHECK(k <= nd, ValueError, op, "got pad ", IntArrayRef(pads), " for input of shape ", in,
               ", expected at most 2 values per dim (padding length too large)");
  if (mode != PadMode::Constant) {
    TANDEM_CHECK(!has_value, ValueError, op, "padding mode '", mode_s, "' doesn't take a value argument");
    const bool ok = k >= 1 && k <= 3 && (nd == k + 2 || (mode != PadMode::Circular && nd == k + 1));
    TANDEM_CHECK(ok, NotImplementedError, op, "mode '", mode_s, "' pads 1 to 3 trailing dims of a tensor with ",
                 mode == PadMode::Circular ? "exactly 2" : "1 or 2", " more dims, got pad ", IntArrayRef(pads),
                 " for input of shape ", in);
  }
  DimVector out = in.vec();
  if (maps) {
    maps->assign(static_cast<size_t>(nd), {});
    for (int64_t d = 0; d < nd - k; ++d) {
      auto& m = (*maps)[static_cast<size_t>(d)];
      m.resize(static_cast<size_t>(in[d]));
      for (int64_t i = 0; i < in[d]; ++i) m[i] = i;
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    const int64_t d = nd - 1 - j;
    const int64_t l = pads[2 * j], r = pads[2 * j + 1], size = in[d];
    if (mode != PadMode::Constant)
      TANDEM_CHECK(size > 0, ShapeError, op, "mode '", mode_s, "' needs non-empty padded dims, got input of shape ", in);
    if (mode == PadMode::Reflect)
      TANDEM_CHECK(l < size && r < size, ValueError, op, "got padding (", l, ", ", r, ") at dim ", d,
                   " of input of shape ", in, ", expected padding smaller than the dim's size");
    if (mode == PadMode::Circular)
      TANDEM_CHECK(l <= size && r <= size, ValueError, op, "got padding (", l, ", ", r, ") at dim ", d,
                   " of input of shape ", in, ", expected at most the dim's size (no wrapping around twice)");
    const int64_t o = size + l + r;
    TANDEM_CHECK(o >= 0, ShapeError, op, "input size ", size, " plus padding (", l, ", ", r,
                 ") gives a negative output size at dim ", d);
    const int64_t crop_l = std::max<int64_t>(-l, 0), crop_r = std::max<int64_t>(-r, 0);
    if (mode == PadMode::Circular)
      TANDEM_CHECK(size - crop_l - crop_r > 0 || o == 0, ShapeError, op, "padding (", l, ", ", r,
                   ") crops away all of dim ", d, " of input of shape ", in);
    out[d] = o;
    if (!maps) continue;
    auto& m = (*maps)[static_cast<size_t>(d)];
    m.resize(static_cast<size_t>(o));
    for (int64_t oi = 0; oi < o; ++oi) {
      int64_t i = oi - l;
      switch (mode) {
        case PadMode::Constant: m[oi] = (i >= 0 && i < size) ? i : -1; break;
        case PadMode::Reflect:
          if (i < 0) i = -i;
          if (i >= size) i = 2 * (size - 1) - i;
          m[oi] = i;
          break;
        case PadMode::Replicate: m[oi] = std::clamp<int64_t>(i, 0, size - 1); break;
        case PadMode::Circular: {
          // Crop first, then wrap around the cropped dim (PyTorch's order).
          const int64_t kept = size - crop_l - crop_r;
          const int64_t pl = std::max<int64_t>(l, 0);
          m[oi] = ((oi - pl) % kept + kept) % kept + crop_l;
          break;
        }
      }
    }
  }
  return out;
}

// pad(self; pad, mode, value)
void pad_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  DimVector out = pad_plan(c.op, in.sizes, c.attrs.ints(0), c.attrs.str(1), !c.attrs.is_none(2), nullptr);
  c.outputs.push_back(TensorMeta{in.dtype, out, {}});
}

void pad_kernel(KernelContext& c) {
  const Tensor& in = c.inputs[0];
  Maps maps;
  pad_plan(c.op, in.sizes(), c.attrs.ints(0), c.attrs.str(1), !c.attrs.is_none(2), &maps);
  Tensor fill = empty_tensor({}, in.dtype());
  kernels::fill_kernel(fill, c.attrs.is_none(2) ? 0.0 : c.attrs.f(2));
  kernels::gather_by_dim_maps(c.outputs[0], in, maps, fill);
}

std::vector<Tensor> pad_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const auto& pads = c.attrs.ints(0);
  if (c.attrs.str(1) == "constant") {
    std::vector<int64_t> neg(pads.size());
    for (size_t i = 0; i < pads.size(); ++i) neg[i] = -pads[i];
    return {pad(g, neg, "constant")};
  }
  return {dispatch1(op_pad_backward(), {g}, {AttrValue(c.input_metas[0].sizes.vec()), c.attrs.at(0), c.attrs.at(1)})};
}

// pad_backward(grad_output; input_size, pad, mode): the scatter-add adjoint of pad.
void pad_backward_meta(MetaContext& c) {
  const MetaRef& g = c.inputs[0];
  ops::require_floating_input(c.op, g.dtype, "grad_output");
  const auto& in = c.attrs.ints(0);
  DimVector out = pad_plan(c.op, in, c.attrs.ints(1), c.attrs.str(2), false, nullptr);
  TANDEM_CHECK(g.sizes.equals(out), ShapeError, c.op, "got grad_output of shape ", g.sizes, ", expected ",
               IntArrayRef(out));
  c.outputs.push_back(TensorMeta{g.dtype, in, {}});
}

void pad_backward_kernel(KernelContext& c) {
  Maps maps;
  pad_plan(c.op, c.attrs.ints(0), c.attrs.ints(1), c.attrs.str(2), false, &maps);
  kernels::scatter_add_by_dim_maps(c.outputs[0], c.inputs[0], maps);
}

std::vector<Tensor> pad_backward_rule(BackwardContext& c) {
  const Tensor& gg = c.grad_outputs[0];
  if (!gg.defined()) return {Tensor()};
  return {pad(gg, c.attrs.ints(1), c.attrs.str(2))};
}

// ---------------------------------------------------------------- upsampling
// Checks an upsample call (input [N, C, K spatial dims]) and returns the output sizes.
DimVector upsample_sizes(const char* op, IntArrayRef in, const std::vector<int64_t>& out_size, size_t K) {
  TANDEM_CHECK(in.size() == K + 2, ShapeError, op, "got input of shape ", in, ", expected ", K + 2,
               "-D input [N, C, spatial...]");
  TANDEM_CHECK(out_size.size() == K, ValueError, op, "got output_size ", IntArrayRef(out_size), ", expected ", K,
               " values");
  DimVector out{in[0], in[1]};
  for (size_t d = 0; d < K; ++d) {
    TANDEM_CHECK(in[2 + d] > 0 && out_size[d] > 0, ValueError, op, "input and output sizes should be greater than 0, got input of shape ",
                 in, " and output_size ", IntArrayRef(out_size));
    out.push_back(out_size[d]);
  }
  return out;
}

double scale_attr(const AttrReader& a, size_t k) { return a.opt_f(k).value_or(-1.0); }

// upsample_nearest{K}d(self; output_size, scales...)
template <size_t K>
void nearest_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  c.outputs.push_back(TensorMeta{in.dtype, upsample_sizes(c.op, in.sizes, c.attrs.ints(0), K), {}});
}

template <size_t K>
Maps nearest_maps(IntArrayRef in, const std::vector<int64_t>& out_size, const AttrReader& a, size_t first_scale) {
  Maps m(K + 2);
  for (size_t d = 0; d < 2; ++d) {
    m[d].resize(static_cast<size_t>(in[d]));
    for (int64_t i = 0; i < in[d]; ++i) m[d][i] = i;
  }
  for (size_t d = 0; d < K; ++d)
    m[2 + d] = kernels::nearest_index_map(in[2 + d], out_size[d], scale_attr(a, first_scale + d));
  return m;
}

template <size_t K>
void nearest_kernel(KernelContext& c) {
  const Tensor& in = c.inputs[0];
  kernels::gather_by_dim_maps(c.outputs[0], in, nearest_maps<K>(in.sizes(), c.attrs.ints(0), c.attrs, 1), Tensor());
}

template <size_t K>
const OpDef& nearest_op(bool backward) {
  static const OpDef& f = get_op(str_cat("upsample_nearest", K, "d"));
  static const OpDef& b = get_op(str_cat("upsample_nearest", K, "d_backward"));
  return backward ? b : f;
}

template <size_t K>
std::vector<Tensor> nearest_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  std::vector<AttrValue> attrs{c.attrs.at(0), AttrValue(c.input_metas[0].sizes.vec())};
  for (size_t d = 0; d < K; ++d) attrs.push_back(c.attrs.at(1 + d));
  return {dispatch1(nearest_op<K>(true), {g}, attrs)};
}

// upsample_nearest{K}d_backward(grad_output; output_size, input_size, scales...)
template <size_t K>
void nearest_backward_meta(MetaContext& c) {
  const MetaRef& g = c.inputs[0];
  ops::require_floating_input(c.op, g.dtype, "grad_output");
  const auto& in = c.attrs.ints(1);
  DimVector out = upsample_sizes(c.op, in, c.attrs.ints(0), K);
  TANDEM_CHECK(g.sizes.equals(out), ShapeError, c.op, "got grad_output of shape ", g.sizes, ", expected ",
               IntArrayRef(out));
  c.outputs.push_back(TensorMeta{g.dtype, in, {}});
}

template <size_t K>
void nearest_backward_kernel(KernelContext& c) {
  kernels::scatter_add_by_dim_maps(c.outputs[0], c.inputs[0],
                                   nearest_maps<K>(c.attrs.ints(1), c.attrs.ints(0), c.attrs, 2));
}

template <size_t K>
std::vector<Tensor> nearest_backward_rule(BackwardContext& c) {
  const Tensor& gg = c.grad_outputs[0];
  if (!gg.defined()) return {Tensor()};
  std::vector<AttrValue> attrs{c.attrs.at(0)};
  for (size_t d = 0; d < K; ++d) attrs.push_back(c.attrs.at(2 + d));
  return {dispatch1(nearest_op<K>(false), {gg}, attrs)};
}

template <size_t K>
std::vector<AttrSpec> scale_specs() {
  static const char* names[3][3] = {{"scales", "", ""}, {"scales_h", "scales_w", ""}, {"scales_d", "scales_h", "scales_w"}};
  std::vector<AttrSpec> s;
  for (size_t d = 0; d < K; ++d) s.push_back({names[K - 1][d], std::monostate{}});
  return s;
}

template <size_t K>
OpDef nearest_def(bool backward) {
  OpDef d;
  d.name = str_cat("upsample_nearest", K, "d", backward ? "_backward" : "");
  d.inputs = {{backward ? "grad_output" : "self", false}};
  d.attrs = {{"output_size", std::vector<int64_t>{}}};
  if (backward) d.attrs.push_back({"input_size", std::vector<int64_t>{}});
  for (auto& s : scale_specs<K>()) d.attrs.push_back(s);
  if (backward) {
    d.meta = nearest_backward_meta<K>;
    d.cpu_kernel = nearest_backward_kernel<K>;
    d.backward = nearest_backward_rule<K>;
  } else {
    d.meta = nearest_meta<K>;
    d.cpu_kernel = nearest_kernel<K>;
    d.backward = nearest_rule<K>;
  }
  return d;
}

// upsample_bilinear2d(self; output_size, align_corners, scales_h, scales_w)
void bilinear_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  ops::require_floating_input(c.op, in.dtype);
  c.outputs.push_back(TensorMeta{in.dtype, upsample_sizes(c.op, in.sizes, c.attrs.ints(0), 2), {}});
}

void bilinear_kernel(KernelContext& c) {
  const Tensor& in = c.inputs[0];
  kernels::upsample_bilinear2d_kernel(c.outputs[0], kernels::contiguous_as(in, in.dtype()), c.attrs.b(1),
                                      scale_attr(c.attrs, 2), scale_attr(c.attrs, 3));
}

std::vector<Tensor> bilinear_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  return {dispatch1(op_upsample_bilinear2d_backward(), {g},
                    {c.attrs.at(0), AttrValue(c.input_metas[0].sizes.vec()), c.attrs.at(1), c.attrs.at(2),
                     c.attrs.at(3)})};
}

// upsample_bilinear2d_backward(grad_output; output_size, input_size, align_corners, scales_h, scales_w)
void bilinear_backward_meta(MetaContext& c) {
  const MetaRef& g = c.inputs[0];
  ops::require_floating_input(c.op, g.dtype, "grad_output");
  const auto& in = c.attrs.ints(1);
  DimVector out = upsample_sizes(c.op, in, c.attrs.ints(0), 2);
  TANDEM_CHECK(g.sizes.equals(out), ShapeError, c.op, "got grad_output of shape ", g.sizes, ", expected ",
               IntArrayRef(out));
  c.outputs.push_back(TensorMeta{g.dtype, in, {}});
}

void bilinear_backward_kernel(KernelContext& c) {
  kernels::upsample_bilinear2d_backward_kernel(c.outputs[0], c.inputs[0], c.attrs.b(2), scale_attr(c.attrs, 3),
                                               scale_attr(c.attrs, 4));
}

std::vector<Tensor> bilinear_backward_rule(BackwardContext& c) {
  const Tensor& gg = c.grad_outputs[0];
  if (!gg.defined()) return {Tensor()};
  return {dispatch1(op_upsample_bilinear2d(), {gg}, {c.attrs.at(0), c.attrs.at(2), c.attrs.at(3), c.attrs.at(4)})};
}

}  // namespace

TANDEM_REGISTER_OP(pad) {
  OpDef d;
  d.name = "pad";
  d.inputs = {{"self", false}};
  d.attrs = {{"pad", std::vector<int64_t>{}}, {"mode", std::string("constant")}, {"value", std::monostate{}}};
  d.meta = pad_meta;
  d.cpu_kernel = pad_kernel;
  d.backward = pad_rule;
  return d;
}

TANDEM_REGISTER_OP(pad_backward) {
  OpDef d;
  d.name = "pad_backward";
  d.inputs = {{"grad_output", false}};
  d.attrs = {{"input_size", std::vector<int64_t>{}}, {"pad", std::vector<int64_t>{}}, {"mode", std::string("reflect")}};
  d.meta = pad_backward_meta;
  d.cpu_kernel = pad_backward_kernel;
  d.backward = pad_backward_rule;
  return d;
}

TANDEM_REGISTER_OP(upsample_nearest1d) { return nearest_def<1>(false); }
TANDEM_REGISTER_OP(upsample_nearest1d_backward) { return nearest_def<1>(true); }
TANDEM_REGISTER_OP(upsample_nearest2d) { return nearest_def<2>(false); }
TANDEM_REGISTER_OP(upsample_nearest2d_backward) { return nearest_def<2>(true); }
TANDEM_REGISTER_OP(upsample_nearest3d) { return nearest_def<3>(false); }
TANDEM_REGISTER_OP(upsample_nearest3d_backward) { return nearest_def<3>(true); }

TANDEM_REGISTER_OP(upsample_bilinear2d) {
  OpDef d;
  d.name = "upsample_bilinear2d";
  d.inputs = {{"self", false}};
  d.attrs = {{"output_size", std::vector<int64_t>{}},
             {"align_corners", false},
             {"scales_h", std::monostate{}},
             {"scales_w", std::monostate{}}};
  d.meta = bilinear_meta;
  d.cpu_kernel = bilinear_kernel;
  d.backward = bilinear_rule;
  return d;
}

TANDEM_REGISTER_OP(upsample_bilinear2d_backward) {
  OpDef d;
  d.name = "upsample_bilinear2d_backward";
  d.inputs = {{"grad_output", false}};
  d.attrs = {{"output_size", std::vector<int64_t>{}},
             {"input_size", std::vector<int64_t>{}},
             {"align_corners", false},
             {"scales_h", std::monostate{}},
             {"scales_w", std::monostate{}}};
  d.meta = bilinear_backward_meta;
  d.cpu_kernel = bilinear_backward_kernel;
  d.backward = bilinear_backward_rule;
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode, std::optional<double> value) {
  return dispatch1(op_pad(), {input}, {AttrValue(pad.vec()), AttrValue(mode), opt_attr(value)});
}

Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor, const std::string& mode,
                   std::optional<bool> align_corners) {
  const char* op = "interpolate";
  const bool bilinear = mode == "bilinear";
  TANDEM_CHECK(bilinear || mode == "nearest", NotImplementedError, op, "got mode '", mode,
               "', expected 'nearest' or 'bilinear'");
  TANDEM_CHECK(bilinear || !align_corners.has_value(), ValueError, op,
               "align_corners can only be set with the interpolating modes (bilinear), got mode '", mode, "'");
  TANDEM_CHECK(size.has_value() != scale_factor.has_value(), ValueError, op,
               "exactly one of size or scale_factor must be given");
  const int64_t K = input.dim() - 2;
  if (bilinear)
    TANDEM_CHECK(K == 2, NotImplementedError, op, "got ", input.dim(), "-D input, but bilinear mode needs 4-D input");
  else
    TANDEM_CHECK(K >= 1 && K <= 3, NotImplementedError, op, "got ", input.dim(),
                 "-D input, but nearest mode needs 3-D, 4-D or 5-D input");
  std::vector<int64_t> out(static_cast<size_t>(K));
  std::vector<AttrValue> scales;
  if (size) {
    TANDEM_CHECK(size->size() == 1 || static_cast<int64_t>(size->size()) == K, ValueError, op, "got size ",
                 IntArrayRef(*size), " for ", K, " spatial dims");
    for (int64_t d = 0; d < K; ++d) out[d] = (*size)[size->size() == 1 ? 0 : d];
    scales.assign(static_cast<size_t>(K), AttrValue(std::monostate{}));
  } else {
    TANDEM_CHECK(scale_factor->size() == 1 || static_cast<int64_t>(scale_factor->size()) == K, ValueError, op,
                 "got ", scale_factor->size(), " scale factors for ", K, " spatial dims");
    for (int64_t d = 0; d < K; ++d) {
      const double s = (*scale_factor)[scale_factor->size() == 1 ? 0 : d];
      TANDEM_CHECK(s > 0, ValueError, op, "got scale_factor ", s, ", expected a positive value");
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(input.size(2 + d)) * s));
      scales.push_back(AttrValue(s));
    }
  }
  if (bilinear)
    return dispatch1(op_upsample_bilinear2d(), {input},
                     {AttrValue(out), AttrValue(align_corners.value_or(false)), scales[0], scales[1]});
  std::vector<AttrValue> attrs{AttrValue(out)};
  for (auto& s : scales) attrs.push_back(s);
  return dispatch1(get_op(str_cat("upsample_nearest", K, "d")), {input}, attrs);
}

}  // namespace tandem
