// Arithmetic binary ops beyond add/sub/mul: the division family (div with rounding modes,
// floor_divide, remainder, fmod), pow, maximum/minimum/fmax/fmin, atan2 and hypot.
// Comparisons/logical/bitwise ops live in pointwise_compare.cpp; where/lerp/addcmul/
// addcdiv in pointwise_ternary.cpp.
//
// Integer division and modulo check the divisor for zeros before the loop (the one data
// check kernels do; PyTorch raises "ZeroDivisionError") and define INT_MIN / -1 as the
// two's-complement wrap (INT_MIN, remainder 0) where PyTorch dies of SIGFPE.
#include <atomic>
#include <cmath>

#include "tandem/ops/pointwise.h"
#include "tandem/ops/pointwise_util.h"
#include "tandem/ops/unary.h"

namespace tandem {

namespace ops::pw {
void check_no_zero_divisor(const char* op, const Tensor& divisor, const Tensor& out) {
  if (out.numel() == 0 || divisor.numel() == 0) return;
  std::atomic<bool> zero{false};
  Tensor ops[1] = {divisor};
  auto it = kernels::ElementwiseIter::make(ArrayRef<Tensor>(ops, 1));
  TANDEM_DISPATCH_INTEGRAL_TYPES(divisor.dtype(), op, [&] {
    kernels::for_each(it, [&](char** p, const int64_t* st, int64_t n) {
      bool z = false;
      for (int64_t i = 0; i < n; ++i) {
        scalar_t v;
        std::memcpy(&v, p[0] + i * st[0], sizeof(scalar_t));
        z |= (v == scalar_t(0));
      }
      if (z) zero.store(true, std::memory_order_relaxed);
    });
  });
  TANDEM_CHECK(!zero.load(), ValueError, op, "ZeroDivisionError: integer division or modulo by zero");
}
}  // namespace ops::pw

using namespace ops;
using namespace ops::pw;

namespace {

// ---------------------------------------------------------------- scalar rules
// Integer rules. Only int32/int64 can overflow on INT_MIN / -1 (narrower types compute in
// int), but the -1 branch is cheap and keeps every type on the same well-defined path.
template <typename T>
T int_div_trunc(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
  }
  return static_cast<T>(a / b);
}
template <typename T>
T int_fmod(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}
template <typename T>
T int_div_floor(T a, T b) {
  T q = int_div_trunc(a, b);
  if constexpr (std::is_signed_v<T>) {
    T r = int_fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) q = static_cast<T>(q - 1);
  }
  return q;
}
template <typename T>
T int_remainder(T a, T b) {
  T r = int_fmod(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  }
  return r;
}

// Floating rules (M is the compute type: float or double).
template <typename M>
M float_div_floor(M a, M b) {
  // Python's a // b: exact floor of the true quotient, computed from fmod so that the
  // result is consistent with remainder(); b == 0 gives a / b (+-inf or nan).
  if (b == M(0)) return a / b;
  M mod = std::fmod(a, b);
  M div = (a - mod) / b;
  if (mod != M(0) && ((b < M(0)) != (mod < M(0)))) div -= M(1);
  if (div == M(0)) return std::copysign(M(0), a / b);
  M fl = std::floor(div);
  if (div - fl > M(0.5)) fl += M(1);
  return fl;
}
template <typename M>
M float_remainder(M a, M b) {
  M mod = std::fmod(a, b);
  if (mod != M(0) && ((b < M(0)) != (mod < M(0)))) mod += b;
  return mod;
}

/// base ** exp for integers, wrapping on overflow (computed modulo 2^64, then truncated).
template <typename T>
T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  uint64_t result = 1, b = static_cast<uint64_t>(static_cast<int64_t>(base));
  uint64_t e = static_cast<uint64_t>(exp);
  while (e) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
}

enum class Rounding { None, Trunc, Floor };

Rounding rounding_of(const char* op, const AttrReader& a) {
  if (a.is_none(0)) return Rounding::None;
  const std::string& m = a.str(0);
  if (m == "trunc") return Rounding::Trunc;
  if (m == "floor") return Rounding::Floor;
  throw ValueError(str_cat("[", op, "] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", m, "'"));
}

// ---------------------------------------------------------------- division kernels
void div_true_kernel(const Tensor& out, const Tensor& a_in, const Tensor& b_in) {
  // Integer/bool inputs divide in the (floating) result dtype, as torch.true_divide.
  Tensor a = cast_to(a_in, out.dtype()), b = cast_to(b_in, out.dtype());
  TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), "div", [&] {
    using M = opmath_t<scalar_t>;
    kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return x / y; });
  });
}

// Typed bodies are templates so that `if constexpr` drops the branches a dtype can't take
// (outside a template both branches would be compiled for every dtype).
enum class IntRule { Trunc, Floor, Remainder, Fmod };
template <typename T, IntRule R>
void int_division_typed(const Tensor& out, const Tensor& a, const Tensor& b) {
  if constexpr (!std::is_same_v<T, bool>) {
    kernels::binary_kernel<T, T>(out, a, b, [](T x, T y) {
      if constexpr (R == IntRule::Trunc) return int_div_trunc(x, y);
      else if constexpr (R == IntRule::Floor) return int_div_floor(x, y);
      else if constexpr (R == IntRule::Remainder) return int_remainder(x, y);
      else return int_fmod(x, y);
    });
  }
}
template <IntRule R>
void int_division(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  check_no_zero_divisor(op, b, out);
  TANDEM_DISPATCH_INTEGRAL_TYPES(out.dtype(), op, [&] { int_division_typed<scalar_t, R>(out, a, b); });
}

void div_rounding_kernel(const char* op, Rounding r, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (is_integral(out.dtype())) {
    if (r == Rounding::Trunc) int_division<IntRule::Trunc>(op, out, a, b);
    else int_division<IntRule::Floor>(op, out, a, b);
    return;
  }
  TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), op, [&] {
    using M = opmath_t<scalar_t>;
    if (r == Rounding::Trunc)
      kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return std::trunc(x / y); });
    else
      kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return float_div_floor(x, y); });
  });
}

void no_bool(MetaContext& c, const char* what) {
  TANDEM_CHECK(c.common_dtype != DType::Bool, TypeError, c.op, "got bool operands, expected numeric tensors (", what,
               " is not defined for bool)");
}

}  // namespace

// ---------------------------------------------------------------- backward rules
// PyTorch's derivatives (tools/autograd/derivatives.yaml, 1.13) written with tandem ops so
// they are differentiable again. Every gradient is reduced to its input's shape and dtype
// (ops::reduce_grad); integer/bool inputs never ask for one.
namespace {

using Grads = std::vector<Tensor>;

// div: grad / other and -grad * self / other^2 (as PyTorch: (self / other) / other); the
// rounding modes are piecewise constant, so their gradient is zero.
Grads div_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  Grads r(2);
  const bool rounding = !c.attrs.is_none(0);
  for (int i = 0; i < 2; ++i)
    if (c.needs_input_grad[i] && rounding) r[i] = zero_grad_like(c.input_metas[i]);
  if (rounding) return r;
  const Tensor &self = c.inputs[0], &other = c.inputs[1];
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g / other, c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(negated(g) * ((self / other) / other), c.input_metas[1]);
  return r;
}

// floor_divide: piecewise constant, zero gradient (PyTorch 1.13 raises "not implemented";
// tandem follows div(rounding_mode="floor"), which it equals).
Grads floor_divide_backward(BackwardContext& c) {
  Grads r(2);
  for (int i = 0; i < 2; ++i)
    if (c.needs_input_grad[i]) r[i] = zero_grad_like(c.input_metas[i]);
  return r;
}

// remainder = self - floor(self / other) * other; fmod = self - trunc(self / other) * other.
template <bool kFloor>
Grads modulo_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  Grads r(2);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g, c.input_metas[0]);
  if (c.needs_input_grad[1])
    r[1] = reduce_grad(negated(g) * div(c.inputs[0], c.inputs[1], kFloor ? "floor" : "trunc"), c.input_metas[1]);
  return r;
}

// pow: d/dself = exponent * self^(exponent - 1) (zero where exponent == 0, so that 0^0
// has gradient 0); d/dexponent = result * log(self), zero where self == 0 and exponent >= 0
// (PyTorch's choice at the boundary, where log(0) = -inf would give nan or -inf).
Grads pow_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor &self = c.inputs[0], &ex = c.inputs[1];
  Grads r(2);
  if (c.needs_input_grad[0]) {
    if (is_wrapped(ex)) {
      const Scalar e = wrapped_constant(ex);
      if (e.to_double() == 0.0) {
        r[0] = zero_grad_like(c.input_metas[0]);
      } else {
        const Scalar em1 = e.is_floating_point() ? Scalar(e.to_double() - 1.0) : Scalar(e.to_int() - 1);
        r[0] = reduce_grad(g * (pow(self, em1) * e), c.input_metas[0]);
      }
    } else {
      const Tensor e = ex.dtype() == DType::Bool ? ex.to(g.dtype()) : ex;  // bool has no `- 1`
      r[0] = reduce_grad(where(e == Scalar(0), Scalar(0), g * (e * pow(self, e - Scalar(1)))), c.input_metas[0]);
    }
  }
  if (c.needs_input_grad[1]) {
    // The result pow(self, ex) is recomputed rather than saved: pow_(2.0) followed by
    // another in-place op must not invalidate a saved output only this gradient reads.
    Tensor d;
    if (is_wrapped(self)) {
      // A C++ number base: log(base) is a constant. For base 0 the derivative is the
      // constant 0 (exponent >= 0) or -inf (0^e = inf times log 0), written without
      // `result` so that double backward gives 0, not 0 * inf = nan, where it is masked.
      const double b = wrapped_constant(self).to_double();
      d = b == 0.0 ? where(ex >= Scalar(0), Scalar(0), Scalar(-INFINITY)) : pow(self, ex) * Scalar(std::log(b));
    } else {
      // log(1) stands in for log(0) where the result is masked, for the same reason.
      Tensor masked = logical_and(self == Scalar(0), ex >= Scalar(0));
      d = where(masked, Scalar(0), pow(self, ex) * tandem::log(where(masked, Scalar(1), self)));
    }
    r[1] = reduce_grad(g * d, c.input_metas[1]);
  }
  return r;
}

// maximum/minimum: the gradient goes to the larger (smaller) operand; ties split it in
// halves, as PyTorch. NaN compares false everywhere, so both operands get the gradient.
template <bool kMax>
Grads minmax_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor &self = c.inputs[0], &other = c.inputs[1];
  Grads r(2);
  Tensor split = where(self == other, g / Scalar(2), g);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(where(kMax ? self < other : self > other, Scalar(0), split), c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(where(kMax ? self > other : self < other, Scalar(0), split), c.input_metas[1]);
  return r;
}

// fmax/fmin: the whole gradient goes to self where self wins or ties or other is NaN, else
// to other (no split at ties, as PyTorch).
template <bool kMax>
Grads fminmax_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor &self = c.inputs[0], &other = c.inputs[1];
  Grads r(2);
  Tensor to_self = logical_or(kMax ? self >= other : self <= other, other != other);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(where(to_self, g, Scalar(0)), c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(where(to_self, Scalar(0), g), c.input_metas[1]);
  return r;
}

// atan2(y, x): dy = x / (x^2 + y^2), dx = -y / (x^2 + y^2).
Grads atan2_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor &self = c.inputs[0], &other = c.inputs[1];
  Grads r(2);
  Tensor denom = self * self + other * other;
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g * other / denom, c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(negated(g) * self / denom, c.input_metas[1]);
  return r;
}

// hypot: d/dself = self / result, d/dother = other / result.
Grads hypot_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor& result = c.outputs[0];
  Grads r(2);
  for (int i = 0; i < 2; ++i)
    if (c.needs_input_grad[i]) r[i] = reduce_grad(g * c.inputs[i] / result, c.input_metas[i]);
  return r;
}

}  // namespace

// ---------------------------------------------------------------- division family
TANDEM_REGISTER_OP(div) {
  OpDef d = binary_def(
      "div", Promotion::Default,
      [](MetaContext& c) {
        Rounding r = rounding_of(c.op, c.attrs);
        if (r != Rounding::None) no_bool(c, "rounding division");
        elementwise_meta(c);
        // True division of bool/integers gives the default float dtype (IntToFloat), but
        // with a rounding mode the result keeps the promoted dtype: one op, two rules.
        if (r == Rounding::None && !is_floating_point(c.common_dtype)) c.outputs[0].dtype = default_float_dtype();
      },
      [](KernelContext& c) {
        Rounding r = rounding_of(c.op, c.attrs);
        if (r == Rounding::None) div_true_kernel(c.outputs[0], c.inputs[0], c.inputs[1]);
        else div_rounding_kernel(c.op, r, c.outputs[0], c.inputs[0], c.inputs[1]);
      });
  d.attrs = {{"rounding_mode", std::monostate{}}};
  d.backward = div_backward;
  d.save_inputs = 0b11;
  d.raises_on_data = true;  // integer division by zero
  return d;
}

TANDEM_REGISTER_OP(floor_divide) {
  OpDef d = binary_def(
      "floor_divide", Promotion::Default,
      [](MetaContext& c) {
        no_bool(c, "floor division");
        elementwise_meta(c);
      },
      [](KernelContext& c) { div_rounding_kernel(c.op, Rounding::Floor, c.outputs[0], c.inputs[0], c.inputs[1]); });
  d.backward = floor_divide_backward;
  d.save_inputs = 0;  // piecewise constant: zero gradient
  d.raises_on_data = true;  // integer division by zero
  return d;
}

TANDEM_REGISTER_OP(remainder) {
  OpDef d = binary_def(
      "remainder", Promotion::Default,
      [](MetaContext& c) {
        no_bool(c, "remainder");
        elementwise_meta(c);
      },
      [](KernelContext& c) {
        const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
        if (is_integral(out.dtype())) {
          int_division<IntRule::Remainder>(c.op, out, a, b);
          return;
        }
        TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), c.op, [&] {
          using M = opmath_t<scalar_t>;
          kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return float_remainder(x, y); });
        });
      });
  d.backward = modulo_backward<true>;
  d.save_inputs = 0b11;
  d.raises_on_data = true;  // integer division by zero
  return d;
}

TANDEM_REGISTER_OP(fmod) {
  OpDef d = binary_def(
      "fmod", Promotion::Default,
      [](MetaContext& c) {
        no_bool(c, "fmod");
        elementwise_meta(c);
      },
      [](KernelContext& c) {
        const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
        if (is_integral(out.dtype())) {
          int_division<IntRule::Fmod>(c.op, out, a, b);
          return;
        }
        TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), c.op, [&] {
          using M = opmath_t<scalar_t>;
          kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return std::fmod(x, y); });
        });
      });
  d.backward = modulo_backward<false>;
  d.save_inputs = 0b11;
  d.raises_on_data = true;  // integer division by zero
  return d;
}

// ---------------------------------------------------------------- pow
// Promotion::None: the meta and kernel must see the exponent as the caller passed it, a
// wrapped C++ number or a tensor, because only a negative integer *number* exponent of an
// integral result is an error (an integer tensor exponent gives 0). So pow promotes itself:
// meta computes result_type over the uncast inputs, the kernel casts.
namespace {
template <typename T>
void pow_scalar_exponent(const char* op, const Tensor& out, const Tensor& base, const Scalar& e) {
  using M = opmath_t<T>;
  if constexpr (std::is_integral_v<T>) {
    TANDEM_CHECK(!(e.is_integral() && e.to_int() < 0), ValueError, op, "Integers to negative integer powers are not allowed (got exponent ",
                 e, " for dtype ", dtype_name(out.dtype()), ")");
    const T ex = checked_scalar<T>(e, op, "exponent");
    kernels::unary_kernel<T, T>(out, base, [ex](M x) { return int_pow<T>(x, ex); });
  } else {
    // Exact fast paths for the common exponents (as PyTorch's pow_tensor_scalar kernel).
    const M ex = e.to<M>();
    if (ex == M(2)) kernels::unary_kernel<T, T>(out, base, [](M x) { return x * x; });
    else if (ex == M(3)) kernels::unary_kernel<T, T>(out, base, [](M x) { return x * x * x; });
    else if (ex == M(0.5)) kernels::unary_kernel<T, T>(out, base, [](M x) { return std::sqrt(x); });
    else if (ex == M(-0.5)) kernels::unary_kernel<T, T>(out, base, [](M x) { return M(1) / std::sqrt(x); });
    else if (ex == M(-1)) kernels::unary_kernel<T, T>(out, base, [](M x) { return M(1) / x; });
    else if (ex == M(-2)) kernels::unary_kernel<T, T>(out, base, [](M x) { return M(1) / (x * x); });
    else kernels::unary_kernel<T, T>(out, base, [ex](M x) { return std::pow(x, ex); });
  }
}
template <typename T>
void pow_tensor_exponent(const Tensor& out, const Tensor& base, const Tensor& ex) {
  using M = opmath_t<T>;
  if constexpr (std::is_integral_v<T>)
    kernels::binary_kernel<T, T>(out, base, ex, [](M x, M y) { return int_pow<T>(x, y); });
  else
    kernels::binary_kernel<T, T>(out, base, ex, [](M x, M y) { return std::pow(x, y); });
}
}  // namespace

TANDEM_REGISTER_OP(pow) {
  OpDef d = binary_def(
      "pow", Promotion::None,
      [](MetaContext& c) {
        DType t = result_type(c.inputs);
        TANDEM_CHECK(t != DType::Bool, TypeError, c.op, "got bool base and exponent, expected a numeric operand");
        c.common_dtype = t;
        elementwise_meta(c);
      },
      [](KernelContext& c) {
        const Tensor& out = c.outputs[0];
        const DType t = out.dtype();
        const Tensor& expo = c.inputs[1];
        Tensor base = cast_to(c.inputs[0], t);
        if (expo.impl()->is_wrapped_number()) {
          Scalar e = wrapped_value(expo);
          TANDEM_DISPATCH_NUMERIC_TYPES(t, c.op, [&] { pow_scalar_exponent<scalar_t>(c.op, out, base, e); });
          return;
        }
        Tensor ex = cast_to(expo, t);
        TANDEM_DISPATCH_NUMERIC_TYPES(t, c.op, [&] { pow_tensor_exponent<scalar_t>(out, base, ex); });
      });
  d.backward = pow_backward;
  d.save_inputs = 0b11;
  d.autocast = Autocast::Float32;
  return d;
}

// ---------------------------------------------------------------- maximum / minimum / fmax / fmin
namespace {
template <bool kMax, bool kPropagateNan>
void minmax_kernel(KernelContext& c) {
  const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
  TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>) {
      kernels::binary_kernel<bool, bool>(out, a, b, [](bool x, bool y) { return kMax ? (x || y) : (x && y); });
    } else if constexpr (std::is_integral_v<scalar_t>) {
      kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return kMax ? (x < y ? y : x) : (y < x ? y : x); });
    } else if constexpr (kPropagateNan) {
      kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) {
        M r = kMax ? (x < y ? y : x) : (y < x ? y : x);
        return (x != x || y != y) ? std::numeric_limits<M>::quiet_NaN() : r;
      });
    } else {
      kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](M x, M y) { return kMax ? std::fmax(x, y) : std::fmin(x, y); });
    }
  });
}
}  // namespace

TANDEM_REGISTER_OP(maximum) {
  OpDef d = binary_def("maximum", Promotion::Default, elementwise_meta, minmax_kernel<true, true>, false);
  d.backward = minmax_backward<true>;
  d.save_inputs = 0b11;
  return d;
}
TANDEM_REGISTER_OP(minimum) {
  OpDef d = binary_def("minimum", Promotion::Default, elementwise_meta, minmax_kernel<false, true>, false);
  d.backward = minmax_backward<false>;
  d.save_inputs = 0b11;
  return d;
}
TANDEM_REGISTER_OP(fmax) {
  OpDef d = binary_def("fmax", Promotion::Default, elementwise_meta, minmax_kernel<true, false>, false);
  d.backward = fminmax_backward<true>;
  d.save_inputs = 0b11;
  return d;
}
TANDEM_REGISTER_OP(fmin) {
  OpDef d = binary_def("fmin", Promotion::Default, elementwise_meta, minmax_kernel<false, false>, false);
  d.backward = fminmax_backward<false>;
  d.save_inputs = 0b11;
  return d;
}

// ---------------------------------------------------------------- atan2 / hypot
TANDEM_REGISTER_OP(atan2) {
  OpDef d = binary_def(
      "atan2", Promotion::IntToFloat,
      [](MetaContext& c) {
        reject_half(c.op, c.common_dtype, "float32, float64 or bfloat16");
        elementwise_meta(c);
      },
      [](KernelContext& c) {
        TANDEM_DISPATCH_FLOATING_TYPES(c.outputs[0].dtype(), c.op, [&] {
          using M = opmath_t<scalar_t>;
          kernels::binary_kernel<scalar_t, scalar_t>(c.outputs[0], c.inputs[0], c.inputs[1],
                                                     [](M y, M x) { return std::atan2(y, x); });
        });
      });
  d.backward = atan2_backward;
  d.save_inputs = 0b11;
  d.autocast = Autocast::Promote;
  return d;
}

TANDEM_REGISTER_OP(hypot) {
  OpDef d = binary_def(
      "hypot", Promotion::Default,
      [](MetaContext& c) {
        require_floating(c.op, c.common_dtype);
        reject_half(c.op, c.common_dtype, "float32, float64 or bfloat16");
        elementwise_meta(c);
      },
      [](KernelContext& c) {
        TANDEM_DISPATCH_FLOATING_TYPES(c.outputs[0].dtype(), c.op, [&] {
          using M = opmath_t<scalar_t>;
          kernels::binary_kernel<scalar_t, scalar_t>(c.outputs[0], c.inputs[0], c.inputs[1],
                                                     [](M x, M y) { return std::hypot(x, y); });
        });
      });
  d.backward = hypot_backward;
  d.save_inputs = 0b11;
  d.save_outputs = 0b1;
  return d;
}

// ---------------------------------------------------------------- functional API
namespace {
AttrValue mode_attr(const std::optional<std::string>& m) { return opt_attr(m); }
Tensor call(const OpDef& op, const Tensor& a, const Tensor& b) { return dispatch1(op, {a, b}); }
Tensor& call_(Tensor& self, const OpDef& op, const Tensor& other, ArrayRef<AttrValue> attrs = {}) {
  dispatch1(*op.inplace, {self, other}, attrs);
  return self;
}
}  // namespace

Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string> mode) { return dispatch1(op_div(), {a, b}, {mode_attr(mode)}); }
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string> mode) { return div(a, wrap_scalar(b), std::move(mode)); }
Tensor true_divide(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return call(op_floor_divide(), a, b); }
Tensor floor_divide(const Tensor& a, const Scalar& b) { return call(op_floor_divide(), a, wrap_scalar(b)); }
Tensor remainder(const Tensor& a, const Tensor& b) { return call(op_remainder(), a, b); }
Tensor remainder(const Tensor& a, const Scalar& b) { return call(op_remainder(), a, wrap_scalar(b)); }
Tensor remainder(const Scalar& a, const Tensor& b) { return call(op_remainder(), wrap_scalar(a), b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return call(op_fmod(), a, b); }
Tensor fmod(const Tensor& a, const Scalar& b) { return call(op_fmod(), a, wrap_scalar(b)); }
Tensor pow(const Tensor& a, const Tensor& b) { return call(op_pow(), a, b); }
Tensor pow(const Tensor& a, const Scalar& b) { return call(op_pow(), a, wrap_scalar(b)); }
Tensor pow(const Scalar& a, const Tensor& b) { return call(op_pow(), wrap_scalar(a), b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return call(op_maximum(), a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return call(op_minimum(), a, b); }
Tensor fmax(const Tensor& a, const Tensor& b) { return call(op_fmax(), a, b); }
Tensor fmin(const Tensor& a, const Tensor& b) { return call(op_fmin(), a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return call(op_atan2(), a, b); }
Tensor hypot(const Tensor& a, const Tensor& b) { return call(op_hypot(), a, b); }

Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap_scalar(a), b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
Tensor operator%(const Scalar& a, const Tensor& b) { return remainder(a, b); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::div(const Tensor& o, std::optional<std::string> m) const { return tandem::div(*this, o, std::move(m)); }
Tensor Tensor::div(const Scalar& o, std::optional<std::string> m) const { return tandem::div(*this, o, std::move(m)); }
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string> m) { return call_(*this, op_div(), o, {mode_attr(m)}); }
Tensor& Tensor::div_(const Scalar& o, std::optional<std::string> m) { return call_(*this, op_div(), wrap_scalar(o), {mode_attr(m)}); }
Tensor Tensor::floor_divide(const Tensor& o) const { return tandem::floor_divide(*this, o); }
Tensor Tensor::floor_divide(const Scalar& o) const { return tandem::floor_divide(*this, o); }
Tensor& Tensor::floor_divide_(const Tensor& o) { return call_(*this, op_floor_divide(), o); }
Tensor& Tensor::floor_divide_(const Scalar& o) { return call_(*this, op_floor_divide(), wrap_scalar(o)); }
Tensor Tensor::remainder(const Tensor& o) const { return tandem::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return tandem::remainder(*this, o); }
Tensor& Tensor::remainder_(const Tensor& o) { return call_(*this, op_remainder(), o); }
Tensor& Tensor::remainder_(const Scalar& o) { return call_(*this, op_remainder(), wrap_scalar(o)); }
Tensor Tensor::fmod(const Tensor& o) const { return tandem::fmod(*this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return tandem::fmod(*this, o); }
Tensor& Tensor::fmod_(const Tensor& o) { return call_(*this, op_fmod(), o); }
Tensor& Tensor::fmod_(const Scalar& o) { return call_(*this, op_fmod(), wrap_scalar(o)); }
Tensor Tensor::pow(const Tensor& e) const { return tandem::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return tandem::pow(*this, e); }
Tensor& Tensor::pow_(const Tensor& e) { return call_(*this, op_pow(), e); }
Tensor& Tensor::pow_(const Scalar& e) { return call_(*this, op_pow(), wrap_scalar(e)); }
Tensor Tensor::maximum(const Tensor& o) const { return tandem::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return tandem::minimum(*this, o); }
Tensor Tensor::fmax(const Tensor& o) const { return tandem::fmax(*this, o); }
Tensor Tensor::fmin(const Tensor& o) const { return tandem::fmin(*this, o); }
Tensor Tensor::atan2(const Tensor& o) const { return tandem::atan2(*this, o); }
Tensor& Tensor::atan2_(const Tensor& o) { return call_(*this, op_atan2(), o); }
Tensor Tensor::hypot(const Tensor& o) const { return tandem::hypot(*this, o); }
Tensor& Tensor::hypot_(const Tensor& o) { return call_(*this, op_hypot(), o); }
Tensor& Tensor::operator/=(const Tensor& o) { return div_(o); }
Tensor& Tensor::operator/=(const Scalar& o) { return div_(o); }
Tensor& Tensor::operator%=(const Tensor& o) { return remainder_(o); }
Tensor& Tensor::operator%=(const Scalar& o) { return remainder_(o); }

}  // namespace tandem
