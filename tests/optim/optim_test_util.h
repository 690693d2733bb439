#pragma once
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

/// Distance in units in the last place between two floats/doubles of `t`'s dtype, max
/// over elements (NaN vs NaN counts as 0).
double max_ulp_diff(const Tensor& a, const Tensor& b);

}  // namespace tandem::optim::testing
