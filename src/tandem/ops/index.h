#pragma once
// Joining, indexing, sorting and selection ops (cat, gather, scatter, index, sort, topk,
// unique), with PyTorch 1.13 semantics, and the tensor indexing API of the PyTorch C++
// frontend (torch::indexing): x.index({Slice(), None, 0, mask}), x.index_put_({...}, v).
//
// Errors: index values out of range raise IndexError
//   "[index_select] index 7 is out of bounds for dimension 0 with size 5",
// checked before anything is written (a bad index never corrupts data). Wrong index or
// mask dtypes raise TypeError, mismatched shapes ShapeError, bad arguments ValueError
// (all naming the op), except where PyTorch raises IndexError (bad advanced-indexing
// masks/index dtypes, too many indices), which is kept.
//
// Gradients follow PyTorch 1.13 and are written with these ops, so they are
// differentiable again: self, src/source/values and a 0-d fill value get gradients, index
// and mask inputs and index outputs do not. Selected values (sort/topk/kthvalue,
// cummax/cummin) pass the gradient to the selected positions. With repeated indices,
// scatter and index_put(accumulate=false) give every writer the gradient of its target,
// as PyTorch does. A src larger than index (scatter*) gets zeros where it is not read
// (PyTorch raises "invalid gradient" there).
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem {

namespace indexing {

/// Python's `None` in an index list: inserts a dim of size 1 (torch::indexing::None).
inline constexpr std::nullopt_t None = std::nullopt;
/// Python's `...`: stands for as many full slices as needed.
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

/// Python's start:stop:step. Missing bounds are None; step must be > 0 (ValueError).
/// Bounds are clamped like Python slicing; negative bounds count from the end.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  std::optional<int64_t> step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_, step_;
};

/// One entry of an index list (torch::indexing::TensorIndex): an integer, a Slice, None,
/// Ellipsis ("..." also works), a bool, or a Tensor (int64 indices, or a bool/uint8 mask).
class TensorIndex {
 public:
  enum class Kind { None, Ellipsis, Integer, Boolean, Slice, Tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}  // NOLINT
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}  // NOLINT
  TensorIndex(const char* s);  // NOLINT: only "..." is accepted (ValueError otherwise)
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}  // NOLINT
  TensorIndex(int i) : kind_(Kind::Integer), integer_(i) {}  // NOLINT
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}  // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}  // NOLINT
  TensorIndex(Tensor t);  // NOLINT: ValueError for an undefined tensor

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace indexing

// ---------------------------------------------------------------- joining
/// Concatenates along `dim` (torch.cat). Inputs are promoted to their result_type.
/// All inputs need the same number of dims and equal sizes except along dim; legacy
/// empty 1-D tensors of shape [0] are skipped (but take part in dtype promotion).
/// ValueError for an empty list, ShapeError for 0-d inputs or mismatched sizes,
/// IndexError for a bad dim.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Joins equal-shaped tensors along a new dim `dim` in [-(n+1), n] (torch.stack).
/// ValueError for an empty list, ShapeError when shapes differ.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Column-wise stack (torch.hstack): cat along dim 0 for 1-D inputs, else dim 1; 0-d
/// inputs count as 1-D.
Tensor hstack(const std::vector<Tensor>& tensors);
/// Row-wise stack (torch.vstack): inputs made at least 2-D ([n] -> [1, n]), cat along 0.
Tensor vstack(const std::vector<Tensor>& tensors);

// ---------------------------------------------------------------- gather/scatter
/// out[i][j][k] = self[index[i][j][k]][j][k] for dim 0 (torch.gather). index: int64 with
/// the same number of dims as self (0-d counts as 1-d) and index.size(d) <= self.size(d)
/// for d != dim; result has index's shape and self's dtype. Indices must lie in
/// [0, self.size(dim)) (IndexError; no negative wrap, as in PyTorch).
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad = false);
/// Copy of self with self[index[i][j]][j] = src[i][j] for dim 0 (torch.scatter). src has
/// self's dtype (TypeError otherwise) and index.size(d) <= src.size(d) for every d. With
/// duplicate indices the last write wins (PyTorch leaves it unspecified).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// Same with every written value equal to `value` (converted to self's dtype; ValueError
/// when it does not fit, like PyTorch's checked conversion).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
/// Copy of self with src added at the scattered positions (torch.scatter_add).
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// Reduces src into self at the scattered positions (torch.scatter_reduce). reduce is
/// "sum", "prod", "mean", "amax" or "amin" (ValueError otherwise); include_self=false
/// ignores self's value at positions that receive at least one element. Integer "mean"
/// rounds down (floor division, as PyTorch); amax/amin propagate NaN. "mean" is not
/// defined for bool (TypeError).
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);

// ---------------------------------------------------------------- index_select/add
/// Selects entries along dim (torch.index_select). index: 0-d or 1-d int32/int64 with
/// values in [0, self.size(dim)) (IndexError); the result has dim resized to index.numel().
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
/// Copy of self with alpha * source.select(dim, i) added to self.select(dim, index[i])
/// (torch.index_add). source has self's dtype and shape except along dim, where its size
/// is index.numel(). alpha is converted to the dtype (2.5 becomes 2 for integers).
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);

/// Elements of self at flat (row-major) positions `index` (torch.take): the result has
/// index's shape and self's dtype. index: int64 (TypeError otherwise) with values in
/// [-numel, numel), negative values counting from the end (IndexError otherwise).
Tensor take(const Tensor& self, const Tensor& index);
/// Copy of self with self.select(dim, index[i]) = source.select(dim, i)
/// (torch.index_copy). index: 0-d or 1-d int64 (TypeError for other dtypes, IndexError for
/// more dims) with values in [0, self.size(dim)) (IndexError; no negative wrap, as
/// PyTorch); source has self's dtype (TypeError), self's number of dims and sizes except
/// along dim (ShapeError), where its size is index.numel() (IndexError, as PyTorch). With a
/// repeated index the last source slice wins (PyTorch leaves it unspecified).
Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
/// Copy of self with the slices self.select(dim, index[i]) set to `value`
/// (torch.index_fill). index: 0-d or 1-d int64 (TypeError / IndexError) with values in
/// [-size, size), negative values wrapping (IndexError otherwise). value is converted to
/// self's dtype (ValueError when it does not fit; 2.5 becomes 2 for integers).
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);

// ---------------------------------------------------------------- advanced indexing
/// aten::index: self indexed by a list of optional tensors, one per leading dim
/// (undefined = take the whole dim). Entries are int64 indices (negative values wrap;
/// IndexError outside [-size, size)) or bool/uint8 masks covering mask.dim() dims (their
/// shape must match those dims, IndexError). Index tensors broadcast together (IndexError
/// otherwise). When the indexed dims are adjacent the broadcast index shape replaces them
/// in place, otherwise it goes first (NumPy/PyTorch rule). Always a copy.
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
/// Copy of self with self[indices] = values (aten::index_put): values has self's dtype
/// (TypeError) and broadcasts to the indexing result's shape (ShapeError). accumulate
/// adds instead (duplicates add up); without it the last duplicate wins.
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
/// In-place index_put; returns self.
Tensor& index_put_(Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

// The TensorIndex forms (x.index({Slice(), 0}), x.index_put_({mask}, v)) are Tensor
// methods, declared in core/tensor.h and defined in ops/indexing.cpp.

// ---------------------------------------------------------------- masks
/// Copy of self with `value` where mask is true (torch.masked_fill). mask: bool (or the
/// deprecated uint8), broadcast with self: the result has the broadcast shape. value is
/// converted to self's dtype (ValueError when it does not fit, e.g. 300 into uint8).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
/// Same with a 0-d tensor value (ShapeError for other shapes).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);
/// The elements of self where mask is true, as a 1-D tensor in row-major order
/// (torch.masked_select). self and mask broadcast.
Tensor masked_select(const Tensor& self, const Tensor& mask);
/// Copy of self (broadcast with mask) whose masked positions take consecutive elements
/// of source in row-major order (torch.masked_scatter). source has self's dtype and at
/// least as many elements as mask has true values (ShapeError, checked before writing).
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);
/// Indices of the nonzero elements as an int64 [n, self.dim()] tensor, row-major
/// (torch.nonzero). NaN is nonzero.
Tensor nonzero(const Tensor& self);

// ---------------------------------------------------------------- repetition, layout
/// Tiles self `repeats[i]` times along each dim (torch.Tensor.repeat); repeats needs at
/// least self.dim() entries (ShapeError), extra leading ones add dims. Negative: ValueError.
Tensor repeat(const Tensor& self, IntArrayRef repeats);
/// Like repeat, but `dims` shorter than self.dim() is padded with leading ones (torch.tile).
Tensor tile(const Tensor& self, IntArrayRef dims);
/// Repeats each element `repeats` times along dim (flattened input when dim is None)
/// (torch.repeat_interleave). ValueError for negative repeats.
Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
/// Element i along dim repeated repeats[i] times; repeats is an int32/int64 0-d or 1-d
/// tensor of length 1 or self.size(dim) (ShapeError otherwise).
Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
/// torch.repeat_interleave(repeats): index i repeated repeats[i] times (1-D int tensor;
/// result has repeats' dtype). output_size, when given, must equal the sum (ValueError).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = std::nullopt);
/// Reverses the order along each of `dims` (torch.flip); a copy.
Tensor flip(const Tensor& self, IntArrayRef dims);
/// Rolls elements along dims by shifts (torch.roll); with no dims the tensor is flattened,
/// rolled and reshaped (then exactly one shift is allowed). ShapeError when shifts and
/// dims differ in length.
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
/// Lower triangle of the last two dims (elements with j - i <= diagonal), zeros elsewhere
/// (torch.tril). ShapeError for fewer than 2 dims.
Tensor tril(const Tensor& self, int64_t diagonal = 0);
/// Upper triangle (j - i >= diagonal) (torch.triu).
Tensor triu(const Tensor& self, int64_t diagonal = 0);
/// A 1-D self of size n: the (n + |diagonal|)-square matrix with self on its `diagonal`-th
/// diagonal (above the main one when > 0), zeros elsewhere. A 2-D self: a copy of its
/// `diagonal`-th diagonal as a 1-D tensor (empty when the offset lies outside the matrix).
/// ShapeError for other numbers of dims (torch.diag).
Tensor diag(const Tensor& self, int64_t diagonal = 0);
/// A tensor with one more dim whose diagonals (offset, over result dims dim1 and dim2) hold
/// the last dim of self, zeros elsewhere (torch.diag_embed): dims dim1 and dim2 have size
/// self.size(-1) + |offset|, the other dims are self's leading dims in order. IndexError
/// for dims outside [-(self.dim()+1), self.dim()] (a 0-d self with the default dims),
/// ValueError when dim1 and dim2 name the same dim.
Tensor diag_embed(const Tensor& self, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);

// ---------------------------------------------------------------- sorting, selection
/// Sorts along dim (torch.sort): (values, int64 indices). NaN sorts as the greatest value.
/// The sort is always stable (equal elements keep their order; stable=false allows any
/// order, so this is a valid choice there too). Descending keeps equal elements in order.
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false, bool stable = false);
/// The indices of sort (torch.argsort).
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false, bool stable = false);
/// The k largest (or smallest) elements along dim and their int64 indices (torch.topk),
/// NaN counting as the largest. k must lie in [0, size] (ValueError). Results are always
/// sorted; among equal values the lower index comes first. bool is not supported
/// (TypeError, as PyTorch); float16/bfloat16 are.
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
/// The k-th smallest element along dim (k from 1) and its index (torch.kthvalue).
/// ValueError unless 1 <= k <= size; IndexError for an empty reduction dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim = -1, bool keepdim = false);
/// Unique elements (torch.unique / _unique2): (values, inverse indices, counts), all
/// computed. dim None flattens; otherwise unique slices along dim. Values are always
/// sorted (sorted=false allows any order). NaNs are all distinct and sort last.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted = true, bool return_inverse = false,
                                          bool return_counts = false, std::optional<int64_t> dim = std::nullopt);
/// Indices where `values` would be inserted into the innermost dim of sorted_sequence to
/// keep it sorted (torch.searchsorted). side "left"/"right" (right=true means "right";
/// ValueError for a conflict or another string). sorted_sequence is 1-D or has values'
/// leading dims (ShapeError). sorter: int64 argsort of sorted_sequence (IndexError when
/// out of range). Inputs are compared in their promoted dtype; bool is not supported.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false,
                    std::optional<std::string> side = std::nullopt, const Tensor& sorter = Tensor());
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32 = false, bool right = false,
                    std::optional<std::string> side = std::nullopt, const Tensor& sorter = Tensor());
/// Counts of each non-negative integer in the 1-D integral tensor self (torch.bincount):
/// length max(max(self) + 1, minlength). With weights (1-D, same length) the weights are
/// summed: float32 weights give float32, other weights float64. ValueError for negative
/// values or minlength; an empty input gives int64 zeros of length minlength.
Tensor bincount(const Tensor& self, const Tensor& weights = Tensor(), int64_t minlength = 0);

}  // namespace tandem
