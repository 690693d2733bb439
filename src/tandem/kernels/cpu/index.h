#pragma once
// Loops shared by the indexing, joining and sorting ops (ops/index.cpp, ops/indexing.cpp,
// ops/join.cpp, ops/sort.cpp): iteration over the "lines" of a tensor along one dim,
// index-range checks (the one data-dependent check kernels make, always before any
// write), gather/scatter through precomputed element offsets, nonzero, and the
// NaN-aware orderings PyTorch's sort/topk/unique use.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tandem/kernels/cpu/loops.h"

namespace tandem::kernels {

/// Unsigned integer type of N bytes: index kernels that only move data dispatch on the
/// element size instead of the dtype (one instantiation serves int32/float32 etc.).
template <int N> struct uint_of_size;
template <> struct uint_of_size<1> { using type = uint8_t; };
template <> struct uint_of_size<2> { using type = uint16_t; };
template <> struct uint_of_size<4> { using type = uint32_t; };
template <> struct uint_of_size<8> { using type = uint64_t; };

}  // namespace tandem::kernels

/// Calls `__VA_ARGS__` (a lambda using `elem_t`) with elem_t an unsigned type of
/// `nbytes` bytes (1, 2, 4 or 8).
#define TANDEM_DISPATCH_BY_SIZE(nbytes, name, ...)                                           \
  [&] {                                                                                     \
    switch (nbytes) {                                                                       \
      case 1: { using elem_t = uint8_t; return __VA_ARGS__(); }                             \
      case 2: { using elem_t = uint16_t; return __VA_ARGS__(); }                            \
      case 4: { using elem_t = uint32_t; return __VA_ARGS__(); }                            \
      case 8: { using elem_t = uint64_t; return __VA_ARGS__(); }                            \
      default: break;                                                                       \
    }                                                                                       \
    throw ::tandem::TypeError(::tandem::str_cat("[", name, "] unsupported element size ", nbytes)); \
  }()

namespace tandem::kernels {

/// A 0-d tensor seen as 1-d of size 1 (PyTorch's ensure_nonempty_dim for gather/scatter);
/// other tensors are returned unchanged.
Tensor as_1d_if_scalar(const Tensor& t);

/// An alias of `t`'s storage at t's storage offset with the given sizes and strides (in
/// elements). Internal geometry helper: the caller keeps it inside the storage.
Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides);

/// An alias of `t` broadcast to `shape` (stride 0 in expanded dims), like expand() but
/// without dispatching; the caller has checked that t broadcasts to shape.
Tensor expand_alias(const Tensor& t, IntArrayRef shape);
/// A new contiguous tensor with t's values (clone() without dispatching).
Tensor contiguous_copy(const Tensor& t);

/// Iterates over every position of `shape` except along `dim` (whose index stays 0) and
/// calls f(ptrs) with one byte pointer per operand: operand k is addressed with its own
/// strides over `shape` (all operands must have shape.size() dims and sizes >= shape in
/// every dim but `dim`). Lines are split over threads when there are many; `line_cost`
/// (elements handled per line) sizes the grain.
template <typename F>
void for_each_line(ArrayRef<Tensor> operands, IntArrayRef shape, int64_t dim, int64_t line_cost, F&& f) {
  DimVector sz = shape.vec();
  if (!sz.empty()) sz[static_cast<size_t>(dim)] = 1;
  SmallVec<Tensor, kMaxOperands> views;
  for (const Tensor& t : operands) views.push_back(restride(t, sz, t.strides()));
  auto it = ElementwiseIter::make(views.ref(), sz);
  const int nops = it.nops;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, line_cost));
  for_each(
      it,
      [&](char** p, const int64_t* st, int64_t n) {
        char* q[kMaxOperands];
        for (int64_t i = 0; i < n; ++i) {
          for (int k = 0; k < nops; ++k) q[k] = p[k] + i * st[k];
          f(q);
        }
      },
      grain);
}

/// Reads element i of an int32 or int64 index tensor's line (byte pointer + element stride).
inline int64_t load_index(const char* p, int64_t i, int64_t stride_elems, bool is_int64) {
  if (is_int64) {
    int64_t v;
    std::memcpy(&v, p + i * stride_elems * 8, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p + i * stride_elems * 4, 4);
  return v;
}

/// Checks that every value of the int32/int64 tensor `index` lies in [0, size) (or in
/// [-size, size) when allow_negative). Raises IndexError
/// "[op] index 7 is out of bounds for dimension 0 with size 5" for the first bad value.
void check_index_range(const Tensor& index, int64_t size, bool allow_negative, const char* op, int64_t dim);

/// offsets[pos] = sum_k wrap(indices[k][pos]) * strides[k], for int64 index tensors
/// broadcast to offsets' shape (offsets: contiguous int64). wrap adds sizes[k] to negative
/// values. Raises IndexError "[op] index 5 is out of bounds for dimension dims[k] with size
/// sizes[k]" for values outside [-sizes[k], sizes[k]); nothing else is written then.
void compute_index_offsets(const Tensor& offsets, ArrayRef<Tensor> indices, IntArrayRef sizes, IntArrayRef strides,
                           IntArrayRef dims, const char* op);

/// Indices of the nonzero elements of `self` (NaN counts as nonzero) in row-major order:
/// an int64 tensor of shape [n, self.dim()].
Tensor nonzero(const Tensor& self);
/// Number of nonzero elements.
int64_t count_nonzero(const Tensor& self);

/// out[pos] = self_view[pos] at element offset offs[pos] (offsets in elements of self),
/// where self_view and offs are aliases with out's sizes (ElementwiseIter operands).
void gather_by_offsets(const Tensor& out, const Tensor& self_view, const Tensor& offs);
/// self_view[pos + offs[pos]] = values[pos] (or += when accumulate, in the dtype's
/// arithmetic; bool accumulates with OR). Runs serially in row-major order so duplicate
/// targets resolve deterministically (the last write wins).
void scatter_by_offsets(const Tensor& self_view, const Tensor& values, const Tensor& offs, bool accumulate);

/// Raises ValueError "[op] value 300 cannot be converted to type uint8 without overflow"
/// when `s` does not fit dtype `t` under PyTorch's checked conversion (c10::checked_convert):
/// integers take finite values within range (negative values wrap into unsigned types
/// when their magnitude fits); float16/bfloat16/float32 take any finite value up to the
/// type's max, inf and NaN; bool and float64 take anything.
void check_scalar_fits(const Scalar& s, DType t, const char* op);

/// Total order PyTorch's sort/topk/kthvalue/unique use: NaN is greater than every number
/// (and equal to NaN); -0.0 equals 0.0.
template <typename T>
inline bool nan_greatest_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (!std::isnan(a) && std::isnan(b)) || a < b;
  } else {
    return a < b;
  }
}
template <typename T>
inline bool nan_greatest_equal(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a == b || (std::isnan(a) && std::isnan(b));
  } else {
    return a == b;
  }
}

}  // namespace tandem::kernels
