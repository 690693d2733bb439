#include "tandem/kernels/cpu/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/onednn.h"
#include "tandem/kernels/cpu/openblas.h"

namespace tandem::kernels {

namespace {

// Accumulator type: floating types accumulate in themselves (as BLAS does); integers in
// an unsigned type of at least 32 bits, which wraps like PyTorch's integer matmul and is
// equal modulo 2^bits to the narrow result (no signed-overflow UB).
template <typename T> struct GemmAcc { using type = T; };
template <> struct GemmAcc<uint8_t> { using type = uint32_t; };
template <> struct GemmAcc<int8_t> { using type = uint32_t; };
template <> struct GemmAcc<int16_t> { using type = uint32_t; };
template <> struct GemmAcc<int32_t> { using type = uint32_t; };
template <> struct GemmAcc<int64_t> { using type = uint64_t; };

// Register tile MR x NR (NR = two 64-byte vectors: 12 accumulators) and cache blocks:
// packed B (KC x NC) stays in L2/L3, packed A (MC x KC) in L2, and the C tile is
// prefetched while the micro-kernel runs. KC = 256 measured best on this machine
// (float64 512^3: 41 GFLOP/s per core vs OpenBLAS SkylakeX's 47).
template <typename Acc>
struct Blocking {
  static constexpr int MR = 6;
  static constexpr int NR = 128 / static_cast<int>(sizeof(Acc));
  static constexpr int64_t KC = 256;
  static constexpr int64_t MC = 96;
  static constexpr int64_t NC = 1024;
};

template <typename Acc>
inline Acc madd(Acc c, Acc a, Acc b) {
  if constexpr (std::is_floating_point_v<Acc>) return std::fma(a, b, c);  // the file is built with -ffp-contract=off
  else return static_cast<Acc>(c + a * b);
}

/// tile[MR][NR] = sum_k a[k][0..MR) (x) b[k][0..NR).
template <typename Acc, int MR, int NR>
inline void micro_kernel(int64_t kc, const Acc* __restrict a, const Acc* __restrict b, Acc* __restrict tile) {
  Acc acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = Acc(0);
  for (int64_t k = 0; k < kc; ++k) {
    const Acc* bk = b + k * NR;
    const Acc* ak = a + k * MR;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const Acc ai = ak[i];
#pragma GCC unroll 32
      for (int j = 0; j < NR; ++j) acc[i][j] = madd(acc[i][j], ai, bk[j]);
    }
  }
  std::memcpy(tile, acc, sizeof(acc));
}

template <typename T>
inline auto to_acc(T v) {
  using Acc = typename GemmAcc<T>::type;
  return static_cast<Acc>(v);
}

/// Packs rows [0, mc) x cols [0, kc) of A (strided) into MR-row panels, zero-padded.
template <typename T, typename Acc, int MR>
void pack_a(int64_t mc, int64_t kc, const T* a, int64_t rs, int64_t cs, Acc* dst) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    const int64_t rows = std::min<int64_t>(MR, mc - ir);
    if (rows < MR) std::fill(dst, dst + kc * MR, Acc(0));
    for (int64_t i = 0; i < rows; ++i) {  // row by row: contiguous reads for row-major A
      const T* src = a + (ir + i) * rs;
      for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = static_cast<Acc>(src[k * cs]);
    }
    dst += kc * MR;
  }
}

/// Packs rows [0, kc) x cols [0, nc) of B (strided) into NR-column panels, zero-padded.
template <typename T, typename Acc, int NR>
void pack_b(int64_t kc, int64_t nc, const T* b, int64_t rs, int64_t cs, Acc* dst) {
  for (int64_t jr = 0; jr < nc; jr += NR) {
    const int64_t cols = std::min<int64_t>(NR, nc - jr);
    for (int64_t k = 0; k < kc; ++k) {
      const T* src = b + k * rs + jr * cs;
      Acc* d = dst + k * NR;
      if (cols == NR && cs == 1) {
        for (int j = 0; j < NR; ++j) d[j] = static_cast<Acc>(src[j]);  // fixed trip count: vectorised
      } else {
        for (int64_t j = 0; j < cols; ++j) d[j] = static_cast<Acc>(src[j * cs]);
        for (int64_t j = cols; j < NR; ++j) d[j] = Acc(0);
      }
    }
    dst += kc * NR;
  }
}

/// dst = alpha * acc + beta * dst, each product rounded on its own (dst not read when
/// beta_zero): the store of write_tile's edge tiles and of gemm_loop's tiny path.
template <typename T, typename Acc>
inline void store_elem(T& dst, Acc acc, Acc alpha, Acc beta, bool beta_zero) {
  Acc v = static_cast<Acc>(alpha * acc);
  if (!beta_zero) v = static_cast<Acc>(v + beta * to_acc(dst));
  dst = static_cast<T>(v);
}

/// C[i][j] = alpha * tile[i][j] + beta * C[i][j] (C not read when beta_zero) for the
/// valid rows/cols of one register tile. Full-width rows with unit stride take a
/// fixed-length loop the compiler vectorises.
template <typename T, int NR, typename Acc>
inline void write_tile(T* c, int64_t crs, int64_t ccs, const Acc* tile, int64_t rows, int64_t cols, Acc alpha, Acc beta,
                       bool beta_zero) {
  if (cols == NR && ccs == 1) {
    for (int64_t i = 0; i < rows; ++i) {
      T* crow = c + i * crs;
      const Acc* trow = tile + i * NR;
      if (beta_zero) {
        for (int j = 0; j < NR; ++j) crow[j] = static_cast<T>(static_cast<Acc>(alpha * trow[j]));
      } else if (beta == Acc(1)) {
        for (int j = 0; j < NR; ++j) crow[j] = static_cast<T>(static_cast<Acc>(alpha * trow[j] + to_acc(crow[j])));
      } else {
        for (int j = 0; j < NR; ++j)
          crow[j] = static_cast<T>(static_cast<Acc>(alpha * trow[j] + beta * to_acc(crow[j])));
      }
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) store_elem(c[i * crs + j * ccs], tile[i * NR + j], alpha, beta, beta_zero);
}

template <typename T>
struct GemmTask {
  int64_t M, N, K;
  const T* A;
  int64_t ars, acs;
  const T* B;
  int64_t brs, bcs;
  T* C;
  int64_t crs, ccs;
};

/// C[i0:i1, j0:j1] for the full K (Goto's loop order): for each NC-wide column block and
/// KC-deep slice, B is packed once and reused by every MC-row block of A.
template <typename T>
void gemm_block(const GemmTask<T>& t, int64_t i0, int64_t i1, int64_t j0, int64_t j1, typename GemmAcc<T>::type alpha,
                typename GemmAcc<T>::type beta, bool beta_zero, std::vector<typename GemmAcc<T>::type>& buf) {
  using Acc = typename GemmAcc<T>::type;
  using Bk = Blocking<Acc>;
  constexpr int MR = Bk::MR, NR = Bk::NR;
  const int64_t kc_max = std::min<int64_t>(Bk::KC, t.K);
  const int64_t nc_max = (std::min<int64_t>(Bk::NC, j1 - j0) + NR - 1) / NR * NR;
  const int64_t mc_max = (std::min<int64_t>(Bk::MC, i1 - i0) + MR - 1) / MR * MR;
  const size_t need = static_cast<size_t>(mc_max * kc_max + nc_max * kc_max + MR * NR);
  if (buf.size() < need) buf.resize(need);
  Acc* ap = buf.data();
  Acc* bp = ap + mc_max * kc_max;
  Acc* tile = bp + nc_max * kc_max;
  for (int64_t jc = j0; jc < j1; jc += Bk::NC) {
    const int64_t nc = std::min<int64_t>(Bk::NC, j1 - jc);
    for (int64_t pc = 0; pc < t.K; pc += Bk::KC) {
      const int64_t kc = std::min<int64_t>(Bk::KC, t.K - pc);
      const bool first = pc == 0;
      pack_b<T, Acc, NR>(kc, nc, t.B + pc * t.brs + jc * t.bcs, t.brs, t.bcs, bp);
      for (int64_t ic = i0; ic < i1; ic += Bk::MC) {
        const int64_t mc = std::min<int64_t>(Bk::MC, i1 - ic);
        pack_a<T, Acc, MR>(mc, kc, t.A + ic * t.ars + pc * t.acs, t.ars, t.acs, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t cols = std::min<int64_t>(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t rows = std::min<int64_t>(MR, mc - ir);
            T* c = t.C + (ic + ir) * t.crs + (jc + jr) * t.ccs;
            for (int64_t i = 0; i < rows; ++i) {  // C rows are far apart: fetch them during the kernel
              __builtin_prefetch(c + i * t.crs, 1);
              __builtin_prefetch(c + i * t.crs + (cols - 1) * t.ccs, 1);
            }
            micro_kernel<Acc, MR, NR>(kc, ap + ir * kc, bp + jr * kc, tile);
            write_tile<T, NR>(c, t.crs, t.ccs, tile, rows, cols, alpha, first ? beta : Acc(1), first && beta_zero);
          }
        }
      }
    }
  }
}

// Products of at most this many multiply-adds skip packing (gemm_loop's small path).
constexpr double kSmallWork = 16.0 * 16.0 * 16.0;

/// Portable batched gemm (any strides, any supported dtype). Work is split into
/// batch x row-range x column-range tasks; ranges are only cut as finely as the thread
/// count needs, so each task packs its slice of B once.
template <typename T>
void gemm_loop(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
               const GemmMatrix& C, const Scalar& alpha_s, const Scalar& beta_s) {
  using Acc = typename GemmAcc<T>::type;
  using Bk = Blocking<Acc>;
  const Acc alpha = alpha_s.to<Acc>();
  const Acc beta = beta_s.to<Acc>();
  const bool beta_zero = beta == Acc(0);
  T* cbase = static_cast<T*>(C.data);
  if (K == 0) {  // C = beta * C
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          T& dst = cbase[b * C.batch_stride + i * C.row_stride + j * C.col_stride];
          dst = beta_zero ? T(0) : static_cast<T>(beta * to_acc(dst));
        }
    return;
  }
  const double work = static_cast<double>(batch) * M * N * K;
  if (work <= kSmallWork && K <= Bk::KC) {
    // Tiny products (a batch-1 step of a small model): the blocked path's packing and
    // 6 x 32 register tiles cost far more than the products. The same arithmetic per
    // element (one accumulator from 0, madd over k in order, then alpha and beta as
    // write_tile applies them), so the result is the blocked path's, bit for bit.
    thread_local std::vector<Acc> acc;
    acc.resize(static_cast<size_t>(N));
    for (int64_t b = 0; b < batch; ++b) {
      const T* a0 = static_cast<const T*>(A.data) + b * A.batch_stride;
      const T* b0 = static_cast<const T*>(B.data) + b * B.batch_stride;
      T* c0 = cbase + b * C.batch_stride;
      for (int64_t i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (int64_t k = 0; k < K; ++k) {
          const Acc ai = to_acc(a0[i * A.row_stride + k * A.col_stride]);
          const T* bk = b0 + k * B.row_stride;
          for (int64_t j = 0; j < N; ++j) acc[static_cast<size_t>(j)] = madd(acc[static_cast<size_t>(j)], ai, to_acc(bk[j * B.col_stride]));
        }
        for (int64_t j = 0; j < N; ++j)
          store_elem(c0[i * C.row_stride + j * C.col_stride], acc[static_cast<size_t>(j)], alpha, beta, beta_zero);
      }
    }
    return;
  }
  const bool parallel = work > kParallelMinWork && get_num_threads() > 1 && !in_parallel_region();
  // Split columns first (keeps each B element packed once), then rows.
  int64_t nt = 1, mt = 1;
  if (parallel && batch < get_num_threads()) {
    const int64_t want = (get_num_threads() + batch - 1) / batch;
    nt = std::min<int64_t>(want, (N + Bk::NR - 1) / Bk::NR);
    mt = std::min<int64_t>((want + nt - 1) / nt, (M + Bk::MR - 1) / Bk::MR);
  }
  const int64_t ncw = ((N + nt - 1) / nt + Bk::NR - 1) / Bk::NR * Bk::NR;
  const int64_t mcw = ((M + mt - 1) / mt + Bk::MR - 1) / Bk::MR * Bk::MR;
  nt = (N + ncw - 1) / ncw;
  mt = (M + mcw - 1) / mcw;
  const int64_t tasks = batch * mt * nt;
  auto run = [&](int64_t begin, int64_t end) {
    thread_local std::vector<Acc> buf;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (mt * nt), rem = task % (mt * nt);
      const int64_t i0 = (rem / nt) * mcw, j0 = (rem % nt) * ncw;
      GemmTask<T> t{M, N, K,
                    static_cast<const T*>(A.data) + b * A.batch_stride, A.row_stride, A.col_stride,
                    static_cast<const T*>(B.data) + b * B.batch_stride, B.row_stride, B.col_stride,
                    cbase + b * C.batch_stride, C.row_stride, C.col_stride};
      gemm_block<T>(t, i0, std::min(i0 + mcw, M), j0, std::min(j0 + ncw, N), alpha, beta, beta_zero, buf);
    }
  };
  if (!parallel || tasks == 1) run(0, tasks);
  else parallel_for(0, tasks, 1, run);
}

// Below this many multiply-adds, float32 runs the portable loop: oneDNN's per-call cost
// (memory objects, argument map, stream) is about a microsecond.
constexpr double kOnednnMinWork = 16.0 * 16.0 * 16.0;

// Up to this many multiply-adds per matrix, float32 goes to OpenBLAS, one single-threaded
// call per block of C (openblas.cpp): on this machine (AVX-512) 64^3 takes 3.2 us there against
// 5.6 us through oneDNN (whose per-call cost dominates small products), 32^3 0.5 against
// 2.3 us; at 128^3 oneDNN's two threads win.
constexpr double kOpenblasF32MaxWork = 96.0 * 96.0 * 96.0;

void gemm_f32(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
              const GemmMatrix& C, const Scalar& alpha, const Scalar& beta) {
  const double work = static_cast<double>(batch) * M * N * K;
  if (K > 0 && work > kOnednnMinWork && work / static_cast<double>(batch) <= kOpenblasF32MaxWork && M <= 256 &&
      N <= 256 && openblas::sgemm(batch, M, N, K, A, B, C, static_cast<float>(alpha.to_double()),
                                  static_cast<float>(beta.to_double())))
    return;
  if (K > 0 && work > kOnednnMinWork &&
      onednn::matmul_f32(batch, M, N, K, A, B, C, static_cast<float>(alpha.to_double()),
                         static_cast<float>(beta.to_double())))
    return;
  gemm_loop<float>(batch, M, N, K, A, B, C, alpha, beta);
}

/// bfloat16/float16: widen to float32 (contiguous), multiply in float32 (oneDNN/OpenBLAS),
/// round once.
template <typename T>
void gemm_reduced(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
               const GemmMatrix& C, const Scalar& alpha, const Scalar& beta) {
  auto widen = [](const GemmMatrix& m, int64_t nb, int64_t rows, int64_t cols, std::vector<float>& out) {
    out.resize(static_cast<size_t>(nb * rows * cols));
    const T* p = static_cast<const T*>(m.data);
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          out[(b * rows + i) * cols + j] = static_cast<float>(p[b * m.batch_stride + i * m.row_stride + j * m.col_stride]);
  };
  std::vector<float> a, b, c;
  const int64_t ab = A.batch_stride == 0 ? 1 : batch, bb = B.batch_stride == 0 ? 1 : batch;
  widen(A, ab, M, K, a);
  widen(B, bb, K, N, b);
  const bool beta_zero = beta.to_double() == 0.0;
  if (beta_zero) c.assign(static_cast<size_t>(batch * M * N), 0.0f);
  else widen(C, batch, M, N, c);
  gemm_f32(batch, M, N, K, GemmMatrix{a.data(), ab == 1 ? 0 : M * K, K, 1}, GemmMatrix{b.data(), bb == 1 ? 0 : K * N, N, 1},
           GemmMatrix{c.data(), M * N, N, 1}, alpha, beta);
  T* out = static_cast<T*>(C.data);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        out[bi * C.batch_stride + i * C.row_stride + j * C.col_stride] = static_cast<T>(c[(bi * M + i) * N + j]);
}

}  // namespace

bool gemm_supports(DType dtype) {
  switch (dtype) {
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64:
      return true;
    default:
      return false;
  }
}

void gemm(const char* op, DType dtype, int64_t batch, int64_t M, int64_t N, int64_t K, GemmMatrix A, GemmMatrix B,
          GemmMatrix C, const Scalar& alpha, const Scalar& beta) {
  if (batch == 0 || M == 0 || N == 0) return;
  if (batch == 1) A.batch_stride = B.batch_stride = C.batch_stride = 0;
  switch (dtype) {
    case DType::Float32: return gemm_f32(batch, M, N, K, A, B, C, alpha, beta);
    case DType::Float64: {
      const double work = static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
      if (work > kOnednnMinWork && openblas::dgemm(batch, M, N, K, A, B, C, alpha.to_double(), beta.to_double()))
        return;
      return gemm_loop<double>(batch, M, N, K, A, B, C, alpha, beta);
    }
    case DType::BFloat16: {
      const double work = static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
      if (K > 0 && work > kOnednnMinWork &&
          onednn::matmul_bf16(batch, M, N, K, A, B, C, static_cast<float>(alpha.to_double()),
                              static_cast<float>(beta.to_double())))
        return;
      return gemm_reduced<BFloat16>(batch, M, N, K, A, B, C, alpha, beta);
    }
    case DType::Float16: return gemm_reduced<Half>(batch, M, N, K, A, B, C, alpha, beta);
    case DType::UInt8: return gemm_loop<uint8_t>(batch, M, N, K, A, B, C, alpha, beta);
    case DType::Int8: return gemm_loop<int8_t>(batch, M, N, K, A, B, C, alpha, beta);
    case DType::Int16: return gemm_loop<int16_t>(batch, M, N, K, A, B, C, alpha, beta);
    case DType::Int32: return gemm_loop<int32_t>(batch, M, N, K, A, B, C, alpha, beta);
    case DType::Int64: return gemm_loop<int64_t>(batch, M, N, K, A, B, C, alpha, beta);
    default: break;
  }
  throw TypeError(str_cat("[", op, "] got dtype ", dtype_name(dtype),
                          ", expected one of uint8, int8, int16, int32, int64, bfloat16, float32, float64"));
}

void bmm_out(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
             const Scalar& beta) {
  // A 2-D operand is one matrix (batch 1): read its geometry directly instead of making a
  // 3-D view of it (a tensor object per operand, per call: most of a tiny product's cost).
  struct Geo {
    int64_t batch, rows, cols, bs, rs, cs;
  };
  auto geo = [](const Tensor& t) {
    const IntArrayRef sz = t.sizes(), st = t.strides();
    if (sz.size() == 2) return Geo{1, sz[0], sz[1], 0, st[0], st[1]};
    return Geo{sz[0], sz[1], sz[2], sz[0] == 1 ? 0 : st[0], st[1], st[2]};
  };
  const Geo go = geo(out), ga = geo(a), gb = geo(b);
  GemmMatrix A{a.data_ptr(), ga.bs, ga.rs, ga.cs};
  GemmMatrix B{b.data_ptr(), gb.bs, gb.rs, gb.cs};
  GemmMatrix C{out.data_ptr(), go.batch == 1 ? 0 : go.bs, go.rs, go.cs};
  gemm(op, out.dtype(), go.batch, go.rows, go.cols, ga.cols, A, B, C, alpha, beta);
}

namespace {
template <typename T>
void dot_loop(const Tensor& out, const Tensor& a, const Tensor& b) {
  using Acc =
      std::conditional_t<std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>, float, typename GemmAcc<T>::type>;
  const int64_t n = a.numel(), sa = a.stride(0), sb = b.stride(0);
  const T* x = static_cast<const T*>(a.data_ptr());
  const T* y = static_cast<const T*>(b.data_ptr());
  constexpr int L = 16;  // independent partial sums: vectorisable without reassociation flags
  Acc part[L] = {};
  int64_t i = 0;
  if (sa == 1 && sb == 1) {
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) part[l] = madd(part[l], static_cast<Acc>(x[i + l]), static_cast<Acc>(y[i + l]));
  }
  for (; i < n; ++i) part[0] = madd(part[0], static_cast<Acc>(x[i * sa]), static_cast<Acc>(y[i * sb]));
  Acc s = Acc(0);
  for (int l = 0; l < L; ++l) s = static_cast<Acc>(s + part[l]);
  *static_cast<T*>(out.data_ptr()) = static_cast<T>(s);
}
}  // namespace

void dot_out(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (out.dtype()) {
    case DType::Float32: return dot_loop<float>(out, a, b);
    case DType::Float64: return dot_loop<double>(out, a, b);
    case DType::BFloat16: return dot_loop<BFloat16>(out, a, b);
    case DType::Float16: return dot_loop<Half>(out, a, b);
    case DType::UInt8: return dot_loop<uint8_t>(out, a, b);
    case DType::Int8: return dot_loop<int8_t>(out, a, b);
    case DType::Int16: return dot_loop<int16_t>(out, a, b);
    case DType::Int32: return dot_loop<int32_t>(out, a, b);
    case DType::Int64: return dot_loop<int64_t>(out, a, b);
    default: break;
  }
  throw TypeError(str_cat("[", op, "] got dtype ", dtype_name(out.dtype()),
                          ", expected one of uint8, int8, int16, int32, int64, bfloat16, float32, float64"));
}

}  // namespace tandem::kernels
