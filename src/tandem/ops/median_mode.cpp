// Order-statistic reductions of the reduce family: median (of all elements, and along a
// dim with indices) and mode (the most frequent value along a dim, with an index). Values
// are compared in opmath (float for float16/bfloat16). Backward rules follow PyTorch
// 1.13: the global median shares its gradient evenly among the elements equal to it
// (NaN counting as equal to NaN); median.dim and mode send it to the returned index.
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "tandem/kernels/cpu/index.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/reduce_common.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace {

using Grads = std::vector<Tensor>;
using kernels::opmath_t;

uint64_t all_dims_mask(int64_t ndim) { return ndim >= 64 ? ~uint64_t{0} : (uint64_t{1} << ndim) - 1; }

// Backward of a (values, indices) reduction along a dim: the gradient goes to the index.
Grads selected_index_backward(BackwardContext& c) {
  Grads r(1);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& self = c.input_metas[0];
  if (self.dim() == 0) {
    r[0] = g.reshape({});
    return r;
  }
  const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
  const bool keepdim = c.attrs.b(1);
  const Tensor gi = keepdim ? g : g.unsqueeze(dim);
  const Tensor idx = keepdim ? c.outputs[1] : c.outputs[1].unsqueeze(dim);
  r[0] = scatter(zeros(self.sizes, g.dtype()), dim, idx, gi);
  return r;
}

// Meta of median.dim and mode: (values, int64 indices) with dim removed (or kept as 1).
void select_dim_meta(MetaContext& c) {
  const MetaRef& self = c.inputs[0];
  const int64_t dim = wrap_dim(c.attrs.i(0), self.dim(), c.op);
  TANDEM_CHECK(self.dim() == 0 || self.sizes[dim] > 0, IndexError, c.op, "expected reduction dim ", dim,
               " to have non-zero size, got shape ", self.sizes);
  DimVector sizes = self.sizes.vec();
  if (self.dim() > 0) {
    if (c.attrs.b(1)) sizes[dim] = 1;
    else sizes.erase(sizes.begin() + dim);
  }
  c.outputs.push_back(TensorMeta{self.dtype, sizes, {}});
  c.outputs.push_back(TensorMeta{kInt64, sizes, {}});
}

// Runs pick(x, n) -> (position) over every line of self along dim, where x holds the
// line's values (opmath) and the result is written to values/indices (the chosen element
// and its position).
template <typename T, typename Pick>
void select_lines(KernelContext& c, Pick pick) {
  const Tensor& in0 = c.inputs[0];
  if (in0.dim() == 0) {
    kernels::copy_kernel(c.outputs[0], in0);
    kernels::fill_kernel(c.outputs[1], Scalar(0));
    return;
  }
  if (c.outputs[0].numel() == 0) return;
  const int64_t dim = wrap_dim(c.attrs.i(0), in0.dim(), c.op);
  // Outputs seen with a size-1 reduced dim (keepdim layout) so lines line up with self.
  DimVector kd = in0.sizes().vec();
  kd[dim] = 1;
  const DimVector st = contiguous_strides(kd);
  Tensor ops[3] = {in0, kernels::restride(c.outputs[0], kd, st), kernels::restride(c.outputs[1], kd, st)};
  const int64_t L = in0.size(dim), ss = in0.stride(dim);
  kernels::for_each_line(ArrayRef<Tensor>(ops, 3), in0.sizes(), dim, L, [&](char** p) {
    const T* in = reinterpret_cast<const T*>(p[0]);
    std::vector<opmath_t<T>> x(static_cast<size_t>(L));
    for (int64_t j = 0; j < L; ++j) x[j] = static_cast<opmath_t<T>>(in[j * ss]);
    const int64_t k = pick(x);
    *reinterpret_cast<T*>(p[1]) = in[k * ss];
    *reinterpret_cast<int64_t*>(p[2]) = k;
  });
}

// The lower median's position: the first NaN when there is one (NaN propagates, as
// PyTorch); otherwise the element of rank (n - 1) / 2 in (value, position) order, so
// that among equal values the choice is deterministic.
template <typename M>
int64_t median_position(const std::vector<M>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  for (int64_t j = 0; j < n; ++j)
    if (ops::is_nan(x[j])) return j;
  std::vector<int64_t> order(x.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::nth_element(order.begin(), order.begin() + (n - 1) / 2, order.end(),
                   [&](int64_t a, int64_t b) { return x[a] < x[b] || (x[a] == x[b] && a < b); });
  return order[(n - 1) / 2];
}

// The most frequent value's position: elements sorted by (value, position) with NaN last;
// runs of equal values are counted (a NaN equals nothing, so each NaN is a run of one);
// the first longest run wins (the smallest such value) and its last element's position is
// returned (the highest position holding the value, which is what PyTorch's CPU kernel
// returns for lines of up to 16 elements).
template <typename M>
int64_t mode_position(const std::vector<M>& x) {
  std::vector<int64_t> order(x.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (kernels::nan_greatest_less(x[a], x[b])) return true;
    if (kernels::nan_greatest_less(x[b], x[a])) return false;
    return a < b;
  });
  int64_t best = -1, best_count = 0, run = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    ++run;
    if (i + 1 == order.size() || !(x[order[i]] == x[order[i + 1]])) {
      if (run > best_count) {
        best_count = run;
        best = order[i];
      }
      run = 0;
    }
  }
  return best;
}

void reject_median_dtype(const char* op, DType t) {
  // PyTorch 1.13 has no CPU median for bool or float16.
  TANDEM_CHECK(t != kBool && t != kFloat16, TypeError, op, "got dtype ", dtype_name(t),
               ", expected a numeric dtype other than float16");
}

}  // namespace

// ---------------------------------------------------------------- median
TANDEM_REGISTER_OP(median) {
  OpDef d;
  d.name = "median";
  d.inputs = {{"self"}};
  d.save_inputs = 1;
  d.save_outputs = 1;
  d.backward = [](BackwardContext& c) -> Grads {
    Grads r(1);
    if (!c.grad_outputs[0].defined() || !c.needs_input_grad[0]) return r;
    const int64_t ndim = c.input_metas[0].dim();
    r[0] = ops::evenly_distribute_grad(c.grad_outputs[0], c.inputs[0], c.outputs[0], all_dims_mask(ndim), false);
    return r;
  };
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    reject_median_dtype(c.op, self.dtype);
    TANDEM_CHECK(self.numel() > 0 || is_floating_point(self.dtype), IndexError, c.op,
                 "got an empty tensor of dtype ", dtype_name(self.dtype), ", expected a non-empty one");
    c.outputs.push_back(TensorMeta{self.dtype, {}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& self = c.inputs[0];
    const Tensor& out = c.outputs[0];
    if (self.numel() == 0) {  // PyTorch: NaN
      kernels::fill_kernel(out, Scalar(std::numeric_limits<double>::quiet_NaN()));
      return;
    }
    Tensor flat = kernels::contiguous_copy(self);
    TANDEM_DISPATCH_NUMERIC_TYPES(self.dtype(), c.op, [&] {
      using T = scalar_t;
      const T* p = static_cast<const T*>(flat.data_ptr());
      std::vector<opmath_t<T>> x(p, p + flat.numel());
      *static_cast<T*>(out.data_ptr()) = p[median_position(x)];
    });
  };
  return d;
}

TANDEM_REGISTER_OP(median_dim) {
  OpDef d;
  d.name = "median_dim";
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{0}}, {"keepdim", false}};
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 0b10;
  d.backward = selected_index_backward;
  d.meta = [](MetaContext& c) {
    reject_median_dtype(c.op, c.inputs[0].dtype);
    select_dim_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    TANDEM_DISPATCH_NUMERIC_TYPES(c.inputs[0].dtype(), c.op, [&] {
      select_lines<scalar_t>(c, [](const auto& x) { return median_position(x); });
    });
  };
  return d;
}

// ---------------------------------------------------------------- mode
TANDEM_REGISTER_OP(mode) {
  OpDef d;
  d.name = "mode";
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{-1}}, {"keepdim", false}};
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 0b10;
  d.backward = selected_index_backward;
  d.meta = select_dim_meta;
  d.cpu_kernel = [](KernelContext& c) {
    TANDEM_DISPATCH_ALL_TYPES(c.inputs[0].dtype(), c.op, [&] {
      select_lines<scalar_t>(c, [](const auto& x) { return mode_position(x); });
    });
  };
  return d;
}

// ---------------------------------------------------------------- functional API
namespace {
std::tuple<Tensor, Tensor> two(OpOutputs o) { return {std::move(o[0]), std::move(o[1])}; }
}  // namespace

Tensor median(const Tensor& self) { return dispatch1(op_median(), {self}); }
std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim) {
  return two(dispatch(op_median_dim(), {self}, {AttrValue(dim), AttrValue(keepdim)}));
}
std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
  return two(dispatch(op_mode(), {self}, {AttrValue(dim), AttrValue(keepdim)}));
}

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::median() const { return tandem::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const { return tandem::median(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::mode(int64_t dim, bool keepdim) const { return tandem::mode(*this, dim, keepdim); }

}  // namespace tandem
