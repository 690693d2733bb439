#pragma once
// Tensor: a cheap, copyable handle to a TensorImpl (shared refcounted storage plus
// sizes, strides, storage offset, dtype and autograd metadata), following the PyTorch
// C++ frontend's at::Tensor.
//
// Where the methods live: this header declares the whole method surface so users write
// `x.view({2, 3}).sum()` as in PyTorch, but each method is defined by the layer that
// owns it: metadata and raw data access here in core/, op methods in ops/ (through the
// dispatcher), autograd methods (backward, grad) in autograd/. Link `tandem` to get all.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tandem/core/array_ref.h"
#include "tandem/core/capture_state.h"
#include "tandem/core/device.h"
#include "tandem/core/dtype.h"
#include "tandem/core/error.h"
#include "tandem/core/intrusive_ptr.h"
#include "tandem/core/scalar.h"
#include "tandem/core/storage.h"

namespace tandem {

class Tensor;
using TensorList = std::vector<Tensor>;
namespace autograd {
class Node;
class RemovableHandle;
}  // namespace autograd
namespace indexing {
class TensorIndex;  // ops/index.h
}

/// Options for factory functions: dtype (default: float32 for floating factories),
/// device, requires_grad. Implicitly constructible from a DType, like torch::TensorOptions.
struct TensorOptions {
  std::optional<DType> dtype_;
  Device device_ = kCPU;
  bool requires_grad_ = false;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions dtype(DType d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r = true) const { auto o = *this; o.requires_grad_ = r; return o; }
  DType dtype_or(DType d) const { return dtype_.value_or(d); }
};
inline TensorOptions dtype(DType d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

/// Opaque slot for autograd state; the autograd layer defines the real type.
struct AutogradMetaBase {
  virtual ~AutogradMetaBase() = default;
};

/// The state behind a Tensor handle. Users reach it through Tensor only.
class TensorImpl : public RefCounted {
 public:
  /// Copies `sizes` and `strides` (same length): up to kInlineDims dims are kept inline,
  /// so most tensors cost no allocation for their geometry.
  TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  /// Contiguous strides computed from `sizes`.
  TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, int64_t offset);
  ~TensorImpl() override;
  static constexpr size_t kInlineDims = 5;

  const Storage& storage() const { return storage_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  IntArrayRef sizes() const { return {dims_, ndim_}; }
  IntArrayRef strides() const { return {dims_ + ndim_, ndim_}; }
  int64_t storage_offset() const { return offset_; }
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return is_contiguous_; }
  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad_flag(bool r) { requires_grad_ = r; }
  /// A C++ number wrapped as a 0-d tensor: ranks below real tensors in type promotion.
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool w) { is_wrapped_number_ = w; }
  AutogradMetaBase* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaBase> m) { autograd_meta_ = std::move(m); }
  /// Replaces the geometry (used by in-place resize and set_): recomputes numel/contiguity.
  void set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  void set_storage(Storage s) { storage_ = std::move(s); }
  /// Takes src's storage, dtype and geometry; keeps this impl's identity, flags and
  /// autograd meta (Tensor::set_data).
  void set_data_from(const TensorImpl& src);
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * element_size(dtype_);
  }

 private:
  void refresh();
  /// Points dims_ at room for `ndim` sizes followed by `ndim` strides.
  void reserve_dims(size_t ndim);
  Storage storage_;
  int64_t* dims_ = inline_dims_;  ///< [sizes..., strides...]: inline_dims_ or a heap block
  size_t ndim_ = 0;
  int64_t inline_dims_[2 * kInlineDims];
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  DType dtype_;
  bool is_contiguous_ = true;
  bool requires_grad_ = false;
  bool is_wrapped_number_ = false;
  std::unique_ptr<AutogradMetaBase> autograd_meta_;
};

/// Strides of a contiguous (row-major) tensor of `sizes`; size-0/1 dims get the
/// same strides PyTorch gives.
DimVector contiguous_strides(IntArrayRef sizes);
/// True when (sizes, strides) describe row-major contiguous memory (PyTorch's rule:
/// dims of size 1 are ignored; any size-0 tensor is contiguous).
bool compute_is_contiguous(IntArrayRef sizes, IntArrayRef strides);
/// Normalises a possibly negative dim into [0, ndim); raises IndexError naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

/// Handle to a tensor. Copying a Tensor shares the data (like at::Tensor); use clone()
/// for a deep copy. A default-constructed Tensor is undefined (defined() == false).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata (core) ----
  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const IntrusivePtr<TensorImpl>& impl_ptr() const { return impl_; }
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes().size()); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  DimVector shape() const { return impl_->sizes().vec(); }
  /// Size of dim `d` (negative counts from the end); IndexError when out of range.
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t numel() const { return impl_->numel(); }
  DType dtype() const { return impl_->dtype(); }
  DType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  int64_t element_size() const { return tandem::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_floating_point() const { return tandem::is_floating_point(dtype()); }
  const Storage& storage() const { return impl_->storage(); }
  /// True when both tensors use the same storage (views, detach()).
  bool is_alias_of(const Tensor& o) const { return impl_->storage().get() == o.impl_->storage().get(); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  /// Makes this tensor (and every handle to it) use `new_data`'s storage, dtype and
  /// geometry while keeping its identity, requires_grad, .grad and hooks, like PyTorch's
  /// `param.data = new_data` (Variable::set_data); nn::Module::to converts parameters with
  /// it so that layers and optimizers holding them see the change. The old storage is
  /// released when nothing else uses it. TypeError when this tensor requires grad and
  /// new_data is not floating; ValueError for an undefined tensor.
  void set_data(const Tensor& new_data) const;
  int64_t use_count() const { return impl_.use_count(); }
  /// Version counter shared by all tensors on this storage (bumped by in-place ops).
  uint64_t _version() const { return impl_->storage()->version(); }
  void bump_version() const { impl_->storage()->bump_version(); }

  // ---- raw data access (core) ----
  /// Pointer to the first element. TypeError if T is not this tensor's dtype.
  template <typename T>
  T* data_ptr() const;
  void* data_ptr() const {
    capture_state::check_data_read("data_ptr()");
    return impl_->data();
  }
  /// The single value of a one-element tensor as T (any arithmetic T; converts).
  /// ValueError when numel() != 1.
  template <typename T>
  T item() const;
  Scalar item() const;

  // ---- autograd flags (core) ----
  bool requires_grad() const { return impl_->requires_grad(); }

  // ---- autograd (defined in autograd/) ----
  /// Sets requires_grad on a leaf; ValueError for non-floating dtypes.
  Tensor& requires_grad_(bool r = true);
  Tensor& set_requires_grad(bool r) { return requires_grad_(r); }

  // ---- creation and conversion (defined in ops/) ----
  /// Deep copy with the same sizes; contiguous strides.
  Tensor clone() const;
  /// This tensor if contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// Converts to `dtype` (returns *this when it already has it and copy is false).
  Tensor to(DType dtype, bool copy = false) const;
  /// Copies `src` into this tensor with broadcasting and dtype conversion; in place.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();
  /// A tensor sharing storage but with no autograd history.
  Tensor detach() const;

  // ---- views (defined in ops/; share storage, no copy) ----
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  Tensor reshape_as(const Tensor& other) const { return reshape(other.sizes()); }
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor mT() const { return transpose(-2, -1); }
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor broadcast_to(IntArrayRef sizes) const { return expand(sizes); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  /// Windows of `size` elements every `step` along `dimension` as a new last dim; a view
  /// (see tandem::unfold in ops/shape.h).
  Tensor unfold(int64_t dimension, int64_t size, int64_t step) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset = std::nullopt) const;
  // Copies of this tensor with one view's elements replaced by src (the functional forms
  // of writing through a view; see tandem::slice_scatter etc. in ops/shape.h).
  Tensor slice_scatter(const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                       std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor select_scatter(const Tensor& src, int64_t dim, int64_t index) const;
  Tensor diagonal_scatter(const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor as_strided_scatter(const Tensor& src, IntArrayRef sizes, IntArrayRef strides,
                            std::optional<int64_t> storage_offset = std::nullopt) const;

  // ---- binary arithmetic (ops/binary.cpp) ----
  /// Sums down to `sizes` (must broadcast to this shape), e.g. the gradient of expand.
  Tensor sum_to_size(IntArrayRef sizes) const;

  // ---- unary (ops/unary.cpp) ----
  // (declarations for this family go here)
  // Elementwise math; see ops/unary.h for dtypes and errors. "_" forms work in place.
  Tensor neg() const;
  Tensor& neg_();
  Tensor abs() const;
  Tensor& abs_();
  Tensor sign() const;
  Tensor& sign_();
  Tensor square() const;
  Tensor& square_();
  Tensor exp() const;
  Tensor& exp_();
  Tensor exp2() const;
  Tensor expm1() const;
  Tensor log() const;
  Tensor& log_();
  Tensor log2() const;
  Tensor log10() const;
  Tensor log1p() const;
  Tensor sqrt() const;
  Tensor& sqrt_();
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor& reciprocal_();
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor tanh() const;
  Tensor& tanh_();
  Tensor erf() const;
  Tensor erfc() const;
  Tensor sigmoid() const;
  Tensor& sigmoid_();
  Tensor logit(std::optional<double> eps = std::nullopt) const;
  Tensor relu() const;
  Tensor& relu_();
  Tensor floor() const;
  Tensor& floor_();
  Tensor ceil() const;
  Tensor& ceil_();
  Tensor round(int64_t decimals = 0) const;
  Tensor& round_(int64_t decimals = 0);
  Tensor trunc() const;
  Tensor& trunc_();
  Tensor frac() const;
  /// clamp with scalar bounds (either may be nullopt, not both) or tensor bounds
  /// (undefined = no bound); see tandem::clamp.
  Tensor clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt) const;
  Tensor clamp(const Tensor& min, const Tensor& max) const;
  Tensor& clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
  Tensor& clamp_(const Tensor& min, const Tensor& max);
  Tensor clip(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  Tensor nan_to_num(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor& nan_to_num_(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt);
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor logical_not() const;
  Tensor& logical_not_();
  Tensor bitwise_not() const;
  Tensor& bitwise_not_();

  // ---- pointwise (ops/pointwise.cpp, ops/binary.cpp) ----
  // Methods of the functions in ops/binary.h and ops/pointwise.h (see their docs); `x.f_(y)`
  // writes f(x, y) into x (TypeError when the result dtype can't be cast to x's dtype,
  // ShapeError when broadcasting would change x's shape) and returns x.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1);
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1);
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& other);
  Tensor div(const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt) const;
  Tensor div(const Scalar& other, std::optional<std::string> rounding_mode = std::nullopt) const;
  Tensor& div_(const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt);
  Tensor& div_(const Scalar& other, std::optional<std::string> rounding_mode = std::nullopt);
  Tensor floor_divide(const Tensor& other) const;
  Tensor floor_divide(const Scalar& other) const;
  Tensor& floor_divide_(const Tensor& other);
  Tensor& floor_divide_(const Scalar& other);
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor& remainder_(const Tensor& other);
  Tensor& remainder_(const Scalar& other);
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor& fmod_(const Tensor& other);
  Tensor& fmod_(const Scalar& other);
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor& pow_(const Tensor& exponent);
  Tensor& pow_(const Scalar& exponent);
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor fmax(const Tensor& other) const;
  Tensor fmin(const Tensor& other) const;
  Tensor atan2(const Tensor& other) const;
  Tensor& atan2_(const Tensor& other);
  Tensor hypot(const Tensor& other) const;
  Tensor& hypot_(const Tensor& other);
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor& eq_(const Tensor& other);
  Tensor& eq_(const Scalar& other);
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor& ne_(const Tensor& other);
  Tensor& ne_(const Scalar& other);
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor& lt_(const Tensor& other);
  Tensor& lt_(const Scalar& other);
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor& le_(const Tensor& other);
  Tensor& le_(const Scalar& other);
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor& gt_(const Tensor& other);
  Tensor& gt_(const Scalar& other);
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor& ge_(const Tensor& other);
  Tensor& ge_(const Scalar& other);
  Tensor logical_and(const Tensor& other) const;
  Tensor& logical_and_(const Tensor& other);
  Tensor logical_or(const Tensor& other) const;
  Tensor& logical_or_(const Tensor& other);
  Tensor logical_xor(const Tensor& other) const;
  Tensor& logical_xor_(const Tensor& other);
  Tensor bitwise_and(const Tensor& other) const;
  Tensor bitwise_and(const Scalar& other) const;
  Tensor& bitwise_and_(const Tensor& other);
  Tensor& bitwise_and_(const Scalar& other);
  Tensor bitwise_or(const Tensor& other) const;
  Tensor bitwise_or(const Scalar& other) const;
  Tensor& bitwise_or_(const Tensor& other);
  Tensor& bitwise_or_(const Scalar& other);
  Tensor bitwise_xor(const Tensor& other) const;
  Tensor bitwise_xor(const Scalar& other) const;
  Tensor& bitwise_xor_(const Tensor& other);
  Tensor& bitwise_xor_(const Scalar& other);
  Tensor bitwise_left_shift(const Tensor& other) const;
  Tensor bitwise_left_shift(const Scalar& other) const;
  Tensor& bitwise_left_shift_(const Tensor& other);
  Tensor& bitwise_left_shift_(const Scalar& other);
  Tensor bitwise_right_shift(const Tensor& other) const;
  Tensor bitwise_right_shift(const Scalar& other) const;
  Tensor& bitwise_right_shift_(const Tensor& other);
  Tensor& bitwise_right_shift_(const Scalar& other);
  /// x.where(cond, other) == where(cond, x, other).
  Tensor where(const Tensor& condition, const Tensor& other) const;
  Tensor where(const Tensor& condition, const Scalar& other) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight);
  Tensor& lerp_(const Tensor& end, const Tensor& weight);
  Tensor addcmul(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1) const;
  Tensor& addcmul_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
  Tensor addcdiv(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1) const;
  Tensor& addcdiv_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
  /// torch.isclose / allclose / equal (see ops/pointwise.h).
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  // Compound assignment: in place, like the `_` methods (`x /= y` is x.div_(y)).
  Tensor& operator+=(const Tensor& other);
  Tensor& operator+=(const Scalar& other);
  Tensor& operator-=(const Tensor& other);
  Tensor& operator-=(const Scalar& other);
  Tensor& operator*=(const Tensor& other);
  Tensor& operator*=(const Scalar& other);
  Tensor& operator/=(const Tensor& other);
  Tensor& operator/=(const Scalar& other);
  Tensor& operator%=(const Tensor& other);
  Tensor& operator%=(const Scalar& other);
  Tensor& operator&=(const Tensor& other);
  Tensor& operator&=(const Scalar& other);
  Tensor& operator|=(const Tensor& other);
  Tensor& operator|=(const Scalar& other);
  Tensor& operator^=(const Tensor& other);
  Tensor& operator^=(const Scalar& other);
  Tensor& operator<<=(const Tensor& other);
  Tensor& operator<<=(const Scalar& other);
  Tensor& operator>>=(const Tensor& other);
  Tensor& operator>>=(const Scalar& other);

  // ---- reductions (ops/reduce.cpp) ----
  // Same semantics as the functions in ops/reduce.h (see there); an empty dim list means all dims.
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var() const;
  Tensor var(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor var(std::optional<IntArrayRef> dim, double correction, bool keepdim = false) const;
  Tensor std() const;
  Tensor std(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor std(std::optional<IntArrayRef> dim, double correction, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor norm(const char* p, IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(IntArrayRef dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(IntArrayRef dim, bool keepdim = false) const;
  Tensor count_nonzero(IntArrayRef dim = {}) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  Tensor logcumsumexp(int64_t dim) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> mode(int64_t dim = -1, bool keepdim = false) const;

  // ---- linear algebra (ops/linalg.cpp) ----
  // (declarations for this family go here)
  /// torch.matmul (see tandem::matmul in ops/linalg.h).
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& mat2) const;
  Tensor bmm(const Tensor& mat2) const;
  Tensor dot(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor outer(const Tensor& vec2) const;
  /// beta * self + alpha * (mat1 @ mat2).
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1, const Scalar& alpha = 1) const;

  // ---- indexing, joining, sorting (ops/index.cpp) ----
  // (declarations for this family go here)
  // Full docs (shapes, dtypes, errors) are on the functions in ops/index.h.
  /// x[indices] (torch::indexing / at::indexing::get_item). Entries: integers, Slice,
  /// None, Ellipsis, bools, int64 index tensors, bool/uint8 masks (include ops/index.h).
  /// Integers, slices, None and Ellipsis only: a view of this tensor; with any tensor or
  /// bool entry: a copy (advanced indexing; the broadcast index dims replace the indexed
  /// dims when those are adjacent, else go first). IndexError for too many indices, more
  /// than one Ellipsis, an integer out of range or on a 0-d tensor, bad mask shapes or
  /// index dtypes (int64/bool/uint8 only, like PyTorch 1.13); ValueError for a slice step <= 0.
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  /// x[indices] = value in place (at::indexing::set_item): basic indices write through the
  /// view with copy_ (broadcast, dtype conversion); tensor indices use index_put_, which
  /// requires value to have this tensor's dtype (TypeError). Leading size-1 dims of value
  /// are dropped first.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value);
  /// Same with a scalar converted to this dtype (ValueError when it does not fit).
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value);
  /// aten::index_put_ with one optional index tensor per leading dim (see tandem::index_put).
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate);
  Tensor index_put(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false) const;
  Tensor gather(int64_t dim, const Tensor& index, bool sparse_grad = false) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value);
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                          bool include_self = true);
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value);
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source);
  Tensor nonzero() const;
  Tensor take(const Tensor& index) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source);
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value);
  Tensor diag(int64_t diagonal = 0) const;
  Tensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor tile(IntArrayRef dims) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0);
  Tensor& triu_(int64_t diagonal = 0);
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  std::tuple<Tensor, Tensor, Tensor> unique(bool sorted = true, bool return_inverse = false, bool return_counts = false,
                                            std::optional<int64_t> dim = std::nullopt) const;
  Tensor bincount(const Tensor& weights = Tensor(), int64_t minlength = 0) const;

  // ---- nn (ops/nn.cpp) ----
  // (declarations for this family go here)
  /// softmax / log_softmax along dim (see tandem::softmax in ops/nn.h).
  Tensor softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;

  // ---- random (ops/random.cpp) ----
  // (declarations for this family go here)

  // ---- autograd (autograd/) ----
  /// Accumulated gradient of a leaf (or a non-leaf after retain_grad()); undefined if none.
  const Tensor& grad() const;
  /// Replaces .grad (shape must match; ShapeError otherwise); pass an undefined tensor to clear.
  void set_grad(const Tensor& g) const;
  /// Node that produced this tensor (nullptr for leaves and tensors without history).
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// True for tensors not produced by a recorded op (all tensors not requiring grad too).
  bool is_leaf() const;
  /// Computes gradients of this tensor w.r.t. graph leaves (see autograd::backward).
  /// `gradient` is required for non-scalar tensors.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  /// Keeps .grad on a non-leaf after backward.
  void retain_grad() const;
  bool retains_grad() const;
  /// Registers a gradient hook (see autograd::register_hook); include tandem/tandem.h.
  autograd::RemovableHandle register_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// Detaches in place: this tensor becomes a leaf without history.
  Tensor& detach_();

  // ---- printing (core) ----
  /// PyTorch-style text: "tensor([[1., 2.],\n        [3., 4.]], dtype=float64)".
  std::string to_string() const;

 private:
  IntrusivePtr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- helpers used by every layer (core) ----
/// A new tensor aliasing `base`'s storage with the given geometry (no autograd).
/// The caller is responsible for the geometry staying inside the storage.
Tensor make_alias(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
/// Allocates an uninitialised contiguous tensor through the device allocator.
Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device = kCPU);
/// Allocates an uninitialised tensor with explicit strides (storage sized to fit).
Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device = kCPU);
/// Raises ValueError naming `op` if any size is negative.
void check_sizes_nonnegative(IntArrayRef sizes, const char* op);

template <typename T>
T* Tensor::data_ptr() const {
  TANDEM_CHECK(defined(), RuntimeError, "data_ptr", "called on an undefined tensor");
  capture_state::check_data_read("data_ptr()");
  TANDEM_CHECK(dtype_of_v<std::remove_const_t<T>> == dtype(), TypeError, "data_ptr",
               "tensor has dtype ", dtype_name(dtype()), ", expected data_ptr<",
               dtype_name(dtype_of_v<std::remove_const_t<T>>), ">");
  return static_cast<T*>(impl_->data());
}

namespace detail {
[[noreturn]] void throw_item_overflow(const Scalar& s, DType target);
}

template <typename T>
T Tensor::item() const {
  Scalar s = item();
  // Like c10's checked_convert: a value that does not fit T raises instead of wrapping.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (s.is_floating_point()) {
      double d = s.to_double();
      if (!(d >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
            d <= static_cast<double>(std::numeric_limits<T>::max())))
        detail::throw_item_overflow(s, dtype_of_v<T>);
    } else if (s.is_integral()) {
      int64_t v = s.to_int();
      if constexpr (std::is_unsigned_v<T>) {
        if (v < 0 || static_cast<uint64_t>(v) > std::numeric_limits<T>::max()) detail::throw_item_overflow(s, dtype_of_v<T>);
      } else {
        if (v < std::numeric_limits<T>::lowest() || v > std::numeric_limits<T>::max()) detail::throw_item_overflow(s, dtype_of_v<T>);
      }
    }
  } else if constexpr (std::is_same_v<T, float>) {
    double d = s.to_double();
    if (std::isfinite(d) && std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
      detail::throw_item_overflow(s, DType::Float32);
  }
  return s.to<T>();
}

}  // namespace tandem
