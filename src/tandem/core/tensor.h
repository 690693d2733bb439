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
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tandem/core/array_ref.h"
#include "tandem/core/device.h"
#include "tandem/core/dtype.h"
#include "tandem/core/error.h"
#include "tandem/core/intrusive_ptr.h"
#include "tandem/core/scalar.h"
#include "tandem/core/storage.h"

namespace tandem {

class Tensor;
using TensorList = std::vector<Tensor>;

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
  TensorImpl(Storage storage, DType dtype, DimVector sizes, DimVector strides, int64_t offset);

  const Storage& storage() const { return storage_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const DimVector& sizes() const { return sizes_; }
  const DimVector& strides() const { return strides_; }
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
  void set_geometry(DimVector sizes, DimVector strides, int64_t offset);
  void set_storage(Storage s) { storage_ = std::move(s); }
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * element_size(dtype_);
  }

 private:
  void refresh();
  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
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
  DimVector shape() const { return impl_->sizes(); }
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
  int64_t use_count() const { return impl_.use_count(); }
  /// Version counter shared by all tensors on this storage (bumped by in-place ops).
  uint64_t _version() const { return impl_->storage()->version(); }
  void bump_version() const { impl_->storage()->bump_version(); }

  // ---- raw data access (core) ----
  /// Pointer to the first element. TypeError if T is not this tensor's dtype.
  template <typename T>
  T* data_ptr() const;
  void* data_ptr() const { return impl_->data(); }
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
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset = std::nullopt) const;

  // ---- unary (ops/unary.cpp) ----
  // (declarations for this family go here)

  // ---- pointwise (ops/pointwise.cpp, ops/binary.cpp) ----
  // (declarations for this family go here)

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

  // ---- linear algebra (ops/linalg.cpp) ----
  // (declarations for this family go here)

  // ---- indexing, joining, sorting (ops/index.cpp) ----
  // (declarations for this family go here)

  // ---- nn (ops/nn.cpp) ----
  // (declarations for this family go here)

  // ---- random (ops/random.cpp) ----
  // (declarations for this family go here)

  // ---- autograd (autograd/) ----
  // (declarations for this family go here)

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
Tensor make_alias(const Tensor& base, DimVector sizes, DimVector strides, int64_t storage_offset);
/// Allocates an uninitialised contiguous tensor through the device allocator.
Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device = kCPU);
/// Allocates an uninitialised tensor with explicit strides (storage sized to fit).
Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device = kCPU);
/// Raises ValueError naming `op` if any size is negative.
void check_sizes_nonnegative(IntArrayRef sizes, const char* op);

template <typename T>
T* Tensor::data_ptr() const {
  TANDEM_CHECK(defined(), RuntimeError, "data_ptr", "called on an undefined tensor");
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
