#pragma once
// CPU kernels of the neural-network ops (ops/nn_*.cpp): softmax, normalisation, losses,
// embedding, dropout, padding and upsampling. Kernels trust their inputs (the ops validate
// shapes and dtypes in meta); the only checks here are data-dependent ones (class indices,
// probabilities in range), which raise before anything observable is written.
// Nothing here dispatches: temporaries are made with empty_tensor + copy_kernel so graph
// capture and autograd never see them.
#include <cstdint>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::kernels {

// ---------------------------------------------------------------- helpers
/// `t` if it is contiguous with dtype `dtype`, else a contiguous copy converted to `dtype`.
Tensor contiguous_as(const Tensor& t, DType dtype);
/// A contiguous float64 copy of `t` broadcast to `shape` (t may be undefined: then
/// a tensor of `fill_if_undefined`).
Tensor broadcast_double(const Tensor& t, IntArrayRef shape, double fill_if_undefined = 1.0);
/// The values of a 1-D (or any) tensor as doubles, row-major.
std::vector<double> to_double_vector(const Tensor& t);
/// Writes `v` (row-major) into `dst` (any dtype and strides), converting.
void write_doubles(const Tensor& dst, const std::vector<double>& v);

/// Loss reduction codes (PyTorch's at::Reduction, plus kl_div's batchmean).
enum class Reduction : int { None = 0, Mean = 1, Sum = 2, BatchMean = 3 };

// ---------------------------------------------------------------- softmax
/// out = softmax(in) (log_softmax when `log`) along `dim`; in is contiguous with out's
/// (floating) dtype; out is contiguous. Numerically stable (subtracts the max).
void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, bool log);
/// grad_in = y * (g - sum(g * y)) (softmax) or g - exp(y) * sum(g) (log_softmax) along
/// dim; all three contiguous with one floating dtype.
void softmax_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, const Tensor& output, int64_t dim,
                             bool log);

// ---------------------------------------------------------------- normalisation
/// Batch norm over x viewed as [N, C, S] (contiguous, floating). Training: per-channel
/// batch mean and biased variance normalise x; running stats (when defined) become
/// (1 - momentum) * running + momentum * batch (unbiased variance), in place. Eval: the
/// running stats normalise x. save_mean / save_invstd ([C]) get the mean and
/// 1 / sqrt(var + eps) that were used. weight / bias ([C], x's dtype) may be undefined.
void batch_norm_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps);
/// Gradients of batch_norm_kernel's output (undefined outputs are skipped). In eval mode
/// the statistics are constants.
void batch_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                const Tensor& save_mean, const Tensor& save_invstd, bool training);
/// Layer norm of x viewed as [M, N] (contiguous) over each row; weight/bias are [N] or
/// undefined; mean/rstd get M values.
void layer_norm_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps);
void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                const Tensor& weight, int64_t M, int64_t N);
/// Group norm of x viewed as [N, C, S] with G groups of C / G channels; weight/bias [C]
/// or undefined; mean/rstd get N * G values.
void group_norm_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t N, int64_t C, int64_t S, int64_t G,
                       double eps);
void group_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                const Tensor& weight, int64_t N, int64_t C, int64_t S, int64_t G);

// ---------------------------------------------------------------- losses
/// NLL loss of x viewed as [N, C, S] (contiguous) with target [N, S] (int64 or uint8),
/// optional weight [C]. out: [N * S] values (None) or one value; total_weight: the sum of
/// the weights of non-ignored targets. IndexError for a target outside [0, C) that is not
/// ignore_index.
void nll_loss_kernel(const Tensor& out, const Tensor& total_weight, const Tensor& x, const Tensor& target,
                     const Tensor& weight, Reduction reduction, int64_t ignore_index, int64_t N, int64_t C,
                     int64_t S);
/// grad_input ([N, C, S], zeroed here) of nll_loss_kernel for grad_out (N*S values or one).
void nll_loss_backward_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                              const Tensor& weight, const Tensor& total_weight, Reduction reduction,
                              int64_t ignore_index, int64_t N, int64_t C, int64_t S);

/// Elementwise losses sharing one implementation.
enum class LossKind : int { MSE, L1, SmoothL1, Huber, BCE, BCEWithLogits, KLDiv, KLDivLogTarget };
/// out = reduction of loss(x, t; w, pw, param) over the broadcast shape of x, t (and w,
/// pw when defined). `batch` divides the sum for BatchMean. BCE raises ValueError for an
/// input outside [0, 1].
void pointwise_loss_kernel(LossKind kind, const Tensor& out, const Tensor& x, const Tensor& t, const Tensor& w,
                           const Tensor& pw, double param, Reduction reduction, int64_t batch);
/// grad_x / grad_t (either may be undefined; shape = the broadcast shape) =
/// g * dloss/dx (dt) * scale, where g broadcasts to that shape.
void pointwise_loss_backward_kernel(LossKind kind, const Tensor& grad_x, const Tensor& grad_t, const Tensor& g,
                                    const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& pw,
                                    double param, double scale);

// ---------------------------------------------------------------- embedding, dropout, one_hot
/// out[i, :] = weight[indices[i], :] for weight [V, D] (contiguous) and indices (int32
/// or int64, contiguous, n values); IndexError for an index outside [0, V).
void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices);
/// grad_weight [V, D] = sum of grad rows per index (rows of padding_idx stay zero; each
/// row divided by its index's count when scale_grad_by_freq).
void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices,
                               int64_t padding_idx, bool scale_grad_by_freq);
/// Draws the keep mask (probability 1 - p) from the default generator and writes
/// out = x * mask / (1 - p) (zeros when p == 1). x, out contiguous floating; mask bool.
void dropout_kernel(const Tensor& out, const Tensor& mask, const Tensor& x, double p);
/// out ([n, C] int64) = one-hot rows of indices (int64, contiguous); ValueError for a
/// negative class or one >= C.
void one_hot_kernel(const Tensor& out, const Tensor& indices, int64_t num_classes);

// ---------------------------------------------------------------- padding, upsampling
/// For every output index o: out[o] = in[maps[0][o_0], ..., maps[d][o_d]] (one map per
/// dim of in, of out's size); an entry -1 in any map writes `fill` (a 0-d tensor of out's
/// dtype, required when a map has -1). Any dtype; in may be strided.
void gather_by_dim_maps(const Tensor& out, const Tensor& in, const std::vector<std::vector<int64_t>>& maps,
                        const Tensor& fill);
/// The adjoint: grad_in = 0, then grad_in[maps(o)] += grad_out[o] (entries -1 skipped).
/// Floating dtypes; accumulates in double.
void scatter_add_by_dim_maps(const Tensor& grad_in, const Tensor& grad_out,
                             const std::vector<std::vector<int64_t>>& maps);
/// Bilinear upsampling of in [N, C, H, W] to out [N, C, OH, OW]; scales <= 0 mean "none".
void upsample_bilinear2d_kernel(const Tensor& out, const Tensor& in, bool align_corners, double scale_h,
                                double scale_w);
/// Its adjoint: grad_in [N, C, H, W] from grad_out [N, C, OH, OW].
void upsample_bilinear2d_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, bool align_corners,
                                         double scale_h, double scale_w);
/// Source index map of nearest upsampling (PyTorch's float arithmetic): out size -> in size.
std::vector<int64_t> nearest_index_map(int64_t in_size, int64_t out_size, double scale);

}  // namespace tandem::kernels
