#pragma once
// Helpers shared by the nn op files (ops/nn_*.cpp). Only those files include this.
#include <string>

#include "tandem/kernels/cpu/nn.h"
#include "tandem/ops/op_utils.h"

namespace tandem::ops {

/// Parses a loss reduction ("none", "mean", "sum"; "batchmean" when allowed); ValueError
/// naming `op` otherwise.
kernels::Reduction parse_reduction(const char* op, const std::string& r, bool allow_batchmean = false);
/// Sum over `dim` keeping it as size 1 (written with sum_to_size, so differentiable).
Tensor sum_keepdim(const Tensor& t, int64_t dim);
/// Sum of every element as a 0-d tensor (differentiable).
Tensor sum_all(const Tensor& t);
/// Dtype of saved statistics: float32 for float16/bfloat16, else the input's dtype.
inline DType stat_dtype(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }
/// Rejects non-floating dtypes (TypeError "[op] got dtype X, expected a floating dtype").
void require_floating_input(const char* op, DType t, const char* what = "input");
/// Checks that `m` is undefined or a 1-D tensor of `n` elements (ShapeError).
void check_vector(const char* op, const MetaRef& m, int64_t n, const char* what);

}  // namespace tandem::ops
