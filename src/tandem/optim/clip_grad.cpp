#include "tandem/optim/clip_grad.h"

#include <cmath>

#include "tandem/autograd/engine.h"
#include "tandem/kernels/cpu/optim.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/pointwise.h"

namespace tandem::optim {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    TANDEM_CHECK(p.defined(), ValueError, "clip_grad_norm_", "got an undefined parameter");
    if (p.grad().defined()) grads.push_back(p.grad().detach());
  }
  if (grads.empty()) return 0.0;
  NoGradGuard ng;
  // Per-gradient norms, each rounded to its gradient's dtype (torch.norm's result dtype),
  // then the norm of those values in the promoted dtype (torch.stack promotes).
  std::vector<double> norms;
  DType total_dtype = grads[0].dtype();
  for (const Tensor& g : grads) {
    TANDEM_CHECK(g.is_floating_point(), TypeError, "clip_grad_norm_", "got a gradient of dtype ",
                 dtype_name(g.dtype()), ", expected a floating dtype");
    Tensor x = g;
    if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64) x = x.to(DType::Float32);
    x = x.contiguous();
    const double n = kernels::vector_norm(x, norm_type);
    norms.push_back(full({}, n, g.dtype()).item<double>());
    total_dtype = promote_types(total_dtype, g.dtype());
  }
  double total;
  if (norms.size() == 1) {
    total = norms[0];
  } else {
    Tensor stacked = from_vector(norms, {static_cast<int64_t>(norms.size())}, DType::Float64);
    total = kernels::vector_norm(stacked, norm_type);
  }
  Tensor total_t = full({}, total, total_dtype);
  total = total_t.item<double>();
  TANDEM_CHECK(!error_if_nonfinite || std::isfinite(total), RuntimeError, "clip_grad_norm_",
               "The total norm of order ", norm_type,
               " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
               "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  // clip_coef = max_norm / (total_norm + 1e-6), clamped to 1 (NaN stays NaN), in the total's dtype.
  Tensor coef = Scalar(max_norm) / (total_t + 1e-6);
  coef = minimum(coef, full({}, 1.0, coef.dtype()));
  for (Tensor& g : grads) g.mul_(coef);
  return total;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard ng;
  for (const Tensor& p : parameters) {
    TANDEM_CHECK(p.defined(), ValueError, "clip_grad_value_", "got an undefined parameter");
    if (!p.grad().defined()) continue;
    Tensor g = p.grad().detach();
    Tensor lo = full({}, -clip_value, g.dtype()), hi = full({}, clip_value, g.dtype());
    g.copy_(minimum(maximum(g, lo), hi));
  }
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace tandem::optim
