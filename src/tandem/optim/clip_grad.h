#pragma once
// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_, PyTorch 1.13).
// They live in optim/ because they run between backward() and optimizer.step().
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::optim {

/// Scales the gradients of `parameters` (those with a .grad) in place so that their
/// total norm — the norm_type-norm of the per-gradient norms, i.e. of all gradients
/// concatenated — is at most max_norm: every gradient is multiplied by
/// min(max_norm / (total_norm + 1e-6), 1), computed in the gradients' dtype as PyTorch.
/// norm_type may be any p (INFINITY: max |g|; -INFINITY: min |g|; 0: count of nonzeros).
/// Returns the total norm before clipping (0 when no parameter has a gradient).
/// Per-gradient norms are accumulated in double and rounded to the gradient's dtype.
/// RuntimeError when error_if_nonfinite and the total norm is NaN or infinite (the
/// gradients are then left unchanged); otherwise a NaN/inf total scales them by NaN/0 as
/// PyTorch does.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/// Clamps every gradient of `parameters` into [-clip_value, clip_value] in place (NaN
/// stays NaN; a negative clip_value sets every element to clip_value, as clamp(min > max)).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace tandem::optim
