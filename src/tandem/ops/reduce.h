#pragma once
// Reductions (sum, mean, max, var, norm, cumsum, ...), following PyTorch semantics.
//
// Common rules (all ops):
//  - `dim` lists may hold negative dims; an empty list means every dim (as PyTorch 1.13).
//    A dim out of range raises IndexError; a dim given twice raises ValueError (PyTorch:
//    RuntimeError "dim d appears multiple times in the list of dims").
//  - keepdim keeps reduced dims with size 1. A 0-d input may be reduced over dim 0 or -1
//    and gives a 0-d result.
//  - Reducing an empty set gives the op's identity (sum 0, prod 1, all true, any false,
//    logsumexp -inf, norm 0) or nan (mean, var, std). Ops without an identity (max, min,
//    amax, amin, argmax, argmin) raise IndexError ("expected reduction dim d to have
//    non-zero size"; PyTorch raises RuntimeError for a full reduction of an empty tensor).
//  - float16/bfloat16 accumulate in float32; float32 sums use a fixed pairwise tree (error
//    O(log n)); results do not depend on the thread count.
//  - Ops PyTorch 1.13's CPU backend lacks for float16/bfloat16 (prod, cumsum, cumprod,
//    cummax, cummin, logsumexp(float16)) are supported here and compute in float32, as
//    later PyTorch releases do.
#include <optional>
#include <string>
#include <tuple>

#include "tandem/core/tensor.h"

namespace tandem {

/// Sum of all elements (torch.sum). Output dtype: `dtype` if given (the input is converted
/// to it first), else int64 for bool/integer inputs, else the input's dtype. 0-d result.
Tensor sum(const Tensor& self, std::optional<DType> dtype = std::nullopt);
/// Sum over `dim` (see the common rules above). Empty set sums to 0.
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
/// Arithmetic mean (torch.mean): floating inputs only, or an integer input with a floating
/// `dtype`; TypeError otherwise (PyTorch: RuntimeError "could not infer output dtype").
/// Computed as sum (rounded to the output dtype) / count, like PyTorch's CPU kernel. The
/// mean of an empty set is nan.
Tensor mean(const Tensor& self, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
/// Product (torch.prod). Dtype rule as sum; integers wrap around like int64 arithmetic.
/// PyTorch's prod takes one dim; a list of dims is accepted here too.
Tensor prod(const Tensor& self, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);

/// Largest element (torch.max(input)); NaN if any element is NaN. IndexError for an empty input.
Tensor max(const Tensor& self);
/// (values, indices) of the largest element along `dim` (torch.max(input, dim)). Indices
/// are int64 and not differentiable; ties give the first index, a NaN wins (first NaN).
/// IndexError when dim has size 0.
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
/// Smallest element / (values, indices) along dim; as max.
Tensor min(const Tensor& self);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
/// Maximum over dims (torch.amax; empty list = all dims); same dtype; NaN propagates.
/// IndexError when a reduced dim has size 0.
Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
/// Index (int64) of the largest element along dim, or into the flattened input when dim is
/// nullopt (torch.argmax); first occurrence on ties, first NaN wins. TypeError for bool
/// (as PyTorch), IndexError for an empty reduction.
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

/// Variance (torch.var): sum((x-mean)^2) / max(0, N - correction), correction 1 (Bessel)
/// unless `unbiased` is false (0) or given explicitly. Floating inputs only (TypeError
/// otherwise). Accumulates in float64 (Welford). N - correction <= 0 gives inf (nan when
/// all deviations are 0). There is deliberately no var(bool) overload: with one,
/// x.var(1) and x.var({1}) would silently mean "unbiased" (a libtorch pitfall); use
/// var(x, std::nullopt, 0.0) for the biased variance of all elements.
Tensor var(const Tensor& self);
Tensor var(const Tensor& self, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
/// With an explicit correction (PyTorch's `correction=` keyword); dim nullopt = all dims.
Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim = false);
/// Standard deviation: sqrt of var, same arguments.
Tensor std(const Tensor& self);
Tensor std(const Tensor& self, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim = false);
/// (var, mean) and (std, mean) in one pass (torch.var_mean / torch.std_mean).
std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim = std::nullopt,
                                    double correction = 1, bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim = std::nullopt,
                                    double correction = 1, bool keepdim = false);

/// log(sum(exp(x))) over dim, computed stably (torch.logsumexp). Integer/bool inputs give
/// the default float dtype. Empty set gives -inf; +inf anywhere gives +inf; NaN gives NaN.
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);

/// Vector p-norm over dims (torch.norm / torch.linalg.vector_norm): p = 2 (default), 1,
/// inf (max |x|), -inf (min |x|), 0 (count of non-zeros), or any other real p
/// (sum |x|^p)^(1/p). Floating inputs only (TypeError); `dtype` converts the input first.
/// An empty reduction gives 0 for every p.
Tensor norm(const Tensor& self, const Scalar& p = 2);
Tensor norm(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
/// String p: "fro" is the 2-norm over dim (any number of dims); "nuc" raises
/// NotImplementedError (linalg); anything else ValueError.
Tensor norm(const Tensor& self, const char* p, IntArrayRef dim = {}, bool keepdim = false);

/// True when every element is non-zero (torch.all). Output bool, or uint8 for a uint8
/// input (as PyTorch). NaN counts as non-zero. Empty set: true.
Tensor all(const Tensor& self);
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim = false);
/// True when some element is non-zero (torch.any). Empty set: false.
Tensor any(const Tensor& self);
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim = false);
/// Number of non-zero elements over dim (torch.count_nonzero), int64, no keepdim.
Tensor count_nonzero(const Tensor& self, IntArrayRef dim = {});

/// Cumulative sum along dim (torch.cumsum); same shape. Dtype rule as sum. Accumulates in
/// float64 for float32 (PyTorch's CPU acc_type), float32 for float16/bfloat16.
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// Cumulative product along dim (torch.cumprod); dtype rule as prod.
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// (values, indices) of the running maximum along dim (torch.cummax). On ties the later
/// index is reported and a NaN sticks (each new NaN updates the index), as PyTorch.
std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim);
/// Running minimum (torch.cummin), as cummax.
std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim);
/// log(cumsum(exp(self))) along dim, computed stably (torch.logcumsumexp): a running
/// max + log1p(exp(min - max)), accumulated in float64 for float32 (float for bfloat16).
/// -inf elements add nothing, +inf gives +inf from there on, NaN propagates. float32,
/// float64 and bfloat16 only (TypeError otherwise, as PyTorch's CPU kernel); IndexError
/// for a bad dim. Differentiable (the gradient is computed in log space).
Tensor logcumsumexp(const Tensor& self, int64_t dim);

/// The lower median of all elements (torch.median): the element of rank (n - 1) / 2, or
/// NaN when any element is NaN; a 0-d tensor of self's dtype. An empty floating tensor
/// gives NaN; an empty integer tensor raises IndexError (PyTorch returns garbage). TypeError
/// for bool and float16 (PyTorch has no CPU kernel). The gradient is shared evenly among
/// the elements equal to the result (as PyTorch's).
Tensor median(const Tensor& self);
/// (values, int64 indices) of the lower median along dim (torch.median(dim, keepdim)).
/// A line with NaN gives NaN and the position of its first NaN (as PyTorch). Among equal
/// values the index is the one of rank (n - 1) / 2 in (value, position) order; PyTorch's
/// choice there is unspecified. IndexError for an empty reduction dim; TypeError for bool
/// and float16. The gradient goes to the returned index.
std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim = false);
/// (values, int64 indices) of the most frequent value along dim (torch.mode). Among values
/// equally frequent the smallest wins; the index is the highest position holding that
/// value (what PyTorch's CPU kernel returns for lines of up to 16 elements; for longer
/// lines PyTorch's choice depends on its sort). NaN never equals NaN, so NaNs only win when
/// every element is NaN (PyTorch's result with NaN depends on its sort). All dtypes,
/// bool included. IndexError for an empty reduction dim. The gradient goes to the index.
std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim = -1, bool keepdim = false);

}  // namespace tandem
