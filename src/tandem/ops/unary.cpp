// Unary elementwise ops. Each op: schema + promotion rule + meta (dtype checks) + a CPU
// kernel built from kernels::unary_kernel with a small inlinable lambda; the registry
// derives the in-place variant ("exp_") from `inplace_variant`. Activations and clamping
// live in unary_nn.cpp.
//
// Kernel lambdas take and return opmath values (float for float16/bfloat16) and are
// written branch-free where possible (ternaries, no calls) so that the contiguous loop
// in unary_kernel vectorises.
#include "tandem/ops/unary.h"

#include "tandem/ops/unary_impl.h"

namespace tandem {

using namespace unary_detail;


// ---------------------------------------------------------------- backward rules
// x: the saved input, y: the saved output (per each op's save bits), g: the gradient.
namespace {
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

#define TANDEM_UNARY_GRAD(ident, expr)                                                 \
  Grads ident##_backward(BackwardContext& c) {                                         \
    return unary_grad(c, [](BackwardContext& c, const Tensor& g) -> Tensor {           \
      [[maybe_unused]] const Tensor& x = c.inputs[0];                                  \
      [[maybe_unused]] const Tensor& y = c.outputs[0];                                 \
      return expr;                                                                     \
    });                                                                                \
  }
TANDEM_UNARY_GRAD(neg, g * Scalar(-1))
TANDEM_UNARY_GRAD(abs, g * sign(x))
TANDEM_UNARY_GRAD(zero, zero_grad(c))  // sign, floor, ceil, trunc, round: piecewise constant
TANDEM_UNARY_GRAD(frac, g)
TANDEM_UNARY_GRAD(square, g * (x * Scalar(2)))
TANDEM_UNARY_GRAD(exp, g * y)
TANDEM_UNARY_GRAD(exp2, g * (y * Scalar(kLn2)))
TANDEM_UNARY_GRAD(expm1, g * (y + Scalar(1)))
TANDEM_UNARY_GRAD(log, g / x)
TANDEM_UNARY_GRAD(log2, g / (x * Scalar(kLn2)))
TANDEM_UNARY_GRAD(log10, g / (x * Scalar(kLn10)))
TANDEM_UNARY_GRAD(log1p, g / (x + Scalar(1)))
TANDEM_UNARY_GRAD(sqrt, g / (y * Scalar(2)))
TANDEM_UNARY_GRAD(rsqrt, g * (y * y * y) * Scalar(-0.5))
TANDEM_UNARY_GRAD(reciprocal, g * (y * y) * Scalar(-1))
TANDEM_UNARY_GRAD(sin, g * cos(x))
TANDEM_UNARY_GRAD(cos, g * sin(x) * Scalar(-1))
TANDEM_UNARY_GRAD(tan, g * (y * y + Scalar(1)))
TANDEM_UNARY_GRAD(asin, g / sqrt(Scalar(1) - x * x))
TANDEM_UNARY_GRAD(acos, g / sqrt(Scalar(1) - x * x) * Scalar(-1))
TANDEM_UNARY_GRAD(atan, g / (x * x + Scalar(1)))
TANDEM_UNARY_GRAD(sinh, g * cosh(x))
TANDEM_UNARY_GRAD(cosh, g * sinh(x))
TANDEM_UNARY_GRAD(tanh, g * (Scalar(1) - y * y))
TANDEM_UNARY_GRAD(erf, g * (exp(x * x * Scalar(-1)) * Scalar(kTwoOverSqrtPi)))
TANDEM_UNARY_GRAD(erfc, g * (exp(x * x * Scalar(-1)) * Scalar(-kTwoOverSqrtPi)))
TANDEM_UNARY_GRAD(sigmoid, g * (y * (Scalar(1) - y)))
// nan_to_num: the gradient flows only through finite elements (PyTorch: grad * isfinite(x)).
TANDEM_UNARY_GRAD(nan_to_num, where(isfinite(x), g, Scalar(0)))
#undef TANDEM_UNARY_GRAD

// logit: g / (x (1 - x)); with eps, zero outside [eps, 1 - eps] (the clamped region); without,
// NaN outside [0, 1] (as PyTorch).
Grads logit_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) -> Tensor {
    const Tensor& x = c.inputs[0];
    const std::optional<double> eps = c.attrs.opt_f(0);
    Tensor d = g / (x * (Scalar(1) - x));
    if (!eps || *eps < 0)
      return where(logical_or(x < Scalar(0), x > Scalar(1)), Scalar(std::numeric_limits<double>::quiet_NaN()), d);
    return where(logical_or(x < Scalar(*eps), x > Scalar(1 - *eps)), Scalar(0), d);
  });
}
}  // namespace

// ---------------------------------------------------------------- sign and magnitude
TANDEM_REGISTER_OP(neg) {
  OpDef d = unary_def("neg", Promotion::Default);
  d.meta = [](MetaContext& c) {
    ops::require_not_bool(c.op, c.common_dtype,
                          "expected a numeric dtype (negation of a bool tensor is not supported; use logical_not)");
    ops::same_as_input_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) { numeric_kernel(c, [](auto x) { return wrap_neg(x); }); };
  d.backward = neg_backward;
  return d;
}

TANDEM_REGISTER_OP(abs) {
  OpDef d = unary_def("abs", Promotion::Default);
  d.meta = numeric_meta;
  d.cpu_kernel = [](KernelContext& c) {
    numeric_kernel(c, [](auto x) {
      using M = decltype(x);
      if constexpr (std::is_floating_point_v<M>) return std::abs(x);
      else if constexpr (std::is_unsigned_v<M>) return x;
      else return x < M(0) ? wrap_neg(x) : x;
    });
  };
  d.backward = abs_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(sign) {
  OpDef d = unary_def("sign", Promotion::Default);
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    if (out.dtype() == kBool) return copy_unless_same(out, c.inputs[0]);
    numeric_kernel(c, [](auto x) {
      using M = decltype(x);
      if constexpr (std::is_unsigned_v<M>) return static_cast<M>(x != M(0));
      // (0 < x) - (x < 0): NaN and -0.0 give +0, as PyTorch.
      else return static_cast<M>(static_cast<M>(M(0) < x) - static_cast<M>(x < M(0)));
    });
  };
  d.backward = zero_backward;
  return d;
}

TANDEM_REGISTER_OP(square) {
  OpDef d = unary_def("square", Promotion::None);
  d.meta = [](MetaContext& c) {
    // torch.square is pow(x, 2): bool is promoted to int64.
    TensorMeta m;
    m.dtype = c.inputs[0].dtype == kBool ? kInt64 : c.inputs[0].dtype;
    m.sizes = c.inputs[0].sizes.vec();
    c.outputs.push_back(std::move(m));
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Tensor& in = c.inputs[0];
    if (in.dtype() == kBool) {
      kernels::unary_kernel<int64_t, bool>(out, in, [](bool x) { return static_cast<int64_t>(x); });
      return;
    }
    numeric_kernel(c, [](auto x) { return wrap_mul(x, x); });
  };
  d.backward = square_backward;
  d.save_inputs = 1;
  return d;
}

// ---------------------------------------------------------------- exp, log, powers
// cast: the op's autocast policy (None, or Float32 for PyTorch's fp32 list).
#define TANDEM_FLOAT_UNARY(ident, expr, save_in, save_out, cast)                       \
  TANDEM_REGISTER_OP(ident) {                                                          \
    OpDef d = unary_def(#ident, Promotion::IntToFloat);                                \
    d.autocast = Autocast::cast;                                                       \
    d.cpu_kernel = [](KernelContext& c) { floating_kernel(c, [](auto x) { return expr; }); }; \
    d.save_inputs = save_in;                                                           \
    d.save_outputs = save_out;                                                         \
    d.backward = ident##_backward;                                                     \
    return d;                                                                          \
  }

TANDEM_FLOAT_UNARY(exp, vexp(x), 0, 1, Float32)
TANDEM_FLOAT_UNARY(exp2, std::exp2(x), 0, 1, None)
TANDEM_FLOAT_UNARY(expm1, std::expm1(x), 0, 1, Float32)
TANDEM_FLOAT_UNARY(log, vlog(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(log2, std::log2(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(log10, std::log10(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(log1p, std::log1p(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(sqrt, std::sqrt(x), 0, 1, None)
TANDEM_FLOAT_UNARY(rsqrt, decltype(x)(1) / std::sqrt(x), 0, 1, Float32)
TANDEM_FLOAT_UNARY(reciprocal, decltype(x)(1) / x, 0, 1, Float32)
TANDEM_FLOAT_UNARY(sin, std::sin(x), 1, 0, None)
TANDEM_FLOAT_UNARY(cos, std::cos(x), 1, 0, None)
TANDEM_FLOAT_UNARY(tan, std::tan(x), 0, 1, Float32)
TANDEM_FLOAT_UNARY(asin, std::asin(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(acos, std::acos(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(atan, std::atan(x), 1, 0, None)
TANDEM_FLOAT_UNARY(sinh, std::sinh(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(cosh, std::cosh(x), 1, 0, Float32)
TANDEM_FLOAT_UNARY(tanh, vtanh(x), 0, 1, None)
TANDEM_FLOAT_UNARY(erf, verf(x), 1, 0, None)
TANDEM_FLOAT_UNARY(erfc, std::erfc(x), 1, 0, None)
TANDEM_FLOAT_UNARY(sigmoid, vsigmoid(x), 0, 1, None)
#undef TANDEM_FLOAT_UNARY

TANDEM_REGISTER_OP(logit) {
  OpDef d = unary_def("logit", Promotion::IntToFloat);
  d.attrs = {{"eps", std::monostate{}}};
  d.cpu_kernel = [](KernelContext& c) {
    const std::optional<double> eps = c.attrs.opt_f(0);
    if (!eps || *eps < 0) {
      floating_kernel(c, [](auto x) { return vlog(x / (decltype(x)(1) - x)); });
      return;
    }
    floating_kernel_p(c, [&]<typename M>() {
      const M lo = static_cast<M>(*eps), hi = M(1) - lo;
      return [lo, hi](M x) {
        const M z = x < lo ? lo : (x > hi ? hi : x);
        return vlog(z / (M(1) - z));
      };
    });
  };
  d.backward = logit_backward;
  d.save_inputs = 1;
  return d;
}

// ---------------------------------------------------------------- rounding
#define TANDEM_ROUNDING_UNARY(ident, expr)                                               \
  TANDEM_REGISTER_OP(ident) {                                                            \
    OpDef d = unary_def(#ident, Promotion::Default);                                     \
    d.meta = numeric_meta;                                                               \
    d.cpu_kernel = [](KernelContext& c) {                                                \
      if (!is_floating_point(c.outputs[0].dtype())) return copy_unless_same(c.outputs[0], c.inputs[0]); \
      floating_kernel(c, [](auto x) { return expr; });                                   \
    };                                                                                   \
    d.backward = zero_backward;                                                          \
    return d;                                                                            \
  }

TANDEM_ROUNDING_UNARY(floor, vfloor(x))
TANDEM_ROUNDING_UNARY(ceil, vceil(x))
TANDEM_ROUNDING_UNARY(trunc, vtrunc(x))
#undef TANDEM_ROUNDING_UNARY

TANDEM_REGISTER_OP(round) {
  OpDef d = unary_def("round", Promotion::Default);
  d.attrs = {{"decimals", int64_t{0}}};
  d.meta = [](MetaContext& c) {
    numeric_meta(c);
    TANDEM_CHECK(is_floating_point(c.common_dtype) || c.attrs.i(0) == 0, TypeError, c.op, "got dtype ",
                 dtype_name(c.common_dtype), " with decimals=", c.attrs.i(0),
                 ", expected a floating dtype (integers can only be rounded with decimals=0)");
  };
  d.cpu_kernel = [](KernelContext& c) {
    if (!is_floating_point(c.outputs[0].dtype())) return copy_unless_same(c.outputs[0], c.inputs[0]);
    int64_t decimals = c.attrs.i(0);
    if (decimals == 0) {
      floating_kernel(c, [](auto x) { return std::nearbyint(x); });  // ties to even
      return;
    }
    const bool negative = decimals < 0;
    const double p = std::pow(10.0, static_cast<double>(negative ? -decimals : decimals));
    floating_kernel_p(c, [&]<typename M>() {
      const M scale = static_cast<M>(p);  // may be inf: PyTorch computes in the same type
      return [scale, negative](M x) {
        return negative ? std::nearbyint(x / scale) * scale : std::nearbyint(x * scale) / scale;
      };
    });
  };
  d.backward = zero_backward;
  return d;
}

TANDEM_REGISTER_OP(frac) {
  OpDef d = unary_def("frac", Promotion::Default);
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) { floating_kernel(c, [](auto x) { return x - vtrunc(x); }); };
  d.backward = frac_backward;
  return d;
}

// ---------------------------------------------------------------- nan_to_num
TANDEM_REGISTER_OP(nan_to_num) {
  OpDef d = unary_def("nan_to_num", Promotion::Default);
  d.attrs = {{"nan", std::monostate{}}, {"posinf", std::monostate{}}, {"neginf", std::monostate{}}};
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    if (!is_floating_point(out.dtype())) return copy_unless_same(out, c.inputs[0]);
    const auto nan = c.attrs.opt_f(0), posinf = c.attrs.opt_f(1), neginf = c.attrs.opt_f(2);
    TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), c.op, [&] {
      using M = kernels::opmath_t<scalar_t>;
      // Replacement values are converted to the tensor's dtype first (1e6 in float16 is inf).
      auto conv = [](double v) { return static_cast<M>(static_cast<scalar_t>(static_cast<M>(v))); };
      const M nv = nan ? conv(*nan) : M(0);
      const M pv = posinf ? conv(*posinf) : max_finite<scalar_t>();
      const M ngv = neginf ? conv(*neginf) : -max_finite<scalar_t>();
      const M inf = std::numeric_limits<M>::infinity();
      kernels::unary_kernel<scalar_t, scalar_t>(out, c.inputs[0], [=](M x) {
        return x != x ? nv : (x == inf ? pv : (x == -inf ? ngv : x));
      });
    });
  };
  d.backward = nan_to_num_backward;
  d.save_inputs = 1;
  return d;
}

// ---------------------------------------------------------------- predicates and logical
namespace {
template <typename F>
void predicate_kernel(KernelContext& c, bool int_value, F f) {
  const Tensor& out = c.outputs[0];
  const Tensor& in = c.inputs[0];
  if (!is_floating_point(in.dtype())) return kernels::fill_kernel(out, Scalar(int_value));
  TANDEM_DISPATCH_FLOATING_TYPES(in.dtype(), c.op, [&] { kernels::unary_kernel<bool, scalar_t>(out, in, f); });
}
OpDef predicate_def(const char* name) {
  OpDef d = unary_def(name, Promotion::None, /*inplace=*/false);
  d.inputs = {{"self", /*promote=*/true, /*optional=*/false, /*differentiable=*/false}};
  d.meta = ops::elementwise_bool_meta;
  d.output_differentiable = {false};
  return d;
}
}  // namespace

TANDEM_REGISTER_OP(isnan) {
  OpDef d = predicate_def("isnan");
  d.cpu_kernel = [](KernelContext& c) { predicate_kernel(c, false, [](auto x) { return x != x; }); };
  return d;
}

TANDEM_REGISTER_OP(isinf) {
  OpDef d = predicate_def("isinf");
  d.cpu_kernel = [](KernelContext& c) {
    predicate_kernel(c, false, [](auto x) { return std::abs(x) == std::numeric_limits<decltype(x)>::infinity(); });
  };
  return d;
}

TANDEM_REGISTER_OP(isfinite) {
  OpDef d = predicate_def("isfinite");
  d.cpu_kernel = [](KernelContext& c) {
    predicate_kernel(c, true, [](auto x) { return std::abs(x) < std::numeric_limits<decltype(x)>::infinity(); });
  };
  return d;
}

TANDEM_REGISTER_OP(logical_not) {
  OpDef d = predicate_def("logical_not");
  d.inplace_variant = true;  // logical_not_ writes 0/1 in self's dtype
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& in = c.inputs[0];
    TANDEM_DISPATCH_ALL_TYPES(in.dtype(), c.op, [&] {
      kernels::unary_kernel<bool, scalar_t>(c.outputs[0], in, [](auto x) { return !x; });
    });
  };
  return d;
}

TANDEM_REGISTER_OP(bitwise_not) {
  OpDef d = unary_def("bitwise_not", Promotion::Default);
  d.inputs = {{"self", /*promote=*/true, /*optional=*/false, /*differentiable=*/false}};
  d.output_differentiable = {false};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(is_integral(c.common_dtype, /*include_bool=*/true), TypeError, c.op, "got dtype ",
                 dtype_name(c.common_dtype), ", expected an integral or bool dtype");
    ops::same_as_input_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    TANDEM_DISPATCH_INTEGRAL_TYPES(out.dtype(), c.op, [&] {
      kernels::unary_kernel<scalar_t, scalar_t>(out, c.inputs[0], [](auto x) {
        if constexpr (std::is_same_v<decltype(x), bool>) return !x;
        else return static_cast<decltype(x)>(~x);
      });
    });
  };
  return d;
}

// ---------------------------------------------------------------- functional API
#define TANDEM_UNARY_FN(ident)                                                            \
  Tensor ident(const Tensor& self) { return dispatch1(op_##ident(), {self}); }           \
  Tensor& ident##_(Tensor& self) {                                                        \
    dispatch(*op_##ident().inplace, {self});                                              \
    return self;                                                                          \
  }
TANDEM_UNARY_FN(neg)
TANDEM_UNARY_FN(abs)
TANDEM_UNARY_FN(sign)
TANDEM_UNARY_FN(square)
TANDEM_UNARY_FN(exp)
TANDEM_UNARY_FN(exp2)
TANDEM_UNARY_FN(expm1)
TANDEM_UNARY_FN(log)
TANDEM_UNARY_FN(log2)
TANDEM_UNARY_FN(log10)
TANDEM_UNARY_FN(log1p)
TANDEM_UNARY_FN(sqrt)
TANDEM_UNARY_FN(rsqrt)
TANDEM_UNARY_FN(reciprocal)
TANDEM_UNARY_FN(sin)
TANDEM_UNARY_FN(cos)
TANDEM_UNARY_FN(tan)
TANDEM_UNARY_FN(asin)
TANDEM_UNARY_FN(acos)
TANDEM_UNARY_FN(atan)
TANDEM_UNARY_FN(sinh)
TANDEM_UNARY_FN(cosh)
TANDEM_UNARY_FN(tanh)
TANDEM_UNARY_FN(erf)
TANDEM_UNARY_FN(erfc)
TANDEM_UNARY_FN(sigmoid)
TANDEM_UNARY_FN(floor)
TANDEM_UNARY_FN(ceil)
TANDEM_UNARY_FN(trunc)
TANDEM_UNARY_FN(frac)
TANDEM_UNARY_FN(logical_not)
TANDEM_UNARY_FN(bitwise_not)
#undef TANDEM_UNARY_FN

Tensor logit(const Tensor& self, std::optional<double> eps) { return dispatch1(op_logit(), {self}, {opt_attr(eps)}); }
Tensor& logit_(Tensor& self, std::optional<double> eps) {
  dispatch(*op_logit().inplace, {self}, {opt_attr(eps)});
  return self;
}
Tensor round(const Tensor& self, int64_t decimals) { return dispatch1(op_round(), {self}, {AttrValue(decimals)}); }
Tensor& round_(Tensor& self, int64_t decimals) {
  dispatch(*op_round().inplace, {self}, {AttrValue(decimals)});
  return self;
}
Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return dispatch1(op_nan_to_num(), {self}, {opt_attr(nan), opt_attr(posinf), opt_attr(neginf)});
}
Tensor& nan_to_num_(Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                    std::optional<double> neginf) {
  dispatch(*op_nan_to_num().inplace, {self}, {opt_attr(nan), opt_attr(posinf), opt_attr(neginf)});
  return self;
}
Tensor isnan(const Tensor& self) { return dispatch1(op_isnan(), {self}); }
Tensor isinf(const Tensor& self) { return dispatch1(op_isinf(), {self}); }
Tensor isfinite(const Tensor& self) { return dispatch1(op_isfinite(), {self}); }

Tensor operator-(const Tensor& self) { return neg(self); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::neg() const { return tandem::neg(*this); }
Tensor& Tensor::neg_() { return tandem::neg_(*this); }
Tensor Tensor::abs() const { return tandem::abs(*this); }
Tensor& Tensor::abs_() { return tandem::abs_(*this); }
Tensor Tensor::sign() const { return tandem::sign(*this); }
Tensor& Tensor::sign_() { return tandem::sign_(*this); }
Tensor Tensor::square() const { return tandem::square(*this); }
Tensor& Tensor::square_() { return tandem::square_(*this); }
Tensor Tensor::exp() const { return tandem::exp(*this); }
Tensor& Tensor::exp_() { return tandem::exp_(*this); }
Tensor Tensor::exp2() const { return tandem::exp2(*this); }
Tensor Tensor::expm1() const { return tandem::expm1(*this); }
Tensor Tensor::log() const { return tandem::log(*this); }
Tensor& Tensor::log_() { return tandem::log_(*this); }
Tensor Tensor::log2() const { return tandem::log2(*this); }
Tensor Tensor::log10() const { return tandem::log10(*this); }
Tensor Tensor::log1p() const { return tandem::log1p(*this); }
Tensor Tensor::sqrt() const { return tandem::sqrt(*this); }
Tensor& Tensor::sqrt_() { return tandem::sqrt_(*this); }
Tensor Tensor::rsqrt() const { return tandem::rsqrt(*this); }
Tensor Tensor::reciprocal() const { return tandem::reciprocal(*this); }
Tensor& Tensor::reciprocal_() { return tandem::reciprocal_(*this); }
Tensor Tensor::sin() const { return tandem::sin(*this); }
Tensor Tensor::cos() const { return tandem::cos(*this); }
Tensor Tensor::tan() const { return tandem::tan(*this); }
Tensor Tensor::asin() const { return tandem::asin(*this); }
Tensor Tensor::acos() const { return tandem::acos(*this); }
Tensor Tensor::atan() const { return tandem::atan(*this); }
Tensor Tensor::sinh() const { return tandem::sinh(*this); }
Tensor Tensor::cosh() const { return tandem::cosh(*this); }
Tensor Tensor::tanh() const { return tandem::tanh(*this); }
Tensor& Tensor::tanh_() { return tandem::tanh_(*this); }
Tensor Tensor::erf() const { return tandem::erf(*this); }
Tensor Tensor::erfc() const { return tandem::erfc(*this); }
Tensor Tensor::sigmoid() const { return tandem::sigmoid(*this); }
Tensor& Tensor::sigmoid_() { return tandem::sigmoid_(*this); }
Tensor Tensor::logit(std::optional<double> eps) const { return tandem::logit(*this, eps); }
Tensor Tensor::floor() const { return tandem::floor(*this); }
Tensor& Tensor::floor_() { return tandem::floor_(*this); }
Tensor Tensor::ceil() const { return tandem::ceil(*this); }
Tensor& Tensor::ceil_() { return tandem::ceil_(*this); }
Tensor Tensor::round(int64_t decimals) const { return tandem::round(*this, decimals); }
Tensor& Tensor::round_(int64_t decimals) { return tandem::round_(*this, decimals); }
Tensor Tensor::trunc() const { return tandem::trunc(*this); }
Tensor& Tensor::trunc_() { return tandem::trunc_(*this); }
Tensor Tensor::frac() const { return tandem::frac(*this); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) const {
  return tandem::nan_to_num(*this, nan, posinf, neginf);
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return tandem::nan_to_num_(*this, nan, posinf, neginf);
}
Tensor Tensor::isnan() const { return tandem::isnan(*this); }
Tensor Tensor::isinf() const { return tandem::isinf(*this); }
Tensor Tensor::isfinite() const { return tandem::isfinite(*this); }
Tensor Tensor::logical_not() const { return tandem::logical_not(*this); }
Tensor& Tensor::logical_not_() { return tandem::logical_not_(*this); }
Tensor Tensor::bitwise_not() const { return tandem::bitwise_not(*this); }
Tensor& Tensor::bitwise_not_() { return tandem::bitwise_not_(*this); }

}  // namespace tandem
