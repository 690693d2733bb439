// Gradients of the pointwise family (ops/pointwise*.cpp): finite-difference checks of the
// first and second derivatives (gradcheck/gradgradcheck in float64) of every
// differentiable op on contiguous, transposed/sliced, broadcast and in-place (non-leaf and
// view) inputs, plus a table of small programs whose gradients PyTorch computed
// (tests/oracle/gen_grad_pointwise.py): maximum's 0.5/0.5 tie split, pow at 0, NaN
// operands of fmax/fmin, rounding division, in-place chains and double backward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tandem/tandem.h"

using namespace tandem;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// ---------------------------------------------------------------- finite-difference checks
/// Values drawn with |v| in [lo, hi], of random sign when `both_signs`: keeps inputs away
/// from the points where an op is not differentiable (division by ~0, the origin of atan2).
struct Domain {
  double lo, hi;
  bool both_signs;
};
constexpr Domain kAny{0.1, 2.0, true};
constexpr Domain kAwayFromZero{0.5, 2.0, true};
constexpr Domain kPositive{0.5, 2.0, false};
constexpr Domain kUnit{0.0, 1.0, false};

Tensor values(IntArrayRef sizes, Domain d) {
  Tensor u = rand(sizes, kFloat64) * (d.hi - d.lo) + d.lo;
  if (d.both_signs) u = where(rand(sizes, kFloat64) < 0.5, u * -1.0, u);
  return u;
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
/// In-place form: modifies `self` using the other inputs.
using InplaceFn = std::function<void(Tensor& self, const std::vector<Tensor>& others)>;

struct Case {
  std::string name;
  std::vector<Domain> domains;  ///< one per input
  Fn fn;
  InplaceFn inplace = nullptr;  ///< unset when the op has no in-place form
  std::vector<bool> grad = {};  ///< which inputs require grad (empty: all)
};

enum class Layout { Contiguous, Strided, Broadcast, Inplace, InplaceOnView };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Strided: return "transposed/sliced";
    case Layout::Broadcast: return "broadcast";
    case Layout::Inplace: return "in-place on non-leaf";
    case Layout::InplaceOnView: return "in-place on a view of a non-leaf";
  }
  return "?";
}

// Leaf input i of `layout`: [3, 4] values, contiguous or not, or broadcasting shapes.
Tensor make_input(Layout l, size_t i, Domain d) {
  static const std::vector<std::vector<int64_t>> kBroadcast = {{3, 1}, {4}, {2, 1, 1}};
  static const std::vector<std::vector<int64_t>> kInplaceOthers = {{4}, {3, 1}};
  switch (l) {
    case Layout::Contiguous: return values({3, 4}, d);
    case Layout::Strided:
      // Transposed for even inputs, every other column for odd ones.
      return i % 2 == 0 ? values({4, 3}, d).t() : values({3, 8}, d).slice(1, 0, 8, 2);
    case Layout::Broadcast: return values(kBroadcast[i], d);
    case Layout::Inplace:
    case Layout::InplaceOnView:
      if (i == 0) return l == Layout::Inplace ? values({3, 4}, d) : values({4, 3}, d);
      return values(kInplaceOthers[i - 1], d);
  }
  return Tensor();
}

void expect_checks_pass(const std::string& what, const autograd::DiffFunction& f, const std::vector<Tensor>& in) {
  try {
    EXPECT_TRUE(autograd::gradcheck(f, in)) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " gradcheck: " << e.what();
  }
  try {
    EXPECT_TRUE(autograd::gradgradcheck(f, in)) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " gradgradcheck: " << e.what();
  }
}

void check_case(const Case& c) {
  std::vector<Layout> layouts = {Layout::Contiguous, Layout::Strided, Layout::Broadcast};
  if (c.inplace) {
    layouts.push_back(Layout::Inplace);
    layouts.push_back(Layout::InplaceOnView);
  }
  for (Layout l : layouts) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < c.domains.size(); ++i) {
      Tensor t = make_input(l, i, c.domains[i]);
      if (c.grad.empty() || c.grad[i]) t.requires_grad_();
      in.push_back(t);
    }
    autograd::DiffFunction f;
    if (l == Layout::Inplace || l == Layout::InplaceOnView) {
      f = [&c, l](const std::vector<Tensor>& x) {
        // A non-leaf self: a fresh product (in-place on a leaf requiring grad is an error),
        // or for InplaceOnView a transposed view of one (history rewritten via CopySlices).
        Tensor base = x[0] * 1.0;
        Tensor self = l == Layout::Inplace ? base : base.t();
        c.inplace(self, std::vector<Tensor>(x.begin() + 1, x.end()));
        return std::vector<Tensor>{self, base * 1.0};
      };
    } else {
      f = [&c](const std::vector<Tensor>& x) { return std::vector<Tensor>{c.fn(x)}; };
    }
    expect_checks_pass(c.name + " (" + layout_name(l) + ")", f, in);
  }
}

// A fixed condition for where, broadcastable against every layout's [3, 4] output.
Tensor fixed_condition() {
  return tensor({{1.0, 0.0, 0.0, 1.0}, {0.0, 1.0, 1.0, 0.0}, {1.0, 1.0, 0.0, 0.0}}, kFloat64) > 0.5;
}

bool log_registered() { return find_op("log") != nullptr; }
bool log_differentiable() { return find_op("log") != nullptr && find_op("log")->backward != nullptr; }

}  // namespace

// ---------------------------------------------------------------- division family
TEST(GradPointwise, Div) {
  manual_seed(1);
  check_case({"div", {kAny, kAwayFromZero}, [](auto& x) { return x[0] / x[1]; },
              [](Tensor& s, auto& o) { s.div_(o[0]); }});
  check_case({"div by number", {kAny}, [](auto& x) { return x[0] / 3.0; }, [](Tensor& s, auto&) { s.div_(3.0); }});
  check_case({"number / tensor", {kAwayFromZero}, [](auto& x) { return 2.0 / x[0]; }});
  check_case({"true_divide", {kAny, kAwayFromZero}, [](auto& x) { return true_divide(x[0], x[1]); }});
}

TEST(GradPointwise, RoundingDivisionHasZeroGradient) {
  manual_seed(2);
  for (const char* mode : {"floor", "trunc"}) {
    check_case({std::string("div ") + mode, {kAny, kAwayFromZero},
                [mode](auto& x) { return div(x[0], x[1], mode) + x[0] * 0.5; },
                [mode](Tensor& s, auto& o) { s.div_(o[0], mode); }});
  }
  check_case({"floor_divide", {kAny, kAwayFromZero}, [](auto& x) { return floor_divide(x[0], x[1]) + x[1]; },
              [](Tensor& s, auto& o) { s.floor_divide_(o[0]); }});
  // The gradients are defined zeros (not absent), as PyTorch's div with a rounding mode.
  Tensor a = tensor({1.5, -2.5, 3.0}, kFloat64).requires_grad_();
  Tensor b = tensor({0.7, 0.9, -1.3}, kFloat64).requires_grad_();
  for (const Tensor& y : {div(a, b, "floor"), div(a, b, "trunc"), floor_divide(a, b)}) {
    ASSERT_TRUE(y.requires_grad());
    auto g = autograd::grad({y}, {a, b}, {ones({3}, kFloat64)});
    ASSERT_TRUE(g[0].defined() && g[1].defined());
    EXPECT_EQ(vals(g[0]), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(vals(g[1]), (std::vector<double>{0, 0, 0}));
  }
}

TEST(GradPointwise, RemainderAndFmod) {
  manual_seed(3);
  const Domain dividend{0.1, 3.0, true};
  check_case({"remainder", {dividend, kAwayFromZero}, [](auto& x) { return remainder(x[0], x[1]); },
              [](Tensor& s, auto& o) { s.remainder_(o[0]); }});
  check_case({"fmod", {dividend, kAwayFromZero}, [](auto& x) { return fmod(x[0], x[1]); },
              [](Tensor& s, auto& o) { s.fmod_(o[0]); }});
  check_case({"remainder by number", {dividend}, [](auto& x) { return remainder(x[0], 1.5) + fmod(x[0], -1.5); },
              [](Tensor& s, auto&) { s.remainder_(-0.75); }});
  check_case({"number % tensor", {kAwayFromZero}, [](auto& x) { return remainder(2.5, x[0]); }});
  check_case({"operator%", {dividend, kAwayFromZero}, [](auto& x) { return x[0] % x[1]; },
              [](Tensor& s, auto& o) { s %= o[0]; }});
}

// ---------------------------------------------------------------- pow
TEST(GradPointwise, PowScalarExponents) {
  manual_seed(4);
  check_case({"pow(x, 2.5)", {kPositive}, [](auto& x) { return pow(x[0], 2.5); },
              [](Tensor& s, auto&) { s.pow_(2.5); }});
  check_case({"pow(x, 3) signed base", {kAny}, [](auto& x) { return pow(x[0], 3); },
              [](Tensor& s, auto&) { s.pow_(3); }});
  check_case({"pow(x, -2)", {kAwayFromZero}, [](auto& x) { return pow(x[0], -2); }});
  check_case({"pow(x, 0.5) + pow(x, -1.5)", {kPositive}, [](auto& x) { return pow(x[0], 0.5) + pow(x[0], -1.5); }});
  check_case({"pow(x, 1) * pow(x, 0)", {kAny}, [](auto& x) { return pow(x[0], 1) * x[0] + pow(x[0], 0); }});
}

TEST(GradPointwise, PowScalarBase) {
  manual_seed(5);
  check_case({"pow(2.5, x)", {kAny}, [](auto& x) { return pow(2.5, x[0]); }});
  check_case({"pow(0.5, x) * x", {kAny}, [](auto& x) { return pow(0.5, x[0]) * x[0]; }});
  // Base 0 with positive exponents: the exponent gradient is PyTorch's masked 0.
  check_case({"pow(0, x)", {kPositive}, [](auto& x) { return pow(0.0, x[0]) + x[0]; }});
}

TEST(GradPointwise, PowTensorExponentWrtBase) {
  manual_seed(6);
  // Exponent as a tensor that does not require grad (its gradient needs log, below).
  check_case({"pow(x, e) wrt x", {kPositive, {0.0, 2.0, true}}, [](auto& x) { return pow(x[0], x[1]); },
              [](Tensor& s, auto& o) { s.pow_(o[0]); }, {true, false}});
  // Negative bases with integer exponents (an int64 tensor, broadcast).
  Tensor e = tensor({3, -2, 0, 1}, kInt64);
  check_case({"pow(x, int tensor)", {kAwayFromZero}, [e](auto& x) { return pow(x[0], e); },
              [e](Tensor& s, auto&) { s.pow_(e); }});
}

TEST(GradPointwise, PowTensorExponentWrtExponent) {
  manual_seed(7);
  // d/de x^e = x^e * log(x) needs the log op of the unary family, found in the registry.
  Tensor x = values({3, 4}, kPositive).requires_grad_();
  Tensor e = values({4}, {0.0, 2.0, true}).requires_grad_();
  if (!log_registered()) {
    Tensor y = pow(x, e);
    EXPECT_THROW(autograd::grad({y}, {e}, {ones({3, 4}, kFloat64)}), NotImplementedError);
    // Only the exponent's gradient needs log: the base's is fine.
    auto gx = autograd::grad({pow(x, e.detach())}, {x}, {ones({3, 4}, kFloat64)});
    EXPECT_TRUE(gx[0].defined());
    return;
  }
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{pow(in[0], in[1])}; };
  EXPECT_TRUE(autograd::gradcheck(f, {x, e}));
  // Second derivatives need log's own backward rule.
  if (log_differentiable()) {
    check_case({"pow(x, e)", {kPositive, {0.0, 2.0, true}}, [](auto& x) { return pow(x[0], x[1]); },
                [](Tensor& s, auto& o) { s.pow_(o[0]); }});
  }
}

// ---------------------------------------------------------------- min/max, atan2, hypot
TEST(GradPointwise, MaximumMinimumFmaxFmin) {
  manual_seed(8);
  check_case({"maximum", {kAny, kAny}, [](auto& x) { return maximum(x[0], x[1]); }});
  check_case({"minimum", {kAny, kAny}, [](auto& x) { return minimum(x[0], x[1]); }});
  check_case({"fmax", {kAny, kAny}, [](auto& x) { return fmax(x[0], x[1]); }});
  check_case({"fmin", {kAny, kAny}, [](auto& x) { return fmin(x[0], x[1]); }});
  check_case({"maximum of products", {kAny, kAny},
              [](auto& x) { return maximum(x[0] * x[1], x[1] * 0.5) * minimum(x[0], x[1] * x[1]); }});
}

TEST(GradPointwise, Atan2Hypot) {
  manual_seed(9);
  check_case({"atan2", {kAwayFromZero, kAwayFromZero}, [](auto& x) { return atan2(x[0], x[1]); },
              [](Tensor& s, auto& o) { s.atan2_(o[0]); }});
  check_case({"hypot", {kAwayFromZero, kAwayFromZero}, [](auto& x) { return hypot(x[0], x[1]); },
              [](Tensor& s, auto& o) { s.hypot_(o[0]); }});
}

// ---------------------------------------------------------------- where, lerp, addcmul, addcdiv
TEST(GradPointwise, Where) {
  manual_seed(10);
  Tensor cond = fixed_condition();
  check_case({"where", {kAny, kAny}, [cond](auto& x) { return where(cond, x[0], x[1]); }});
  check_case({"where with a number", {kAny}, [cond](auto& x) { return where(cond, x[0], 0.5) + where(cond, -1.0, x[0]); }});
  check_case({"Tensor::where", {kAny, kAny}, [cond](auto& x) { return x[0].where(cond, x[1] * x[0]); }});
  // The condition is not differentiable, even when computed from tensors requiring grad.
  Tensor a = tensor({1.0, -2.0}, kFloat64).requires_grad_();
  Tensor c = a > 0.0;
  EXPECT_FALSE(c.requires_grad());
  auto g = autograd::grad({where(c, a, a * 3.0)}, {a}, {ones({2}, kFloat64)});
  EXPECT_EQ(vals(g[0]), (std::vector<double>{1, 3}));
}

TEST(GradPointwise, Lerp) {
  manual_seed(11);
  check_case({"lerp tensor weight", {kAny, kAny, kUnit}, [](auto& x) { return lerp(x[0], x[1], x[2]); },
              [](Tensor& s, auto& o) { s.lerp_(o[0], o[1]); }});
  // Both branches of lerp's formula (|w| < 0.5 and >= 0.5), and a weight outside [0, 1].
  for (double w : {0.3, 0.7, 1.5}) {
    check_case({"lerp weight " + std::to_string(w), {kAny, kAny}, [w](auto& x) { return lerp(x[0], x[1], w); },
                [w](Tensor& s, auto& o) { s.lerp_(o[0], w); }});
  }
}

TEST(GradPointwise, AddcmulAddcdiv) {
  manual_seed(12);
  check_case({"addcmul", {kAny, kAny, kAny}, [](auto& x) { return addcmul(x[0], x[1], x[2], 0.5); },
              [](Tensor& s, auto& o) { s.addcmul_(o[0], o[1], 0.5); }});
  check_case({"addcmul value 1", {kAny, kAny, kAny}, [](auto& x) { return addcmul(x[0], x[1], x[2]); },
              [](Tensor& s, auto& o) { s.addcmul_(o[0], o[1]); }});
  check_case({"addcdiv", {kAny, kAny, kAwayFromZero}, [](auto& x) { return addcdiv(x[0], x[1], x[2], -2.0); },
              [](Tensor& s, auto& o) { s.addcdiv_(o[0], o[1], -2.0); }});
  check_case({"addcdiv value 1", {kAny, kAny, kAwayFromZero}, [](auto& x) { return addcdiv(x[0], x[1], x[2]); },
              [](Tensor& s, auto& o) { s.addcdiv_(o[0], o[1]); }});
}

// ---------------------------------------------------------------- dtypes, non-differentiable ops
TEST(GradPointwise, GradientsTakeTheInputDtype) {
  // float32 self with a float64 other: the result is float64, self's gradient float32.
  Tensor a = tensor({1.5f, -2.0f, 4.0f}).requires_grad_();
  Tensor b = tensor({2.0, 0.5, -4.0}, kFloat64).requires_grad_();
  Tensor y = div(a, b);
  EXPECT_EQ(y.dtype(), kFloat64);
  auto g = autograd::grad({y}, {a, b}, {ones({3}, kFloat64)});
  EXPECT_EQ(g[0].dtype(), kFloat32);
  EXPECT_EQ(g[1].dtype(), kFloat64);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{0.5, 2.0, -0.25}));
  EXPECT_EQ(vals(g[1]), (std::vector<double>{-0.375, 8.0, -0.25}));
  // Integer operands get no gradient and do not stop the float one.
  Tensor n = tensor({2, 4, -1});
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  auto gx = autograd::grad({pow(x, n) + x / n + atan2(x, n)}, {x}, {ones({3}, kFloat64)});
  std::vector<double> want = {2.0 * 1 + 0.5 + 2.0 / 5.0, 4.0 * 8 + 0.25 + 4.0 / 20.0, -1.0 / 9 - 1.0 + -1.0 / 10.0};
  auto got = vals(gx[0]);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  // Reduced-precision floats: the gradient has the input's dtype.
  for (DType t : {kFloat16, kBFloat16}) {
    Tensor h = tensor({1.0, 2.0, 4.0}, t).requires_grad_();
    Tensor z = pow(h, 2) / 4.0 + maximum(h, tensor({2.0, 2.0, 2.0}, t));
    auto gh = autograd::grad({z}, {h}, {ones({3}, t)});
    EXPECT_EQ(gh[0].dtype(), t);
    EXPECT_EQ(vals(gh[0]), (std::vector<double>{0.5, 1.5, 3.0}));
  }
}

TEST(GradPointwise, ComparisonsLogicalBitwiseAreNotDifferentiable) {
  Tensor a = tensor({1.0, -2.0, 3.0}, kFloat64).requires_grad_();
  Tensor b = tensor({1.0, 2.0, -3.0}, kFloat64).requires_grad_();
  for (const Tensor& r : {eq(a, b), ne(a, b), lt(a, b), le(a, b), gt(a, b), ge(a, b), logical_and(a, b),
                          logical_or(a, b), logical_xor(a, b), a > 0.0}) {
    EXPECT_EQ(r.dtype(), kBool);
    EXPECT_FALSE(r.requires_grad());
    EXPECT_EQ(r.grad_fn(), nullptr);
  }
}

TEST(GradPointwise, InplaceAfterSavedResultRaises) {
  // hypot saves its result; changing it in place before backward is an error (as PyTorch).
  Tensor x = tensor({3.0, 5.0}, kFloat64).requires_grad_();
  Tensor y = x * 1.0;
  y.hypot_(tensor({4.0, 12.0}, kFloat64));
  y.mul_(2.0);
  EXPECT_THROW(autograd::grad({y}, {x}, {ones({2}, kFloat64)}), RuntimeError);
  // pow does not save its result: a later in-place op is fine (PyTorch agrees for pow_(2)).
  Tensor z = x * 1.0;
  z.pow_(2.0);
  z.mul_(3.0);
  auto g = autograd::grad({z}, {x}, {ones({2}, kFloat64)});
  EXPECT_EQ(vals(g[0]), (std::vector<double>{18.0, 30.0}));
}

// ---------------------------------------------------------------- PyTorch gradients
namespace {

// clang-format off  (generated by tests/oracle/gen_grad_pointwise.py)
const std::map<std::string, std::vector<std::vector<double>>> kExpected = {
    {"maximum_ties", {{0.5, 2.0, 1.5, 0.0, 2.5}, {0.5, 0.0, 1.5, 4.0, 2.5}}},
    {"minimum_ties", {{0.5, 0.0, 1.5, 4.0, 2.5}, {0.5, 2.0, 1.5, 0.0, 2.5}}},
    {"maximum_broadcast_ties", {{0.5, 6.5}, {0.5, 4.5, 9.0}}},
    {"maximum_nan", {{1.0, 2.0, 3.0, 4.0}, {0.0, 2.0, 3.0, 4.0}}},
    {"fmax_nan_ties", {{1.0, 0.0, 3.0, 4.0, 5.0}, {0.0, 2.0, 0.0, 0.0, 0.0}}},
    {"fmin_nan_ties", {{1.0, 0.0, 3.0, 4.0, 0.0}, {0.0, 2.0, 0.0, 0.0, 5.0}}},
    {"pow_at_zero_self", {{0.0, 0.0, 0.0, 10.392304845413264, kInf, 72.0, -kInf}}},
    {"pow_at_zero_both", {{0.0, 0.0, 0.0, 10.392304845413264, kInf, 72.0, -kInf}, {0.0, 0.0, 2.0794415416798357, 22.834227621512305, 0.0, kNaN, -kInf}}},
    {"pow_scalar_exponents", {{0.0, 10.0, 24.0, 7.0}, {-47.0, -2.0, 0.26516504294495513, -31.112698372208094}}},
    {"pow_scalar_base", {{0.6931471805599453, 2.772588722239781, 1.0397207708399179, 15.684130295496756}, {0.0, 0.0, -kInf, 0.0}}},
    {"div_modes", {{1.4285714285714286, 2.2222222222222223, -2.3076923076923075}, {-3.0612244897959187, 6.172839506172839, -5.325443786982248}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}},
    {"div_broadcast_scalar", {{1.3431013431013437, 6.654456654456654}, {-1.811224489795915, -3.805555555555557, -2.187869822485208}}},
    {"remainder_fmod", {{1.0, 2.0, 3.0, 4.0}, {-2.0, 6.0, 9.0, -8.0}, {1.0, 2.0, 3.0, 4.0}, {-2.0, 4.0, 6.0, -8.0}, {-3.0, -6.0, 12.0, 16.0}, {2.0, 4.0, 6.0, 8.0}}},
    {"atan2_hypot", {{2.258823529411765, 0.27941787941787943}, {1.4461538461538463, 0.9647058823529411, -0.9081081081081086}, {3.6155664185723717, -12.246564720344237}, {3.1132279759008323, -5.940285000290664, 2.328034710332018}}},
    {"where_broadcast", {{4.0, 6.0}, {4.0, 7.0, 0.0}}},
    {"lerp_weights", {{0.7, 1.4, 2.0999999999999996}, {0.3, 0.6, 0.8999999999999999}, {0.30000000000000004, 0.6000000000000001, 0.9000000000000001}, {0.7, 1.4, 2.0999999999999996}, {0.8, 0.8, -1.5}, {0.2, 1.2, 4.5}, {3.0, -6.0, -7.5}}},
    {"addcmul_addcdiv", {{5.0, 7.0, 9.0}, {2.375, 6.5}, {-2.75, -3.25, -3.75}, {5.0, 7.0, 9.0}, {2.1999999999999993, 6.399999999999999}, {-2.75, -52.0, -9.6}, {1.375, 26.0, 4.8}}},
    {"double_backward", {{46.95490427282396, -23.887952189793758, 9254.934729448772}, {3.804203146119469, 44.306317180460525, 4042.244325015637}}},
    {"inplace_chain", {{0.33212483067055876, 3.0321156584290607, 0.5451418850975116}, {0.8865834970777879, 2.628111569234361, -3.2589975363832}}},
    {"inplace_where_view", {{0.5, -0.0, 450.0, 8.0, -5.0, 20.25}, {3.875, -8.0, -2128.5}}},
};
// clang-format on

Tensor T(std::initializer_list<double> v) { return tensor(v, kFloat64).requires_grad_(); }
Tensor T2(std::initializer_list<std::initializer_list<double>> v) { return tensor(v, kFloat64).requires_grad_(); }
Tensor C(std::initializer_list<double> v) { return tensor(v, kFloat64); }
Tensor C2(std::initializer_list<std::initializer_list<double>> v) { return tensor(v, kFloat64); }

std::vector<Tensor> grads(const Tensor& out, const std::vector<Tensor>& inputs, const Tensor& gout,
                          bool create_graph = false) {
  return autograd::grad({out}, inputs, {gout}, std::nullopt, create_graph);
}
std::vector<Tensor> concat(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Compares gradients with PyTorch's: equal infinities and NaNs, else within 1e-10 relative.
void expect_torch(const std::string& name, const std::vector<Tensor>& got) {
  const auto& want = kExpected.at(name);
  ASSERT_EQ(got.size(), want.size()) << name;
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_TRUE(got[k].defined()) << name << " gradient " << k;
    std::vector<double> g = vals(got[k]);
    ASSERT_EQ(g.size(), want[k].size()) << name << " gradient " << k;
    for (size_t i = 0; i < g.size(); ++i) {
      const double w = want[k][i];
      if (std::isnan(w)) EXPECT_TRUE(std::isnan(g[i])) << name << " gradient " << k << " element " << i << ": " << g[i];
      else if (std::isinf(w)) EXPECT_EQ(g[i], w) << name << " gradient " << k << " element " << i;
      else EXPECT_NEAR(g[i], w, 1e-12 + 1e-10 * std::fabs(w)) << name << " gradient " << k << " element " << i;
    }
  }
}

}  // namespace

TEST(GradPointwiseTorch, MaximumMinimumTiesSplitTheGradient) {
  Tensor g = C({1., 2., 3., 4., 5.});
  {
    Tensor a = T({1., 2., 3., 4., -1.}), b = T({1., 0., 3., 5., -1.});
    expect_torch("maximum_ties", grads(maximum(a, b), {a, b}, g));
    expect_torch("minimum_ties", grads(minimum(a, b), {a, b}, g));
  }
  Tensor a = T2({{1.}, {2.}}), b = T({1., 2., 3.});
  expect_torch("maximum_broadcast_ties", grads(maximum(a, b), {a, b}, C2({{1., 2., 3.}, {4., 5., 6.}})));
}

TEST(GradPointwiseTorch, NanOperands) {
  {
    Tensor a = T({1., kNaN, 2., kNaN}), b = T({0., 1., kNaN, kNaN});
    expect_torch("maximum_nan", grads(maximum(a, b), {a, b}, C({1., 2., 3., 4.})));
  }
  Tensor a = T({1., kNaN, 2., kNaN, 3.}), b = T({1., 1., kNaN, kNaN, 0.});
  Tensor g = C({1., 2., 3., 4., 5.});
  expect_torch("fmax_nan_ties", grads(fmax(a, b), {a, b}, g));
  expect_torch("fmin_nan_ties", grads(fmin(a, b), {a, b}, g));
}

TEST(GradPointwiseTorch, PowAtZero) {
  Tensor x = T({0., 0., 2., 3., 0., -2., 0.});
  Tensor g = C({1., 2., 3., 4., 5., 6., 7.});
  expect_torch("pow_at_zero_self", grads(pow(x, C({0., 2., 0., 1.5, 0.5, 3., -1.})), {x}, g));
  Tensor e = T({0., 2., 0., 1.5, 0.5, 3., -1.});
  if (log_registered()) {
    expect_torch("pow_at_zero_both", grads(pow(x, e), {x, e}, g));
  } else {
    EXPECT_THROW(grads(pow(x, e), {x, e}, g), NotImplementedError);
  }
}

TEST(GradPointwiseTorch, PowNumberOperands) {
  Tensor x = T({0., 1., -2., 0.5}), z = T({0.25, 1., 2., 0.5});
  expect_torch("pow_scalar_exponents",
               grads(pow(x, 0) + pow(x, 3) + pow(x, 2) + pow(z, -1.5) + pow(z, 0.5), {x, z}, C({1., 2., 3., 4.})));
  Tensor y = T({0., 1., -1., 2.5});
  Tensor g = C({1., 2., 3., 4.});
  expect_torch("pow_scalar_base", concat(grads(pow(2.0, y), {y}, g), grads(pow(0.0, y), {y}, g)));
}

TEST(GradPointwiseTorch, Division) {
  {
    Tensor a = T({1.5, -2.5, 3.0}), b = T({0.7, 0.9, -1.3});
    Tensor g = C({1., 2., 3.});
    expect_torch("div_modes", concat(concat(grads(div(a, b), {a, b}, g), grads(div(a, b, "floor"), {a, b}, g)),
                                  grads(div(a, b, "trunc"), {a, b}, g)));
  }
  Tensor a = T2({{1.5}, {-2.5}}), b = T({0.7, 0.9, -1.3});
  expect_torch("div_broadcast_scalar", grads(a / b + b / 4.0 + 2.0 / b, {a, b}, C2({{1., 2., 3.}, {4., 5., 6.}})));
}

TEST(GradPointwiseTorch, RemainderFmod) {
  Tensor a = T({5.5, -5.5, 5.5, -5.5}), b = T({2., 2., -2., -2.});
  Tensor g = C({1., 2., 3., 4.});
  std::vector<Tensor> r = grads(remainder(a, b), {a, b}, g);
  r = concat(r, grads(fmod(a, b), {a, b}, g));
  r = concat(r, grads(remainder(7.0, b), {b}, g));
  r = concat(r, grads(remainder(a, 1.5) + fmod(a, -1.5), {a}, g));
  expect_torch("remainder_fmod", r);
}

TEST(GradPointwiseTorch, Atan2Hypot) {
  Tensor y = T2({{0.5}, {-1.5}}), x = T({1.0, -2.0, 0.25});
  Tensor g = C2({{1., 2., 3.}, {4., 5., 6.}});
  expect_torch("atan2_hypot", concat(grads(atan2(y, x), {y, x}, g), grads(hypot(y, x), {y, x}, g)));
}

TEST(GradPointwiseTorch, WhereLerpAddc) {
  {
    Tensor cond = tensor({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}) > 0.5;
    Tensor a = T2({{1.}, {2.}}), b = T({3., 4., 5.});
    expect_torch("where_broadcast", grads(where(cond, a, b), {a, b}, C2({{1., 2., 3.}, {4., 5., 6.}})));
  }
  {
    Tensor s = T({1., 2., 3.}), e = T({4., -1., 0.5}), w = T({0.2, 0.6, 1.5});
    Tensor g = C({1., 2., 3.});
    expect_torch("lerp_weights", concat(concat(grads(lerp(s, e, 0.3), {s, e}, g), grads(lerp(s, e, 0.7), {s, e}, g)),
                                     grads(lerp(s, e, w), {s, e, w}, g)));
  }
  Tensor s = T({1., 2., 3.}), t1 = T2({{0.5}, {-1.5}}), t2 = T({2., -0.5, 1.25});
  Tensor g = C2({{1., 2., 3.}, {4., 5., 6.}});
  expect_torch("addcmul_addcdiv", concat(concat(grads(addcmul(s, t1, t2, 0.5), {s, t1, t2}, g),
                                          grads(addcdiv(s, t1, t2, -2.0), {s, t1, t2}, g)),
                                      grads(addcdiv(s, t1, t2), {t2}, g)));
}

TEST(GradPointwiseTorch, DoubleBackward) {
  Tensor x = T({0.5, 1.5, 2.0}), y = T({1.2, -0.7, 2.2});
  Tensor f = pow(x, 3) * y + atan2(x, y) + x / y + hypot(x, y) + maximum(x * x, y) + remainder(x * y, 0.75) +
             lerp(x, y, 0.25) + addcdiv(x, y, x + 2.0, 0.5);
  auto g = grads(f, {x, y}, C({1., 2., 3.}), /*create_graph=*/true);
  Tensor h = g[0] * g[0] * C({1., -1., 0.5}) + g[1] * x;
  expect_torch("double_backward", grads(h, {x, y}, C({1., 1., 1.})));
}

TEST(GradPointwiseTorch, InplaceChains) {
  {
    Tensor x = T({0.5, 1.5, 2.5}), b = T({2., -1., 0.5});
    Tensor y = x * 1.0;
    y.div_(b);
    y.pow_(2);
    y.lerp_(b, 0.25);
    y.addcmul_(x, b, 0.5);
    y.atan2_(b);
    y.addcdiv_(x, b);
    y.remainder_(b);
    y.fmod_(b * 3.0);
    y.hypot_(b);
    expect_torch("inplace_chain", grads(y, {x, b}, C({1., 2., 3.})));
  }
  Tensor x = T2({{0.5, 1.5, 2.5}, {1.0, -2.0, 3.0}}), b = T({2., -1., 0.5});
  Tensor y = x * 1.0;
  y.select(0, 1).mul_(b);
  y.select(0, 0).div_(b);
  y.select(1, 2).pow_(3);
  Tensor z = where(y > 0.0, y, b);
  expect_torch("inplace_where_view", grads(z, {x, b}, C2({{1., 2., 3.}, {4., 5., 6.}})));
}
