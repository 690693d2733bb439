#pragma once
// Elementwise iteration over N strided operands of one broadcast shape (a small
// TensorIterator): operands are aligned to the output shape (broadcast dims get stride
// 0), adjacent dims that are contiguous for every operand are merged, and the loop body
// is called on rows of the innermost dim, split across threads for large tensors.
// Kernels only run on validated input; nothing here checks user errors.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tandem/core/parallel.h"
#include "tandem/core/small_vector.h"
#include "tandem/core/tensor.h"

namespace tandem::kernels {

inline constexpr int kMaxOperands = 6;

// Dense rows of the elementwise kernels are marked `omp simd`: GCC's -O2 cost model
// ("very cheap") never vectorises a loop that needs an aliasing check or a remainder
// loop, so without the hint plain float loops stay scalar. The hint asserts that
// iteration i only touches element i (true for elementwise ops, in place included), so
// loop bodies (the lambdas passed in) must not throw: check data before the loop.
#if defined(_OPENMP)
#define TANDEM_SIMD_LOOP _Pragma("omp simd")
#else
#define TANDEM_SIMD_LOOP
#endif
inline constexpr int kMaxDims = 16;

/// Arithmetic type used to compute on T: float for float16/bfloat16 (PyTorch CPU's
/// opmath), T otherwise.
template <typename T> struct opmath { using type = T; };
template <> struct opmath<Half> { using type = float; };
template <> struct opmath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename opmath<T>::type;

/// Operands laid out for iteration. Dim 0 is the innermost (fastest) dim.
struct ElementwiseIter {
  int nops = 0;
  int ndim = 0;
  int64_t numel = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // bytes
  char* base[kMaxOperands] = {};

  /// Builds the iteration for operands[0] (the output, defining the shape) and inputs
  /// broadcastable to it. Coalesces dims.
  static ElementwiseIter make(ArrayRef<Tensor> operands);
  /// Same, with an explicit iteration shape every operand broadcasts to.
  static ElementwiseIter make(ArrayRef<Tensor> operands, IntArrayRef shape);

  /// True when every operand's inner stride equals its element size (dense rows).
  bool inner_contiguous(const int64_t* elem_sizes) const {
    for (int k = 0; k < nops; ++k)
      if (ndim > 0 && strides[k][0] != elem_sizes[k]) return false;
    return true;
  }
};

/// Calls loop(ptrs, inner_strides_bytes, n) for every row in linear range [begin, end)
/// of the iteration's elements.
template <typename Loop>
void for_each_range(const ElementwiseIter& it, int64_t begin, int64_t end, Loop&& loop) {
  if (begin >= end) return;
  if (it.ndim == 0) {
    char* ptrs[kMaxOperands];
    int64_t st[kMaxOperands] = {};
    for (int k = 0; k < it.nops; ++k) ptrs[k] = it.base[k];
    loop(ptrs, st, int64_t{1});
    return;
  }
  const int64_t inner = it.shape[0];
  int64_t idx[kMaxDims] = {};
  int64_t lin = begin;
  // Multi-index of `begin`.
  int64_t rem = lin;
  for (int d = 0; d < it.ndim; ++d) {
    idx[d] = rem % it.shape[d];
    rem /= it.shape[d];
  }
  int64_t inner_st[kMaxOperands];
  for (int k = 0; k < it.nops; ++k) inner_st[k] = it.strides[k][0];
  while (lin < end) {
    char* ptrs[kMaxOperands];
    for (int k = 0; k < it.nops; ++k) {
      int64_t off = 0;
      for (int d = 0; d < it.ndim; ++d) off += idx[d] * it.strides[k][d];
      ptrs[k] = it.base[k] + off;
    }
    int64_t n = std::min(inner - idx[0], end - lin);
    loop(ptrs, inner_st, n);
    lin += n;
    idx[0] += n;
    for (int d = 0; d < it.ndim - 1 && idx[d] >= it.shape[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

/// Runs loop over all elements, in parallel when large.
template <typename Loop>
void for_each(const ElementwiseIter& it, Loop&& loop, int64_t grain = kGrainSize) {
  if (it.numel == 0) return;
  if (it.numel < grain) {
    for_each_range(it, 0, it.numel, loop);
    return;
  }
  parallel_for(0, it.numel, grain, [&](int64_t b, int64_t e) { for_each_range(it, b, e, loop); });
}

namespace detail {
template <typename T>
inline opmath_t<T> load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<opmath_t<T>>(v);
}
template <typename T, typename V>
inline void store(char* p, V v) {
  T t = static_cast<T>(v);
  std::memcpy(p, &t, sizeof(T));
}

// Dense bfloat16 rows run in blocks: widen a block to float32, apply f over float32
// arrays, round the block back. Each of the three loops vectorises on its own, where GCC
// leaves the element-by-element loop scalar when f selects (relu, threshold_backward: 3x
// slower than float32). The values are the element-by-element form's: f on the same
// float32 values, each result rounded once by core/half.h's rule. Only for an f that
// returns float (the opmath type), so nothing is rounded twice.
inline constexpr int64_t kBf16Block = 256;
template <bool Bf16, typename F, typename... Args>
struct returns_float : std::false_type {};  // f is only asked about bfloat16 (it may not take float otherwise)
template <typename F, typename... Args>
struct returns_float<true, F, Args...> : std::is_same<std::invoke_result_t<F&, Args...>, float> {};
template <typename Out, typename In, typename F, typename... Args>
inline constexpr bool kBlockedBf16 =
    returns_float<std::is_same_v<Out, BFloat16> && std::is_same_v<In, BFloat16>, F, Args...>::value;
inline void widen_bf16(const BFloat16* x, float* o, int64_t n) {
  TANDEM_SIMD_LOOP
  for (int64_t i = 0; i < n; ++i) o[i] = bfloat16_bits_to_float(x[i].bits);
}
/// float_to_bfloat16_bits (nearest even; NaN quiet with sign and payload kept), written
/// as selects so the loop vectorises.
inline void round_bf16(const float* x, BFloat16* o, int64_t n) {
  TANDEM_SIMD_LOOP
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    const uint32_t rounded = (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;
    const uint32_t quiet = (u >> 16) | 0x40u;
    o[i].bits = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}
}  // namespace detail

/// out[i] = f(a[i]) with out of type Out and a of type In; f takes and returns opmath values
/// and must not throw.
template <typename Out, typename In, typename F>
void unary_kernel(const Tensor& out, const Tensor& a, F f) {
  Tensor ops[2] = {out, a};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 2));
  for_each(it, [&](char** p, const int64_t* st, int64_t n) {
    if (st[0] == sizeof(Out) && st[1] == sizeof(In)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      // o and x are either the same buffer (in-place) or disjoint, so element i only
      // depends on x[i]: let the compiler vectorise without a runtime alias check
      // (which -O2's cost model refuses). The local copy of f keeps its captured
      // constants in registers (stores through o cannot alias them).
      F fl = f;
      if constexpr (detail::kBlockedBf16<Out, In, F, float>) {
        float a[detail::kBf16Block], r[detail::kBf16Block];
        for (int64_t b = 0; b < n; b += detail::kBf16Block) {
          const int64_t m = std::min(detail::kBf16Block, n - b);
          detail::widen_bf16(x + b, a, m);
          TANDEM_SIMD_LOOP
          for (int64_t i = 0; i < m; ++i) r[i] = fl(a[i]);
          detail::round_bf16(r, o + b, m);
        }
        return;
      }
      TANDEM_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(fl(static_cast<opmath_t<In>>(x[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        detail::store<Out>(p[0] + i * st[0], f(detail::load<In>(p[1] + i * st[1])));
    }
  });
}

/// out[i] = f(a[i], b[i]) with broadcasting; a and b share type In. f must not throw.
template <typename Out, typename In, typename F>
void binary_kernel(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  Tensor ops[3] = {out, a, b};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 3));
  using M = opmath_t<In>;
  for_each(it, [&](char** p, const int64_t* st, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if constexpr (detail::kBlockedBf16<Out, In, F, float, float>) {
      // bfloat16 rows in blocks (see detail::widen_bf16); a 0-stride operand is widened once.
      if (st[0] == sizeof(Out) && (st[1] == sizeof(In) || st[1] == 0) && (st[2] == sizeof(In) || st[2] == 0)) {
        float a[detail::kBf16Block], c[detail::kBf16Block], r[detail::kBf16Block];
        const bool xs = st[1] == 0, ys = st[2] == 0;
        const float xv = xs ? static_cast<float>(*x) : 0.0f, yv = ys ? static_cast<float>(*y) : 0.0f;
        F fl = f;
        for (int64_t b = 0; b < n; b += detail::kBf16Block) {
          const int64_t m = std::min(detail::kBf16Block, n - b);
          if (xs) std::fill(a, a + m, xv);
          else detail::widen_bf16(x + b, a, m);
          if (ys) std::fill(c, c + m, yv);
          else detail::widen_bf16(y + b, c, m);
          TANDEM_SIMD_LOOP
          for (int64_t i = 0; i < m; ++i) r[i] = fl(a[i], c[i]);
          detail::round_bf16(r, o + b, m);
        }
        return;
      }
    }
    if (st[0] == sizeof(Out) && st[1] == sizeof(In) && st[2] == sizeof(In)) {
      TANDEM_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<M>(x[i]), static_cast<M>(y[i])));
    } else if (st[0] == sizeof(Out) && st[1] == sizeof(In) && st[2] == 0) {
      const M yv = static_cast<M>(*y);
      TANDEM_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<M>(x[i]), yv));
    } else if (st[0] == sizeof(Out) && st[1] == 0 && st[2] == sizeof(In)) {
      const M xv = static_cast<M>(*x);
      TANDEM_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(xv, static_cast<M>(y[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        detail::store<Out>(p[0] + i * st[0], f(detail::load<In>(p[1] + i * st[1]), detail::load<In>(p[2] + i * st[2])));
    }
  });
}

/// out[i] = f(a[i], b[i], c[i]) with broadcasting; per-operand types A, B, C. f must not throw.
template <typename Out, typename A, typename B, typename C, typename F>
void ternary_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  Tensor ops[4] = {out, a, b, c};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 4));
  for_each(it, [&](char** p, const int64_t* st, int64_t n) {
    if (st[0] == sizeof(Out) && st[1] == sizeof(A) && st[2] == sizeof(B) && st[3] == sizeof(C)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const A* x = reinterpret_cast<const A*>(p[1]);
      const B* y = reinterpret_cast<const B*>(p[2]);
      const C* z = reinterpret_cast<const C*>(p[3]);
      TANDEM_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<Out>(f(static_cast<opmath_t<A>>(x[i]), static_cast<opmath_t<B>>(y[i]),
                                  static_cast<opmath_t<C>>(z[i])));
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      detail::store<Out>(p[0] + i * st[0], f(detail::load<A>(p[1] + i * st[1]), detail::load<B>(p[2] + i * st[2]),
                                             detail::load<C>(p[3] + i * st[3])));
  });
}

/// Copies src into dst (same logical shape after broadcasting src), converting dtypes.
void copy_kernel(const Tensor& dst, const Tensor& src);
/// Widens in place: the first numel() 2-byte values (bfloat16 or float16, `from`) at the
/// start of dst's bytes become dst's float32 values, each converted as copy_kernel
/// converts it (exactly). dst: contiguous float32; its front half holds the narrow values
/// (a producer wrote them there), so a cast of a dying narrow result needs no second
/// buffer. Values move from the top down in halving rounds of copy_kernel over views
/// whose reads and writes do not overlap (measured: about 3x a copy into another buffer).
/// TypeError for another dtype, ValueError for a non-contiguous dst.
void widen_in_place(const Tensor& dst, DType from);
/// Fills every element of dst with value (converted to dst's dtype).
void fill_kernel(const Tensor& dst, const Scalar& value);

}  // namespace tandem::kernels

/// Dispatch over the floating dtypes (float32, float64, float16, bfloat16).
#define TANDEM_DISPATCH_FLOATING_TYPES(dtype, name, ...)                              \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      TANDEM_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Float64, double, __VA_ARGS__)                               \
      TANDEM_DISPATCH_CASE(Float16, ::tandem::Half, __VA_ARGS__)                       \
      TANDEM_DISPATCH_CASE(BFloat16, ::tandem::BFloat16, __VA_ARGS__)                  \
      default: break;                                                                  \
    }                                                                                  \
    throw ::tandem::TypeError(::tandem::str_cat("[", name, "] got dtype ",            \
                                                ::tandem::dtype_name(dtype), ", expected a floating dtype")); \
  }()
/// Dispatch over integer and floating dtypes (no bool).
#define TANDEM_DISPATCH_NUMERIC_TYPES(dtype, name, ...)                               \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      TANDEM_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                                  \
      TANDEM_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Float64, double, __VA_ARGS__)                               \
      TANDEM_DISPATCH_CASE(Float16, ::tandem::Half, __VA_ARGS__)                       \
      TANDEM_DISPATCH_CASE(BFloat16, ::tandem::BFloat16, __VA_ARGS__)                  \
      default: break;                                                                  \
    }                                                                                  \
    throw ::tandem::TypeError(::tandem::str_cat("[", name, "] got dtype ",            \
                                                ::tandem::dtype_name(dtype), ", expected a numeric dtype")); \
  }()
/// Dispatch over integer dtypes (with bool when the op allows it).
#define TANDEM_DISPATCH_INTEGRAL_TYPES(dtype, name, ...)                              \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      TANDEM_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                                    \
      TANDEM_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                                  \
      TANDEM_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                                \
      default: break;                                                                  \
    }                                                                                  \
    throw ::tandem::TypeError(::tandem::str_cat("[", name, "] got dtype ",            \
                                                ::tandem::dtype_name(dtype), ", expected an integral dtype")); \
  }()
