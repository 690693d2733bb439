#pragma once
#include <cmath>
// Helpers shared by the optim tests.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tandem/optim/optim.h"
#include "tandem/tandem.h"

namespace tandem::optim::testing {

/// Builds an optimizer by kind name with `defaults` (option name -> value) over `groups`.
inline std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, std::vector<ParamGroup> groups,
                                                 const std::map<std::string, double>& defaults) {
  auto fill = [&](Options o) {
    for (const auto& [k, v] : defaults) o.set(k, v);
    return o;
  };
  const double lr = defaults.count("lr") ? defaults.at("lr") : 0.01;
  if (kind == "SGD") {
    SGDOptions o(lr);
    static_cast<Options&>(o) = fill(o);
    return std::make_unique<SGD>(std::move(groups), o);
  }
  if (kind == "Adam") {
    AdamOptions o(lr);
    static_cast<Options&>(o) = fill(o);
    return std::make_unique<Adam>(std::move(groups), o);
  }
  if (kind == "AdamW") {
    AdamWOptions o(lr);
    static_cast<Options&>(o) = fill(o);
    return std::make_unique<AdamW>(std::move(groups), o);
  }
  if (kind == "RMSprop") {
    RMSpropOptions o(lr);
    static_cast<Options&>(o) = fill(o);
    return std::make_unique<RMSprop>(std::move(groups), o);
  }
  if (kind == "Adagrad") {
    AdagradOptions o(lr);
    static_cast<Options&>(o) = fill(o);
    return std::make_unique<Adagrad>(std::move(groups), o);
  }
  throw std::runtime_error("unknown optimizer " + kind);
}

/// Leaf parameter (requires_grad) holding a copy of `t`.
inline Tensor make_param(const Tensor& t) {
  Tensor p = t.detach().clone();
  p.requires_grad_(true);
  return p;
}

/// True when both tensors have the same shape, dtype and bytes.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (!a.sizes().equals(b.sizes()) || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), static_cast<size_t>(ca.nbytes())) == 0;
}

/// The fused and the per-parameter (op-built) update paths agree: bitwise in optimised
/// builds; in the -O1 sanitizer build (which GCC marks with __SANITIZE_ADDRESS__) the
/// elementwise kernels round differently, so there they must agree to rtol 1e-5 (float32)
/// or 1e-12 (float64).
inline bool paths_agree(const Tensor& a, const Tensor& b) {
#ifndef __SANITIZE_ADDRESS__
  return bitwise_equal(a, b);
#else
  if (!a.sizes().equals(b.sizes()) || a.dtype() != b.dtype()) return false;
  Tensor x = a.to(kFloat64).contiguous(), y = b.to(kFloat64).contiguous();
  const double rtol = a.dtype() == kFloat64 ? 1e-12 : 1e-5, atol = a.dtype() == kFloat64 ? 1e-14 : 1e-7;
  const double* p = x.data_ptr<double>();
  const double* q = y.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(p[i]) && std::isnan(q[i])) continue;
    if (!(std::fabs(p[i] - q[i]) <= atol + rtol * std::fabs(q[i]))) return false;
  }
  return true;
#endif
}

/// Distance in units in the last place between two floats/doubles of `t`'s dtype, max
/// over elements (NaN vs NaN counts as 0).
double max_ulp_diff(const Tensor& a, const Tensor& b);

}  // namespace tandem::optim::testing
