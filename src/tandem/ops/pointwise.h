#pragma once
// Binary/ternary elementwise ops beyond add/sub/mul (div, pow, comparisons, logical, bitwise, where, lerp, addcmul).
//
// Every op broadcasts its tensor operands (NumPy rules; ShapeError when they don't fit)
// and follows PyTorch 1.13's type promotion (torch.result_type): dimensioned tensors
// outrank 0-d tensors, which outrank C++ numbers, within a category bool < integer <
// floating; a floating C++ number lifts an integer tensor to the default float dtype.
// A C++ number (Scalar overloads) takes part as a wrapped 0-d tensor (wrap_scalar).
// Results are new contiguous tensors; the in-place forms are Tensor methods ending in
// `_` and raise TypeError when the result type can't be cast to the tensor's dtype
// (e.g. `int_tensor.div_(x)`, whose true-division result is floating).
// float16/bfloat16 compute in float32 and round once, as PyTorch's CPU kernels do.
#include <optional>
#include <string>

#include "tandem/core/tensor.h"

namespace tandem {

// ---------------------------------------------------------------- division family
/// torch.div. rounding_mode: nullopt = true division (bool/integer inputs give the default
/// float dtype, like torch.true_divide), "trunc" (round toward zero) or "floor" (round
/// toward -inf, Python's //); with a mode the result dtype is result_type(self, other).
/// Floating division by zero gives inf/nan; integer division by zero (trunc/floor) raises
/// ValueError ("ZeroDivisionError"), INT_MIN / -1 wraps to INT_MIN (PyTorch crashes there).
/// ValueError for another rounding_mode string; TypeError for bool inputs with a mode.
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt);
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string> rounding_mode = std::nullopt);
/// torch.true_divide: div without a rounding mode.
Tensor true_divide(const Tensor& self, const Tensor& other);
/// torch.floor_divide: div(self, other, "floor") (PyTorch >= 1.13 floors, like Python //).
/// TypeError for bool; ValueError for integer division by zero.
Tensor floor_divide(const Tensor& self, const Tensor& other);
Tensor floor_divide(const Tensor& self, const Scalar& other);
/// torch.remainder: Python's modulus; a nonzero result has the sign of `other`
/// (remainder(-5, 3) = 1, remainder(5, -3) = -1). Floating: a - floor(a/b)*b computed as
/// torch's CPU kernel does, fmod plus `other` when the signs differ, so a zero result
/// keeps fmod's sign, which is self's (remainder(-1., 1.) = -0.0, remainder(2., -1.) =
/// +0.0, bit for bit as torch 1.13; Python's `%` differs there), remainder(x, 0.) = nan and
/// remainder(5.5, -inf) = -inf; integer modulo by zero raises ValueError. TypeError for bool.
Tensor remainder(const Tensor& self, const Tensor& other);
Tensor remainder(const Tensor& self, const Scalar& other);
Tensor remainder(const Scalar& self, const Tensor& other);
/// torch.fmod: C's fmod; the result has the sign of `self` (fmod(-5, 3) = -2). Integer
/// modulo by zero raises ValueError. TypeError for bool.
Tensor fmod(const Tensor& self, const Tensor& other);
Tensor fmod(const Tensor& self, const Scalar& other);

// ---------------------------------------------------------------- pow, min/max, atan2, hypot
/// torch.pow: self ** exponent, dtype result_type(self, exponent). Integer powers wrap on
/// overflow; an integer tensor to a negative integer tensor power gives 0 (or +-1 for a
/// base of +-1), but an integral result with a negative integer C++ exponent raises
/// ValueError "Integers to negative integer powers are not allowed" (as PyTorch).
/// ValueError when a C++ exponent does not fit the integral result dtype.
/// TypeError when both operands are bool.
Tensor pow(const Tensor& self, const Tensor& exponent);
Tensor pow(const Tensor& self, const Scalar& exponent);
Tensor pow(const Scalar& self, const Tensor& exponent);
/// torch.maximum / torch.minimum: elementwise max/min; NaN in either operand gives NaN.
/// All dtypes (bool: or/and).
Tensor maximum(const Tensor& self, const Tensor& other);
Tensor minimum(const Tensor& self, const Tensor& other);
/// torch.fmax / torch.fmin: like maximum/minimum, but a NaN operand is ignored (NaN only
/// when both are NaN), as C's fmax/fmin.
Tensor fmax(const Tensor& self, const Tensor& other);
Tensor fmin(const Tensor& self, const Tensor& other);
/// torch.atan2(self, other): angle of (other, self) in (-pi, pi]. Bool/integer inputs give
/// the default float dtype. TypeError for float16 (PyTorch 1.13 has no CPU kernel).
Tensor atan2(const Tensor& self, const Tensor& other);
/// torch.hypot: sqrt(self^2 + other^2) without undue overflow. Floating results only:
/// TypeError for bool/integer result dtypes and for float16 (as PyTorch 1.13 CPU).
Tensor hypot(const Tensor& self, const Tensor& other);

// ---------------------------------------------------------------- comparisons (bool results)
/// torch.eq/ne/lt/le/gt/ge: compare in result_type(self, other), return bool tensors.
/// A C++ number is converted to that type first, as PyTorch does (uint8 tensor < -1
/// compares against 255).
Tensor eq(const Tensor& self, const Tensor& other);
Tensor eq(const Tensor& self, const Scalar& other);
Tensor ne(const Tensor& self, const Tensor& other);
Tensor ne(const Tensor& self, const Scalar& other);
Tensor lt(const Tensor& self, const Tensor& other);
Tensor lt(const Tensor& self, const Scalar& other);
Tensor le(const Tensor& self, const Tensor& other);
Tensor le(const Tensor& self, const Scalar& other);
Tensor gt(const Tensor& self, const Tensor& other);
Tensor gt(const Tensor& self, const Scalar& other);
Tensor ge(const Tensor& self, const Tensor& other);
Tensor ge(const Tensor& self, const Scalar& other);

// ---------------------------------------------------------------- logical and bitwise
/// torch.logical_and/or/xor: truth of each element (nonzero, NaN is true) combined; the
/// result is bool. Any dtypes (the operands are first converted to their result_type).
Tensor logical_and(const Tensor& self, const Tensor& other);
Tensor logical_or(const Tensor& self, const Tensor& other);
Tensor logical_xor(const Tensor& self, const Tensor& other);
/// torch.bitwise_and/or/xor on bool and integer dtypes; TypeError for floating results.
Tensor bitwise_and(const Tensor& self, const Tensor& other);
Tensor bitwise_and(const Tensor& self, const Scalar& other);
Tensor bitwise_or(const Tensor& self, const Tensor& other);
Tensor bitwise_or(const Tensor& self, const Scalar& other);
Tensor bitwise_xor(const Tensor& self, const Tensor& other);
Tensor bitwise_xor(const Tensor& self, const Scalar& other);
/// torch.bitwise_left_shift / bitwise_right_shift on integer dtypes (TypeError for bool and
/// floating). Right shifts of signed values are arithmetic. A shift count that is negative
/// or >= the bit width of the dtype gives 0 (left; right for unsigned) or the sign fill
/// (right, signed), the well-defined rule of PyTorch >= 2.0 (1.13 left it to the CPU).
Tensor bitwise_left_shift(const Tensor& self, const Tensor& other);
Tensor bitwise_left_shift(const Tensor& self, const Scalar& other);
Tensor bitwise_left_shift(const Scalar& self, const Tensor& other);
Tensor bitwise_right_shift(const Tensor& self, const Tensor& other);
Tensor bitwise_right_shift(const Tensor& self, const Scalar& other);
Tensor bitwise_right_shift(const Scalar& self, const Tensor& other);

// ---------------------------------------------------------------- selection and ternary ops
/// torch.where(condition, self, other): self where condition else other, broadcasting all
/// three. condition must be bool (uint8 is accepted, like PyTorch 1.13's deprecated path)
/// and is not promoted; self/other are promoted to result_type(self, other).
/// TypeError for another condition dtype.
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);
/// torch.lerp: self + weight * (end - self) (evaluated from the nearer end for |weight| >=
/// 0.5, as PyTorch). No type promotion: end (and a tensor weight) must have self's dtype,
/// which must be float32, float64 or bfloat16 (TypeError otherwise, as PyTorch 1.13 CPU).
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
/// torch.addcmul: self + value * tensor1 * tensor2, dtype result_type of the three tensors.
/// TypeError for bool and float16; ValueError when value does not fit an integral result.
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
/// torch.addcdiv: self + value * tensor1 / tensor2. TypeError when tensor1 and tensor2 are
/// both bool/integer (PyTorch removed integer addcdiv), for integral results and float16.
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);

// ---------------------------------------------------------------- operators
// As PyTorch: comparison operators return bool tensors (so never EXPECT_EQ two Tensors:
// it does not compile), `/` is true division, `%` is remainder, `&|^` are
// bitwise (logical on bool tensors), `<<`/`>>` shift.
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Scalar& b);
Tensor operator%(const Scalar& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator==(const Scalar& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator!=(const Scalar& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<(const Scalar& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator<=(const Scalar& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>(const Scalar& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator>=(const Scalar& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Scalar& b);
Tensor operator&(const Scalar& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Scalar& b);
Tensor operator|(const Scalar& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Scalar& b);
Tensor operator^(const Scalar& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Scalar& b);
Tensor operator<<(const Scalar& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Scalar& b);
Tensor operator>>(const Scalar& a, const Tensor& b);

// ---------------------------------------------------------------- closeness, equality
/// Elementwise |self - other| <= atol + rtol * |other| (torch.isclose), as a bool tensor of
/// the broadcast shape. Equal values (infinities included) are always close; NaN is close
/// to NaN only with equal_nan. Bool and integer inputs are compared in the default float
/// dtype (so int64 values above 2^24 may round together, as in PyTorch). self and other
/// must have the same dtype (TypeError); rtol and atol must be >= 0 (ValueError);
/// ShapeError when the shapes do not broadcast. Not differentiable.
Tensor isclose(const Tensor& self, const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/// True when isclose holds everywhere (torch.allclose); same errors as isclose. Reads the
/// result (a graph break under capture).
bool allclose(const Tensor& self, const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/// True when self and other have the same sizes and equal values (torch.equal): values are
/// compared after type promotion (an int64 and a float32 tensor holding the same numbers
/// are equal), NaN is never equal, two empty tensors of the same sizes are equal. Reads the
/// result (a graph break under capture).
bool equal(const Tensor& self, const Tensor& other);

}  // namespace tandem
