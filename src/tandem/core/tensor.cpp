#include "tandem/core/tensor.h"

#include <algorithm>
#include <cstring>

namespace tandem {

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset)
    : storage_(std::move(storage)), offset_(offset), dtype_(dtype) {
  reserve_dims(sizes.size());
  std::copy(sizes.begin(), sizes.end(), dims_);
  std::copy(strides.begin(), strides.end(), dims_ + ndim_);
  refresh();
}

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, int64_t offset)
    : storage_(std::move(storage)), offset_(offset), dtype_(dtype) {
  reserve_dims(sizes.size());
  int64_t acc = 1;
  for (size_t i = ndim_; i-- > 0;) {
    dims_[i] = sizes[i];
    dims_[ndim_ + i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  refresh();
}

TensorImpl::~TensorImpl() {
  if (dims_ != inline_dims_) delete[] dims_;
}

void TensorImpl::reserve_dims(size_t ndim) {
  if (ndim > kInlineDims && (dims_ == inline_dims_ || ndim > ndim_)) {
    auto* block = new int64_t[2 * ndim];
    if (dims_ != inline_dims_) delete[] dims_;
    dims_ = block;
  }
  ndim_ = ndim;
}

void TensorImpl::set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  // The arguments may point into this tensor's own geometry: copy them first.
  DimVector sz = sizes.vec(), st = strides.vec();
  reserve_dims(sz.size());
  std::copy(sz.begin(), sz.end(), dims_);
  std::copy(st.begin(), st.end(), dims_ + ndim_);
  offset_ = offset;
  refresh();
}

void TensorImpl::set_data_from(const TensorImpl& src) {
  storage_ = src.storage_;
  dtype_ = src.dtype_;
  set_geometry(src.sizes(), src.strides(), src.offset_);
}

void Tensor::set_data(const Tensor& new_data) const {
  TANDEM_CHECK(defined() && new_data.defined(), ValueError, "set_data", "got an undefined tensor");
  TANDEM_CHECK(!requires_grad() || new_data.is_floating_point(), TypeError, "set_data",
               "got new data of dtype ", dtype_name(new_data.dtype()),
               " for a tensor that requires grad, expected a floating dtype");
  impl_->set_data_from(*new_data.impl());
}

void TensorImpl::refresh() {
  numel_ = multiply_integers(sizes());
  is_contiguous_ = compute_is_contiguous(sizes(), strides());
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

bool compute_is_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  for (int64_t s : sizes)
    if (s == 0) return true;  // nothing to lay out, whatever the strides of the other dims
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;  // 0-d accepts 0 and -1
  TANDEM_CHECK(dim >= lo && dim <= hi, IndexError, op, "dimension out of range (expected to be in range of [",
               lo, ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

void check_sizes_nonnegative(IntArrayRef sizes, const char* op) {
  for (int64_t s : sizes)
    TANDEM_CHECK(s >= 0, ValueError, op, "negative dimension ", s, " in size ", sizes, ", expected sizes >= 0");
  // Every contiguous stride must fit int64, zero-sized dimensions included (they make the
  // element count 0, not the other dimensions' strides small): PyTorch's "Storage size
  // calculation overflowed". A wrapped count would allocate a small buffer.
  int64_t stride = 1;
  bool overflow = false;
  for (size_t i = sizes.size(); i-- > 0;)
    overflow = overflow || __builtin_mul_overflow(stride, std::max<int64_t>(sizes[i], 1), &stride);
  TANDEM_CHECK(!overflow, RuntimeError, op, "storage size calculation overflowed with sizes ", sizes,
               ", expected sizes whose product (zero-sized dimensions counted as 1) fits int64");
}

int64_t Tensor::size(int64_t d) const {
  TANDEM_CHECK(dim() > 0, IndexError, "size", "dimension specified as ", d, " but tensor has no dimensions");
  return impl_->sizes()[wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  TANDEM_CHECK(dim() > 0, IndexError, "stride", "dimension specified as ", d, " but tensor has no dimensions");
  return impl_->strides()[wrap_dim(d, dim(), "stride")];
}

Scalar Tensor::item() const {
  TANDEM_CHECK(defined(), RuntimeError, "item", "called on an undefined tensor");
  capture_state::check_data_read("item()");
  TANDEM_CHECK(numel() == 1, ValueError, "item", "a Tensor with ", numel(),
               " elements cannot be converted to Scalar, expected exactly 1 element (sizes ", sizes(), ")");
  return TANDEM_DISPATCH_ALL_TYPES(dtype(), "item", [&]() -> Scalar {
    return Scalar(*static_cast<const scalar_t*>(impl_->data()));
  });
}

namespace detail {
void throw_item_overflow(const Scalar& s, DType target) {
  throw TypeError(str_cat("[item] value ", s, " cannot be converted to type ", dtype_name(target),
                          " without overflow"));
}
}  // namespace detail

Tensor make_alias(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  return Tensor(IntrusivePtr<TensorImpl>::make(base.storage(), base.dtype(), sizes, strides, storage_offset));
}

Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device) {
  check_sizes_nonnegative(sizes, "empty");
  int64_t bytes = 0;
  TANDEM_CHECK(!__builtin_mul_overflow(multiply_integers(sizes), element_size(dtype), &bytes), RuntimeError, "empty",
               "storage size calculation overflowed with sizes ", sizes, " of ", dtype_name(dtype),
               ", expected at most 2^63 - 1 bytes");
  auto storage = Storage::make(static_cast<size_t>(bytes), &cpu_allocator());
  (void)device;
  return Tensor(IntrusivePtr<TensorImpl>::make(std::move(storage), dtype, sizes, int64_t{0}));
}

Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  check_sizes_nonnegative(sizes, "empty_strided");
  TANDEM_CHECK(sizes.size() == strides.size(), ShapeError, "empty_strided", "got sizes ", sizes,
               " and strides ", strides, ", expected the same length");
  int64_t extent = 1;  // elements needed: 1 + sum (size-1)*stride
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TANDEM_CHECK(strides[i] >= 0, ValueError, "empty_strided", "negative stride ", strides[i], " in ", strides);
    if (sizes[i] == 0) empty = true;
    extent += (sizes[i] - 1) * strides[i];
  }
  if (empty) extent = 0;
  auto storage = Storage::make(static_cast<size_t>(extent * element_size(dtype)), &cpu_allocator());
  (void)device;
  return Tensor(IntrusivePtr<TensorImpl>::make(std::move(storage), dtype, sizes, strides, int64_t{0}));
}

}  // namespace tandem

namespace tandem {
Tensor& Tensor::requires_grad_(bool r) {
  TANDEM_CHECK(defined(), RuntimeError, "requires_grad_", "called on an undefined tensor");
  TANDEM_CHECK(!r || is_floating_point(), TypeError, "requires_grad_",
               "only tensors of floating point dtype can require gradients, got ", dtype_name(dtype()));
  impl_->set_requires_grad_flag(r);
  return *this;
}
}  // namespace tandem
