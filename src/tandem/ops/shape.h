#pragma once
// Shape and view ops (PyTorch semantics): views share storage and return new
// sizes/strides/offset without copying; reshape/flatten copy only when no view exists.
#include <optional>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem {

/// View of `self` with `sizes` (one -1 is inferred). ShapeError when the element count
/// differs ("[view] shape [3, 5] is invalid for input of size 16") or when strides do
/// not allow a view (use reshape). Follows torch.Tensor.view.
Tensor view(const Tensor& self, IntArrayRef sizes);
/// view() when the strides allow it, otherwise a contiguous copy (torch.reshape).
Tensor reshape(const Tensor& self, IntArrayRef sizes);
/// Reorders dims: result.size(i) == self.size(dims[i]). ValueError unless dims is a permutation.
Tensor permute(const Tensor& self, IntArrayRef dims);
/// Swaps two dims.
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
/// Transpose of a <= 2-D tensor (ValueError for more dims), like torch.t.
Tensor t(const Tensor& self);
/// Elements start, start+step, ... < end along dim; start/end are clamped like Python
/// slicing; step must be positive (ValueError otherwise).
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
/// `length` elements from `start` along dim (IndexError when out of range).
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
/// Removes dim by taking `index` (negative counts from the end; IndexError out of range).
Tensor select(const Tensor& self, int64_t dim, int64_t index);
/// Removes all size-1 dims.
Tensor squeeze(const Tensor& self);
/// Removes dim if its size is 1 (otherwise returns a view with the same shape).
Tensor squeeze(const Tensor& self, int64_t dim);
/// Inserts a size-1 dim at position dim (in [-ndim-1, ndim]).
Tensor unsqueeze(const Tensor& self, int64_t dim);
/// Broadcasts size-1 dims (stride 0) and prepends new dims; -1 keeps a size.
Tensor expand(const Tensor& self, IntArrayRef sizes);
Tensor broadcast_to(const Tensor& self, IntArrayRef sizes);
/// Merges dims start_dim..end_dim into one (reshape semantics; 0-d becomes [1]).
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
/// Splits dim into `sizes` (one -1 inferred); a view.
Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes);
/// Pieces of `split_size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
/// Pieces of the given sizes along dim (must sum to the dim's size).
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
/// `chunks` pieces of ceil(size/chunks) (fewer when the dim is small).
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
/// All slices along dim, with dim removed.
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
/// The diagonal of dims dim1, dim2 with the given offset, as the last dim (torch.diagonal).
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/// Tensor.unfold (not nn.functional.unfold): a view whose new last dim holds windows of
/// `size` consecutive elements of `dimension`, taken every `step` elements; that dim
/// becomes (self.size(dimension) - size) / step + 1 windows long. Windows may overlap
/// (step < size); gradients add up over them. A 0-d self gives a 1-D view of `size`
/// (0 or 1) elements. ValueError for size < 0, size > self.size(dimension) or step <= 0;
/// IndexError for a bad dimension.
Tensor unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step);
/// A view with explicit geometry; ValueError if it would reach outside the storage.
Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                  std::optional<int64_t> storage_offset = std::nullopt);
/// A copy of self with the elements of self.slice(dim, start, end, step) replaced by src
/// (torch.slice_scatter): src must have that slice's shape (ShapeError; no broadcasting)
/// and is converted to self's dtype; slice's errors (IndexError for a 0-d self, ValueError
/// for step <= 0). The result is contiguous. Differentiable in self (the slice gets zero
/// gradient) and src (the slice of the gradient).
Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                     std::optional<int64_t> end = std::nullopt, int64_t step = 1);
/// A copy of self with self.select(dim, index) replaced by src (torch.select_scatter); src
/// has self's shape without dim. Errors and gradients as slice_scatter (IndexError for an
/// index out of range).
Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index);
/// A copy of self with self.diagonal(offset, dim1, dim2) replaced by src
/// (torch.diagonal_scatter); src has the diagonal's shape. ValueError for dim1 == dim2.
Tensor diagonal_scatter(const Tensor& self, const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/// A copy of self with out.as_strided(sizes, strides, storage_offset) replaced by src
/// (torch.as_strided_scatter), where the geometry addresses the output's own storage
/// (offset 0 when storage_offset is not given): the output keeps self's layout when self
/// is dense without overlap (a transposed self gives a transposed result, as PyTorch's
/// clone does), else it is contiguous. ValueError when the geometry reaches outside
/// self's numel elements, or when it addresses an element twice (PyTorch lets such a
/// write through in an unspecified order); ShapeError when src's shape is not sizes.
Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset = std::nullopt);
/// Moves dim `source` to position `destination`.
Tensor movedim(const Tensor& self, int64_t source, int64_t destination);

/// Sums `self` down to `sizes`, which must broadcast to self's shape (the reverse of
/// expand; Tensor.sum_to_size). ShapeError otherwise.
Tensor sum_to_size(const Tensor& self, IntArrayRef sizes);

/// Geometry of a tensor on its storage, in elements.
struct Geometry {
  DimVector sizes, strides;
  int64_t offset = 0;
};
/// Gradient of a base tensor given the gradient of a view of it (both geometries on the
/// same storage of `storage_elems` elements): scatters into a zero buffer and reads back
/// the base's layout. Written with tandem ops, so it is differentiable. Broadcast
/// (stride-0) view dims are summed first; other self-overlapping views are rejected
/// with NotImplementedError.
Tensor as_strided_backward(const Tensor& grad_view, const Geometry& base, const Geometry& view, int64_t storage_elems);

/// Strides for viewing (sizes, strides) as new_sizes without a copy, or nullopt if the
/// memory layout does not allow it (the rule torch.Tensor.view uses).
std::optional<DimVector> compute_view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes);
/// Replaces one -1 in `shape` so the product equals numel; ShapeError naming `op` otherwise.
DimVector infer_size(const char* op, IntArrayRef shape, int64_t numel);

}  // namespace tandem
