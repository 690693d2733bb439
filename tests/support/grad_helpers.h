#pragma once
// Shared pieces of the gradient tests (tests/autograd/test_grad_*.cpp): leaves for
// gradcheck and the create_graph first-derivative check.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "support/tensor_json.h"
#include "tandem/tandem.h"

namespace tandem_test {

/// A differentiable program of one output, as the tests write them.
using Fn = std::function<tandem::Tensor(const std::vector<tandem::Tensor>&)>;

/// `f` as autograd::gradcheck's function type (a vector of outputs).
inline tandem::autograd::DiffFunction wrap(Fn f) {
  return [f](const std::vector<tandem::Tensor>& in) { return std::vector<tandem::Tensor>{f(in)}; };
}

/// A random normal leaf that requires grad (float64 unless told), seeded for reproducibility.
inline tandem::Tensor leaf(tandem::IntArrayRef sizes, uint64_t seed, tandem::DType dt = tandem::kFloat64) {
  tandem::manual_seed(seed);
  return tandem::randn(sizes, dt).detach().requires_grad_();
}

/// A non-contiguous float64 leaf of the given sizes: a permuted view (all dims reversed)
/// of a tensor with the reversed sizes.
inline tandem::Tensor leaf_nc(tandem::IntArrayRef sizes, uint64_t seed) {
  tandem::DimVector rev, perm;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    rev.push_back(sizes[static_cast<size_t>(d)]);
    perm.push_back(d);
  }
  tandem::manual_seed(seed);
  tandem::Tensor t = tandem::randn(rev, tandem::kFloat64).permute(perm).detach().requires_grad_();
  EXPECT_TRUE(sizes.size() < 2 || !t.is_contiguous());
  return t;
}

/// Under create_graph some rules switch from a fused backward op to a form written with
/// ops (gradgradcheck differentiates that form, so it cannot catch an error in it): its
/// first derivative must equal the plain one, which gradcheck verified.
inline void expect_same_first_derivative(const Fn& f, const std::vector<tandem::Tensor>& in) {
  using namespace tandem;
  std::vector<Tensor> req;
  for (const Tensor& t : in)
    if (t.requires_grad()) req.push_back(t);
  Tensor y = f(in);
  if (req.empty() || !y.requires_grad()) return;
  Tensor v = (arange(Scalar(y.numel()), kFloat64).reshape(y.sizes()) * 0.37).sin();
  auto plain = autograd::grad({f(in)}, req, {v}, std::nullopt, false, true);
  auto graph = autograd::grad({f(in)}, req, {v}, std::nullopt, true, true);
  for (size_t i = 0; i < req.size(); ++i) {
    ASSERT_EQ(plain[i].defined(), graph[i].defined()) << "input " << i;
    if (plain[i].defined()) {
      EXPECT_EQ(oracle::compare_tensors(graph[i].detach(), plain[i], 1e-9, 1e-9), "")
          << "create_graph first derivative, input " << i;
    }
  }
}

}  // namespace tandem_test
