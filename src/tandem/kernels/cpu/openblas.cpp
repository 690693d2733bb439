// GEMM through OpenBLAS loaded with dlopen; see openblas.h for why.
#include "tandem/kernels/cpu/openblas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "tandem/core/parallel.h"

namespace tandem::kernels::openblas {

namespace {

using DgemmFn = decltype(&cblas_dgemm);
using SgemmFn = decltype(&cblas_sgemm);
using SetThreadsFn = void (*)(int);

// The library's two entry points tandem uses (null when it could not be loaded).
struct Library {
  DgemmFn dgemm = nullptr;
  SgemmFn sgemm = nullptr;
};

// Blocks of C per call: at most kRowBlock x kColBlock, chosen from the product's shape
// alone, so its values depend on its shape only (OpenBLAS picks kernels by the sizes of
// each call, and its results change with them), never on how many threads share the
// blocks. Measured on this machine (float64, 2 threads, tandem's OpenMP pool): 256 x 512
// blocks of equal size take 512^3 in 1.39 ms against 1.44 ms for 256 x 256 and 1.48 ms for
// one call on OpenBLAS's own two threads; splitting 128^3..384^3 into two equal row
// blocks instead of one 256-row block and a remainder (or one block) takes 0.03 / 0.20 /
// 0.68 ms for 128^3 / 256^3 / 384^3 against 0.05 / 0.38 / 0.81 ms.
constexpr int64_t kRowBlock = 256;
constexpr int64_t kColBlock = 512;
// Block sides are rounded up to a multiple of this (OpenBLAS's register tiles).
constexpr int64_t kBlockAlign = 16;

// Splits `extent` into `parts` blocks of equal size (up to rounding to kBlockAlign); returns
// the block size and sets `parts` to the count that size gives.
int64_t equal_blocks(int64_t extent, int64_t& parts) {
  int64_t size = (extent + parts - 1) / parts;
  size = (size + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  parts = (extent + size - 1) / size;
  return size;
}

Library load() {
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    __builtin_cpu_init();
    // Read by OpenBLAS when it loads (below); a value the user set is kept.
    if (__builtin_cpu_supports("avx512f"))
      setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    else if (__builtin_cpu_supports("avx2"))
      setenv("OPENBLAS_CORETYPE", "Haswell", 0);
  }
  void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) h = dlopen("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return {};
  Library lib;
  lib.dgemm = reinterpret_cast<DgemmFn>(dlsym(h, "cblas_dgemm"));
  lib.sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
  auto set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
  if (lib.dgemm == nullptr || lib.sgemm == nullptr || set_threads == nullptr) return {};
  set_threads(1);  // each call runs on the calling thread (see the header)
  return lib;
}

const Library& library() {
  static const Library lib = load();
  return lib;
}

// A rows x cols matrix with strides (rs, cs) as BLAS sees it in row-major order.
struct BlasOperand {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

bool as_blas(int64_t rows, int64_t cols, int64_t rs, int64_t cs, BlasOperand& out) {
  // Not transposed: element (i, j) at i * ld + j. A stride that is never stepped over (one
  // row, one column) does not matter.
  if (cs == 1 || cols == 1) {
    const int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (ld >= std::max<int64_t>(cols, 1) && ld <= INT_MAX) {
      out = {CblasNoTrans, ld};
      return true;
    }
  }
  // Transposed: element (i, j) at j * ld + i.
  if (rs == 1 || rows == 1) {
    const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (ld >= std::max<int64_t>(rows, 1) && ld <= INT_MAX) {
      out = {CblasTrans, ld};
      return true;
    }
  }
  return false;
}

}  // namespace

bool available() { return library().dgemm != nullptr; }

namespace {
// C[b] = alpha * A[b] @ B[b] + beta * C[b] through `fn` (cblas_sgemm or cblas_dgemm), in
// fixed blocks of C spread over tandem's pool (see the header).
template <typename T, typename Fn>
bool blas_gemm(Fn fn, int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A_in, const GemmMatrix& B_in,
               const GemmMatrix& C_in, T alpha, T beta) {
  if (fn == nullptr) return false;
  if (M <= 0 || N <= 0 || K <= 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX) return false;
  GemmMatrix A = A_in, B = B_in, C = C_in;
  // C must be row-major for cblas; a column-major C is the transposed problem
  // C^T = B^T @ A^T, which is row-major.
  BlasOperand c_op;
  if (!as_blas(M, N, C.row_stride, C.col_stride, c_op)) return false;
  if (c_op.trans == CblasTrans) {
    std::swap(M, N);
    std::swap(A, B);
    std::swap(A.row_stride, A.col_stride);
    std::swap(B.row_stride, B.col_stride);
    std::swap(C.row_stride, C.col_stride);
    if (!as_blas(M, N, C.row_stride, C.col_stride, c_op) || c_op.trans != CblasNoTrans) return false;
  }
  BlasOperand a_op, b_op;
  if (!as_blas(M, K, A.row_stride, A.col_stride, a_op) || !as_blas(K, N, B.row_stride, B.col_stride, b_op)) return false;
  const int64_t ldc = c_op.ld;
  const double work = static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  int64_t mt = (M + kRowBlock - 1) / kRowBlock, nt = (N + kColBlock - 1) / kColBlock;
  // One block of a product worth threading is cut in two along its longer side, so two
  // threads share it (a rule on the shape, not on the thread count: see kRowBlock).
  if (batch * mt * nt == 1 && work > kParallelMinWork && std::max(M, N) >= 2 * kBlockAlign) (M >= N ? mt : nt) = 2;
  const int64_t row_block = equal_blocks(M, mt), col_block = equal_blocks(N, nt);
  const int64_t tasks = batch * mt * nt;
  const T* a0 = static_cast<const T*>(A.data);
  const T* b0 = static_cast<const T*>(B.data);
  T* c0 = static_cast<T*>(C.data);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (mt * nt), rem = task % (mt * nt);
      const int64_t i0 = (rem / nt) * row_block, j0 = (rem % nt) * col_block;
      const int64_t m = std::min(row_block, M - i0), n = std::min(col_block, N - j0);
      const T* a = a0 + b * A.batch_stride + i0 * A.row_stride;
      const T* bb = b0 + b * B.batch_stride + j0 * B.col_stride;
      T* c = c0 + b * C.batch_stride + i0 * C.row_stride + j0 * C.col_stride;
      fn(CblasRowMajor, a_op.trans, b_op.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(K), alpha,
         a, static_cast<int>(a_op.ld), bb, static_cast<int>(b_op.ld), beta, c, static_cast<int>(ldc));
    }
  };
  if (tasks == 1 || work <= kParallelMinWork || get_num_threads() < 2 || in_parallel_region())
    run(0, tasks);
  else
    parallel_for(0, tasks, 1, run);
  return true;
}
}  // namespace

bool dgemm(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
           const GemmMatrix& C, double alpha, double beta) {
  return blas_gemm<double>(library().dgemm, batch, M, N, K, A, B, C, alpha, beta);
}

bool sgemm(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
           const GemmMatrix& C, float alpha, float beta) {
  return blas_gemm<float>(library().sgemm, batch, M, N, K, A, B, C, alpha, beta);
}

}  // namespace tandem::kernels::openblas
