// Hand-written tests of the nn ops for what the oracle JSON cannot express: random
// dropout masks, in-place running-stat updates, the interpolate wrapper, reduced-float
// inputs, Tensor methods, and eager vs compiled runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/tensor_json.h"
#include "tandem/tandem.h"

using namespace tandem;
using oracle::to_doubles;

namespace {
bool close(const Tensor& a, const Tensor& b, double rtol = 1e-6, double atol = 1e-6) {
  return oracle::compare_tensors(a, b, rtol, atol).empty();
}
}  // namespace

// ---------------------------------------------------------------- dropout
TEST(NNDropout, ZeroesAboutPAndScalesTheRest) {
  manual_seed(1);
  Tensor x = ones({200, 100});
  auto [y, mask] = native_dropout(x, 0.3, true);
  EXPECT_EQ(mask.dtype(), kBool);
  auto yv = to_doubles(y), mv = to_doubles(mask);
  int64_t zeros_n = 0;
  for (size_t i = 0; i < yv.size(); ++i) {
    if (mv[i] == 0) {
      EXPECT_EQ(yv[i], 0.0);
      ++zeros_n;
    } else {
      EXPECT_NEAR(yv[i], 1.0 / 0.7, 1e-6);
    }
  }
  const double frac = static_cast<double>(zeros_n) / static_cast<double>(yv.size());
  EXPECT_NEAR(frac, 0.3, 0.02);
}

TEST(NNDropout, SeedReproducesTheMaskAndBackwardUsesIt) {
  Tensor x = randn({50}, kFloat64).requires_grad_();
  manual_seed(42);
  Tensor a = dropout(x, 0.5, true);
  manual_seed(42);
  Tensor b = dropout(x, 0.5, true);
  EXPECT_TRUE(close(a, b, 0, 0));
  Tensor c = dropout(x, 0.5, true);  // next draw: a different mask
  EXPECT_FALSE(close(a, c, 0, 0));
  a.backward(ones({50}, kFloat64));
  auto g = to_doubles(x.grad()), av = to_doubles(a);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], av[i] == 0.0 ? 0.0 : 2.0);
}

TEST(NNDropout, EvalAndEdgeProbabilities) {
  Tensor x = randn({4, 5});
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));  // eval: the input itself
  EXPECT_TRUE(close(dropout(x, 1.0, true), zeros({4, 5}), 0, 0));
  EXPECT_TRUE(close(dropout(x, 0.0, true), x, 0, 0));
  auto [y, mask] = native_dropout(x, 0.4, false);
  EXPECT_TRUE(close(y, x, 0, 0));
  EXPECT_TRUE(close(mask, ones({4, 5}, kBool), 0, 0));
  EXPECT_THROW(dropout(x, 1.5), ValueError);
  Tensor h = randn({1000}).to(kFloat16);
  manual_seed(3);
  Tensor yh = dropout(h, 0.25, true);
  EXPECT_EQ(yh.dtype(), kFloat16);
  auto hv = to_doubles(h), yv = to_doubles(yh);
  for (size_t i = 0; i < hv.size(); ++i)
    if (yv[i] != 0) {
      EXPECT_NEAR(yv[i], hv[i] / 0.75, 2e-3 * std::fabs(hv[i]) + 1e-3);
    }
}

// ---------------------------------------------------------------- batch norm running stats
TEST(NNBatchNorm, RunningStatsUpdateInPlaceOnlyWhenTraining) {
  Tensor x = tensor({{1.0, 10.0}, {3.0, 20.0}, {5.0, 60.0}});  // channel means 3 and 30
  Tensor rm = zeros({2}, kFloat64), rv = ones({2}, kFloat64);
  const uint64_t v0 = rm._version();
  batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.5);
  // running_mean = 0.5 * 0 + 0.5 * mean; running_var uses the unbiased variance (4, 700).
  EXPECT_TRUE(close(rm, tensor({1.5, 15.0}, kFloat64), 1e-12, 1e-12));
  EXPECT_TRUE(close(rv, tensor({0.5 + 2.0, 0.5 + 350.0}, kFloat64), 1e-12, 1e-12));
  EXPECT_GT(rm._version(), v0);
  const uint64_t v1 = rm._version();
  Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), false);
  EXPECT_EQ(rm._version(), v1);
  EXPECT_TRUE(close(rm, tensor({1.5, 15.0}, kFloat64), 1e-12, 1e-12));
  // eval normalises with the running stats
  EXPECT_NEAR(to_doubles(y)[0], (1.0 - 1.5) / std::sqrt(2.5 + 1e-5), 1e-6);
}

TEST(NNBatchNorm, RunningStatsOfAnotherDtype) {
  // float32 running stats with a float64 input are read and written in their own dtype.
  Tensor x = tensor({{1.0, 2.0}, {3.0, 6.0}}, kFloat64);
  Tensor rm = zeros({2}), rv = ones({2});
  batch_norm(x, rm, rv, Tensor(), Tensor(), true, 1.0);
  EXPECT_EQ(rm.dtype(), kFloat32);
  EXPECT_TRUE(close(rm, tensor({2.0f, 4.0f}), 1e-7, 1e-7));
  EXPECT_TRUE(close(rv, tensor({2.0f, 8.0f}), 1e-7, 1e-7));
}

TEST(NNBatchNorm, ReducedFloatMatchesFloat32) {
  manual_seed(5);
  Tensor x = randn({8, 3, 4});
  Tensor ref = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  Tensor bf = batch_norm(x.to(kBFloat16), Tensor(), Tensor(), Tensor(), Tensor(), true);
  EXPECT_EQ(bf.dtype(), kBFloat16);
  EXPECT_TRUE(close(bf.to(kFloat32), ref, 2e-2, 5e-2)) << oracle::compare_tensors(bf.to(kFloat32), ref, 2e-2, 5e-2);
  auto stats = native_layer_norm(x.to(kFloat16), {4}, Tensor(), Tensor(), 1e-5);
  EXPECT_EQ(std::get<1>(stats).dtype(), kFloat32);  // statistics kept in float32
}

// ---------------------------------------------------------------- losses
TEST(NNLoss, NllTotalWeightAndHalfInputs) {
  Tensor logp = log_softmax(tensor({{1.0, 2.0, 3.0}, {1.0, 0.0, -1.0}, {0.5, 0.5, 0.5}}), 1);
  Tensor t = tensor({2, -100, 0}, kInt64);
  OpOutputs o = dispatch(get_op("nll_loss"), {logp, t, tensor({1.0, 2.0, 4.0})}, {AttrValue(std::string("sum"))});
  EXPECT_EQ(to_doubles(o[1])[0], 5.0);  // weights 4 (class 2) + 1 (class 0); -100 ignored
  Tensor a = randn({16}), b = randn({16});
  Tensor ref = mse_loss(a, b);
  Tensor h = mse_loss(a.to(kFloat16), b.to(kFloat16));
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_TRUE(close(h.to(kFloat32), ref, 1e-2, 1e-2));
  Tensor ce = cross_entropy(a.view({4, 4}).to(kBFloat16), tensor({0, 1, 2, 3}, kInt64));
  EXPECT_EQ(ce.dtype(), kBFloat16);
  EXPECT_TRUE(close(ce.to(kFloat32), cross_entropy(a.view({4, 4}), tensor({0, 1, 2, 3}, kInt64)), 2e-2, 2e-2));
}

TEST(NNLoss, ErrorsNameTheOp) {
  try {
    nll_loss(randn({3, 4}), tensor({0, 9, 1}, kInt64));
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("[nll_loss]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mse_loss(randn({3}), randn({3}), "avg"), ValueError);
  EXPECT_THROW(binary_cross_entropy(tensor({0.5, 2.0}), tensor({1.0, 0.0})), ValueError);
  EXPECT_THROW(cross_entropy(randn({3, 4}), tensor({0, 1, 2}, kInt64), Tensor(), -100, "mean", -0.1), ValueError);
}

// ---------------------------------------------------------------- softmax methods
TEST(NNSoftmax, TensorMethodsAndDtype) {
  Tensor x = randn({3, 4});
  EXPECT_TRUE(close(x.softmax(1), softmax(x, 1), 0, 0));
  EXPECT_TRUE(close(x.log_softmax(-1), log_softmax(x, 1), 0, 0));
  auto s = to_doubles(x.softmax(0).sum_to_size({1, 4}));
  for (double v : s) EXPECT_NEAR(v, 1.0, 1e-6);
  Tensor i = arange(6).view({2, 3});
  EXPECT_THROW(softmax(i, 1), TypeError);
  EXPECT_EQ(softmax(i, 1, kFloat64).dtype(), kFloat64);
}

// Along the last dimension softmax runs row by row (vectorised exponentials, a block of
// 256 at a time); along others in blocks of lines. Both use the same formulas and the same
// summation order, so the same values transposed give the same bits; and both stay within
// float32 rounding of float64 (rows wider than a block, rows with -inf, +inf and NaN).
TEST(NNSoftmax, LastDimRowsMatchTheBlockedLoopAndFloat64) {
  manual_seed(4);
  for (int64_t d : {1, 10, 255, 256, 257, 1000}) {
    SCOPED_TRACE("row length " + std::to_string(d));
    Tensor x = randn({37, d}).mul(4.0);
    if (d >= 10) {
      x.select(0, 1).fill_(-std::numeric_limits<double>::infinity());
      x.select(0, 2).select(0, 3).fill_(std::numeric_limits<double>::infinity());
      x.select(0, 3).select(0, 5).fill_(std::nan(""));
      x.select(0, 4).select(0, 0).fill_(-std::numeric_limits<double>::infinity());
    }
    for (bool log : {false, true}) {
      Tensor rows = log ? log_softmax(x, 1) : softmax(x, 1);
      Tensor lines = log ? log_softmax(x.t().contiguous(), 0) : softmax(x.t().contiguous(), 0);
      EXPECT_TRUE(close(rows, lines.t(), 0, 0)) << (log ? "log_softmax" : "softmax");
      Tensor want = log ? log_softmax(x.to(kFloat64), 1) : softmax(x.to(kFloat64), 1);
      auto g = to_doubles(rows), w = to_doubles(want);
      for (size_t i = 0; i < g.size(); ++i) {
        if (std::isnan(w[i]) || std::isinf(w[i])) {
          EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]) << "element " << i << ": " << g[i];
          continue;
        }
        // float32 sums of d terms: their rounding grows with d.
        EXPECT_NEAR(g[i], w[i], 1e-6 + 2e-8 * static_cast<double>(d) + 4e-6 * std::fabs(w[i])) << "element " << i;
      }
      // The backward, through autograd, the same way.
      Tensor a = x.detach().requires_grad_(true), b = x.t().contiguous().detach().requires_grad_(true);
      Tensor gout = randn({37, d});
      (log ? log_softmax(a, 1) : softmax(a, 1)).backward(gout);
      (log ? log_softmax(b, 0) : softmax(b, 0)).backward(gout.t().contiguous());
      EXPECT_TRUE(close(a.grad(), b.grad().t(), 0, 0)) << (log ? "log_softmax" : "softmax") << " backward";
    }
  }
}

// ---------------------------------------------------------------- interpolate wrapper
TEST(NNInterpolate, WrapperMatchesTheUpsampleOps) {
  Tensor x = randn({1, 2, 3, 4});
  Tensor a = interpolate(x, std::vector<int64_t>{6, 8});
  Tensor b = dispatch1(get_op("upsample_nearest2d"), {x}, {AttrValue(std::vector<int64_t>{6, 8})});
  EXPECT_TRUE(close(a, b, 0, 0));
  // A single scale applies to every spatial dim; output = floor(in * scale).
  Tensor c = interpolate(x, std::nullopt, std::vector<double>{1.5}, "bilinear", true);
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 6}));
  Tensor d = dispatch1(get_op("upsample_bilinear2d"), {x},
                       {AttrValue(std::vector<int64_t>{4, 6}), AttrValue(true), AttrValue(1.5), AttrValue(1.5)});
  EXPECT_TRUE(close(c, d, 0, 0));
  // Nearest upsampling by 2 repeats each value.
  Tensor e = interpolate(tensor({1.0, 2.0}).view({1, 1, 2}), std::nullopt, std::vector<double>{2.0});
  EXPECT_EQ(to_doubles(e), (std::vector<double>{1, 1, 2, 2}));
}

TEST(NNInterpolate, ArgumentErrors) {
  Tensor x = randn({1, 1, 3, 3});
  EXPECT_THROW(interpolate(x, std::vector<int64_t>{4, 4}, std::vector<double>{2.0}), ValueError);
  EXPECT_THROW(interpolate(x, std::nullopt, std::nullopt), ValueError);
  EXPECT_THROW(interpolate(x, std::vector<int64_t>{4, 4}, std::nullopt, "nearest", true), ValueError);
  EXPECT_THROW(interpolate(x, std::vector<int64_t>{4, 4}, std::nullopt, "bicubic"), NotImplementedError);
  EXPECT_THROW(interpolate(randn({1, 1, 3}), std::vector<int64_t>{4}, std::nullopt, "bilinear"), NotImplementedError);
  EXPECT_THROW(interpolate(randn({3, 3}), std::vector<int64_t>{4}), NotImplementedError);
  EXPECT_THROW(interpolate(x, std::vector<int64_t>{4, 4, 4}), ValueError);
  EXPECT_THROW(interpolate(x, std::nullopt, std::vector<double>{-1.0}), ValueError);
}

// ---------------------------------------------------------------- embedding / one_hot
TEST(NNEmbedding, PaddingIdxConventions) {
  Tensor w = randn({4, 2}, kFloat64).requires_grad_();
  Tensor idx = tensor({3, 0, 3}, kInt64);
  embedding(w, idx, -1).backward(ones({3, 2}, kFloat64));  // -1 is row 3
  // Only row 0 gets a gradient. (Checked element by element: GCC 12.2 with -mavx512f
  // miscompiles some 64-byte vector literals such as {1, 1, 0, 0, 0, 0, 0, 0}.)
  const std::vector<double> got = to_doubles(w.grad());
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i < 2 ? 1.0 : 0.0) << i;
  EXPECT_THROW(embedding(w, idx, 4), ValueError);
  EXPECT_THROW(embedding(w, idx, -5), ValueError);
  EXPECT_EQ(embedding(w, tensor({1, 2}, DType::Int32)).sizes().vec(), (std::vector<int64_t>{2, 2}));
}

// ---------------------------------------------------------------- compiled mode
TEST(NNCompile, CompiledRunsMatchEager) {
  Tensor w = randn({6}), b = randn({6});
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = layer_norm(in[0], {6}, w, b);
    Tensor p = pad(h.view({2, 3, 6}), {1, 1}, "reflect");
    Tensor q = interpolate(p, std::vector<int64_t>{12});
    Tensor logits = q.view({6, 12});
    return std::vector<Tensor>{softmax(logits, 1), cross_entropy(logits, in[1], Tensor(), -100, "mean", 0.1),
                               group_norm(q, 3)};
  };
  auto cf = compile(fn);
  Tensor x = randn({6, 6});
  Tensor t = tensor({0, 11, 3, -100, 5, 7}, kInt64);
  auto eager = fn({x, t});
  (*cf)({x, t});
  auto compiled = (*cf)({x, t});
  EXPECT_EQ(cf->compiled_calls(), 1);
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(close(eager[i], compiled[i], 0, 0)) << i;
}

TEST(NNCompile, BatchNormTrainingUpdatesLiftedRunningStats) {
  Tensor rm = zeros({3}), rv = ones({3});
  auto fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{batch_norm(in[0], rm, rv, Tensor(), Tensor(), true, 0.1)};
  };
  auto cf = compile(fn);
  Tensor x = randn({4, 3});
  Tensor rm_e = zeros({3}), rv_e = ones({3});
  for (int i = 0; i < 3; ++i) {
    (*cf)({x});
    batch_norm(x, rm_e, rv_e, Tensor(), Tensor(), true, 0.1);
  }
  EXPECT_EQ(cf->compiled_calls(), 2);
  EXPECT_TRUE(close(rm, rm_e, 0, 0));
  EXPECT_TRUE(close(rv, rv_e, 0, 0));
  // An update whose output is unused is not dropped by dead-code elimination.
  Tensor rm2 = zeros({3}), rv2 = ones({3});
  auto only_stats = compile([&](const std::vector<Tensor>& in) {
    batch_norm(in[0], rm2, rv2, Tensor(), Tensor(), true, 0.1);
    return std::vector<Tensor>{in[0] * 2.0};
  });
  for (int i = 0; i < 3; ++i) (*only_stats)({x});
  EXPECT_EQ(only_stats->compiled_calls(), 2);
  EXPECT_TRUE(close(rm2, rm_e, 0, 0));
}

TEST(NNCompile, OneHotInferringClassesIsAGraphBreak) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{one_hot(in[0])}; };
  auto ex = explain(fn, {tensor({0, 2}, kInt64)});
  EXPECT_FALSE(ex.compiled);
  EXPECT_NE(ex.break_reason.find("one_hot"), std::string::npos) << ex.break_reason;
  auto fixed = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{one_hot(in[0], 4)}; };
  EXPECT_TRUE(explain(fixed, {tensor({0, 2}, kInt64)}).compiled);
  EXPECT_EQ(to_doubles(one_hot(tensor({0, 2}, kInt64))), (std::vector<double>{1, 0, 0, 0, 0, 1}));
}
