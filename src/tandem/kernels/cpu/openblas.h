#pragma once
// float64 and (small and medium) float32 matrix multiply through OpenBLAS (Debian's
// libopenblas0), loaded on first use.
//
// OpenBLAS runs single-threaded inside tandem's OpenMP pool: the product is cut into
// blocks of C of fixed size (so the values never depend on the thread count) and each
// block is one cblas_dgemm call on one thread. OpenBLAS's own threads would busy-wait
// after each call and compete with the pool oneDNN and tandem share.
//
// Debian's OpenBLAS 0.3.21 does not recognise this generation of CPUs and falls back to
// SSE3 kernels (about 5x slower) unless OPENBLAS_CORETYPE names a kernel family, and it
// reads that variable when it loads. tandem therefore loads it with dlopen on the first
// float64 product, after setting OPENBLAS_CORETYPE (only when the user has not) to the
// best family the CPU supports: SkylakeX with AVX-512, Haswell with AVX2. When the
// library cannot be loaded, dgemm() returns false and gemm() uses its own loop.
#include <cstdint>

#include "tandem/kernels/cpu/gemm.h"

namespace tandem::kernels::openblas {

/// C[b] = alpha * A[b] @ B[b] + beta * C[b] in float64 (see gemm(); A: M x K, B: K x N).
/// Returns false, doing nothing, when OpenBLAS is not available or a matrix's layout is
/// not one BLAS takes (one of its strides must be 1 and the other at least the length of
/// the rows or columns it steps over; C may be transposed). K > 0 and M, N > 0.
bool dgemm(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
           const GemmMatrix& C, double alpha, double beta);

/// The same in float32 (cblas_sgemm). gemm() takes it for small and medium products, where
/// OpenBLAS's per-call cost is below oneDNN's (measured in gemm.cpp).
bool sgemm(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
           const GemmMatrix& C, float alpha, float beta);

/// True when the library is loaded (loads it on first call). For tests and reports.
bool available();

}  // namespace tandem::kernels::openblas
