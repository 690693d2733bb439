// Fused optimizer loops; see optim.h for the numerics contract. This file is compiled
// with -ffp-contract=off (src/CMakeLists.txt): every fused multiply-add below is written
// as fma_like() on purpose and no other expression may be contracted.
#include "tandem/kernels/cpu/optim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/loops.h"

namespace tandem::kernels {

namespace {

// `a + alpha * b` as the elementwise op kernels compute it: contracted to one FMA when the
// target has FMA instructions (GCC contracts by default there), two roundings otherwise.
template <typename T>
inline T fma_like(T alpha, T b, T a) {
#if defined(__FMA__) || defined(__FMA4__) || defined(__aarch64__)
  return std::fma(alpha, b, a);
#else
  return a + alpha * b;
#endif
}

// torch.maximum on floating values: NaN in either operand gives NaN.
template <typename T>
inline T maximum_nan(T x, T y) {
  T r = x < y ? y : x;
  return (x != x || y != y) ? std::numeric_limits<T>::quiet_NaN() : r;
}

// The loops take every operand by value (pointers and rounded scalars) so that GCC
// vectorises them: nothing is read through the lambda's captures inside the loop.
// Options that decide whether memory is touched or an op happens at all (momentum, L2
// weight decay, amsgrad) are template parameters: as runtime flags they become masked
// loads/stores, which cost 3-8x on this machine (AMD EPYC). The others are arithmetic
// that is exact either way: maximize multiplies by -1 or 1 (the op path's grad.mul(-1)),
// AdamW's decay multiplies by 1 - lr * wd or by 1, and nesterov / the first momentum step
// are selects between values computed anyway.
template <typename T>
struct SGDScalars {
  T sign, wd, mom, one_minus_damp, neg_lr;
  int nesterov, init_buf;  // int, not bool: GCC 12 does not if-convert a loop-invariant bool
};

template <typename T, bool kMomentum, bool kWd>
void sgd_loop(T* p, const T* g, T* b, int64_t begin, int64_t end, const SGDScalars<T> s) {
  TANDEM_SIMD_LOOP
  for (int64_t i = begin; i < end; ++i) {
    T d = g[i] * s.sign;
    const T pi = p[i];
    if constexpr (kWd) d = fma_like(s.wd, pi, d);
    if constexpr (kMomentum) {
      const T bi = s.init_buf ? d : fma_like(s.one_minus_damp, d, b[i] * s.mom);
      b[i] = bi;
      d = s.nesterov ? fma_like(s.mom, bi, d) : bi;
    }
    p[i] = fma_like(s.neg_lr, d, pi);
  }
}

template <typename T, bool kMomentum, bool kWd>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& buf, bool init_buf, const SGDHyper& h) {
  T* p = static_cast<T*>(param.impl()->data());
  const T* g = static_cast<const T*>(grad.impl()->data());
  T* b = kMomentum ? static_cast<T*>(buf.impl()->data()) : nullptr;
  SGDScalars<T> s;
  s.sign = h.maximize ? T(-1) : T(1);
  s.nesterov = h.nesterov;
  s.init_buf = init_buf;
  s.wd = static_cast<T>(h.weight_decay);
  s.mom = static_cast<T>(h.momentum);
  s.one_minus_damp = static_cast<T>(1.0 - h.dampening);
  s.neg_lr = static_cast<T>(-h.lr);
  parallel_for(0, param.numel(), kGrainSize,
               [=](int64_t begin, int64_t end) { sgd_loop<T, kMomentum, kWd>(p, g, b, begin, end, s); });
}

template <typename T>
void sgd_dispatch(const Tensor& param, const Tensor& grad, const Tensor& buf, bool init_buf, const SGDHyper& h) {
  const bool mom = h.momentum != 0, wd = h.weight_decay != 0;
  if (mom && wd) sgd_typed<T, true, true>(param, grad, buf, init_buf, h);
  else if (mom) sgd_typed<T, true, false>(param, grad, buf, init_buf, h);
  else if (wd) sgd_typed<T, false, true>(param, grad, buf, init_buf, h);
  else sgd_typed<T, false, false>(param, grad, buf, init_buf, h);
}

template <typename T>
struct AdamScalars {
  T sign, decay, wd, b1, one_minus_b1, b2, one_minus_b2, neg_step_size, bc2_sqrt, eps;
};

template <typename T, bool kL2, bool kAmsgrad>
void adam_loop(T* p, const T* g, T* m, T* v, T* vmax, int64_t begin, int64_t end, const AdamScalars<T> s) {
  TANDEM_SIMD_LOOP
  for (int64_t i = begin; i < end; ++i) {
    T gi = g[i] * s.sign;
    const T pi = p[i] * s.decay;  // AdamW's decoupled decay (exactly p when decay is 1)
    if constexpr (kL2) gi = fma_like(s.wd, pi, gi);
    const T mi = fma_like(s.one_minus_b1, gi, m[i] * s.b1);
    // addcmul: self + (value * t1) * t2, the product contracted into the add.
    const T vi = fma_like(s.one_minus_b2 * gi, gi, v[i] * s.b2);
    m[i] = mi;
    v[i] = vi;
    T vv = vi;
    if constexpr (kAmsgrad) {
      vv = maximum_nan(vmax[i], vi);
      vmax[i] = vv;
    }
    const T denom = std::sqrt(vv) / s.bc2_sqrt + s.eps;
    p[i] = pi + (s.neg_step_size * mi) / denom;
  }
}

template <typename T, bool kL2, bool kAmsgrad>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  T* p = static_cast<T*>(param.impl()->data());
  const T* g = static_cast<const T*>(grad.impl()->data());
  T* m = static_cast<T*>(exp_avg.impl()->data());
  T* v = static_cast<T*>(exp_avg_sq.impl()->data());
  T* vmax = kAmsgrad ? static_cast<T*>(max_exp_avg_sq.impl()->data()) : nullptr;
  AdamScalars<T> s;
  s.sign = h.maximize ? T(-1) : T(1);
  // Scalars rounded to T exactly where the op path rounds its C++ number operands.
  s.decay = h.decoupled ? static_cast<T>(1.0 - h.lr * h.weight_decay) : T(1);
  s.wd = static_cast<T>(h.weight_decay);
  s.b1 = static_cast<T>(h.beta1);
  s.one_minus_b1 = static_cast<T>(1.0 - h.beta1);
  s.b2 = static_cast<T>(h.beta2);
  s.one_minus_b2 = static_cast<T>(1.0 - h.beta2);
  const double bias_correction1 = 1.0 - std::pow(h.beta1, h.step);
  const double bias_correction2 = 1.0 - std::pow(h.beta2, h.step);
  s.neg_step_size = static_cast<T>(-(h.lr / bias_correction1));
  s.bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  s.eps = static_cast<T>(h.eps);
  parallel_for(0, param.numel(), kGrainSize,
               [=](int64_t begin, int64_t end) { adam_loop<T, kL2, kAmsgrad>(p, g, m, v, vmax, begin, end, s); });
}

template <typename T>
void adam_dispatch(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  const bool l2 = !h.decoupled && h.weight_decay != 0;
  if (l2 && h.amsgrad) adam_typed<T, true, true>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
  else if (l2) adam_typed<T, true, false>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
  else if (h.amsgrad) adam_typed<T, false, true>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
  else adam_typed<T, false, false>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
}

// Partial results of one block of the norm; combined in block order (deterministic for
// any thread count). Within a block the sums are vectorised (a fixed lane order per
// build, so still reproducible).
#if defined(_OPENMP)
#define TANDEM_OPTIM_PRAGMA(x) _Pragma(#x)
#define TANDEM_SIMD_REDUCE_SUM(var) TANDEM_OPTIM_PRAGMA(omp simd reduction(+ : var))
#else
#define TANDEM_SIMD_REDUCE_SUM(var)
#endif
constexpr int64_t kNormBlock = 16384;

template <typename T>
double norm_typed(const Tensor& x, double p) {
  const T* d = static_cast<const T*>(x.impl()->data());
  const int64_t n = x.numel();
  if (n == 0) return 0.0;
  const int64_t nblocks = (n + kNormBlock - 1) / kNormBlock;
  std::vector<double> part(static_cast<size_t>(nblocks));
  const bool is_inf = std::isinf(p);
  const bool want_max = p > 0;
  parallel_for(0, nblocks, 2, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t lo = blk * kNormBlock, hi = std::min(n, lo + kNormBlock);
      double acc;
      if (is_inf) {
        acc = std::fabs(static_cast<double>(d[lo]));
        for (int64_t i = lo; i < hi; ++i) {
          const double a = std::fabs(static_cast<double>(d[i]));
          if (a != a) { acc = a; break; }
          acc = want_max ? (a > acc ? a : acc) : (a < acc ? a : acc);
        }
      } else if (p == 0) {
        acc = 0;
        TANDEM_SIMD_REDUCE_SUM(acc)
        for (int64_t i = lo; i < hi; ++i) acc += d[i] != T(0) ? 1.0 : 0.0;
      } else if (p == 1) {
        acc = 0;
        TANDEM_SIMD_REDUCE_SUM(acc)
        for (int64_t i = lo; i < hi; ++i) acc += std::fabs(static_cast<double>(d[i]));
      } else if (p == 2) {
        acc = 0;
        TANDEM_SIMD_REDUCE_SUM(acc)
        for (int64_t i = lo; i < hi; ++i) {
          const double a = static_cast<double>(d[i]);
          acc += a * a;
        }
      } else {
        acc = 0;
        for (int64_t i = lo; i < hi; ++i) acc += std::pow(std::fabs(static_cast<double>(d[i])), p);
      }
      part[static_cast<size_t>(blk)] = acc;
    }
  });
  double r = part[0];
  for (int64_t blk = 1; blk < nblocks; ++blk) {
    const double a = part[static_cast<size_t>(blk)];
    if (is_inf) {
      if (a != a || r != r) r = std::numeric_limits<double>::quiet_NaN();
      else r = want_max ? (a > r ? a : r) : (a < r ? a : r);
    } else {
      r += a;
    }
  }
  if (is_inf || p == 0 || p == 1) return r;
  if (p == 2) return std::sqrt(r);
  return std::pow(r, 1.0 / p);
}

}  // namespace

void sgd_fused_step(const Tensor& param, const Tensor& grad, const Tensor& buf, bool init_buf, const SGDHyper& h) {
  if (param.dtype() == DType::Float32) {
    sgd_dispatch<float>(param, grad, buf, init_buf, h);
  } else {
    TANDEM_INTERNAL_ASSERT(param.dtype() == DType::Float64, "sgd_fused_step on ", dtype_name(param.dtype()));
    sgd_dispatch<double>(param, grad, buf, init_buf, h);
  }
}

void adam_fused_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  if (param.dtype() == DType::Float32) {
    adam_dispatch<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
  } else {
    TANDEM_INTERNAL_ASSERT(param.dtype() == DType::Float64, "adam_fused_step on ", dtype_name(param.dtype()));
    adam_dispatch<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
  }
}

double vector_norm(const Tensor& x, double p) {
  if (x.dtype() == DType::Float32) return norm_typed<float>(x, p);
  TANDEM_INTERNAL_ASSERT(x.dtype() == DType::Float64, "vector_norm on ", dtype_name(x.dtype()));
  return norm_typed<double>(x, p);
}

}  // namespace tandem::kernels
