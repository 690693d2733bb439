// Normalisation kernels: batch norm, layer norm, group norm (forward and backward).
// Statistics and reductions accumulate in double; elements are read in their own dtype.
#include <cmath>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/nn.h"

namespace tandem::kernels {

namespace {

template <typename T>
inline double ld(const T* p, int64_t i) {
  return static_cast<double>(static_cast<opmath_t<T>>(p[i]));
}

// Affine parameters as doubles (1 / 0 when undefined).
std::vector<double> param_or(const Tensor& t, int64_t n, double v) {
  if (!t.defined()) return std::vector<double>(static_cast<size_t>(n), v);
  return to_double_vector(t);
}

int64_t grain_for(int64_t work_per_item) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_item)); }

// ---------------------------------------------------------------- batch norm
template <typename T>
void batch_norm_typed(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& x,
                      const Tensor& weight, const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                      bool training, double momentum, double eps) {
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t S = N * C == 0 ? 0 : x.numel() / (N * C);
  const int64_t M = N * S;
  const T* xp = x.data_ptr<T>();
  std::vector<double> mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  if (training) {
    std::vector<double> var(static_cast<size_t>(C));
    parallel_for(0, C, grain_for(M), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* row = xp + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) s += ld(row, i);
        }
        const double mu = s / static_cast<double>(M);
        double ss = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* row = xp + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) {
            const double d = ld(row, i) - mu;
            ss += d * d;
          }
        }
        mean[c] = mu;
        var[c] = ss / static_cast<double>(M);
        invstd[c] = 1.0 / std::sqrt(var[c] + eps);
      }
    });
    if (running_mean.defined()) {
      std::vector<double> rm = to_double_vector(running_mean);
      for (int64_t c = 0; c < C; ++c) rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
      write_doubles(running_mean, rm);
    }
    if (running_var.defined()) {
      std::vector<double> rv = to_double_vector(running_var);
      const double unbias = static_cast<double>(M) / static_cast<double>(M - 1);
      for (int64_t c = 0; c < C; ++c) rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * unbias;
      write_doubles(running_var, rv);
    }
  } else {
    mean = to_double_vector(running_mean);
    std::vector<double> rv = to_double_vector(running_var);
    for (int64_t c = 0; c < C; ++c) invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
  }
  const std::vector<double> w = param_or(weight, C, 1.0), b = param_or(bias, C, 0.0);
  T* yp = out.data_ptr<T>();
  parallel_for(0, N * C, grain_for(S), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % C;
      const double a = invstd[c] * w[c], sh = b[c] - mean[c] * a;
      const T* row = xp + r * S;
      T* orow = yp + r * S;
      for (int64_t i = 0; i < S; ++i) orow[i] = static_cast<T>(ld(row, i) * a + sh);
    }
  });
  write_doubles(save_mean, mean);
  write_doubles(save_invstd, invstd);
}

template <typename T>
void batch_norm_backward_typed(const Tensor& gI, const Tensor& gW, const Tensor& gB, const Tensor& gO,
                               const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                               const Tensor& save_invstd, bool training) {
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t S = N * C == 0 ? 0 : x.numel() / (N * C);
  const double M = static_cast<double>(N * S);
  const T* xp = x.data_ptr<T>();
  const T* gp = gO.data_ptr<T>();
  const std::vector<double> mean = to_double_vector(save_mean), invstd = to_double_vector(save_invstd);
  const std::vector<double> w = param_or(weight, C, 1.0);
  std::vector<double> sum_g(static_cast<size_t>(C)), sum_gx(static_cast<size_t>(C));
  parallel_for(0, C, grain_for(N * S), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sg = 0, sgx = 0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t off = (n * C + c) * S;
        for (int64_t i = 0; i < S; ++i) {
          const double g = ld(gp, off + i);
          sg += g;
          sgx += g * (ld(xp, off + i) - mean[c]);
        }
      }
      sum_g[c] = sg;
      sum_gx[c] = sgx;
    }
  });
  if (gI.defined()) {
    T* ip = gI.data_ptr<T>();
    parallel_for(0, N * C, grain_for(S), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t c = r % C;
        const int64_t off = r * S;
        const double k = w[c] * invstd[c];
        if (training) {
          const double mg = sum_g[c] / M, proj = sum_gx[c] * invstd[c] * invstd[c] / M;
          for (int64_t i = 0; i < S; ++i)
            ip[off + i] = static_cast<T>(k * (ld(gp, off + i) - mg - (ld(xp, off + i) - mean[c]) * proj));
        } else {
          for (int64_t i = 0; i < S; ++i) ip[off + i] = static_cast<T>(k * ld(gp, off + i));
        }
      }
    });
  }
  if (gW.defined()) {
    std::vector<double> v(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) v[c] = sum_gx[c] * invstd[c];
    write_doubles(gW, v);
  }
  if (gB.defined()) write_doubles(gB, sum_g);
}

// ---------------------------------------------------------------- layer norm
template <typename T>
void layer_norm_typed(const Tensor& out, const Tensor& mean_t, const Tensor& rstd_t, const Tensor& x,
                      const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps) {
  const T* xp = x.data_ptr<T>();
  T* yp = out.data_ptr<T>();
  const std::vector<double> w = param_or(weight, N, 1.0), b = param_or(bias, N, 0.0);
  std::vector<double> mean(static_cast<size_t>(M)), rstd(static_cast<size_t>(M));
  parallel_for(0, M, grain_for(N), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      const T* row = xp + m * N;
      double s = 0;
      for (int64_t j = 0; j < N; ++j) s += ld(row, j);
      const double mu = s / static_cast<double>(N);
      double ss = 0;
      for (int64_t j = 0; j < N; ++j) {
        const double d = ld(row, j) - mu;
        ss += d * d;
      }
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(N) + eps);
      mean[m] = mu;
      rstd[m] = r;
      T* orow = yp + m * N;
      for (int64_t j = 0; j < N; ++j) orow[j] = static_cast<T>((ld(row, j) - mu) * r * w[j] + b[j]);
    }
  });
  write_doubles(mean_t, mean);
  write_doubles(rstd_t, rstd);
}

template <typename T>
void layer_norm_backward_typed(const Tensor& gI, const Tensor& gW, const Tensor& gB, const Tensor& gO,
                               const Tensor& x, const Tensor& mean_t, const Tensor& rstd_t, const Tensor& weight,
                               int64_t M, int64_t N) {
  const T* xp = x.data_ptr<T>();
  const T* gp = gO.data_ptr<T>();
  const std::vector<double> mean = to_double_vector(mean_t), rstd = to_double_vector(rstd_t);
  const std::vector<double> w = param_or(weight, N, 1.0);
  if (gI.defined()) {
    T* ip = gI.data_ptr<T>();
    parallel_for(0, M, grain_for(N), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        const int64_t off = m * N;
        double a = 0, bsum = 0;
        for (int64_t j = 0; j < N; ++j) {
          const double gw = ld(gp, off + j) * w[j];
          a += gw;
          bsum += gw * (ld(xp, off + j) - mean[m]) * rstd[m];
        }
        a /= static_cast<double>(N);
        bsum /= static_cast<double>(N);
        for (int64_t j = 0; j < N; ++j) {
          const double xhat = (ld(xp, off + j) - mean[m]) * rstd[m];
          ip[off + j] = static_cast<T>(rstd[m] * (ld(gp, off + j) * w[j] - a - xhat * bsum));
        }
      }
    });
  }
  if (gW.defined() || gB.defined()) {
    std::vector<double> sw(static_cast<size_t>(N)), sb(static_cast<size_t>(N));
    parallel_for(0, N, grain_for(M), [&](int64_t j0, int64_t j1) {
      for (int64_t m = 0; m < M; ++m) {
        const int64_t off = m * N;
        for (int64_t j = j0; j < j1; ++j) {
          const double g = ld(gp, off + j);
          sw[j] += g * (ld(xp, off + j) - mean[m]) * rstd[m];
          sb[j] += g;
        }
      }
    });
    if (gW.defined()) write_doubles(gW, sw);
    if (gB.defined()) write_doubles(gB, sb);
  }
}

// ---------------------------------------------------------------- group norm
template <typename T>
void group_norm_typed(const Tensor& out, const Tensor& mean_t, const Tensor& rstd_t, const Tensor& x,
                      const Tensor& weight, const Tensor& bias, int64_t N, int64_t C, int64_t S, int64_t G,
                      double eps) {
  const T* xp = x.data_ptr<T>();
  T* yp = out.data_ptr<T>();
  const int64_t cpg = C / G, K = cpg * S;
  const std::vector<double> w = param_or(weight, C, 1.0), b = param_or(bias, C, 0.0);
  std::vector<double> mean(static_cast<size_t>(N * G)), rstd(static_cast<size_t>(N * G));
  parallel_for(0, N * G, grain_for(K), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t off = q * K;  // (n, g) blocks are contiguous
      double s = 0;
      for (int64_t i = 0; i < K; ++i) s += ld(xp, off + i);
      const double mu = s / static_cast<double>(K);
      double ss = 0;
      for (int64_t i = 0; i < K; ++i) {
        const double d = ld(xp, off + i) - mu;
        ss += d * d;
      }
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(K) + eps);
      mean[q] = mu;
      rstd[q] = r;
      const int64_t g = q % G;
      for (int64_t cc = 0; cc < cpg; ++cc) {
        const int64_t c = g * cpg + cc;
        const double a = r * w[c], sh = b[c] - mu * a;
        for (int64_t i = 0; i < S; ++i) {
          const int64_t k = off + cc * S + i;
          yp[k] = static_cast<T>(ld(xp, k) * a + sh);
        }
      }
    }
  });
  write_doubles(mean_t, mean);
  write_doubles(rstd_t, rstd);
}

template <typename T>
void group_norm_backward_typed(const Tensor& gI, const Tensor& gW, const Tensor& gB, const Tensor& gO,
                               const Tensor& x, const Tensor& mean_t, const Tensor& rstd_t, const Tensor& weight,
                               int64_t N, int64_t C, int64_t S, int64_t G) {
  const T* xp = x.data_ptr<T>();
  const T* gp = gO.data_ptr<T>();
  const int64_t cpg = C / G, K = cpg * S;
  const std::vector<double> mean = to_double_vector(mean_t), rstd = to_double_vector(rstd_t);
  const std::vector<double> w = param_or(weight, C, 1.0);
  if (gI.defined()) {
    T* ip = gI.data_ptr<T>();
    parallel_for(0, N * G, grain_for(K), [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t off = q * K, g = q % G;
        double a = 0, bsum = 0;
        for (int64_t cc = 0; cc < cpg; ++cc) {
          const double wc = w[g * cpg + cc];
          for (int64_t i = 0; i < S; ++i) {
            const int64_t k = off + cc * S + i;
            const double gw = ld(gp, k) * wc;
            a += gw;
            bsum += gw * (ld(xp, k) - mean[q]) * rstd[q];
          }
        }
        a /= static_cast<double>(K);
        bsum /= static_cast<double>(K);
        for (int64_t cc = 0; cc < cpg; ++cc) {
          const double wc = w[g * cpg + cc];
          for (int64_t i = 0; i < S; ++i) {
            const int64_t k = off + cc * S + i;
            const double xhat = (ld(xp, k) - mean[q]) * rstd[q];
            ip[k] = static_cast<T>(rstd[q] * (ld(gp, k) * wc - a - xhat * bsum));
          }
        }
      }
    });
  }
  if (gW.defined() || gB.defined()) {
    std::vector<double> sw(static_cast<size_t>(C)), sb(static_cast<size_t>(C));
    parallel_for(0, C, grain_for(N * S), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t g = c / cpg;
        for (int64_t n = 0; n < N; ++n) {
          const int64_t q = n * G + g, off = (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) {
            const double gv = ld(gp, off + i);
            sw[c] += gv * (ld(xp, off + i) - mean[q]) * rstd[q];
            sb[c] += gv;
          }
        }
      }
    });
    if (gW.defined()) write_doubles(gW, sw);
    if (gB.defined()) write_doubles(gB, sb);
  }
}

}  // namespace

void batch_norm_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_batch_norm", [&] {
    batch_norm_typed<scalar_t>(out, save_mean, save_invstd, x, weight, bias, running_mean, running_var, training,
                               momentum, eps);
  });
}

void batch_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                const Tensor& save_mean, const Tensor& save_invstd, bool training) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_batch_norm_backward", [&] {
    batch_norm_backward_typed<scalar_t>(grad_input, grad_weight, grad_bias, grad_out, x, weight, save_mean,
                                        save_invstd, training);
  });
}

void layer_norm_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_layer_norm", [&] {
    layer_norm_typed<scalar_t>(out, mean, rstd, x, weight, bias, M, N, eps);
  });
}

void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                const Tensor& weight, int64_t M, int64_t N) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_layer_norm_backward", [&] {
    layer_norm_backward_typed<scalar_t>(grad_input, grad_weight, grad_bias, grad_out, x, mean, rstd, weight, M, N);
  });
}

void group_norm_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t N, int64_t C, int64_t S, int64_t G,
                       double eps) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_group_norm", [&] {
    group_norm_typed<scalar_t>(out, mean, rstd, x, weight, bias, N, C, S, G, eps);
  });
}

void group_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                const Tensor& weight, int64_t N, int64_t C, int64_t S, int64_t G) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_group_norm_backward", [&] {
    group_norm_backward_typed<scalar_t>(grad_input, grad_weight, grad_bias, grad_out, x, mean, rstd, weight, N, C,
                                        S, G);
  });
}

}  // namespace tandem::kernels
