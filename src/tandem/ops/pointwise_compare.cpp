// Comparison (eq, ne, lt, le, gt, ge), logical (logical_and/or/xor), bitwise
// (bitwise_and/or/xor) and shift ops. Comparisons and logical ops promote their operands
// to result_type (Promotion::Comparison) and return bool; their in-place forms write the
// bools into self's dtype (x.lt_(y) leaves 0/1 in a float x), as PyTorch.
#include <functional>

#include "tandem/ops/pointwise.h"
#include "tandem/ops/pointwise_util.h"

namespace tandem {

using namespace ops;
using namespace ops::pw;

namespace {

// Bool results carry no gradient: inputs and the output are marked non-differentiable.
OpDef bool_result_def(const char* name, KernelFn kernel) {
  OpDef d = binary_def(name, Promotion::Comparison, elementwise_bool_meta, kernel);
  d.inputs = {{"self", true, false, false}, {"other", true, false, false}};
  d.output_differentiable = {false};
  return d;
}

template <typename Cmp>
void compare_kernel(KernelContext& c) {
  const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
  TANDEM_DISPATCH_ALL_TYPES(a.dtype(), c.op, [&] {
    using T = bytes_t<scalar_t>;
    using M = opmath_t<T>;
    kernels::binary_kernel<bool, T>(out, a, b, [](M x, M y) { return Cmp{}(x, y); });
  });
}

enum class Logic { And, Or, Xor };
template <Logic L>
void logical_kernel(KernelContext& c) {
  const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
  TANDEM_DISPATCH_ALL_TYPES(a.dtype(), c.op, [&] {
    using T = bytes_t<scalar_t>;
    using M = opmath_t<T>;
    kernels::binary_kernel<bool, T>(out, a, b, [](M x, M y) {
      const bool p = x != M(0), q = y != M(0);  // NaN is true
      if constexpr (L == Logic::And) return p & q;
      else if constexpr (L == Logic::Or) return p | q;
      else return p != q;
    });
  });
}

void integral_meta(MetaContext& c) {
  TANDEM_CHECK(is_integral(c.common_dtype, /*include_bool=*/true), TypeError, c.op, "got dtype ",
               dtype_name(c.common_dtype), ", expected bool or an integer dtype");
  elementwise_meta(c);
}

template <Logic L>
void bitwise_kernel(KernelContext& c) {
  const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
  TANDEM_DISPATCH_INTEGRAL_TYPES(out.dtype(), c.op, [&] {
    kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](scalar_t x, scalar_t y) {
      if constexpr (L == Logic::And) return static_cast<scalar_t>(x & y);
      else if constexpr (L == Logic::Or) return static_cast<scalar_t>(x | y);
      else return static_cast<scalar_t>(x ^ y);
    });
  });
}

void shift_meta(MetaContext& c) {
  TANDEM_CHECK(is_integral(c.common_dtype, /*include_bool=*/false), TypeError, c.op, "got dtype ",
               dtype_name(c.common_dtype), ", expected an integer dtype (shifts are not defined for bool or floating)");
  elementwise_meta(c);
}

// Shift counts outside [0, bits) are defined (PyTorch >= 2.0 rule) instead of left to the CPU.
template <typename T>
T shift_left(T a, T b) {
  constexpr uint64_t kBits = sizeof(T) * 8;
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) return T(0);
  }
  if (static_cast<uint64_t>(b) >= kBits) return T(0);
  return static_cast<T>(static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(a)) << b);
}
template <typename T>
T shift_right(T a, T b) {
  constexpr uint64_t kBits = sizeof(T) * 8;
  if constexpr (std::is_signed_v<T>) {
    if (b < 0 || static_cast<uint64_t>(b) >= kBits) return a < 0 ? T(-1) : T(0);
  } else {
    if (static_cast<uint64_t>(b) >= kBits) return T(0);
  }
  return static_cast<T>(a >> b);  // arithmetic for signed T (C++20)
}

template <bool kLeft>
void shift_kernel(KernelContext& c) {
  const Tensor &out = c.outputs[0], &a = c.inputs[0], &b = c.inputs[1];
  TANDEM_DISPATCH_INTEGRAL_TYPES(out.dtype(), c.op, [&] {
    if constexpr (!std::is_same_v<scalar_t, bool>) {
      kernels::binary_kernel<scalar_t, scalar_t>(out, a, b, [](scalar_t x, scalar_t y) {
        return kLeft ? shift_left(x, y) : shift_right(x, y);
      });
    }
  });
}

OpDef integer_def(const char* name, MetaFn meta, KernelFn kernel) {
  OpDef d = binary_def(name, Promotion::Default, meta, kernel);
  d.inputs = {{"self", true, false, false}, {"other", true, false, false}};
  d.output_differentiable = {false};
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(eq) { return bool_result_def("eq", compare_kernel<std::equal_to<>>); }
TANDEM_REGISTER_OP(ne) { return bool_result_def("ne", compare_kernel<std::not_equal_to<>>); }
TANDEM_REGISTER_OP(lt) { return bool_result_def("lt", compare_kernel<std::less<>>); }
TANDEM_REGISTER_OP(le) { return bool_result_def("le", compare_kernel<std::less_equal<>>); }
TANDEM_REGISTER_OP(gt) { return bool_result_def("gt", compare_kernel<std::greater<>>); }
TANDEM_REGISTER_OP(ge) { return bool_result_def("ge", compare_kernel<std::greater_equal<>>); }

TANDEM_REGISTER_OP(logical_and) { return bool_result_def("logical_and", logical_kernel<Logic::And>); }
TANDEM_REGISTER_OP(logical_or) { return bool_result_def("logical_or", logical_kernel<Logic::Or>); }
TANDEM_REGISTER_OP(logical_xor) { return bool_result_def("logical_xor", logical_kernel<Logic::Xor>); }

TANDEM_REGISTER_OP(bitwise_and) { return integer_def("bitwise_and", integral_meta, bitwise_kernel<Logic::And>); }
TANDEM_REGISTER_OP(bitwise_or) { return integer_def("bitwise_or", integral_meta, bitwise_kernel<Logic::Or>); }
TANDEM_REGISTER_OP(bitwise_xor) { return integer_def("bitwise_xor", integral_meta, bitwise_kernel<Logic::Xor>); }
TANDEM_REGISTER_OP(bitwise_left_shift) { return integer_def("bitwise_left_shift", shift_meta, shift_kernel<true>); }
TANDEM_REGISTER_OP(bitwise_right_shift) { return integer_def("bitwise_right_shift", shift_meta, shift_kernel<false>); }

// ---------------------------------------------------------------- functional API
namespace {
Tensor call(const OpDef& op, const Tensor& a, const Tensor& b) { return dispatch1(op, {a, b}); }
Tensor& call_(Tensor& self, const OpDef& op, const Tensor& other) {
  dispatch1(*op.inplace, {self, other});
  return self;
}
}  // namespace

#define TANDEM_PW_TENSOR_SCALAR(name)                                                                 \
  Tensor name(const Tensor& a, const Tensor& b) { return call(op_##name(), a, b); }                  \
  Tensor name(const Tensor& a, const Scalar& b) { return call(op_##name(), a, wrap_scalar(b)); }     \
  Tensor Tensor::name(const Tensor& o) const { return tandem::name(*this, o); }                      \
  Tensor Tensor::name(const Scalar& o) const { return tandem::name(*this, o); }                      \
  Tensor& Tensor::name##_(const Tensor& o) { return call_(*this, op_##name(), o); }                  \
  Tensor& Tensor::name##_(const Scalar& o) { return call_(*this, op_##name(), wrap_scalar(o)); }

TANDEM_PW_TENSOR_SCALAR(eq)
TANDEM_PW_TENSOR_SCALAR(ne)
TANDEM_PW_TENSOR_SCALAR(lt)
TANDEM_PW_TENSOR_SCALAR(le)
TANDEM_PW_TENSOR_SCALAR(gt)
TANDEM_PW_TENSOR_SCALAR(ge)
TANDEM_PW_TENSOR_SCALAR(bitwise_and)
TANDEM_PW_TENSOR_SCALAR(bitwise_or)
TANDEM_PW_TENSOR_SCALAR(bitwise_xor)
TANDEM_PW_TENSOR_SCALAR(bitwise_left_shift)
TANDEM_PW_TENSOR_SCALAR(bitwise_right_shift)
#undef TANDEM_PW_TENSOR_SCALAR

Tensor bitwise_left_shift(const Scalar& a, const Tensor& b) { return call(op_bitwise_left_shift(), wrap_scalar(a), b); }
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b) { return call(op_bitwise_right_shift(), wrap_scalar(a), b); }

Tensor logical_and(const Tensor& a, const Tensor& b) { return call(op_logical_and(), a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return call(op_logical_or(), a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return call(op_logical_xor(), a, b); }
Tensor Tensor::logical_and(const Tensor& o) const { return tandem::logical_and(*this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return tandem::logical_or(*this, o); }
Tensor Tensor::logical_xor(const Tensor& o) const { return tandem::logical_xor(*this, o); }
Tensor& Tensor::logical_and_(const Tensor& o) { return call_(*this, op_logical_and(), o); }
Tensor& Tensor::logical_or_(const Tensor& o) { return call_(*this, op_logical_or(), o); }
Tensor& Tensor::logical_xor_(const Tensor& o) { return call_(*this, op_logical_xor(), o); }

// ---------------------------------------------------------------- operators
// Scalar-on-the-left comparisons flip the operator (2 < x is x > 2), as Python does.
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return ne(b, a); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return ge(b, a); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return le(b, a); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator&(const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }
Tensor operator&(const Scalar& a, const Tensor& b) { return bitwise_and(b, a); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator|(const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }
Tensor operator|(const Scalar& a, const Tensor& b) { return bitwise_or(b, a); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator^(const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }
Tensor operator^(const Scalar& a, const Tensor& b) { return bitwise_xor(b, a); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
Tensor operator<<(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }
Tensor operator<<(const Scalar& a, const Tensor& b) { return bitwise_left_shift(a, b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
Tensor operator>>(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }
Tensor operator>>(const Scalar& a, const Tensor& b) { return bitwise_right_shift(a, b); }

Tensor& Tensor::operator&=(const Tensor& o) { return bitwise_and_(o); }
Tensor& Tensor::operator&=(const Scalar& o) { return bitwise_and_(o); }
Tensor& Tensor::operator|=(const Tensor& o) { return bitwise_or_(o); }
Tensor& Tensor::operator|=(const Scalar& o) { return bitwise_or_(o); }
Tensor& Tensor::operator^=(const Tensor& o) { return bitwise_xor_(o); }
Tensor& Tensor::operator^=(const Scalar& o) { return bitwise_xor_(o); }
Tensor& Tensor::operator<<=(const Tensor& o) { return bitwise_left_shift_(o); }
Tensor& Tensor::operator<<=(const Scalar& o) { return bitwise_left_shift_(o); }
Tensor& Tensor::operator>>=(const Tensor& o) { return bitwise_right_shift_(o); }
Tensor& Tensor::operator>>=(const Scalar& o) { return bitwise_right_shift_(o); }

}  // namespace tandem
