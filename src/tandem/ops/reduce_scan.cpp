// Scans along one dim: cumsum, cumprod, cummax, cummin (kernels::scan_kernel).
#include "tandem/ops/reduce.h"
#include "tandem/ops/reduce_common.h"
#include "tandem/ops/binary.h"

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
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.save_outputs = 2;  // backward scatter-adds the gradient at the saved indices
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(cumsum) {
  OpDef d = cum_def("cumsum", cum_kernel<false>);
  d.backward = cumsum_backward;
  return d;
}  // backward: reversed cumsum, nothing saved
TANDEM_REGISTER_OP(cumprod) {
  OpDef d = cum_def("cumprod", cum_kernel<true>);
  d.save_inputs = 1;
  d.save_outputs = 1;
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
std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim) { return two(dispatch(op_cummax(), {self}, {AttrValue(dim)})); }
std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim) { return two(dispatch(op_cummin(), {self}, {AttrValue(dim)})); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const { return tandem::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const { return tandem::cumprod(*this, dim, dtype); }
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return tandem::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return tandem::cummin(*this, dim); }

}  // namespace tandem
