// Gradients of take, index_copy(_), index_fill(_), diag, diag_embed, logcumsumexp,
// median, mode and Tensor.unfold: gradcheck and gradgradcheck (float64 finite
// differences) on contiguous and non-contiguous inputs, in-place variants on non-leaves
// and views, and gradients PyTorch 1.13 computed where finite differences cannot decide
// (ties of median/mode) or for whole in-place programs (values from /usr/bin/python3 +
// torch; the scripts are quoted next to each test). isclose/allclose/equal are not
// differentiable (bool results).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "support/grad_helpers.h"
#include "support/tensor_json.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::Fn;
using tandem_test::wrap;
using tandem_test::leaf;
using tandem_test::leaf_nc;
using autograd::gradcheck;
using autograd::gradgradcheck;
using indexing::Slice;

namespace {

void check(Fn f, const std::vector<Tensor>& in, bool second = true) {
  try {
    EXPECT_TRUE(gradcheck(wrap(f), in));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradcheck: " << e.what();
  }
  if (!second) return;
  try {
    EXPECT_TRUE(gradgradcheck(wrap(f), in));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradgradcheck: " << e.what();
  }
}

Tensor idx(std::vector<int64_t> v, IntArrayRef sizes) { return from_vector<int64_t>(v, sizes); }
Tensor idx(std::vector<int64_t> v) { return from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what, double tol = 1e-12) {
  ASSERT_TRUE(got.defined()) << what;
  std::vector<double> g = oracle::to_doubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

// arange(12).view(3, 4) / 10 + 0.5 and the weights arange(12).view(3, 4) + 1.
Tensor x34() { return (arange(Scalar(12), kFloat64).view({3, 4}) / 10.0 + 0.5).detach().requires_grad_(); }
Tensor w34() { return arange(Scalar(12), kFloat64).view({3, 4}) + 1.0; }

}  // namespace

// ---------------------------------------------------------------- take
TEST(GradMoreOps, Take) {
  Tensor x = leaf({3, 4}, 1);
  check([](auto& v) { return take(v[0], idx({0, -1, 5, 5, 7, 2}, {2, 3})); }, {x});  // repeated index
  check([](auto& v) { return v[0].take(idx({11, 0, 4})); }, {leaf_nc({3, 4}, 2)});
  check([](auto& v) { return take(v[0], idx({0, 0})); }, {leaf({}, 3)});
  check([](auto& v) { return take(v[0], zeros({0}, kInt64)); }, {x});
}

// torch: y = torch.take(x34, tensor([[0, -1], [5, 5]])); (y * [[1, 2], [3, 4]]).sum().backward()
TEST(GradMoreOps, TakeMatchesPyTorch) {
  Tensor x = x34();
  (take(x, idx({0, -1, 5, 5}, {2, 2})) * tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64)).sum().backward();
  expect_values(x.grad(), {1, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 2}, "take");
}

// ---------------------------------------------------------------- index_copy, index_fill
TEST(GradMoreOps, IndexCopy) {
  Tensor x = leaf({4, 3}, 10), src = leaf({2, 3}, 11);
  check([](auto& v) { return index_copy(v[0], 0, idx({3, 1}), v[1]); }, {x, src});
  check([](auto& v) { return v[0].index_copy(1, idx({2, 0}), v[1]); }, {leaf_nc({3, 4}, 12), leaf_nc({3, 2}, 13)});
  check([](auto& v) { return index_copy(v[0], 0, idx({0}), v[1]); }, {leaf({}, 14), leaf({}, 15)});
  check([](auto& v) { return index_copy(v[0], -1, zeros({}, kInt64), v[1]); }, {leaf({3}, 16), leaf({}, 17)});
  // Only one of the inputs requiring grad.
  Tensor plain = randn({4, 3}, kFloat64);
  check([&](auto& v) { return index_copy(plain, 0, idx({2}), v[0]); }, {leaf({1, 3}, 18)});
}

TEST(GradMoreOps, IndexFill) {
  check([](auto& v) { return index_fill(v[0], 1, idx({3, -4, 1}), Scalar(2.5)); }, {leaf({3, 4}, 20)});
  check([](auto& v) { return v[0].index_fill(0, idx({2}), Scalar(-1)); }, {leaf_nc({3, 4}, 21)});
  check([](auto& v) { return index_fill(v[0], 0, idx({0}), Scalar(1)); }, {leaf({}, 22)});
}

TEST(GradMoreOps, InplaceVariantsGradcheck) {
  Tensor x = leaf({3, 4}, 30), src = leaf({3, 2}, 31);
  check([](auto& v) { return (v[0] * 1.0).index_fill_(0, idx({1}), Scalar(0.0)); }, {x});
  check([](auto& v) {
    Tensor y = v[0] * 2.0;
    y.narrow(1, 1, 3).index_copy_(1, idx({2, 0}), v[1]);
    return y;
  }, {x, src});
  check([](auto& v) {
    Tensor y = v[0] + 1.0;  // (exp would save its output, which the writes below modify)
    y.t().index_fill_(1, idx({-1}), Scalar(3.0)).index_copy_(0, idx({1}), v[1].narrow(1, 0, 1).t());
    return y;
  }, {x, src});
}

// torch: y = x34 * 1; y[:, 1:].index_copy_(1, tensor([2, 0]), src) with
//   src = arange(6).view(3, 2) / 7 - 0.3; y.index_fill_(0, tensor([-1]), 0.5);
//   (y * y * w).sum().backward()
TEST(GradMoreOps, InplaceIndexCopyFillMatchPyTorch) {
  Tensor x = x34();
  Tensor src = (arange(Scalar(6), kFloat64).view({3, 2}) / 7.0 - 0.3).detach().requires_grad_();
  Tensor y = x * 1.0;
  y.index({Slice(), Slice(1)}).index_copy_(1, idx({2, 0}), src);
  y.index_fill_(0, idx({-1}), Scalar(0.5));
  (y * y * w34()).sum().backward();
  expect_values(x.grad(), {1.0, 0, 4.2, 0, 9.0, 0, 15.4, 0, 0, 0, 0, 0}, "x");
  expect_values(src.grad(), {-2.4, -0.6285714285714286, -0.22857142857142865, 1.5428571428571427, 0, 0}, "src");
}

// The saved-tensor version check: exp saves its output, which index_fill_ then overwrites.
TEST(GradMoreOps, InplaceOnSavedTensorIsAnError) {
  Tensor x = leaf({3}, 40);
  Tensor y = x.exp();
  y.index_fill_(0, idx({1}), Scalar(0.0));
  EXPECT_THROW(y.sum().backward(), Error);
  Tensor z = x.exp();
  z.index_copy_(0, idx({0}), x.narrow(0, 0, 1));
  EXPECT_THROW(z.sum().backward(), Error);
  // On a leaf that requires grad: refused up front.
  EXPECT_THROW(x.index_fill_(0, idx({0}), Scalar(1.0)), Error);
}

// ---------------------------------------------------------------- diag, diag_embed
TEST(GradMoreOps, DiagAndDiagEmbed) {
  check([](auto& v) { return diag(v[0]); }, {leaf({3}, 50)});
  check([](auto& v) { return diag(v[0], 2) + diag(v[0], -2).sum(); }, {leaf({3}, 51)});
  check([](auto& v) { return v[0].diag(1); }, {leaf_nc({3, 4}, 52)});
  check([](auto& v) { return diag(v[0], -1); }, {leaf({4, 3}, 53)});
  check([](auto& v) { return diag_embed(v[0]); }, {leaf({2, 3}, 54)});
  check([](auto& v) { return diag_embed(v[0], 1, 0, 2); }, {leaf_nc({2, 3}, 55)});
  check([](auto& v) { return v[0].diag_embed(-2, 2, 0); }, {leaf({2, 2, 3}, 56)});
}

// ---------------------------------------------------------------- logcumsumexp
TEST(GradMoreOps, Logcumsumexp) {
  check([](auto& v) { return logcumsumexp(v[0], 1); }, {leaf({3, 5}, 60)});
  check([](auto& v) { return v[0].logcumsumexp(0) * v[0]; }, {leaf_nc({4, 3}, 61)});
  check([](auto& v) { return logcumsumexp(v[0], 0); }, {leaf({}, 62)});
  check([](auto& v) { return logcumsumexp(v[0] * 30.0, -1); }, {leaf({2, 4}, 63)});  // large values
}

// torch: x = [0.3, -1.2, 2.0, 0.7, -0.4]; torch.logcumsumexp(x, 0).backward([1, 0, -2, 0.5, 0])
TEST(GradMoreOps, LogcumsumexpMatchesPyTorch) {
  Tensor x = tensor({0.3, -1.2, 2.0, 0.7, -0.4}, kFloat64).requires_grad_();
  logcumsumexp(x, 0).backward(tensor({1.0, 0.0, -2.0, 0.5, 0.0}, kFloat64));
  expect_values(x.grad(), {0.7624205206537267, -0.05301114727451456, -1.3004975712954396, 0.09108819791622738, 0.0},
                "logcumsumexp", 1e-10);
}

// ---------------------------------------------------------------- median, mode
TEST(GradMoreOps, Median) {
  // randn values: no ties, so the finite differences see one selection.
  check([](auto& v) { return median(v[0]); }, {leaf({3, 5}, 70)});
  check([](auto& v) { return median(v[0]) * v[0]; }, {leaf_nc({2, 4}, 71)});
  check([](auto& v) { return std::get<0>(median(v[0], 1)); }, {leaf({3, 5}, 72)});
  check([](auto& v) { return std::get<0>(v[0].median(0, true)); }, {leaf_nc({4, 3}, 73)});
  check([](auto& v) { return std::get<0>(median(v[0], 0)); }, {leaf({}, 74)});
}

// torch: x = [1, 2, 2, 3]; torch.median(x).backward() -> [0, 0.5, 0.5, 0]
//        x = [[1, 2, 2, 3], [4, 4, 5, 5]]; v, i = torch.mode(x, 1);
//        (v * [10, 100]).sum().backward() -> [[0, 0, 10, 0], [0, 100, 0, 0]], i = [2, 1]
TEST(GradMoreOps, TiesMatchPyTorch) {
  Tensor x = tensor({1.0, 2.0, 2.0, 3.0}, kFloat64).requires_grad_();
  median(x).backward();
  expect_values(x.grad(), {0, 0.5, 0.5, 0}, "median");
  Tensor m = tensor({{1.0, 2.0, 2.0, 3.0}, {4.0, 4.0, 5.0, 5.0}}, kFloat64).requires_grad_();
  auto [v, i] = mode(m, 1);
  expect_values(i, {2, 1}, "mode indices");
  (v * tensor({10.0, 100.0}, kFloat64)).sum().backward();
  expect_values(m.grad(), {0, 0, 10, 0, 0, 100, 0, 0}, "mode");
  // A NaN median takes the gradient evenly over the NaNs.
  Tensor n = tensor({2.0, std::nan(""), std::nan(""), 3.0}, kFloat64).requires_grad_();
  median(n).backward();
  expect_values(n.grad(), {0, 0.5, 0.5, 0}, "median nan");
}

// mode's value is piecewise constant in its input and moves under finite differences, so
// its rule is checked as a function of the selected index: the gradient is one-hot there
// (and differentiable again: the rule is a scatter).
TEST(GradMoreOps, ModeGradientGoesToIndex) {
  Tensor x = tensor({{3.0, 1.0, 3.0, 3.0}, {2.0, 2.0, 7.0, 2.0}}, kFloat64).requires_grad_();
  auto [v, i] = x.mode(1, true);
  expect_values(i, {3, 3}, "indices");
  Tensor g = tensor({0.5, -2.0}, kFloat64).view({2, 1}).detach().requires_grad_();
  auto gx = autograd::grad({v}, {x}, {g}, std::nullopt, true);
  expect_values(gx[0], {0, 0, 0, 0.5, 0, 0, 0, -2.0}, "one-hot");
  auto gg = autograd::grad({(gx[0] * 3.0).sum()}, {g});
  expect_values(gg[0], {3.0, 3.0}, "double backward");
}

// ---------------------------------------------------------------- unfold
TEST(GradMoreOps, Unfold) {
  check([](auto& v) { return v[0].unfold(0, 3, 2); }, {leaf({7}, 80)});           // overlapping
  check([](auto& v) { return v[0].unfold(0, 2, 3); }, {leaf({8}, 81)});           // gaps
  check([](auto& v) { return v[0].unfold(1, 2, 1) * 2.0; }, {leaf_nc({3, 5}, 82)});
  check([](auto& v) { return v[0].unfold(-2, 3, 1).unfold(0, 1, 1); }, {leaf({2, 4, 3}, 83)});
  check([](auto& v) { return v[0].unfold(0, 1, 1); }, {leaf({}, 84)});
  check([](auto& v) { return v[0].unfold(0, 0, 1); }, {leaf({3}, 85)});
}

// torch: x = arange(8) / 10 + 0.5; y = x * 1; y.unfold(0, 2, 3).mul_(2);
//   u = y.unfold(0, 3, 1); (u * arange(18).view(6, 3)).sum().backward()
TEST(GradMoreOps, InplaceThroughUnfoldMatchesPyTorch) {
  Tensor x = (arange(Scalar(8), kFloat64) / 10.0 + 0.5).detach().requires_grad_();
  Tensor y = x * 1.0;
  y.unfold(0, 2, 3).mul_(2.0);
  Tensor u = y.unfold(0, 3, 1);
  (u * arange(Scalar(18), kFloat64).view({6, 3})).sum().backward();
  expect_values(x.grad(), {0, 8, 12, 42, 60, 39, 60, 34}, "unfold");
  check([](auto& v) {
    Tensor y2 = v[0] * 1.0;
    y2.unfold(0, 2, 3).mul_(v[0].narrow(0, 0, 2));
    return y2.unfold(0, 3, 1);
  }, {leaf({8}, 86)});
}
