#pragma once
// Convolution and pooling (conv1d/2d, conv_transpose2d, max/avg/adaptive pools), NCHW, with
// PyTorch semantics (torch.nn.functional). float32 runs on oneDNN; float64, integer (conv)
// and the cases oneDNN lacks (pool indices, dilation, divisor_override, adaptive windows)
// run tandem's own loops. Inputs may be batched ([N, C, H, W]) or unbatched ([C, H, W];
// conv1d: [N, C, L] or [C, L]); the result has the same batching.
//
// Int-list arguments take one value (used for both dims) or one per spatial dim;
// ValueError otherwise. Operands must share one dtype (TypeError otherwise).
#include <optional>
#include <tuple>

#include "tandem/core/tensor.h"

namespace tandem {

/// The string paddings of conv1d/conv2d, like torch::kSame / torch::kValid (the op's
/// attribute is the string "same" / "valid").
enum class PaddingMode { Same, Valid };
inline constexpr PaddingMode kSame = PaddingMode::Same;
inline constexpr PaddingMode kValid = PaddingMode::Valid;

/// 2-D convolution (torch.nn.functional.conv2d). input [N, C, H, W] or [C, H, W];
/// weight [OC, C/groups, KH, KW]; bias [OC] or undefined. Output
/// [N, OC, (H + 2p - d(KH-1) - 1)/s + 1, ...]. Dtypes: float32, float64, bfloat16 and the
/// integer types (not bool/float16). ShapeError for channel/group/bias mismatches and a
/// kernel larger than the padded input; ValueError for non-positive stride, dilation or
/// groups and negative padding.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
/// conv2d with padding kValid (none) or kSame (output size = input size; asymmetric
/// when the dilated kernel extent is even, the extra row/column on the bottom/right).
/// ValueError for kSame with a stride other than 1.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, PaddingMode padding,
              IntArrayRef dilation = {1}, int64_t groups = 1);

/// 1-D convolution (torch.nn.functional.conv1d): input [N, C, L] or [C, L], weight
/// [OC, C/groups, K]. Computed by conv2d over a height of 1.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, PaddingMode padding,
              IntArrayRef dilation = {1}, int64_t groups = 1);

/// Transposed 2-D convolution (torch.nn.functional.conv_transpose2d). weight
/// [C, OC/groups, KH, KW]; output size (H-1)s - 2p + d(KH-1) + output_padding + 1.
/// ValueError unless output_padding < stride or < dilation. Dtypes: float32, float64,
/// bfloat16, int64 (as PyTorch CPU).
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                        int64_t groups = 1, IntArrayRef dilation = {1});

/// 2-D max pooling (torch.nn.functional.max_pool2d). stride defaults to kernel_size (pass
/// {}); padding must be at most half the kernel (ValueError); ceil_mode rounds the output
/// size up but never starts a window in the right padding. NaN propagates. Dtypes:
/// float32, float64, bfloat16. ShapeError when the output would be empty.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  IntArrayRef dilation = {1}, bool ceil_mode = false);
/// max_pool2d and the int64 indices of the maxima, flattened over each (H, W) plane
/// (torch.nn.functional.max_pool2d(..., return_indices=True)).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = {0},
                                                   IntArrayRef dilation = {1}, bool ceil_mode = false);

/// 2-D average pooling (torch.nn.functional.avg_pool2d). The divisor is divisor_override
/// when given (ValueError if 0), else the window clipped to the padded input
/// (count_include_pad) or to the input. Dtypes: float32, float64, bfloat16, int64.
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

/// Adaptive average pooling to output_size (torch.nn.functional.adaptive_avg_pool2d):
/// cell i averages input rows [floor(i*H/OH), ceil((i+1)*H/OH)). ShapeError when a
/// non-batch input dim is 0; ValueError for negative output sizes.
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
/// Adaptive max pooling; returns (output, int64 indices flattened over each plane).
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);

}  // namespace tandem
