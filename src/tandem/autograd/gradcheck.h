#pragma once
// Finite-difference gradient checks (torch.autograd.gradcheck / gradgradcheck).
#include <functional>
#include <string>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::autograd {

/// Options for gradcheck: central-difference step eps, and |analytical - numerical| <=
/// atol + rtol * |numerical| per Jacobian entry.
struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  /// Throw RuntimeError describing the first mismatch (true) or just return false.
  bool raise_exception = true;
};

using DiffFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Checks the gradients of `fn` at `inputs` against central finite differences.
/// Inputs that require grad must be float64 (TypeError otherwise); they may be
/// non-contiguous. Every floating output is checked, one Jacobian row at a time.
/// Returns true when all entries match.
bool gradcheck(const DiffFunction& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts = {});

/// Checks second derivatives: gradcheck of (inputs, v) -> grad(fn(inputs), inputs, v,
/// create_graph=true) with random float64 v (seeded from `seed`).
bool gradgradcheck(const DiffFunction& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts = {},
                   uint64_t seed = 0);

}  // namespace tandem::autograd
