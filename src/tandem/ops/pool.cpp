// Pooling ops (declared in conv.h): max_pool2d (+ _with_indices), avg_pool2d,
// adaptive_avg_pool2d, adaptive_max_pool2d. Kernels in kernels/cpu/pool.cpp.
#include <array>

#include "tandem/kernels/cpu/conv.h"
#include "tandem/ops/conv.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/linalg.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace {

using kernels::Pool2dGeometry;

std::array<int64_t, 2> pool_pair(const char* op, const char* what, const std::vector<int64_t>& v) {
  TANDEM_CHECK(v.size() == 1 || v.size() == 2, ValueError, op, what, " must either be a single int, or a list of two ints, got ",
               IntArrayRef(v));
  return v.size() == 1 ? std::array<int64_t, 2>{v[0], v[0]} : std::array<int64_t, 2>{v[0], v[1]};
}

/// floor(a / b) for b > 0 (C++ division truncates toward zero).
int64_t div_floor(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t out = div_floor(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void check_pool_input(const char* op, const MetaRef& x) {
  bool ok = x.dim() == 3 || x.dim() == 4;
  for (int64_t d = x.dim() == 4 ? 1 : 0; ok && d < x.dim(); ++d) ok = x.sizes[d] > 0;
  TANDEM_CHECK(ok, ShapeError, op, "expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
               "but got: ", x.sizes);
}

void check_dtype(const char* op, DType d, bool allow_int64) {
  const bool ok = d == kFloat32 || d == kFloat64 || d == kBFloat16 || d == kFloat16 || (allow_int64 && d == kInt64);
  TANDEM_CHECK(ok, TypeError, op, "got dtype ", dtype_name(d), ", expected float32, float64, bfloat16, float16",
               allow_int64 ? " or int64" : "");
}

/// Validates a max/avg pool call. Attribute layout: kernel_size, stride, padding, then
/// dilation + ceil_mode (max) or ceil_mode (avg).
Pool2dGeometry pool_geometry(const char* op, const MetaRef& x, const AttrReader& a, bool is_max) {
  check_pool_input(op, x);
  const auto k = pool_pair(op, "kernel_size", a.ints(0));
  const auto s = a.ints(1).empty() ? k : pool_pair(op, "stride", a.ints(1));
  const auto p = pool_pair(op, "padding", a.ints(2));
  const auto dl = is_max ? pool_pair(op, "dilation", a.ints(3)) : std::array<int64_t, 2>{1, 1};
  const bool ceil_mode = a.b(is_max ? 4 : 3);
  TANDEM_CHECK(k[0] > 0 && k[1] > 0, ValueError, op, "kernel size should be greater than zero, but got kernel_size=",
               a.ints(0));
  TANDEM_CHECK(s[0] > 0 && s[1] > 0, ValueError, op, "stride should be greater than zero, but got stride=", a.ints(1));
  TANDEM_CHECK(dl[0] > 0 && dl[1] > 0, ValueError, op, "dilation should be greater than zero, but got dilation=",
               IntArrayRef(dl.data(), 2));
  TANDEM_CHECK(p[0] >= 0 && p[1] >= 0, ValueError, op, "pad must be non-negative, but got padding=", a.ints(2));
  TANDEM_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, ValueError, op,
               "pad should be at most half of kernel size, but got pad=", a.ints(2), " and kernel_size=", a.ints(0));
  Pool2dGeometry g;
  const bool unbatched = x.dim() == 3;
  g.N = unbatched ? 1 : x.sizes[0];
  g.C = x.sizes[unbatched ? 0 : 1];
  g.H = x.sizes[unbatched ? 1 : 2];
  g.W = x.sizes[unbatched ? 2 : 3];
  g.KH = k[0];
  g.KW = k[1];
  g.stride_h = s[0];
  g.stride_w = s[1];
  g.pad_h = p[0];
  g.pad_w = p[1];
  g.dil_h = dl[0];
  g.dil_w = dl[1];
  g.ceil_mode = ceil_mode;
  g.OH = pool_out(g.H, g.KH, g.pad_h, g.stride_h, g.dil_h, ceil_mode);
  g.OW = pool_out(g.W, g.KW, g.pad_w, g.stride_w, g.dil_w, ceil_mode);
  TANDEM_CHECK(g.OH >= 1 && g.OW >= 1, ShapeError, op, "given input size: (", g.C, "x", g.H, "x", g.W,
               "). Calculated output size: (", g.C, "x", g.OH, "x", g.OW, "). Output size is too small");
  return g;
}

DimVector out_sizes(const MetaRef& x, int64_t oh, int64_t ow) {
  DimVector out(x.sizes.begin(), x.sizes.end() - 2);
  out.push_back(oh);
  out.push_back(ow);
  return out;
}

/// A [C, H, W] tensor seen as [1, C, H, W] (no copy).
Tensor batched(const Tensor& t) {
  if (!t.defined() || t.dim() == 4) return t;
  return make_alias(t, {1, t.size(0), t.size(1), t.size(2)}, {t.numel(), t.stride(0), t.stride(1), t.stride(2)},
                    t.storage_offset());
}

void max_pool_meta(MetaContext& c, bool with_indices) {
  check_dtype(c.op, c.inputs[0].dtype, false);
  const Pool2dGeometry g = pool_geometry(c.op, c.inputs[0], c.attrs, true);
  DimVector out = out_sizes(c.inputs[0], g.OH, g.OW);
  c.outputs.push_back(TensorMeta{c.inputs[0].dtype, out, {}});
  if (with_indices) c.outputs.push_back(TensorMeta{kInt64, out, {}});
}

void max_pool_kernel(KernelContext& c) {
  const Pool2dGeometry g = pool_geometry(c.op, MetaRef::of(c.inputs[0]), c.attrs, true);
  kernels::max_pool2d_forward(g, batched(c.outputs[0]), c.outputs.size() > 1 ? batched(c.outputs[1]) : Tensor(),
                              batched(c.inputs[0]));
}

std::vector<AttrSpec> max_pool_attrs() {
  return {{"kernel_size", std::vector<int64_t>{}},
          {"stride", std::vector<int64_t>{}},  // empty: kernel_size
          {"padding", std::vector<int64_t>{0}},
          {"dilation", std::vector<int64_t>{1}},
          {"ceil_mode", false}};
}

std::array<int64_t, 2> adaptive_size(const char* op, const MetaRef& x, const std::vector<int64_t>& size) {
  TANDEM_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, op, "expected 3D or 4D input, but got input of size ", x.sizes);
  for (int64_t d = x.dim() == 4 ? 1 : 0; d < x.dim(); ++d)
    TANDEM_CHECK(x.sizes[d] > 0, ShapeError, op,
                 "expected input to have non-zero size for non-batch dimensions, but input has sizes ", x.sizes,
                 " with dimension ", d, " being empty");
  const auto o = pool_pair(op, "output_size", size);
  TANDEM_CHECK(o[0] >= 0 && o[1] >= 0, ValueError, op,
               "elements of output_size must be greater than or equal to 0 but received ", IntArrayRef(size));
  return o;
}

}  // namespace


const OpDef& op_max_pool2d_with_indices();
const OpDef& op_max_pool2d_backward();
const OpDef& op_avg_pool2d();

// ---------------------------------------------------------------- backward rules
// Written with ops (scatter_add, conv_transpose2d, matmul) so they are differentiable again.
namespace {

/// Sends each output gradient to the flat (h * W + w) input position its index names,
/// summing where windows overlap.
Tensor scatter_to_indices(const Tensor& grad, const Tensor& indices, const MetaRef& in) {
  const int64_t d = in.dim(), HW = in.sizes[d - 2] * in.sizes[d - 1];
  const int64_t planes = HW == 0 ? 0 : in.numel() / HW;
  const int64_t per = grad.size(-2) * grad.size(-1);
  Tensor z = zeros({planes, HW}, in.dtype);
  if (planes == 0 || per == 0) return view(z, in.sizes);
  Tensor r = scatter_add(z, 1, reshape(indices, {planes, per}), reshape(grad, {planes, per}));
  return view(r, in.sizes);
}

std::vector<Tensor> indices_backward(BackwardContext& c) {
  if (!c.grad_outputs[0].defined()) return {Tensor()};
  return {scatter_to_indices(c.grad_outputs[0], c.outputs[1], c.input_metas[0])};
}

// max_pool2d saves its input; max_pool2d_backward finds each window's argmax again and
// writes the gradient there in one pass (no index tensor, no scatter).
std::vector<Tensor> max_pool2d_rule(BackwardContext& c) {
  if (!c.grad_outputs[0].defined()) return {Tensor()};
  return {dispatch1(op_max_pool2d_backward(), {c.grad_outputs[0], c.inputs[0]}, c.attrs.all())};
}

// max_pool2d_backward is linear in grad_output: its adjoint gathers the incoming gradient
// at each window's argmax. The argmax is piecewise constant in the input: no input gradient.
std::vector<Tensor> max_pool2d_backward_rule(BackwardContext& c) {
  std::vector<Tensor> r(2);
  const Tensor& gg = c.grad_outputs[0];
  if (!gg.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& in = c.input_metas[1];
  const Tensor& x = c.inputs[1];  // the saved input
  OpOutputs o = dispatch(op_max_pool2d_with_indices(), {x.detach()}, c.attrs.all());
  const Tensor& idx = o[1];
  const int64_t d = in.dim(), HW = in.sizes[d - 2] * in.sizes[d - 1];
  const int64_t planes = HW == 0 ? 0 : in.numel() / HW;
  const int64_t per = idx.size(-2) * idx.size(-1);
  if (planes == 0 || per == 0) {
    r[0] = zeros(idx.sizes(), in.dtype);
    return r;
  }
  r[0] = view(gather(reshape(gg, {planes, HW}), 1, reshape(idx, {planes, per})), idx.sizes());
  return r;
}

std::vector<Tensor> avg_pool2d_backward(BackwardContext& c) {
  const Tensor& go = c.grad_outputs[0];
  if (!go.defined()) return {Tensor()};
  const MetaRef& in = c.input_metas[0];
  const Pool2dGeometry g = pool_geometry(c.op, in, c.attrs, false);
  const int64_t N = in.dim() == 4 ? in.sizes[0] : 1, C = in.sizes[in.dim() - 3];
  // 1 / divisor per output position: avg over ones divided by the count of real inputs.
  Tensor scaled;
  if (auto dv = c.attrs.opt_i(5)) {
    scaled = go * Scalar(1.0 / static_cast<double>(*dv));
  } else {
    Tensor one = ones({1, 1, g.H, g.W}, in.dtype);
    std::vector<AttrValue> a(c.attrs.all().begin(), c.attrs.all().end());
    Tensor mean = dispatch1(op_avg_pool2d(), {one}, a);
    a[5] = int64_t{1};
    Tensor count = dispatch1(op_avg_pool2d(), {one}, a);
    scaled = go * view(tandem::div(mean, count), {g.OH, g.OW});
  }
  // Adjoint of the window sum: a transposed convolution with a ones kernel, cropped to
  // the unpadded input.
  Tensor g4 = reshape(scaled, {N * C, 1, g.OH, g.OW});
  Tensor k = ones({1, 1, g.KH, g.KW}, in.dtype);
  Tensor full = conv_transpose2d(g4, k, Tensor(), {g.stride_h, g.stride_w});
  const int64_t eh = std::max<int64_t>(0, g.pad_h + g.H - full.size(2));
  const int64_t ew = std::max<int64_t>(0, g.pad_w + g.W - full.size(3));
  if (eh > 0 || ew > 0) full = pad(full, {0, ew, 0, eh});
  full = narrow(narrow(full, 2, g.pad_h, g.H), 3, g.pad_w, g.W);
  return {reshape(full, in.sizes)};
}

/// [out, in] matrix averaging adaptive windows [floor(i*in/out), ceil((i+1)*in/out)).
Tensor adaptive_matrix(int64_t out, int64_t in, DType dt) {
  std::vector<double> m(static_cast<size_t>(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const int64_t s = i * in / out, e = ((i + 1) * in + out - 1) / out;
    for (int64_t j = s; j < e; ++j) m[static_cast<size_t>(i * in + j)] = 1.0 / static_cast<double>(e - s);
  }
  return from_vector<double>(m, {out, in}, kFloat64).to(dt);
}

std::vector<Tensor> adaptive_avg_pool2d_backward(BackwardContext& c) {
  const Tensor& go = c.grad_outputs[0];
  if (!go.defined()) return {Tensor()};
  const MetaRef& in = c.input_metas[0];
  const int64_t d = in.dim(), H = in.sizes[d - 2], W = in.sizes[d - 1];
  if (in.numel() == 0) return {zeros(in.sizes, in.dtype)};
  // out = A_h x A_w^T per plane, so grad = A_h^T g A_w.
  const Tensor ah = adaptive_matrix(go.size(-2), H, in.dtype), aw = adaptive_matrix(go.size(-1), W, in.dtype);
  return {matmul(matmul(ah.t(), go), aw)};
}

}  // namespace

TANDEM_REGISTER_OP(max_pool2d) {
  OpDef d;
  d.name = "max_pool2d";
  d.inputs = {{"input"}};
  d.attrs = max_pool_attrs();
  d.meta = [](MetaContext& c) { max_pool_meta(c, false); };
  d.cpu_kernel = max_pool_kernel;
  d.backward = max_pool2d_rule;
  d.save_inputs = 0b1;  // backward recomputes the argmax from the input
  return d;
}

// max_pool2d_backward(grad_output, input; max_pool2d's attributes) -> grad_input: zero
// except at each window's argmax, where the window's grad_output is added (PyTorch's
// max_pool2d_with_indices_backward, with the argmax found again instead of stored).
TANDEM_REGISTER_OP(max_pool2d_backward) {
  OpDef d;
  d.name = "max_pool2d_backward";
  d.inputs = {{"grad_output"}, {"input"}};
  d.attrs = max_pool_attrs();
  d.meta = [](MetaContext& c) {
    const MetaRef &go = c.inputs[0], &x = c.inputs[1];
    check_dtype(c.op, x.dtype, false);
    TANDEM_CHECK(go.dtype == x.dtype, TypeError, c.op, "got grad_output ", dtype_name(go.dtype), " and input ",
                 dtype_name(x.dtype), ", expected one dtype");
    const Pool2dGeometry g = pool_geometry(c.op, x, c.attrs, true);
    const DimVector want = out_sizes(x, g.OH, g.OW);
    TANDEM_CHECK(go.sizes.equals(want), ShapeError, c.op, "got grad_output of size ", go.sizes, ", expected ",
                 IntArrayRef(want));
    c.outputs.push_back(TensorMeta{x.dtype, x.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Pool2dGeometry g = pool_geometry(c.op, MetaRef::of(c.inputs[1]), c.attrs, true);
    kernels::max_pool2d_backward(g, batched(c.outputs[0]), batched(c.inputs[0]), batched(c.inputs[1]));
  };
  d.backward = max_pool2d_backward_rule;
  d.save_inputs = 0b10;  // the input (to find the argmax again); linear in grad_output
  return d;
}

// _fused_max_pool2d_relu_backward(grad_output, indices; input_size) -> grad_input: the
// gradient of max_pool2d(relu(x)) with 2x2 windows of stride 2 (no padding, dilation or
// ceil_mode) from the window codes of _fused_conv2d_with_indices, bitwise
// threshold_backward(max_pool2d_backward(grad_output, relu(x)), relu(x), 0): a code says
// where each window's argmax is and (bit 4) whether its maximum, relu(x) there, is <= 0,
// so neither relu(x) nor the pooled output is read. float32 or bfloat16 grad_output,
// uint8 indices, both [N, C, OH, OW]; input_size [H, W] with OH = H / 2 and OW = W / 2
// (floor). Made by the fuse_conv_blocks pass in training programs; no backward.
TANDEM_REGISTER_OP(_fused_max_pool2d_relu_backward) {
  OpDef d;
  d.name = "_fused_max_pool2d_relu_backward";
  d.inputs = {{"grad_output"}, {"indices", false, false, false}};
  d.batch_inputs = 0b11;  // every image's windows are its own
  d.batch_separable = true;
  d.attrs = {{"input_size", std::vector<int64_t>{}}};
  d.meta = [](MetaContext& c) {
    const MetaRef &go = c.inputs[0], &idx = c.inputs[1];
    TANDEM_CHECK((go.dtype == kFloat32 || go.dtype == kBFloat16) && idx.dtype == kUInt8, TypeError, c.op,
                 "got grad_output ", dtype_name(go.dtype), " and indices ", dtype_name(idx.dtype),
                 ", expected float32 or bfloat16 grad_output and uint8 indices");
    TANDEM_CHECK(go.dim() == 4 && idx.sizes.equals(go.sizes), ShapeError, c.op, "got grad_output ", go.sizes,
                 " and indices ", idx.sizes, ", expected one [N, C, OH, OW] size");
    const auto& hw = c.attrs.ints(0);
    TANDEM_CHECK(hw.size() == 2 && hw[0] / 2 == go.sizes[2] && hw[1] / 2 == go.sizes[3], ValueError, c.op,
                 "got input_size ", IntArrayRef(hw), " for pooled size ", go.sizes,
                 ", expected [H, W] with H / 2 = OH and W / 2 = OW");
    c.outputs.push_back(TensorMeta{go.dtype, {go.sizes[0], go.sizes[1], hw[0], hw[1]}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& gi = c.outputs[0];
    if (gi.numel() == 0) return;
    Pool2dGeometry g;
    g.N = gi.size(0), g.C = gi.size(1), g.H = gi.size(2), g.W = gi.size(3);
    g.OH = g.H / 2, g.OW = g.W / 2, g.KH = g.KW = 2, g.stride_h = g.stride_w = 2;
    const Tensor go = c.inputs[0].contiguous(), idx = c.inputs[1].contiguous();
    if (gi.dtype() == kBFloat16)
      kernels::max_pool2d_relu_backward_bf16(g, static_cast<BFloat16*>(gi.data_ptr()),
                                             static_cast<const BFloat16*>(go.data_ptr()),
                                             static_cast<const uint8_t*>(idx.data_ptr()));
    else
      kernels::max_pool2d_relu_backward_f32(g, static_cast<float*>(gi.data_ptr()),
                                            static_cast<const float*>(go.data_ptr()),
                                            static_cast<const uint8_t*>(idx.data_ptr()));
  };
  return d;
}

TANDEM_REGISTER_OP(max_pool2d_with_indices) {
  OpDef d;
  d.name = "max_pool2d_with_indices";
  d.inputs = {{"input"}};
  d.attrs = max_pool_attrs();
  d.num_outputs = 2;
  d.meta = [](MetaContext& c) { max_pool_meta(c, true); };
  d.cpu_kernel = max_pool_kernel;
  d.backward = indices_backward;
  d.save_outputs = 0b10;  // the indices (the input's shape is in BackwardContext::input_metas)
  d.output_differentiable = {true, false};
  return d;
}

TANDEM_REGISTER_OP(avg_pool2d) {
  OpDef d;
  d.name = "avg_pool2d";
  d.inputs = {{"input"}};
  d.attrs = {{"kernel_size", std::vector<int64_t>{}},
             {"stride", std::vector<int64_t>{}},
             {"padding", std::vector<int64_t>{0}},
             {"ceil_mode", false},
             {"count_include_pad", true},
             {"divisor_override", std::monostate{}}};
  d.meta = [](MetaContext& c) {
    check_dtype(c.op, c.inputs[0].dtype, true);
    const Pool2dGeometry g = pool_geometry(c.op, c.inputs[0], c.attrs, false);
    TANDEM_CHECK(c.attrs.opt_i(5).value_or(1) != 0, ValueError, c.op, "divisor must be not zero");
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, out_sizes(c.inputs[0], g.OH, g.OW), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Pool2dGeometry g = pool_geometry(c.op, MetaRef::of(c.inputs[0]), c.attrs, false);
    kernels::avg_pool2d_forward(g, batched(c.outputs[0]), batched(c.inputs[0]), c.attrs.b(4), c.attrs.opt_i(5));
  };
  // The backward needs only the input's shape and the attributes.
  d.backward = avg_pool2d_backward;
  return d;
}

TANDEM_REGISTER_OP(adaptive_avg_pool2d) {
  OpDef d;
  d.name = "adaptive_avg_pool2d";
  d.inputs = {{"input"}};
  d.attrs = {{"output_size", std::vector<int64_t>{}}};
  d.meta = [](MetaContext& c) {
    check_dtype(c.op, c.inputs[0].dtype, false);
    const auto o = adaptive_size(c.op, c.inputs[0], c.attrs.ints(0));
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, out_sizes(c.inputs[0], o[0], o[1]), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    kernels::adaptive_avg_pool2d_forward(batched(c.outputs[0]), batched(c.inputs[0]));
  };
  d.backward = adaptive_avg_pool2d_backward;
  return d;
}

TANDEM_REGISTER_OP(adaptive_max_pool2d) {
  OpDef d;
  d.name = "adaptive_max_pool2d";
  d.inputs = {{"input"}};
  d.attrs = {{"output_size", std::vector<int64_t>{}}};
  d.num_outputs = 2;
  d.meta = [](MetaContext& c) {
    check_dtype(c.op, c.inputs[0].dtype, false);
    const auto o = adaptive_size(c.op, c.inputs[0], c.attrs.ints(0));
    DimVector out = out_sizes(c.inputs[0], o[0], o[1]);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, out, {}});
    c.outputs.push_back(TensorMeta{kInt64, out, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    kernels::adaptive_max_pool2d_forward(batched(c.outputs[0]), batched(c.outputs[1]), batched(c.inputs[0]));
  };
  d.backward = indices_backward;
  d.save_outputs = 0b10;
  d.output_differentiable = {true, false};
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return dispatch1(op_max_pool2d(), {input},
                   {AttrValue(kernel_size.vec()), AttrValue(stride.vec()), AttrValue(padding.vec()),
                    AttrValue(dilation.vec()), AttrValue(ceil_mode)});
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  OpOutputs o = dispatch(op_max_pool2d_with_indices(), {input},
                         {AttrValue(kernel_size.vec()), AttrValue(stride.vec()), AttrValue(padding.vec()),
                          AttrValue(dilation.vec()), AttrValue(ceil_mode)});
  return {o[0], o[1]};
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return dispatch1(op_avg_pool2d(), {input},
                   {AttrValue(kernel_size.vec()), AttrValue(stride.vec()), AttrValue(padding.vec()),
                    AttrValue(ceil_mode), AttrValue(count_include_pad), opt_attr(divisor_override)});
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  return dispatch1(op_adaptive_avg_pool2d(), {input}, {AttrValue(output_size.vec())});
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  OpOutputs o = dispatch(op_adaptive_max_pool2d(), {input}, {AttrValue(output_size.vec())});
  return {o[0], o[1]};
}

}  // namespace tandem
