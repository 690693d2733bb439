#pragma once
// Bitwise tensor comparison, the check of "compiled equals eager" and of fused kernels
// against the unfused ones.
#include <cstring>

#include "tandem/tandem.h"

namespace tandem_test {

/// True when `a` and `b` have the same dtype and sizes (and strides, when `same_strides`)
/// and the same bytes in logical (row-major) order. Empty tensors compare equal without
/// reading their storage, which may be null.
inline bool bitwise_equal(const tandem::Tensor& a, const tandem::Tensor& b, bool same_strides = false) {
  if (a.dtype() != b.dtype() || !a.sizes().equals(b.sizes())) return false;
  if (same_strides && !a.strides().equals(b.strides())) return false;
  const tandem::Tensor x = a.contiguous(), y = b.contiguous();
  if (x.nbytes() == 0) return true;
  return std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

/// bitwise_equal, except that two NaNs compare equal whatever their sign and payload:
/// where a commutative op meets two NaN operands the hardware returns one of them, and
/// which one depends on the instruction's operand order (vector against scalar code), so
/// IEEE 754 leaves it unspecified. Every other element must have the same bytes, and NaN
/// must be exactly where `a` has NaN. Floating dtypes are compared as float64 (the
/// conversion is exact and one-to-one on non-NaN values).
inline bool bitwise_equal_nan_as_nan(const tandem::Tensor& a, const tandem::Tensor& b) {
  if (a.dtype() != b.dtype() || !a.sizes().equals(b.sizes())) return false;
  if (!tandem::is_floating_point(a.dtype())) return bitwise_equal(a, b);
  const tandem::Tensor x = a.to(tandem::kFloat64).contiguous(), y = b.to(tandem::kFloat64).contiguous();
  const double* p = static_cast<const double*>(x.data_ptr());
  const double* q = static_cast<const double*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool nx = p[i] != p[i], ny = q[i] != q[i];
    if (nx != ny || (!nx && std::memcmp(p + i, q + i, sizeof(double)) != 0)) return false;
  }
  return true;
}

}  // namespace tandem_test
