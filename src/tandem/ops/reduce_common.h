#pragma once
// Helpers shared by the reduction op files (reduce.cpp, reduce_stats.cpp, reduce_scan.cpp):
// dim-list parsing, output shapes, dtype casts done inside kernels. ops/ internal.
#include <cmath>
#include <limits>
#include <type_traits>

#include "tandem/kernels/cpu/reduce.h"
#include "tandem/ops/op_utils.h"

namespace tandem::ops {

/// Reduced-dims bitmask from attribute `k` (None or an int list; None and [] mean every
/// dim, as PyTorch). Wraps negative dims; IndexError out of range, ValueError on duplicates.
uint64_t reduce_mask(const char* op, const AttrReader& attrs, size_t k, int64_t ndim);
/// Mask of one dim (attr `k`, an int); IndexError when out of range.
uint64_t single_dim_mask(const char* op, int64_t dim, int64_t ndim);
/// Output sizes: reduced dims removed, or kept as 1 with keepdim (0-d stays 0-d).
DimVector reduced_sizes(IntArrayRef sizes, uint64_t mask, bool keepdim);
/// Number of elements reduced into each output.
int64_t reduced_numel(IntArrayRef sizes, uint64_t mask);
/// IndexError "[op] expected reduction dim d to have non-zero size" for ops without an
/// identity (max, argmax, ...); also when reducing every dim of an empty tensor.
void check_nonempty_reduction(const char* op, IntArrayRef sizes, uint64_t mask, bool all_dims);

/// `t` converted to `dtype` (a new contiguous tensor) or `t` itself when it already has it.
/// Kernel-side cast: no dispatch, no autograd.
Tensor cast_for_kernel(const Tensor& t, DType dtype);

/// float -> opmath loads for half/bfloat16; other types unchanged.
template <typename T>
inline kernels::opmath_t<T> load_op(T v) {
  return static_cast<kernels::opmath_t<T>>(v);
}

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

/// The (value, index) accumulator of argmax/argmin/max.dim/min.dim: NaN wins (first NaN),
/// otherwise the larger (Greater) or smaller value, ties to the smaller index. merge is
/// independent of call order. idx < 0 marks "no element yet".
template <typename V, bool Greater>
struct ArgAcc {
  V v{};
  int64_t i = -1;
  static bool better(V a, int64_t ai, V b, int64_t bi) {  // a better than b?
    if (bi < 0) return ai >= 0;
    if (ai < 0) return false;
    const bool an = is_nan(a), bn = is_nan(b);
    if (an || bn) return an && (!bn || ai < bi);
    if (Greater ? a > b : a < b) return true;
    return a == b && ai < bi;
  }
};

// ---------------------------------------------------------------- backward helpers
/// The reduced dims of `mask` among the first `ndim` dims, ascending.
std::vector<int64_t> mask_dims(uint64_t mask, int64_t ndim);
/// `t` (a reduction's output or gradient) with the reduced dims put back as size 1 when
/// they were dropped (keepdim false), so that it broadcasts against the input.
Tensor unsqueeze_reduced(const Tensor& t, int64_t ndim, uint64_t mask, bool keepdim);
/// The gradient `g` of a reduction broadcast back to the input's sizes and cast to its dtype.
Tensor expand_reduced_grad(const Tensor& g, const MetaRef& in, uint64_t mask, bool keepdim);
/// Gradient of amax/amin/max/min: shared evenly among the elements equal to the result
/// (PyTorch's choice for ties).
Tensor evenly_distribute_grad(const Tensor& g, const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim);

}  // namespace tandem::ops
