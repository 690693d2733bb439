// Normalisation ops: native_batch_norm / native_layer_norm / native_group_norm with their
// backward ops, and the functional composites batch_norm, layer_norm, group_norm,
// instance_norm. The fused backward ops are used when the gradient is not differentiated
// again; under create_graph the rules use a form written with ops (double backward).
#include "tandem/core/grad_mode.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/nn_util.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/shape.h"
#include "tandem/ops/unary.h"

namespace tandem {

const OpDef& op_native_batch_norm_backward();
const OpDef& op_native_layer_norm_backward();
const OpDef& op_native_group_norm_backward();

namespace {

Tensor contig_or_undef(const Tensor& t, DType dt) { return t.defined() ? kernels::contiguous_as(t, dt) : Tensor(); }

// Keeps the gradients the node needs.
std::vector<Tensor> keep_needed(std::vector<Tensor> r, const std::vector<bool>& need) {
  r.resize(need.size());
  for (size_t i = 0; i < need.size(); ++i)
    if (!need[i]) r[i] = Tensor();
  return r;
}

// ---------------------------------------------------------------- double backward
// Under create_graph (grad mode on inside backward) the rules below use these forms,
// written with differentiable ops, instead of the fused backward ops. They recompute the
// statistics from x, so the second derivative includes the statistics' dependence on x
// (the saved mean/rstd are non-differentiable outputs).

// Gradient of xhat = (x - mean) * rstd, statistics over `dims` (biased variance, eps),
// given the gradient gxhat of xhat. Returns {grad_x, xhat}.
std::pair<Tensor, Tensor> normalize_backward(const Tensor& x, const Tensor& gxhat, IntArrayRef dims, double eps) {
  Tensor xc = x - mean(x, dims, /*keepdim=*/true);
  Tensor rstd = rsqrt(mean(xc * xc, dims, /*keepdim=*/true) + eps);
  Tensor xhat = xc * rstd;
  Tensor gx = rstd * (gxhat - mean(gxhat, dims, true) - xhat * mean(gxhat * xhat, dims, true));
  return {gx, xhat};
}

DimVector all_dims_but(int64_t ndim, int64_t keep) {
  DimVector d;
  for (int64_t i = 0; i < ndim; ++i)
    if (i != keep) d.push_back(i);
  return d;
}

// [C] laid out along dim 1 of an ndim tensor.
Tensor per_channel(const Tensor& t, int64_t ndim) {
  DimVector s(static_cast<size_t>(ndim), 1);
  s[1] = t.numel();
  return t.reshape(s);
}

std::vector<Tensor> batch_norm_rule_differentiable(BackwardContext& c) {
  const Tensor &g = c.grad_outputs[0], &x = c.inputs[0], &w = c.inputs[1];
  const DimVector dims = all_dims_but(x.dim(), 1);
  const Tensor wb = w.defined() ? per_channel(w, x.dim()) : Tensor();
  std::vector<Tensor> r(3);
  Tensor xhat;
  if (c.attrs.b(0)) {  // training: batch statistics
    auto [gx, xh] = normalize_backward(x, wb.defined() ? g * wb : g, dims, c.attrs.f(2));
    r[0] = gx;
    xhat = xh;
  } else {  // evaluation: the running statistics (saved as mean / invstd) are constants
    const Tensor rstd = per_channel(c.outputs[2], x.dim());
    xhat = (x - per_channel(c.outputs[1], x.dim())) * rstd;
    r[0] = g * (wb.defined() ? wb * rstd : rstd);
  }
  r[1] = sum(g * xhat, dims);
  r[2] = sum(g, dims);
  return keep_needed(std::move(r), c.needs_input_grad);
}

std::vector<Tensor> layer_norm_rule_differentiable(BackwardContext& c) {
  const Tensor &g = c.grad_outputs[0], &x = c.inputs[0], &w = c.inputs[1];
  const auto& ns = c.attrs.ints(0);
  DimVector dims;
  for (int64_t d = x.dim() - static_cast<int64_t>(ns.size()); d < x.dim(); ++d) dims.push_back(d);
  auto [gx, xhat] = normalize_backward(x, w.defined() ? g * w : g, dims, c.attrs.f(1));
  return keep_needed({gx, sum_to_size(g * xhat, ns), sum_to_size(g, ns)}, c.needs_input_grad);
}

std::vector<Tensor> group_norm_rule_differentiable(BackwardContext& c) {
  const Tensor &g = c.grad_outputs[0], &x = c.inputs[0], &w = c.inputs[1];
  const int64_t N = x.size(0), G = c.attrs.i(0);
  const DimVector grouped{N, G, N * G == 0 ? 0 : x.numel() / (N * G)};
  const Tensor gxhat = w.defined() ? g * per_channel(w, x.dim()) : g;
  auto [gx, xhat] = normalize_backward(x.reshape(grouped), gxhat.reshape(grouped), {2}, c.attrs.f(1));
  const DimVector dims = all_dims_but(x.dim(), 1);
  return keep_needed({gx.reshape(x.sizes()), sum(g * xhat.reshape(x.sizes()), dims), sum(g, dims)},
                     c.needs_input_grad);
}

// Three gradients from a backward op, kept where needed.
std::vector<Tensor> pick(const OpOutputs& o, const std::vector<bool>& need) {
  std::vector<Tensor> r(need.size());
  for (size_t i = 0; i < 3 && i < need.size(); ++i)
    if (need[i]) r[i] = o[i];
  return r;
}

// ---------------------------------------------------------------- batch norm
// native_batch_norm(input, weight?, bias?, running_mean?, running_var?; training, momentum, eps)
void batch_norm_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  ops::require_floating_input(c.op, c.common_dtype);
  TANDEM_CHECK(in.dim() >= 2, ShapeError, c.op, "got input of shape ", in.sizes, ", expected [N, C, ...]");
  const int64_t C = in.sizes[1];
  ops::check_vector(c.op, c.inputs[1], C, "weight");
  ops::check_vector(c.op, c.inputs[2], C, "bias");
  ops::check_vector(c.op, c.inputs[3], C, "running_mean");
  ops::check_vector(c.op, c.inputs[4], C, "running_var");
  for (size_t i = 3; i < 5; ++i)
    if (c.inputs[i].defined) ops::require_floating_input(c.op, c.inputs[i].dtype, i == 3 ? "running_mean" : "running_var");
  if (!c.attrs.b(0))
    TANDEM_CHECK(c.inputs[3].defined && c.inputs[4].defined, ValueError, c.op,
                 "running_mean and running_var must be defined in evaluation mode");
  const DType st = ops::stat_dtype(c.common_dtype);
  c.outputs.push_back(TensorMeta{c.common_dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{st, {C}, {}});
  c.outputs.push_back(TensorMeta{st, {C}, {}});
}

void batch_norm_kernel(KernelContext& c) {
  const DType dt = c.outputs[0].dtype();
  const bool training = c.attrs.b(0);
  kernels::batch_norm_kernel(c.outputs[0], c.outputs[1], c.outputs[2], kernels::contiguous_as(c.inputs[0], dt),
                             contig_or_undef(c.inputs[1], dt), contig_or_undef(c.inputs[2], dt), c.inputs[3],
                             c.inputs[4], training, c.attrs.f(1), c.attrs.f(2));
  // The running buffers were written in place (OpDef::mutates_inputs): the dispatcher
  // and the executor bump their version counters.
}

std::vector<Tensor> batch_norm_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {};
  if (is_grad_enabled()) return batch_norm_rule_differentiable(c);  // create_graph: double backward
  OpOutputs o = dispatch(op_native_batch_norm_backward(), {g, c.inputs[0], c.inputs[1], c.outputs[1], c.outputs[2]},
                         {c.attrs.at(0)});
  return pick(o, c.needs_input_grad);
}

// native_batch_norm_backward(grad_out, input, weight?, save_mean, save_invstd; training)
void batch_norm_backward_meta(MetaContext& c) {
  const MetaRef &g = c.inputs[0], &in = c.inputs[1];
  ops::require_floating_input(c.op, in.dtype);
  TANDEM_CHECK(in.dim() >= 2 && g.sizes.equals(in.sizes), ShapeError, c.op, "got grad_out of shape ", g.sizes,
               " and input of shape ", in.sizes, ", expected equal shapes [N, C, ...]");
  const int64_t C = in.sizes[1];
  ops::check_vector(c.op, c.inputs[2], C, "weight");
  ops::check_vector(c.op, c.inputs[3], C, "save_mean");
  ops::check_vector(c.op, c.inputs[4], C, "save_invstd");
  c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{in.dtype, {C}, {}});
  c.outputs.push_back(TensorMeta{in.dtype, {C}, {}});
}

void batch_norm_backward_kernel(KernelContext& c) {
  const DType dt = c.inputs[1].dtype();
  kernels::batch_norm_backward_kernel(c.outputs[0], c.outputs[1], c.outputs[2], kernels::contiguous_as(c.inputs[0], dt),
                                      kernels::contiguous_as(c.inputs[1], dt), contig_or_undef(c.inputs[2], dt),
                                      c.inputs[3], c.inputs[4], c.attrs.b(0));
}

// ---------------------------------------------------------------- layer norm
struct LnGeometry {
  int64_t M = 1, N = 1;
  DimVector stat_shape;
};
LnGeometry ln_geometry(IntArrayRef in, size_t k) {
  LnGeometry g;
  const size_t axis = in.size() - k;
  for (size_t d = 0; d < in.size(); ++d) {
    if (d < axis) {
      g.M *= in[d];
      g.stat_shape.push_back(in[d]);
    } else {
      g.N *= in[d];
      g.stat_shape.push_back(1);
    }
  }
  return g;
}

void check_normalized_shape(const char* op, const MetaRef& in, const std::vector<int64_t>& ns) {
  TANDEM_CHECK(!ns.empty(), ValueError, op, "got an empty normalized_shape, expected at least one dim");
  bool ok = in.dim() >= static_cast<int64_t>(ns.size());
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = in.sizes[in.sizes.size() - ns.size() + i] == ns[i];
  TANDEM_CHECK(ok, ShapeError, op, "got input of shape ", in.sizes, " and normalized_shape ", IntArrayRef(ns),
               ", expected input of shape [*, ", IntArrayRef(ns), "]");
}

// native_layer_norm(input, weight?, bias?; normalized_shape, eps)
void layer_norm_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  ops::require_floating_input(c.op, c.common_dtype);
  const auto& ns = c.attrs.ints(0);
  check_normalized_shape(c.op, in, ns);
  for (size_t i = 1; i < 3; ++i)
    if (c.inputs[i].defined)
      TANDEM_CHECK(c.inputs[i].sizes.equals(ns), ShapeError, c.op, "got ", i == 1 ? "weight" : "bias", " of shape ",
                   c.inputs[i].sizes, ", expected normalized_shape ", IntArrayRef(ns));
  LnGeometry g = ln_geometry(in.sizes, ns.size());
  const DType st = ops::stat_dtype(c.common_dtype);
  c.outputs.push_back(TensorMeta{c.common_dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{st, g.stat_shape, {}});
  c.outputs.push_back(TensorMeta{st, g.stat_shape, {}});
}

void layer_norm_kernel(KernelContext& c) {
  const DType dt = c.outputs[0].dtype();
  LnGeometry g = ln_geometry(c.inputs[0].sizes(), c.attrs.ints(0).size());
  kernels::layer_norm_kernel(c.outputs[0], c.outputs[1], c.outputs[2], kernels::contiguous_as(c.inputs[0], dt),
                             contig_or_undef(c.inputs[1], dt), contig_or_undef(c.inputs[2], dt), g.M, g.N,
                             c.attrs.f(1));
}

std::vector<Tensor> layer_norm_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {};
  if (is_grad_enabled()) return layer_norm_rule_differentiable(c);  // create_graph: double backward
  OpOutputs o = dispatch(op_native_layer_norm_backward(), {g, c.inputs[0], c.outputs[1], c.outputs[2], c.inputs[1]},
                         {c.attrs.at(0)});
  return pick(o, c.needs_input_grad);
}

// native_layer_norm_backward(grad_out, input, mean, rstd, weight?; normalized_shape)
void layer_norm_backward_meta(MetaContext& c) {
  const MetaRef &g = c.inputs[0], &in = c.inputs[1];
  ops::require_floating_input(c.op, in.dtype);
  const auto& ns = c.attrs.ints(0);
  check_normalized_shape(c.op, in, ns);
  TANDEM_CHECK(g.sizes.equals(in.sizes), ShapeError, c.op, "got grad_out of shape ", g.sizes, " and input of shape ",
               in.sizes, ", expected equal shapes");
  LnGeometry geo = ln_geometry(in.sizes, ns.size());
  TANDEM_CHECK(c.inputs[2].numel() == geo.M && c.inputs[3].numel() == geo.M, ShapeError, c.op,
               "got mean/rstd of shape ", c.inputs[2].sizes, ", expected ", IntArrayRef(geo.stat_shape));
  if (c.inputs[4].defined)
    TANDEM_CHECK(c.inputs[4].sizes.equals(ns), ShapeError, c.op, "got weight of shape ", c.inputs[4].sizes,
                 ", expected ", IntArrayRef(ns));
  c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{in.dtype, ns, {}});
  c.outputs.push_back(TensorMeta{in.dtype, ns, {}});
}

void layer_norm_backward_kernel(KernelContext& c) {
  const DType dt = c.inputs[1].dtype();
  LnGeometry g = ln_geometry(c.inputs[1].sizes(), c.attrs.ints(0).size());
  kernels::layer_norm_backward_kernel(c.outputs[0], c.outputs[1], c.outputs[2], kernels::contiguous_as(c.inputs[0], dt),
                                      kernels::contiguous_as(c.inputs[1], dt), c.inputs[2], c.inputs[3],
                                      contig_or_undef(c.inputs[4], dt), g.M, g.N);
}

// ---------------------------------------------------------------- group norm
struct GnGeometry {
  int64_t N, C, S;
};
GnGeometry gn_geometry(IntArrayRef in) {
  int64_t S = 1;
  for (size_t d = 2; d < in.size(); ++d) S *= in[d];
  return {in[0], in[1], S};
}

void check_groups(const char* op, const MetaRef& in, int64_t G) {
  TANDEM_CHECK(in.dim() >= 2, ShapeError, op, "got input of shape ", in.sizes, ", expected [N, C, ...]");
  TANDEM_CHECK(G > 0 && in.sizes[1] % G == 0, ValueError, op, "got num_groups ", G, " for input of shape ", in.sizes,
               ", expected the number of channels to be divisible by num_groups");
}

// native_group_norm(input, weight?, bias?; num_groups, eps)
void group_norm_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  ops::require_floating_input(c.op, c.common_dtype);
  const int64_t G = c.attrs.i(0);
  check_groups(c.op, in, G);
  ops::check_vector(c.op, c.inputs[1], in.sizes[1], "weight");
  ops::check_vector(c.op, c.inputs[2], in.sizes[1], "bias");
  const DType st = ops::stat_dtype(c.common_dtype);
  c.outputs.push_back(TensorMeta{c.common_dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{st, {in.sizes[0], G}, {}});
  c.outputs.push_back(TensorMeta{st, {in.sizes[0], G}, {}});
}

void group_norm_kernel(KernelContext& c) {
  const DType dt = c.outputs[0].dtype();
  GnGeometry g = gn_geometry(c.inputs[0].sizes());
  kernels::group_norm_kernel(c.outputs[0], c.outputs[1], c.outputs[2], kernels::contiguous_as(c.inputs[0], dt),
                             contig_or_undef(c.inputs[1], dt), contig_or_undef(c.inputs[2], dt), g.N, g.C, g.S,
                             c.attrs.i(0), c.attrs.f(1));
}

std::vector<Tensor> group_norm_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {};
  if (is_grad_enabled()) return group_norm_rule_differentiable(c);  // create_graph: double backward
  OpOutputs o = dispatch(op_native_group_norm_backward(), {g, c.inputs[0], c.outputs[1], c.outputs[2], c.inputs[1]},
                         {c.attrs.at(0)});
  return pick(o, c.needs_input_grad);
}

// native_group_norm_backward(grad_out, input, mean, rstd, weight?; num_groups)
void group_norm_backward_meta(MetaContext& c) {
  const MetaRef &g = c.inputs[0], &in = c.inputs[1];
  ops::require_floating_input(c.op, in.dtype);
  const int64_t G = c.attrs.i(0);
  check_groups(c.op, in, G);
  TANDEM_CHECK(g.sizes.equals(in.sizes), ShapeError, c.op, "got grad_out of shape ", g.sizes, " and input of shape ",
               in.sizes, ", expected equal shapes");
  TANDEM_CHECK(c.inputs[2].numel() == in.sizes[0] * G && c.inputs[3].numel() == in.sizes[0] * G, ShapeError, c.op,
               "got mean/rstd of shape ", c.inputs[2].sizes, ", expected [", in.sizes[0], ", ", G, "]");
  ops::check_vector(c.op, c.inputs[4], in.sizes[1], "weight");
  c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{in.dtype, {in.sizes[1]}, {}});
  c.outputs.push_back(TensorMeta{in.dtype, {in.sizes[1]}, {}});
}

void group_norm_backward_kernel(KernelContext& c) {
  const DType dt = c.inputs[1].dtype();
  GnGeometry g = gn_geometry(c.inputs[1].sizes());
  kernels::group_norm_backward_kernel(c.outputs[0], c.outputs[1], c.outputs[2], kernels::contiguous_as(c.inputs[0], dt),
                                      kernels::contiguous_as(c.inputs[1], dt), c.inputs[2], c.inputs[3],
                                      contig_or_undef(c.inputs[4], dt), g.N, g.C, g.S, c.attrs.i(0));
}

OpDef norm_def(const char* name, std::vector<AttrSpec> attrs) {
  OpDef d;
  d.name = name;
  d.inputs = {{"input"}, {"weight", true, true}, {"bias", true, true}};
  d.attrs = std::move(attrs);
  d.promotion = Promotion::Default;
  d.num_outputs = 3;
  d.output_differentiable = {true, false, false};
  d.save_inputs = 0b011;
  d.save_outputs = 0b110;
  return d;
}

OpDef norm_backward_def(const char* name, std::vector<InputSpec> inputs, std::vector<AttrSpec> attrs) {
  OpDef d;
  d.name = name;
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.num_outputs = 3;
  return d;
}

// ---------------------------------------------------------------- composites
// F.batch_norm(input, running_mean?, running_var?, weight?, bias?; training, momentum, eps)
std::vector<Tensor> batch_norm_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  const Tensor& x = in[0];
  if (a.b(0) && x.dim() >= 2) {
    const int64_t per_channel = x.size(1) == 0 ? 0 : x.numel() / x.size(1);
    TANDEM_CHECK(per_channel != 1, ValueError, "batch_norm", "expected more than 1 value per channel when training, got input of shape ",
                 x.sizes());
  }
  return {std::get<0>(native_batch_norm(x, in[3], in[4], in[1], in[2], a.b(0), a.f(1), a.f(2)))};
}

std::vector<Tensor> layer_norm_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  return {std::get<0>(native_layer_norm(in[0], a.ints(0), in[1], in[2], a.f(1)))};
}

std::vector<Tensor> group_norm_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  const Tensor& x = in[0];
  const int64_t G = a.i(0);
  if (x.dim() >= 2 && G > 0 && x.size(1) % G == 0) {
    const int64_t spatial = x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1));
    TANDEM_CHECK(x.numel() == 0 || x.size(0) * (x.size(1) / G) * spatial != 1, ValueError, "group_norm",
                 "expected more than 1 value per group when training, got input of shape ", x.sizes(),
                 " and num_groups ", G);
  }
  return {std::get<0>(native_group_norm(x, in[1], in[2], G, a.f(1)))};
}

// F.instance_norm: batch norm of the input reshaped to [1, N * C, *] with the per-channel
// parameters and running stats repeated N times; the updated running stats are averaged
// back over the batch.
std::vector<Tensor> instance_norm_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  const Tensor& x = in[0];
  const bool use_input_stats = a.b(0);
  TANDEM_CHECK(x.dim() >= 2, ShapeError, "instance_norm", "got input of shape ", x.sizes(), ", expected [N, C, ...]");
  const int64_t N = x.size(0), C = x.size(1);
  if (use_input_stats) {
    const int64_t spatial = N * C == 0 ? 0 : x.numel() / (N * C);
    TANDEM_CHECK(spatial != 1, ValueError, "instance_norm",
                 "expected more than 1 spatial element when training, got input of shape ", x.sizes());
  }
  for (size_t i = 1; i < 5; ++i)
    if (in[i].defined()) ops::check_vector("instance_norm", MetaRef::of(in[i]), C, "weight, bias and running stats");
  DimVector shape{1, N * C};
  for (int64_t d = 2; d < x.dim(); ++d) shape.push_back(x.size(d));
  auto rep = [&](const Tensor& t) { return t.defined() ? t.unsqueeze(0).expand({N, C}).reshape({N * C}) : Tensor(); };
  Tensor rm, rv;
  {
    AutoGradMode no_grad(false);
    rm = rep(in[1]);
    rv = rep(in[2]);
    if (rm.defined() && rm.is_alias_of(in[1])) rm = rm.clone();
    if (rv.defined() && rv.is_alias_of(in[2])) rv = rv.clone();
  }
  Tensor out = std::get<0>(native_batch_norm(x.reshape(shape), rep(in[3]), rep(in[4]), rm, rv, use_input_stats,
                                             a.f(1), a.f(2)));
  if (use_input_stats) {
    AutoGradMode no_grad(false);
    const double inv_n = 1.0 / static_cast<double>(std::max<int64_t>(N, 1));
    Tensor running_mean = in[1], running_var = in[2];
    if (running_mean.defined()) running_mean.copy_((sum_to_size(rm.view({N, C}), {1, C}) * inv_n).view({C}));
    if (running_var.defined()) running_var.copy_((sum_to_size(rv.view({N, C}), {1, C}) * inv_n).view({C}));
  }
  return {out.view(x.sizes())};
}

OpDef composite_def(const char* name, std::vector<InputSpec> inputs, std::vector<AttrSpec> attrs, CompositeFn fn) {
  OpDef d;
  d.name = name;
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.composite = fn;
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(native_batch_norm) {
  OpDef d = norm_def("native_batch_norm", {{"training", false}, {"momentum", 0.1}, {"eps", 1e-5}});
  d.inputs.push_back({"running_mean", false, true, false});
  d.inputs.push_back({"running_var", false, true, false});
  d.meta = batch_norm_meta;
  d.cpu_kernel = batch_norm_kernel;
  d.backward = batch_norm_rule;
  // In training the kernel updates running_mean/running_var (inputs 3, 4) in place.
  d.mutates_inputs = 0b11000;
  d.mutates_if_attr = 0;  // training
  // The statistics are written after the whole batch was read, but the kernel reads
  // weight and bias per channel while it writes: no aliasing with the running buffers.
  for (size_t i = 0; i < 3; ++i) d.inputs[i].overlap = InputOverlap::None;
  return d;
}

TANDEM_REGISTER_OP(native_batch_norm_backward) {
  OpDef d = norm_backward_def("native_batch_norm_backward",
                              {{"grad_out", false}, {"input", false}, {"weight", false, true},
                               {"save_mean", false, false, false}, {"save_invstd", false, false, false}},
                              {{"training", false}});
  d.meta = batch_norm_backward_meta;
  d.cpu_kernel = batch_norm_backward_kernel;
  return d;
}

TANDEM_REGISTER_OP(native_layer_norm) {
  OpDef d = norm_def("native_layer_norm", {{"normalized_shape", std::vector<int64_t>{}}, {"eps", 1e-5}});
  d.meta = layer_norm_meta;
  d.cpu_kernel = layer_norm_kernel;
  d.backward = layer_norm_rule;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(native_layer_norm_backward) {
  OpDef d = norm_backward_def("native_layer_norm_backward",
                              {{"grad_out", false}, {"input", false}, {"mean", false, false, false},
                               {"rstd", false, false, false}, {"weight", false, true}},
                              {{"normalized_shape", std::vector<int64_t>{}}});
  d.meta = layer_norm_backward_meta;
  d.cpu_kernel = layer_norm_backward_kernel;
  return d;
}

TANDEM_REGISTER_OP(native_group_norm) {
  OpDef d = norm_def("native_group_norm", {{"num_groups", int64_t{1}}, {"eps", 1e-5}});
  d.meta = group_norm_meta;
  d.cpu_kernel = group_norm_kernel;
  d.backward = group_norm_rule;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(native_group_norm_backward) {
  OpDef d = norm_backward_def("native_group_norm_backward",
                              {{"grad_out", false}, {"input", false}, {"mean", false, false, false},
                               {"rstd", false, false, false}, {"weight", false, true}},
                              {{"num_groups", int64_t{1}}});
  d.meta = group_norm_backward_meta;
  d.cpu_kernel = group_norm_backward_kernel;
  return d;
}

TANDEM_REGISTER_OP(batch_norm) {
  return composite_def("batch_norm",
                       {{"input"}, {"running_mean", false, true, false}, {"running_var", false, true, false},
                        {"weight", true, true}, {"bias", true, true}},
                       {{"training", false}, {"momentum", 0.1}, {"eps", 1e-5}}, batch_norm_composite);
}

TANDEM_REGISTER_OP(layer_norm) {
  OpDef d = composite_def("layer_norm", {{"input"}, {"weight", true, true}, {"bias", true, true}},
                       {{"normalized_shape", std::vector<int64_t>{}}, {"eps", 1e-5}}, layer_norm_composite);
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(group_norm) {
  OpDef d = composite_def("group_norm", {{"input"}, {"weight", true, true}, {"bias", true, true}},
                       {{"num_groups", int64_t{1}}, {"eps", 1e-5}}, group_norm_composite);
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(instance_norm) {
  return composite_def("instance_norm",
                       {{"input"}, {"running_mean", false, true, false}, {"running_var", false, true, false},
                        {"weight", true, true}, {"bias", true, true}},
                       {{"use_input_stats", true}, {"momentum", 0.1}, {"eps", 1e-5}}, instance_norm_composite);
}

// ---------------------------------------------------------------- functional API
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return dispatch1(op_batch_norm(), {input, running_mean, running_var, weight, bias},
                   {AttrValue(training), AttrValue(momentum), AttrValue(eps)});
}
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                                     const Tensor& running_mean, const Tensor& running_var,
                                                     bool training, double momentum, double eps) {
  OpOutputs o = dispatch(op_native_batch_norm(), {input, weight, bias, running_mean, running_var},
                         {AttrValue(training), AttrValue(momentum), AttrValue(eps)});
  return {o[0], o[1], o[2]};
}
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              const Tensor& weight, const Tensor& save_mean,
                                                              const Tensor& save_invstd, bool training) {
  OpOutputs o = dispatch(op_native_batch_norm_backward(), {grad_out, input, weight, save_mean, save_invstd},
                         {AttrValue(training)});
  return {o[0], o[1], o[2]};
}
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  return dispatch1(op_layer_norm(), {input, weight, bias}, {AttrValue(normalized_shape.vec()), AttrValue(eps)});
}
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps) {
  OpOutputs o = dispatch(op_native_layer_norm(), {input, weight, bias},
                         {AttrValue(normalized_shape.vec()), AttrValue(eps)});
  return {o[0], o[1], o[2]};
}
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  return dispatch1(op_group_norm(), {input, weight, bias}, {AttrValue(num_groups), AttrValue(eps)});
}
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                                     int64_t num_groups, double eps) {
  OpOutputs o = dispatch(op_native_group_norm(), {input, weight, bias}, {AttrValue(num_groups), AttrValue(eps)});
  return {o[0], o[1], o[2]};
}
Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  return dispatch1(op_instance_norm(), {input, running_mean, running_var, weight, bias},
                   {AttrValue(use_input_stats), AttrValue(momentum), AttrValue(eps)});
}

}  // namespace tandem
