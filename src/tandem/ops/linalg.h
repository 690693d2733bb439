#pragma once
// Linear algebra (matmul, mm, bmm, addmm, baddbmm, dot, mv, outer, linear, einsum).
// float32 products run on oneDNN's matmul; float64 and integer products on tandem's own
// blocked loop; bfloat16 is computed in float32 and rounded. Like PyTorch, the matrix
// ops do not promote: operands must share one dtype (TypeError otherwise), and bool and
// float16 are rejected (TypeError). Only outer() promotes (it is an elementwise product).
#include <string>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem {

/// Matrix product of two 2-D tensors: [n, m] @ [m, p] -> [n, p] (torch.mm).
/// ShapeError when an operand is not 2-D ("self must be a matrix") or the inner sizes
/// differ ("[mm] mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"). TypeError for
/// different or unsupported dtypes.
Tensor mm(const Tensor& self, const Tensor& mat2);

/// Batched matrix product of 3-D tensors: [b, n, m] @ [b, m, p] -> [b, n, p] (torch.bmm).
/// No broadcasting: ShapeError unless both are 3-D with equal batch and inner sizes.
Tensor bmm(const Tensor& self, const Tensor& mat2);

/// beta * self + alpha * (mat1 @ mat2) (torch.addmm). self broadcasts to [n, p]
/// (ShapeError otherwise). With beta == 0, self is ignored (its NaNs do not propagate).
/// Integer dtypes truncate floating alpha/beta, as PyTorch does.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);

/// beta * self + alpha * bmm(batch1, batch2) (torch.baddbmm). self broadcasts to [b, n, p].
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1,
               const Scalar& alpha = 1);

/// Inner product of two 1-D tensors of equal length -> 0-d tensor (torch.dot).
/// ShapeError for non-1-D inputs or different lengths; TypeError for different dtypes.
Tensor dot(const Tensor& self, const Tensor& other);

/// Matrix-vector product: [n, m] @ [m] -> [n] (torch.mv). ShapeError for other ranks.
Tensor mv(const Tensor& self, const Tensor& vec);

/// torch.matmul: dot for 1-D x 1-D; mm for 2-D x 2-D; a 1-D operand is promoted to a
/// matrix (prepend / append a 1) and the added dim removed from the result; N-D operands
/// are batched with broadcasting of the batch dims ([j,1,n,m] @ [k,m,p] -> [j,k,n,p]).
/// ShapeError for 0-d operands, mismatched inner sizes or non-broadcastable batch dims.
Tensor matmul(const Tensor& self, const Tensor& other);

/// Outer product of two 1-D tensors: [n] x [m] -> [n, m] (torch.outer). Promotes dtypes
/// like mul. ShapeError for non-1-D inputs.
Tensor outer(const Tensor& self, const Tensor& vec2);

/// input @ weight^T + bias (torch.nn.functional.linear). input [*, in], weight [out, in]
/// (or [in] for a vector weight), bias [out] or undefined. Same dtype for all.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());

/// Einstein summation (torch.einsum): "ij,jk->ik", "bij,bjk->bik", "i,i->", "ij->ji",
/// "ii->i", "...ij,...jk->...ik", implicit output ("ij,jk" sorts the labels that occur
/// once), any number of operands (contracted left to right). Labels are [a-zA-Z]; spaces
/// are ignored; a size-1 dim broadcasts against the same label's size elsewhere.
/// Built from permute/diagonal/reshape + bmm/mul, so it is differentiable wherever those
/// are. ValueError for malformed equations or operand counts; ShapeError for size
/// mismatches; TypeError when operands have different dtypes.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace tandem
