// Gradients of the index family (ops/index.cpp, indexing.cpp, join.cpp, sort.cpp) and of
// the scans (ops/reduce_scan.cpp): gradcheck and gradgradcheck (float64 finite
// differences) of every differentiable op on contiguous, non-contiguous and broadcasting
// inputs; in-place variants on non-leaves and views; and gradients PyTorch 1.13 computed
// for ties, repeated indices and in-place programs (values from /usr/bin/python3 + torch,
// the scripts are quoted next to each test).
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
using tandem_test::expect_same_first_derivative;
using autograd::gradcheck;
using autograd::gradgradcheck;
using indexing::Slice;

namespace {

// Checks first and (unless `second` is false) second derivatives.
void check(Fn f, const std::vector<Tensor>& in, bool second = true) {
  try {
    EXPECT_TRUE(gradcheck(wrap(f), in));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradcheck: " << e.what();
  }
  if (!second) return;
  try {
    EXPECT_TRUE(gradgradcheck(wrap(f), in));
    expect_same_first_derivative(f, in);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradgradcheck: " << e.what();
  }
}

Tensor idx(std::vector<int64_t> v, IntArrayRef sizes) { return from_vector<int64_t>(v, sizes); }
Tensor idx(std::vector<int64_t> v) { return from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }
Tensor mask(std::vector<int64_t> v, IntArrayRef sizes) { return ne(from_vector<int64_t>(v, sizes), Scalar(0)); }

std::vector<double> vals(const Tensor& t) { return oracle::to_doubles(t); }

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what, double tol = 1e-12) {
  ASSERT_TRUE(got.defined()) << what;
  std::vector<double> g = vals(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

// Deterministic inputs used by the PyTorch comparisons: arange(12).view(3, 4) / 10 + 0.5.
Tensor x34() { return (arange(Scalar(12), kFloat64).view({3, 4}) / 10.0 + 0.5).detach().requires_grad_(); }
Tensor w34() { return arange(Scalar(12), kFloat64).view({3, 4}) + 1.0; }

}  // namespace

// ---------------------------------------------------------------- cat, stack
TEST(GradIndex, Cat) {
  Tensor a = leaf({2, 3}, 1), b = leaf({4, 3}, 2), c = leaf_nc({3, 3}, 3);
  check([](auto& v) { return cat({v[0], v[1], v[2]}, 0); }, {a, b, c});
  Tensor d = leaf_nc({2, 5}, 4);
  check([](auto& v) { return cat({v[0], v[1]}, -1); }, {a, d});
  // A legacy empty [0] input (skipped by cat) gets an empty gradient; a float32 input
  // without grad is promoted.
  Tensor e = zeros({0}, kFloat64).requires_grad_();
  check([](auto& v) { return cat({v[0], v[1], ones({1, 3}, kFloat32)}, 0); }, {e, a});
  Tensor y = cat({e, a}, 0);
  y.sum().backward();
  EXPECT_EQ(e.grad().sizes().vec(), std::vector<int64_t>{0});
  // Three dims, middle dim, broadcast-free but a view input.
  Tensor p = leaf({2, 3, 4}, 5), q = leaf({2, 1, 4}, 6);
  check([](auto& v) { return cat({v[0], v[1].expand({2, 2, 4}), v[0].narrow(1, 1, 1)}, 1); }, {p, q});
}

TEST(GradIndex, Stack) {
  Tensor a = leaf({2, 3}, 7), b = leaf_nc({2, 3}, 8);
  check([](auto& v) { return stack({v[0], v[1]}, 0); }, {a, b});
  check([](auto& v) { return stack({v[0], v[1], v[0]}, 2); }, {a, b});
  check([](auto& v) { return hstack({v[0], v[1]}) * vstack({v[1], v[0]}).narrow(0, 0, 2).narrow(1, 0, 3).repeat({1, 2}); },
        {a, b});
}

// ---------------------------------------------------------------- gather, scatter
TEST(GradIndex, Gather) {
  Tensor x = leaf({3, 4}, 10);
  Tensor i1 = idx({0, 3, 3, 1, 2, 0}, {3, 2});  // repeated indices along dim 1
  check([&](auto& v) { return gather(v[0], 1, i1); }, {x});
  check([&](auto& v) { return v[0].gather(0, idx({2, 2, 0, 1}, {1, 4})); }, {x});
  check([&](auto& v) { return gather(v[0], -1, i1); }, {leaf_nc({3, 4}, 11)});
  // 0-d self and index.
  check([](auto& v) { return gather(v[0], 0, zeros({}, kInt64)); }, {leaf({}, 12)});
  // index smaller than self in a non-gathered dim.
  check([](auto& v) { return gather(v[0], 1, idx({1, 1, 0}, {1, 3})); }, {x});
}

TEST(GradIndex, Scatter) {
  Tensor x = leaf({3, 4}, 13), src = leaf({3, 2}, 14);
  // Distinct indices per line: with repeated ones scatter's result depends on the write order.
  Tensor i1 = idx({0, 3, 2, 1, 1, 0}, {3, 2});
  check([&](auto& v) { return scatter(v[0], 1, i1, v[1]); }, {x, src});
  check([&](auto& v) { return scatter(v[0], 1, i1, Scalar(2.5)); }, {x});
  check([&](auto& v) { return scatter(v[0], 0, idx({2, 0, 1, 2}, {1, 4}), v[1].expand({2, 4})); },
        {leaf_nc({3, 4}, 15), leaf({1, 4}, 26)});
  // src larger than index: the elements scatter never reads get gradient 0 (PyTorch
  // raises "invalid gradient" here).
  Tensor big = leaf({3, 5}, 16);
  check([&](auto& v) { return scatter(v[0], 1, i1, v[1]); }, {x, big});
  Tensor s = big.detach().clone().requires_grad_();
  scatter(x.detach(), 1, i1, s).sum().backward();
  expect_values(s.grad(), {1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0}, "unread src elements");
}

TEST(GradIndex, ScatterAdd) {
  Tensor x = leaf({3, 4}, 17), src = leaf({2, 4}, 18);
  Tensor i0 = idx({0, 2, 2, 0, 0, 2, 1, 0}, {2, 4});  // repeated targets accumulate
  check([&](auto& v) { return scatter_add(v[0], 0, i0, v[1]); }, {x, src});
  check([&](auto& v) { return v[0].scatter_add(1, idx({3, 3, 0}, {1, 3}), v[1]); }, {leaf_nc({3, 4}, 19), src});
}

TEST(GradIndex, ScatterReduce) {
  Tensor x = leaf({3, 4}, 20), src = leaf({3, 3}, 21);
  Tensor i1 = idx({0, 0, 3, 2, 1, 2, 1, 1, 1}, {3, 3});
  for (const char* red : {"sum", "mean", "amax", "amin", "prod"})
    for (bool include_self : {true, false}) {
      SCOPED_TRACE(std::string(red) + (include_self ? " include_self" : " exclude_self"));
      check([&](auto& v) { return scatter_reduce(v[0], 1, i1, v[1], red, include_self); }, {x, src});
    }
  // prod with zeros in self and src (one zero per target; two zeros on one target).
  Tensor xz = (leaf({2, 3}, 22) * where(mask({1, 0, 0, 0, 0, 0}, {2, 3}), Scalar(0.0), Scalar(1.0))).detach().requires_grad_();
  Tensor sz = (leaf({2, 3}, 23) * where(mask({0, 1, 0, 0, 1, 1}, {2, 3}), Scalar(0.0), Scalar(1.0))).detach().requires_grad_();
  Tensor iz = idx({0, 1, 1, 2, 2, 0}, {2, 3});
  for (bool include_self : {true, false})
    check([&](auto& v) { return scatter_reduce(v[0], 1, iz, v[1], "prod", include_self); }, {xz, sz}, false);
  // src larger than index, non-contiguous self.
  check([&](auto& v) { return scatter_reduce(v[0], 0, idx({2, 0, 2}, {1, 3}), v[1], "mean", false); },
        {leaf_nc({3, 4}, 24), leaf({2, 5}, 25)});
}

// ---------------------------------------------------------------- index_select, index_add
TEST(GradIndex, IndexSelect) {
  Tensor x = leaf({4, 3}, 30);
  check([](auto& v) { return index_select(v[0], 0, idx({3, 0, 3, 1})); }, {x});
  check([](auto& v) { return v[0].index_select(1, from_vector<int32_t>({2, 2}, {2}, kInt32)); }, {leaf_nc({4, 3}, 31)});
  check([](auto& v) { return index_select(v[0], 0, idx({0})); }, {leaf({}, 32)});
}

TEST(GradIndex, IndexAdd) {
  Tensor x = leaf({4, 3}, 33), s = leaf({5, 3}, 34);
  check([](auto& v) { return index_add(v[0], 0, idx({1, 3, 1, 0, 1}), v[1]); }, {x, s});
  check([](auto& v) { return index_add(v[0], 0, idx({1, 3, 1, 0, 1}), v[1], -0.5); }, {x, s});
  check([](auto& v) { return v[0].index_add(1, idx({2, 0}), v[1].t().narrow(0, 0, 2).t().narrow(0, 0, 4)); },
        {leaf_nc({4, 3}, 35), s});
}

// ---------------------------------------------------------------- advanced indexing
TEST(GradIndex, Index) {
  Tensor x = leaf({3, 4, 5}, 40);
  // One index tensor with repeats, two broadcasting index tensors (adjacent and not).
  check([](auto& v) { return index(v[0], {idx({2, 0, 2})}); }, {x});
  check([](auto& v) { return index(v[0], {Tensor(), idx({1, 3}, {2, 1}), idx({0, 4, 4})}); }, {x});
  check([](auto& v) { return index(v[0], {idx({0, 2}), Tensor(), idx({1, 1})}); }, {x});
  // Masks (bool and uint8), on a non-contiguous input.
  Tensor m = mask({1, 0, 1, 1}, {4});
  check([&](auto& v) { return index(v[0], {Tensor(), m}); }, {leaf_nc({3, 4, 5}, 41)});
  check([&](auto& v) { return index(v[0], {mask({0, 1, 1}, {3}).to(kUInt8)}); }, {x});
  // The TensorIndex API: slices, None, integers and tensors mixed.
  check([&](auto& v) { return v[0].index({Slice(1), indexing::None, idx({3, 0, 3}), 2}); }, {x});
  check([&](auto& v) { return v[0].index({"...", idx({4, 1})}); }, {x});
  check([&](auto& v) { return v[0].index({1, mask({0, 1, 1, 0}, {4})}); }, {x});
}

TEST(GradIndex, IndexPut) {
  Tensor x = leaf({4, 3}, 42), v2 = leaf({2, 3}, 43), v1 = leaf({3}, 44), s = leaf({}, 45);
  for (bool acc : {true, false}) {
    SCOPED_TRACE(acc ? "accumulate" : "assign");
    check([&](auto& v) { return index_put(v[0], {idx({3, 0})}, v[1], acc); }, {x, v2});
    // values broadcast over the indexed rows; a 0-d value.
    check([&](auto& v) { return index_put(v[0], {idx({1, 2})}, v[1], acc); }, {x, v1});
    check([&](auto& v) { return index_put(v[0], {idx({0, 1, 3}), idx({2, 0, 0})}, v[1], acc); }, {leaf_nc({4, 3}, 46), s});
    // a mask
    check([&](auto& v) { return index_put(v[0], {mask({1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0}, {4, 3})}, v[1], acc); },
          {x, s});
  }
  // Repeated indices accumulate.
  check([&](auto& v) { return index_put(v[0], {idx({3, 3, 0})}, v[1].expand({3, 3}), true); }, {x, v1});
}

// ---------------------------------------------------------------- masks
TEST(GradIndex, MaskedFill) {
  Tensor x = leaf({3, 4}, 50), val = leaf({}, 51);
  Tensor m = mask({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0}, {3, 4});
  check([&](auto& v) { return masked_fill(v[0], m, Scalar(-2.0)); }, {x});
  check([&](auto& v) { return masked_fill(v[0], m, v[1]); }, {x, val});
  // self broadcast by the mask, a uint8 mask, a non-contiguous self.
  check([&](auto& v) { return masked_fill(v[0], m.to(kUInt8), v[1]); }, {leaf({4}, 52), val});
  check([&](auto& v) { return v[0].masked_fill(mask({0, 1, 1, 0}, {4}), v[1]); }, {leaf_nc({3, 4}, 53), val});
}

TEST(GradIndex, MaskedSelect) {
  Tensor m = mask({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0}, {3, 4});
  check([&](auto& v) { return masked_select(v[0], m); }, {leaf({3, 4}, 54)});
  check([&](auto& v) { return v[0].masked_select(m); }, {leaf({3, 1}, 55)});  // broadcast self
  check([&](auto& v) { return masked_select(v[0], mask({0, 1, 1, 0}, {4})); }, {leaf_nc({3, 4}, 56)});
}

TEST(GradIndex, MaskedScatter) {
  Tensor m = mask({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0}, {3, 4});
  Tensor x = leaf({3, 4}, 57), src = leaf({2, 4}, 58);  // 8 source values, 5 used
  check([&](auto& v) { return masked_scatter(v[0], m, v[1]); }, {x, src});
  check([&](auto& v) { return masked_scatter(v[0], mask({0, 1, 1, 0}, {4}), v[1]); }, {leaf_nc({3, 4}, 59), src});
  check([&](auto& v) { return masked_scatter(v[0], m, v[1].narrow(1, 0, 3)); }, {leaf({4}, 60), src});  // broadcast self
}

// ---------------------------------------------------------------- layout composites and primitives
TEST(GradIndex, FlipRollTriangles) {
  Tensor x = leaf({3, 4}, 61), xn = leaf_nc({3, 4, 2}, 62);
  check([](auto& v) { return flip(v[0], {0, 1}); }, {x});
  check([](auto& v) { return v[0].flip({-1}) * v[0]; }, {xn});
  check([](auto& v) { return roll(v[0], {1, -3}, {0, 1}); }, {x});
  check([](auto& v) { return roll(v[0], {5}); }, {xn});
  for (int64_t k : {-1, 0, 2}) {
    check([k](auto& v) { return tril(v[0], k); }, {x});
    check([k](auto& v) { return triu(v[0], k); }, {xn});
  }
}

TEST(GradIndex, RepeatTileInterleave) {
  Tensor x = leaf({2, 3}, 63), xn = leaf_nc({2, 3}, 64);
  check([](auto& v) { return v[0].repeat({2, 1, 3}); }, {x});
  check([](auto& v) { return tile(v[0], {2}); }, {xn});
  check([](auto& v) { return repeat_interleave(v[0], 3, 1); }, {xn});
  check([](auto& v) { return repeat_interleave(v[0], 2); }, {x});
  check([](auto& v) { return repeat_interleave(v[0], idx({2, 0, 3}), 1); }, {xn});
}

// ---------------------------------------------------------------- sort and selection
TEST(GradIndex, SortTopkKthvalue) {
  // randn values: no ties, so the finite differences see one selection.
  Tensor x = leaf({3, 5}, 70), xn = leaf_nc({4, 3}, 71);
  check([](auto& v) { return std::get<0>(sort(v[0])); }, {x});
  check([](auto& v) { return std::get<0>(sort(v[0], 0, true)); }, {xn});
  check([](auto& v) { return std::get<0>(topk(v[0], 2)); }, {x});
  check([](auto& v) { return std::get<0>(topk(v[0], 3, 0, false, true)); }, {xn});
  check([](auto& v) { return std::get<0>(kthvalue(v[0], 2, 1)); }, {x});
  check([](auto& v) { return std::get<0>(kthvalue(v[0], 3, 0, true)); }, {xn});
  check([](auto& v) { return std::get<0>(sort(v[0], 0)); }, {leaf({}, 72)});
  check([](auto& v) { return std::get<0>(max(v[0], 1)) + std::get<0>(min(v[0], 0, true)).sum(); }, {x});
}

// torch: x = [1, 2, 1, 2] (requires grad); weights w = [1, 10, 100, 1000]:
//   (x.sort()[0] * w).sum().backward()     -> [1, 100, 10, 1000]  (indices [0, 2, 1, 3])
//   (x.topk(2)[0] * w[:2]).sum().backward() -> [0, 1, 0, 10]       (indices [1, 3])
//   (x.cummax(0)[0] * w).sum().backward()  -> [1, 110, 0, 1000]   (indices [0, 1, 1, 3])
//   (x.cummin(0)[0] * w).sum().backward()  -> [11, 0, 1100, 0]    (indices [0, 0, 2, 2])
TEST(GradIndex, TiesMatchPyTorch) {
  Tensor w = tensor({1.0, 10.0, 100.0, 1000.0}, kFloat64);
  auto run = [&](const std::function<Tensor(const Tensor&)>& f) {
    Tensor x = tensor({1.0, 2.0, 1.0, 2.0}, kFloat64).requires_grad_();
    f(x).backward();
    return x.grad();
  };
  expect_values(run([&](const Tensor& x) { return (std::get<0>(sort(x)) * w).sum(); }), {1, 100, 10, 1000}, "sort");
  expect_values(run([&](const Tensor& x) { return (std::get<0>(topk(x, 2)) * w.narrow(0, 0, 2)).sum(); }), {0, 1, 0, 10},
                "topk");
  expect_values(run([&](const Tensor& x) { return (std::get<0>(cummax(x, 0)) * w).sum(); }), {1, 110, 0, 1000}, "cummax");
  expect_values(run([&](const Tensor& x) { return (std::get<0>(cummin(x, 0)) * w).sum(); }), {11, 0, 1100, 0}, "cummin");
}

// ---------------------------------------------------------------- scans
TEST(GradIndex, Cumsum) {
  check([](auto& v) { return cumsum(v[0], 1); }, {leaf({3, 4}, 80)});
  check([](auto& v) { return cumsum(v[0], 0) * v[0]; }, {leaf_nc({3, 4}, 81)});
}

TEST(GradIndex, Cumprod) {
  Tensor x = leaf({3, 4}, 82);
  check([](auto& v) { return cumprod(v[0], 1); }, {x});
  check([](auto& v) { return cumprod(v[0], 0); }, {leaf_nc({3, 4}, 83)});
  check([](auto& v) { return cumprod(v[0], 0); }, {leaf({}, 84)});
  // Zeros: none / one / two per line, at the start and the end.
  Tensor z = (leaf({4, 5}, 85) * where(mask({0, 0, 1, 0, 0,   // one zero
                                             1, 0, 0, 0, 0,   // zero first
                                             0, 1, 0, 1, 0,   // two zeros
                                             0, 0, 0, 0, 1},  // zero last
                                            {4, 5}),
                                       Scalar(0.0), Scalar(1.0)))
                 .detach()
                 .requires_grad_();
  check([](auto& v) { return cumprod(v[0], 1); }, {z});
  check([](auto& v) { return cumprod(v[0].t(), 0); }, {z});
  // The first-order O(n) path (grad mode off in backward) against the O(n^2) one.
  Tensor g = leaf({4, 5}, 86).detach();
  Tensor a = autograd::grad({cumprod(z, 1)}, {z}, {g})[0];
  Tensor b = autograd::grad({cumprod(z, 1)}, {z}, {g}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_EQ(oracle::compare_tensors(a, b.detach(), 1e-12, 1e-12), "");
  // float32 input accumulated in float64 (dtype=): the gradient comes back as float32.
  Tensor f = leaf({2, 3}, 87).detach().to(kFloat32).requires_grad_();
  cumprod(f, 1, kFloat64).sum().backward();
  EXPECT_EQ(f.grad().dtype(), kFloat32);
}

// torch: x = [2, 0, 3, 0, 5] -> x.cumprod(0) backward with ones: [1, 8, 0, 0, 0]
TEST(GradIndex, CumprodZerosMatchPyTorch) {
  Tensor x = tensor({2.0, 0.0, 3.0, 0.0, 5.0}, kFloat64).requires_grad_();
  cumprod(x, 0).sum().backward();
  expect_values(x.grad(), {1, 8, 0, 0, 0}, "cumprod zeros");
}

TEST(GradIndex, CummaxCummin) {
  check([](auto& v) { return std::get<0>(cummax(v[0], 1)); }, {leaf({3, 5}, 88)});
  check([](auto& v) { return std::get<0>(cummin(v[0], 0)); }, {leaf_nc({3, 5}, 89)});
  check([](auto& v) { return std::get<0>(cummax(v[0], 0)); }, {leaf({}, 90)});
}

// ---------------------------------------------------------------- in-place variants
TEST(GradIndex, InplaceVariantsGradcheck) {
  Tensor x = leaf({3, 4}, 91), src = leaf({3, 2}, 92);
  Tensor i1 = idx({0, 3, 2, 1, 1, 0}, {3, 2});
  Tensor m = mask({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0}, {3, 4});
  check([&](auto& v) { return v[0].clone().masked_fill_(m, Scalar(0.0)); }, {x});
  check([&](auto& v) {
    Tensor y = v[0] * 1.0;
    y.slice(1, 1, 3).scatter_(1, idx({1, 0, 0}, {3, 1}), v[1].narrow(1, 0, 1));
    return y;
  }, {x, src});
  check([&](auto& v) {
    Tensor y = v[0].clone();
    y.scatter_add_(1, i1, v[1]).index_add_(0, idx({2, 2}), v[0].narrow(0, 0, 2), 2.0);
    return y * y;
  }, {x, src});
  check([&](auto& v) {
    Tensor y = v[0] * 2.0;
    Tensor view = y.t();
    index_put_(view, {idx({3, 0}), idx({1, 1})}, v[1].narrow(1, 0, 1).flatten().narrow(0, 0, 2), true);
    return y;
  }, {x, src});
  check([&](auto& v) {
    Tensor y = v[0].clone();
    y.narrow(0, 1, 2).tril_(1).masked_scatter_(m.narrow(0, 0, 2), v[1]);
    return y;
  }, {x, src});
}

// torch (A): x = arange(12).view(3,4)/10 + 0.5; m = arange(12).view(3,4) % 3 == 0;
//   w = arange(12).view(3,4) + 1; y = x.clone().masked_fill_(m, 0); (y*y*w).sum().backward()
TEST(GradIndex, InplaceMaskedFillMatchesPyTorch) {
  Tensor x = x34();
  Tensor m = eq(remainder(arange(Scalar(12), kInt64).view({3, 4}), Scalar(3)), Scalar(0));
  Tensor y = x.clone().masked_fill_(m, Scalar(0.0));
  (y * y * w34()).sum().backward();
  expect_values(x.grad(), {0.0, 2.4, 4.199999999999999, 0.0, 9.0, 12.0, 0.0, 19.2, 23.400000000000002, 0.0, 33.0,
                           38.400000000000006},
                "masked_fill_");
}

// torch (B): vals = [0.3, -0.7, 1.1]; y = x*2; v = y[:, 1:3];
//   v.index_put_((tensor([0,2,0]), tensor([1,0,1])), vals, accumulate=True); (y.sin()*w).sum().backward()
// torch (C): vals = [0.25, -0.5]; y = x*1.5; y[1:, :][:, tensor([3,0,3])] = vals.view(2,1); (y*y*w).sum().backward()
TEST(GradIndex, InplaceIndexPutOnViewMatchesPyTorch) {
  {
    Tensor x = x34();
    Tensor v = tensor({0.3, -0.7, 1.1}, kFloat64).requires_grad_();
    Tensor y = x * 2.0;
    Tensor view = y.index({Slice(), Slice(1, 3)});
    view.index_put_(std::vector<Tensor>{idx({0, 2, 0}), idx({1, 0, 1})}, v, true);
    (y.sin() * w34()).sum().backward();
    expect_values(x.grad(),
                  {1.0806046117362795, 1.4494310179066945, -5.653334044011949, -0.23359617841031052, -2.272020946930871,
                   -4.993762038565709, -8.239015641574841, -11.798299448659927, -15.423997560641052, -10.096922091997143,
                   -21.779834925209798, -23.959074619074073},
                  "index_put_ accumulate: x");
    expect_values(v.grad(), {-2.8266670220059744, -5.048461045998572, -2.8266670220059744}, "index_put_ accumulate: values");
  }
  {
    Tensor x = x34();
    Tensor v = tensor({0.25, -0.5}, kFloat64).requires_grad_();
    Tensor y = x * 1.5;
    y.index({Slice(1)}).index_put_({Slice(), idx({3, 0, 3})}, v.view({2, 1}));
    (y * y * w34()).sum().backward();
    expect_values(x.grad(), {2.25, 5.3999999999999995, 9.45, 14.400000000000002, 0.0, 27.0, 34.650000000000006, 0.0, 0.0,
                             62.999999999999986, 74.25, 0.0},
                  "index_put_ duplicates: x");
    // Both writers of column 3 get the gradient, as in PyTorch.
    expect_values(v.grad(), {10.5, -33.0}, "index_put_ duplicates: values");
  }
}

// torch (D): src = arange(6).view(3,2)/7 - 0.3; y = x.clone();
//   y.scatter_(1, tensor([[0,2],[1,3],[3,0]]), src); y.index_add_(0, tensor([2,0,2]), x*x, alpha=0.5)
//   y.scatter_add_(0, tensor([[1,1,0,2]]), x[:1]*3); (y.exp()*w).sum().backward()
// torch (E): src = arange(8)/9 + 0.1; y = x*1; y[:, :3].masked_scatter_(m3, src) with
//   m3 = [[T,F,T],[F,T,T],[T,F,F]]; y[1:, 1:].tril_(0); (y*y*w).sum().backward()
TEST(GradIndex, InplaceChainsMatchPyTorch) {
  {
    Tensor x = x34();
    Tensor src = (arange(Scalar(6), kFloat64).view({3, 2}) / 7.0 - 0.3).detach().requires_grad_();
    Tensor y = x.clone();
    y.scatter_(1, idx({0, 2, 1, 3, 3, 0}, {3, 2}), src);
    y.index_add_(0, idx({2, 0, 2}), x * x, 0.5);
    y.scatter_add_(0, idx({1, 1, 0, 2}, {1, 4}), x.narrow(0, 0, 1) * 3.0);
    (y.exp() * w34()).sum().backward();
    expect_values(x.grad(),
                  {183.31152635426736, 190.97232554032735, 250.82224448599305, 3284.3379382395306, 56.11552145252814,
                   6.008332047892867, 63.202137094948455, 21.946680936682363, 46.706089676072686, 310.4596155730337,
                   485.0180004955264, 1375.178542087984},
                  "chain: x", 1e-10);
    expect_values(src.grad(),
                  {1.1107106103557052, 38.33906811574856, 35.78302986639201, 9.097621177206143, 859.4865888049899,
                   35.92776128928668},
                  "chain: src", 1e-10);
  }
  {
    Tensor x = x34();
    Tensor src = (arange(Scalar(8), kFloat64) / 9.0 + 0.1).detach().requires_grad_();
    Tensor y = x * 1.0;
    y.index({Slice(), Slice(std::nullopt, 3)}).masked_scatter_(mask({1, 0, 1, 0, 1, 1, 1, 0, 0}, {3, 3}), src);
    y.index({Slice(1), Slice(1)}).tril_(0);
    (y * y * w34()).sum().backward();
    expect_values(x.grad(), {0.0, 2.4, 0.0, 6.4, 9.0, 0.0, 0.0, 0.0, 0.0, 28.0, 33.0, 0.0}, "masked_scatter_/tril_: x");
    expect_values(src.grad(), {0.2, 1.2666666666666666, 3.8666666666666663, 0.0, 9.799999999999999, 0.0, 0.0, 0.0},
                  "masked_scatter_/tril_: src");
  }
}

TEST(GradIndex, IndexAndMaskInputsGetNoGradient) {
  // Index, mask and sort-index outputs are not differentiable; float index-like inputs
  // never receive a gradient edge.
  Tensor x = leaf({3, 4}, 93);
  auto [v, i] = sort(x, 1);
  EXPECT_FALSE(i.requires_grad());
  EXPECT_TRUE(v.requires_grad());
  auto [cv, ci] = cummax(x, 0);
  EXPECT_FALSE(ci.requires_grad());
  EXPECT_FALSE(nonzero(x).requires_grad());
}
