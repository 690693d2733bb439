// Scans along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp
// (kernels::scan_kernel), with their backward rules written with ops.
#include <cmath>
#include <limits>

#include "tandem/core/grad_mode.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/reduce_common.h"
#include "tandem/ops/shape.h"
#include "tandem/ops/unary.h"

namespace tandem {

namespace {

using kernels::opmath_t;

/// Contiguous copy of `t` converted to `dtype` (kernel-side; no dispatch).
Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), dtype);
  kernels::copy_kernel(c, t);
  return c;
}

template <typename P>
void run_scan(const Tensor& x, int64_t dim, const P& p) {
  kernels::scan_kernel(static_cast<const typename P::in_t*>(x.data_ptr()), x.sizes(), dim, p);
}

// acc = acc (+|*) map(x), out[k] = acc.
template <typename T, typename Acc, typename Out, bool Prod>
struct CumPolicy {
  using in_t = T;
  using acc_t = Acc;
  Out* out;
  Acc identity() const { return Acc(Prod ? 1 : 0); }
  static Acc load(T v) {
    if constexpr (std::is_same_v<Acc, uint64_t>) {
      if constexpr (std::is_same_v<T, bool>) return v ? 1u : 0u;
      else return static_cast<uint64_t>(static_cast<int64_t>(v));
    } else {
      return static_cast<Acc>(static_cast<opmath_t<T>>(v));
    }
  }
  void step(Acc& a, T v, int64_t) const {
    if constexpr (Prod) a *= load(v);
    else a += load(v);
  }
  void write(int64_t o, const Acc& a) const { out[o] = static_cast<Out>(a); }
};

// PyTorch's CPU acc_type: float64 for float32 and float64, float32 for float16/bfloat16.
template <typename T>
using cum_acc_t = std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double>, double, float>;

void cum_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  wrap_dim(c.attrs.i(0), in.dim(), c.op);
  auto dt = c.attrs.opt_dtype(1);
  DType out = dt ? *dt : is_integral(in.dtype, true) ? kInt64 : in.dtype;
  c.outputs.push_back(TensorMeta{out, in.sizes.vec(), {}});
}

template <bool Prod>
void cum_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  const Tensor& in = c.inputs[0];
  const int64_t dim = in.dim() == 0 ? 0 : wrap_dim(c.attrs.i(0), in.dim(), c.op);
  auto dt = c.attrs.opt_dtype(1);
  Tensor x = contiguous_as(in, dt ? *dt : in.dtype());
  if (is_integral(x.dtype(), true)) {
    Tensor acc_out = out.dtype() == kInt64 ? out : empty_tensor(out.sizes(), kInt64);
    TANDEM_DISPATCH_INTEGRAL_TYPES(x.dtype(), c.op, [&] {
      run_scan(x, dim, CumPolicy<scalar_t, uint64_t, int64_t, Prod>{acc_out.data_ptr<int64_t>()});
    });
    if (!acc_out.is_same(out)) kernels::copy_kernel(out, acc_out);
    return;
  }
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), c.op, [&] {
    run_scan(x, dim, CumPolicy<scalar_t, cum_acc_t<scalar_t>, scalar_t, Prod>{out.data_ptr<scalar_t>()});
  });
}


// cumsum backward: the reversed cumulative sum of g along dim, written as
// sum(g) - cumsum(g) + g so that it needs only differentiable ops.
std::vector<Tensor> cumsum_backward(BackwardContext& c) {
  std::vector<Tensor> r(1);
  if (!c.needs_input_grad[0]) return r;
  const MetaRef& in = c.input_metas[0];
  Tensor g = c.grad_outputs[0];
  if (g.dtype() != in.dtype) g = g.to(in.dtype);
  if (in.dim() == 0) {
    r[0] = g;
    return r;
  }
  int64_t dim = c.attrs.i(0);
  if (dim < 0) dim += in.dim();
  r[0] = sum(g, {dim}, /*keepdim=*/true) - cumsum(g, dim) + g;
  return r;
}

// Reversed cumulative sum along dim: out[k] = sum over j >= k of t[j].
Tensor reversed_cumsum(const Tensor& t, int64_t dim) { return flip(cumsum(flip(t, {dim}), dim), {dim}); }

// cumprod backward: grad_k = sum_{j >= k} g_j * prod_{i <= j, i != k} x_i.
// Without zeros in x this is reversed_cumsum(g * out) / x. With zeros, and when the
// gradient will not be differentiated again (grad mode off), an O(n) form that only looks
// at the first zero of each line: positions before it use the formula above (out is 0
// from there on), the first zero gets (prod of x before it) * sum_{z <= j < next zero}
// g_j prod_{z < i <= j} x_i, later positions get 0. When grad mode is on (create_graph)
// the O(n^2) form prod(x before k) * sum_{j >= k} g_j prod_{k < i <= j} x_i, built from an
// [.., n, n] tensor without divisions, so that its derivative is the second derivative
// of cumprod everywhere (PyTorch takes the same two routes).
std::vector<Tensor> cumprod_backward(BackwardContext& c) {
  std::vector<Tensor> r(1);
  const Tensor& g0 = c.grad_outputs[0];
  if (!g0.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& in = c.input_metas[0];
  const Tensor& out = c.outputs[0];
  const DType dt = out.dtype();  // the dtype the product was computed in
  Tensor g = g0.dtype() == dt ? g0 : g0.to(dt);
  if (in.dim() == 0 || in.numel() <= 1) {
    r[0] = g;
    return r;
  }
  const int64_t dim = wrap_dim(c.attrs.i(0), in.dim(), c.op);
  const int64_t n = in.sizes[dim];
  if (n == 1) {
    r[0] = g;
    return r;
  }
  const Tensor x = c.inputs[0].dtype() == dt ? c.inputs[0] : c.inputs[0].to(dt);
  const Tensor is_zero = x == Scalar(0);
  if (!any(is_zero).item<bool>()) {
    r[0] = reversed_cumsum(out * g, dim) / x;
    return r;
  }
  // prod of x over positions before k: [1, out_0, ..., out_{n-2}] along dim.
  DimVector one = in.sizes.vec();
  one[dim] = 1;
  const Tensor exclusive = cat({ones(one, dt), narrow(out, dim, 0, n - 1)}, dim);
  if (!is_grad_enabled()) {
    const Tensor zeros_so_far = cumsum(is_zero, dim);
    const Tensor before = zeros_so_far == Scalar(0);
    const Tensor in_first_run = zeros_so_far == Scalar(1);
    const Tensor first_zero = logical_and(is_zero, in_first_run);
    const Tensor between = logical_and(in_first_run, logical_not(is_zero));
    Tensor part1 = where(before, reversed_cumsum(out * g, dim) / where(before, x, Scalar(1)), Scalar(0));
    Tensor run = cumprod(where(between, x, Scalar(1)), dim);
    Tensor s = sum(where(in_first_run, g * run, Scalar(0)), {dim}, /*keepdim=*/true);
    r[0] = part1 + where(first_zero, s * exclusive, Scalar(0));
    return r;
  }
  // [.., k, i] tensors on the last two dims: x_i where i > k, else 1; their cumprod over i
  // is prod_{k < i <= j} x_i at [k, j].
  const Tensor xm = movedim(x, dim, -1).unsqueeze(-2);
  const Tensor gm = movedim(g, dim, -1).unsqueeze(-2);
  const Tensor pos = arange(Scalar(n), kInt64);
  const Tensor row = pos.unsqueeze(1), col = pos.unsqueeze(0);
  const Tensor after_k = cumprod(where(gt(col, row), xm, Scalar(1)), -1);
  const Tensor s = sum(where(ge(col, row), gm * after_k, Scalar(0)), {-1});
  r[0] = movedim(s, -1, dim) * exclusive;
  return r;
}

// cummax/cummin: the gradient goes to the position each running extreme came from.
std::vector<Tensor> cum_extreme_backward(BackwardContext& c) {
  std::vector<Tensor> r(1);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& in = c.input_metas[0];
  if (in.dim() == 0) {
    r[0] = g;
    return r;
  }
  r[0] = scatter_add(zeros(in.sizes, g.dtype()), wrap_dim(c.attrs.i(0), in.dim(), c.op), c.outputs[1], g);
  return r;
}

// logcumsumexp: out_j = log sum_{i <= j} exp(x_i), so d out_j / d x_k = exp(x_k - out_j) for
// k <= j and grad_k = sum_{j >= k} g_j exp(x_k - out_j). Computed in log space, split by
// the sign of g so that each part is a reversed logcumsumexp:
// grad_k = exp(x_k + rlcse(log g+ - out)_k) - exp(x_k + rlcse(log g- - out)_k).
std::vector<Tensor> logcumsumexp_backward(BackwardContext& c) {
  std::vector<Tensor> r(1);
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  const MetaRef& in = c.input_metas[0];
  if (in.dim() == 0 || in.numel() == 0) {
    r[0] = g;
    return r;
  }
  const int64_t dim = wrap_dim(c.attrs.i(0), in.dim(), c.op);
  const Tensor &x = c.inputs[0], &out = c.outputs[0];
  auto reversed = [dim](const Tensor& t) { return flip(logcumsumexp(flip(t, {dim}), dim), {dim}); };
  // The other sign's terms get the dtype's lowest finite value, not -inf: exp() of it is
  // still 0, but the nested logcumsumexp stays finite, so that its own backward (double
  // backward) never computes -inf - (-inf).
  const Scalar lowest = g.dtype() == kFloat64   ? Scalar(std::numeric_limits<double>::lowest())
                        : g.dtype() == kFloat32 ? Scalar(static_cast<double>(std::numeric_limits<float>::lowest()))
                                                : Scalar(-3.3895313892515355e38);  // bfloat16
  const Tensor log_abs = log(abs(g));
  const Tensor pos = where(g > Scalar(0), log_abs, lowest) - out;
  const Tensor neg = where(g < Scalar(0), log_abs, lowest) - out;
  r[0] = exp(reversed(pos) + x) - exp(reversed(neg) + x);
  return r;
}

// acc = log(exp(acc) + exp(x)), stable: max + log1p(exp(min - max)); -inf is the identity,
// +inf absorbs, NaN propagates.
template <typename T>
struct LogCumSumExpPolicy {
  using in_t = T;
  using acc_t = cum_acc_t<T>;
  T* out;
  acc_t identity() const { return -std::numeric_limits<acc_t>::infinity(); }
  void step(acc_t& a, T v, int64_t) const {
    const acc_t x = static_cast<acc_t>(static_cast<opmath_t<T>>(v));
    if (std::isnan(a) || std::isnan(x)) {
      a = std::numeric_limits<acc_t>::quiet_NaN();
      return;
    }
    const acc_t hi = a > x ? a : x, lo = a > x ? x : a;
    if (std::isinf(hi)) {  // both -inf, or +inf
      a = hi;
      return;
    }
    a = hi + std::log1p(std::exp(lo - hi));
  }
  void write(int64_t o, const acc_t& a) const { out[o] = static_cast<T>(a); }
};

OpDef cum_def(const char* name, KernelFn k) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{0}}, {"dtype", std::monostate{}}};
  d.meta = cum_meta;
  d.cpu_kernel = k;
  return d;
}

/// Running max/min with its index: ties move to the later index; a NaN sticks, and each
/// new NaN moves the index (PyTorch's cummax/cummin).
template <typename T, bool Greater>
struct CumExtremePolicy {
  using in_t = T;
  using V = opmath_t<T>;
  struct acc_t {
    V v{};
    int64_t i = -1;
  };
  T* values;
  int64_t* indices;
  acc_t identity() const { return {}; }
  void step(acc_t& a, T v, int64_t k) const {
    const V x = static_cast<V>(v);
    if (a.i < 0 || ops::is_nan(x) || (Greater ? x >= a.v : x <= a.v)) {
      a.v = x;
      a.i = k;
    }
  }
  void write(int64_t o, const acc_t& a) const {
    values[o] = static_cast<T>(a.v);
    indices[o] = a.i;
  }
};

template <bool Greater>
void cum_extreme_kernel(KernelContext& c) {
  const Tensor& in = c.inputs[0];
  const int64_t dim = in.dim() == 0 ? 0 : wrap_dim(c.attrs.i(0), in.dim(), c.op);
  Tensor x = contiguous_as(in, in.dtype());
  TANDEM_DISPATCH_ALL_TYPES(x.dtype(), c.op, [&] {
    run_scan(x, dim,
             CumExtremePolicy<scalar_t, Greater>{c.outputs[0].data_ptr<scalar_t>(), c.outputs[1].data_ptr<int64_t>()});
  });
}

OpDef cum_extreme_def(const char* name, KernelFn k) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{0}}};
  d.meta = [](MetaContext& c) {
    const MetaRef& in = c.inputs[0];
    wrap_dim(c.attrs.i(0), in.dim(), c.op);
    c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
    c.outputs.push_back(TensorMeta{kInt64, in.sizes.vec(), {}});
  };
  d.cpu_kernel = k;
  d.backward = cum_extreme_backward;
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 2;  // backward scatter-adds the gradient at the saved indices
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(cumsum) {
  OpDef d = cum_def("cumsum", cum_kernel<false>);
  d.backward = cumsum_backward;
  d.autocast = Autocast::Float32;
  return d;
}  // backward: reversed cumsum, nothing saved
TANDEM_REGISTER_OP(cumprod) {
  OpDef d = cum_def("cumprod", cum_kernel<true>);
  d.save_inputs = 1;
  d.save_outputs = 1;
  d.backward = cumprod_backward;
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(logcumsumexp) {
  OpDef d;
  d.name = "logcumsumexp";
  d.autocast = Autocast::Float32;
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{0}}};
  d.save_inputs = 1;
  d.save_outputs = 1;
  d.backward = logcumsumexp_backward;
  d.meta = [](MetaContext& c) {
    const MetaRef& in = c.inputs[0];
    wrap_dim(c.attrs.i(0), in.dim(), c.op);
    // PyTorch 1.13's CPU kernel covers float32, float64 and bfloat16 only.
    TANDEM_CHECK(in.dtype == kFloat32 || in.dtype == kFloat64 || in.dtype == kBFloat16, TypeError, c.op, "got dtype ",
                 dtype_name(in.dtype), ", expected float32, float64 or bfloat16");
    c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& in = c.inputs[0];
    const int64_t dim = in.dim() == 0 ? 0 : wrap_dim(c.attrs.i(0), in.dim(), c.op);
    Tensor x = contiguous_as(in, in.dtype());
    TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), c.op, [&] {
      run_scan(x, dim, LogCumSumExpPolicy<scalar_t>{c.outputs[0].data_ptr<scalar_t>()});
    });
  };
  return d;
}
TANDEM_REGISTER_OP(cummax) { return cum_extreme_def("cummax", cum_extreme_kernel<true>); }
TANDEM_REGISTER_OP(cummin) { return cum_extreme_def("cummin", cum_extreme_kernel<false>); }

// ---------------------------------------------------------------- functional API
namespace {
std::tuple<Tensor, Tensor> two(OpOutputs o) { return {std::move(o[0]), std::move(o[1])}; }
}  // namespace

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return dispatch1(op_cumsum(), {self}, {AttrValue(dim), opt_attr(dtype)});
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return dispatch1(op_cumprod(), {self}, {AttrValue(dim), opt_attr(dtype)});
}
Tensor logcumsumexp(const Tensor& self, int64_t dim) { return dispatch1(op_logcumsumexp(), {self}, {AttrValue(dim)}); }
std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim) { return two(dispatch(op_cummax(), {self}, {AttrValue(dim)})); }
std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim) { return two(dispatch(op_cummin(), {self}, {AttrValue(dim)})); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const { return tandem::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const { return tandem::cumprod(*this, dim, dtype); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return tandem::logcumsumexp(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return tandem::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return tandem::cummin(*this, dim); }

}  // namespace tandem
