#include "tandem/nn/functional.h"

#include "tandem/autograd/engine.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/index.h"
#include "tandem/ops/linalg.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/shape.h"

namespace tandem::nn::functional {

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  TANDEM_CHECK(weight.defined() && weight.dim() == 3, ShapeError, "bilinear", "got weight of shape ",
               weight.defined() ? str_cat(weight.sizes()) : std::string("undefined"), ", expected [out, in1, in2]");
  TANDEM_CHECK(input1.dim() >= 1 && input2.dim() >= 1 && input1.size(-1) == weight.size(1) &&
                   input2.size(-1) == weight.size(2),
               ShapeError, "bilinear", "got inputs of shapes ", input1.sizes(), " and ", input2.sizes(),
               ", expected last dims ", weight.size(1), " and ", weight.size(2));
  TANDEM_CHECK(IntArrayRef(input1.sizes().data(), static_cast<size_t>(input1.dim() - 1))
                   .equals(IntArrayRef(input2.sizes().data(), static_cast<size_t>(input2.dim() - 1))),
               ShapeError, "bilinear", "got inputs of shapes ", input1.sizes(), " and ", input2.sizes(),
               ", expected the same leading dims");
  TANDEM_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), ShapeError, "bilinear",
               "got bias of shape ", bias.defined() ? str_cat(bias.sizes()) : std::string(), ", expected [", weight.size(0), "]");
  // y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]: (x1 W)[o, b, j], times x2, summed over j.
  Tensor a = input1.reshape({-1, weight.size(1)});
  Tensor c = input2.reshape({-1, weight.size(2)});
  Tensor t = matmul(a.unsqueeze(0), weight);       // [out, B, in2]
  Tensor y = sum(t * c.unsqueeze(0), {2}).t();      // [B, out]
  if (bias.defined()) y = y + bias;
  DimVector out_shape = input1.sizes().vec();
  out_shape.back() = weight.size(0);
  return y.reshape(out_shape);
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
  Tensor denom = clamp_min(norm(input, p, {dim}, /*keepdim=*/true), eps);
  return input / denom.expand_as(input);
}

Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type) {
  TANDEM_CHECK(weight.defined() && weight.dim() == 2, ShapeError, "embedding_renorm_", "got weight of shape ",
               weight.defined() ? str_cat(weight.sizes()) : std::string("undefined"), ", expected [V, D]");
  TANDEM_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32, TypeError, "embedding_renorm_", "got indices of dtype ",
               dtype_name(indices.dtype()), ", expected int64 or int32");
  NoGradGuard ng;
  // Gather the picked rows, scale those over the bound, write them back. A repeated index
  // writes the same row (computed from the original) more than once: renormalised once.
  // Rows within the bound are multiplied by exactly 1 (unchanged).
  Tensor idx = indices.reshape({-1}).to(kInt64);
  Tensor rows = index_select(weight, 0, idx);
  Tensor norms = norm(rows, norm_type, {1}, /*keepdim=*/true);
  Tensor scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0);
  weight.index_copy_(0, idx, rows * scale);
  return weight;
}

}  // namespace tandem::nn::functional
