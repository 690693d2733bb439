// Loss kernels: nll_loss (forward/backward) and the elementwise losses (mse, l1,
// smooth_l1, huber, binary_cross_entropy[_with_logits], kl_div) with their gradients.
// Elementwise losses compute in double on broadcast copies, then round once.
#include <algorithm>
#include <cmath>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/nn.h"

namespace tandem::kernels {

// ---------------------------------------------------------------- nll_loss
namespace {

template <typename I>
void check_targets(const I* tp, int64_t n, int64_t C, int64_t ignore_index) {
  for (int64_t k = 0; k < n; ++k) {
    const int64_t t = static_cast<int64_t>(tp[k]);
    if (t == ignore_index) continue;
    TANDEM_CHECK(t >= 0 && t < C, IndexError, "nll_loss", "Target ", t, " is out of bounds (expected a class in [0, ",
                 C, ") or ignore_index ", ignore_index, ")");
  }
}

template <typename T, typename I>
void nll_typed(const Tensor& out, const Tensor& total_weight, const Tensor& x, const Tensor& target,
               const Tensor& weight, Reduction red, int64_t ignore_index, int64_t N, int64_t C, int64_t S) {
  const T* xp = x.data_ptr<T>();
  const I* tp = target.data_ptr<I>();
  check_targets(tp, N * S, C, ignore_index);
  const std::vector<double> w = weight.defined() ? to_double_vector(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  double sum = 0, tw = 0;
  std::vector<double> per(red == Reduction::None ? static_cast<size_t>(N * S) : 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t k = n * S + s;
      const int64_t t = static_cast<int64_t>(tp[k]);
      double l = 0;
      if (t != ignore_index) {
        l = -w[t] * static_cast<double>(static_cast<opmath_t<T>>(xp[(n * C + t) * S + s]));
        tw += w[t];
      }
      if (red == Reduction::None) per[k] = l;
      else sum += l;
    }
  if (red == Reduction::None) write_doubles(out, per);
  else write_doubles(out, {red == Reduction::Mean ? sum / tw : sum});
  write_doubles(total_weight, {tw});
}

template <typename T, typename I>
void nll_backward_typed(const Tensor& gI, const Tensor& gO, const Tensor& target, const Tensor& weight,
                        const Tensor& total_weight, Reduction red, int64_t ignore_index, int64_t N, int64_t C,
                        int64_t S) {
  const I* tp = target.data_ptr<I>();
  check_targets(tp, N * S, C, ignore_index);
  fill_kernel(gI, 0);
  T* ip = gI.data_ptr<T>();
  const std::vector<double> w = weight.defined() ? to_double_vector(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> g = to_double_vector(gO);
  double scale = 1.0;
  if (red == Reduction::Mean) scale = 1.0 / to_double_vector(total_weight)[0];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t k = n * S + s;
      const int64_t t = static_cast<int64_t>(tp[k]);
      if (t == ignore_index) continue;
      const double gv = red == Reduction::None ? g[k] : g[0] * scale;
      ip[(n * C + t) * S + s] = static_cast<T>(-w[t] * gv);
    }
}

}  // namespace

void nll_loss_kernel(const Tensor& out, const Tensor& total_weight, const Tensor& x, const Tensor& target,
                     const Tensor& weight, Reduction reduction, int64_t ignore_index, int64_t N, int64_t C,
                     int64_t S) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "nll_loss", [&] {
    if (target.dtype() == DType::UInt8)
      nll_typed<scalar_t, uint8_t>(out, total_weight, x, target, weight, reduction, ignore_index, N, C, S);
    else
      nll_typed<scalar_t, int64_t>(out, total_weight, x, target, weight, reduction, ignore_index, N, C, S);
  });
}

void nll_loss_backward_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                              const Tensor& weight, const Tensor& total_weight, Reduction reduction,
                              int64_t ignore_index, int64_t N, int64_t C, int64_t S) {
  TANDEM_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "nll_loss_backward", [&] {
    if (target.dtype() == DType::UInt8)
      nll_backward_typed<scalar_t, uint8_t>(grad_input, grad_out, target, weight, total_weight, reduction,
                                            ignore_index, N, C, S);
    else
      nll_backward_typed<scalar_t, int64_t>(grad_input, grad_out, target, weight, total_weight, reduction,
                                            ignore_index, N, C, S);
  });
}

// ---------------------------------------------------------------- elementwise losses
namespace {

inline double sgn(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }
inline double clamped_log(double v) { return std::max(std::log(v), -100.0); }
// log(1 + exp(-x)), stable for any x.
inline double softplus_neg(double x) { return std::max(-x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }
inline double xlogx(double v) { return v == 0 ? 0.0 : v * std::log(v); }

template <LossKind K>
inline double loss_value(double x, double t, double w, double pw, double p) {
  const double d = x - t;
  if constexpr (K == LossKind::MSE) return d * d;
  if constexpr (K == LossKind::L1) return std::fabs(d);
  if constexpr (K == LossKind::SmoothL1) {
    const double a = std::fabs(d);
    return a < p ? 0.5 * a * a / p : a - 0.5 * p;
  }
  if constexpr (K == LossKind::Huber) {
    const double a = std::fabs(d);
    return a < p ? 0.5 * a * a : p * (a - 0.5 * p);
  }
  if constexpr (K == LossKind::BCE) return -w * (t * clamped_log(x) + (1 - t) * clamped_log(1 - x));
  if constexpr (K == LossKind::BCEWithLogits) return w * ((1 - t) * x + (1 + (pw - 1) * t) * softplus_neg(x));
  if constexpr (K == LossKind::KLDiv) return xlogx(t) - t * x;
  if constexpr (K == LossKind::KLDivLogTarget) return std::exp(t) * (t - x);
  return 0;
}

// Derivatives of loss_value with respect to x and t.
template <LossKind K>
inline void loss_grad(double x, double t, double w, double pw, double p, double& dx, double& dt) {
  const double d = x - t;
  if constexpr (K == LossKind::MSE) {
    dx = 2 * d;
    dt = -dx;
  } else if constexpr (K == LossKind::L1) {
    dx = sgn(d);
    dt = -dx;
  } else if constexpr (K == LossKind::SmoothL1) {
    dx = std::fabs(d) < p ? d / p : sgn(d);
    dt = -dx;
  } else if constexpr (K == LossKind::Huber) {
    dx = std::fabs(d) < p ? d : p * sgn(d);
    dt = -dx;
  } else if constexpr (K == LossKind::BCE) {
    dx = w * d / std::max((1 - x) * x, 1e-12);
    dt = -w * (std::log(x) - std::log1p(-x));  // unclamped, as PyTorch (infinite at 0 and 1)
  } else if constexpr (K == LossKind::BCEWithLogits) {
    const double sig = 1.0 / (1.0 + std::exp(-x));
    const double lw = 1 + (pw - 1) * t;
    dx = w * (lw * sig - pw * t);
    dt = w * (-x + (pw - 1) * softplus_neg(x));
  } else if constexpr (K == LossKind::KLDiv) {
    dx = -t;
    dt = std::log(t) + 1 - x;
  } else {
    const double e = std::exp(t);
    dx = -e;
    dt = e * (t - x + 1);
  }
}

DimVector broadcast_of(std::initializer_list<const Tensor*> ts) {
  DimVector out;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    IntArrayRef s = t->sizes();
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[out.size() - s.size() + i];
      if (o == 1) o = s[i];
    }
  }
  return out;
}

// One operand as n float64 values over the broadcast shape: read in place (contiguous
// float64 of that shape), widened directly (contiguous float32 of that shape, or a single
// element), through broadcast_double otherwise, or `fill` when undefined. The values are
// exactly broadcast_double's (float -> double is exact); the direct paths only skip the
// tensor and iterator a small loss would otherwise spend most of its time on.
struct Doubles {
  const double* p = nullptr;
  std::vector<double> own;
  Tensor keep;
  Doubles(const Tensor& t, IntArrayRef shape, int64_t n, double fill) {
    if (!t.defined()) {
      own.assign(static_cast<size_t>(n), fill);
    } else if (t.numel() == 1 && (t.dtype() == DType::Float32 || t.dtype() == DType::Float64)) {
      const double v = t.dtype() == DType::Float32 ? static_cast<double>(*t.data_ptr<float>()) : *t.data_ptr<double>();
      own.assign(static_cast<size_t>(n), v);
    } else if (t.is_contiguous() && t.sizes().equals(shape) && t.dtype() == DType::Float64) {
      p = t.data_ptr<double>();
      return;
    } else if (t.is_contiguous() && t.sizes().equals(shape) && t.dtype() == DType::Float32) {
      const float* src = t.data_ptr<float>();
      own.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) own[static_cast<size_t>(i)] = static_cast<double>(src[i]);
    } else {
      keep = broadcast_double(t, shape);
      p = keep.data_ptr<double>();
      return;
    }
    p = own.data();
  }
};

struct LossInputs {
  DimVector shape;
  int64_t n = 0;
  Doubles x, t, w, pw;
  LossInputs(const Tensor& x_, const Tensor& t_, const Tensor& w_, const Tensor& pw_, IntArrayRef shape_)
      : shape(shape_.vec()), n(multiply_integers(shape_)), x(x_, shape_, n, 0.0), t(t_, shape_, n, 0.0),
        w(w_, shape_, n, 1.0), pw(pw_, shape_, n, 1.0) {}
};

template <LossKind K>
void loss_forward_typed(const Tensor& out, const LossInputs& in, double param, Reduction red, int64_t batch) {
  const double *x = in.x.p, *t = in.t.p, *w = in.w.p, *pw = in.pw.p;
  if constexpr (K == LossKind::BCE) {
    for (int64_t i = 0; i < in.n; ++i)
      TANDEM_CHECK(x[i] >= 0 && x[i] <= 1, ValueError, "binary_cross_entropy",
                   "all elements of input should be between 0 and 1, got ", x[i]);
  }
  std::vector<double> vals(static_cast<size_t>(in.n));
  double* v = vals.data();
  parallel_for(0, in.n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) v[i] = loss_value<K>(x[i], t[i], w[i], pw[i], param);
  });
  if (red == Reduction::None) {
    write_doubles(out, vals);
    return;
  }
  double s = 0;
  for (int64_t i = 0; i < in.n; ++i) s += v[i];
  if (red == Reduction::Mean) s /= static_cast<double>(in.n);
  if (red == Reduction::BatchMean) s /= static_cast<double>(batch);
  write_doubles(out, {s});
}

template <LossKind K>
void loss_backward_typed(const Tensor& gx, const Tensor& gt, const Tensor& g, const LossInputs& in, double param,
                         double scale) {
  const double *x = in.x.p, *t = in.t.p, *w = in.w.p, *pw = in.pw.p;
  const Doubles gd(g, in.shape, in.n, 0.0);
  const double* gp = gd.p;
  std::vector<double> rx(static_cast<size_t>(in.n)), rt(static_cast<size_t>(in.n));
  double *px = rx.data(), *pt = rt.data();
  parallel_for(0, in.n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double dx = 0, dt = 0;
      loss_grad<K>(x[i], t[i], w[i], pw[i], param, dx, dt);
      px[i] = gp[i] * dx * scale;
      pt[i] = gp[i] * dt * scale;
    }
  });
  if (gx.defined()) write_doubles(gx, rx);
  if (gt.defined()) write_doubles(gt, rt);
}

template <typename F>
void dispatch_kind(LossKind kind, F f) {
  switch (kind) {
    case LossKind::MSE: return f(std::integral_constant<LossKind, LossKind::MSE>{});
    case LossKind::L1: return f(std::integral_constant<LossKind, LossKind::L1>{});
    case LossKind::SmoothL1: return f(std::integral_constant<LossKind, LossKind::SmoothL1>{});
    case LossKind::Huber: return f(std::integral_constant<LossKind, LossKind::Huber>{});
    case LossKind::BCE: return f(std::integral_constant<LossKind, LossKind::BCE>{});
    case LossKind::BCEWithLogits: return f(std::integral_constant<LossKind, LossKind::BCEWithLogits>{});
    case LossKind::KLDiv: return f(std::integral_constant<LossKind, LossKind::KLDiv>{});
    case LossKind::KLDivLogTarget: return f(std::integral_constant<LossKind, LossKind::KLDivLogTarget>{});
  }
}

}  // namespace

void pointwise_loss_kernel(LossKind kind, const Tensor& out, const Tensor& x, const Tensor& t, const Tensor& w,
                           const Tensor& pw, double param, Reduction reduction, int64_t batch) {
  const DimVector shape = broadcast_of({&x, &t, &w, &pw});
  LossInputs in(x, t, w, pw, shape);
  dispatch_kind(kind, [&](auto k) { loss_forward_typed<decltype(k)::value>(out, in, param, reduction, batch); });
}

void pointwise_loss_backward_kernel(LossKind kind, const Tensor& grad_x, const Tensor& grad_t, const Tensor& g,
                                    const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& pw,
                                    double param, double scale) {
  const DimVector shape = broadcast_of({&x, &t, &w, &pw});
  LossInputs in(x, t, w, pw, shape);
  dispatch_kind(kind, [&](auto k) { loss_backward_typed<decltype(k)::value>(grad_x, grad_t, g, in, param, scale); });
}

}  // namespace tandem::kernels
