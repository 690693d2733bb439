#pragma once
// nn::functional: the stateless forms of the layers, as torch.nn.functional (PyTorch's C++
// frontend: torch::nn::functional, usually aliased `namespace F = torch::nn::functional;`).
//
//   namespace F = tandem::nn::functional;
//   Tensor y = F::relu(F::conv2d(x, w, b, /*stride=*/{1}, /*padding=*/{1}));
//   Tensor loss = F::cross_entropy(F::linear(y.flatten(1), w2, b2), target);
//
// Nearly every name is a using-declaration of the op in src/tandem/ops/*.h (all overloads,
// the same defaults, the same errors and autograd; see each op's documentation there): this
// namespace only collects them under the names users expect. Arguments are positional in
// torch.nn.functional's order (no options structs). The exceptions:
//  - embedding(input, weight, ...) takes the indices first, as F.embedding does; the op
//    tandem::embedding(weight, indices, ...) takes them second (at::embedding's order).
//  - bilinear, normalize and embedding_renorm_ have no op of their own; they are composites of ops defined in
//    functional.cpp (so they are differentiable through those ops).
#include <optional>

#include "tandem/core/tensor.h"
#include "tandem/ops/conv.h"
#include "tandem/ops/linalg.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/unary.h"

namespace tandem::nn::functional {

// ---------------------------------------------------------------- linear layers
using tandem::linear;  // (input [*, in], weight [out, in], bias [out]) -> [*, out]

/// Bilinear form y = x1^T A x2 + b (torch.nn.functional.bilinear). input1 [*, in1],
/// input2 [*, in2] with the same leading dims, weight [out, in1, in2], bias [out] or
/// undefined -> [*, out]. ShapeError when the trailing sizes do not match weight or the
/// leading dims differ; TypeError for mixed dtypes (from the ops it is built of).
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {});

// ---------------------------------------------------------------- convolution and pooling
using tandem::adaptive_avg_pool2d;
using tandem::adaptive_max_pool2d;
using tandem::avg_pool2d;
using tandem::conv1d;  // padding as ints or kSame / kValid
using tandem::conv2d;
using tandem::conv_transpose2d;
using tandem::kSame;
using tandem::kValid;
using tandem::max_pool2d;
using tandem::max_pool2d_with_indices;
using tandem::PaddingMode;

// ---------------------------------------------------------------- normalisation
using tandem::batch_norm;  // (input, running_mean, running_var, weight, bias, training, momentum, eps)
using tandem::group_norm;
using tandem::instance_norm;
using tandem::layer_norm;

/// input / max(||input||_p over dim, eps) (torch.nn.functional.normalize): each slice along
/// `dim` scaled to unit p-norm. Floating input; IndexError for a bad dim (from the norm op).
Tensor normalize(const Tensor& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

// ---------------------------------------------------------------- dropout, embedding
using tandem::dropout;  // (input, p = 0.5, training = true)

/// Rows of weight [V, D] picked by int indices `input` -> input.shape + [D]
/// (torch.nn.functional.embedding(input, weight, padding_idx, ..., scale_grad_by_freq)).
/// Forwards to tandem::embedding(weight, input, ...), which documents the errors.
inline Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                        bool scale_grad_by_freq = false) {
  return tandem::embedding(weight, input, padding_idx, scale_grad_by_freq);
}
/// Rescales, in place and without recording gradients, the rows of weight [V, D] that
/// `indices` (int32/int64, any shape) pick and whose p-norm (p = norm_type) exceeds
/// max_norm, to norm max_norm: row *= max_norm / (norm + 1e-7) (torch.embedding_renorm_,
/// which F.embedding / nn.Embedding with max_norm call before the lookup). Repeated indices
/// are renormalised once. Returns weight. ShapeError unless weight is 2-D; TypeError for
/// non-integer indices; IndexError for an index outside [0, V) (from index_select, before
/// anything is written).
Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type = 2.0);
using tandem::one_hot;

// ---------------------------------------------------------------- activations
using tandem::elu;
using tandem::gelu;  // approximate "none" | "tanh"
using tandem::hardsigmoid;
using tandem::hardswish;
using tandem::leaky_relu;
using tandem::log_softmax;
using tandem::mish;
using tandem::relu;
using tandem::relu6;
using tandem::selu;
using tandem::sigmoid;
using tandem::silu;
using tandem::softmax;
using tandem::softplus;
using tandem::tanh;

// ---------------------------------------------------------------- losses
using tandem::binary_cross_entropy;
using tandem::binary_cross_entropy_with_logits;
using tandem::cross_entropy;
using tandem::huber_loss;
using tandem::kl_div;
using tandem::l1_loss;
using tandem::mse_loss;
using tandem::nll_loss;
using tandem::smooth_l1_loss;

// ---------------------------------------------------------------- resampling
using tandem::interpolate;
using tandem::pad;

}  // namespace tandem::nn::functional
