// Gradients of the unary and reduction families (ops/unary*.cpp, ops/reduce*.cpp):
// gradcheck + gradgradcheck in float64 on contiguous and transposed inputs, with inputs kept
// away from the points where an op is not differentiable (relu/abs at 0, clamp bounds,
// ties in max), plus a few values computed by PyTorch 1.13.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tandem/tandem.h"

using namespace tandem;

namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

struct Domain {
  double lo, hi;
  bool both_signs;
};
constexpr Domain kAny{0.1, 2.0, true};
constexpr Domain kPositive{0.5, 2.0, false};
constexpr Domain kUnitOpen{0.1, 0.9, false};
constexpr Domain kSmall{0.1, 0.9, true};

Tensor values(IntArrayRef sizes, Domain d) {
  Tensor u = rand(sizes, kFloat64) * (d.hi - d.lo) + d.lo;
  if (d.both_signs) u = where(rand(sizes, kFloat64) < 0.5, u * -1.0, u);
  return u;
}

using UFn = std::function<Tensor(const Tensor&)>;

/// gradcheck and gradgradcheck of f on a contiguous [3, 4] and a transposed input.
void check_unary(const std::string& name, Domain d, const UFn& f, bool second_order = true) {
  for (int layout = 0; layout < 2; ++layout) {
    Tensor x = layout == 0 ? values({3, 4}, d) : values({4, 3}, d).t();
    x.requires_grad_();
    autograd::DiffFunction fn = [&f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0])}; };
    const std::string what = name + (layout == 0 ? " (contiguous)" : " (transposed)");
    try {
      EXPECT_TRUE(autograd::gradcheck(fn, {x})) << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " gradcheck: " << e.what();
    }
    if (!second_order) continue;
    try {
      EXPECT_TRUE(autograd::gradgradcheck(fn, {x})) << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " gradgradcheck: " << e.what();
    }
  }
}

std::vector<double> grad_of(const UFn& f, const Tensor& x0) {
  Tensor x = x0.detach().clone().requires_grad_();
  Tensor y = f(x);
  auto g = autograd::grad({y}, {x}, {ones_like(y)});
  return vals(g[0]);
}

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-10) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "at " << i;
}

}  // namespace

// ---------------------------------------------------------------- unary math
TEST(GradUnary, ExpLogPowers) {
  manual_seed(11);
  check_unary("exp", kAny, [](auto& x) { return exp(x); });
  check_unary("exp2", kAny, [](auto& x) { return exp2(x); });
  check_unary("expm1", kAny, [](auto& x) { return expm1(x); });
  check_unary("log", kPositive, [](auto& x) { return log(x); });
  check_unary("log2", kPositive, [](auto& x) { return log2(x); });
  check_unary("log10", kPositive, [](auto& x) { return log10(x); });
  check_unary("log1p", kPositive, [](auto& x) { return log1p(x); });
  check_unary("sqrt", kPositive, [](auto& x) { return sqrt(x); });
  check_unary("rsqrt", kPositive, [](auto& x) { return rsqrt(x); });
  check_unary("reciprocal", kPositive, [](auto& x) { return reciprocal(x); });
  check_unary("square", kAny, [](auto& x) { return square(x); });
  check_unary("neg", kAny, [](auto& x) { return neg(x); });
  check_unary("abs", kAny, [](auto& x) { return abs(x) * x; });
}

TEST(GradUnary, Trigonometric) {
  manual_seed(12);
  check_unary("sin", kAny, [](auto& x) { return sin(x); });
  check_unary("cos", kAny, [](auto& x) { return cos(x); });
  check_unary("tan", kSmall, [](auto& x) { return tan(x); });
  check_unary("asin", kSmall, [](auto& x) { return asin(x); });
  check_unary("acos", kSmall, [](auto& x) { return acos(x); });
  check_unary("atan", kAny, [](auto& x) { return atan(x); });
  check_unary("sinh", kAny, [](auto& x) { return sinh(x); });
  check_unary("cosh", kAny, [](auto& x) { return cosh(x); });
  check_unary("tanh", kAny, [](auto& x) { return tanh(x); });
  check_unary("erf", kAny, [](auto& x) { return erf(x); });
  check_unary("erfc", kAny, [](auto& x) { return erfc(x); });
  check_unary("sigmoid", kAny, [](auto& x) { return sigmoid(x); });
  check_unary("logit", kUnitOpen, [](auto& x) { return logit(x); });
  check_unary("logit eps", kUnitOpen, [](auto& x) { return logit(x, 0.05); });
}

TEST(GradUnary, Activations) {
  manual_seed(13);
  check_unary("relu", kAny, [](auto& x) { return relu(x) * x; });
  check_unary("relu6", {0.1, 5.5, true}, [](auto& x) { return relu6(x * 1.5) * x; });
  check_unary("leaky_relu", kAny, [](auto& x) { return leaky_relu(x, 0.2) * x; });
  check_unary("elu", kAny, [](auto& x) { return elu(x, 1.3, 0.9, 1.1); });
  check_unary("selu", kAny, [](auto& x) { return selu(x); });
  check_unary("gelu", kAny, [](auto& x) { return gelu(x); });
  check_unary("gelu tanh", kAny, [](auto& x) { return gelu(x, "tanh"); });
  check_unary("silu", kAny, [](auto& x) { return silu(x); });
  check_unary("mish", kAny, [](auto& x) { return mish(x); });
  check_unary("softplus", kAny, [](auto& x) { return softplus(x, 2, 3); });
  check_unary("hardsigmoid", {0.1, 2.9, true}, [](auto& x) { return hardsigmoid(x) * x; });
  check_unary("hardswish", {0.1, 2.9, true}, [](auto& x) { return hardswish(x); });
}

TEST(GradUnary, ClampAndPiecewiseConstant) {
  manual_seed(14);
  // Bounds at +-1.05: inputs in [0.1, 2] rarely hit them exactly.
  check_unary("clamp", kAny, [](auto& x) { return clamp(x, -1.05, 1.05) * x; });
  check_unary("nan_to_num", kAny, [](auto& x) { return nan_to_num(x) * x; });
  check_unary("frac", {0.1, 0.9, true}, [](auto& x) { return frac(x) * x; });
  for (const UFn& f : std::vector<UFn>{[](auto& x) { return floor(x) + x; }, [](auto& x) { return ceil(x) + x; },
                                       [](auto& x) { return round(x) + x; }, [](auto& x) { return trunc(x) + x; },
                                       [](auto& x) { return sign(x) + x; }}) {
    expect_near(grad_of(f, tensor({0.3, -1.7, 2.2}, kFloat64)), {1, 1, 1});
  }
}

// Values from torch 1.13 (float64).
TEST(GradUnary, ValuesMatchPyTorch) {
  Tensor x = tensor({-2.0, -0.5, 0.5, 2.0}, kFloat64);
  // torch.autograd.grad(F.relu(x).sum(), x)
  expect_near(grad_of([](auto& t) { return relu(t); }, x), {0, 0, 1, 1});
  // clamp boundaries pass the gradient (min <= x <= max)
  expect_near(grad_of([](auto& t) { return clamp(t, -0.5, 0.5); }, x), {0, 1, 1, 0});
  // hardswish at -3 / 3: 0 below -3, x/3 + 0.5 up to 3 inclusive
  expect_near(grad_of([](auto& t) { return hardswish(t); }, tensor({-3.0, 3.0, 1.0}, kFloat64)),
              {-0.5, 1.5, 0.8333333333333334});
  // F.gelu(x) gradient
  expect_near(grad_of([](auto& t) { return gelu(t); }, x),
              {-0.08523180107819692, 0.13250487534383712, 0.8674951246561629, 1.085231801078197}, 1e-12);
}

// ---------------------------------------------------------------- reductions
TEST(GradReduce, SumMeanProd) {
  manual_seed(21);
  check_unary("sum all", kAny, [](auto& x) { return sum(x * x); });
  check_unary("sum dim", kAny, [](auto& x) { return sum(x * x, {1}); });
  check_unary("sum dims keepdim", kAny, [](auto& x) { return sum(x * x, {0, 1}, true); });
  check_unary("mean dim", kAny, [](auto& x) { return mean(x * x, {0}); });
  check_unary("mean keepdim", kAny, [](auto& x) { return mean(x * x, {1}, true) * x; });
  check_unary("prod", kAny, [](auto& x) { return prod(x); });
  check_unary("prod dim", kAny, [](auto& x) { return prod(x, {1}); });
  // Zeros: one zero in a slice gets the product of the others; two zeros give 0.
  Tensor z = tensor({{0.0, 2.0, 3.0}, {0.0, 0.0, 5.0}, {1.0, 2.0, 4.0}}, kFloat64);
  expect_near(grad_of([](auto& t) { return prod(t, {1}); }, z), {6, 0, 0, 0, 0, 0, 8, 4, 2});
}

TEST(GradReduce, MaxMin) {
  manual_seed(22);
  check_unary("amax", kAny, [](auto& x) { return amax(x, {1}); });
  check_unary("amin keepdim", kAny, [](auto& x) { return amin(x, {0}, true); });
  check_unary("max", kAny, [](auto& x) { return max(x); });
  check_unary("min", kAny, [](auto& x) { return min(x); });
  check_unary("max dim", kAny, [](auto& x) { return std::get<0>(max(x, 1)); });
  check_unary("min dim keepdim", kAny, [](auto& x) { return std::get<0>(min(x, 0, true)); });
  // Ties: amax/max split evenly (torch.amax), max.dim picks the returned index.
  Tensor t = tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 2.0}}, kFloat64);
  expect_near(grad_of([](auto& v) { return amax(v, {1}); }, t), {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  expect_near(grad_of([](auto& v) { return max(v); }, t), {0, 0.5, 0.5, 0, 0, 0});
  expect_near(grad_of([](auto& v) { return std::get<0>(max(v, 1)); }, t), {0, 1, 0, 1, 0, 0});
}

TEST(GradReduce, Statistics) {
  manual_seed(23);
  check_unary("var", kAny, [](auto& x) { return var(x); });
  check_unary("var dim", kAny, [](auto& x) { return var(x, {1}, true, false); });
  check_unary("var correction 0", kAny, [](auto& x) { return var(x, std::optional<IntArrayRef>(IntArrayRef{0}), 0.0, true); });
  check_unary("std", kAny, [](auto& x) { return tandem::std(x, {1}); });
  check_unary("var_mean", kAny, [](auto& x) {
    auto [v, m] = var_mean(x, std::optional<IntArrayRef>(IntArrayRef{1}));
    return v + m * m;
  });
  check_unary("logsumexp", kAny, [](auto& x) { return logsumexp(x, {1}); });
  check_unary("norm 2", kAny, [](auto& x) { return norm(x); });
  check_unary("norm 1 dim", kAny, [](auto& x) { return norm(x, 1, {1}); });
  check_unary("norm 3 dim", kAny, [](auto& x) { return norm(x, 3, {0}, true); });
  check_unary("norm inf", kAny, [](auto& x) { return norm(x, INFINITY, {1}); });
  check_unary("norm fro", kAny, [](auto& x) { return norm(x, "fro", {0, 1}); });
  check_unary("cumsum", kAny, [](auto& x) { return cumsum(x * x, 1); });
  check_unary("cumsum dim -2", kAny, [](auto& x) { return cumsum(x * x, -2); });
  // torch.autograd.grad(x.cumsum(0).sum(), x) = [4, 3, 2, 1]
  expect_near(grad_of([](auto& v) { return cumsum(v, 0); }, tensor({1.0, 2.0, 3.0, 4.0}, kFloat64)), {4, 3, 2, 1});
}
