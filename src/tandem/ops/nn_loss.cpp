// Losses: nll_loss (+ nll_loss_backward, linear, so differentiable again), cross_entropy
// (composite), and the elementwise losses mse / l1 / smooth_l1 / huber /
// binary_cross_entropy[_with_logits] / kl_div with their "<name>_backward" ops. Reductions
// are done by the loss kernels (or sum_to_size in composites), not by the reduce family.
// Double backward: the difference losses' backward ops have rules; the log losses
// (binary_cross_entropy[_with_logits], kl_div) switch to an op-written gradient under
// create_graph.
#include "tandem/core/grad_mode.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/nn_util.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/shape.h"
#include "tandem/ops/unary.h"

namespace tandem {

using kernels::LossKind;
using kernels::Reduction;

const OpDef& op_nll_loss_backward();

// ---------------------------------------------------------------- nll_loss
namespace {

struct NllGeometry {
  int64_t N, C, S;
};
NllGeometry nll_geometry(IntArrayRef in) {
  if (in.size() == 1) return {1, in[0], 1};
  const int64_t N = in[0], C = in[1];
  int64_t S = 1;
  for (size_t d = 2; d < in.size(); ++d) S *= in[d];
  return {N, C, S};
}

void nll_check(const char* op, const MetaRef& in, const MetaRef& target, const MetaRef& weight) {
  TANDEM_CHECK(in.dim() >= 1, ShapeError, op, "got input of shape ", in.sizes,
               ", expected [C] or [N, C, d1, ...]");
  TANDEM_CHECK(target.dtype == DType::Int64 || target.dtype == DType::UInt8, TypeError, op, "got target of dtype ",
               dtype_name(target.dtype), ", expected int64 class indices");
  DimVector want;
  for (int64_t d = 0; d < in.dim(); ++d)
    if (d != (in.dim() == 1 ? 0 : 1)) want.push_back(in.sizes[d]);
  TANDEM_CHECK(target.sizes.equals(want), ShapeError, op, "got input of shape ", in.sizes, " and target of shape ",
               target.sizes, ", expected target of shape ", IntArrayRef(want));
  ops::check_vector(op, weight, nll_geometry(in.sizes).C, "weight");
}

// nll_loss(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
void nll_meta(MetaContext& c) {
  const MetaRef &in = c.inputs[0], &target = c.inputs[1];
  ops::require_floating_input(c.op, c.common_dtype);
  nll_check(c.op, in, target, c.inputs[2]);
  Reduction r = ops::parse_reduction(c.op, c.attrs.str(0));
  DimVector out = r == Reduction::None ? target.sizes.vec() : DimVector{};
  c.outputs.push_back(TensorMeta{c.common_dtype, out, {}});
  c.outputs.push_back(TensorMeta{c.common_dtype, {}, {}});
}

void nll_kernel(KernelContext& c) {
  const Tensor& in = c.inputs[0];
  auto g = nll_geometry(in.sizes());
  Tensor x = kernels::contiguous_as(in, in.dtype());
  Tensor t = kernels::contiguous_as(c.inputs[1], c.inputs[1].dtype());
  kernels::nll_loss_kernel(c.outputs[0], c.outputs[1], x, t, c.inputs[2],
                           ops::parse_reduction(c.op, c.attrs.str(0)), c.attrs.i(1), g.N, g.C, g.S);
}

std::vector<Tensor> nll_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return {Tensor()};
  OpOutputs r = dispatch(op_nll_loss_backward(), {g, c.inputs[0], c.inputs[1], c.inputs[2], c.outputs[1]},
                         {c.attrs.at(0), c.attrs.at(1)});
  return {r[0]};
}

// nll_loss_backward(grad_output, self, target, weight?, total_weight, reduction, ignore_index)
void nll_backward_meta(MetaContext& c) {
  const MetaRef &g = c.inputs[0], &in = c.inputs[1], &target = c.inputs[2];
  ops::require_floating_input(c.op, in.dtype);
  ops::require_floating_input(c.op, g.dtype, "grad_output");
  nll_check(c.op, in, target, c.inputs[3]);
  Reduction r = ops::parse_reduction(c.op, c.attrs.str(0));
  DimVector want = r == Reduction::None ? target.sizes.vec() : DimVector{};
  TANDEM_CHECK(g.sizes.equals(want), ShapeError, c.op, "got grad_output of shape ", g.sizes, ", expected ",
               IntArrayRef(want));
  c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
}

void nll_backward_kernel(KernelContext& c) {
  const Tensor& in = c.inputs[1];
  auto g = nll_geometry(in.sizes());
  Tensor t = kernels::contiguous_as(c.inputs[2], c.inputs[2].dtype());
  kernels::nll_loss_backward_kernel(c.outputs[0], c.inputs[0], t, c.inputs[3], c.inputs[4],
                                    ops::parse_reduction(c.op, c.attrs.str(0)), c.attrs.i(1), g.N, g.C, g.S);
}

// nll_loss_backward is linear in grad_output; its adjoint is nll_loss itself.
std::vector<Tensor> nll_backward_rule(BackwardContext& c) {
  const Tensor& gg = c.grad_outputs[0];
  if (!gg.defined() || !c.needs_input_grad[0]) return {};
  Tensor r = nll_loss(gg, c.inputs[2], c.inputs[3], c.attrs.i(1), c.attrs.str(0));
  return {r.to(c.input_metas[0].dtype)};
}

}  // namespace

TANDEM_REGISTER_OP(nll_loss) {
  OpDef d;
  d.name = "nll_loss";
  d.autocast = Autocast::Float32;
  d.inputs = {{"self"}, {"target", false, false, false}, {"weight", true, true, false}};
  d.attrs = {{"reduction", std::string("mean")}, {"ignore_index", int64_t{-100}}};
  d.promotion = Promotion::Default;
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.meta = nll_meta;
  d.cpu_kernel = nll_kernel;
  d.backward = nll_rule;
  d.save_inputs = 0b111;
  d.save_outputs = 0b10;
  d.raises_on_data = true;  // a target outside [0, C)
  return d;
}

TANDEM_REGISTER_OP(nll_loss_backward) {
  OpDef d;
  d.name = "nll_loss_backward";
  d.inputs = {{"grad_output", false},
              {"self", false, false, false},
              {"target", false, false, false},
              {"weight", false, true, false},
              {"total_weight", false, false, false}};
  d.attrs = {{"reduction", std::string("mean")}, {"ignore_index", int64_t{-100}}};
  d.meta = nll_backward_meta;
  d.cpu_kernel = nll_backward_kernel;
  d.backward = nll_backward_rule;
  d.save_inputs = 0b01100;
  return d;
}

// ---------------------------------------------------------------- cross_entropy
namespace {

std::vector<Tensor> cross_entropy_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  const char* op = "cross_entropy";
  const Tensor &input = in[0], &target = in[1], &weight = in[2];
  const std::string& red_s = a.str(0);
  const int64_t ignore_index = a.i(1);
  const double ls = a.f(2);
  const Reduction red = ops::parse_reduction(op, red_s);
  TANDEM_CHECK(ls >= 0.0 && ls <= 1.0, ValueError, op, "got label_smoothing ", ls, ", expected a value in [0, 1]");
  TANDEM_CHECK(input.dim() >= 1, ShapeError, op, "got input of shape ", input.sizes(), ", expected [C] or [N, C, ...]");
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.size(cdim);
  if (weight.defined()) ops::check_vector(op, MetaRef::of(weight), C, "weight");
  Tensor logp = log_softmax(input, cdim);
  // weight laid along the class dim, for broadcasting against [N, C, d1...].
  auto class_weight = [&]() {
    DimVector s(static_cast<size_t>(input.dim()), 1);
    s[static_cast<size_t>(cdim)] = C;
    return weight.view(s);
  };
  if (target.is_floating_point()) {
    TANDEM_CHECK(target.sizes().equals(input.sizes()), ShapeError, op, "got class-probability target of shape ",
                 target.sizes(), ", expected the input's shape ", input.sizes());
    Tensor t = ls > 0 ? target * (1.0 - ls) + ls / static_cast<double>(C) : target;
    Tensor prod = logp * t;
    if (weight.defined()) prod = prod * class_weight();
    Tensor per = ops::sum_keepdim(prod, cdim).squeeze(cdim) * -1.0;
    if (red == Reduction::None) return {per};
    Tensor total = ops::sum_all(per);
    if (red == Reduction::Sum) return {total};
    const int64_t samples = C == 0 ? 0 : input.numel() / C;
    return {total * (1.0 / static_cast<double>(samples))};
  }
  if (ls == 0.0) return {nll_loss(logp, target, weight, ignore_index, red_s)};
  OpOutputs nll = dispatch(op_nll_loss(), {logp, target, weight}, {AttrValue(red_s), AttrValue(ignore_index)});
  Tensor smooth_terms = weight.defined() ? logp * class_weight() : logp;
  Tensor smooth = ops::sum_keepdim(smooth_terms, cdim).squeeze(cdim) * -1.0;
  // Ignored targets drop their smoothing term too.
  Tensor keep = ne(target, Scalar(ignore_index));
  smooth = smooth * keep;
  const double eps_c = ls / static_cast<double>(C);
  if (red == Reduction::None) return {nll[0] * (1.0 - ls) + smooth * eps_c};
  Tensor total = ops::sum_all(smooth);
  if (red == Reduction::Mean) total = total * (1.0 / nll[1]);  // same denominator as the nll term
  return {nll[0] * (1.0 - ls) + total * eps_c};
}

}  // namespace

TANDEM_REGISTER_OP(cross_entropy) {
  OpDef d;
  d.name = "cross_entropy";
  d.autocast = Autocast::Float32;
  d.inputs = {{"self"}, {"target", false, false, false}, {"weight", true, true, false}};
  d.attrs = {{"reduction", std::string("mean")}, {"ignore_index", int64_t{-100}}, {"label_smoothing", 0.0}};
  d.composite = cross_entropy_composite;
  return d;
}

// ---------------------------------------------------------------- elementwise losses
// Inputs: self, target, [weight], [pos_weight]; attrs: reduction, [param].
// "<name>_backward"(grad_output, self, target, [weight], [pos_weight]) returns
// (grad_self, grad_target) over the broadcast shape; the forward rule sums them back to
// each input's shape.
namespace {

template <LossKind K>
constexpr const char* loss_name() {
  switch (K) {
    case LossKind::MSE: return "mse_loss";
    case LossKind::L1: return "l1_loss";
    case LossKind::SmoothL1: return "smooth_l1_loss";
    case LossKind::Huber: return "huber_loss";
    case LossKind::BCE: return "binary_cross_entropy";
    case LossKind::BCEWithLogits: return "binary_cross_entropy_with_logits";
    default: return "kl_div";
  }
}

template <LossKind K>
constexpr int num_weights() {
  return K == LossKind::BCE ? 1 : K == LossKind::BCEWithLogits ? 2 : 0;
}

// The loss's kind for this call (kl_div picks its log_target form from the attr) and its
// scalar parameter.
template <LossKind K>
LossKind kind_of(const AttrReader& a) {
  if constexpr (K == LossKind::KLDiv) return a.b(1) ? LossKind::KLDivLogTarget : LossKind::KLDiv;
  return K;
}
template <LossKind K>
double param_of(const AttrReader& a) {
  if constexpr (K == LossKind::SmoothL1 || K == LossKind::Huber) return a.f(1);
  return 0.0;
}

// Checks shared by a loss and its backward; `first` is the index of self.
template <LossKind K>
DimVector loss_check(MetaContext& c, size_t first) {
  const MetaRef &x = c.inputs[first], &t = c.inputs[first + 1];
  ops::require_floating_input(c.op, c.common_dtype);
  if constexpr (K == LossKind::BCE || K == LossKind::BCEWithLogits)
    TANDEM_CHECK(t.sizes.equals(x.sizes), ShapeError, c.op, "got target of shape ", t.sizes,
                 ", expected the input's shape ", x.sizes);
  if constexpr (K == LossKind::SmoothL1)
    TANDEM_CHECK(c.attrs.f(1) >= 0, ValueError, c.op, "got beta ", c.attrs.f(1), ", expected beta >= 0");
  if constexpr (K == LossKind::Huber)
    TANDEM_CHECK(c.attrs.f(1) > 0, ValueError, c.op, "got delta ", c.attrs.f(1), ", expected delta > 0");
  ops::parse_reduction(c.op, c.attrs.str(0), K == LossKind::KLDiv);
  return ops::broadcast_all(c.op, ArrayRef<MetaRef>(c.inputs.data() + first, 2 + num_weights<K>()));
}

template <LossKind K>
void loss_meta(MetaContext& c) {
  DimVector shape = loss_check<K>(c, 0);
  const bool none = ops::parse_reduction(c.op, c.attrs.str(0), K == LossKind::KLDiv) == Reduction::None;
  c.outputs.push_back(TensorMeta{c.common_dtype, none ? shape : DimVector{}, {}});
}

template <LossKind K>
void loss_kernel(KernelContext& c) {
  const Tensor& x = c.inputs[0];
  Tensor w = num_weights<K>() >= 1 ? c.inputs[2] : Tensor();
  Tensor pw = num_weights<K>() >= 2 ? c.inputs[3] : Tensor();
  kernels::pointwise_loss_kernel(kind_of<K>(c.attrs), c.outputs[0], x, c.inputs[1], w, pw, param_of<K>(c.attrs),
                                 ops::parse_reduction(c.op, c.attrs.str(0), K == LossKind::KLDiv),
                                 x.dim() > 0 ? x.size(0) : 1);
}

template <LossKind K>
void loss_backward_meta(MetaContext& c) {
  DimVector shape = loss_check<K>(c, 1);
  const MetaRef& g = c.inputs[0];
  const bool none = ops::parse_reduction(c.op, c.attrs.str(0), K == LossKind::KLDiv) == Reduction::None;
  TANDEM_CHECK(g.sizes.equals(none ? IntArrayRef(shape) : IntArrayRef()), ShapeError, c.op,
               "got grad_output of shape ", g.sizes, ", expected ", none ? IntArrayRef(shape) : IntArrayRef());
  c.outputs.push_back(TensorMeta{c.common_dtype, shape, {}});
  c.outputs.push_back(TensorMeta{c.common_dtype, shape, {}});
}

// Gradient scale of a reduction over `n` broadcast elements.
double reduction_scale(Reduction r, int64_t n, int64_t batch) {
  if (r == Reduction::Mean) return 1.0 / static_cast<double>(n);
  if (r == Reduction::BatchMean) return 1.0 / static_cast<double>(batch);
  return 1.0;
}

template <LossKind K>
void loss_backward_kernel(KernelContext& c) {
  const Tensor& x = c.inputs[1];
  Tensor w = num_weights<K>() >= 1 ? c.inputs[3] : Tensor();
  Tensor pw = num_weights<K>() >= 2 ? c.inputs[4] : Tensor();
  const Reduction r = ops::parse_reduction(c.op, c.attrs.str(0), K == LossKind::KLDiv);
  const double scale = reduction_scale(r, c.outputs[0].numel(), x.dim() > 0 ? x.size(0) : 1);
  kernels::pointwise_loss_backward_kernel(kind_of<K>(c.attrs), c.outputs[0], c.outputs[1], c.inputs[0], x,
                                          c.inputs[2], w, pw, param_of<K>(c.attrs), scale);
}

template <LossKind K>
const OpDef& backward_op() {
  static const OpDef& d = get_op(std::string(loss_name<K>()) + "_backward");
  return d;
}

Tensor reduce_to(const Tensor& g, const MetaRef& m) {
  Tensor r = g.sizes().equals(m.sizes) ? g : sum_to_size(g, m.sizes);
  return r.dtype() == m.dtype ? r : r.to(m.dtype);
}

// d loss / d self and d loss / d target (elementwise, before the reduction) of the log
// losses, written with ops (the formulas of kernels::pointwise_loss_backward_kernel), so
// that they are differentiable again.
template <LossKind K>
std::pair<Tensor, Tensor> log_loss_derivatives(BackwardContext& c) {
  const Tensor &x = c.inputs[0], &t = c.inputs[1];
  const Tensor w = num_weights<K>() >= 1 ? c.inputs[2] : Tensor();
  const Tensor pw = num_weights<K>() >= 2 ? c.inputs[3] : Tensor();
  Tensor dx, dt;
  if constexpr (K == LossKind::BCE) {
    dx = (x - t) / clamp_min(x * (1.0 - x), Scalar(1e-12));
    dt = log1p(x * -1.0) - log(x);  // unclamped, as PyTorch (infinite at 0 and 1)
  } else if constexpr (K == LossKind::BCEWithLogits) {
    // loss = (1 - t) x + (1 + (pw - 1) t) softplus(-x)
    Tensor sp = softplus(x * -1.0);
    if (pw.defined()) {
      dx = (1.0 + (pw - 1.0) * t) * sigmoid(x) - pw * t;
      dt = (pw - 1.0) * sp - x;
    } else {
      dx = sigmoid(x) - t;
      dt = x * -1.0;
    }
  } else if (c.attrs.b(1)) {  // kl_div, log_target: exp(t) (t - x)
    Tensor e = exp(t);
    dx = e * -1.0;
    dt = e * (t - x + 1.0);
  } else {  // kl_div: t log t - t x
    dx = t * -1.0;
    dt = log(t) + 1.0 - x;
  }
  if (w.defined()) {
    dx = dx * w;
    dt = dt * w;
  }
  return {dx, dt};
}

// The rule of binary_cross_entropy[_with_logits] / kl_div under create_graph.
template <LossKind K>
std::vector<Tensor> log_loss_rule_differentiable(BackwardContext& c) {
  std::vector<Tensor> r(c.input_metas.size());
  auto [dx, dt] = log_loss_derivatives<K>(c);
  DimVector shape = ops::broadcast_shapes(c.op, dx.sizes(), dt.sizes());
  const Reduction red = ops::parse_reduction(c.op, c.attrs.str(0), K == LossKind::KLDiv);
  const MetaRef& x = c.input_metas[0];
  const double scale = reduction_scale(red, multiply_integers(shape), x.dim() > 0 ? x.sizes[0] : 1);
  Tensor g = scale == 1.0 ? c.grad_outputs[0] : c.grad_outputs[0] * scale;
  // A derivative may not depend on every input (kl_div's dx = -t): lay it over the
  // broadcast shape before summing it down to its input's shape.
  auto to_input = [&](const Tensor& d, const MetaRef& m) {
    Tensor gd = g * d;
    return reduce_to(gd.sizes().equals(shape) ? gd : gd.expand(shape), m);
  };
  if (c.needs_input_grad[0]) r[0] = to_input(dx, x);
  if (c.needs_input_grad[1]) r[1] = to_input(dt, c.input_metas[1]);
  return r;
}

template <LossKind K>
std::vector<Tensor> loss_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(c.input_metas.size());
  if (!g.defined()) return r;
  if constexpr (K == LossKind::BCE || K == LossKind::BCEWithLogits || K == LossKind::KLDiv) {
    if (is_grad_enabled()) return log_loss_rule_differentiable<K>(c);  // create_graph: double backward
  }
  std::vector<Tensor> ins{g};
  for (size_t i = 0; i < c.inputs.size(); ++i) ins.push_back(c.inputs[i]);
  OpOutputs gr = dispatch(backward_op<K>(), ins, c.attrs.all());
  if (c.needs_input_grad[0]) r[0] = reduce_to(gr[0], c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_to(gr[1], c.input_metas[1]);
  return r;
}

// Double backward of the difference losses (loss = f(x - t), grad_self = g f'(d) s,
// grad_target = -grad_self, s the reduction scale). With gg = gg_self - gg_target:
//   d/dg = reduce_to_g(gg f'(d)) * s   (the backward op itself with reduction "none")
//   d/dx = gg g f''(d) s,  d/dt = -d/dx
template <LossKind K>
std::vector<Tensor> loss_backward_rule(BackwardContext& c) {
  const Tensor &ggx = c.grad_outputs[0], &ggt = c.grad_outputs[1];
  std::vector<Tensor> r(3);
  if (!ggx.defined() && !ggt.defined()) return r;
  const Tensor &g = c.inputs[0], &x = c.inputs[1], &t = c.inputs[2];
  Tensor gg = !ggt.defined() ? ggx : !ggx.defined() ? ggt * -1.0 : ggx - ggt;
  const Reduction red = ops::parse_reduction(c.op, c.attrs.str(0));
  const double s = reduction_scale(red, gg.numel(), 1);
  if (c.needs_input_grad[0]) {
    std::vector<AttrValue> attrs = c.attrs.all().vec();
    attrs[0] = std::string("none");
    OpOutputs d = dispatch(backward_op<K>(), {gg, x, t}, attrs);
    Tensor dg = reduce_to(d[0], c.input_metas[0]);
    r[0] = s == 1.0 ? dg : dg * s;
  }
  if (c.needs_input_grad[1] || c.needs_input_grad[2]) {
    Tensor second;  // f''(x - t) * s
    if constexpr (K == LossKind::MSE) {
      second = Tensor();
    } else if constexpr (K == LossKind::SmoothL1 || K == LossKind::Huber) {
      const double p = c.attrs.f(1);
      if (p > 0) {
        Tensor d = x - t;
        Tensor inside = logical_and(lt(d, Scalar(p)), gt(d, Scalar(-p))).to(gg.dtype());
        second = K == LossKind::SmoothL1 ? inside * (s / p) : inside * s;
      }
    }
    Tensor dx;
    if constexpr (K == LossKind::MSE) dx = gg * g * (2.0 * s);
    else if (second.defined()) dx = gg * g * second;
    if (dx.defined()) {
      if (c.needs_input_grad[1]) r[1] = reduce_to(dx, c.input_metas[1]);
      if (c.needs_input_grad[2]) r[2] = reduce_to(dx * -1.0, c.input_metas[2]);
    }
  }
  return r;
}

template <LossKind K>
OpDef loss_def(bool backward) {
  OpDef d;
  std::string name = loss_name<K>();
  if (backward) {
    d.name = name + "_backward";
    d.inputs.push_back({"grad_output"});
  } else {
    d.name = name;
  }
  d.inputs.push_back({"self"});
  d.inputs.push_back({"target"});
  if (num_weights<K>() >= 1) d.inputs.push_back({"weight", true, true, false});
  if (num_weights<K>() >= 2) d.inputs.push_back({"pos_weight", true, true, false});
  d.attrs = {{"reduction", std::string("mean")}};
  if constexpr (K == LossKind::SmoothL1) d.attrs.push_back({"beta", 1.0});
  if constexpr (K == LossKind::Huber) d.attrs.push_back({"delta", 1.0});
  if constexpr (K == LossKind::KLDiv) d.attrs.push_back({"log_target", false});
  d.promotion = Promotion::Default;
  if constexpr (K == LossKind::BCE) d.raises_on_data = true;  // an input outside [0, 1]
  if (backward) {
    d.num_outputs = 2;
    d.meta = loss_backward_meta<K>;
    d.cpu_kernel = loss_backward_kernel<K>;
    constexpr bool difference = K == LossKind::MSE || K == LossKind::L1 || K == LossKind::SmoothL1 ||
                                K == LossKind::Huber;
    // The log losses' backward ops have no rule: under create_graph their forward rule
    // uses a form written with ops instead (log_loss_rule_differentiable).
    if (difference) d.backward = loss_backward_rule<K>;
    d.save_inputs = 0b111;
  } else {
    d.meta = loss_meta<K>;
    d.cpu_kernel = loss_kernel<K>;
    d.backward = loss_rule<K>;
    d.save_inputs = 0b1111;
  }
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(mse_loss) {
  OpDef d = loss_def<LossKind::MSE>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(mse_loss_backward) { return loss_def<LossKind::MSE>(true); }
TANDEM_REGISTER_OP(l1_loss) {
  OpDef d = loss_def<LossKind::L1>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(l1_loss_backward) { return loss_def<LossKind::L1>(true); }
TANDEM_REGISTER_OP(smooth_l1_loss) {
  OpDef d = loss_def<LossKind::SmoothL1>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(smooth_l1_loss_backward) { return loss_def<LossKind::SmoothL1>(true); }
TANDEM_REGISTER_OP(huber_loss) {
  OpDef d = loss_def<LossKind::Huber>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(huber_loss_backward) { return loss_def<LossKind::Huber>(true); }
TANDEM_REGISTER_OP(binary_cross_entropy) {
  OpDef d = loss_def<LossKind::BCE>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(binary_cross_entropy_backward) { return loss_def<LossKind::BCE>(true); }
TANDEM_REGISTER_OP(binary_cross_entropy_with_logits) {
  OpDef d = loss_def<LossKind::BCEWithLogits>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(binary_cross_entropy_with_logits_backward) { return loss_def<LossKind::BCEWithLogits>(true); }
TANDEM_REGISTER_OP(kl_div) {
  OpDef d = loss_def<LossKind::KLDiv>(false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(kl_div_backward) { return loss_def<LossKind::KLDiv>(true); }

// ---------------------------------------------------------------- functional API
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                const std::string& reduction) {
  return dispatch(op_nll_loss(), {input, target, weight}, {AttrValue(reduction), AttrValue(ignore_index)})[0];
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  return dispatch1(op_cross_entropy(), {input, target, weight},
                   {AttrValue(reduction), AttrValue(ignore_index), AttrValue(label_smoothing)});
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  return dispatch1(op_mse_loss(), {input, target}, {AttrValue(reduction)});
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  return dispatch1(op_l1_loss(), {input, target}, {AttrValue(reduction)});
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta) {
  return dispatch1(op_smooth_l1_loss(), {input, target}, {AttrValue(reduction), AttrValue(beta)});
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double delta) {
  return dispatch1(op_huber_loss(), {input, target}, {AttrValue(reduction), AttrValue(delta)});
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  return dispatch1(op_binary_cross_entropy(), {input, target, weight}, {AttrValue(reduction)});
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const std::string& reduction, const Tensor& pos_weight) {
  return dispatch1(op_binary_cross_entropy_with_logits(), {input, target, weight, pos_weight}, {AttrValue(reduction)});
}
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
  return dispatch1(op_kl_div(), {input, target}, {AttrValue(reduction), AttrValue(log_target)});
}

}  // namespace tandem
