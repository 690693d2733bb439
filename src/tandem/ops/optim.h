#pragma once
// Fused optimizer updates as registry ops (PyTorch's `_fused_sgd_`, `_fused_adam_`,
// `_fused_adamw_`, one parameter tensor per call). optim/ calls them through the
// dispatcher, so an optimizer step is seen by capture like any other op: each op writes
// its parameter and state inputs in place (OpDef::mutates_inputs; the dispatcher and the
// executor bump their version counters). The learning rate and Adam's step count are
// tensor inputs, not attributes, so a compiled program reads their current values: an LR
// schedule changes a value, not the program.
//
// Numerics: bit for bit the per-parameter path optim/ builds from tandem ops (PyTorch
// 1.13's `_single_tensor_sgd` / `_single_tensor_adam(w)`); see kernels/cpu/optim.h.
// Eligibility (checked, TypeError / ShapeError / ValueError naming the op otherwise):
// every tensor except lr and state_step is contiguous, of the parameter's dtype (float32
// or float64) and of its sizes; lr and state_step hold one floating-point element.
// Gradients never flow through these ops (no backward rule; call them under no_grad).
#include "tandem/core/tensor.h"

namespace tandem {

/// One SGD step (torch.optim.SGD, fused): with d = (maximize ? -grad : grad) +
/// weight_decay * param, the momentum buffer becomes d on the first step
/// (`is_first_step`) and momentum * buf + (1 - dampening) * d after, and param -= lr *
/// (nesterov ? d + momentum * buf : buf) (d without momentum). `momentum_buffer` is
/// undefined exactly when momentum == 0 (ValueError otherwise). `lr`: a one-element floating tensor.
void _fused_sgd_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const Tensor& lr,
                 double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                 bool is_first_step);

/// One Adam step (torch.optim.Adam, fused) on param, exp_avg, exp_avg_sq and, with
/// amsgrad, max_exp_avg_sq (undefined otherwise; ValueError when that disagrees with
/// `amsgrad`). `state_step`: a one-element floating tensor holding the step count after this step's
/// increment (bias corrections 1 - beta^step); `lr`: a one-element floating tensor.
void _fused_adam_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& max_exp_avg_sq, const Tensor& state_step, const Tensor& lr, double beta1,
                  double beta2, double eps, double weight_decay, bool amsgrad, bool maximize);

/// One AdamW step (torch.optim.AdamW, fused): as _fused_adam_, with decoupled weight
/// decay param *= 1 - lr * weight_decay instead of L2 on the gradient.
void _fused_adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const Tensor& max_exp_avg_sq, const Tensor& state_step, const Tensor& lr, double beta1,
                   double beta2, double eps, double weight_decay, bool amsgrad, bool maximize);

}  // namespace tandem
