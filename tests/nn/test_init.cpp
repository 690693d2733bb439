// nn::init (torch.nn.init): the distributions' bounds and statistics, gains and fan modes,
// orthogonality, truncation, and the errors for bad arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "nn_test_util.h"

using namespace tandem;
using namespace tandem::nn;
using nn::testing::expect_error;
using nn::testing::same_values;
using nn::testing::stats;

namespace {

// Standard error of a mean of n values with standard deviation sd, times 5.
double tol_mean(double sd, size_t n) { return 5 * sd / std::sqrt(static_cast<double>(n)); }

TEST(Init, UniformNormalConstant) {
  manual_seed(0);
  Tensor t = empty({100, 100});
  Tensor& r = t;
  EXPECT_TRUE(init::uniform_(t, -2, 3).is_same(r));
  auto s = stats(t);
  EXPECT_GE(s.min, -2);
  EXPECT_LE(s.max, 3);
  EXPECT_NEAR(s.mean, 0.5, tol_mean(5 / std::sqrt(12.0), s.n));
  EXPECT_NEAR(s.std, 5 / std::sqrt(12.0), 0.03);
  init::uniform_(t);  // default U(0, 1)
  s = stats(t);
  EXPECT_GE(s.min, 0);
  EXPECT_LE(s.max, 1);

  init::normal_(t, 1.5, 0.5);
  s = stats(t);
  EXPECT_NEAR(s.mean, 1.5, tol_mean(0.5, s.n));
  EXPECT_NEAR(s.std, 0.5, 0.01);
  init::normal_(t, 2.0, 0.0);
  EXPECT_TRUE(same_values(t, full({100, 100}, 2.0)));

  init::constant_(t, 0.25);
  EXPECT_TRUE(same_values(t, full({100, 100}, 0.25)));
  init::zeros_(t);
  EXPECT_TRUE(same_values(t, zeros({100, 100})));
  init::ones_(t);
  EXPECT_TRUE(same_values(t, ones({100, 100})));
  Tensor i = zeros({3}, kInt64);
  init::constant_(i, 4);
  EXPECT_TRUE(same_values(i, full({3}, 4, kInt64)));

  // float64 and a non-contiguous view are filled in place.
  Tensor d = zeros({6, 4}, kFloat64);
  init::uniform_(d.t(), 5, 6);
  EXPECT_GE(stats(d).min, 5);
  Tensor base = zeros({4, 6});
  init::ones_(base.slice(1, 0, std::nullopt, 2));
  EXPECT_EQ(stats(base).mean, 0.5);
}

TEST(Init, DoesNotRecordAutogradAndKeepsTheLeaf) {
  Tensor w = zeros({3, 4}).requires_grad_(true);
  init::uniform_(w);
  init::normal_(w);
  init::xavier_uniform_(w);
  init::kaiming_normal_(w);
  init::orthogonal_(w);
  init::trunc_normal_(w);
  init::constant_(w, 1.0);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(w.grad_fn());
}

TEST(Init, SeedReproducible) {
  Tensor a = empty({50}), b = empty({50});
  manual_seed(11);
  init::normal_(a);
  manual_seed(11);
  init::normal_(b);
  EXPECT_TRUE(same_values(a, b));
  init::normal_(b);
  EXPECT_FALSE(same_values(a, b));
}

TEST(Init, GainAndFans) {
  EXPECT_EQ(init::calculate_gain("linear"), 1.0);
  EXPECT_EQ(init::calculate_gain("conv2d"), 1.0);
  EXPECT_EQ(init::calculate_gain("sigmoid"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  expect_error<ValueError>([] { init::calculate_gain("swish"); }, {"calculate_gain", "'swish'"});

  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({5, 3})), (std::pair<int64_t, int64_t>{3, 5}));
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({4, 2, 3, 3})), (std::pair<int64_t, int64_t>{18, 36}));
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({4, 2, 5})), (std::pair<int64_t, int64_t>{10, 20}));
  expect_error<ValueError>([] { init::calculate_fan_in_and_fan_out(empty({7})); }, {"fewer than 2 dimensions", "[7]"});
}

TEST(Init, XavierAndKaimingBoundsAndStd) {
  manual_seed(1);
  Tensor w = empty({300, 200});  // fan_in 200, fan_out 300
  const double n = 60000;
  init::xavier_uniform_(w, 2.0);
  double bound = 2.0 * std::sqrt(6.0 / 500);
  auto s = stats(w);
  EXPECT_LE(s.max, bound);
  EXPECT_GE(s.min, -bound);
  EXPECT_GT(s.max, 0.999 * bound);
  EXPECT_NEAR(s.std, bound / std::sqrt(3.0), 0.01 * bound);

  init::xavier_normal_(w, 0.5);
  s = stats(w);
  EXPECT_NEAR(s.std, 0.5 * std::sqrt(2.0 / 500), 0.01 * 0.5 * std::sqrt(2.0 / 500));
  EXPECT_NEAR(s.mean, 0, 5 * s.std / std::sqrt(n));

  // kaiming_uniform_: bound = gain * sqrt(3 / fan); default a = 0, leaky_relu -> gain sqrt(2).
  init::kaiming_uniform_(w);
  bound = std::sqrt(2.0) * std::sqrt(3.0 / 200);
  s = stats(w);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.999 * bound);
  init::kaiming_uniform_(w, 0, "fan_out", "relu");
  bound = std::sqrt(2.0) * std::sqrt(3.0 / 300);
  s = stats(w);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.999 * bound);
  // a = sqrt(5) (the layers' default): bound 1 / sqrt(fan_in).
  init::kaiming_uniform_(w, std::sqrt(5.0));
  s = stats(w);
  EXPECT_LE(s.max, 1 / std::sqrt(200.0));
  EXPECT_GT(s.max, 0.999 / std::sqrt(200.0));
  init::kaiming_uniform_(w, 0, "fan_in", "tanh");
  s = stats(w);
  EXPECT_LE(s.max, 5.0 / 3.0 * std::sqrt(3.0 / 200));
  EXPECT_GT(s.max, 0.999 * 5.0 / 3.0 * std::sqrt(3.0 / 200));

  // kaiming_normal_: std = gain / sqrt(fan).
  init::kaiming_normal_(w, 0.2, "fan_out");
  double sd = std::sqrt(2.0 / 1.04) / std::sqrt(300.0);
  s = stats(w);
  EXPECT_NEAR(s.std, sd, 0.01 * sd);
  init::kaiming_normal_(w, 0, "fan_in", "linear");
  sd = 1 / std::sqrt(200.0);
  EXPECT_NEAR(stats(w).std, sd, 0.01 * sd);

  // Conv-shaped weights use the receptive field.
  Tensor c = empty({64, 32, 3, 3});
  init::kaiming_uniform_(c, 0, "fan_in", "relu");
  bound = std::sqrt(2.0) * std::sqrt(3.0 / (32 * 9));
  EXPECT_LE(stats(c).max, bound);
  EXPECT_GT(stats(c).max, 0.99 * bound);

  // A zero-element tensor is left alone.
  Tensor z = empty({0, 3});
  EXPECT_NO_THROW(init::kaiming_uniform_(z));
  EXPECT_NO_THROW(init::kaiming_normal_(z));
}

// Max |(A A^T)[i][j] - scale * I| for the rows of a [rows, cols] matrix.
double gram_error(const Tensor& a, double scale) {
  auto v = oracle::to_doubles(a);
  const int64_t rows = a.size(0), cols = a.numel() / rows;
  double worst = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < rows; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < cols; ++k) dot += v[i * cols + k] * v[j * cols + k];
      worst = std::max(worst, std::fabs(dot - (i == j ? scale : 0.0)));
    }
  return worst;
}

TEST(Init, OrthogonalRowsOrColumns) {
  manual_seed(2);
  Tensor wide = empty({5, 8});  // rows orthonormal: W W^T = I
  init::orthogonal_(wide);
  EXPECT_LT(gram_error(wide, 1.0), 1e-5);
  Tensor tall = empty({8, 5});  // columns orthonormal: W^T W = I
  init::orthogonal_(tall, 2.0);
  EXPECT_LT(gram_error(tall.t().contiguous(), 4.0), 4e-5);
  Tensor sq = empty({6, 6}, kFloat64);
  init::orthogonal_(sq);
  EXPECT_LT(gram_error(sq, 1.0), 1e-12);
  EXPECT_LT(gram_error(sq.t().contiguous(), 1.0), 1e-12);
  Tensor conv = empty({4, 2, 3});  // flattened to [4, 6]
  init::orthogonal_(conv);
  EXPECT_LT(gram_error(conv, 1.0), 1e-5);
  // Random, not a fixed basis.
  Tensor other = empty({5, 8});
  init::orthogonal_(other);
  EXPECT_FALSE(same_values(wide, other));
  expect_error<ValueError>([] { init::orthogonal_(empty({4})); }, {"orthogonal_", "2 or more dimensions"});
  expect_error<TypeError>([] { init::orthogonal_(zeros({2, 2}, kInt64)); }, {"orthogonal_", "int64"});
}

TEST(Init, TruncNormalBoundsAndMean) {
  manual_seed(4);
  const double mean = 0.5, sd = 1.0, a = -0.5, b = 1.0;
  Tensor t = empty({40000});
  init::trunc_normal_(t, mean, sd, a, b);
  auto s = stats(t);
  EXPECT_GE(s.min, a);
  EXPECT_LE(s.max, b);
  // Mean of a truncated normal: mu + sd (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)).
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double al = (a - mean) / sd, be = (b - mean) / sd;
  const double want = mean + sd * (phi(al) - phi(be)) / (Phi(be) - Phi(al));
  EXPECT_NEAR(s.mean, want, tol_mean(0.45, s.n));
  // Default: N(0, 1) truncated to [-2, 2].
  init::trunc_normal_(t);
  s = stats(t);
  EXPECT_GE(s.min, -2);
  EXPECT_LE(s.max, 2);
  EXPECT_LT(s.min, -1.99);
  EXPECT_NEAR(s.mean, 0, tol_mean(1, s.n));
}

TEST(Init, Errors) {
  expect_error<ValueError>([] { init::uniform_(empty({3}), 2, 1); }, {"uniform_", "a <= b"});
  expect_error<ValueError>([] { init::normal_(empty({3}), 0, -1); }, {"normal_", "std >= 0"});
  expect_error<TypeError>([] { init::uniform_(zeros({3}, kInt64)); }, {"uniform_", "floating", "int64"});
  expect_error<TypeError>([] { init::normal_(Tensor()); }, {"normal_", "undefined"});
  expect_error<ValueError>([] { init::xavier_uniform_(empty({5})); }, {"fewer than 2 dimensions"});
  expect_error<ValueError>([] { init::xavier_normal_(empty({5})); }, {"fewer than 2 dimensions"});
  expect_error<ValueError>([] { init::kaiming_uniform_(empty({5})); }, {"fewer than 2 dimensions"});
  expect_error<ValueError>([] { init::kaiming_uniform_(empty({5, 2}), 0, "fan_avg"); }, {"fan_avg", "fan_in or fan_out"});
  expect_error<ValueError>([] { init::kaiming_normal_(empty({5, 2}), 0, "fan_in", "softsign"); }, {"'softsign'"});
  expect_error<ValueError>([] { init::trunc_normal_(empty({3}), 0, 1, 2, 1); }, {"trunc_normal_", "a < b"});
  expect_error<ValueError>([] { init::trunc_normal_(empty({3}), 0, 0); }, {"trunc_normal_", "std > 0"});
  expect_error<ValueError>([] { init::trunc_normal_(empty({3}), 0, 1, 50, 51); }, {"trunc_normal_", "negligible probability"});
  expect_error<TypeError>([] { init::trunc_normal_(zeros({3}, kInt32)); }, {"trunc_normal_"});
}

}  // namespace
