// Convolution ops: conv2d and conv_transpose2d have kernels (kernels/cpu/conv.h); conv1d
// is a composite over conv2d. Pools are in pool.cpp.
#include "tandem/ops/conv.h"

#include <array>
#include <string>

#include "tandem/kernels/cpu/conv.h"
#include "tandem/kernels/cpu/gemm.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/shape.h"

namespace tandem {

const OpDef& op_convolution_backward();

namespace {

using kernels::Conv2dGeometry;

/// One value per spatial dim from a list of 1 or 2 values.
std::array<int64_t, 2> pair2(const char* op, const char* what, const std::vector<int64_t>& v) {
  TANDEM_CHECK(v.size() == 1 || v.size() == 2, ValueError, op, "expected ", what,
               " to be a single integer value or a list of 2 values to match the convolution dimensions, but got ",
               what, "=", IntArrayRef(v));
  return v.size() == 1 ? std::array<int64_t, 2>{v[0], v[0]} : std::array<int64_t, 2>{v[0], v[1]};
}

void check_conv_dtypes(const char* op, const MetaRef& in, const MetaRef& w, const MetaRef& b, bool transposed) {
  TANDEM_CHECK(in.dtype == w.dtype, TypeError, op, "input type (", dtype_name(in.dtype), ") and weight type (",
               dtype_name(w.dtype), ") should be the same");
  TANDEM_CHECK(!b.defined || b.dtype == in.dtype, TypeError, op, "input type (", dtype_name(in.dtype),
               ") and bias type (", dtype_name(b.dtype), ") should be the same");
  const DType d = in.dtype;
  const bool ok = transposed ? (d == kFloat32 || d == kFloat64 || is_reduced_float(d) || d == kInt64)
                             : kernels::gemm_supports(d);
  TANDEM_CHECK(ok, TypeError, op, "got dtype ", dtype_name(d), ", expected ",
               transposed ? "float32, float64, bfloat16, float16 or int64" : "a floating or integer dtype");
}

void check_bias(const char* op, const MetaRef& w, const MetaRef& b, int64_t oc) {
  if (!b.defined) return;
  TANDEM_CHECK(b.dim() == 1 && b.sizes[0] == oc, ShapeError, op, "given weight of size ", w.sizes,
               ", expected bias to be 1-dimensional with ", oc, " elements, but got bias of size ", b.sizes,
               " instead");
}

/// Validates a conv2d / conv_transpose2d call and computes its geometry.
Conv2dGeometry conv_geometry(const char* op, ArrayRef<MetaRef> in, const AttrReader& a, bool transposed) {
  const MetaRef &x = in[0], &w = in[1], &b = in[2];
  TANDEM_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, op, "expected 3D (unbatched) or 4D (batched) input to ", op,
               ", but got input of size: ", x.sizes);
  TANDEM_CHECK(w.dim() == 4, ShapeError, op, "expected a 4-D weight, but got weight of size ", w.sizes);
  check_conv_dtypes(op, x, w, b, transposed);
  // Attribute layout: conv2d (stride, padding, dilation, groups);
  // conv_transpose2d (stride, padding, output_padding, groups, dilation).
  const auto stride = pair2(op, "stride", a.ints(0));
  const auto dil = pair2(op, "dilation", a.ints(transposed ? 4 : 2));
  const int64_t groups = a.i(3);
  TANDEM_CHECK(groups > 0, ValueError, op, "non-positive groups is not supported, got groups=", groups);
  TANDEM_CHECK(stride[0] > 0 && stride[1] > 0, ValueError, op, "non-positive stride is not supported, got stride=",
               a.ints(0));
  TANDEM_CHECK(dil[0] > 0 && dil[1] > 0, ValueError, op, "dilation should be greater than zero, but got ",
               a.ints(transposed ? 4 : 2));
  const bool unbatched = x.dim() == 3;
  Conv2dGeometry g;
  g.N = unbatched ? 1 : x.sizes[0];
  g.C = x.sizes[unbatched ? 0 : 1];
  g.H = x.sizes[unbatched ? 1 : 2];
  g.W = x.sizes[unbatched ? 2 : 3];
  g.KH = w.sizes[2];
  g.KW = w.sizes[3];
  TANDEM_CHECK(g.H > 0 && g.W > 0, ShapeError, op, "only zero batch or zero channel inputs are supported, but got input shape: ",
               x.sizes);
  g.groups = groups;
  g.stride_h = stride[0];
  g.stride_w = stride[1];
  g.dil_h = dil[0];
  g.dil_w = dil[1];
  TANDEM_CHECK(w.sizes[0] % groups == 0, ShapeError, op, "given groups=", groups,
               ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size ", w.sizes,
               " instead");
  const std::string xs = str_cat(x.sizes);
  if (!transposed) {
    TANDEM_CHECK(w.sizes[0] > 0, ShapeError, op, "given groups=", groups,
                 ", expected weight to be at least 1 at dimension 0, but got weight of size ", w.sizes, " instead");
    TANDEM_CHECK(g.C == w.sizes[1] * groups, ShapeError, op, "given groups=", groups, ", weight of size ", w.sizes,
                 ", expected input", xs, " to have ", w.sizes[1] * groups, " channels, but got ", g.C,
                 " channels instead");
    // PyTorch quirk kept for parity: an input with zero channels gives zero output channels.
    g.OC = g.C == 0 ? 0 : w.sizes[0];
    const AttrValue& pad = a.at(1);
    if (const auto* s = std::get_if<std::string>(&pad)) {
      TANDEM_CHECK(*s == "same" || *s == "valid", ValueError, op, "invalid padding string: '", *s,
                   "', expected 'same' or 'valid'");
      if (*s == "same") {
        TANDEM_CHECK(g.stride_h == 1 && g.stride_w == 1, ValueError, op,
                     "padding='same' is not supported for strided convolutions");
        const int64_t th = g.dil_h * (g.KH - 1), tw = g.dil_w * (g.KW - 1);
        g.pad_t = th / 2;
        g.pad_b = th - g.pad_t;
        g.pad_l = tw / 2;
        g.pad_r = tw - g.pad_l;
      }
    } else {
      const auto p = pair2(op, "padding", a.ints(1));
      TANDEM_CHECK(p[0] >= 0 && p[1] >= 0, ValueError, op, "negative padding is not supported, got padding=",
                   a.ints(1));
      g.pad_t = g.pad_b = p[0];
      g.pad_l = g.pad_r = p[1];
    }
    const int64_t eh = g.dil_h * (g.KH - 1) + 1, ew = g.dil_w * (g.KW - 1) + 1;
    const int64_t ph = g.H + g.pad_t + g.pad_b, pw = g.W + g.pad_l + g.pad_r;
    TANDEM_CHECK(ph >= eh && pw >= ew, ShapeError, op, "calculated padded input size per channel: (", ph, " x ", pw,
                 "). Kernel size: (", eh, " x ", ew, "). Kernel size can't be greater than actual input size");
    g.OH = (ph - eh) / g.stride_h + 1;
    g.OW = (pw - ew) / g.stride_w + 1;
  } else {
    TANDEM_CHECK(w.sizes[0] > 0, ShapeError, op, "given groups=", groups,
                 ", expected weight to be at least 1 at dimension 0, but got weight of size ", w.sizes, " instead");
    TANDEM_CHECK(g.C == w.sizes[0], ShapeError, op, "given transposed=1, weight of size ", w.sizes,
                 ", expected input", xs, " to have ", w.sizes[0], " channels, but got ", g.C, " channels instead");
    g.OC = w.sizes[1] * groups;
    const auto p = pair2(op, "padding", a.ints(1));
    const auto op_ = pair2(op, "output_padding", a.ints(2));
    TANDEM_CHECK(p[0] >= 0 && p[1] >= 0, ValueError, op, "negative padding is not supported, got padding=", a.ints(1));
    TANDEM_CHECK(op_[0] >= 0 && op_[1] >= 0, ValueError, op, "negative output_padding is not supported, got ",
                 a.ints(2));
    TANDEM_CHECK((op_[0] < g.stride_h || op_[0] < g.dil_h) && (op_[1] < g.stride_w || op_[1] < g.dil_w), ValueError,
                 op, "output padding must be smaller than either stride or dilation, but got output_padding_height: ",
                 op_[0], " output_padding_width: ", op_[1], " stride_height: ", g.stride_h, " stride_width: ",
                 g.stride_w, " dilation_height: ", g.dil_h, " dilation_width: ", g.dil_w);
    g.pad_t = p[0];
    g.pad_l = p[1];
    g.pad_b = p[0] - op_[0];
    g.pad_r = p[1] - op_[1];
    g.OH = (g.H - 1) * g.stride_h - 2 * p[0] + g.dil_h * (g.KH - 1) + op_[0] + 1;
    g.OW = (g.W - 1) * g.stride_w - 2 * p[1] + g.dil_w * (g.KW - 1) + op_[1] + 1;
    TANDEM_CHECK(g.OH > 0 && g.OW > 0, ShapeError, op, "given input size per channel: (", g.H, " x ", g.W,
                 "). Calculated output size per channel: (", g.OH, " x ", g.OW, "). Output size is too small");
  }
  check_bias(op, w, b, transposed ? g.OC : w.sizes[0]);
  return g;
}

/// The pooling of _fused_conv2d over the convolution's [N, OC, OH, OW] result (attributes
/// 5 and 6: pool_kernel, pool_stride (empty: the kernel)); no pooling: OH x OW.
kernels::Pool2dGeometry fused_pool_geometry(const char* op, const Conv2dGeometry& g, const AttrReader& a) {
  kernels::Pool2dGeometry p;
  p.N = g.N;
  p.C = g.OC;
  p.H = p.OH = g.OH;
  p.W = p.OW = g.OW;
  const auto& k = a.ints(5);
  if (k.empty()) return p;
  const auto& s = a.ints(6).empty() ? k : a.ints(6);
  TANDEM_CHECK(k.size() == 2 && s.size() == 2 && k[0] > 0 && k[1] > 0 && s[0] > 0 && s[1] > 0, ValueError, op,
               "got pool_kernel ", IntArrayRef(k), " and pool_stride ", IntArrayRef(a.ints(6)),
               ", expected two positive sizes each");
  TANDEM_CHECK(g.OH >= k[0] && g.OW >= k[1], ShapeError, op, "convolution output ", g.OH, "x", g.OW,
               " is smaller than the pooling window ", IntArrayRef(k));
  p.KH = k[0];
  p.KW = k[1];
  p.stride_h = s[0];
  p.stride_w = s[1];
  p.OH = (g.OH - k[0]) / s[0] + 1;
  p.OW = (g.OW - k[1]) / s[1] + 1;
  return p;
}

void conv_meta(MetaContext& c, bool transposed) {
  const Conv2dGeometry g = conv_geometry(c.op, c.inputs, c.attrs, transposed);
  DimVector out{g.OC, g.OH, g.OW};
  if (c.inputs[0].dim() == 4) out.insert(out.begin(), g.N);
  c.outputs.push_back(TensorMeta{c.inputs[0].dtype, std::move(out), {}});
}

/// A [C, H, W] tensor seen as [1, C, H, W] (no copy).
Tensor batched(const Tensor& t) {
  if (t.dim() == 4) return t;
  return make_alias(t, {1, t.size(0), t.size(1), t.size(2)}, {t.numel(), t.stride(0), t.stride(1), t.stride(2)},
                    t.storage_offset());
}

void conv_kernel(KernelContext& c, bool transposed) {
  SmallVec<MetaRef, 3> metas;
  for (const Tensor& t : c.inputs) metas.push_back(MetaRef::of(t));
  const Conv2dGeometry g = conv_geometry(c.op, metas.ref(), c.attrs, transposed);
  const Tensor x = batched(c.inputs[0]), y = batched(c.outputs[0]);
  if (transposed) kernels::conv_transpose2d_forward(g, y, x, c.inputs[1], c.inputs[2]);
  else kernels::conv2d_forward(g, y, x, c.inputs[1], c.inputs[2]);
}

}  // namespace


// ---------------------------------------------------------------- backward rules
// Written with conv2d / conv_transpose2d (the two are adjoint in their input), so the
// rules run on the existing (oneDNN / im2col) kernels and are differentiable again.
namespace {

/// Rows [top, top+h) and columns [left, left+w) of t [N, C, Hf, Wf], zero-filling what
/// lies beyond Hf / Wf.
Tensor crop2d(Tensor t, int64_t top, int64_t h, int64_t left, int64_t w) {
  const int64_t eh = std::max<int64_t>(0, top + h - t.size(2)), ew = std::max<int64_t>(0, left + w - t.size(3));
  if (eh > 0 || ew > 0) t = pad(t, {0, ew, 0, eh});
  if (top != 0 || t.size(2) != h) t = narrow(t, 2, top, h);
  if (left != 0 || t.size(3) != w) t = narrow(t, 3, left, w);
  return t;
}

/// Gradient of conv2d(inp, W, stride s, padding (t, l, b, r), dilation d, groups) with
/// respect to W [Cout, Cin/groups, KH, KW], given the output gradient gout [N, Cout, OH, OW]:
/// a conv2d over the batch with stride and dilation swapped.
Tensor conv_weight_grad(const Tensor& inp, const Tensor& gout, int64_t KH, int64_t KW, std::array<int64_t, 2> s,
                        std::array<int64_t, 4> p, std::array<int64_t, 2> d, int64_t groups) {
  Tensor x = inp;
  std::vector<int64_t> sym{p[0], p[1]};
  if (p[0] != p[2] || p[1] != p[3]) {
    x = pad(x, {p[1], p[3], p[0], p[2]});
    sym = {0, 0};
  }
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), Cg = C / groups;
  // [N, G*Cg, H, W] -> [Cg, G*N, H, W] (channel gi*N + n), a view when groups == 1.
  Tensor xt = groups == 1 ? x.transpose(0, 1)
                          : reshape(permute(reshape(x, {N, groups, Cg, H, W}), {2, 1, 0, 3, 4}), {Cg, groups * N, H, W});
  Tensor gt = gout.transpose(0, 1);  // [Cout, N, OH, OW]
  Tensor r = conv2d(xt, gt, Tensor(), {d[0], d[1]}, sym, {s[0], s[1]}, groups);  // [Cg, Cout, KH', KW']
  if (r.size(2) != KH) r = narrow(r, 2, 0, KH);
  if (r.size(3) != KW) r = narrow(r, 3, 0, KW);
  return r.transpose(0, 1);
}

Tensor unbatch(const Tensor& t, bool unbatched) { return unbatched ? squeeze(t, 0) : t; }

std::vector<AttrValue> backward_attrs(const Conv2dGeometry& g, bool gi, bool gw, bool gb) {
  return {AttrValue(std::vector<int64_t>{g.stride_h, g.stride_w}),
          AttrValue(std::vector<int64_t>{g.pad_t, g.pad_l, g.pad_b, g.pad_r}),
          AttrValue(std::vector<int64_t>{g.dil_h, g.dil_w}), AttrValue(g.groups),
          AttrValue(std::vector<int64_t>{gi, gw, gb})};
}

// conv2d's gradients come from one convolution_backward call (oneDNN's backward-data and
// backward-weights primitives for float32), asking only for the gradients autograd needs.
std::vector<Tensor> conv2d_backward(BackwardContext& c) {
  std::vector<Tensor> r(3);
  if (!c.grad_outputs[0].defined()) return r;
  const Conv2dGeometry g = conv_geometry(c.op, c.input_metas, c.attrs, false);
  const bool unbatched = c.input_metas[0].dim() == 3;
  const Tensor go = unbatched ? unsqueeze(c.grad_outputs[0], 0) : c.grad_outputs[0];
  const Tensor x = unbatched ? unsqueeze(c.inputs[0], 0) : c.inputs[0];
  const bool want_b = c.needs_input_grad.size() > 2 && c.needs_input_grad[2];
  OpOutputs o = dispatch(op_convolution_backward(), {go, x, c.inputs[1]},
                         backward_attrs(g, c.needs_input_grad[0], c.needs_input_grad[1], want_b));
  if (c.needs_input_grad[0]) r[0] = unbatch(o[0], unbatched);
  if (c.needs_input_grad[1]) r[1] = o[1];
  if (want_b) r[2] = o[2];
  return r;
}

/// Validates a convolution_backward call (4-D grad_output, input, weight; attributes
/// stride[2], padding[4] = top, left, bottom, right, dilation[2], groups, output_mask[3])
/// and returns the forward convolution's geometry.
Conv2dGeometry backward_geometry(const char* op, const MetaRef& go, const MetaRef& x, const MetaRef& w,
                                 const AttrReader& a) {
  TANDEM_CHECK(go.dim() == 4 && x.dim() == 4 && w.dim() == 4, ShapeError, op, "got grad_output of size ", go.sizes,
               ", input of size ", x.sizes, " and weight of size ", w.sizes, ", expected 4-D tensors");
  TANDEM_CHECK(go.dtype == x.dtype && x.dtype == w.dtype, TypeError, op, "got grad_output ", dtype_name(go.dtype),
               ", input ", dtype_name(x.dtype), " and weight ", dtype_name(w.dtype), ", expected one dtype");
  TANDEM_CHECK(x.dtype == kFloat32 || x.dtype == kFloat64 || is_reduced_float(x.dtype), TypeError, op, "got dtype ",
               dtype_name(x.dtype), ", expected float32, float64, bfloat16 or float16");
  const auto& st = a.ints(0);
  const auto& pd = a.ints(1);
  const auto& dl = a.ints(2);
  const auto& mask = a.ints(4);
  TANDEM_CHECK(st.size() == 2 && st[0] > 0 && st[1] > 0, ValueError, op, "got stride ", IntArrayRef(st),
               ", expected 2 positive values");
  TANDEM_CHECK(pd.size() == 4 && pd[0] >= 0 && pd[1] >= 0 && pd[2] >= 0 && pd[3] >= 0, ValueError, op, "got padding ",
               IntArrayRef(pd), ", expected 4 non-negative values (top, left, bottom, right)");
  TANDEM_CHECK(dl.size() == 2 && dl[0] > 0 && dl[1] > 0, ValueError, op, "got dilation ", IntArrayRef(dl),
               ", expected 2 positive values");
  TANDEM_CHECK(mask.size() == 3, ValueError, op, "got output_mask ", IntArrayRef(mask), ", expected 3 values");
  Conv2dGeometry g;
  g.N = x.sizes[0];
  g.C = x.sizes[1];
  g.H = x.sizes[2];
  g.W = x.sizes[3];
  g.KH = w.sizes[2];
  g.KW = w.sizes[3];
  g.groups = a.i(3);
  g.stride_h = st[0];
  g.stride_w = st[1];
  g.pad_t = pd[0];
  g.pad_l = pd[1];
  g.pad_b = pd[2];
  g.pad_r = pd[3];
  g.dil_h = dl[0];
  g.dil_w = dl[1];
  TANDEM_CHECK(g.groups > 0 && w.sizes[0] % g.groups == 0 && w.sizes[1] * g.groups == g.C, ShapeError, op,
               "got input of size ", x.sizes, ", weight of size ", w.sizes, " and groups=", g.groups,
               ", expected weight [OC, C/groups, KH, KW] with OC divisible by groups");
  g.OC = g.C == 0 ? 0 : w.sizes[0];
  const int64_t eh = g.dil_h * (g.KH - 1) + 1, ew = g.dil_w * (g.KW - 1) + 1;
  const int64_t ph = g.H + g.pad_t + g.pad_b, pw = g.W + g.pad_l + g.pad_r;
  TANDEM_CHECK(ph >= eh && pw >= ew, ShapeError, op, "got padded input size (", ph, " x ", pw, ") and kernel size (",
               eh, " x ", ew, "), expected the kernel to fit");
  g.OH = (ph - eh) / g.stride_h + 1;
  g.OW = (pw - ew) / g.stride_w + 1;
  const DimVector want{g.N, g.OC, g.OH, g.OW};
  TANDEM_CHECK(go.sizes.equals(want), ShapeError, op, "got grad_output of size ", go.sizes, ", expected ",
               IntArrayRef(want));
  return g;
}

/// conv2d(a, k) with the geometry's (possibly asymmetric) padding, stride, dilation, groups.
Tensor conv_forward_like(const Tensor& a, const Tensor& k, const Conv2dGeometry& g) {
  if (g.pad_t == g.pad_b && g.pad_l == g.pad_r)
    return conv2d(a, k, Tensor(), {g.stride_h, g.stride_w}, {g.pad_t, g.pad_l}, {g.dil_h, g.dil_w}, g.groups);
  return conv2d(pad(a, {g.pad_l, g.pad_r, g.pad_t, g.pad_b}), k, Tensor(), {g.stride_h, g.stride_w}, {0, 0},
                {g.dil_h, g.dil_w}, g.groups);
}

// Double backward. convolution_backward is linear in grad_output and bilinear in
// (grad_output, weight) for grad_input and in (input, grad_output) for grad_weight, so with
// ggI, ggW, ggb the gradients of its outputs:
//   d grad_output = conv(ggI, W) + conv(x, ggW) + ggb (broadcast);
//   d input       = backward-data of a convolution with weight ggW, given grad_output;
//   d weight      = backward-weights with input ggI, given grad_output.
std::vector<Tensor> convolution_backward_rule(BackwardContext& c) {
  std::vector<Tensor> r(3);
  const Tensor &ggi = c.grad_outputs[0], &ggw = c.grad_outputs[1], &ggb = c.grad_outputs[2];
  const Tensor &go = c.inputs[0], &x = c.inputs[1], &w = c.inputs[2];
  const Conv2dGeometry g = backward_geometry(c.op, c.input_metas[0], c.input_metas[1], c.input_metas[2], c.attrs);
  if (c.needs_input_grad[0]) {
    Tensor acc;
    auto add_to = [&](const Tensor& t) { acc = acc.defined() ? add(acc, t) : t; };
    if (ggi.defined()) add_to(conv_forward_like(ggi, w, g));
    if (ggw.defined()) add_to(conv_forward_like(x, ggw, g));
    if (ggb.defined()) {
      const Tensor b = view(ggb, {1, g.OC, 1, 1});
      acc = acc.defined() ? add(acc, b) : expand(b, {g.N, g.OC, g.OH, g.OW}).contiguous();
    }
    r[0] = acc;
  }
  if (c.needs_input_grad[1] && ggw.defined())
    r[1] = dispatch(op_convolution_backward(), {go, x, ggw}, backward_attrs(g, true, false, false))[0];
  if (c.needs_input_grad[2] && ggi.defined())
    r[2] = dispatch(op_convolution_backward(), {go, ggi, w}, backward_attrs(g, false, true, false))[1];
  return r;
}

std::vector<Tensor> conv_transpose2d_backward(BackwardContext& c) {
  std::vector<Tensor> r(3);
  if (!c.grad_outputs[0].defined()) return r;
  const Conv2dGeometry g = conv_geometry(c.op, c.input_metas, c.attrs, true);
  const bool unbatched = c.input_metas[0].dim() == 3;
  const Tensor go = unbatched ? unsqueeze(c.grad_outputs[0], 0) : c.grad_outputs[0];
  const Tensor& w = c.inputs[1];
  if (c.needs_input_grad[0]) {
    Tensor gi = conv2d(go, w, Tensor(), {g.stride_h, g.stride_w}, {g.pad_t, g.pad_l}, {g.dil_h, g.dil_w}, g.groups);
    r[0] = unbatch(crop2d(gi, 0, g.H, 0, g.W), unbatched);
  }
  if (c.needs_input_grad[1]) {
    // The adjoint conv2d(go, w) maps [N, OC, OH, OW] to x's shape; its weight gradient
    // given "output gradient" x is the weight gradient of the transposed convolution.
    const Tensor x = unbatched ? unsqueeze(c.inputs[0], 0) : c.inputs[0];
    if (g.pad_b >= 0 && g.pad_r >= 0) {
      // That adjoint has padding (padding, padding - output_padding) and maps go exactly
      // onto x's size: one convolution_backward (oneDNN's backward-weights for float32).
      r[1] = dispatch(op_convolution_backward(), {x, go, w}, backward_attrs(g, false, true, false))[1];
    } else {
      r[1] = conv_weight_grad(go, x, g.KH, g.KW, {g.stride_h, g.stride_w}, {g.pad_t, g.pad_l, g.pad_t, g.pad_l},
                              {g.dil_h, g.dil_w}, g.groups);
    }
  }
  if (c.needs_input_grad.size() > 2 && c.needs_input_grad[2]) r[2] = sum(go, {0, 2, 3});
  return r;
}

}  // namespace

TANDEM_REGISTER_OP(conv2d) {
  OpDef d;
  d.name = "conv2d";
  d.autocast = Autocast::LowerPrecision;
  d.inputs = {{"input"}, {"weight"}, {"bias", true, true}};
  d.attrs = {{"stride", std::vector<int64_t>{1, 1}},
             {"padding", std::vector<int64_t>{0, 0}},  // or the string "same" / "valid"
             {"dilation", std::vector<int64_t>{1, 1}},
             {"groups", int64_t{1}}};
  d.meta = [](MetaContext& c) { conv_meta(c, false); };
  d.cpu_kernel = [](KernelContext& c) { conv_kernel(c, false); };
  d.backward = conv2d_backward;
  d.save_inputs = 0b011;  // input and weight; the bias gradient needs only grad_output
  return d;
}

// _fused_conv2d(input, weight, bias?; stride, padding, dilation, groups, relu, pool_kernel,
// pool_stride, channels_last) = max_pool2d(relu(conv2d(...)), pool_kernel, pool_stride),
// written with channels-last strides when channels_last (the pass sets it when another
// convolution reads the result: contiguous channel-block stores): compiled mode's
// fused convolution block, made by the fuse_conv_blocks pass from a conv2d whose result
// only a relu reads (and whose result only a max_pool2d without padding, dilation or
// ceil_mode reads). Bitwise the unfused result (kernels::conv2d_block_forward). relu=false
// or an empty pool_kernel leaves that part out. float32 or bfloat16 (autocast programs)
// 4-D input only; no backward (the pass runs on programs without gradients).
TANDEM_REGISTER_OP(_fused_conv2d) {
  OpDef d;
  d.name = "_fused_conv2d";
  d.inputs = {{"input"}, {"weight"}, {"bias", true, true}};
  d.attrs = {{"stride", std::vector<int64_t>{1, 1}},
             {"padding", std::vector<int64_t>{0, 0}},
             {"dilation", std::vector<int64_t>{1, 1}},
             {"groups", int64_t{1}},
             {"relu", false},
             {"pool_kernel", std::vector<int64_t>{}},
             {"pool_stride", std::vector<int64_t>{}},
             {"channels_last", false}};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.inputs[0].dim() == 4, ShapeError, c.op, "got input of shape ", c.inputs[0].sizes,
                 ", expected [N, C, H, W]");
    const DType dt = c.inputs[0].dtype;
    TANDEM_CHECK(dt == kFloat32 || dt == kBFloat16, TypeError, c.op, "got dtype ", dtype_name(dt),
                 ", expected float32 or bfloat16");
    const Conv2dGeometry g = conv_geometry(c.op, c.inputs, c.attrs, false);
    const kernels::Pool2dGeometry p = fused_pool_geometry(c.op, g, c.attrs);
    DimVector strides;  // channels last: cheaper to write, as cheap for the next convolution to read
    if (c.attrs.b(7)) strides = {p.OH * p.OW * g.OC, 1, p.OW * g.OC, g.OC};
    c.outputs.push_back(TensorMeta{dt, {g.N, g.OC, p.OH, p.OW}, std::move(strides)});
  };
  d.cpu_kernel = [](KernelContext& c) {
    SmallVec<MetaRef, 3> metas;
    for (const Tensor& t : c.inputs) metas.push_back(MetaRef::of(t));
    const Conv2dGeometry g = conv_geometry(c.op, metas.ref(), c.attrs, false);
    const kernels::Pool2dGeometry p = fused_pool_geometry(c.op, g, c.attrs);
    kernels::conv2d_block_forward(g, c.outputs[0], c.inputs[0], c.inputs[1], c.inputs[2], c.attrs.b(4),
                                  c.attrs.ints(5).empty() ? nullptr : &p);
  };
  return d;
}

// _fused_conv2d_with_indices(input, weight, bias?; _fused_conv2d's attributes) -> (output,
// indices): _fused_conv2d with relu and a 2x2, stride 2 pool, that also returns each
// window's argmax as a code 0..3 (uint8, contiguous [N, OC, OH, OW]; row-major position in
// the window, chosen as max_pool2d_backward chooses it), plus 4 where the window's maximum
// is <= 0. The fuse_conv_blocks pass makes it in training programs, where the ReLU result
// is needed only by the backward of the pool and of the ReLU:
// _fused_max_pool2d_relu_backward computes both from the codes alone, so the ReLU result
// (4x the pooled bytes) is neither written nor saved.
TANDEM_REGISTER_OP(_fused_conv2d_with_indices) {
  OpDef d;
  d.name = "_fused_conv2d_with_indices";
  d.inputs = op__fused_conv2d().inputs;
  d.attrs = op__fused_conv2d().attrs;
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.meta = [](MetaContext& c) {
    op__fused_conv2d().meta(c);
    const TensorMeta& y = c.outputs[0];
    const auto& k = c.attrs.ints(5);
    const auto& s = c.attrs.ints(6).empty() ? k : c.attrs.ints(6);
    TANDEM_CHECK(c.attrs.b(4) && k.size() == 2 && k[0] == 2 && k[1] == 2 && s.size() == 2 && s[0] == 2 && s[1] == 2,
                 ValueError, c.op, "got relu=", c.attrs.b(4) ? "true" : "false", ", pool_kernel ", IntArrayRef(k),
                 " and pool_stride ", IntArrayRef(c.attrs.ints(6)),
                 ", expected relu=true with a 2x2 pool of stride 2 (the window codes cover no other)");
    c.outputs.push_back(TensorMeta{kUInt8, y.sizes, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    SmallVec<MetaRef, 3> metas;
    for (const Tensor& t : c.inputs) metas.push_back(MetaRef::of(t));
    const Conv2dGeometry g = conv_geometry(c.op, metas.ref(), c.attrs, false);
    const kernels::Pool2dGeometry p = fused_pool_geometry(c.op, g, c.attrs);
    kernels::conv2d_block_forward(g, c.outputs[0], c.inputs[0], c.inputs[1], c.inputs[2], true, &p, c.outputs[1]);
  };
  return d;
}

// convolution_backward(grad_output, input, weight; stride, padding, dilation, groups,
// output_mask) -> (grad_input, grad_weight, grad_bias): the gradients of a 4-D conv2d
// (PyTorch's aten::convolution_backward for the non-transposed 2-D case). padding is per
// side (top, left, bottom, right) so asymmetric 'same' padding is exact. An output whose
// output_mask entry is 0 is not computed and has size [0].
TANDEM_REGISTER_OP(convolution_backward) {
  OpDef d;
  d.name = "convolution_backward";
  d.inputs = {{"grad_output"}, {"input"}, {"weight"}};
  d.attrs = {{"stride", std::vector<int64_t>{1, 1}},
             {"padding", std::vector<int64_t>{0, 0, 0, 0}},
             {"dilation", std::vector<int64_t>{1, 1}},
             {"groups", int64_t{1}},
             {"output_mask", std::vector<int64_t>{1, 1, 1}}};
  d.num_outputs = 3;
  d.meta = [](MetaContext& c) {
    const MetaRef &go = c.inputs[0], &x = c.inputs[1], &w = c.inputs[2];
    const Conv2dGeometry g = backward_geometry(c.op, go, x, w, c.attrs);
    const auto& mask = c.attrs.ints(4);
    const DType dt = x.dtype;
    c.outputs.push_back(TensorMeta{dt, mask[0] ? x.sizes.vec() : DimVector{0}, {}});
    c.outputs.push_back(TensorMeta{dt, mask[1] ? w.sizes.vec() : DimVector{0}, {}});
    c.outputs.push_back(TensorMeta{dt, mask[2] ? DimVector{g.OC} : DimVector{0}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Conv2dGeometry g = backward_geometry(c.op, MetaRef::of(c.inputs[0]), MetaRef::of(c.inputs[1]),
                                               MetaRef::of(c.inputs[2]), c.attrs);
    const auto& mask = c.attrs.ints(4);
    auto pick = [&](size_t i) { return mask[i] ? c.outputs[i] : Tensor(); };
    kernels::conv2d_backward(g, pick(0), pick(1), pick(2), c.inputs[0], c.inputs[1], c.inputs[2]);
  };
  // grad_weight and grad_bias sum over the images of grad_output and input; the kernel
  // sums a large float32 batch in chunks (kernels::conv2d_backward_batch_chunk), computing
  // grad_input (per image) chunk by chunk alongside.
  d.batch_inputs = 0b011;
  d.batch_outputs = 0b001;
  d.batch_chunk = [](ArrayRef<MetaRef> in, const AttrReader& a) -> int64_t {
    const auto& mask = a.ints(4);
    if (mask.size() != 3 || !mask[1]) return 0;
    const Conv2dGeometry g = backward_geometry("convolution_backward", in[0], in[1], in[2], a);
    return kernels::conv2d_backward_batch_chunk(g, in[1].dtype, mask[0] != 0);
  };
  d.backward = convolution_backward_rule;
  d.save_inputs = 0b111;
  return d;
}

TANDEM_REGISTER_OP(conv_transpose2d) {
  OpDef d;
  d.name = "conv_transpose2d";
  d.autocast = Autocast::LowerPrecision;
  d.inputs = {{"input"}, {"weight"}, {"bias", true, true}};
  d.attrs = {{"stride", std::vector<int64_t>{1, 1}},
             {"padding", std::vector<int64_t>{0, 0}},
             {"output_padding", std::vector<int64_t>{0, 0}},
             {"groups", int64_t{1}},
             {"dilation", std::vector<int64_t>{1, 1}}};
  d.meta = [](MetaContext& c) { conv_meta(c, true); };
  d.cpu_kernel = [](KernelContext& c) { conv_kernel(c, true); };
  d.backward = conv_transpose2d_backward;
  d.save_inputs = 0b011;
  return d;
}

TANDEM_REGISTER_OP(conv1d) {
  OpDef d;
  d.name = "conv1d";
  d.autocast = Autocast::LowerPrecision;
  d.inputs = {{"input"}, {"weight"}, {"bias", true, true}};
  d.attrs = {{"stride", std::vector<int64_t>{1}},
             {"padding", std::vector<int64_t>{0}},
             {"dilation", std::vector<int64_t>{1}},
             {"groups", int64_t{1}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) {
    const Tensor &x = in[0], &w = in[1], &b = in[2];
    TANDEM_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "conv1d",
                 "expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ", x.sizes());
    TANDEM_CHECK(w.dim() == 3, ShapeError, "conv1d", "expected a 3-D weight, but got weight of size ", w.sizes());
    auto one = [](const char* what, const std::vector<int64_t>& v) {
      TANDEM_CHECK(v.size() == 1, ValueError, "conv1d", "expected ", what,
                   " to be a single integer value or a list of 1 values to match the convolution dimensions, but got ",
                   what, "=", IntArrayRef(v));
      return std::vector<int64_t>{1, v[0]};
    };
    Attrs attrs;
    attrs.push_back(one("stride", a.ints(0)));
    if (const auto* s = std::get_if<std::string>(&a.at(1))) attrs.push_back(*s);
    else attrs.push_back(std::vector<int64_t>{0, one("padding", a.ints(1))[1]});
    attrs.push_back(one("dilation", a.ints(2)));
    attrs.push_back(a.i(3));
    // [N, C, L] -> [N, C, 1, L]; weight [OC, C/g, K] -> [OC, C/g, 1, K].
    Tensor y = dispatch1(op_conv2d(), {unsqueeze(x, -2), unsqueeze(w, -2), b}, attrs.ref());
    return std::vector<Tensor>{squeeze(y, -2)};
  };
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return dispatch1(op_conv2d(), {input, weight, bias},
                   {AttrValue(stride.vec()), AttrValue(padding.vec()), AttrValue(dilation.vec()), AttrValue(groups)});
}
namespace {
std::string padding_name(PaddingMode p) { return p == PaddingMode::Same ? "same" : "valid"; }
}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, PaddingMode padding,
              IntArrayRef dilation, int64_t groups) {
  return dispatch1(op_conv2d(), {input, weight, bias},
                   {AttrValue(stride.vec()), AttrValue(padding_name(padding)), AttrValue(dilation.vec()),
                    AttrValue(groups)});
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return dispatch1(op_conv1d(), {input, weight, bias},
                   {AttrValue(stride.vec()), AttrValue(padding.vec()), AttrValue(dilation.vec()), AttrValue(groups)});
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, PaddingMode padding,
              IntArrayRef dilation, int64_t groups) {
  return dispatch1(op_conv1d(), {input, weight, bias},
                   {AttrValue(stride.vec()), AttrValue(padding_name(padding)), AttrValue(dilation.vec()),
                    AttrValue(groups)});
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return dispatch1(op_conv_transpose2d(), {input, weight, bias},
                   {AttrValue(stride.vec()), AttrValue(padding.vec()), AttrValue(output_padding.vec()),
                    AttrValue(groups), AttrValue(dilation.vec())});
}

}  // namespace tandem
