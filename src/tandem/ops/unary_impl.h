#pragma once
// Private helpers shared by the unary op files (unary.cpp, unary_nn.cpp): schema
// builders, dtype checks, and kernel drivers that run a lambda over every element with
// kernels::unary_kernel. Only those two files include this.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/vec_math.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/pointwise.h"

namespace tandem::unary_detail {

using kernels::verf;
using kernels::verf_plus1;
using kernels::vexp;
using kernels::vlog;
using kernels::vlog1p_nonneg;
using kernels::vsigmoid;
using kernels::vtanh;

/// A one-input elementwise op: output has the input's shape and the promoted dtype.
inline OpDef unary_def(const char* name, Promotion p, bool inplace = true) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}};
  d.promotion = p;
  d.meta = ops::same_as_input_meta;
  d.inplace_variant = inplace;
  d.pointwise = true;
  return d;
}

/// Meta for ops on integers and floats, not bool.
inline void numeric_meta(MetaContext& c) {
  ops::require_not_bool(c.op, c.common_dtype, "expected a numeric dtype");
  ops::same_as_input_meta(c);
}
/// Meta for ops defined on floating dtypes only (activations, frac).
inline void floating_meta(MetaContext& c) {
  ops::require_floating(c.op, c.common_dtype);
  ops::same_as_input_meta(c);
}

/// out = f(in) over the floating dtypes; f takes/returns the opmath type.
template <typename F>
void floating_kernel(KernelContext& c, F f) {
  const Tensor& out = c.outputs[0];
  TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), c.op,
                                 [&] { kernels::unary_kernel<scalar_t, scalar_t>(out, c.inputs[0], f); });
}
/// Like floating_kernel, for parametrised functions: `make.template operator()<M>()`
/// returns the element function for opmath type M (so constants are converted once).
template <typename Make>
void floating_kernel_p(KernelContext& c, Make make) {
  const Tensor& out = c.outputs[0];
  TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), c.op, [&] {
    using M = kernels::opmath_t<scalar_t>;
    kernels::unary_kernel<scalar_t, scalar_t>(out, c.inputs[0], make.template operator()<M>());
  });
}
/// out = f(in) over integer and floating dtypes (no bool).
template <typename F>
void numeric_kernel(KernelContext& c, F f) {
  const Tensor& out = c.outputs[0];
  TANDEM_DISPATCH_NUMERIC_TYPES(out.dtype(), c.op,
                                [&] { kernels::unary_kernel<scalar_t, scalar_t>(out, c.inputs[0], f); });
}
/// Same, parametrised (see floating_kernel_p).
template <typename Make>
void numeric_kernel_p(KernelContext& c, Make make) {
  const Tensor& out = c.outputs[0];
  TANDEM_DISPATCH_NUMERIC_TYPES(out.dtype(), c.op, [&] {
    using M = kernels::opmath_t<scalar_t>;
    kernels::unary_kernel<scalar_t, scalar_t>(out, c.inputs[0], make.template operator()<M>());
  });
}

/// out = in for ops that are the identity on some dtypes (floor of an integer); a no-op
/// when they already share memory (in-place).
inline void copy_unless_same(const Tensor& out, const Tensor& in) {
  if (out.data_ptr() == in.data_ptr() && out.strides().equals(in.strides())) return;
  kernels::copy_kernel(out, in);
}

/// -x with two's-complement wrap-around for integers (no signed-overflow UB).
template <typename T>
inline T wrap_neg(T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
  } else {
    return -x;
  }
}
/// a * b with wrap-around for integers.
template <typename T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

/// x != x for floating types; false for integers (no self-comparison warnings).
template <typename T>
inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

/// floor/ceil/trunc through nearbyint (one vector instruction; std::floor stays a libm
/// call at -O2 because it may not raise FE_INEXACT). Exact for every float, NaN/inf/-0.0 kept.
template <typename T>
inline T vfloor(T x) {
  const T r = std::nearbyint(x);
  const T rm = r - T(1);
  return r > x ? rm : r;
}
template <typename T>
inline T vceil(T x) {
  const T r = std::nearbyint(x);
  const T rp = r + T(1);
  return r < x ? rp : r;
}
template <typename T>
inline T vtrunc(T x) {
  return std::copysign(vfloor(std::abs(x)), x);
}

/// Largest finite value of T, as its opmath type.
template <typename T>
inline kernels::opmath_t<T> max_finite() {
  if constexpr (std::is_same_v<T, Half>) return static_cast<float>(Half::from_bits(0x7bff));       // 65504
  else if constexpr (std::is_same_v<T, BFloat16>) return static_cast<float>(BFloat16::from_bits(0x7f7f));
  else return std::numeric_limits<T>::max();
}

// ---------------------------------------------------------------- backward helpers
/// Backward rules of one-input ops: PyTorch's derivatives (derivatives.yaml, 1.13)
/// written with tandem ops so that they are differentiable again.
using Grads = std::vector<Tensor>;

/// Zeros shaped and typed like forward input i (piecewise-constant ops).
inline Tensor zero_grad(const BackwardContext& c, size_t i = 0) {
  return zeros(c.input_metas[i].sizes, c.input_metas[i].dtype);
}
/// Wraps a one-input rule: `f(c, grad)` is only called when the input needs a gradient.
template <typename F>
Grads unary_grad(BackwardContext& c, F f) {
  Grads r(c.needs_input_grad.size());
  if (c.needs_input_grad[0] && c.grad_outputs[0].defined()) r[0] = f(c, c.grad_outputs[0]);
  return r;
}

}  // namespace tandem::unary_detail
