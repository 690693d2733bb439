// Gather/scatter-style ops of the index family: gather, scatter, scatter_add,
// scatter_reduce, index_select, index_add, masked_fill, masked_select, masked_scatter,
// nonzero. Meta validates dtypes and shapes; kernels check index values (data) before
// writing anything, so a bad index never leaves a half-written tensor behind.
#include "tandem/ops/index.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tandem/kernels/cpu/index.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/shape.h"
#include "tandem/ops/unary.h"

namespace tandem {

namespace {

int64_t size_or_1(const MetaRef& m, int64_t d) { return m.dim() == 0 ? 1 : m.sizes[d]; }
int64_t ndim_or_1(const MetaRef& m) { return std::max<int64_t>(1, m.dim()); }
int64_t size_or_1(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

// PyTorch's gather/scatter shape rules: index has as many dims as self (and src), 0-d
// counting as 1-d; index.size(d) <= self.size(d) for d != dim and <= src.size(d) for all d.
void scatter_gather_check(const char* op, const MetaRef& self, int64_t dim, const MetaRef& index, const MetaRef* src,
                          bool skip_if_empty) {
  TANDEM_CHECK(index.dtype == kInt64, TypeError, op, "expected dtype int64 for index, got ", dtype_name(index.dtype));
  TANDEM_CHECK(ndim_or_1(index) == ndim_or_1(self), ShapeError, op,
               "index tensor must have the same number of dims as the self tensor, got index shape ", index.sizes,
               " and self shape ", self.sizes);
  if (src)
    TANDEM_CHECK(ndim_or_1(index) == ndim_or_1(*src), ShapeError, op,
                 "index tensor must have the same number of dims as the src tensor, got index shape ", index.sizes,
                 " and src shape ", src->sizes);
  if (skip_if_empty && index.numel() == 0) return;
  for (int64_t d = 0; d < ndim_or_1(self); ++d) {
    const int64_t isz = size_or_1(index, d);
    if (d != dim)
      TANDEM_CHECK(isz <= size_or_1(self, d), ShapeError, op, "index shape ", index.sizes,
                   " must not exceed self shape ", self.sizes, " apart from dimension ", dim, " (mismatch at dimension ", d, ")");
    if (src)
      TANDEM_CHECK(isz <= size_or_1(*src, d), ShapeError, op, "index shape ", index.sizes, " must not exceed src shape ",
                   src->sizes, " (mismatch at dimension ", d, ")");
  }
}

void check_int_index_1d(const char* op, const MetaRef& index) {
  TANDEM_CHECK(index.dtype == kInt64 || index.dtype == kInt32, TypeError, op, "expected dtype int32 or int64 for index, got ",
               dtype_name(index.dtype));
  TANDEM_CHECK(index.dim() <= 1, IndexError, op, "index is supposed to be a vector (0-d or 1-d), got shape ", index.sizes);
}

void check_mask_dtype(const char* op, const MetaRef& mask) {
  TANDEM_CHECK(mask.dtype == kBool || mask.dtype == kUInt8, TypeError, op, "expected a bool (or uint8) mask, got dtype ",
               dtype_name(mask.dtype));
}

std::vector<int64_t> read_indices(const Tensor& index) {
  Tensor c = index.is_contiguous() ? index : kernels::contiguous_copy(index);
  const bool is64 = c.dtype() == kInt64;
  std::vector<int64_t> v(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) v[i] = kernels::load_index(static_cast<const char*>(c.data_ptr()), i, 1, is64);
  return v;
}

// A copy of `t` when it shares memory with the output being written (x.scatter_(0, i, x)).
Tensor unaliased(const Tensor& t, const Tensor& out) { return t.is_alias_of(out) ? kernels::contiguous_copy(t) : t; }

TensorMeta same_as_self(const MetaRef& self) { return TensorMeta{self.dtype, self.sizes.vec(), {}}; }

// Runs f(dst_ref, src_value) over every scattered element: line by line along dim,
// o[index[j]] op= s[j]. o1/i1/s1 are (at least) 1-d.
template <typename T, typename F>
void scatter_lines(const Tensor& o1, const Tensor& i1, const Tensor& s1, int64_t dim, F f) {
  const int64_t L = i1.size(dim), os = o1.stride(dim), is = i1.stride(dim), ss = s1.stride(dim);
  Tensor ops[3] = {o1, i1, s1};
  kernels::for_each_line(ArrayRef<Tensor>(ops, 3), i1.sizes(), dim, L, [&](char** p) {
    T* o = reinterpret_cast<T*>(p[0]);
    const int64_t* ix = reinterpret_cast<const int64_t*>(p[1]);
    const T* s = reinterpret_cast<const T*>(p[2]);
    for (int64_t j = 0; j < L; ++j) {
      T& dst = o[ix[j * is] * os];
      dst = f(dst, s[j * ss]);
    }
  });
}

// ---------------------------------------------------------------- backward rules
// PyTorch 1.13's derivatives (tools/autograd/derivatives.yaml), written with tandem ops so
// that they are differentiable again. Index and mask inputs get no gradient.
using Grads = std::vector<Tensor>;
using ops::reduce_grad;

Tensor as_bool(const Tensor& mask) { return mask.dtype() == kBool ? mask : mask.to(kBool); }

// The gradient of a src/source input computed on the index's shape (scatter reads only
// src[index-shaped region]), zero-padded to src's sizes. PyTorch raises here when src is
// larger than index; the elements scatter never reads get gradient 0.
Tensor src_grad(const Tensor& g, const Tensor& index, const MetaRef& src) {
  if (g.sizes().equals(src.sizes)) return g;
  if (index.numel() == 0) return zeros(src.sizes, g.dtype());
  Tensor r = g;
  if (r.dim() != src.dim()) r = r.reshape(DimVector(static_cast<size_t>(src.dim()), 1));  // 0-d vs [1]
  std::vector<int64_t> p;
  for (int64_t d = r.dim() - 1; d >= 0; --d) {
    p.push_back(0);
    p.push_back(src.sizes[d] - r.size(d));
  }
  return pad(r, p);
}

// src restricted to the region scatter reads (index's shape).
Tensor src_used(const Tensor& src, const Tensor& index) {
  if (src.sizes().equals(index.sizes()) || src.dim() == 0 || index.dim() == 0) return src;
  Tensor r = src;
  for (int64_t d = 0; d < r.dim(); ++d)
    if (r.size(d) != index.size(d)) r = narrow(r, d, 0, index.size(d));
  return r;
}

int64_t attr_dim(BackwardContext& c, size_t attr = 0) { return wrap_dim(c.attrs.i(attr), c.input_metas[0].dim(), c.op); }

// gather: the gradient is scattered back (added: an index may repeat).
Grads gather_backward(BackwardContext& c) {
  Grads r(2);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  r[0] = scatter_add(zeros(c.input_metas[0].sizes, g.dtype()), attr_dim(c), c.inputs[1], g);
  return r;
}

// scatter: the overwritten positions of self get nothing; src gets the gradient at the
// positions it was written to (gather; with repeated indices every writer gets it, as PyTorch).
Grads scatter_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  const int64_t dim = attr_dim(c);
  const Tensor& index = c.inputs[1];
  if (c.needs_input_grad[0]) r[0] = scatter(g, dim, index, Scalar(0));
  if (c.needs_input_grad.size() > 2 && c.needs_input_grad[2])
    r[2] = src_grad(gather(g, dim, index), index, c.input_metas[2]);
  return r;
}

Grads scatter_add_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  const Tensor& index = c.inputs[1];
  if (c.needs_input_grad[0]) r[0] = g;
  if (c.needs_input_grad[2]) r[2] = src_grad(gather(g, attr_dim(c), index), index, c.input_metas[2]);
  return r;
}

// scatter_reduce: PyTorch's scatter_reduce_backward for sum, prod, mean, amax, amin
// (amax/amin share the gradient evenly between tied elements).
Grads scatter_reduce_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  const int64_t dim = attr_dim(c);
  const Tensor &self = c.inputs[0], &index = c.inputs[1], &result = c.outputs[0];
  const Tensor src = src_used(c.inputs[2], index);
  const std::string& reduce = c.attrs.str(1);
  const bool include_self = c.attrs.b(2);
  Tensor gs, gsrc;
  if (reduce == "sum") {
    gs = g;
    gsrc = gather(g, dim, index);
  } else if (reduce == "prod") {
    // Products of the other elements, computed without dividing by zero.
    Tensor masked_self = masked_fill(self, self == Scalar(0), Scalar(1));
    gs = g * scatter_reduce(masked_self, dim, index, src, reduce, include_self) / masked_self;
    Tensor src_zero = src == Scalar(0);
    Tensor zeros_at = gather(scatter_add(zeros(self.sizes(), g.dtype()), dim, index, src_zero.to(g.dtype())), dim, index);
    Tensor single_zero = logical_and(src_zero, zeros_at == Scalar(1));
    Tensor masked_src_result = scatter_reduce(self, dim, index, masked_fill(src, single_zero, Scalar(1)), reduce, include_self);
    gsrc = where(single_zero, gather(g * masked_src_result, dim, index),
                 gather(g * result, dim, index) / masked_fill(src, src_zero, Scalar(1)));
  } else if (reduce == "mean") {
    Tensor n = include_self ? ones(g.sizes(), g.dtype()) : zeros(g.sizes(), g.dtype());
    n = scatter_add(n, dim, index, ones(src.sizes(), g.dtype()));
    n = masked_fill(n, n == Scalar(0), Scalar(1));
    gs = g / n;
    gsrc = gather(g, dim, index) / gather(n, dim, index);
  } else {  // amax, amin
    Tensor value = gather(result, dim, index);
    Tensor self_is = self == result, src_is = src == value;
    Tensor count = scatter_add(self_is.to(g.dtype()), dim, index, src_is.to(g.dtype()));
    Tensor share = g / count;
    gs = where(self_is, share, Scalar(0));
    gsrc = where(src_is, gather(share, dim, index), Scalar(0));
  }
  if (!include_self) gs = scatter(gs, dim, index, Scalar(0));
  if (c.needs_input_grad[0]) r[0] = gs;
  if (c.needs_input_grad[2]) r[2] = src_grad(gsrc, index, c.input_metas[2]);
  return r;
}

// index_select: the gradient is added back at the selected positions.
Grads index_select_backward(BackwardContext& c) {
  Grads r(2);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& self = c.input_metas[0];
  if (self.dim() == 0) {
    r[0] = g.reshape({});
    return r;
  }
  r[0] = index_add(zeros(self.sizes, g.dtype()), attr_dim(c), c.inputs[1], g);
  return r;
}

Grads index_add_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  if (c.needs_input_grad[0]) r[0] = g;
  if (c.needs_input_grad[2]) {
    const MetaRef& source = c.input_metas[2];
    Tensor gs = c.input_metas[0].dim() == 0 ? g.reshape({1}) : g;
    gs = index_select(gs, attr_dim(c), c.inputs[1]);
    if (!gs.sizes().equals(source.sizes)) gs = gs.reshape(source.sizes);
    const Scalar alpha = c.attrs.scalar(1);
    r[2] = alpha.to<double>() == 1.0 ? gs : gs * alpha;
  }
  return r;
}

// masked_fill: the filled positions get no gradient; a 0-d value tensor gets their sum.
Grads masked_fill_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  const Tensor mask = as_bool(c.inputs[1]);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(masked_fill(g, mask, Scalar(0)), c.input_metas[0]);
  if (c.needs_input_grad.size() > 2 && c.needs_input_grad[2]) r[2] = sum(where(mask, g, Scalar(0)));
  return r;
}

// masked_select: the 1-d gradient goes back to the selected positions (masked_scatter).
Grads masked_select_backward(BackwardContext& c) {
  Grads r(2);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const Tensor& mask = c.inputs[1];
  DimVector shape = ops::broadcast_shapes(c.op, c.input_metas[0].sizes, mask.sizes());
  r[0] = reduce_grad(masked_scatter(zeros(shape, g.dtype()), mask, g), c.input_metas[0]);
  return r;
}

// masked_scatter: self keeps the gradient where the mask is false; source's first
// count(mask) elements get the gradient of the positions they filled, the rest zero.
Grads masked_scatter_backward(BackwardContext& c) {
  Grads r(3);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  const Tensor mask = as_bool(c.inputs[1]);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(masked_fill(g, mask, Scalar(0)), c.input_metas[0]);
  if (c.needs_input_grad[2]) {
    const MetaRef& source = c.input_metas[2];
    Tensor sel = masked_select(g, mask);
    const int64_t extra = source.numel() - sel.numel();
    if (extra > 0) sel = cat({sel, zeros({extra}, g.dtype())});
    r[2] = sel.reshape(source.sizes);
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------- gather
TANDEM_REGISTER_OP(gather) {
  OpDef d;
  d.name = "gather";
  d.inputs = {{"self"}, {"index", false, false, false}};
  d.attrs = {{"dim", int64_t{0}}, {"sparse_grad", false}};
  d.save_inputs = 0b10;
  d.backward = gather_backward;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &index = c.inputs[1];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    scatter_gather_check(c.op, self, dim, index, nullptr, true);  // PyTorch skips size checks for an empty index
    c.outputs.push_back(TensorMeta{self.dtype, index.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    Tensor s1 = kernels::as_1d_if_scalar(self), i1 = kernels::as_1d_if_scalar(index), o1 = kernels::as_1d_if_scalar(out);
    kernels::check_index_range(index, s1.size(dim), false, c.op, dim);
    if (out.numel() == 0) return;
    const int64_t L = i1.size(dim), ss = s1.stride(dim), is = i1.stride(dim), os = o1.stride(dim);
    Tensor ops[3] = {o1, s1, i1};
    TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
      kernels::for_each_line(ArrayRef<Tensor>(ops, 3), i1.sizes(), dim, L, [&](char** p) {
        elem_t* o = reinterpret_cast<elem_t*>(p[0]);
        const elem_t* s = reinterpret_cast<const elem_t*>(p[1]);
        const int64_t* ix = reinterpret_cast<const int64_t*>(p[2]);
        for (int64_t j = 0; j < L; ++j) o[j * os] = s[ix[j * is] * ss];
      });
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

// ---------------------------------------------------------------- scatter family
// scatter(self, index, src?) with attrs (dim, value): src when given, else the scalar value.
TANDEM_REGISTER_OP(scatter) {
  OpDef d;
  d.name = "scatter";
  d.inputs = {{"self"}, {"index", false, false, false, InputOverlap::None}, {"src", true, true, true}};
  d.attrs = {{"dim", int64_t{0}}, {"value", std::monostate{}}};
  d.save_inputs = 0b010;
  d.backward = scatter_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &index = c.inputs[1];
    const bool has_src = c.inputs.size() > 2 && c.inputs[2].defined;
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    if (has_src) {
      TANDEM_CHECK(c.inputs[2].dtype == self.dtype, TypeError, c.op, "expected self and src to have the same dtype, got ",
                   dtype_name(self.dtype), " and ", dtype_name(c.inputs[2].dtype));
    } else {
      TANDEM_CHECK(!c.attrs.is_none(1), ValueError, c.op, "expected a src tensor or a scalar value, got neither");
      kernels::check_scalar_fits(c.attrs.scalar(1), self.dtype, c.op);
    }
    scatter_gather_check(c.op, self, dim, index, has_src ? &c.inputs[2] : nullptr, true);
    c.outputs.push_back(same_as_self(self));
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const bool has_src = c.inputs.size() > 2 && c.inputs[2].defined();
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    Tensor o1 = kernels::as_1d_if_scalar(out), i1 = kernels::as_1d_if_scalar(index);
    kernels::check_index_range(index, o1.size(dim), false, c.op, dim);
    Tensor src = has_src ? unaliased(c.inputs[2], out) : Tensor();
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (index.numel() == 0) return;
    if (has_src) {
      Tensor s1 = kernels::as_1d_if_scalar(src);
      TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
        scatter_lines<elem_t>(o1, i1, s1, dim, [](elem_t, elem_t s) { return s; });
      });
      return;
    }
    const Scalar value = c.attrs.scalar(1);
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      const scalar_t v = value.to<scalar_t>();
      const int64_t L = i1.size(dim), os = o1.stride(dim), is = i1.stride(dim);
      Tensor ops[2] = {o1, i1};
      kernels::for_each_line(ArrayRef<Tensor>(ops, 2), i1.sizes(), dim, L, [&](char** p) {
        scalar_t* o = reinterpret_cast<scalar_t*>(p[0]);
        const int64_t* ix = reinterpret_cast<const int64_t*>(p[1]);
        for (int64_t j = 0; j < L; ++j) o[ix[j * is] * os] = v;
      });
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

namespace {
void scatter_src_meta(MetaContext& c) {
  const MetaRef &self = c.inputs[0], &index = c.inputs[1], &src = c.inputs[2];
  const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
  TANDEM_CHECK(src.dtype == self.dtype, TypeError, c.op, "expected self and src to have the same dtype, got ",
               dtype_name(self.dtype), " and ", dtype_name(src.dtype));
  scatter_gather_check(c.op, self, dim, index, &src, true);
  c.outputs.push_back(same_as_self(self));
}

enum class Reduce { Sum, Prod, Mean, Amax, Amin };
std::optional<Reduce> parse_reduce(const std::string& s) {
  if (s == "sum") return Reduce::Sum;
  if (s == "prod") return Reduce::Prod;
  if (s == "mean") return Reduce::Mean;
  if (s == "amax") return Reduce::Amax;
  if (s == "amin") return Reduce::Amin;
  return std::nullopt;
}

template <typename T>
T reduce_combine(Reduce r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r == Reduce::Prod || r == Reduce::Amin) ? (a && b) : (a || b);
  } else {
    using M = kernels::opmath_t<T>;
    const M x = static_cast<M>(a), y = static_cast<M>(b);
    switch (r) {
      case Reduce::Sum:
      case Reduce::Mean: return static_cast<T>(x + y);
      case Reduce::Prod: return static_cast<T>(x * y);
      case Reduce::Amax:
      case Reduce::Amin:
        if constexpr (std::is_floating_point_v<M>) {
          if (std::isnan(x)) return a;
          if (std::isnan(y)) return b;
        }
        return r == Reduce::Amax ? (y > x ? b : a) : (y < x ? b : a);
    }
    return a;
  }
}

template <typename T>
T reduce_identity(Reduce r) {
  if constexpr (std::is_same_v<T, bool>) {
    return r == Reduce::Prod || r == Reduce::Amin;
  } else {
    using M = kernels::opmath_t<T>;
    switch (r) {
      case Reduce::Sum:
      case Reduce::Mean: return static_cast<T>(M(0));
      case Reduce::Prod: return static_cast<T>(M(1));
      case Reduce::Amax:
        if constexpr (std::is_floating_point_v<M>) return static_cast<T>(-std::numeric_limits<M>::infinity());
        else return std::numeric_limits<T>::lowest();
      case Reduce::Amin:
        if constexpr (std::is_floating_point_v<M>) return static_cast<T>(std::numeric_limits<M>::infinity());
        else return std::numeric_limits<T>::max();
    }
    return T{};
  }
}

// Shared body of scatter_add (Sum, include_self) and scatter_reduce.
void scatter_reduce_kernel(KernelContext& c, Reduce r, bool include_self) {
  const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
  const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
  Tensor o1 = kernels::as_1d_if_scalar(out), i1 = kernels::as_1d_if_scalar(index);
  kernels::check_index_range(index, o1.size(dim), false, c.op, dim);
  Tensor src = unaliased(c.inputs[2], out);
  if (!out.is_same(self)) kernels::copy_kernel(out, self);
  if (index.numel() == 0) return;
  Tensor s1 = kernels::as_1d_if_scalar(src);
  TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
    using T = scalar_t;
    if (!include_self) {
      const T id = reduce_identity<T>(r);
      scatter_lines<T>(o1, i1, s1, dim, [id](T, T) { return id; });
    }
    if (r != Reduce::Mean) {
      scatter_lines<T>(o1, i1, s1, dim, [r](T a, T b) { return reduce_combine<T>(r, a, b); });
      return;
    }
    if constexpr (!std::is_same_v<T, bool>) {
      // mean: sum, count the contributions per output element, then divide.
      Tensor counts = empty_tensor(o1.sizes(), kInt64);
      kernels::fill_kernel(counts, include_self ? 1 : 0);
      const int64_t L = i1.size(dim), os = o1.stride(dim), is = i1.stride(dim), ss = s1.stride(dim), cs = counts.stride(dim);
      Tensor ops[4] = {o1, i1, s1, counts};
      kernels::for_each_line(ArrayRef<Tensor>(ops, 4), i1.sizes(), dim, L, [&](char** p) {
        T* o = reinterpret_cast<T*>(p[0]);
        const int64_t* ix = reinterpret_cast<const int64_t*>(p[1]);
        const T* s = reinterpret_cast<const T*>(p[2]);
        int64_t* cnt = reinterpret_cast<int64_t*>(p[3]);
        for (int64_t j = 0; j < L; ++j) {
          const int64_t k = ix[j * is];
          o[k * os] = reduce_combine<T>(Reduce::Sum, o[k * os], s[j * ss]);
          ++cnt[k * cs];
        }
      });
      Tensor fin[2] = {o1, counts};
      auto it = kernels::ElementwiseIter::make(ArrayRef<Tensor>(fin, 2));
      kernels::for_each(it, [&](char** p, const int64_t* st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t k;
          std::memcpy(&k, p[1] + i * st[1], 8);
          if (k == 0) continue;  // nothing scattered here and self excluded: keep self
          T v;
          std::memcpy(&v, p[0] + i * st[0], sizeof(T));
          if constexpr (std::is_integral_v<T>) {
            int64_t a = static_cast<int64_t>(v), q = a / k;
            if ((a % k != 0) && ((a < 0) != (k < 0))) --q;  // floor division, as PyTorch
            v = static_cast<T>(q);
          } else {
            using M = kernels::opmath_t<T>;
            v = static_cast<T>(static_cast<M>(v) / static_cast<M>(k));
          }
          std::memcpy(p[0] + i * st[0], &v, sizeof(T));
        }
      });
    }
  });
}
}  // namespace

TANDEM_REGISTER_OP(scatter_add) {
  OpDef d;
  d.name = "scatter_add";
  d.autocast = Autocast::Promote;
  d.inputs = {{"self"}, {"index", false, false, false, InputOverlap::None}, {"src"}};
  d.attrs = {{"dim", int64_t{0}}};
  d.save_inputs = 0b010;
  d.backward = scatter_add_backward;
  d.inplace_variant = true;
  d.meta = scatter_src_meta;
  d.cpu_kernel = [](KernelContext& c) { scatter_reduce_kernel(c, Reduce::Sum, true); };
  d.raises_on_data = true;  // an index out of range
  return d;
}

TANDEM_REGISTER_OP(scatter_reduce) {
  OpDef d;
  d.name = "scatter_reduce";
  d.inputs = {{"self"}, {"index", false, false, false, InputOverlap::None}, {"src"}};
  d.attrs = {{"dim", int64_t{0}}, {"reduce", std::string("sum")}, {"include_self", true}};
  d.save_inputs = 0b111;
  d.save_outputs = 0b1;
  d.backward = scatter_reduce_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    auto r = parse_reduce(c.attrs.str(1));
    TANDEM_CHECK(r.has_value(), ValueError, c.op, "reduce argument must be either sum, prod, mean, amax or amin, got \"",
                 c.attrs.str(1), "\"");
    TANDEM_CHECK(!(*r == Reduce::Mean && c.inputs[0].dtype == kBool), TypeError, c.op,
                 "reduce \"mean\" is not supported for dtype bool, expected a numeric dtype");
    scatter_src_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) { scatter_reduce_kernel(c, *parse_reduce(c.attrs.str(1)), c.attrs.b(2)); };
  d.raises_on_data = true;  // an index out of range
  return d;
}

// ---------------------------------------------------------------- index_select, index_add
TANDEM_REGISTER_OP(index_select) {
  OpDef d;
  d.name = "index_select";
  d.inputs = {{"self"}, {"index", false, false, false}};
  d.attrs = {{"dim", int64_t{0}}};
  d.save_inputs = 0b10;
  d.backward = index_select_backward;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &index = c.inputs[1];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    check_int_index_1d(c.op, index);
    DimVector sizes = self.sizes.vec();
    if (self.dim() > 0) sizes[dim] = index.numel();  // a 0-d self gives a 0-d result, as in PyTorch
    c.outputs.push_back(TensorMeta{self.dtype, std::move(sizes), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    kernels::check_index_range(index, size_or_1(self, dim), false, c.op, dim);
    if (out.numel() == 0) return;
    if (self.dim() == 0) {
      kernels::copy_kernel(out, self);
      return;
    }
    const std::vector<int64_t> idx = read_indices(index);
    const int64_t N = static_cast<int64_t>(idx.size());
    TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
      if (self.is_contiguous()) {  // out is fresh and contiguous: copy whole inner blocks
        int64_t outer = 1, inner = 1;
        for (int64_t k = 0; k < dim; ++k) outer *= self.size(k);
        for (int64_t k = dim + 1; k < self.dim(); ++k) inner *= self.size(k);
        const int64_t S = self.size(dim);
        const elem_t* s = static_cast<const elem_t*>(self.data_ptr());
        elem_t* o = static_cast<elem_t*>(out.data_ptr());
        parallel_for(0, outer * N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, inner)), [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) {
            const int64_t ou = t / N, j = t % N;
            std::memcpy(o + t * inner, s + (ou * S + idx[j]) * inner, static_cast<size_t>(inner) * sizeof(elem_t));
          }
        });
        return;
      }
      const int64_t os = out.stride(dim), ss = self.stride(dim);
      Tensor ops[2] = {out, self};
      kernels::for_each_line(ArrayRef<Tensor>(ops, 2), out.sizes(), dim, N, [&](char** p) {
        elem_t* o = reinterpret_cast<elem_t*>(p[0]);
        const elem_t* s = reinterpret_cast<const elem_t*>(p[1]);
        for (int64_t j = 0; j < N; ++j) o[j * os] = s[idx[j] * ss];
      });
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

TANDEM_REGISTER_OP(index_add) {
  OpDef d;
  d.name = "index_add";
  d.inputs = {{"self"}, {"index", false, false, false, InputOverlap::None}, {"source"}};
  d.attrs = {{"dim", int64_t{0}}, {"alpha", Scalar(1)}};
  d.save_inputs = 0b010;
  d.backward = index_add_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &index = c.inputs[1], &source = c.inputs[2];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    check_int_index_1d(c.op, index);
    TANDEM_CHECK(source.dtype == self.dtype, TypeError, c.op, "self (", dtype_name(self.dtype), ") and source (",
                 dtype_name(source.dtype), ") must have the same dtype");
    TANDEM_CHECK(ndim_or_1(source) == ndim_or_1(self), ShapeError, c.op, "source shape ", source.sizes,
                 " and self shape ", self.sizes, " must have the same number of dims");
    TANDEM_CHECK(index.numel() == size_or_1(source, dim), ShapeError, c.op, "number of indices (", index.numel(),
                 ") should be equal to source.size(dim) (", size_or_1(source, dim), ") for dim ", dim);
    for (int64_t k = 0; k < ndim_or_1(self); ++k)
      if (k != dim)
        TANDEM_CHECK(size_or_1(source, k) == size_or_1(self, k), ShapeError, c.op, "source shape ", source.sizes,
                     " must match self shape ", self.sizes, " except in dimension ", dim, " (mismatch at dimension ", k, ")");
    c.outputs.push_back(same_as_self(self));
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
    const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
    kernels::check_index_range(index, size_or_1(self, dim), false, c.op, dim);
    Tensor src = unaliased(c.inputs[2], out);
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (index.numel() == 0 || out.numel() == 0) return;
    Tensor o1 = kernels::as_1d_if_scalar(out), s1 = kernels::as_1d_if_scalar(src);
    const std::vector<int64_t> idx = read_indices(index);
    const int64_t N = static_cast<int64_t>(idx.size()), os = o1.stride(dim), ss = s1.stride(dim);
    const Scalar alpha = c.attrs.scalar(1);
    Tensor ops[2] = {o1, s1};
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      using T = scalar_t;
      using M = kernels::opmath_t<T>;
      const M al = alpha.to<M>();
      kernels::for_each_line(ArrayRef<Tensor>(ops, 2), s1.sizes(), dim, N, [&](char** p) {
        T* o = reinterpret_cast<T*>(p[0]);
        const T* s = reinterpret_cast<const T*>(p[1]);
        for (int64_t j = 0; j < N; ++j) {
          T& dst = o[idx[j] * os];
          if constexpr (std::is_same_v<T, bool>) dst = dst || (al && s[j * ss]);
          else dst = static_cast<T>(static_cast<M>(dst) + al * static_cast<M>(s[j * ss]));
        }
      });
    });
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

// ---------------------------------------------------------------- masks
// masked_fill(self, mask, value?) with attr value: the 0-d value tensor when given, else the scalar.
TANDEM_REGISTER_OP(masked_fill) {
  OpDef d;
  d.name = "masked_fill";
  d.inputs = {{"self"}, {"mask", false, false, false}, {"value", false, true, true, InputOverlap::Any}};
  d.attrs = {{"value", std::monostate{}}};
  d.save_inputs = 0b010;
  d.backward = masked_fill_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &mask = c.inputs[1];
    check_mask_dtype(c.op, mask);
    if (c.inputs.size() > 2 && c.inputs[2].defined) {
      TANDEM_CHECK(c.inputs[2].dim() == 0, ShapeError, c.op, "only supports a 0-dimensional value tensor, got shape ",
                   c.inputs[2].sizes);
    } else {
      TANDEM_CHECK(!c.attrs.is_none(0), ValueError, c.op, "expected a value (scalar or 0-d tensor), got neither");
      kernels::check_scalar_fits(c.attrs.scalar(0), self.dtype, c.op);
    }
    c.outputs.push_back(TensorMeta{self.dtype, ops::broadcast_shapes(c.op, self.sizes, mask.sizes), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &mask = c.inputs[1], &out = c.outputs[0];
    Scalar value;
    if (c.inputs.size() > 2 && c.inputs[2].defined()) {
      value = c.inputs[2].item();
      kernels::check_scalar_fits(value, out.dtype(), c.op);
    } else {
      value = c.attrs.scalar(0);
    }
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (out.numel() == 0) return;
    Tensor ops[2] = {out, mask};
    auto it = kernels::ElementwiseIter::make(ArrayRef<Tensor>(ops, 2));
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      const scalar_t v = value.to<scalar_t>();
      kernels::for_each(it, [&](char** p, const int64_t* st, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          if (*reinterpret_cast<const uint8_t*>(p[1] + i * st[1])) std::memcpy(p[0] + i * st[0], &v, sizeof(scalar_t));
      });
    });
  };
  return d;
}

TANDEM_REGISTER_OP(masked_select) {
  OpDef d;
  d.name = "masked_select";
  d.inputs = {{"self"}, {"mask", false, false, false}};
  d.save_inputs = 0b10;  // the mask; self's shape comes from the input metas
  d.backward = masked_select_backward;
  d.dynamic_shape = true;
  d.meta = [](MetaContext& c) {
    check_mask_dtype(c.op, c.inputs[1]);
    ops::broadcast_shapes(c.op, c.inputs[0].sizes, c.inputs[1].sizes);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, {-1}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    DimVector shape = ops::broadcast_shapes(c.op, c.inputs[0].sizes(), c.inputs[1].sizes());
    Tensor self = kernels::expand_alias(c.inputs[0], shape), mask = kernels::expand_alias(c.inputs[1], shape);
    const int64_t n = kernels::count_nonzero(mask);
    Tensor out = empty_tensor({n}, self.dtype());
    if (n > 0) {
      Tensor ops[2] = {self, mask};
      auto it = kernels::ElementwiseIter::make(ArrayRef<Tensor>(ops, 2), shape);
      TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
        elem_t* o = static_cast<elem_t*>(out.data_ptr());
        // Serial and in logical row-major order (ElementwiseIter never reorders dims).
        kernels::for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t m) {
          for (int64_t i = 0; i < m; ++i)
            if (*reinterpret_cast<const uint8_t*>(p[1] + i * st[1])) std::memcpy(o++, p[0] + i * st[0], sizeof(elem_t));
        });
      });
    }
    c.outputs.push_back(out);
  };
  return d;
}

TANDEM_REGISTER_OP(masked_scatter) {
  OpDef d;
  d.name = "masked_scatter";
  d.inputs = {{"self"}, {"mask", false, false, false}, {"source"}};
  d.save_inputs = 0b010;
  d.backward = masked_scatter_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &mask = c.inputs[1], &source = c.inputs[2];
    check_mask_dtype(c.op, mask);
    TANDEM_CHECK(source.dtype == self.dtype, TypeError, c.op, "expected self and source to have the same dtype, got ",
                 dtype_name(self.dtype), " and ", dtype_name(source.dtype));
    c.outputs.push_back(TensorMeta{self.dtype, ops::broadcast_shapes(c.op, self.sizes, mask.sizes), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &out = c.outputs[0];
    Tensor mask = kernels::expand_alias(c.inputs[1], out.sizes());
    const int64_t n = kernels::count_nonzero(mask);
    TANDEM_CHECK(c.inputs[2].numel() >= n, ShapeError, c.op, "source has ", c.inputs[2].numel(),
                 " elements, expected at least ", n, " (the number of true values in mask)");
    Tensor src = kernels::contiguous_copy(c.inputs[2]);
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (n == 0) return;
    Tensor ops[2] = {out, mask};
    auto it = kernels::ElementwiseIter::make(ArrayRef<Tensor>(ops, 2));
    TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
      const elem_t* s = static_cast<const elem_t*>(src.data_ptr());
      kernels::for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t m) {
        for (int64_t i = 0; i < m; ++i)
          if (*reinterpret_cast<const uint8_t*>(p[1] + i * st[1])) std::memcpy(p[0] + i * st[0], s++, sizeof(elem_t));
      });
    });
  };
  d.raises_on_data = true;  // a mask with more ones than source has elements
  return d;
}

TANDEM_REGISTER_OP(nonzero) {
  OpDef d;
  d.name = "nonzero";
  d.inputs = {{"self", false, false, false}};
  d.dynamic_shape = true;
  d.output_differentiable = {false};
  d.meta = [](MetaContext& c) { c.outputs.push_back(TensorMeta{kInt64, {-1, c.inputs[0].dim()}, {}}); };
  d.cpu_kernel = [](KernelContext& c) { c.outputs.push_back(kernels::nonzero(c.inputs[0])); };
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  return dispatch1(op_gather(), {self, index}, {AttrValue(dim), AttrValue(sparse_grad)});
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  TANDEM_CHECK(src.defined(), ValueError, "scatter", "got an undefined src tensor");
  return dispatch1(op_scatter(), {self, index, src}, {AttrValue(dim)});
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return dispatch1(op_scatter(), {self, index, Tensor()}, {AttrValue(dim), AttrValue(value)});
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(op_scatter_add(), {self, index, src}, {AttrValue(dim)});
}
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  return dispatch1(op_scatter_reduce(), {self, index, src}, {AttrValue(dim), AttrValue(reduce), AttrValue(include_self)});
}
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return dispatch1(op_index_select(), {self, index}, {AttrValue(dim)});
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return dispatch1(op_index_add(), {self, index, source}, {AttrValue(dim), AttrValue(alpha)});
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return dispatch1(op_masked_fill(), {self, mask, Tensor()}, {AttrValue(value)});
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  TANDEM_CHECK(value.defined(), ValueError, "masked_fill", "got an undefined value tensor");
  return dispatch1(op_masked_fill(), {self, mask, value});
}
Tensor masked_select(const Tensor& self, const Tensor& mask) { return dispatch1(op_masked_select(), {self, mask}); }
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  return dispatch1(op_masked_scatter(), {self, mask, source});
}
Tensor nonzero(const Tensor& self) { return dispatch1(op_nonzero(), {self}); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::gather(int64_t dim, const Tensor& index, bool sparse_grad) const {
  return tandem::gather(*this, dim, index, sparse_grad);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tandem::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return tandem::scatter(*this, dim, index, value);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  TANDEM_CHECK(src.defined(), ValueError, "scatter_", "got an undefined src tensor");
  dispatch(*op_scatter().inplace, {*this, index, src}, {AttrValue(dim)});
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) {
  dispatch(*op_scatter().inplace, {*this, index, Tensor()}, {AttrValue(dim), AttrValue(value)});
  return *this;
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tandem::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  dispatch(*op_scatter_add().inplace, {*this, index, src}, {AttrValue(dim)});
  return *this;
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                              bool include_self) const {
  return tandem::scatter_reduce(*this, dim, index, src, reduce, include_self);
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                                bool include_self) {
  dispatch(*op_scatter_reduce().inplace, {*this, index, src}, {AttrValue(dim), AttrValue(reduce), AttrValue(include_self)});
  return *this;
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tandem::index_select(*this, dim, index); }
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return tandem::index_add(*this, dim, index, source, alpha);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  dispatch(*op_index_add().inplace, {*this, index, source}, {AttrValue(dim), AttrValue(alpha)});
  return *this;
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const { return tandem::masked_fill(*this, mask, value); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const { return tandem::masked_fill(*this, mask, value); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  dispatch(*op_masked_fill().inplace, {*this, mask, Tensor()}, {AttrValue(value)});
  return *this;
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
  TANDEM_CHECK(value.defined(), ValueError, "masked_fill_", "got an undefined value tensor");
  dispatch(*op_masked_fill().inplace, {*this, mask, value});
  return *this;
}
Tensor Tensor::masked_select(const Tensor& mask) const { return tandem::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return tandem::masked_scatter(*this, mask, source);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) {
  dispatch(*op_masked_scatter().inplace, {*this, mask, source});
  return *this;
}
Tensor Tensor::nonzero() const { return tandem::nonzero(*this); }

}  // namespace tandem
