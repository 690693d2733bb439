#pragma once
// Convolution and pooling kernels (forward). float32 runs through oneDNN
// (kernels/cpu/onednn.h) where oneDNN fits; float64 and integer convolutions use
// im2col/col2im + gemm(); pools without a oneDNN equivalent (indices, dilation,
// divisor_override, adaptive windows) use the loops in pool.cpp. bfloat16 is computed in
// float32 and rounded once. Backward kernels (data/weight gradients, pool backward) are
// meant to live next to these.
//
// All kernels trust their callers: the ops validated shapes, dtypes and attributes.
#include <cstdint>
#include <optional>

#include "tandem/core/tensor.h"

namespace tandem::kernels {

/// 2-D convolution geometry. Input [N, C, H, W]; output [N, OC, OH, OW].
/// Convolution weight: [OC, C/groups, KH, KW]. Transposed convolution weight:
/// [C, OC/groups, KH, KW]. Padding is per side (top/left/bottom/right) so 'same' padding
/// with an even kernel can be asymmetric; for transposed convolution pad_b/pad_r are
/// padding - output_padding and may be negative.
struct Conv2dGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t OC = 0, KH = 0, KW = 0;
  int64_t OH = 0, OW = 0;
  int64_t groups = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int64_t dil_h = 1, dil_w = 1;
};

/// out (contiguous [N, OC, OH, OW]) = conv2d(input [N, C, H, W], weight) + bias.
/// bias may be undefined. Dtypes: float32, float64, bfloat16, uint8, int8, int16, int32,
/// int64 (all operands the same).
void conv2d_forward(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                    const Tensor& bias);

/// out (contiguous [N, OC, OH, OW]) = conv_transpose2d(input [N, C, H, W], weight) + bias.
void conv_transpose2d_forward(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                              const Tensor& bias);

/// Gradients of conv2d_forward. Each output may be undefined (not wanted); defined ones
/// are contiguous and fully overwritten: grad_input [N, C, H, W], grad_weight
/// [OC, C/groups, KH, KW], grad_bias [OC]. grad_output [N, OC, OH, OW], input and weight
/// may have any strides. Padding may be asymmetric. Dtypes: float32 (oneDNN's
/// backward-data / backward-weights primitives where oneDNN takes the geometry),
/// float64 (im2col/col2im + gemm), bfloat16 (computed in float32, rounded once).
void conv2d_backward(const Conv2dGeometry& g, const Tensor& grad_input, const Tensor& grad_weight,
                     const Tensor& grad_bias, const Tensor& grad_output, const Tensor& input, const Tensor& weight);

/// Images per chunk in which conv2d_backward sums the weight gradient (and the bias
/// gradient with it) of a batch of dtype `dt` over images: each chunk is one oneDNN call,
/// and the chunks' partial sums are added to the first chunk's in chunk order, one float
/// add per element. 0 when the call runs the whole batch at once (not float32, or the batch
/// fits in one chunk, or oneDNN declines the chunk's geometry: the portable fallback sums
/// the whole batch at once). `with_input_grad`: the call computes grad_input too. So
/// per-chunk calls on slices of the batch plus those adds give the whole call's bytes (the
/// memory-budget planner splits such a node this way).
int64_t conv2d_backward_batch_chunk(const Conv2dGeometry& g, DType dt, bool with_input_grad);

/// Pooling window geometry over input [N, C, H, W] (N*C planes) into [N, C, OH, OW].
/// Window (oh, ow) starts at (oh*stride_h - pad_h, ow*stride_w - pad_w).
struct Pool2dGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t KH = 1, KW = 1, stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  bool ceil_mode = false;
};

/// Max pooling; NaN wins (propagates) as in PyTorch. When `indices` is defined (int64,
/// same shape as out) it receives the flat index h * W + w of each maximum within its
/// plane (PyTorch's max_pool2d_with_indices format). Dtypes: float32, float64, bfloat16.
void max_pool2d_forward(const Pool2dGeometry& g, const Tensor& out, const Tensor& indices, const Tensor& input);

/// Gradient of max pooling: grad_input (contiguous [N, C, H, W], fully overwritten) is
/// zero except at each window's argmax (the position max_pool2d_forward's indices name),
/// where the window's grad_output element is added (summed where windows overlap).
/// grad_output [N, C, OH, OW] and input [N, C, H, W] may have any strides. Dtypes: float32,
/// float64, bfloat16 (all operands the same).
void max_pool2d_backward(const Pool2dGeometry& g, const Tensor& grad_input, const Tensor& grad_output,
                         const Tensor& input);

/// Average pooling with PyTorch's divisor rule: divisor_override if given, else the window
/// size clipped to the padded input (count_include_pad) or to the input (otherwise).
/// Dtypes: float32, float64, bfloat16, int64 (integer division truncates).
void avg_pool2d_forward(const Pool2dGeometry& g, const Tensor& out, const Tensor& input, bool count_include_pad,
                        std::optional<int64_t> divisor_override);

/// Max pooling (no padding, no dilation), optionally of relu(x), of a float32 [N, C, H, W]
/// tensor stored with channels in blocks of `cblock` (1: plain NCHW; 8 or 16: oneDNN's
/// nChw16c): element (n, c, h, w) at n*st[0] + (c / cblock)*st[1] + h*st[2] + w*st[3] +
/// c % cblock. Writes `out` [N, C, OH, OW] with element strides `os` (NCHW, channels last,
/// any). Same values and comparison order as relu then max_pool2d_forward, so bitwise the
/// same result (NaN wins). With `indices` (2x2 windows of stride 2 only), also writes
/// each window's argmax as a code 0..3 (row-major position in the window) into the
/// contiguous uint8 [N, C, OH, OW] array, chosen as max_pool2d_backward chooses it on the
/// relu'd input (first maximum, else the last NaN), plus 4 where the window's maximum is
/// <= 0 (not NaN): where relu's backward drops the gradient.
void relu_max_pool_layout_f32(const Pool2dGeometry& g, const float* x, int64_t cblock, const int64_t* st, bool relu,
                              float* out, const int64_t* os, uint8_t* indices = nullptr);
/// relu_max_pool_layout_f32 on bfloat16 data: the same selections (in float32, where every
/// bfloat16 value is exact), each result stored as the unfused bfloat16 relu and max_pool2d
/// store it (core/half.h's rounding: the value itself; a signalling NaN made quiet).
void relu_max_pool_layout_bf16(const Pool2dGeometry& g, const BFloat16* x, int64_t cblock, const int64_t* st,
                               bool relu, BFloat16* out, const int64_t* os, uint8_t* indices = nullptr);

/// The gradient of max_pool2d(relu(x)) (2x2 windows, stride 2, no padding) from the
/// window codes alone (relu_max_pool_layout_f32's `indices`): bitwise
/// threshold_backward(max_pool2d_backward(grad_output, relu(x)), relu(x), 0), without
/// relu(x) or the pooled output: at a window's argmax relu(x) is the window's maximum, and
/// the code's bit 4 says whether that is <= 0. grad_input [N, C, H, W], grad_output and
/// indices [N, C, OH, OW], all contiguous; float32.
void max_pool2d_relu_backward_f32(const Pool2dGeometry& g, float* grad_input, const float* grad_output,
                                  const uint8_t* indices);
/// max_pool2d_relu_backward_f32 on bfloat16 tensors: bitwise the unfused bfloat16
/// max_pool2d_backward then threshold_backward.
void max_pool2d_relu_backward_bf16(const Pool2dGeometry& g, BFloat16* grad_input, const BFloat16* grad_output,
                                   const uint8_t* indices);

/// Compiled mode's fused convolution block (op _fused_conv2d):
///   out = max_pool2d(relu(conv2d(input, weight) + bias))   (relu and pooling optional)
/// with the values of the unfused kernels (bitwise): a float32 convolution runs the same
/// oneDNN primitives as conv2d_forward (a batch in slices, see onednn::conv2d_f32) but each
/// slice's result stays in the primitive's layout in a temporary buffer, and ReLU + pooling
/// read it from there while it is in cache and write `out` once (with out's strides: NCHW,
/// or channels last for a next convolution), instead of a reorder to NCHW, a ReLU pass and
/// a pooling pass over the whole batch.
/// A bfloat16 block does the same with conv2d_forward's bfloat16 primitives
/// (onednn::conv2d_bf16_to_layout, relu_max_pool_layout_bf16), bitwise the unfused bfloat16
/// ops. `pool` (no padding or dilation) may be null. A geometry oneDNN declines runs the
/// unfused kernels in turn (float32 and bfloat16 only).
/// With `indices` defined (uint8, contiguous, out's sizes; relu and a 2x2, stride 2 pool
/// only), also writes each window's argmax code (see relu_max_pool_layout_f32): what
/// max_pool2d_relu_backward_f32 needs instead of the ReLU result.
void conv2d_block_forward(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                          const Tensor& bias, bool relu, const Pool2dGeometry* pool, const Tensor& indices = Tensor());

/// Adaptive average pooling: output cell (oh, ow) averages rows
/// [floor(oh*H/OH), ceil((oh+1)*H/OH)) and the same for columns. Input [N, C, H, W].
void adaptive_avg_pool2d_forward(const Tensor& out, const Tensor& input);

/// Adaptive max pooling with flat h * W + w indices (int64), like adaptive_max_pool2d.
void adaptive_max_pool2d_forward(const Tensor& out, const Tensor& indices, const Tensor& input);

}  // namespace tandem::kernels
