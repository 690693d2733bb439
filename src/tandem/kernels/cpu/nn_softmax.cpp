// Softmax / log_softmax kernels and the shared helpers of kernels/cpu/nn.h. Exponentials
// and logarithms are vec_math's (float: inline, branch-free, <= 1.2 ulp), so the loops
// vectorise; float64 uses <cmath>.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/nn.h"
#include "tandem/kernels/cpu/vec_math.h"

namespace tandem::kernels {

// ---------------------------------------------------------------- helpers
Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.is_contiguous() && t.dtype() == dtype) return t;
  Tensor c = empty_tensor(t.sizes(), dtype);
  copy_kernel(c, t);
  return c;
}

Tensor broadcast_double(const Tensor& t, IntArrayRef shape, double fill_if_undefined) {
  Tensor c = empty_tensor(shape, DType::Float64);
  if (t.defined()) copy_kernel(c, t);
  else fill_kernel(c, fill_if_undefined);
  return c;
}

std::vector<double> to_double_vector(const Tensor& t) {
  Tensor c = contiguous_as(t, DType::Float64);
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

void write_doubles(const Tensor& dst, const std::vector<double>& v) {
  // Contiguous float32 / float64: the rounding copy_kernel makes, without a staging tensor
  // and its iterator (most of a small loss's time).
  if (dst.is_contiguous() && dst.dtype() == DType::Float32) {
    float* d = dst.data_ptr<float>();
    for (size_t i = 0; i < v.size(); ++i) d[i] = static_cast<float>(v[i]);
    return;
  }
  if (dst.is_contiguous() && dst.dtype() == DType::Float64) {
    std::copy(v.begin(), v.end(), dst.data_ptr<double>());
    return;
  }
  Tensor src = empty_tensor(dst.sizes(), DType::Float64);
  std::copy(v.begin(), v.end(), src.data_ptr<double>());
  copy_kernel(dst, src);
}

// ---------------------------------------------------------------- softmax
namespace {

// Geometry of a softmax along `dim` of a contiguous tensor: [outer, D, inner].
struct Lines {
  int64_t outer = 1, D = 1, inner = 1;
};
Lines lines_of(const Tensor& t, int64_t dim) {
  Lines l;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) l.outer *= t.size(d);
    else if (d == dim) l.D = t.size(d);
    else l.inner *= t.size(d);
  }
  return l;
}

// Runs body(o, i0, i1) over every outer index and block [i0, i1) of inner positions, in
// parallel. Blocks keep the inner loop contiguous when softmax is not along the last dim.
template <typename Body>
void for_line_blocks(const Lines& l, Body body) {
  constexpr int64_t kBlock = 64;
  const int64_t nblk = (l.inner + kBlock - 1) / kBlock;
  const int64_t tasks = l.outer * nblk;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, l.D * std::min(l.inner, kBlock)));
  parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t o = k / nblk, blk = k % nblk;
      body(o, blk * kBlock, std::min(l.inner, (blk + 1) * kBlock));
    }
  });
}

// Softmax along the last dimension (inner == 1): per row, the max, then e^(x - max) a
// block at a time (a loop that vectorises: vexp is inline and branch-free) summed in
// order, then the outputs. The same formulas and summation order as the blocked loop
// below, which handles the other dimensions.
template <typename T>
void softmax_rows(const Lines& l, const T* x, T* y, bool log) {
  using M = opmath_t<T>;
  constexpr int64_t kChunk = 256;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, l.D));
  parallel_for(0, l.outer, grain, [&](int64_t b, int64_t e) {
    M ex[kChunk];
    for (int64_t o = b; o < e; ++o) {
      const T* xr = x + o * l.D;
      T* yr = y + o * l.D;
      M mx = -std::numeric_limits<M>::infinity();
      bool nan = false;
      for (int64_t d = 0; d < l.D; ++d) {
        const M v = static_cast<M>(xr[d]);
        nan = nan || v != v;
        mx = std::max(mx, v);
      }
      if (nan) mx = std::numeric_limits<M>::quiet_NaN();
      M sum = 0;
      for (int64_t d0 = 0; d0 < l.D; d0 += kChunk) {
        const int64_t n = std::min(kChunk, l.D - d0);
        for (int64_t d = 0; d < n; ++d) ex[d] = vexp(static_cast<M>(xr[d0 + d]) - mx);
        for (int64_t d = 0; d < n; ++d) sum += ex[d];
      }
      if (log) {
        const M lse = vlog(sum);
        for (int64_t d = 0; d < l.D; ++d) yr[d] = static_cast<T>(static_cast<M>(xr[d]) - mx - lse);
      } else {
        const M inv = M(1) / sum;
        for (int64_t d = 0; d < l.D; ++d) yr[d] = static_cast<T>(vexp(static_cast<M>(xr[d]) - mx) * inv);
      }
    }
  });
}

template <typename T>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  using M = opmath_t<T>;
  const Lines l = lines_of(in, dim);
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  if (l.inner == 1) {
    softmax_rows<T>(l, x, y, log);
    return;
  }
  for_line_blocks(l, [&](int64_t o, int64_t i0, int64_t i1) {
    const int64_t n = i1 - i0;
    M mx[64], sum[64];
    for (int64_t i = 0; i < n; ++i) {
      mx[i] = -std::numeric_limits<M>::infinity();
      sum[i] = 0;
    }
    const T* xb = x + o * l.D * l.inner + i0;
    T* yb = y + o * l.D * l.inner + i0;
    bool nan[64] = {};
    for (int64_t d = 0; d < l.D; ++d)
      for (int64_t i = 0; i < n; ++i) {
        M v = static_cast<M>(xb[d * l.inner + i]);
        if (std::isnan(v)) nan[i] = true;
        mx[i] = std::max(mx[i], v);
      }
    for (int64_t i = 0; i < n; ++i)
      if (nan[i]) mx[i] = std::numeric_limits<M>::quiet_NaN();
    for (int64_t d = 0; d < l.D; ++d)
      for (int64_t i = 0; i < n; ++i) sum[i] += vexp(static_cast<M>(xb[d * l.inner + i]) - mx[i]);
    if (log) {
      for (int64_t i = 0; i < n; ++i) sum[i] = vlog(sum[i]);
      for (int64_t d = 0; d < l.D; ++d)
        for (int64_t i = 0; i < n; ++i)
          yb[d * l.inner + i] = static_cast<T>(static_cast<M>(xb[d * l.inner + i]) - mx[i] - sum[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) sum[i] = M(1) / sum[i];
      for (int64_t d = 0; d < l.D; ++d)
        for (int64_t i = 0; i < n; ++i)
          yb[d * l.inner + i] = static_cast<T>(vexp(static_cast<M>(xb[d * l.inner + i]) - mx[i]) * sum[i]);
    }
  });
}

template <typename T>
void softmax_backward_typed(const Tensor& gin, const Tensor& gout, const Tensor& output, int64_t dim, bool log) {
  using M = opmath_t<T>;
  const Lines l = lines_of(output, dim);
  const T* g = gout.data_ptr<T>();
  const T* y = output.data_ptr<T>();
  T* r = gin.data_ptr<T>();
  if (l.inner == 1) {  // along the last dimension: a row at a time, the same formulas
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, l.D));
    parallel_for(0, l.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* gr = g + o * l.D;
        const T* yr = y + o * l.D;
        T* rr = r + o * l.D;
        M s = 0;
        for (int64_t d = 0; d < l.D; ++d) s += log ? static_cast<M>(gr[d]) : static_cast<M>(gr[d]) * static_cast<M>(yr[d]);
        for (int64_t d = 0; d < l.D; ++d) {
          const M gv = static_cast<M>(gr[d]), yv = static_cast<M>(yr[d]);
          rr[d] = static_cast<T>(log ? gv - vexp(yv) * s : yv * (gv - s));
        }
      }
    });
    return;
  }
  for_line_blocks(l, [&](int64_t o, int64_t i0, int64_t i1) {
    const int64_t n = i1 - i0;
    const int64_t base = o * l.D * l.inner + i0;
    M s[64] = {};
    for (int64_t d = 0; d < l.D; ++d)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = base + d * l.inner + i;
        s[i] += log ? static_cast<M>(g[k]) : static_cast<M>(g[k]) * static_cast<M>(y[k]);
      }
    for (int64_t d = 0; d < l.D; ++d)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = base + d * l.inner + i;
        const M gv = static_cast<M>(g[k]), yv = static_cast<M>(y[k]);
        r[k] = static_cast<T>(log ? gv - vexp(yv) * s[i] : yv * (gv - s[i]));
      }
  });
}

}  // namespace

void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  if (out.numel() == 0) return;
  TANDEM_DISPATCH_FLOATING_TYPES(out.dtype(), log ? "log_softmax" : "softmax",
                                 [&] { softmax_typed<scalar_t>(out, in, dim, log); });
}

void softmax_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, const Tensor& output, int64_t dim,
                             bool log) {
  if (grad_in.numel() == 0) return;
  TANDEM_DISPATCH_FLOATING_TYPES(grad_in.dtype(), log ? "_log_softmax_backward_data" : "_softmax_backward_data",
                                 [&] { softmax_backward_typed<scalar_t>(grad_in, grad_out, output, dim, log); });
}

}  // namespace tandem::kernels
