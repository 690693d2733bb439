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

}  // namespace tandem_test
