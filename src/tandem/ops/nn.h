#pragma once
// Neural-network ops (normalisation, softmax, losses, embedding, dropout, pad, interpolate),
// named after torch.nn.functional (PyTorch 1.13 semantics). Every function here goes
// through the dispatcher, so it is differentiable (see each op's backward rule in
// ops/nn_*.cpp) and can be captured by compile().
//
// Common conventions:
// - `reduction` is "none", "mean" or "sum" (ValueError otherwise).
// - Floating-point only where PyTorch is (TypeError for integer inputs); float16 and
//   bfloat16 compute in float32 (statistics and loss sums in float64) and round once.
// - Optional tensors (weight, bias, running stats) are passed as undefined Tensors: `{}`.
// - Shape errors raise ShapeError, bad values ValueError, bad index data IndexError.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem {

// ---------------------------------------------------------------- softmax family
/// softmax along `dim` (negative counts from the end; 0-d tensors accept 0 / -1):
/// exp(x - max) / sum(exp(x - max)), so large inputs do not overflow. With `dtype` the
/// input is first converted to it (torch.softmax(x, dim, dtype=...)). TypeError for
/// integer inputs without a floating `dtype`; IndexError for a bad dim.
Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// log(softmax(x)) computed stably as x - max - log(sum(exp(x - max))) (torch.log_softmax).
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// Backward of softmax: output * (grad_output - sum(grad_output * output, dim)), returned
/// in `input_dtype` (aten::_softmax_backward_data). Both tensors have one shape.
Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype);
/// Backward of log_softmax: grad_output - exp(output) * sum(grad_output, dim).
Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                  DType input_dtype);

// ---------------------------------------------------------------- normalisation
/// Batch normalisation of input [N, C, *] per channel (F.batch_norm).
/// training: normalises with the batch mean and biased variance and, when running_mean /
/// running_var are defined, updates them IN PLACE: running = (1 - momentum) * running +
/// momentum * batch_stat (the variance update uses the unbiased variance); these buffers
/// are not differentiable and their version counters are bumped. eval: normalises with the
/// running stats (ValueError if they are undefined). weight / bias ([C]) may be undefined.
/// ValueError when training with a single value per channel; ShapeError for inputs with
/// fewer than 2 dims or parameters that are not [C].
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false, double momentum = 0.1,
                  double eps = 1e-5);
/// aten::native_batch_norm: (output, save_mean [C], save_invstd [C]). save_mean /
/// save_invstd hold the statistics used (batch stats in training, running stats in eval;
/// PyTorch returns empty tensors in eval) in float32 for reduced-float inputs.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                                     const Tensor& running_mean, const Tensor& running_var,
                                                     bool training, double momentum, double eps);
/// Gradients (input, weight, bias) of native_batch_norm given its saved statistics. Not
/// differentiable itself (NotImplementedError when its result is differentiated); batch,
/// layer and group norm still have double backward: under create_graph their rules use a
/// form written with ops instead of the *_backward ops.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              const Tensor& weight, const Tensor& save_mean,
                                                              const Tensor& save_invstd, bool training);
/// Layer normalisation over the last len(normalized_shape) dims (F.layer_norm): biased
/// variance, then the elementwise affine weight / bias (shape normalized_shape, optional).
/// ShapeError when the trailing dims of input differ from normalized_shape.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
/// aten::native_layer_norm: (output, mean, rstd), mean / rstd shaped input.sizes()[:axis]
/// followed by ones.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps);
/// Group normalisation of input [N, C, *] with C / num_groups channels per group
/// (F.group_norm); weight / bias [C] optional. ValueError when C % num_groups != 0.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
/// aten::native_group_norm: (output, mean [N, G], rstd [N, G]).
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                                     int64_t num_groups, double eps);
/// Instance normalisation of input [N, C, *]: each (sample, channel) normalised over its
/// spatial values (F.instance_norm). With use_input_stats the running stats (optional, [C])
/// are updated in place with the mean over the batch of the per-instance updates; without
/// it they normalise the input. ValueError when training with one spatial element.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

// ---------------------------------------------------------------- dropout
/// Dropout (F.dropout): in training each element is zeroed with probability p and the
/// rest are scaled by 1 / (1 - p) (all zero for p == 1); in eval returns input itself.
/// The mask is drawn from the default generator (tandem::manual_seed makes it
/// reproducible). ValueError unless 0 <= p <= 1; TypeError for non-floating input.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);
/// aten::native_dropout: (output, mask) with mask a bool tensor of kept elements (not
/// differentiable); the backward multiplies by the same mask.
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, bool train);

// ---------------------------------------------------------------- losses
/// Negative log-likelihood loss (F.nll_loss) of log-probabilities input [N, C, d1...] or
/// [C] with class indices target [N, d1...] or [] (int64 or uint8). Elements whose target
/// is ignore_index contribute nothing. "mean" divides by the sum of the weights (weight
/// [C], optional) of the non-ignored targets (NaN when all are ignored).
/// IndexError for a target outside [0, C); ShapeError for mismatched shapes.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {}, int64_t ignore_index = -100,
                const std::string& reduction = "mean");
/// Cross entropy (F.cross_entropy) of unnormalised logits input [N, C, d1...] or [C].
/// target: class indices (as nll_loss) or class probabilities (floating, input's shape;
/// ignore_index unused, "mean" divides by the number of samples). label_smoothing in
/// [0, 1] mixes the target with the uniform distribution; with indices, the smoothing
/// term of ignored targets is dropped and "mean" divides by the same total weight as the
/// nll term. ValueError for label_smoothing outside [0, 1].
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     int64_t ignore_index = -100, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);
/// Mean squared error (F.mse_loss); input and target broadcast.
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
/// Mean absolute error (F.l1_loss).
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
/// Smooth L1 (F.smooth_l1_loss): 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta
/// (beta == 0 is l1_loss). ValueError for beta < 0.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                      double beta = 1.0);
/// Huber loss (F.huber_loss): 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta).
/// ValueError for delta <= 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
/// Binary cross entropy of probabilities input (F.binary_cross_entropy): -w (t log x +
/// (1 - t) log(1 - x)) with logs clamped to >= -100. target has input's shape (ShapeError
/// otherwise); weight broadcasts. ValueError when an input is outside [0, 1].
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean");
/// Binary cross entropy of logits (F.binary_cross_entropy_with_logits), computed stably;
/// pos_weight (broadcast along the last dim) weighs the positive term.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const std::string& reduction = "mean", const Tensor& pos_weight = {});
/// Kullback-Leibler divergence (F.kl_div) of log-probabilities input against target
/// (probabilities, or log-probabilities when log_target): target * (log target - input).
/// reduction may also be "batchmean" (sum / input.size(0)).
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);

// ---------------------------------------------------------------- embedding, one_hot
/// Rows of weight [V, D] picked by indices (int32/int64, any shape): output
/// indices.shape + [D] (torch.embedding / at::embedding argument order: weight first).
/// The gradient of row padding_idx (negative counts from the end, like F.embedding) stays
/// zero; with scale_grad_by_freq each row's gradient is divided by its index's count in the
/// batch. IndexError for an index outside [0, V); ValueError for padding_idx outside
/// [-V, V); ShapeError unless weight is 2-D; TypeError for non-integer indices.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt,
                 bool scale_grad_by_freq = false);
/// Gradient of embedding for its weight (aten::embedding_dense_backward).
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                std::optional<int64_t> padding_idx, bool scale_grad_by_freq);
/// One-hot encoding (F.one_hot) of int64 indices: output indices.shape + [num_classes]
/// (int64). num_classes = -1 uses max(indices) + 1 (a data-dependent shape: a graph break
/// under compile). ValueError for negative classes, classes >= num_classes, or inference
/// from an empty tensor; TypeError for non-int64 indices.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

// ---------------------------------------------------------------- pad, interpolate
/// Pads (F.pad) the last len(pad) / 2 dims: pad = {left_last, right_last, left_prev, ...}.
/// mode "constant" (fill `value`, default 0; negative pads crop, any rank), "reflect"
/// (mirror without repeating the edge; pad < size), "replicate" (repeat the edge) or
/// "circular" (wrap around; pad <= size; input [N, C, spatial...]). Non-constant modes pad
/// 1-3 trailing dims of a tensor with 1 or 2 more dims (circular: exactly 2 more) and take
/// no value. ValueError for odd / too long pads or bad values; NotImplementedError for an
/// unknown mode or unsupported rank; ShapeError for a negative output size.
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode = "constant",
           std::optional<double> value = std::nullopt);
/// Resizes the spatial dims of input [N, C, spatial...] (F.interpolate): to `size` or by
/// `scale_factor` (exactly one; a single value applies to every spatial dim; output =
/// floor(in * scale)). mode "nearest" (3-5-D input; source = floor(dst * in / out), or
/// dst / scale_factor) or "bilinear" (4-D input; align_corners default false: pixel
/// centres, clamped at 0; true: corners map to corners). ValueError for bad argument
/// combinations; NotImplementedError for other modes or ranks.
Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor = std::nullopt,
                   const std::string& mode = "nearest", std::optional<bool> align_corners = std::nullopt);

}  // namespace tandem
