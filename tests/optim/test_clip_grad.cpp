// Hand-written tests of clip_grad_norm_ / clip_grad_value_ (the PyTorch comparisons are
// in test_optim_oracle.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "optim_test_util.h"

using namespace tandem;
using namespace tandem::optim;
using namespace tandem::optim::testing;

namespace {

Tensor with_grad(const Tensor& g) {
  Tensor p = make_param(zeros_like(g));
  p.set_grad(g);
  return p;
}

TEST(ClipGradNorm, NoGradientsGivesZero) {
  Tensor p = make_param(zeros({3}));
  EXPECT_EQ(clip_grad_norm_({p}, 1.0), 0.0);
  EXPECT_FALSE(p.grad().defined());
  EXPECT_EQ(clip_grad_norm_(std::vector<Tensor>{}, 1.0), 0.0);
}

TEST(ClipGradNorm, ScalesInPlaceAndReturnsTheNormBefore) {
  Tensor p = with_grad(tensor({3.0, 4.0}, DType::Float64));
  Tensor q = make_param(zeros({2}));  // no grad: ignored
  Tensor g = p.grad();
  const uint64_t v = g._version();
  const double n = clip_grad_norm_({p, q}, 1.0);
  EXPECT_EQ(n, 5.0);
  EXPECT_TRUE(p.grad().is_same(g));
  EXPECT_GT(g._version(), v);
  const double coef = 1.0 / (5.0 + 1e-6);
  EXPECT_EQ(g[0].item<double>(), 3.0 * coef);
  EXPECT_EQ(g[1].item<double>(), 4.0 * coef);
  // Below max_norm the coefficient is clamped to 1: unchanged.
  Tensor r = with_grad(tensor({0.3f, 0.4f}));
  EXPECT_FLOAT_EQ(clip_grad_norm_(r, 1.0), 0.5f);
  EXPECT_EQ(r.grad()[0].item<float>(), 0.3f);
}

TEST(ClipGradNorm, NonFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor p = with_grad(tensor({1.0, nan}, DType::Float64));
  try {
    clip_grad_norm_(p, 1.0, 2.0, /*error_if_nonfinite=*/true);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.grad()[0].item<double>(), 1.0);  // unchanged on error
  EXPECT_TRUE(std::isnan(clip_grad_norm_(p, 1.0)));
  EXPECT_TRUE(std::isnan(p.grad()[0].item<double>()));  // scaled by NaN, as PyTorch
  Tensor q = with_grad(tensor({1.0f, std::numeric_limits<float>::infinity()}));
  EXPECT_THROW(clip_grad_norm_(q, 1.0, 2.0, true), RuntimeError);
  EXPECT_TRUE(std::isinf(clip_grad_norm_(q, 1.0)));
  EXPECT_EQ(q.grad()[0].item<float>(), 0.0f);
}

// Many blocks of the parallel reduction: compare with a plain double loop.
TEST(ClipGradNorm, LargeTensorsMatchAPlainSum) {
  const int64_t n = 200003;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.37 * static_cast<double>(i)) * 0.01;
  for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
    Tensor g = from_vector(v, {n}, DType::Float64);
    Tensor prm = with_grad(g);
    double ref = 0;
    for (double x : v) {
      if (std::isinf(p)) ref = std::max(ref, std::fabs(x));
      else ref += std::pow(std::fabs(x), p);
    }
    if (!std::isinf(p)) ref = std::pow(ref, 1.0 / p);
    const double got = clip_grad_norm_(prm, 1e9, p);
    EXPECT_NEAR(got, ref, 1e-12 * ref) << "p=" << p;
  }
  // float32 gradient: the norm is rounded to float32 once.
  Tensor g32 = from_vector(v, {n}, DType::Float32);
  double ref = 0;
  for (float x : std::vector<float>(v.begin(), v.end())) ref += static_cast<double>(x) * x;
  EXPECT_EQ(clip_grad_norm_(with_grad(g32), 1e9), static_cast<double>(static_cast<float>(std::sqrt(ref))));
}

TEST(ClipGradNorm, ReducedPrecisionGradients) {
  Tensor p = with_grad(tensor({3.0f, 4.0f}).to(DType::Float16));
  EXPECT_EQ(clip_grad_norm_(p, 1.0), 5.0);
  EXPECT_EQ(p.grad().dtype(), DType::Float16);
  EXPECT_NEAR(p.grad()[1].item<double>(), 0.8, 1e-3);
  Tensor i = make_param(zeros({2}));
  i.set_grad(zeros({2}));
  EXPECT_NO_THROW(clip_grad_norm_(i, 1.0));
}

TEST(ClipGradValue, ClampsInPlace) {
  Tensor p = with_grad(tensor({-2.0f, -0.5f, 0.25f, 3.0f}));
  Tensor g = p.grad();
  clip_grad_value_(p, 1.0);
  EXPECT_TRUE(p.grad().is_same(g));
  EXPECT_EQ(g[0].item<float>(), -1.0f);
  EXPECT_EQ(g[1].item<float>(), -0.5f);
  EXPECT_EQ(g[2].item<float>(), 0.25f);
  EXPECT_EQ(g[3].item<float>(), 1.0f);
  Tensor q = make_param(zeros({1}));
  EXPECT_NO_THROW(clip_grad_value_({p, q}, 0.1));
  EXPECT_FALSE(q.grad().defined());
}

}  // namespace
