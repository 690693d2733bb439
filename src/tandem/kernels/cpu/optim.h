#pragma once
// Fused optimizer update loops (one pass per parameter tensor: read grad, param and
// state, write param and state, no temporaries) and the per-tensor norm used by
// clip_grad_norm_. Callers (optim/) check eligibility: every tensor contiguous, of one
// dtype, float32 or float64, and of the same numel; kernels trust that.
//
// Numerics: each loop performs, element by element, exactly the roundings of the
// per-parameter path that optim/ builds from tandem ops (the PyTorch 1.13
// `_single_tensor_*` sequence): hyper-parameters are rounded to the tensor dtype the way
// a C++ number operand is, `x.add_(y, alpha)` is one fused multiply-add when the build
// targets FMA hardware (the elementwise kernels are compiled with GCC's default
// -ffp-contract=fast, which contracts `a + alpha * b`), and every other op rounds once.
// optim.cpp is compiled with -ffp-contract=off and spells those FMAs out, so the two
// paths agree bit for bit (tests/optim checks it).
#include <cstdint>

#include "tandem/core/tensor.h"

namespace tandem::kernels {

/// SGD hyper-parameters for one group (torch.optim.SGD).
struct SGDHyper {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/// One SGD step in place. `buf` is the momentum buffer (undefined when momentum == 0);
/// with `init_buf` its old contents are ignored and it receives the first d_p (as
/// PyTorch's `buf = clone(d_p)` on the first step).
void sgd_fused_step(const Tensor& param, const Tensor& grad, const Tensor& buf, bool init_buf, const SGDHyper& h);

/// Adam / AdamW hyper-parameters for one group; `step` is the step count after this
/// step's increment.
struct AdamHyper {
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled = false;  ///< AdamW: param *= 1 - lr * weight_decay instead of L2 on the grad
  double step = 1;
};

/// One Adam/AdamW step in place on param, exp_avg, exp_avg_sq and (amsgrad only, else
/// undefined) max_exp_avg_sq.
void adam_fused_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const Tensor& max_exp_avg_sq, const AdamHyper& h);

/// Vector norm of a contiguous float32/float64 tensor, accumulated in double:
/// p = inf: max |x|; p = -inf: min |x|; p = 0: count of nonzeros; otherwise
/// (sum |x|^p)^(1/p). NaN anywhere gives NaN. An empty tensor gives 0 (inf/-inf too,
/// where PyTorch raises; callers skip empty tensors).
double vector_norm(const Tensor& x, double p);

}  // namespace tandem::kernels
