// Layer behaviour the oracle file cannot express: PyTorch's default initialisation (bounds
// and statistics), Dropout's random mask, constructor and forward errors, printing.
#include <gtest/gtest.h>

#include <cmath>

#include "nn_test_util.h"

using namespace tandem;
using namespace tandem::nn;
using nn::testing::expect_error;
using nn::testing::same_values;
using nn::testing::stats;

namespace {

// U(-b, b): every value within the bound, the extremes close to it, mean ~ 0 and standard
// deviation ~ b / sqrt(3). `n` values give a standard error of the mean of b / sqrt(3 n).
void expect_uniform(const Tensor& t, double bound, const std::string& what) {
  auto s = stats(t);
  const double n = static_cast<double>(s.n), sd = bound / std::sqrt(3.0);
  EXPECT_LE(s.max, bound) << what;
  EXPECT_GE(s.min, -bound) << what;
  // The largest of n uniforms is within bound * (1 - 10 / n) with probability 1 - e^-5.
  EXPECT_GT(s.max, bound * (1 - 10.0 / n)) << what;
  EXPECT_LT(s.min, -bound * (1 - 10.0 / n)) << what;
  EXPECT_NEAR(s.mean, 0.0, 5 * sd / std::sqrt(n)) << what;
  if (s.n >= 1000) {
    EXPECT_NEAR(s.std, sd, 0.05 * sd) << what;
  }
}

TEST(LayerInit, LinearAndConvKaimingUniformBounds) {
  manual_seed(0);
  Linear lin(1000, 200);
  expect_uniform(lin.weight, 1 / std::sqrt(1000.0), "Linear.weight");
  expect_uniform(lin.bias, 1 / std::sqrt(1000.0), "Linear.bias");
  EXPECT_EQ(lin.weight.sizes().vec(), (std::vector<int64_t>{200, 1000}));

  Conv2d conv(16, 64, {3}, {});
  EXPECT_EQ(conv.weight.sizes().vec(), (std::vector<int64_t>{64, 16, 3, 3}));
  expect_uniform(conv.weight, 1 / std::sqrt(16.0 * 9), "Conv2d.weight");
  expect_uniform(conv.bias, 1 / std::sqrt(16.0 * 9), "Conv2d.bias");

  ConvOptions g;
  g.groups = 4;
  Conv2d grouped(16, 64, {3, 2}, g);  // fan_in = 16 / 4 * 3 * 2
  EXPECT_EQ(grouped.weight.sizes().vec(), (std::vector<int64_t>{64, 4, 3, 2}));
  expect_uniform(grouped.weight, 1 / std::sqrt(24.0), "grouped Conv2d.weight");

  Conv1d c1(8, 32, 5, {});
  expect_uniform(c1.weight, 1 / std::sqrt(40.0), "Conv1d.weight");
  expect_uniform(c1.bias, 1 / std::sqrt(40.0), "Conv1d.bias");

  // Transposed: weight [in, out / groups, k...]; PyTorch's fan_in is size(1) * k * k.
  ConvTranspose2d ct(32, 8, {3}, {});
  EXPECT_EQ(ct.weight.sizes().vec(), (std::vector<int64_t>{32, 8, 3, 3}));
  expect_uniform(ct.weight, 1 / std::sqrt(72.0), "ConvTranspose2d.weight");
  expect_uniform(ct.bias, 1 / std::sqrt(72.0), "ConvTranspose2d.bias");

  Bilinear bil(20, 30, 40);
  EXPECT_EQ(bil.weight.sizes().vec(), (std::vector<int64_t>{40, 20, 30}));
  expect_uniform(bil.weight, 1 / std::sqrt(20.0), "Bilinear.weight");
  expect_uniform(bil.bias, 1 / std::sqrt(20.0), "Bilinear.bias");

  ConvOptions nb;
  nb.bias = false;
  EXPECT_FALSE(Conv2d(2, 2, {3}, nb).bias.defined());
  EXPECT_EQ(Conv2d(2, 2, {3}, nb).named_parameters().size(), 1u);
  EXPECT_FALSE(Linear(2, 2, false).bias.defined());
}

TEST(LayerInit, SeededAndDistinct) {
  manual_seed(7);
  Linear a(8, 8);
  manual_seed(7);
  Linear b(8, 8);
  Linear c(8, 8);
  EXPECT_TRUE(same_values(a.weight, b.weight));
  EXPECT_TRUE(same_values(a.bias, b.bias));
  EXPECT_FALSE(same_values(b.weight, c.weight));
}

TEST(LayerInit, NormalisationOnesAndZeros) {
  BatchNorm2d bn(5);
  EXPECT_TRUE(same_values(bn.weight, ones({5})));
  EXPECT_TRUE(same_values(bn.bias, zeros({5})));
  EXPECT_TRUE(same_values(bn.running_mean, zeros({5})));
  EXPECT_TRUE(same_values(bn.running_var, ones({5})));
  EXPECT_EQ(bn.num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);
  EXPECT_TRUE(bn.weight.requires_grad());
  EXPECT_FALSE(bn.running_mean.requires_grad());

  BatchNorm1d plain(3, 1e-5, 0.1, /*affine=*/false, /*track_running_stats=*/false);
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_TRUE(plain.named_buffers().empty());

  LayerNorm ln({3, 4});
  EXPECT_TRUE(same_values(ln.weight, ones({3, 4})));
  EXPECT_TRUE(same_values(ln.bias, zeros({3, 4})));
  EXPECT_TRUE(LayerNorm({3}, 1e-5, false).named_parameters().empty());
  GroupNorm gn(2, 6);
  EXPECT_TRUE(same_values(gn.weight, ones({6})));
  EXPECT_TRUE(same_values(gn.bias, zeros({6})));
}

TEST(LayerInit, EmbeddingStandardNormalWithZeroPaddingRow) {
  manual_seed(0);
  Embedding e(2000, 50, 3);
  auto s = stats(e.weight);
  EXPECT_NEAR(s.mean, 0.0, 0.01);  // 1e5 values: standard error 0.003
  EXPECT_NEAR(s.std, 1.0, 0.01);
  EXPECT_TRUE(same_values(e.weight.select(0, 3), zeros({50})));
  EXPECT_GT(stats(e.weight.select(0, 4)).std, 0.5);
  EXPECT_TRUE(e.weight.requires_grad());
  EXPECT_TRUE(e.weight.is_leaf());
  Embedding neg(10, 4, -1);  // counts from the end
  EXPECT_EQ(*neg.padding_idx, 9);
  EXPECT_TRUE(same_values(neg.weight.select(0, 9), zeros({4})));
}

// ------------------------------------------------------------------ dropout

TEST(Dropout, TrainScalesKeptEntriesAndMatchesTheGradient) {
  manual_seed(3);
  const double p = 0.3;
  Dropout d(p);
  Tensor x = (rand({200, 500}) + 0.5).requires_grad_(true);  // no zeros in the input
  Tensor y = d(x);
  y.sum().backward();
  auto xv = oracle::to_doubles(x), yv = oracle::to_doubles(y), gv = oracle::to_doubles(x.grad());
  size_t dropped = 0;
  const double scale = 1 / (1 - p);
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++dropped;
      EXPECT_EQ(gv[i], 0.0) << "a dropped element gets no gradient";
    } else {
      EXPECT_NEAR(yv[i], xv[i] * scale, 1e-6 * yv[i]) << i;
      EXPECT_NEAR(gv[i], scale, 1e-6) << i;
    }
    if (::testing::Test::HasFailure()) break;
  }
  const double frac = static_cast<double>(dropped) / static_cast<double>(xv.size());
  EXPECT_NEAR(frac, p, 0.01);  // 1e5 draws: standard error 0.0015
  // Another call draws another mask; the same seed draws the same one.
  EXPECT_FALSE(same_values(d(x), y));
  manual_seed(3);
  Tensor x2 = rand({200, 500}) + 0.5;
  EXPECT_TRUE(same_values(d(x2), y));
}

TEST(Dropout, EvalAndExtremeProbabilities) {
  manual_seed(0);
  Tensor x = randn({4, 6});
  Dropout d(0.5);
  d.eval();
  EXPECT_TRUE(same_values(d(x), x));
  d.train();
  EXPECT_FALSE(same_values(d(x), x));
  Dropout keep(0.0);
  EXPECT_TRUE(same_values(keep(x), x));
  Dropout drop(1.0);
  EXPECT_TRUE(same_values(drop(x), zeros({4, 6})));
  expect_error<ValueError>([] { Dropout(1.5); }, {"Dropout", "1.5"});
  expect_error<ValueError>([] { Dropout(-0.1); }, {"Dropout", "between 0 and 1"});
}

// ------------------------------------------------------------------ errors

TEST(LayerErrors, Constructors) {
  expect_error<ValueError>([] { Linear(0, 3); }, {"Linear", "in_features", "0"});
  expect_error<ValueError>([] { Linear(3, -1); }, {"Linear", "out_features"});
  expect_error<ValueError>([] { Bilinear(2, 0, 3); }, {"Bilinear", "in2_features"});
  ConvOptions g2;
  g2.groups = 2;
  expect_error<ValueError>([&] { Conv2d(3, 4, {3}, g2); }, {"Conv2d", "divisible by groups"});
  expect_error<ValueError>([&] { Conv1d(4, 3, 3, g2); }, {"Conv1d", "divisible by groups"});
  expect_error<ValueError>([&] { ConvTranspose2d(4, 3, {3}, g2); }, {"ConvTranspose2d", "divisible by groups"});
  ConvOptions g0;
  g0.groups = 0;
  expect_error<ValueError>([&] { Conv2d(3, 4, {3}, g0); }, {"Conv2d", "groups"});
  expect_error<ValueError>([] { GroupNorm(3, 4); }, {"GroupNorm", "divisible"});
  expect_error<ValueError>([] { BatchNorm2d(0); }, {"BatchNorm2d", "num_features"});
  expect_error<IndexError>([] { Embedding(5, 2, 5); }, {"Embedding", "padding_idx"});
  expect_error<IndexError>([] { Embedding(5, 2, -6); }, {"Embedding", "padding_idx"});
}

TEST(LayerErrors, Forward) {
  manual_seed(0);
  BatchNorm2d bn2(3);
  expect_error<ShapeError>([&] { bn2(zeros({2, 3, 4})); }, {"BatchNorm2d", "4D", "[2, 3, 4]"});
  BatchNorm1d bn1(3);
  expect_error<ShapeError>([&] { bn1(zeros({2, 3, 4, 4})); }, {"BatchNorm1d", "2D or 3D"});
  expect_error<ShapeError>([&] { bn1(zeros({2, 4})); }, {});  // channel mismatch, from the op
  Linear lin(4, 2);
  expect_error<ShapeError>([&] { lin(zeros({3, 5})); }, {});
  Bilinear bil(2, 3, 4);
  expect_error<ShapeError>([&] { bil.forward2(zeros({5, 2}), zeros({5, 4})); }, {"bilinear", "[5, 4]"});
  expect_error<ShapeError>([&] { bil.forward2(zeros({5, 2}), zeros({6, 3})); }, {"bilinear", "leading dims"});
  expect_error<ValueError>([&] { bil.forward_list({zeros({5, 2})}); }, {"Bilinear", "two inputs"});
  expect_error<NotImplementedError>([&] { bil(zeros({5, 2})); }, {"Bilinear"});
  Embedding emb(5, 2);
  expect_error<IndexError>([&] { emb(tensor({1, 5}, kInt64)); }, {});
  expect_error<TypeError>([&] { emb(zeros({2})); }, {});
  Conv2d conv(3, 4, {3}, {});
  expect_error<ShapeError>([&] { conv(zeros({1, 2, 5, 5})); }, {});
}

TEST(LayerRepr, PrintsLikePyTorch) {
  Linear lin(3, 2);
  EXPECT_EQ(lin.to_string(), "Linear(in_features=3, out_features=2, bias=True)");
  Sequential seq(std::vector<ModulePtr>{std::make_shared<Linear>(3, 2, false), std::make_shared<ReLU>()});
  EXPECT_EQ(seq.to_string(), "Sequential(\n  (0): Linear(in_features=3, out_features=2, bias=False)\n  (1): ReLU()\n)");
}

}  // namespace
