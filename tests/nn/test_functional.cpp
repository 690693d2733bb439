// nn::functional: every function is used once and equals the layer (or op) it mirrors; the
// two composites it defines itself (bilinear, normalize) are checked against values.
#include <gtest/gtest.h>

#include "nn_test_util.h"

using namespace tandem;
using nn::testing::expect_error;
using nn::testing::same_values;
namespace F = tandem::nn::functional;

namespace {

// Same values within float32 rounding (layers and functions take the same op path, but
// keep a small tolerance so a fused or reordered path stays allowed).
void expect_close(const Tensor& got, const Tensor& want, const char* what, double tol = 1e-6) {
  std::string diff = oracle::compare_tensors(got.detach(), want.detach(), tol, tol);
  EXPECT_TRUE(diff.empty()) << what << ": " << diff;
}

TEST(Functional, LayersEqualTheirFunctions) {
  manual_seed(0);
  Tensor x2 = randn({4, 6}), x4 = randn({2, 4, 6, 6}), x3 = randn({2, 4, 9});

  nn::Linear lin(6, 3);
  expect_close(F::linear(x2, lin.weight, lin.bias), lin(x2), "linear");
  nn::Bilinear bil(6, 4, 2);
  Tensor y2 = randn({4, 4});
  expect_close(F::bilinear(x2, y2, bil.weight, bil.bias), bil.forward2(x2, y2), "bilinear");

  nn::ConvOptions o;
  o.stride = {2};
  o.padding = {1};
  nn::Conv1d c1(4, 3, 3, o);
  expect_close(F::conv1d(x3, c1.weight, c1.bias, {2}, {1}), c1(x3), "conv1d");
  nn::ConvOptions same;
  same.padding_mode_same = "same";
  nn::Conv2d c2(4, 5, {3}, same);
  expect_close(F::conv2d(x4, c2.weight, c2.bias, {1}, F::kSame), c2(x4), "conv2d same");
  nn::ConvOptions tr;
  tr.stride = {2};
  tr.output_padding = {1};
  nn::ConvTranspose2d ct(4, 2, {3}, tr);
  expect_close(F::conv_transpose2d(x4, ct.weight, ct.bias, {2}, {0}, {1}), ct(x4), "conv_transpose2d");

  nn::MaxPool2d mp({3}, {2}, {1});
  expect_close(F::max_pool2d(x4, {3}, {2}, {1}), mp(x4), "max_pool2d");
  nn::AvgPool2d ap({2});
  expect_close(F::avg_pool2d(x4, {2}), ap(x4), "avg_pool2d");
  nn::AdaptiveAvgPool2d aap({2, 3});
  expect_close(F::adaptive_avg_pool2d(x4, {2, 3}), aap(x4), "adaptive_avg_pool2d");
  auto [amax, aidx] = F::adaptive_max_pool2d(x4, {1, 1});
  expect_close(amax, std::get<0>(F::max_pool2d_with_indices(x4, {6})), "adaptive_max_pool2d");
  EXPECT_EQ(aidx.dtype(), kInt64);

  nn::BatchNorm2d bn(4);
  Tensor rm = zeros({4}), rv = ones({4});
  expect_close(F::batch_norm(x4, rm, rv, bn.weight, bn.bias, /*training=*/true), bn(x4), "batch_norm");
  expect_close(rm, bn.running_mean, "batch_norm running_mean");
  expect_close(rv, bn.running_var, "batch_norm running_var");
  nn::LayerNorm ln({6});
  expect_close(F::layer_norm(x2, {6}, ln.weight, ln.bias), ln(x2), "layer_norm");
  nn::GroupNorm gn(2, 4);
  expect_close(F::group_norm(x4, 2, gn.weight, gn.bias), gn(x4), "group_norm");
  expect_close(F::instance_norm(x4), F::group_norm(x4, 4), "instance_norm (no affine) = group_norm with C groups");

  nn::Dropout drop(0.25);
  manual_seed(5);
  Tensor d1 = drop(x2);
  manual_seed(5);
  expect_close(F::dropout(x2, 0.25, true), d1, "dropout (same seed)");
  EXPECT_TRUE(F::dropout(x2, 0.25, /*training=*/false).is_same(x2));

  nn::Embedding emb(7, 3, 0);
  Tensor idx = tensor({0, 6, 2, 2}, kInt64);
  expect_close(F::embedding(idx, emb.weight, 0), emb(idx), "embedding");
  expect_close(F::embedding(idx, emb.weight), tandem::embedding(emb.weight, idx), "embedding argument order");
  EXPECT_TRUE(same_values(F::one_hot(tensor({0, 2}, kInt64), 3), tensor({{1.0, 0.0, 0.0}, {0.0, 0.0, 1.0}}).to(kInt64)));

  expect_close(F::relu(x2), nn::ReLU()(x2), "relu");
  expect_close(F::leaky_relu(x2, 0.2), nn::LeakyReLU(0.2)(x2), "leaky_relu");
  expect_close(F::gelu(x2), nn::GELU()(x2), "gelu");
  expect_close(F::gelu(x2, "tanh"), nn::GELU("tanh")(x2), "gelu tanh");
  expect_close(F::silu(x2), nn::SiLU()(x2), "silu");
  expect_close(F::tanh(x2), nn::Tanh()(x2), "tanh");
  expect_close(F::sigmoid(x2), nn::Sigmoid()(x2), "sigmoid");
  expect_close(F::softmax(x2, 1), nn::Softmax(1)(x2), "softmax");
  expect_close(F::log_softmax(x2, 0), nn::LogSoftmax(0)(x2), "log_softmax");
  // The other activations forward to their ops.
  expect_close(F::relu6(x2), tandem::relu6(x2), "relu6");
  expect_close(F::elu(x2), tandem::elu(x2), "elu");
  expect_close(F::selu(x2), tandem::selu(x2), "selu");
  expect_close(F::softplus(x2), tandem::softplus(x2), "softplus");
  expect_close(F::mish(x2), tandem::mish(x2), "mish");
  expect_close(F::hardsigmoid(x2), tandem::hardsigmoid(x2), "hardsigmoid");
  expect_close(F::hardswish(x2), tandem::hardswish(x2), "hardswish");
}

TEST(Functional, LossesAndResampling) {
  // Values checked by hand (the ops themselves are tested against PyTorch in tests/ops).
  Tensor logits = tensor({{2.0, 0.0}, {0.0, 0.0}}, kFloat32);
  Tensor target = tensor({0, 1}, kInt64);
  const double l0 = std::log(1 + std::exp(-2.0)), l1 = std::log(2.0);
  EXPECT_NEAR(F::cross_entropy(logits, target).item<double>(), (l0 + l1) / 2, 1e-6);
  EXPECT_NEAR(F::nll_loss(F::log_softmax(logits, 1), target, {}, -100, "sum").item<double>(), l0 + l1, 1e-6);
  Tensor a = tensor({1.0, 2.0, 4.0}, kFloat32), b = tensor({1.5, 2.0, 1.0}, kFloat32);
  EXPECT_NEAR(F::mse_loss(a, b).item<double>(), (0.25 + 0 + 9) / 3, 1e-6);
  EXPECT_NEAR(F::l1_loss(a, b, "sum").item<double>(), 3.5, 1e-6);
  EXPECT_NEAR(F::smooth_l1_loss(a, b, "sum").item<double>(), 0.125 + 2.5, 1e-6);
  EXPECT_NEAR(F::huber_loss(a, b, "sum", 2.0).item<double>(), 0.125 + 2 * (3 - 1), 1e-6);
  Tensor p = tensor({0.25, 0.5}, kFloat32), t = tensor({1.0, 0.0}, kFloat32);
  EXPECT_NEAR(F::binary_cross_entropy(p, t).item<double>(), (-std::log(0.25) - std::log(0.5)) / 2, 1e-6);
  Tensor z = tensor({0.0, 1.0}, kFloat32);
  const double bce = (std::log(2.0) + std::log(1 + std::exp(1.0))) / 2;
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(z, t).item<double>(), bce, 1e-6);
  Tensor logq = tensor({std::log(0.5), std::log(0.5)}, kFloat32), pt = tensor({0.25, 0.75}, kFloat32);
  const double kl = 0.25 * std::log(0.5) + 0.75 * std::log(1.5);
  EXPECT_NEAR(F::kl_div(logq, pt, "sum").item<double>(), kl, 1e-6);

  Tensor img = tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat32).reshape({1, 1, 2, 2});
  EXPECT_EQ(F::pad(img, {1, 0, 0, 1}).sizes().vec(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_TRUE(same_values(F::pad(img, {1, 1, 0, 0}, "replicate").select(3, 0), img.select(3, 0)));
  Tensor up = F::interpolate(img, std::vector<int64_t>{4, 4});
  EXPECT_EQ(up.sizes().vec(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(up.select(2, 3).select(2, 3).item<float>(), 4.0f);
}

TEST(Functional, BilinearValuesAndErrors) {
  // y[b, o] = x1[b] . W[o] . x2[b] + bias[o]
  Tensor x1 = tensor({{1.0, 2.0}}, kFloat64), x2 = tensor({{3.0, 0.0, -1.0}}, kFloat64);
  Tensor w = tensor({1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0}, kFloat64).reshape({2, 2, 3});
  Tensor bias = tensor({0.5, -0.5}, kFloat64);
  // o = 0: 1*1*3 + 2*1*0 = 3; o = 1: 2*1*(-1) = -2.
  EXPECT_TRUE(same_values(F::bilinear(x1, x2, w, bias), tensor({{3.5, -2.5}}, kFloat64)));
  EXPECT_TRUE(same_values(F::bilinear(x1, x2, w), tensor({{3.0, -2.0}}, kFloat64)));
  // Leading dims are kept.
  Tensor y = F::bilinear(x1.expand({4, 1, 2}), x2.expand({4, 1, 3}), w);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{4, 1, 2}));
  // Differentiable through its ops: gradcheck in float64.
  Tensor a = randn({3, 2}, kFloat64).requires_grad_(true), b = randn({3, 3}, kFloat64).requires_grad_(true);
  Tensor wg = randn({2, 2, 3}, kFloat64).requires_grad_(true), bg = randn({2}, kFloat64).requires_grad_(true);
  EXPECT_TRUE(autograd::gradcheck([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{F::bilinear(in[0], in[1], in[2], in[3])};
  },
                                  {a, b, wg, bg}));
  expect_error<ShapeError>([&] { F::bilinear(x1, x2, w.reshape({2, 6})); }, {"bilinear", "weight", "[2, 6]"});
  expect_error<ShapeError>([&] { F::bilinear(x2, x1, w); }, {"bilinear", "last dims"});
  expect_error<ShapeError>([&] { F::bilinear(x1, x2, w, tensor({1.0, 2.0, 3.0}, kFloat64)); }, {"bilinear", "bias", "[3]"});
}

TEST(Functional, NormalizeValues) {
  Tensor x = tensor({{3.0, 4.0}, {0.0, 0.0}, {-1.0, 1.0}}, kFloat64);
  Tensor y = F::normalize(x);  // p = 2 over dim 1
  const double r = 1 / std::sqrt(2.0);
  expect_close(y, tensor({{0.6, 0.8}, {0.0, 0.0}, {-r, r}}, kFloat64), "normalize", 1e-15);
  expect_close(F::normalize(x, 1.0, 1), tensor({{3.0 / 7, 4.0 / 7}, {0.0, 0.0}, {-0.5, 0.5}}, kFloat64), "normalize p=1",
               1e-15);
  expect_close(F::normalize(x, 2.0, 0), x / tensor({std::sqrt(10.0), std::sqrt(17.0)}, kFloat64), "normalize dim 0", 1e-15);
  // eps bounds the divisor: a tiny vector is scaled by 1 / eps, not normalised.
  Tensor tiny = tensor({{1e-14, 0.0}}, kFloat64);
  expect_close(F::normalize(tiny), tensor({{1e-2, 0.0}}, kFloat64), "normalize eps", 1e-12);
  Tensor g = randn({3, 4}, kFloat64).requires_grad_(true);
  EXPECT_TRUE(autograd::gradcheck([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{F::normalize(in[0], 2.0, 1)};
  }, {g}));
  EXPECT_THROW(F::normalize(x, 2.0, 2), IndexError);
}

}  // namespace
