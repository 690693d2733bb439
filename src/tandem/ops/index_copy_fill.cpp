// More ops of the index family: take (flat gather), index_copy, index_fill (with their
// in-place variants), diag_embed and the composite diag. Meta validates dtypes and shapes;
// kernels check index values before writing anything. Backward rules follow PyTorch 1.13
// and are written with ops (differentiable again); index inputs get no gradient.
#include <cstring>

#include "tandem/kernels/cpu/index.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace {

using Grads = std::vector<Tensor>;

int64_t size_or_1(const MetaRef& m, int64_t d) { return m.dim() == 0 ? 1 : m.sizes[d]; }
int64_t ndim_or_1(const MetaRef& m) { return std::max<int64_t>(1, m.dim()); }

void check_long_index(const char* op, const MetaRef& index) {
  TANDEM_CHECK(index.dtype == kInt64, TypeError, op, "expected an int64 index tensor, got dtype ", dtype_name(index.dtype));
}
void check_index_vector(const char* op, const MetaRef& index) {
  check_long_index(op, index);
  TANDEM_CHECK(index.dim() <= 1, IndexError, op, "index should have dimension 1 or 0, got shape ", index.sizes);
}

// The index values (int64) in row-major order, negative values wrapped by `size` when
// `wrap` (the caller checked the range).
std::vector<int64_t> index_values(const Tensor& index, int64_t size, bool wrap) {
  Tensor c = index.is_contiguous() ? index : kernels::contiguous_copy(index);
  const int64_t* p = static_cast<const int64_t*>(c.data_ptr());
  std::vector<int64_t> v(p, p + c.numel());
  if (wrap)
    for (int64_t& x : v)
      if (x < 0) x += size;
  return v;
}

int64_t attr_dim(BackwardContext& c) { return wrap_dim(c.attrs.i(0), c.input_metas[0].dim(), c.op); }

// take: every read adds the gradient back at its (flat) source position.
Grads take_backward(BackwardContext& c) {
  Grads r(2);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& self = c.input_metas[0];
  Tensor flat = zeros({self.numel()}, g.dtype());
  if (g.numel() > 0) flat = index_put(flat, {c.inputs[1].flatten()}, g.flatten(), /*accumulate=*/true);
  r[0] = flat.reshape(self.sizes);
  return r;
}

// index_copy: the overwritten slices of self get nothing; source gets the gradient of the
// slice it was copied to (every writer of a repeated index, as PyTorch).
Grads index_copy_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  const int64_t dim = attr_dim(c);
  const Tensor& index = c.inputs[1];
  if (c.needs_input_grad[0]) r[0] = index_fill(g, dim, index, Scalar(0));
  if (c.needs_input_grad[2]) {
    Tensor gs = c.input_metas[0].dim() == 0 ? g.reshape({1}) : g;
    gs = index_select(gs, dim, index);
    const MetaRef& source = c.input_metas[2];
    r[2] = gs.sizes().equals(source.sizes) ? gs : gs.reshape(source.sizes);
  }
  return r;
}

Grads index_fill_backward(BackwardContext& c) {
  Grads r(2);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  r[0] = index_fill(g, attr_dim(c), c.inputs[1], Scalar(0));
  return r;
}

// Sizes of diag_embed's result: self's last dim L moves to a diagonal of size
// L + |offset| spanning the result dims d1 and d2.
DimVector diag_embed_sizes(IntArrayRef in, int64_t offset, int64_t d1, int64_t d2) {
  const int64_t m = (in.empty() ? 1 : in.back()) + (offset < 0 ? -offset : offset);
  DimVector out;
  size_t k = 0;
  const int64_t n = static_cast<int64_t>(in.size()) + 1;
  for (int64_t d = 0; d < n; ++d) out.push_back(d == d1 || d == d2 ? m : in[k++]);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- take
TANDEM_REGISTER_OP(take) {
  OpDef d;
  d.name = "take";
  d.inputs = {{"self"}, {"index", false, false, false}};
  d.save_inputs = 0b10;
  d.backward = take_backward;
  d.meta = [](MetaContext& c) {
    check_long_index(c.op, c.inputs[1]);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, c.inputs[1].sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const int64_t n = self.numel();
    kernels::check_index_range(index, n, /*allow_negative=*/true, c.op, 0);
    if (out.numel() == 0) return;
    const std::vector<int64_t> idx = index_values(index, n, true);
    Tensor src = self.is_contiguous() ? self : kernels::contiguous_copy(self);
    TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
      const elem_t* s = static_cast<const elem_t*>(src.data_ptr());
      elem_t* o = static_cast<elem_t*>(out.data_ptr());  // contiguous: allocated from meta
      for (size_t i = 0; i < idx.size(); ++i) o[i] = s[idx[i]];
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

// ---------------------------------------------------------------- index_copy, index_fill
TANDEM_REGISTER_OP(index_copy) {
  OpDef d;
  d.name = "index_copy";
  d.autocast = Autocast::Promote;
  d.inputs = {{"self"}, {"index", false, false, false, InputOverlap::None}, {"source"}};
  d.attrs = {{"dim", int64_t{0}}};
  d.save_inputs = 0b010;
  d.backward = index_copy_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &index = c.inputs[1], &source = c.inputs[2];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    check_index_vector(c.op, index);
    TANDEM_CHECK(source.dtype == self.dtype, TypeError, c.op, "expected self and source to have the same dtype, got ",
                 dtype_name(self.dtype), " and ", dtype_name(source.dtype));
    TANDEM_CHECK(ndim_or_1(source) == ndim_or_1(self), ShapeError, c.op, "source shape ", source.sizes,
                 " and self shape ", self.sizes, " must have the same number of dims");
    TANDEM_CHECK(index.numel() == size_or_1(source, dim), IndexError, c.op, "number of indices (", index.numel(),
                 ") should be equal to source.size(dim) (", size_or_1(source, dim), ") for dim ", dim);
    for (int64_t k = 0; k < ndim_or_1(self); ++k)
      if (k != dim)
        TANDEM_CHECK(size_or_1(source, k) == size_or_1(self, k), ShapeError, c.op, "source shape ", source.sizes,
                     " must match self shape ", self.sizes, " except in dimension ", dim, " (mismatch at dimension ", k, ")");
    c.outputs.push_back(TensorMeta{self.dtype, self.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
    kernels::check_index_range(index, size, /*allow_negative=*/false, c.op, dim);  // no wrap, as PyTorch
    Tensor src = c.inputs[2].is_alias_of(out) ? kernels::contiguous_copy(c.inputs[2]) : c.inputs[2];
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (index.numel() == 0 || out.numel() == 0) return;
    Tensor o1 = kernels::as_1d_if_scalar(out), s1 = kernels::as_1d_if_scalar(src);
    const std::vector<int64_t> idx = index_values(index, size, false);
    const int64_t N = static_cast<int64_t>(idx.size()), os = o1.stride(dim), ss = s1.stride(dim);
    Tensor ops[2] = {o1, s1};
    TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
      // Each line copies its slices in index order, so with a repeated index the last
      // source slice wins (PyTorch leaves the order unspecified).
      kernels::for_each_line(ArrayRef<Tensor>(ops, 2), s1.sizes(), dim, N, [&](char** p) {
        elem_t* o = reinterpret_cast<elem_t*>(p[0]);
        const elem_t* s = reinterpret_cast<const elem_t*>(p[1]);
        for (int64_t j = 0; j < N; ++j) o[idx[j] * os] = s[j * ss];
      });
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

TANDEM_REGISTER_OP(index_fill) {
  OpDef d;
  d.name = "index_fill";
  d.inputs = {{"self"}, {"index", false, false, false, InputOverlap::None}};
  d.attrs = {{"dim", int64_t{0}}, {"value", Scalar(0)}};
  d.save_inputs = 0b10;
  d.backward = index_fill_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &index = c.inputs[1];
    wrap_dim(c.attrs.i(0), self.dim(), c.op);
    check_index_vector(c.op, index);
    kernels::check_scalar_fits(c.attrs.scalar(1), self.dtype, c.op);
    c.outputs.push_back(TensorMeta{self.dtype, self.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
    kernels::check_index_range(index, size, /*allow_negative=*/true, c.op, dim);  // negative values wrap
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (index.numel() == 0 || out.numel() == 0) return;
    Tensor o1 = kernels::as_1d_if_scalar(out);
    const std::vector<int64_t> idx = index_values(index, size, true);
    const int64_t N = static_cast<int64_t>(idx.size()), os = o1.stride(dim);
    const Scalar value = c.attrs.scalar(1);
    Tensor ops[1] = {o1};
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      const scalar_t v = value.to<scalar_t>();
      kernels::for_each_line(ArrayRef<Tensor>(ops, 1), o1.sizes(), dim, N, [&](char** p) {
        scalar_t* o = reinterpret_cast<scalar_t*>(p[0]);
        for (int64_t j = 0; j < N; ++j) o[idx[j] * os] = v;
      });
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

// ---------------------------------------------------------------- diag_embed, diag
TANDEM_REGISTER_OP(diag_embed) {
  OpDef d;
  d.name = "diag_embed";
  d.inputs = {{"self"}};
  d.attrs = {{"offset", int64_t{0}}, {"dim1", int64_t{-2}}, {"dim2", int64_t{-1}}};
  d.backward = [](BackwardContext& c) -> Grads {
    if (!c.grad_outputs[0].defined() || !c.needs_input_grad[0]) return Grads(1);
    return {diagonal(c.grad_outputs[0], c.attrs.i(0), c.attrs.i(1), c.attrs.i(2))};
  };
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    const int64_t n = self.dim() + 1;
    const int64_t d1 = wrap_dim(c.attrs.i(1), n, c.op), d2 = wrap_dim(c.attrs.i(2), n, c.op);
    TANDEM_CHECK(d1 != d2, ValueError, c.op, "diagonal dimensions cannot be identical, got ", c.attrs.i(1), " and ",
                 c.attrs.i(2));
    c.outputs.push_back(TensorMeta{self.dtype, diag_embed_sizes(self.sizes, c.attrs.i(0), d1, d2), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &out = c.outputs[0];
    kernels::fill_kernel(out, Scalar(0));
    const int64_t n = self.dim() + 1, offset = c.attrs.i(0);
    const int64_t d1 = wrap_dim(c.attrs.i(1), n, c.op), d2 = wrap_dim(c.attrs.i(2), n, c.op);
    if (self.numel() == 0) return;
    // The diagonal of the result as an alias: the other dims in order, then the diagonal.
    DimVector sizes, strides;
    for (int64_t k = 0; k < n; ++k)
      if (k != d1 && k != d2) {
        sizes.push_back(out.size(k));
        strides.push_back(out.stride(k));
      }
    sizes.push_back(self.size(-1));
    strides.push_back(out.stride(d1) + out.stride(d2));
    const int64_t start = offset >= 0 ? offset * out.stride(d2) : -offset * out.stride(d1);
    kernels::copy_kernel(make_alias(out, sizes, strides, out.storage_offset() + start), self);
  };
  return d;
}

// diag: a 1-D input becomes the `diagonal`-th diagonal of a square matrix (diag_embed), a
// 2-D input gives a copy of its `diagonal`-th diagonal.
TANDEM_REGISTER_OP(diag) {
  OpDef d;
  d.name = "diag";
  d.inputs = {{"self"}};
  d.attrs = {{"diagonal", int64_t{0}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    const Tensor& self = in[0];
    TANDEM_CHECK(self.dim() == 1 || self.dim() == 2, ShapeError, "diag", "got a ", self.dim(),
                 "-D tensor, expected a vector (1-D) or a matrix (2-D)");
    if (self.dim() == 1) return {diag_embed(self, a.i(0), 0, 1)};
    return {diagonal(self, a.i(0), 0, 1).clone()};
  };
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor take(const Tensor& self, const Tensor& index) { return dispatch1(op_take(), {self, index}); }
Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return dispatch1(op_index_copy(), {self, index, source}, {AttrValue(dim)});
}
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return dispatch1(op_index_fill(), {self, index}, {AttrValue(dim), AttrValue(value)});
}
Tensor diag_embed(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return dispatch1(op_diag_embed(), {self}, {AttrValue(offset), AttrValue(dim1), AttrValue(dim2)});
}
Tensor diag(const Tensor& self, int64_t diagonal) { return dispatch1(op_diag(), {self}, {AttrValue(diagonal)}); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::take(const Tensor& index) const { return tandem::take(*this, index); }
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return tandem::index_copy(*this, dim, index, source);
}
Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) {
  dispatch(*op_index_copy().inplace, {*this, index, source}, {AttrValue(dim)});
  return *this;
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  return tandem::index_fill(*this, dim, index, value);
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value) {
  dispatch(*op_index_fill().inplace, {*this, index}, {AttrValue(dim), AttrValue(value)});
  return *this;
}
Tensor Tensor::diag(int64_t diagonal) const { return tandem::diag(*this, diagonal); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return tandem::diag_embed(*this, offset, dim1, dim2);
}

}  // namespace tandem
