#pragma once
// Thin wrappers over oneDNN 2.6 (Debian's libdnnl) for the float32 kernels: matmul,
// convolution, deconvolution (transposed convolution) and pooling.
//
// - One CPU engine for the process; one stream per thread.
// - Primitive creation costs tens of microseconds, so primitives (with the reorders a
//   convolution needs between tandem's plain layouts and the blocked layouts oneDNN
//   picks) are kept in a small thread-safe LRU cache keyed by every shape, stride,
//   dtype and attribute that went into them.
// - Scratchpads are user-managed (taken from tandem's allocator for each execution, or
//   lent by the caller: ScratchpadLoan), so one primitive can run from several threads at
//   once and its scratch shows in tandem's memory statistics.
// - oneDNN threads with OpenMP (libgomp), the runtime tandem::parallel_for uses: one pool.
// No oneDNN header leaks out of this file; callers pass raw pointers and geometry.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "tandem/kernels/cpu/conv.h"
#include "tandem/kernels/cpu/gemm.h"

namespace tandem::kernels::onednn {

/// C[b] = alpha * A[b] @ B[b] + beta * C[b] in float32 (see gemm()): oneDNN's matmul
/// primitive, or for one large product (>= 2^31 multiply-adds, K >= 1024, M and N >= 512)
/// oneDNN's GEMM (dnnl_sgemm). Returns false, doing nothing, when oneDNN cannot take the
/// layout efficiently (neither inner stride is 1, or both A and B broadcast over a batch
/// > 1); the caller then uses its own loop. RuntimeError if oneDNN fails.
bool matmul_f32(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
                const GemmMatrix& C, float alpha, float beta);

/// The same product on bfloat16 operands and result (strides in elements): oneDNN's
/// bfloat16 matmul (AVX512-BF16/AMX where the CPU has them) accumulates in float32 and
/// rounds each result element once. Returns false as matmul_f32 does.
bool matmul_bf16(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
                 const GemmMatrix& C, float alpha, float beta);

/// While alive, lends `bytes` at `data` to the oneDNN primitives this thread executes as
/// their scratchpad, where it is large enough (others take theirs from the allocator as
/// usual). For a kernel with memory it will not touch until the primitive is done:
/// _fused_mm_to_copy lends the back half of its float32 result, so the product's scratch
/// costs nothing on top of the result. `data` is rounded up to 64 bytes. Nestable (the
/// innermost loan applies); not copyable.
class ScratchpadLoan {
 public:
  ScratchpadLoan(void* data, size_t bytes);
  ~ScratchpadLoan();
  ScratchpadLoan(const ScratchpadLoan&) = delete;
  ScratchpadLoan& operator=(const ScratchpadLoan&) = delete;

 private:
  void* prev_data_;
  size_t prev_bytes_;
};

/// Strides (in elements) of a 4-D tensor, for layouts other than contiguous NCHW.
struct Strides4 {
  int64_t s[4] = {0, 0, 0, 0};
};

/// out[N, OC, OH, OW] (contiguous) = conv(input, weight) + bias, float32. input/weight
/// may have any non-negative strides (channels-last is taken as is); bias may be null.
/// A batch of several images runs in slices of about 256 KiB of result, spread over the
/// threads, each slice a single-thread primitive whose result is reordered to NCHW while
/// still in that core's cache (measured on the Fashion-MNIST CNN at batch 256: 2 ms less
/// than one whole-batch call followed by a whole-batch reorder). Per-image values do not
/// depend on the slicing. Layouts: nChw16c when the channel counts allow and a JIT kernel
/// takes it, else oneDNN's choice. RuntimeError when oneDNN declines the geometry.
void conv2d_f32(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* weight, Strides4 w_st,
                const float* bias, float* out);

/// Receives batch rows [n0, n0 + n) of a float32 (conv2d_f32_to_layout) or bfloat16
/// (conv2d_bf16_to_layout) [N, C, H, W] result in a convolution primitive's own layout: channels in blocks of `cblock` (1: plain NCHW; 16: oneDNN's
/// nChw16c), element (n0 + i, c, h, w) at i*st[0] + (c / cblock)*st[1] + h*st[2] + w*st[3]
/// + c % cblock of `data`. Valid only during the call. A batched convolution calls it once
/// per slice of the batch, from several threads at once (disjoint rows).
using LayoutEpilogue =
    std::function<void(int64_t n0, int64_t n, const void* data, int64_t cblock, const int64_t* st)>;

/// The convolution of conv2d_f32 (the same primitive, so the same values), but the result
/// is not reordered to NCHW: `epilogue` reads it where the primitive wrote it (compiled
/// mode's fused conv + ReLU + pooling consumes it directly).
void conv2d_f32_to_layout(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* weight,
                          Strides4 w_st, const float* bias, const LayoutEpilogue& epilogue);

/// out[N, OC, OH, OW] (contiguous) = conv_transpose(input, weight) + bias, float32.
void conv_transpose2d_f32(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* weight,
                          Strides4 w_st, const float* bias, float* out);

/// conv2d_f32 (transposed=false) or conv_transpose2d_f32 (true) on bfloat16 input, weight,
/// bias (may be null) and result (contiguous NCHW): oneDNN's bfloat16 primitives
/// (AVX512-BF16/AMX where the CPU has them) accumulate in float32 and round each result
/// element once. The batch is sliced as conv2d_f32 slices it. RuntimeError when oneDNN
/// declines the geometry.
void conv2d_bf16(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* weight, Strides4 w_st,
                 const void* bias, void* out, bool transposed);

/// The convolution of conv2d_bf16 (transposed=false; the same primitives, so the same
/// values) with the result handed to `epilogue` in the primitive's layout, as
/// conv2d_f32_to_layout does for float32.
void conv2d_bf16_to_layout(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* weight,
                           Strides4 w_st, const void* bias, const LayoutEpilogue& epilogue);

/// Gradient of conv2d_f32 with respect to its input (oneDNN's backward-data primitive):
/// grad_input (contiguous [N, C, H, W]) from grad_out [N, OC, OH, OW] and the weight, both
/// with any non-negative strides. Raises RuntimeError when oneDNN declines the geometry.
void conv2d_backward_data_f32(const Conv2dGeometry& g, const float* grad_out, Strides4 go_st, const float* weight,
                              Strides4 w_st, float* grad_input);

/// Gradients of conv2d_f32 with respect to its weight and bias (oneDNN's backward-weights
/// primitive): grad_weight (contiguous [OC, C/groups, KH, KW]) and, when grad_bias is not
/// null, grad_bias [OC], from the forward input and grad_out (any non-negative strides).
void conv2d_backward_weights_f32(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* grad_out,
                                 Strides4 go_st, float* grad_weight, float* grad_bias);

/// Images per chunk in which the float32 backward functions above run a batch (see
/// for_each_batch_chunk in onednn.cpp), or 0 when they run it whole or oneDNN declines the
/// chunk's geometry (for the weights, and the data too when `with_input_grad`).
int64_t backward_chunk_images_f32(const Conv2dGeometry& g, bool with_input_grad);

/// Both: conv2d_backward_data_f32 and conv2d_backward_weights_f32 with grad_output reordered
/// to the primitives' layout once when both want the same one (the same values: the same
/// primitives on the same bytes). grad_bias may be null.
void conv2d_backward_f32(const Conv2dGeometry& g, const float* grad_out, Strides4 go_st, const float* input,
                         Strides4 in_st, const float* weight, Strides4 w_st, float* grad_input, float* grad_weight,
                         float* grad_bias);

/// conv2d_backward_data_f32 and conv2d_backward_weights_f32 on bfloat16 tensors (the
/// gradients are bfloat16 too): oneDNN's bfloat16 backward primitives accumulate in float32
/// and round each result element once. RuntimeError when oneDNN declines the geometry.
void conv2d_backward_data_bf16(const Conv2dGeometry& g, const void* grad_out, Strides4 go_st, const void* weight,
                               Strides4 w_st, void* grad_input);
void conv2d_backward_weights_bf16(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* grad_out,
                                  Strides4 go_st, void* grad_weight, void* grad_bias);

/// Both bfloat16 gradients at once (conv2d_backward_f32's bfloat16 form: grad_out
/// reordered once for the two primitives when they want one layout). Same values as
/// conv2d_backward_data_bf16 and conv2d_backward_weights_bf16 called in turn.
void conv2d_backward_bf16(const Conv2dGeometry& g, const void* grad_out, Strides4 go_st, const void* input,
                          Strides4 in_st, const void* weight, Strides4 w_st, void* grad_input, void* grad_weight,
                          void* grad_bias);

/// Max or average pooling over a contiguous NCHW float32 input into a contiguous output,
/// with per-side padding (bottom/right extended for ceil_mode). For average pooling,
/// AvgIncludePad divides by KH*KW and AvgExcludePad by the number of in-bounds elements.
/// No dilation (oneDNN 2.6 only has a reference kernel for it).
struct PoolPadding {
  int64_t t = 0, l = 0, b = 0, r = 0;
};
enum class PoolKind { Max, AvgIncludePad, AvgExcludePad };
void pool2d_f32(PoolKind kind, const Pool2dGeometry& g, PoolPadding pad, const float* input, float* out);

/// Cache statistics since the last clear (for tests and tuning).
struct CacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
  int64_t capacity = 0;
};
CacheStats cache_stats();
/// Drops every cached primitive and resets the counters.
void clear_cache();
/// Sets the maximum number of cached primitives (default 256; 0 disables caching).
void set_cache_capacity(size_t n);

}  // namespace tandem::kernels::onednn
