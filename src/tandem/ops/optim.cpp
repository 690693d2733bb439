// Fused optimizer update ops (see ops/optim.h): schema, checks and the call into the
// fused loops of kernels/cpu/optim.h. No outputs: each op writes its parameter and state
// inputs (OpDef::mutates_inputs), which the dispatcher checks for overlap and whose
// versions it bumps.
#include "tandem/ops/optim.h"

#include "tandem/core/error.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/kernels/cpu/optim.h"

namespace tandem {

namespace {

// Input positions. SGD: param, grad, momentum_buffer?, lr.
constexpr size_t kSgdBuf = 2, kSgdLr = 3;
// Adam: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq?, state_step, lr.
constexpr size_t kAdamMax = 4, kAdamStep = 5, kAdamLr = 6;

// A tensor the loop reads or writes element by element alongside the parameter.
void check_like_param(const char* op, const MetaRef& param, const MetaRef& t, const char* what) {
  if (!t.defined) return;
  TANDEM_CHECK(t.dtype == param.dtype, TypeError, op, what, " has dtype ", dtype_name(t.dtype),
               ", expected the parameter's dtype ", dtype_name(param.dtype));
  TANDEM_CHECK(t.sizes.equals(param.sizes), ShapeError, op, what, " has shape ", t.sizes,
               ", expected the parameter's shape ", param.sizes);
  TANDEM_CHECK(compute_is_contiguous(t.sizes, t.strides), ValueError, op, what, " with strides ", t.strides,
               " is not contiguous, expected a contiguous tensor (use the optimizer's per-parameter path)");
}

// A one-element floating tensor read as a number (lr, state_step).
void check_scalar_input(const char* op, const MetaRef& t, const char* what) {
  TANDEM_CHECK(is_floating_point(t.dtype), TypeError, op, what, " has dtype ", dtype_name(t.dtype),
               ", expected a floating-point dtype");
  TANDEM_CHECK(t.numel() == 1, ShapeError, op, what, " has shape ", t.sizes, ", expected one element");
}

void check_param_and_grad(MetaContext& c) {
  const MetaRef& p = c.inputs[0];
  TANDEM_CHECK(p.dtype == DType::Float32 || p.dtype == DType::Float64, TypeError, c.op, "parameter has dtype ",
               dtype_name(p.dtype), ", expected float32 or float64");
  check_like_param(c.op, p, p, "parameter");
  check_like_param(c.op, p, c.inputs[1], "grad");
}

void sgd_meta(MetaContext& c) {
  check_param_and_grad(c);
  const bool has_momentum = c.attrs.f(0) != 0;
  TANDEM_CHECK(c.inputs[kSgdBuf].defined == has_momentum, ValueError, c.op, "momentum ", c.attrs.f(0),
               has_momentum ? " needs a momentum_buffer, got none" : " takes no momentum_buffer, got one");
  check_like_param(c.op, c.inputs[0], c.inputs[kSgdBuf], "momentum_buffer");
  check_scalar_input(c.op, c.inputs[kSgdLr], "lr");
}

void sgd_kernel(KernelContext& c) {
  kernels::SGDHyper h;
  h.lr = c.inputs[kSgdLr].item<double>();
  h.momentum = c.attrs.f(0);
  h.dampening = c.attrs.f(1);
  h.weight_decay = c.attrs.f(2);
  h.nesterov = c.attrs.b(3);
  h.maximize = c.attrs.b(4);
  kernels::sgd_fused_step(c.inputs[0], c.inputs[1], c.inputs[kSgdBuf], c.attrs.b(5), h);
}

void adam_meta(MetaContext& c) {
  check_param_and_grad(c);
  for (size_t i = 2; i <= kAdamMax; ++i) check_like_param(c.op, c.inputs[0], c.inputs[i], i == 2   ? "exp_avg"
                                                                                         : i == 3 ? "exp_avg_sq"
                                                                                                  : "max_exp_avg_sq");
  TANDEM_CHECK(c.inputs[2].defined && c.inputs[3].defined, ValueError, c.op,
               "exp_avg and exp_avg_sq must be defined tensors");
  const bool amsgrad = c.attrs.b(4);
  TANDEM_CHECK(c.inputs[kAdamMax].defined == amsgrad, ValueError, c.op, "amsgrad=", amsgrad ? "true" : "false",
               amsgrad ? " needs a max_exp_avg_sq, got none" : " takes no max_exp_avg_sq, got one");
  check_scalar_input(c.op, c.inputs[kAdamStep], "state_step");
  check_scalar_input(c.op, c.inputs[kAdamLr], "lr");
}

template <bool kDecoupled>
void adam_kernel(KernelContext& c) {
  kernels::AdamHyper h;
  h.lr = c.inputs[kAdamLr].item<double>();
  h.step = c.inputs[kAdamStep].item<double>();
  h.beta1 = c.attrs.f(0);
  h.beta2 = c.attrs.f(1);
  h.eps = c.attrs.f(2);
  h.weight_decay = c.attrs.f(3);
  h.amsgrad = c.attrs.b(4);
  h.maximize = c.attrs.b(5);
  h.decoupled = kDecoupled;
  kernels::adam_fused_step(c.inputs[0], c.inputs[1], c.inputs[2], c.inputs[3], c.inputs[kAdamMax], h);
}

// Every input is read or written as it is (no promotion, no gradient).
InputSpec plain(const char* name, bool optional = false) { return InputSpec{name, false, optional, false}; }

OpDef adam_def(const char* name, KernelFn kernel) {
  OpDef d;
  d.name = name;
  d.inputs = {plain("param"),          plain("grad"),       plain("exp_avg"), plain("exp_avg_sq"),
              plain("max_exp_avg_sq", true), plain("state_step"), plain("lr")};
  d.attrs = {{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.0}, {"amsgrad", false},
             {"maximize", false}};
  d.meta = adam_meta;
  d.cpu_kernel = kernel;
  d.num_outputs = 0;
  d.mutates_inputs = 0b11101;  // param, exp_avg, exp_avg_sq, max_exp_avg_sq
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(_fused_sgd_) {
  OpDef d;
  d.name = "_fused_sgd_";
  d.inputs = {plain("param"), plain("grad"), plain("momentum_buffer", true), plain("lr")};
  d.attrs = {{"momentum", 0.0},   {"dampening", 0.0}, {"weight_decay", 0.0},
             {"nesterov", false}, {"maximize", false}, {"is_first_step", false}};
  d.meta = sgd_meta;
  d.cpu_kernel = sgd_kernel;
  d.num_outputs = 0;
  d.mutates_inputs = 0b101;  // param, momentum_buffer
  return d;
}

TANDEM_REGISTER_OP(_fused_adam_) { return adam_def("_fused_adam_", adam_kernel<false>); }
TANDEM_REGISTER_OP(_fused_adamw_) { return adam_def("_fused_adamw_", adam_kernel<true>); }

void _fused_sgd_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const Tensor& lr,
                 double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                 bool is_first_step) {
  dispatch(op__fused_sgd_(), {param, grad, momentum_buffer, lr},
           {AttrValue(momentum), AttrValue(dampening), AttrValue(weight_decay), AttrValue(nesterov),
            AttrValue(maximize), AttrValue(is_first_step)});
}

namespace {
void adam_call(const OpDef& op, const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
               const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const Tensor& state_step, const Tensor& lr,
               double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool maximize) {
  dispatch(op, {param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, state_step, lr},
           {AttrValue(beta1), AttrValue(beta2), AttrValue(eps), AttrValue(weight_decay), AttrValue(amsgrad),
            AttrValue(maximize)});
}
}  // namespace

void _fused_adam_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& max_exp_avg_sq, const Tensor& state_step, const Tensor& lr, double beta1,
                  double beta2, double eps, double weight_decay, bool amsgrad, bool maximize) {
  adam_call(op__fused_adam_(), param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, state_step, lr, beta1, beta2, eps,
            weight_decay, amsgrad, maximize);
}

void _fused_adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const Tensor& max_exp_avg_sq, const Tensor& state_step, const Tensor& lr, double beta1,
                   double beta2, double eps, double weight_decay, bool amsgrad, bool maximize) {
  adam_call(op__fused_adamw_(), param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, state_step, lr, beta1, beta2, eps,
            weight_decay, amsgrad, maximize);
}

}  // namespace tandem
