// Pooling forward kernels (declared in conv.h): oneDNN for the float32 cases it covers
// exactly, plain loops over planes (parallel over N*C) for the rest.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <vector>
#include <type_traits>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/conv.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/onednn.h"

namespace tandem::kernels {

namespace {

Tensor contiguous_copy(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype());
  copy_kernel(c, t);
  return c;
}

/// Runs f(plane_begin, plane_end) over N*C planes, in parallel when the work is large.
template <typename F>
void for_planes(int64_t planes, int64_t work_per_plane, F f) {
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work_per_plane, 1));
  parallel_for(0, planes, grain, f);
}

/// Right/bottom padding that makes oneDNN's floor((in + pad + r - k) / s) + 1 equal `out`:
/// `pad` itself unless ceil_mode added a window, then the window's overhang.
int64_t end_padding(int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad) {
  if ((in + 2 * pad - k) / s + 1 == out) return pad;
  return (out - 1) * s + k - in - pad;
}

/// True when oneDNN's float32 pooling computes exactly PyTorch's result.
bool onednn_pool_padding(const Pool2dGeometry& g, onednn::PoolPadding& p) {
  if (g.dil_h != 1 || g.dil_w != 1) return false;
  p.t = g.pad_h;
  p.l = g.pad_w;
  p.b = end_padding(g.H, g.OH, g.KH, g.stride_h, g.pad_h);
  p.r = end_padding(g.W, g.OW, g.KW, g.stride_w, g.pad_w);
  return p.b >= 0 && p.r >= 0 && p.b < g.KH && p.r < g.KW;
}

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>, float, T>;

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

template <typename T>
void max_pool_loop(const Pool2dGeometry& g, const Tensor& out, const Tensor& indices, const Tensor& input) {
  using A = acc_t<T>;
  const T* x = static_cast<const T*>(input.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  int64_t* ind = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  const int64_t HW = g.H * g.W, OP = g.OH * g.OW;
  for_planes(g.N * g.C, OP * g.KH * g.KW, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * HW;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t hs = oh * g.stride_h - g.pad_h;
        const int64_t he = std::min(hs + (g.KH - 1) * g.dil_h + 1, g.H);
        while (hs < 0) hs += g.dil_h;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          int64_t ws = ow * g.stride_w - g.pad_w;
          const int64_t we = std::min(ws + (g.KW - 1) * g.dil_w + 1, g.W);
          while (ws < 0) ws += g.dil_w;
          int64_t best = hs * g.W + ws;
          A m = -std::numeric_limits<A>::infinity();
          for (int64_t h = hs; h < he; h += g.dil_h)
            for (int64_t w = ws; w < we; w += g.dil_w) {
              const A v = static_cast<A>(plane[h * g.W + w]);
              if (v > m || is_nan(v)) {
                m = v;
                best = h * g.W + w;
              }
            }
          y[p * OP + oh * g.OW + ow] = static_cast<T>(m);
          if (ind) ind[p * OP + oh * g.OW + ow] = best;
        }
      }
    }
  });
}

template <typename A>
inline A nan_max(A m, A v) {
  return (v > m || v != v) ? v : m;  // NaN wins, as in PyTorch
}

/// Max pooling without indices. Per output row: the elementwise max of the window's input
/// rows (contiguous), then, for the windows that lie inside the row, the max over the
/// window's columns as a loop over outputs per kernel column (both vectorise); windows
/// that cross the left/right edge take the scalar path.
template <typename T>
void max_pool_values(const Pool2dGeometry& g, const Tensor& out, const Tensor& input) {
  using A = acc_t<T>;
  const T* x = static_cast<const T*>(input.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t HW = g.H * g.W, OP = g.OH * g.OW;
  const int64_t sw = g.stride_w, dw = g.dil_w, pw = g.pad_w;
  // Outputs [lo, hi) have their whole window inside [0, W).
  const int64_t lo = std::min((pw + sw - 1) / sw, g.OW);
  int64_t hi = g.OW;
  while (hi > lo && (hi - 1) * sw - pw + (g.KW - 1) * dw >= g.W) --hi;
  if (g.KH == 2 && g.KW == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0 &&
      g.dil_h == 1 && g.dil_w == 1 && 2 * g.OH <= g.H && 2 * g.OW <= g.W) {
    // The common 2x2, stride 2 window: one vectorised pass per output row.
    for_planes(g.N * g.C, OP * 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p)
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const T* r0 = x + p * HW + 2 * oh * g.W;
          const T* r1 = r0 + g.W;
          T* yr = y + p * OP + oh * g.OW;
#pragma omp simd
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            A m = static_cast<A>(r0[2 * ow]);
            m = nan_max(m, static_cast<A>(r0[2 * ow + 1]));
            m = nan_max(m, static_cast<A>(r1[2 * ow]));
            m = nan_max(m, static_cast<A>(r1[2 * ow + 1]));
            yr[ow] = static_cast<T>(m);
          }
        }
    });
    return;
  }
  for_planes(g.N * g.C, OP * g.KH * g.KW, [&](int64_t b, int64_t e) {
    std::vector<A> rowmax(static_cast<size_t>(g.W)), outrow(static_cast<size_t>(g.OW));
    A* rm = rowmax.data();
    A* acc = outrow.data();
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * HW;
      T* yp = y + p * OP;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t hs = oh * g.stride_h - g.pad_h;
        const int64_t he = std::min(hs + (g.KH - 1) * g.dil_h + 1, g.H);
        while (hs < 0) hs += g.dil_h;
        const T* r0 = plane + hs * g.W;
#pragma omp simd
        for (int64_t w = 0; w < g.W; ++w) rm[w] = static_cast<A>(r0[w]);
        for (int64_t h = hs + g.dil_h; h < he; h += g.dil_h) {
          const T* r = plane + h * g.W;
#pragma omp simd
          for (int64_t w = 0; w < g.W; ++w) rm[w] = nan_max(rm[w], static_cast<A>(r[w]));
        }
        // Interior windows: one pass over the outputs per kernel column.
        const A* base = rm - pw;
#pragma omp simd
        for (int64_t ow = lo; ow < hi; ++ow) acc[ow] = base[ow * sw];
        for (int64_t kw = 1; kw < g.KW; ++kw) {
          const A* col = base + kw * dw;
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) acc[ow] = nan_max(acc[ow], col[ow * sw]);
        }
        // Edge windows.
        auto edge = [&](int64_t ow) {
          int64_t ws = ow * sw - pw;
          const int64_t we = std::min(ws + (g.KW - 1) * dw + 1, g.W);
          while (ws < 0) ws += dw;
          A m = rm[ws];
          for (int64_t w = ws + dw; w < we; w += dw) m = nan_max(m, rm[w]);
          acc[ow] = m;
        };
        for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
        for (int64_t ow = std::max(hi, lo); ow < g.OW; ++ow) edge(ow);
        T* yr = yp + oh * g.OW;
#pragma omp simd
        for (int64_t ow = 0; ow < g.OW; ++ow) yr[ow] = static_cast<T>(acc[ow]);
      }
    }
  });
}

template <typename T>
void avg_pool_loop(const Pool2dGeometry& g, const Tensor& out, const Tensor& input, bool count_include_pad,
                   std::optional<int64_t> divisor_override) {
  using A = acc_t<T>;
  const T* x = static_cast<const T*>(input.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t HW = g.H * g.W, OP = g.OH * g.OW;
  for_planes(g.N * g.C, OP * g.KH * g.KW, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * HW;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t hs = oh * g.stride_h - g.pad_h;
        int64_t he = std::min(hs + g.KH, g.H + g.pad_h);
        const int64_t ph = he - hs;
        hs = std::max<int64_t>(hs, 0);
        he = std::min(he, g.H);
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          int64_t ws = ow * g.stride_w - g.pad_w;
          int64_t we = std::min(ws + g.KW, g.W + g.pad_w);
          const int64_t pool = ph * (we - ws);
          ws = std::max<int64_t>(ws, 0);
          we = std::min(we, g.W);
          A sum = A(0);
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w) sum = static_cast<A>(sum + static_cast<A>(plane[h * g.W + w]));
          int64_t div = divisor_override ? *divisor_override : count_include_pad ? pool : (he - hs) * (we - ws);
          A r;
          if (div == 0) r = A(0);  // an empty window (only reachable with zero-size planes)
          else r = static_cast<A>(sum / static_cast<A>(div));
          y[p * OP + oh * g.OW + ow] = static_cast<T>(r);
        }
      }
    }
  });
}

inline int64_t start_index(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
inline int64_t end_index(int64_t o, int64_t out, int64_t in) { return ((o + 1) * in + out - 1) / out; }

template <typename T>
void adaptive_loop(const Tensor& out, const Tensor& indices, const Tensor& input, bool is_max) {
  using A = acc_t<T>;
  const int64_t planes = input.size(0) * input.size(1), H = input.size(2), W = input.size(3);
  const int64_t OH = out.size(2), OW = out.size(3);
  const T* x = static_cast<const T*>(input.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  int64_t* ind = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  const int64_t win = ((H + OH - 1) / std::max<int64_t>(OH, 1) + 1) * ((W + OW - 1) / std::max<int64_t>(OW, 1) + 1);
  for_planes(planes, OH * OW * win, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * H * W;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t hs = start_index(oh, OH, H), he = end_index(oh, OH, H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t ws = start_index(ow, OW, W), we = end_index(ow, OW, W);
          const int64_t o = p * OH * OW + oh * OW + ow;
          if (is_max) {
            A m = -std::numeric_limits<A>::infinity();
            int64_t best = hs * W + ws;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) {
                const A v = static_cast<A>(plane[h * W + w]);
                if (v > m || is_nan(v)) {
                  m = v;
                  best = h * W + w;
                }
              }
            y[o] = static_cast<T>(m);
            ind[o] = best;
          } else {
            A sum = A(0);
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) sum += static_cast<A>(plane[h * W + w]);
            y[o] = static_cast<T>(sum / static_cast<A>((he - hs) * (we - ws)));
          }
        }
      }
    }
  });
}

[[noreturn]] void bad_dtype(const char* op, DType dt) {
  throw TypeError(str_cat("[", op, "] unsupported dtype ", dtype_name(dt)));
}

/// Max-pool gradient: zero each input plane, then add every output gradient at its
/// window's argmax (max_pool_loop's rule: first maximum, NaN wins). The common 2x2,
/// stride 2 window without padding or dilation takes a branch-light path.
template <typename T>
void max_pool_backward_loop(const Pool2dGeometry& g, const Tensor& grad_input, const Tensor& grad_output,
                            const Tensor& input) {
  using A = acc_t<T>;
  const T* x = static_cast<const T*>(input.data_ptr());
  const T* go = static_cast<const T*>(grad_output.data_ptr());
  T* gi = static_cast<T*>(grad_input.data_ptr());
  const int64_t HW = g.H * g.W, OP = g.OH * g.OW;
  const bool k2s2 = g.KH == 2 && g.KW == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0 &&
                    g.dil_h == 1 && g.dil_w == 1 && 2 * g.OH <= g.H && 2 * g.OW <= g.W;
  for_planes(g.N * g.C, HW + OP * g.KH * g.KW, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * HW;
      const T* gp = go + p * OP;
      T* dst = gi + p * HW;
      if (k2s2) {
        // Branch-free (the argmax of random data defeats branch prediction): every
        // position of a window is written, the gradient at the argmax and 0 elsewhere;
        // only rows/columns no window covers are zero-filled.
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const T* r0 = plane + 2 * oh * g.W;
          const T* r1 = r0 + g.W;
          // The gradient is moved, not computed: bfloat16/float16 values move as their bits
          // (GCC does not vectorise selects of the 2-byte structs; +0.0 is bits 0).
          using S = std::conditional_t<std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>, uint16_t, T>;
          S* d0 = reinterpret_cast<S*>(dst + 2 * oh * g.W);
          S* d1 = d0 + g.W;
          const S* gr = reinterpret_cast<const S*>(gp + oh * g.OW);
#pragma omp simd
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const A a = static_cast<A>(r0[2 * ow]), b = static_cast<A>(r0[2 * ow + 1]);
            const A c = static_cast<A>(r1[2 * ow]), d = static_cast<A>(r1[2 * ow + 1]);
            // max_pool_loop's rule in window order a, b, c, d (a later value wins when it is
            // greater or NaN), as a row-pair tournament: within each row, then row 1 against
            // row 0; the same winner (first maximum, else last NaN), without branches.
            const bool tb = b > a || b != b;
            const A m0 = tb ? b : a;
            const bool td = d > c || d != d;
            const A m1 = td ? d : c;
            // m1 is NaN exactly when c or d is (testing m1 itself stops GCC vectorising).
            const bool t1 = m1 > m0 || c != c || d != d;
            const S gv = gr[ow];
            const S hi = t1 ? gv : S(0), lo = t1 ? S(0) : gv;
            d0[2 * ow] = tb ? S(0) : lo;
            d0[2 * ow + 1] = tb ? lo : S(0);
            d1[2 * ow] = td ? S(0) : hi;
            d1[2 * ow + 1] = td ? hi : S(0);
          }
          for (int64_t w = 2 * g.OW; w < g.W; ++w) d0[w] = d1[w] = S(0);
        }
        std::fill(dst + 2 * g.OH * g.W, dst + HW, T(0));
        continue;
      }
      std::fill(dst, dst + HW, T(0));
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t hs = oh * g.stride_h - g.pad_h;
        const int64_t he = std::min(hs + (g.KH - 1) * g.dil_h + 1, g.H);
        while (hs < 0) hs += g.dil_h;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          int64_t ws = ow * g.stride_w - g.pad_w;
          const int64_t we = std::min(ws + (g.KW - 1) * g.dil_w + 1, g.W);
          while (ws < 0) ws += g.dil_w;
          int64_t best = hs * g.W + ws;
          A m = -std::numeric_limits<A>::infinity();
          for (int64_t h = hs; h < he; h += g.dil_h)
            for (int64_t w = ws; w < we; w += g.dil_w) {
              const A v = static_cast<A>(plane[h * g.W + w]);
              if (v > m || is_nan(v)) {
                m = v;
                best = h * g.W + w;
              }
            }
          dst[best] = static_cast<T>(static_cast<A>(dst[best]) + static_cast<A>(gp[oh * g.OW + ow]));
        }
      }
    }
  });
}

}  // namespace

void max_pool2d_backward(const Pool2dGeometry& g, const Tensor& grad_input, const Tensor& grad_output,
                         const Tensor& input) {
  if (grad_input.numel() == 0) return;
  const Tensor x = contiguous_copy(input), go = contiguous_copy(grad_output);
  switch (grad_input.dtype()) {
    case DType::Float32: return max_pool_backward_loop<float>(g, grad_input, go, x);
    case DType::Float64: return max_pool_backward_loop<double>(g, grad_input, go, x);
    case DType::BFloat16: return max_pool_backward_loop<BFloat16>(g, grad_input, go, x);
    case DType::Float16: return max_pool_backward_loop<Half>(g, grad_input, go, x);
    default: bad_dtype("max_pool2d_backward", grad_input.dtype());
  }
}

void max_pool2d_forward(const Pool2dGeometry& g, const Tensor& out, const Tensor& indices, const Tensor& input) {
  if (out.numel() == 0) return;
  Tensor x = contiguous_copy(input);
  // Not oneDNN: its max pooling neither propagates NaN nor returns -inf for an all -inf
  // window (it starts from the lowest finite float).
  if (!indices.defined()) {
    switch (out.dtype()) {
      case DType::Float32: return max_pool_values<float>(g, out, x);
      case DType::Float64: return max_pool_values<double>(g, out, x);
      case DType::BFloat16: return max_pool_values<BFloat16>(g, out, x);
      case DType::Float16: return max_pool_values<Half>(g, out, x);
      default: bad_dtype("max_pool2d", out.dtype());
    }
  }
  switch (out.dtype()) {
    case DType::Float32: return max_pool_loop<float>(g, out, indices, x);
    case DType::Float64: return max_pool_loop<double>(g, out, indices, x);
    case DType::BFloat16: return max_pool_loop<BFloat16>(g, out, indices, x);
    case DType::Float16: return max_pool_loop<Half>(g, out, indices, x);
    default: bad_dtype("max_pool2d", out.dtype());
  }
}

namespace {
// 8 floats as a GCC vector: compares give lane masks and `mask ? a : b` is a blend, so the
// NaN-propagating max and ReLU below compile to branch-free vector code (GCC does not
// if-convert the scalar forms, and random signs defeat branch prediction).
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef uint16_t v8h __attribute__((vector_size(16)));
inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }
/// bfloat16 lanes widened to float (exact: the bits move to the top half).
inline v8f load8(const BFloat16* p) {
  v8h h;
  std::memcpy(&h, p, sizeof h);
  const v8u u = __builtin_convertvector(h, v8u) << 16;
  v8f v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
/// float lanes rounded to bfloat16 exactly as float_to_bfloat16_bits (core/half.h) rounds
/// one value: nearest even, NaN made quiet with its sign and payload kept. The kernels
/// below store only values read from bfloat16 (ReLU and max select, never compute), where
/// this is the identity except that a signalling NaN becomes quiet, as the unfused
/// bfloat16 relu (computed in float32, rounded once) makes it.
inline void store8(BFloat16* p, v8f v) {
  v8u x;
  std::memcpy(&x, &v, sizeof x);
  const v8u nan = (x & 0x7fffffffu) > 0x7f800000u;
  const v8u rounded = (x + (0x7fffu + ((x >> 16) & 1u))) >> 16;
  const v8u r = nan ? ((x >> 16) | 0x40u) : rounded;
  const v8h h = __builtin_convertvector(r, v8h);
  std::memcpy(static_cast<void*>(p), &h, sizeof h);
}
/// nan_max: v if v > m or v is NaN, else m.
inline v8f max8(v8f m, v8f v) { return ((v > m) | (v != v)) ? v : m; }
inline float max1(float m, float v) { return (v > m || v != v) ? v : m; }
/// relu's kernel (x < 0 ? 0 : x: NaN and -0.0 pass) when RELU.
template <bool RELU>
inline v8f relu8(v8f v) {
  if constexpr (RELU) return v < v8f{} ? v8f{} : v;
  else return v;
}
template <bool RELU>
inline float relu1(float v) {
  if constexpr (RELU) return v < 0.0f ? 0.0f : v;
  else return v;
}

/// The position of each lane's window maximum in a 2x2 window (a b / c d), as a code 0..3
/// (a=0, b=1, c=2, d=3) chosen by max_pool_backward_loop's rule for that window (a row-pair
/// tournament: first maximum, else the last NaN), so the fused backward puts the gradient
/// where max_pool2d_backward would.
inline v8i window_codes8(v8f a, v8f b, v8f c, v8f d) {
  const v8i tb = (b > a) | (b != b);
  const v8f m0 = tb ? b : a;
  const v8i td = (d > c) | (d != d);
  const v8f m1 = td ? d : c;
  const v8i t1 = (m1 > m0) | (c != c) | (d != d);
  return (t1 & 2) | ((t1 ? td : tb) & 1);
}
/// The window code the fused block stores: window_codes8's position, plus 4 where the
/// window's maximum m is <= 0 (+-0 after the ReLU; not NaN), where threshold_backward drops
/// the gradient: so the backward needs neither the ReLU result nor the pooled output.
inline v8i pool_codes8(v8f a, v8f b, v8f c, v8f d, v8f m) {
  return window_codes8(a, b, c, d) | ((m <= v8f{}) & 4);
}
inline void store_codes8(uint8_t* p, v8i code) {
  for (int k = 0; k < 8; ++k) p[k] = static_cast<uint8_t>(code[k]);
}

typedef uint8_t v16u8 __attribute__((vector_size(16)));
/// Transposes the 16 x 16 bytes m[i][j] into m[j][i]: four rounds of interleaving row i
/// with row i + 8 (the perfect shuffle), 64 byte shuffles instead of 256 scalar moves.
inline void transpose_bytes16(v16u8 m[16]) {
  for (int round = 0; round < 4; ++round) {
    v16u8 t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = __builtin_shufflevector(m[i], m[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      t[2 * i + 1] =
          __builtin_shufflevector(m[i], m[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    }
    for (int i = 0; i < 16; ++i) m[i] = t[i];
  }
}

/// relu_max_pool_layout_f32 for channel blocks of CB (a multiple of 8) and a ReLU flag.
template <typename T, int CB, bool RELU>
void relu_max_pool_blocks(const Pool2dGeometry& g, const T* x, const int64_t* st, T* out, const int64_t* os,
                          uint8_t* indices) {
  const bool two_by_two = g.KH == 2 && g.KW == 2 && g.stride_h == 2 && g.stride_w == 2;
  const int64_t nblk = g.C / CB, OP = g.OH * g.OW;
  for_planes(g.N * nblk, OP * CB * g.KH * g.KW, [&](int64_t b, int64_t e) {
    std::vector<T> row(static_cast<size_t>(g.OW * CB));
    std::vector<uint8_t> codes(indices ? static_cast<size_t>(g.OW * CB) : 0);
    for (int64_t p = b; p < e; ++p) {
      const int64_t n = p / nblk, cb = p % nblk;
      const T* base = x + n * st[0] + cb * st[1];
      T* yb = out + n * os[0] + cb * CB * os[1];
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          T* acc = row.data() + ow * CB;
          const T* w0 = base + oh * g.stride_h * st[2] + ow * g.stride_w * st[3];
          for (int k = 0; k < CB; k += 8) {
            v8f m{};
            if (two_by_two) {  // max_pool_values' 2x2 order: (0,0) (0,1) (1,0) (1,1)
              const v8f a = relu8<RELU>(load8(w0 + k)), bb = relu8<RELU>(load8(w0 + st[3] + k));
              const v8f c = relu8<RELU>(load8(w0 + st[2] + k)), d = relu8<RELU>(load8(w0 + st[2] + st[3] + k));
              m = max8(max8(max8(a, bb), c), d);
              if (indices) store_codes8(codes.data() + ow * CB + k, pool_codes8(a, bb, c, d, m));
            } else {  // its general order: max over rows per column, then over columns
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const T* r = w0 + kw * st[3] + k;
                v8f col = relu8<RELU>(load8(r));
                for (int64_t kh = 1; kh < g.KH; ++kh) col = max8(col, relu8<RELU>(load8(r + kh * st[2])));
                m = kw == 0 ? col : max8(m, col);
              }
            }
            store8(acc + k, m);
          }
        }
        // The transposing copies below read sizes and strides from locals: through the
        // geometry, every byte store (which may alias anything) made the loop reload them
        // (a sixth of the bfloat16 cnn step's block time).
        const int64_t OW = g.OW, plane = OP, os1 = os[1], os2 = os[2], os3 = os[3];
        const T* rw = row.data();
        if (indices) {  // NCHW, contiguous
          uint8_t* ib = indices + (n * g.C + cb * CB) * plane + oh * OW;
          const uint8_t* cs = codes.data();
          int64_t w0 = 0;
          if constexpr (CB == 16) {
            // 16 windows x 16 channels at a time, through a byte transpose. A store may run
            // past the row into the plane's next rows (written after it), never past the
            // plane: a partial group too near the plane's end goes through the loop below.
            for (; w0 < OW && oh * OW + w0 + 16 <= plane; w0 += 16) {
              const int64_t nw = std::min<int64_t>(16, OW - w0);
              v16u8 m[16];
              for (int i = 0; i < 16; ++i) {
                m[i] = v16u8{};
                if (i < nw) std::memcpy(&m[i], cs + (w0 + i) * CB, sizeof m[i]);
              }
              transpose_bytes16(m);
              for (int k = 0; k < CB; ++k) std::memcpy(ib + k * plane + w0, &m[k], sizeof m[k]);
            }
          }
          for (int k = 0; k < CB; ++k)
            for (int64_t ow = w0; ow < OW; ++ow) ib[k * plane + ow] = cs[ow * CB + k];
        }
        // `row` holds channels innermost: copied as is into a channels-last output, else
        // one pass per channel.
        if (os1 == 1) {
          for (int64_t ow = 0; ow < OW; ++ow) std::memcpy(yb + oh * os2 + ow * os3, rw + ow * CB, CB * sizeof(T));
        } else if (os3 == 1) {
          for (int k = 0; k < CB; ++k) {
            T* yr = yb + k * os1 + oh * os2;
            for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = rw[ow * CB + k];
          }
        } else {
          for (int k = 0; k < CB; ++k) {
            T* yr = yb + k * os1 + oh * os2;
            for (int64_t ow = 0; ow < OW; ++ow) yr[ow * os3] = rw[ow * CB + k];
          }
        }
      }
    }
  });
}

/// Plain layout (any strides), in max_pool_values' order.
template <typename T, bool RELU>
void relu_max_pool_plain(const Pool2dGeometry& g, const T* x, const int64_t* st, T* out, const int64_t* os,
                         uint8_t* indices) {
  const bool two_by_two = g.KH == 2 && g.KW == 2 && g.stride_h == 2 && g.stride_w == 2 && st[3] == 1;
  // 8 outputs from 16 inputs of two rows (even and odd columns); their window codes too
  // when `code` is not null.
  auto eight = [](const T* r0, const T* r1, T* y, uint8_t* code) {
    const v8f a0 = load8(r0), a1 = load8(r0 + 8), b0 = load8(r1), b1 = load8(r1 + 8);
    const v8f a = relu8<RELU>(__builtin_shufflevector(a0, a1, 0, 2, 4, 6, 8, 10, 12, 14));
    const v8f b = relu8<RELU>(__builtin_shufflevector(a0, a1, 1, 3, 5, 7, 9, 11, 13, 15));
    const v8f c = relu8<RELU>(__builtin_shufflevector(b0, b1, 0, 2, 4, 6, 8, 10, 12, 14));
    const v8f d = relu8<RELU>(__builtin_shufflevector(b0, b1, 1, 3, 5, 7, 9, 11, 13, 15));
    const v8f m = max8(max8(max8(a, b), c), d);
    store8(y, m);
    if (code) store_codes8(code, pool_codes8(a, b, c, d, m));
  };
  for_planes(g.N * g.C, g.OH * g.OW * g.KH * g.KW, [&](int64_t b, int64_t e) {
    std::vector<float> rm(static_cast<size_t>(g.W));
    std::vector<T> tmp(static_cast<size_t>(g.OW));
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + (p / g.C) * st[0] + (p % g.C) * st[1];
      T* yp = out + (p / g.C) * os[0] + (p % g.C) * os[1];
      uint8_t* ip = indices ? indices + p * g.OH * g.OW : nullptr;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        const T* r0 = plane + oh * g.stride_h * st[2];
        // A row of outputs, computed in place when the output row is contiguous.
        T* yr = os[3] == 1 ? yp + oh * os[2] : tmp.data();
        uint8_t* ir = ip ? ip + oh * g.OW : nullptr;
        if (two_by_two) {
          const T* r1 = r0 + st[2];
          int64_t ow = 0;
          for (; ow + 8 <= g.OW; ow += 8) eight(r0 + 2 * ow, r1 + 2 * ow, yr + ow, ir ? ir + ow : nullptr);
          if (ow < g.OW) {  // the last partial group, through zero-padded copies
            const size_t rest = static_cast<size_t>(g.OW - ow);
            T a[16] = {}, bb[16] = {}, y[8];
            uint8_t cd[8];
            std::memcpy(a, r0 + 2 * ow, 2 * rest * sizeof(T));
            std::memcpy(bb, r1 + 2 * ow, 2 * rest * sizeof(T));
            eight(a, bb, y, cd);
            std::memcpy(yr + ow, y, rest * sizeof(T));
            if (ir) std::memcpy(ir + ow, cd, rest);
          }
        } else {
          for (int64_t w = 0; w < g.W; ++w) {
            float m = relu1<RELU>(static_cast<float>(r0[w * st[3]]));
            for (int64_t kh = 1; kh < g.KH; ++kh)
              m = max1(m, relu1<RELU>(static_cast<float>(r0[kh * st[2] + w * st[3]])));
            rm[static_cast<size_t>(w)] = m;
          }
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            float m = rm[static_cast<size_t>(ow * g.stride_w)];
            for (int64_t kw = 1; kw < g.KW; ++kw) m = max1(m, rm[static_cast<size_t>(ow * g.stride_w + kw)]);
            yr[ow] = static_cast<T>(m);
          }
        }
        if (os[3] != 1)
          for (int64_t ow = 0; ow < g.OW; ++ow) yp[oh * os[2] + ow * os[3]] = tmp[static_cast<size_t>(ow)];
      }
    }
  });
}

template <typename T>
void relu_max_pool_layout(const Pool2dGeometry& g, const T* x, int64_t cblock, const int64_t* st, bool relu, T* out,
                          const int64_t* os, uint8_t* indices) {
  // The values and the order of max_pool_values (and of relu before it), so the result
  // is bitwise the unfused one: the 2x2 / stride 2 window in its order (0,0) (0,1) (1,0)
  // (1,1); other windows as the max over rows per column, then over columns.
  TANDEM_INTERNAL_ASSERT(!indices || (g.KH == 2 && g.KW == 2 && g.stride_h == 2 && g.stride_w == 2 &&
                                      (cblock > 1 || st[3] == 1)),
                         "relu_max_pool_layout: window codes need a 2x2, stride 2 window");
  if (cblock == 16)
    return relu ? relu_max_pool_blocks<T, 16, true>(g, x, st, out, os, indices)
                : relu_max_pool_blocks<T, 16, false>(g, x, st, out, os, indices);
  if (cblock == 8)
    return relu ? relu_max_pool_blocks<T, 8, true>(g, x, st, out, os, indices)
                : relu_max_pool_blocks<T, 8, false>(g, x, st, out, os, indices);
  TANDEM_INTERNAL_ASSERT(cblock == 1, "relu_max_pool_layout: channel block ", cblock);
  return relu ? relu_max_pool_plain<T, true>(g, x, st, out, os, indices)
              : relu_max_pool_plain<T, false>(g, x, st, out, os, indices);
}

// The loops of max_pool2d_relu_backward: every plane's rows of windows, `group` making W
// windows at a time (group(g, codes, row0, row1): W gradients and window codes in, both
// input rows' 2W values out, row0 stored before row1), a last partial group,
// then the columns and the row no window covers set to +0. A partial group runs at full
// width where that stays inside the tensors and its extra stores land in this plane's later
// rows, which are written after it (the cnn's 14- and 7-window rows are all partial groups
// at W = 16); otherwise, the plane's last row, through padded copies.
template <int W, typename T, typename Group>
void relu_pool_backward_rows(const Pool2dGeometry& g, T* grad_input, const T* grad_output, const uint8_t* indices,
                             Group group) {
  const int64_t HW = g.H * g.W, OP = g.OH * g.OW, pooled = g.N * g.C * OP;
  for_planes(g.N * g.C, HW + OP, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      T* dst = grad_input + p * HW;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        T* d0 = dst + 2 * oh * g.W;
        T* d1 = d0 + g.W;
        const int64_t at = p * OP + oh * g.OW;
        const T* gr = grad_output + at;
        const uint8_t* ir = indices + at;
        const int64_t tail = g.OW - g.OW % W;  // where the partial group starts
        const bool wide_tail = tail < g.OW && oh + 1 < g.OH && at + tail + W <= pooled &&
                               (d1 + 2 * tail + 2 * W) - dst <= HW;
        // First, so that what its row-0 stores write past the row (the start of row 1) is
        // written again by the full groups after it.
        if (wide_tail) group(gr + tail, ir + tail, d0 + 2 * tail, d1 + 2 * tail);
        int64_t ow = 0;
        for (; ow + W <= g.OW; ow += W) group(gr + ow, ir + ow, d0 + 2 * ow, d1 + 2 * ow);
        if (ow < g.OW && !wide_tail) {
          const size_t rest = static_cast<size_t>(g.OW - ow);
          T gb[W] = {}, r0[2 * W], r1[2 * W];
          uint8_t cb[W] = {};
          std::memcpy(static_cast<void*>(gb), gr + ow, rest * sizeof(T));
          std::memcpy(cb, ir + ow, rest);
          group(gb, cb, r0, r1);
          std::memcpy(static_cast<void*>(d0 + 2 * ow), r0, 2 * rest * sizeof(T));
          std::memcpy(static_cast<void*>(d1 + 2 * ow), r1, 2 * rest * sizeof(T));
        }
        for (int64_t w = 2 * g.OW; w < g.W; ++w) d0[w] = d1[w] = T{};
      }
      std::fill(dst + 2 * g.OH * g.W, dst + HW, T{});
    }
  });
}

typedef uint16_t v16h __attribute__((vector_size(32)));
typedef uint8_t v16b __attribute__((vector_size(16)));

}  // namespace

void relu_max_pool_layout_f32(const Pool2dGeometry& g, const float* x, int64_t cblock, const int64_t* st, bool relu,
                              float* out, const int64_t* os, uint8_t* indices) {
  relu_max_pool_layout<float>(g, x, cblock, st, relu, out, os, indices);
}

void relu_max_pool_layout_bf16(const Pool2dGeometry& g, const BFloat16* x, int64_t cblock, const int64_t* st,
                               bool relu, BFloat16* out, const int64_t* os, uint8_t* indices) {
  relu_max_pool_layout<BFloat16>(g, x, cblock, st, relu, out, os, indices);
}

void max_pool2d_relu_backward_f32(const Pool2dGeometry& g, float* grad_input, const float* grad_output,
                                  const uint8_t* indices) {
  // max_pool2d_backward writes the gradient at the window's argmax (0 elsewhere);
  // threshold_backward then keeps it where relu's result, there the pooled value itself,
  // is not <= 0: codes 4..7 (that bit set) match no position. Eight windows at a time:
  // both rows' 16 floats are built in registers and stored contiguously.
  auto eight = [](const float* gv, const uint8_t* cv, float* r0, float* r1) {
    const v8f v = load8(gv);
    v8i code{};
    for (int k = 0; k < 8; ++k) code[k] = cv[k];
    const v8f c0 = code == 0 ? v : v8f{}, c1 = code == 1 ? v : v8f{};
    const v8f c2 = code == 2 ? v : v8f{}, c3 = code == 3 ? v : v8f{};
    store8(r0, __builtin_shufflevector(c0, c1, 0, 8, 1, 9, 2, 10, 3, 11));
    store8(r0 + 8, __builtin_shufflevector(c0, c1, 4, 12, 5, 13, 6, 14, 7, 15));
    store8(r1, __builtin_shufflevector(c2, c3, 0, 8, 1, 9, 2, 10, 3, 11));
    store8(r1 + 8, __builtin_shufflevector(c2, c3, 4, 12, 5, 13, 6, 14, 7, 15));
  };
  relu_pool_backward_rows<8>(g, grad_input, grad_output, indices, eight);
}

// The bfloat16 form on the bits, 16 windows per step: the values it stores are read from
// bfloat16 (or +0), so nothing needs widening to float (done that way, with load8/store8,
// it was compute-bound: 1.4 ms against float32's 0.9 ms for [128, 32, 28, 28] on 2
// threads). Bitwise the unfused bfloat16 ops: a window whose maximum is <= 0 has code bit 4
// set and matches no position; a NaN gradient leaves with its quiet bit set (0x40), as
// threshold_backward's rounding to bfloat16 sets it; others move unchanged.
void max_pool2d_relu_backward_bf16(const Pool2dGeometry& g, BFloat16* grad_input, const BFloat16* grad_output,
                                   const uint8_t* indices) {
  static_assert(sizeof(BFloat16) == sizeof(uint16_t));
  auto sixteen = [](const uint16_t* gv, const uint8_t* cv, uint16_t* r0, uint16_t* r1) {
    v16h gr;
    v16b cb;
    std::memcpy(&gr, gv, sizeof gr);
    std::memcpy(&cb, cv, sizeof cb);
    const v16h code = __builtin_convertvector(cb, v16h);
    const v16h v = gr | (((gr & 0x7fff) > 0x7f80) & 0x40);
    const v16h c0 = code == 0 ? v : v16h{}, c1 = code == 1 ? v : v16h{};
    const v16h c2 = code == 2 ? v : v16h{}, c3 = code == 3 ? v : v16h{};
    const v16h a0 = __builtin_shufflevector(c0, c1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const v16h a1 = __builtin_shufflevector(c0, c1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const v16h b0 = __builtin_shufflevector(c2, c3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const v16h b1 = __builtin_shufflevector(c2, c3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    std::memcpy(r0, &a0, sizeof a0);
    std::memcpy(r0 + 16, &a1, sizeof a1);
    std::memcpy(r1, &b0, sizeof b0);
    std::memcpy(r1 + 16, &b1, sizeof b1);
  };
  relu_pool_backward_rows<16>(g, reinterpret_cast<uint16_t*>(grad_input),
                              reinterpret_cast<const uint16_t*>(grad_output),
                              indices, sixteen);
}

void avg_pool2d_forward(const Pool2dGeometry& g, const Tensor& out, const Tensor& input, bool count_include_pad,
                        std::optional<int64_t> divisor_override) {
  if (out.numel() == 0) return;
  Tensor x = contiguous_copy(input);
  onednn::PoolPadding pad;
  if (out.dtype() == DType::Float32 && !divisor_override && onednn_pool_padding(g, pad)) {
    // With count_include_pad, oneDNN divides by KH*KW; PyTorch clips the window to the
    // padded input, which differs only when ceil_mode makes a window overhang it.
    const bool overhang = (g.OH - 1) * g.stride_h + g.KH > g.H + 2 * g.pad_h ||
                          (g.OW - 1) * g.stride_w + g.KW > g.W + 2 * g.pad_w;
    if (!count_include_pad || !overhang) {
      onednn::pool2d_f32(count_include_pad ? onednn::PoolKind::AvgIncludePad : onednn::PoolKind::AvgExcludePad, g,
                         pad, static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()));
      return;
    }
  }
  switch (out.dtype()) {
    case DType::Float32: return avg_pool_loop<float>(g, out, x, count_include_pad, divisor_override);
    case DType::Float64: return avg_pool_loop<double>(g, out, x, count_include_pad, divisor_override);
    case DType::BFloat16: return avg_pool_loop<BFloat16>(g, out, x, count_include_pad, divisor_override);
    case DType::Float16: return avg_pool_loop<Half>(g, out, x, count_include_pad, divisor_override);
    case DType::Int64: return avg_pool_loop<int64_t>(g, out, x, count_include_pad, divisor_override);
    default: bad_dtype("avg_pool2d", out.dtype());
  }
}

void adaptive_avg_pool2d_forward(const Tensor& out, const Tensor& input) {
  if (out.numel() == 0) return;
  Tensor x = contiguous_copy(input);
  switch (out.dtype()) {
    case DType::Float32: return adaptive_loop<float>(out, Tensor(), x, false);
    case DType::Float64: return adaptive_loop<double>(out, Tensor(), x, false);
    case DType::BFloat16: return adaptive_loop<BFloat16>(out, Tensor(), x, false);
    case DType::Float16: return adaptive_loop<Half>(out, Tensor(), x, false);
    default: bad_dtype("adaptive_avg_pool2d", out.dtype());
  }
}

void adaptive_max_pool2d_forward(const Tensor& out, const Tensor& indices, const Tensor& input) {
  if (out.numel() == 0) return;
  Tensor x = contiguous_copy(input);
  switch (out.dtype()) {
    case DType::Float32: return adaptive_loop<float>(out, indices, x, true);
    case DType::Float64: return adaptive_loop<double>(out, indices, x, true);
    case DType::BFloat16: return adaptive_loop<BFloat16>(out, indices, x, true);
    case DType::Float16: return adaptive_loop<Half>(out, indices, x, true);
    default: bad_dtype("adaptive_max_pool2d", out.dtype());
  }
}

}  // namespace tandem::kernels
