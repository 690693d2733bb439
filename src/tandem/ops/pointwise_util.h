#pragma once
// Helpers shared by the pointwise op files (pointwise*.cpp). Only those files include this.
#include <limits>
#include <type_traits>

#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/op_utils.h"

namespace tandem::ops::pw {

using kernels::opmath_t;

/// Element type used to read T in loops: bool is read as its byte (uint8_t), because GCC
/// does not vectorise loads of bool; every bool tensor holds 0 or 1.
template <typename T>
using bytes_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

/// Schema of a two-input elementwise op with the given promotion, meta and kernel.
inline OpDef binary_def(const char* name, Promotion p, MetaFn meta, KernelFn kernel, bool inplace = true) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}, {"other"}};
  d.promotion = p;
  d.meta = meta;
  d.cpu_kernel = kernel;
  d.inplace_variant = inplace;
  d.pointwise = true;
  return d;
}

/// `t` converted to dtype `d` (itself when it already has it). For ops that promote in
/// their kernel (Promotion::None because meta must see the original dtypes).
inline Tensor cast_to(const Tensor& t, DType d) {
  if (t.dtype() == d) return t;
  Tensor c = empty_tensor(t.sizes(), d);
  kernels::copy_kernel(c, t);
  return c;
}

/// The value of a wrapped C++ number (0-d tensor) as a Scalar of its own category.
inline Scalar wrapped_value(const Tensor& t) {
  return TANDEM_DISPATCH_ALL_TYPES(t.dtype(), "wrapped_value", [&]() -> Scalar {
    scalar_t v = *static_cast<const scalar_t*>(t.data_ptr());
    if constexpr (std::is_same_v<scalar_t, bool>) return Scalar(v);
    else if constexpr (std::is_integral_v<scalar_t>) return Scalar(static_cast<int64_t>(v));
    else return Scalar(static_cast<double>(static_cast<opmath_t<scalar_t>>(v)));
  });
}

/// Converts a Scalar attribute to the compute type M of an op running in dtype T, raising
/// ValueError like PyTorch's checked conversion when it does not fit an integral T.
template <typename T, typename M = opmath_t<T>>
M checked_scalar(const Scalar& s, const char* op, const char* what) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    bool fits;
    if (s.is_floating_point()) {
      double v = s.to_double();
      // max + 1 is a power of two, exact in double (max itself rounds up for int64).
      fits = v >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
             v < static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    } else {
      int64_t v = s.to_int();
      if constexpr (std::is_unsigned_v<T>) fits = v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max();
      else fits = v >= static_cast<int64_t>(std::numeric_limits<T>::lowest()) && v <= static_cast<int64_t>(std::numeric_limits<T>::max());
    }
    TANDEM_CHECK(fits, ValueError, op, what, " ", s, " cannot be converted to ", dtype_name(dtype_of_v<T>),
                 " without overflow");
  }
  return s.to<M>();
}

/// Raises ValueError ("ZeroDivisionError") if the integer tensor `divisor` holds a zero and
/// the result is not empty. Every element of a broadcast input reaches the output, so the
/// whole divisor is scanned before the (non-throwing) division loop runs.
void check_no_zero_divisor(const char* op, const Tensor& divisor, const Tensor& out);

/// Rejects `t` with TypeError when it is float16: PyTorch 1.13 has no CPU kernel for `op`.
inline void reject_half(const char* op, DType t, const char* supported) {
  TANDEM_CHECK(t != DType::Float16, TypeError, op, "got dtype float16, expected ", supported,
               " (PyTorch 1.13 has no CPU float16 kernel for this op)");
}

// ---------------------------------------------------------------- backward-rule helpers
/// True for a C++ number wrapped as a 0-d tensor (never requires grad; its value is a
/// constant of the program, so rules may read it).
inline bool is_wrapped(const Tensor& t) { return t.defined() && t.impl()->is_wrapped_number(); }

/// The value of a wrapped number read by a backward rule. The read is not a data-dependent
/// graph break: the value came from C++, as an attribute would.
inline Scalar wrapped_constant(const Tensor& t) {
  DispatchDepthGuard constant_read;
  return wrapped_value(t);
}

/// -t, written as a product so that it needs no unary op (and stays differentiable).
inline Tensor negated(const Tensor& t) { return t * Scalar(-1); }

/// The gradient of a piecewise-constant function (rounding division): zeros shaped and
/// typed like the input.
inline Tensor zero_grad_like(const MetaRef& input) { return zeros(input.sizes, input.dtype); }

}  // namespace tandem::ops::pw
