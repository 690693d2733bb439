#pragma once
// Batched, strided matrix multiply used by every linear-algebra and convolution kernel:
//   C[b] = alpha * A[b] @ B[b] + beta * C[b]      (A: M x K, B: K x N, C: M x N)
// float32 goes to oneDNN's matmul (kernels/cpu/onednn.h) and float64 to OpenBLAS's
// cblas_dgemm (kernels/cpu/openblas.h: loaded on first use with the kernel family named,
// single-threaded calls on blocks of C spread over tandem's pool) when the layout allows
// it (one of the two inner strides is 1) and the problem is not tiny; everything else
// (integers, tiny or oddly strided products, float64 without OpenBLAS) runs a
// cache-blocked loop with packed panels and a register-tiled micro-kernel that the
// compiler vectorises. bfloat16 products above 16^3 multiply-adds run oneDNN's
// bfloat16 matmul (float32 accumulation, one rounding); smaller ones and float16 are
// widened to float32, multiplied there and rounded once (PyTorch 1.13's CPU kernels have
// no float16 GEMM; tandem's float16 autocast needs one). Kernels trust their callers: shapes were validated by the op's meta
// function.
#include <cstdint>

#include "tandem/core/scalar.h"
#include "tandem/core/tensor.h"

namespace tandem::kernels {

/// Below this many multiply-adds a product (or convolution) runs on one thread, in
/// tandem's loops and in oneDNN alike: waking the second thread and the closing barrier
/// cost microseconds, and much more when the cores are shared with other processes.
/// (OpenBLAS uses the same bound.)
inline constexpr double kParallelMinWork = 64.0 * 64.0 * 64.0;

/// One operand: base pointer and strides in elements. A batch stride of 0 broadcasts the
/// same matrix over the batch.
struct GemmMatrix {
  void* data = nullptr;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// C[b] = alpha * A[b] @ B[b] + beta * C[b] for b in [0, batch). When beta is 0, C is
/// write-only (NaN/inf already in C do not propagate, as in BLAS and PyTorch). K == 0
/// gives beta * C. C must not overlap A or B. Supported dtypes: float32, float64,
/// bfloat16, float16, uint8, int8, int16, int32, int64 (integers wrap on overflow); TypeError
/// otherwise, naming `op`.
void gemm(const char* op, DType dtype, int64_t batch, int64_t M, int64_t N, int64_t K, GemmMatrix A, GemmMatrix B,
          GemmMatrix C, const Scalar& alpha = 1, const Scalar& beta = 0);

/// Tensor form: out[b] = alpha * a[b] @ b[b] + beta * out[b] on 3-D tensors of one dtype
/// with any strides (a batch dim of size 1 broadcasts), or on 2-D tensors (one matrix
/// each). `out` may be non-contiguous.
void bmm_out(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
             const Scalar& beta = 0);

/// Dot product of two 1-D tensors of equal length (any stride), written into the 0-d
/// tensor `out`. Same dtypes as gemm().
void dot_out(const char* op, const Tensor& out, const Tensor& a, const Tensor& b);

/// True for the dtypes gemm() accepts (PyTorch CPU's matmul dtypes).
bool gemm_supports(DType dtype);

}  // namespace tandem::kernels
