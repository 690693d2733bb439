// Sorting and selection ops of the index family: sort, argsort, topk, kthvalue, unique,
// searchsorted, bincount. Orderings treat NaN as the greatest value (PyTorch's rule) and
// compare float16/bfloat16 in float. The values outputs of sort/topk/kthvalue are
// differentiable (the gradient goes to the selected positions); indices, unique,
// searchsorted and bincount are not (as in PyTorch).
#include <algorithm>
#include <numeric>

#include "tandem/kernels/cpu/index.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/op_utils.h"

namespace tandem {

namespace {

int64_t size_or_1(const MetaRef& m, int64_t d) { return m.dim() == 0 ? 1 : m.sizes[d]; }

void reject_bool(const char* op, DType t) {
  TANDEM_CHECK(t != kBool, TypeError, op, "got dtype bool, expected a numeric dtype (PyTorch has no bool kernel for ", op, ")");
}

// Sorts one line: fills order[0..n) with the positions of x in ascending (or descending)
// NaN-greatest order, stable.
template <typename M>
void order_line(const std::vector<M>& x, std::vector<int64_t>& order, bool descending) {
  order.resize(x.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  if (descending)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return kernels::nan_greatest_less(x[b], x[a]); });
  else
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return kernels::nan_greatest_less(x[a], x[b]); });
}

// Runs f(values_line_in, n, in_stride, line_out_ptrs...) over the lines of `self` along dim:
// f(const T* in, int64_t in_stride, char** outs). `outs` are the other operands.
template <typename T, typename F>
void for_lines(const Tensor& self, int64_t dim, ArrayRef<Tensor> outs, IntArrayRef shape, F f) {
  SmallVec<Tensor, 4> ops;
  ops.push_back(self);
  for (const Tensor& t : outs) ops.push_back(t);
  const int64_t L = self.size(dim);
  kernels::for_each_line(ops.ref(), shape, dim, L, [&](char** p) { f(reinterpret_cast<const T*>(p[0]), p + 1); });
}

// Backward of the values output of sort/topk/kthvalue: the gradient goes to the selected
// positions of self (scatter along dim at the saved indices; the indices are distinct
// within a line). `keepdim` false means the outputs lost dim (kthvalue).
std::vector<Tensor> selected_values_backward(BackwardContext& c, int64_t dim_attr, bool keepdim) {
  std::vector<Tensor> r(1);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& self = c.input_metas[0];
  if (self.dim() == 0) {
    r[0] = g.reshape({});
    return r;
  }
  const int64_t dim = wrap_dim(c.attrs.i(dim_attr), self.dim(), c.op);
  Tensor gi = keepdim ? g : g.unsqueeze(dim);
  Tensor idx = keepdim ? c.outputs[1] : c.outputs[1].unsqueeze(dim);
  r[0] = scatter(zeros(self.sizes, g.dtype()), dim, idx, gi);
  return r;
}

}  // namespace

// ---------------------------------------------------------------- sort
TANDEM_REGISTER_OP(sort) {
  OpDef d;
  d.name = "sort";
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{-1}}, {"descending", false}, {"stable", false}};
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 0b10;
  d.backward = [](BackwardContext& c) { return selected_values_backward(c, 0, true); };
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    wrap_dim(c.attrs.i(0), self.dim(), c.op);
    c.outputs.push_back(TensorMeta{self.dtype, self.sizes.vec(), {}});
    c.outputs.push_back(TensorMeta{kInt64, self.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor self = kernels::as_1d_if_scalar(c.inputs[0]);
    const Tensor vals = kernels::as_1d_if_scalar(c.outputs[0]), idx = kernels::as_1d_if_scalar(c.outputs[1]);
    if (self.numel() == 0) return;
    const int64_t dim = wrap_dim(c.attrs.i(0), c.inputs[0].dim(), c.op);
    const bool desc = c.attrs.b(1);
    const int64_t L = self.size(dim), ss = self.stride(dim), vs = vals.stride(dim), is = idx.stride(dim);
    Tensor outs[2] = {vals, idx};
    TANDEM_DISPATCH_ALL_TYPES(self.dtype(), c.op, [&] {
      using T = scalar_t;
      using M = kernels::opmath_t<T>;
      for_lines<T>(self, dim, ArrayRef<Tensor>(outs, 2), self.sizes(), [&](const T* in, char** o) {
        std::vector<M> x(static_cast<size_t>(L));
        std::vector<int64_t> order;
        for (int64_t j = 0; j < L; ++j) x[j] = static_cast<M>(in[j * ss]);
        order_line(x, order, desc);
        T* ov = reinterpret_cast<T*>(o[0]);
        int64_t* oi = reinterpret_cast<int64_t*>(o[1]);
        for (int64_t j = 0; j < L; ++j) {
          ov[j * vs] = in[order[j] * ss];
          oi[j * is] = order[j];
        }
      });
    });
  };
  return d;
}

TANDEM_REGISTER_OP(argsort) {
  OpDef d;
  d.name = "argsort";
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{-1}}, {"descending", false}, {"stable", false}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    return {std::get<1>(sort(in[0], a.i(0), a.b(1), a.b(2)))};
  };
  return d;
}

// ---------------------------------------------------------------- topk, kthvalue
TANDEM_REGISTER_OP(topk) {
  OpDef d;
  d.name = "topk";
  d.inputs = {{"self"}};
  d.attrs = {{"k", int64_t{1}}, {"dim", int64_t{-1}}, {"largest", true}, {"sorted", true}};
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 0b10;
  d.backward = [](BackwardContext& c) { return selected_values_backward(c, 1, true); };
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    reject_bool(c.op, self.dtype);
    const int64_t dim = wrap_dim(c.attrs.i(1), self.dim(), c.op);
    const int64_t k = c.attrs.i(0), size = size_or_1(self, dim);
    TANDEM_CHECK(k >= 0 && k <= size, ValueError, c.op, "selected index k out of range: got k = ", k,
                 ", expected 0 <= k <= ", size, " (the size of dim ", dim, ")");
    DimVector sizes = self.sizes.vec();
    if (self.dim() > 0) sizes[dim] = k;
    c.outputs.push_back(TensorMeta{self.dtype, sizes, {}});
    c.outputs.push_back(TensorMeta{kInt64, sizes, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& in0 = c.inputs[0];
    if (in0.dim() == 0) {  // PyTorch returns the element itself (0-d) for k = 0 or 1
      kernels::copy_kernel(c.outputs[0], in0);
      kernels::fill_kernel(c.outputs[1], 0);
      return;
    }
    const int64_t dim = wrap_dim(c.attrs.i(1), in0.dim(), c.op);
    const int64_t k = c.attrs.i(0);
    const bool largest = c.attrs.b(2);
    const Tensor &vals = c.outputs[0], &idx = c.outputs[1];
    if (vals.numel() == 0) return;
    const int64_t L = in0.size(dim), ss = in0.stride(dim), vs = vals.stride(dim), is = idx.stride(dim);
    Tensor outs[2] = {vals, idx};
    DimVector shape = in0.sizes().vec();
    TANDEM_DISPATCH_ALL_TYPES(in0.dtype(), c.op, [&] {
      using T = scalar_t;
      using M = kernels::opmath_t<T>;
      for_lines<T>(in0, dim, ArrayRef<Tensor>(outs, 2), shape, [&](const T* in, char** o) {
        std::vector<M> x(static_cast<size_t>(L));
        std::vector<int64_t> order(static_cast<size_t>(L));
        for (int64_t j = 0; j < L; ++j) x[j] = static_cast<M>(in[j * ss]);
        std::iota(order.begin(), order.end(), int64_t{0});
        // Best first; equal values: lower index first (deterministic).
        auto better = [&](int64_t a, int64_t b) {
          if (largest) {
            if (kernels::nan_greatest_less(x[b], x[a])) return true;
            if (kernels::nan_greatest_less(x[a], x[b])) return false;
          } else {
            if (kernels::nan_greatest_less(x[a], x[b])) return true;
            if (kernels::nan_greatest_less(x[b], x[a])) return false;
          }
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
        T* ov = reinterpret_cast<T*>(o[0]);
        int64_t* oi = reinterpret_cast<int64_t*>(o[1]);
        for (int64_t j = 0; j < k; ++j) {
          ov[j * vs] = in[order[j] * ss];
          oi[j * is] = order[j];
        }
      });
    });
  };
  return d;
}

TANDEM_REGISTER_OP(kthvalue) {
  OpDef d;
  d.name = "kthvalue";
  d.inputs = {{"self"}};
  d.attrs = {{"k", int64_t{1}}, {"dim", int64_t{-1}}, {"keepdim", false}};
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 0b10;
  d.backward = [](BackwardContext& c) { return selected_values_backward(c, 1, c.attrs.b(2)); };
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    reject_bool(c.op, self.dtype);
    const int64_t dim = wrap_dim(c.attrs.i(1), self.dim(), c.op);
    const int64_t k = c.attrs.i(0), size = size_or_1(self, dim);
    TANDEM_CHECK(size > 0, IndexError, c.op, "expected reduction dim ", dim, " to have non-zero size, got shape ", self.sizes);
    TANDEM_CHECK(k >= 1 && k <= size, ValueError, c.op, "selected number k out of range for dimension ", dim, ": got k = ",
                 k, ", expected 1 <= k <= ", size);
    DimVector sizes = self.sizes.vec();
    if (self.dim() > 0) {
      if (c.attrs.b(2)) sizes[dim] = 1;
      else sizes.erase(sizes.begin() + dim);
    }
    c.outputs.push_back(TensorMeta{self.dtype, sizes, {}});
    c.outputs.push_back(TensorMeta{kInt64, sizes, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& in0 = c.inputs[0];
    if (in0.dim() == 0) {
      kernels::copy_kernel(c.outputs[0], in0);
      kernels::fill_kernel(c.outputs[1], 0);
      return;
    }
    if (c.outputs[0].numel() == 0) return;
    const int64_t dim = wrap_dim(c.attrs.i(1), in0.dim(), c.op);
    const int64_t k = c.attrs.i(0);
    // Outputs seen with a size-1 reduced dim (keepdim layout) so lines line up with self.
    DimVector kd = in0.sizes().vec();
    kd[dim] = 1;
    auto keep = [&](const Tensor& t) {
      DimVector st = contiguous_strides(kd);
      return kernels::restride(t, kd, st);
    };
    Tensor outs[2] = {keep(c.outputs[0]), keep(c.outputs[1])};
    const int64_t L = in0.size(dim), ss = in0.stride(dim);
    TANDEM_DISPATCH_ALL_TYPES(in0.dtype(), c.op, [&] {
      using T = scalar_t;
      using M = kernels::opmath_t<T>;
      for_lines<T>(in0, dim, ArrayRef<Tensor>(outs, 2), in0.sizes(), [&](const T* in, char** o) {
        std::vector<M> x(static_cast<size_t>(L));
        std::vector<int64_t> order(static_cast<size_t>(L));
        for (int64_t j = 0; j < L; ++j) x[j] = static_cast<M>(in[j * ss]);
        std::iota(order.begin(), order.end(), int64_t{0});
        std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), [&](int64_t a, int64_t b) {
          if (kernels::nan_greatest_less(x[a], x[b])) return true;
          if (kernels::nan_greatest_less(x[b], x[a])) return false;
          return a < b;
        });
        *reinterpret_cast<T*>(o[0]) = in[order[k - 1] * ss];
        *reinterpret_cast<int64_t*>(o[1]) = order[k - 1];
      });
    });
  };
  return d;
}

// ---------------------------------------------------------------- unique
namespace {
// Unique over rows of a contiguous [n, w] block (w = 1 for unique without dim). Fills
// `first` (row index of each group's first sorted member), inverse and counts.
template <typename T>
void unique_rows(const T* data, int64_t n, int64_t w, std::vector<int64_t>& first, int64_t* inverse,
                 std::vector<int64_t>& counts) {
  using M = kernels::opmath_t<T>;
  auto at = [&](int64_t r, int64_t j) { return static_cast<M>(data[r * w + j]); };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < w; ++j) {
      if (kernels::nan_greatest_less(at(a, j), at(b, j))) return true;
      if (kernels::nan_greatest_less(at(b, j), at(a, j))) return false;
    }
    return false;
  });
  auto same = [&](int64_t a, int64_t b) {  // NaN never equals anything: every NaN is unique
    for (int64_t j = 0; j < w; ++j)
      if (!(at(a, j) == at(b, j))) return false;
    return true;
  };
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || !same(order[i - 1], order[i])) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[order[i]] = static_cast<int64_t>(first.size()) - 1;
  }
}
}  // namespace

TANDEM_REGISTER_OP(unique) {
  OpDef d;
  d.name = "unique";
  d.inputs = {{"self", false, false, false}};
  d.attrs = {{"sorted", true}, {"return_inverse", false}, {"return_counts", false}, {"dim", std::monostate{}}};
  d.num_outputs = 3;
  d.dynamic_shape = true;
  d.output_differentiable = {false, false, false};
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    auto dim_opt = c.attrs.opt_i(3);
    if (!dim_opt) {
      c.outputs.push_back(TensorMeta{self.dtype, {-1}, {}});
      c.outputs.push_back(TensorMeta{kInt64, self.sizes.vec(), {}});
    } else {
      TANDEM_CHECK(self.dim() > 0, IndexError, c.op, "dimension specified as ", *dim_opt, " but tensor has no dimensions");
      const int64_t dim = wrap_dim(*dim_opt, self.dim(), c.op);
      TANDEM_CHECK(!(self.numel() == 0 && self.sizes[dim] != 0), ValueError, c.op, "shape ", self.sizes,
                   " has 0-sized dimensions that are not selected by dim ", dim, ", so unique cannot be applied");
      DimVector s = self.sizes.vec();
      s[dim] = -1;
      c.outputs.push_back(TensorMeta{self.dtype, s, {}});
      c.outputs.push_back(TensorMeta{kInt64, {self.sizes[dim]}, {}});
    }
    c.outputs.push_back(TensorMeta{kInt64, {-1}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& self = c.inputs[0];
    auto dim_opt = c.attrs.opt_i(3);
    // Rows: the elements (dim None) or the slices along dim moved to the front.
    int64_t dim = 0, n = 0, w = 1;
    Tensor rows;
    if (!dim_opt) {
      rows = kernels::contiguous_copy(self);
      n = self.numel();
    } else {
      dim = wrap_dim(*dim_opt, self.dim(), c.op);
      DimVector sz{self.size(dim)}, st{self.stride(dim)};
      for (int64_t k = 0; k < self.dim(); ++k)
        if (k != dim) {
          sz.push_back(self.size(k));
          st.push_back(self.stride(k));
        }
      rows = kernels::contiguous_copy(kernels::restride(self, sz, st));
      n = self.size(dim);
      w = n == 0 ? 0 : rows.numel() / n;
    }
    Tensor inverse = empty_tensor(!dim_opt ? self.sizes() : IntArrayRef({n}), kInt64);
    std::vector<int64_t> first, counts;
    Tensor values;
    TANDEM_DISPATCH_ALL_TYPES(self.dtype(), c.op, [&] {
      using T = scalar_t;
      const T* data = static_cast<const T*>(rows.data_ptr());
      unique_rows<T>(data, n, w, first, inverse.numel() ? inverse.data_ptr<int64_t>() : nullptr, counts);
      const int64_t g = static_cast<int64_t>(first.size());
      DimVector vs_first{g};
      if (dim_opt) {
        vs_first = rows.sizes().vec();
        vs_first[0] = g;
      }
      Tensor vfirst = empty_tensor(vs_first, self.dtype());
      T* o = static_cast<T*>(vfirst.data_ptr());
      for (int64_t i = 0; i < g; ++i) std::copy(data + first[i] * w, data + (first[i] + 1) * w, o + i * w);
      if (!dim_opt) {
        values = vfirst;
      } else {  // move the unique dim back to its place
        DimVector sz, st;
        const DimVector cs = contiguous_strides(vs_first);
        int64_t r = 1;
        for (int64_t k = 0; k < self.dim(); ++k) {
          if (k == dim) {
            sz.push_back(g);
            st.push_back(cs[0]);
          } else {
            sz.push_back(vs_first[r]);
            st.push_back(cs[r]);
            ++r;
          }
        }
        values = kernels::contiguous_copy(kernels::restride(vfirst, sz, st));
      }
    });
    Tensor cnt = empty_tensor({static_cast<int64_t>(counts.size())}, kInt64);
    if (!counts.empty()) std::copy(counts.begin(), counts.end(), cnt.data_ptr<int64_t>());
    c.outputs.push_back(values);
    c.outputs.push_back(inverse);
    c.outputs.push_back(cnt);
  };
  return d;
}

// ---------------------------------------------------------------- searchsorted
TANDEM_REGISTER_OP(searchsorted) {
  OpDef d;
  d.name = "searchsorted";
  d.inputs = {{"sorted_sequence", true, false, false}, {"self", true, false, false}, {"sorter", false, true, false}};
  d.attrs = {{"out_int32", false}, {"right", false}, {"side", std::monostate{}}};
  d.promotion = Promotion::Default;
  d.output_differentiable = {false};
  d.meta = [](MetaContext& c) {
    const MetaRef &bd = c.inputs[0], &vals = c.inputs[1];
    if (!c.attrs.is_none(2)) {
      const std::string& side = c.attrs.str(2);
      TANDEM_CHECK(side == "left" || side == "right", ValueError, c.op, "side can only be \"left\" or \"right\", got \"", side, "\"");
      TANDEM_CHECK(!(c.attrs.b(1) && side == "left"), ValueError, c.op,
                   "side and right can't be set to opposites, got side \"left\" while right was true");
    }
    reject_bool(c.op, c.common_dtype);
    TANDEM_CHECK(bd.dim() > 0, ShapeError, c.op, "boundaries tensor should have positive dimension, got a 0-d tensor");
    if (bd.dim() > 1) {
      bool ok = vals.dim() == bd.dim();
      for (int64_t k = 0; ok && k + 1 < bd.dim(); ++k) ok = vals.sizes[k] == bd.sizes[k];
      TANDEM_CHECK(ok, ShapeError, c.op, "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries ",
                   "tensor and input value tensor must match, got boundaries shape ", bd.sizes, " and input value shape ",
                   vals.sizes);
    }
    if (c.inputs.size() > 2 && c.inputs[2].defined) {
      const MetaRef& so = c.inputs[2];
      TANDEM_CHECK(so.dtype == kInt64, TypeError, c.op, "sorter must be an int64 tensor, got ", dtype_name(so.dtype));
      TANDEM_CHECK(so.sizes.equals(bd.sizes), ShapeError, c.op, "boundaries and sorter must have the same size, got ",
                   bd.sizes, " and ", so.sizes);
    }
    c.outputs.push_back(TensorMeta{c.attrs.b(0) ? kInt32 : kInt64, vals.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor bd = kernels::contiguous_copy(c.inputs[0]);
    const Tensor vals = kernels::contiguous_copy(c.inputs[1]);
    const bool has_sorter = c.inputs.size() > 2 && c.inputs[2].defined();
    const int64_t L = bd.size(-1);
    const int64_t rows = bd.numel() / std::max<int64_t>(L, 1);
    Tensor sorter;
    if (has_sorter) {
      sorter = kernels::contiguous_copy(c.inputs[2]);
      kernels::check_index_range(sorter, L, false, c.op, bd.dim() - 1);
    }
    const bool right = c.attrs.b(1) || (!c.attrs.is_none(2) && c.attrs.str(2) == "right");
    const Tensor& out = c.outputs[0];
    const int64_t nv = vals.numel();
    if (nv == 0) return;
    const int64_t per_row = bd.dim() == 1 ? nv : nv / std::max<int64_t>(rows, 1);
    const int64_t* so = has_sorter ? sorter.data_ptr<int64_t>() : nullptr;
    TANDEM_DISPATCH_ALL_TYPES(bd.dtype(), c.op, [&] {
      using T = scalar_t;
      using M = kernels::opmath_t<T>;
      const T* b = static_cast<const T*>(bd.data_ptr());
      const T* v = static_cast<const T*>(vals.data_ptr());
      parallel_for(0, nv, 4096, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t row = bd.dim() == 1 ? 0 : i / per_row;
          const T* br = b + row * L;
          const int64_t* sr = so ? so + row * L : nullptr;
          const M val = static_cast<M>(v[i]);
          int64_t lo = 0, hi = L;
          while (lo < hi) {
            const int64_t mid = lo + ((hi - lo) >> 1);
            const M m = static_cast<M>(sr ? br[sr[mid]] : br[mid]);
            // left: first position with m >= val; right: first with m > val. Written as
            // negations so a NaN value (or NaN boundaries) goes to the end, as PyTorch.
            const bool go_right = right ? !(m > val) : !(m >= val);
            if (go_right) lo = mid + 1;
            else hi = mid;
          }
          if (out.dtype() == kInt32) static_cast<int32_t*>(out.data_ptr())[i] = static_cast<int32_t>(lo);
          else static_cast<int64_t*>(out.data_ptr())[i] = lo;
        }
      });
    });
  };
  d.raises_on_data = true;  // a sorter index out of range
  return d;
}

// ---------------------------------------------------------------- bincount
TANDEM_REGISTER_OP(bincount) {
  OpDef d;
  d.name = "bincount";
  d.inputs = {{"self", false, false, false}, {"weights", false, true, true}};
  d.attrs = {{"minlength", int64_t{0}}};
  d.dynamic_shape = true;
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    const bool has_w = c.inputs.size() > 1 && c.inputs[1].defined;
    TANDEM_CHECK(is_integral(self.dtype, false), TypeError, c.op, "got dtype ", dtype_name(self.dtype),
                 ", expected an integral (non-bool) dtype");
    TANDEM_CHECK(self.dim() == 1, ShapeError, c.op, "only supports 1-d non-negative integral inputs, got shape ", self.sizes);
    const int64_t minlength = c.attrs.i(0);
    TANDEM_CHECK(minlength >= 0, ValueError, c.op, "minlength should be >= 0, got ", minlength);
    if (has_w) {
      const MetaRef& w = c.inputs[1];
      TANDEM_CHECK(w.dim() == 1 && w.sizes[0] == self.sizes[0], ShapeError, c.op,
                   "weights should be 1-d and have the same length as input, got shapes ", w.sizes, " and ", self.sizes);
    }
    if (self.sizes[0] == 0) {  // PyTorch: int64 zeros of length minlength, even with weights
      c.outputs.push_back(TensorMeta{kInt64, {minlength}, {}});
      return;
    }
    DType out = !has_w ? kInt64 : c.inputs[1].dtype == kFloat32 ? kFloat32 : kFloat64;
    c.outputs.push_back(TensorMeta{out, {-1}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& self = c.inputs[0];
    const bool has_w = c.inputs.size() > 1 && c.inputs[1].defined();
    const int64_t minlength = c.attrs.i(0);
    const int64_t n = self.size(0);
    if (n == 0) {
      Tensor out = empty_tensor({minlength}, kInt64);
      kernels::fill_kernel(out, 0);
      c.outputs.push_back(out);
      return;
    }
    std::vector<int64_t> v(static_cast<size_t>(n));
    TANDEM_DISPATCH_INTEGRAL_TYPES(self.dtype(), c.op, [&] {
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(static_cast<const scalar_t*>(self.data_ptr())[i * self.stride(0)]);
    });
    int64_t mx = -1;
    for (int64_t i = 0; i < n; ++i) {
      TANDEM_CHECK(v[i] >= 0, ValueError, c.op, "only supports non-negative integral inputs, got ", v[i], " at position ", i);
      mx = std::max(mx, v[i]);
    }
    const int64_t len = std::max(mx + 1, minlength);
    if (!has_w) {
      Tensor out = empty_tensor({len}, kInt64);
      kernels::fill_kernel(out, 0);
      int64_t* o = out.data_ptr<int64_t>();
      for (int64_t x : v) ++o[x];
      c.outputs.push_back(out);
      return;
    }
    const Tensor& w = c.inputs[1];
    const DType od = w.dtype() == kFloat32 ? kFloat32 : kFloat64;
    Tensor wc = kernels::contiguous_copy(w);
    Tensor out = empty_tensor({len}, od);
    kernels::fill_kernel(out, 0);
    auto accumulate = [&](auto* o) {
      using O = std::remove_pointer_t<decltype(o)>;
      TANDEM_DISPATCH_ALL_TYPES(wc.dtype(), c.op, [&] {
        const scalar_t* wp = static_cast<const scalar_t*>(wc.data_ptr());
        for (int64_t i = 0; i < n; ++i) o[v[i]] += static_cast<O>(static_cast<kernels::opmath_t<scalar_t>>(wp[i]));
      });
    };
    if (od == kFloat32) accumulate(out.data_ptr<float>());
    else accumulate(out.data_ptr<double>());
    c.outputs.push_back(out);
  };
  d.raises_on_data = true;  // a negative value
  return d;
}

// ---------------------------------------------------------------- functional API
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  OpOutputs o = dispatch(op_sort(), {self}, {AttrValue(dim), AttrValue(descending), AttrValue(stable)});
  return {o[0], o[1]};
}
Tensor argsort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return dispatch1(op_argsort(), {self}, {AttrValue(dim), AttrValue(descending), AttrValue(stable)});
}
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  OpOutputs o = dispatch(op_topk(), {self}, {AttrValue(k), AttrValue(dim), AttrValue(largest), AttrValue(sorted)});
  return {o[0], o[1]};
}
std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  OpOutputs o = dispatch(op_kthvalue(), {self}, {AttrValue(k), AttrValue(dim), AttrValue(keepdim)});
  return {o[0], o[1]};
}
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted, bool return_inverse, bool return_counts,
                                          std::optional<int64_t> dim) {
  OpOutputs o = dispatch(op_unique(), {self},
                         {AttrValue(sorted), AttrValue(return_inverse), AttrValue(return_counts), opt_attr(dim)});
  return {o[0], o[1], o[2]};
}
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string> side, const Tensor& sorter) {
  return dispatch1(op_searchsorted(), {sorted_sequence, values, sorter},
                   {AttrValue(out_int32), AttrValue(right), opt_attr(side)});
}
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32, bool right,
                    std::optional<std::string> side, const Tensor& sorter) {
  return searchsorted(sorted_sequence, wrap_scalar(value), out_int32, right, side, sorter);
}
Tensor bincount(const Tensor& self, const Tensor& weights, int64_t minlength) {
  return dispatch1(op_bincount(), {self, weights}, {AttrValue(minlength)});
}

// ---------------------------------------------------------------- Tensor methods
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return tandem::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const { return tandem::argsort(*this, dim, descending, stable); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return tandem::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return tandem::kthvalue(*this, k, dim, keepdim);
}
std::tuple<Tensor, Tensor, Tensor> Tensor::unique(bool sorted, bool return_inverse, bool return_counts,
                                                  std::optional<int64_t> dim) const {
  return tandem::unique(*this, sorted, return_inverse, return_counts, dim);
}
Tensor Tensor::bincount(const Tensor& weights, int64_t minlength) const { return tandem::bincount(*this, weights, minlength); }

}  // namespace tandem
