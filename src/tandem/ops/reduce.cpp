// Reductions: sum, mean, prod, max/min (whole tensor and along a dim), amax/amin,
// argmax/argmin, all/any, count_nonzero. Statistics (var, std, logsumexp, norm) live in
// reduce_stats.cpp, scans (cumsum, cumprod, cummax, cummin) in reduce_scan.cpp.
//
// Every op: Promotion::None (meta decides dtypes from the input and the dtype attribute),
// a kernel that runs a policy through kernels::reduce_kernel (kernels/cpu/reduce.h).
#include "tandem/ops/reduce.h"

#include "tandem/ops/reduce_common.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/pointwise.h"

namespace tandem {

// ---------------------------------------------------------------- shared helpers
namespace ops {

namespace {
uint64_t all_mask(int64_t ndim) { return ndim == 0 ? 1u : (ndim >= 64 ? ~uint64_t{0} : (uint64_t{1} << ndim) - 1); }
}  // namespace

uint64_t single_dim_mask(const char* op, int64_t dim, int64_t ndim) {
  return uint64_t{1} << wrap_dim(dim, ndim, op);
}

uint64_t reduce_mask(const char* op, const AttrReader& attrs, size_t k, int64_t ndim) {
  TANDEM_CHECK(ndim <= kernels::kMaxDims, NotImplementedError, op, "tensors with ", ndim, " dims, expected at most ",
               kernels::kMaxDims);
  if (attrs.is_none(k)) return all_mask(ndim);
  if (const auto* one = std::get_if<int64_t>(&attrs.at(k))) return single_dim_mask(op, *one, ndim);
  const auto& list = attrs.ints(k);
  if (list.empty()) return all_mask(ndim);
  uint64_t m = 0;
  for (int64_t d : wrap_dims(op, list, ndim)) m |= uint64_t{1} << d;
  return m;
}

DimVector reduced_sizes(IntArrayRef sizes, uint64_t mask, bool keepdim) {
  DimVector out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if ((mask >> d) & 1u) {
      if (keepdim) out.push_back(1);
    } else {
      out.push_back(sizes[d]);
    }
  }
  return out;
}

int64_t reduced_numel(IntArrayRef sizes, uint64_t mask) {
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if ((mask >> d) & 1u) n *= sizes[d];
  return n;
}

void check_nonempty_reduction(const char* op, IntArrayRef sizes, uint64_t mask, bool all_dims) {
  if (all_dims) {
    TANDEM_CHECK(multiply_integers(sizes) != 0, IndexError, op, "got an input with 0 elements and no dim, expected ",
                 "the reduction dim to be specified for input.numel() == 0 (input sizes ", sizes, ")");
    return;
  }
  for (size_t d = 0; d < sizes.size(); ++d)
    TANDEM_CHECK(!((mask >> d) & 1u) || sizes[d] != 0, IndexError, op, "expected reduction dim ", d,
                 " to have non-zero size, got input sizes ", sizes);
}

Tensor cast_for_kernel(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor c = empty_tensor(t.sizes(), dtype);
  kernels::copy_kernel(c, t);
  return c;
}


// ---------------------------------------------------------------- backward helpers
std::vector<int64_t> mask_dims(uint64_t mask, int64_t ndim) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim; ++d)
    if ((mask >> d) & 1u) dims.push_back(d);
  return dims;
}

Tensor unsqueeze_reduced(const Tensor& t, int64_t ndim, uint64_t mask, bool keepdim) {
  if (keepdim || ndim == 0) return t;
  Tensor r = t;
  for (int64_t d : mask_dims(mask, ndim)) r = r.unsqueeze(d);
  return r;
}

Tensor expand_reduced_grad(const Tensor& g, const MetaRef& in, uint64_t mask, bool keepdim) {
  const int64_t ndim = static_cast<int64_t>(in.sizes.size());
  Tensor r = unsqueeze_reduced(g, ndim, mask, keepdim);
  if (ndim == 0 && r.dim() != 0) r = r.reshape({});
  r = r.expand(in.sizes);
  return r.dtype() == in.dtype ? r : r.to(in.dtype);
}

Tensor evenly_distribute_grad(const Tensor& g, const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim) {
  const int64_t ndim = x.dim();
  Tensor o = unsqueeze_reduced(out, ndim, mask, keepdim);
  Tensor gi = unsqueeze_reduced(g, ndim, mask, keepdim);
  if (ndim == 0) return g;
  // NaN results: the NaN elements take the gradient (x != x matches out != out).
  Tensor hit = logical_or(x == o, logical_and(x != x, o != o));
  Tensor count = sum(hit, mask_dims(mask, ndim), /*keepdim=*/true).to(g.dtype());
  return where(hit, gi / count, Scalar(0));
}

}  // namespace ops

namespace {

using kernels::opmath_t;
using ops::cast_for_kernel;
using ops::reduce_mask;
using ops::reduced_sizes;

template <typename P>
void run_reduce(const Tensor& in, const Tensor& out, uint64_t mask, const P& p) {
  auto it = kernels::ReduceIter::make(in, out, mask);
  kernels::reduce_kernel(it, static_cast<const typename P::in_t*>(in.data_ptr()), p);
}

template <typename Acc>
inline constexpr int kSumLanes = sizeof(Acc) <= 4 ? 32 : 16;

/// acc += map(x); write(fin(acc)). Integer sums use uint64 (wraps like int64).
template <typename T, typename Acc, typename Out, typename Map, typename Fin>
struct SumPolicy {
  using in_t = T;
  using acc_t = Acc;
  static constexpr int kLanes = kSumLanes<Acc>;
  Out* out;
  Map map;
  Fin fin;
  Acc identity() const { return Acc(0); }
  void step(Acc& a, T v, int64_t) const { a += map(v); }
  void merge(Acc& a, const Acc& b) const { a += b; }
  void write(int64_t o, const Acc& a) const { out[o] = fin(a); }
};
template <typename T, typename Acc, typename Out, typename Map, typename Fin>
SumPolicy<T, Acc, Out, Map, Fin> sum_policy(Out* out, Map m, Fin f) {
  return {out, m, f};
}

template <typename T, typename Acc, typename Out, typename Map, typename Fin>
struct ProdPolicy {
  using in_t = T;
  using acc_t = Acc;
  static constexpr int kLanes = kSumLanes<Acc>;
  Out* out;
  Map map;
  Fin fin;
  Acc identity() const { return Acc(1); }
  void step(Acc& a, T v, int64_t) const { a *= map(v); }
  void merge(Acc& a, const Acc& b) const { a *= b; }
  void write(int64_t o, const Acc& a) const { out[o] = fin(a); }
};

// Integer element -> uint64 with sign extension (two's complement wrap-around sums).
template <typename T>
inline uint64_t to_u64(T v) {
  if constexpr (std::is_same_v<T, bool>) return v ? 1u : 0u;
  else return static_cast<uint64_t>(static_cast<int64_t>(v));
}

// Integer/bool inputs reduce into int64; a non-int64 output (explicit dtype) is filled by a copy.
template <template <typename, typename, typename, typename, typename> class Policy>
void integral_reduce(const Tensor& x, const Tensor& out, uint64_t mask, const char* op) {
  Tensor acc_out = out.dtype() == kInt64 ? out : empty_tensor(out.sizes(), kInt64);
  TANDEM_DISPATCH_INTEGRAL_TYPES(x.dtype(), op, [&] {
    auto map = [](scalar_t v) { return to_u64(v); };
    auto fin = [](uint64_t a) { return static_cast<int64_t>(a); };
    using P = Policy<scalar_t, uint64_t, int64_t, decltype(map), decltype(fin)>;
    run_reduce(x, acc_out, mask, P{acc_out.data_ptr<int64_t>(), map, fin});
  });
  if (!acc_out.is_same(out)) kernels::copy_kernel(out, acc_out);
}

template <template <typename, typename, typename, typename, typename> class Policy>
void floating_reduce(const Tensor& x, const Tensor& out, uint64_t mask, const char* op) {
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), op, [&] {
    using A = opmath_t<scalar_t>;
    auto map = [](scalar_t v) { return static_cast<A>(v); };
    auto fin = [](A a) { return static_cast<scalar_t>(a); };
    using P = Policy<scalar_t, A, scalar_t, decltype(map), decltype(fin)>;
    run_reduce(x, out, mask, P{out.data_ptr<scalar_t>(), map, fin});
  });
}

// sum / prod meta: dtype attr, else int64 for bool/integers, else the input dtype.
void sum_like_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
  auto dt = c.attrs.opt_dtype(2);
  DType out = dt ? *dt : is_integral(in.dtype, true) ? kInt64 : in.dtype;
  c.outputs.push_back(TensorMeta{out, reduced_sizes(in.sizes, mask, c.attrs.b(1)), {}});
}

template <template <typename, typename, typename, typename, typename> class Policy>
void sum_like_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  uint64_t mask = reduce_mask(c.op, c.attrs, 0, c.inputs[0].dim());
  auto dt = c.attrs.opt_dtype(2);
  Tensor x = dt ? cast_for_kernel(c.inputs[0], *dt) : c.inputs[0];
  if (is_integral(x.dtype(), true)) integral_reduce<Policy>(x, out, mask, c.op);
  else floating_reduce<Policy>(x, out, mask, c.op);
}

const std::vector<AttrSpec> kDimKeepDtype = {{"dim", std::monostate{}}, {"keepdim", false}, {"dtype", std::monostate{}}};
const std::vector<AttrSpec> kDimKeep = {{"dim", std::monostate{}}, {"keepdim", false}};

OpDef reduce_def(const char* name, std::vector<AttrSpec> attrs, MetaFn meta, KernelFn kernel) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}};
  d.attrs = std::move(attrs);
  d.promotion = Promotion::None;
  d.meta = meta;
  d.cpu_kernel = kernel;
  return d;
}

// ---------------------------------------------------------------- max / min policies
template <typename T, bool Greater>
struct MinMaxPolicy {
  using in_t = T;
  using acc_t = opmath_t<T>;
  static constexpr int kLanes = 16;
  T* out;
  static acc_t pick(acc_t a, acc_t x) {
    if constexpr (std::is_floating_point_v<acc_t>) return (x != x || (Greater ? x > a : x < a)) ? x : a;
    else return (Greater ? x > a : x < a) ? x : a;
  }
  acc_t identity() const {
    if constexpr (std::is_floating_point_v<acc_t>)
      return Greater ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else return Greater ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  void step(acc_t& a, T v, int64_t) const { a = pick(a, static_cast<acc_t>(v)); }
  void merge(acc_t& a, const acc_t& b) const { a = pick(a, b); }
  void write(int64_t o, const acc_t& a) const { out[o] = static_cast<T>(a); }
};

template <bool Greater>
void minmax_kernel(const Tensor& x, const Tensor& out, uint64_t mask, const char* op) {
  TANDEM_DISPATCH_ALL_TYPES(x.dtype(), op, [&] {
    run_reduce(x, out, mask, MinMaxPolicy<scalar_t, Greater>{out.data_ptr<scalar_t>()});
  });
}

template <typename T, bool Greater>
struct ArgPolicy {
  using in_t = T;
  using V = opmath_t<T>;
  using acc_t = ops::ArgAcc<V, Greater>;
  static constexpr int kLanes = 1;
  T* values;  // may be null (argmax)
  int64_t* indices;
  acc_t identity() const { return acc_t{}; }
  void step(acc_t& a, T v, int64_t i) const {
    const V x = static_cast<V>(v);
    if (acc_t::better(x, i, a.v, a.i)) {
      a.v = x;
      a.i = i;
    }
  }
  void merge(acc_t& a, const acc_t& b) const {
    if (acc_t::better(b.v, b.i, a.v, a.i)) a = b;
  }
  void write(int64_t o, const acc_t& a) const {
    if (values) values[o] = static_cast<T>(a.v);
    indices[o] = a.i;
  }
};

// values may be undefined (argmax/argmin). `x` has exactly one reduced dim in `mask`.
template <bool Greater>
void arg_kernel(const Tensor& x, const Tensor& values, const Tensor& indices, uint64_t mask, const char* op) {
  TANDEM_DISPATCH_ALL_TYPES(x.dtype(), op, [&] {
    scalar_t* v = values.defined() ? values.data_ptr<scalar_t>() : nullptr;
    run_reduce(x, indices, mask, ArgPolicy<scalar_t, Greater>{v, indices.data_ptr<int64_t>()});
  });
}

// ---------------------------------------------------------------- all / any / count_nonzero
template <typename T, bool All>
struct LogicalPolicy {
  using in_t = T;
  using acc_t = bool;
  static constexpr int kLanes = 32;
  uint8_t* out;  // bool or uint8 output: both one byte holding 0/1
  bool identity() const { return All; }
  void step(bool& a, T v, int64_t) const {
    const bool nz = static_cast<opmath_t<T>>(v) != opmath_t<T>(0);
    if constexpr (All) a = a & nz;
    else a = a | nz;
  }
  void merge(bool& a, const bool& b) const {
    if constexpr (All) a = a & b;
    else a = a | b;
  }
  void write(int64_t o, const bool& a) const { out[o] = a ? 1 : 0; }
};

void logical_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
  DType out = in.dtype == kUInt8 ? kUInt8 : kBool;
  c.outputs.push_back(TensorMeta{out, reduced_sizes(in.sizes, mask, c.attrs.b(1)), {}});
}

template <bool All>
void logical_kernel(KernelContext& c) {
  const Tensor& x = c.inputs[0];
  const Tensor& out = c.outputs[0];
  uint64_t mask = reduce_mask(c.op, c.attrs, 0, x.dim());
  TANDEM_DISPATCH_ALL_TYPES(x.dtype(), c.op, [&] {
    run_reduce(x, out, mask, LogicalPolicy<scalar_t, All>{static_cast<uint8_t*>(out.data_ptr())});
  });
}

OpDef logical_def(const char* name, KernelFn k) {
  OpDef d = reduce_def(name, kDimKeep, logical_meta, k);
  d.output_differentiable = {false};
  return d;
}

}  // namespace


// ---------------------------------------------------------------- backward rules
// PyTorch's derivatives (1.13) written with tandem ops so they are differentiable again.
namespace {
using Grads = std::vector<Tensor>;
using ops::expand_reduced_grad;
using ops::mask_dims;
using ops::unsqueeze_reduced;

/// The reduction mask and keepdim of sum/mean/prod/amax/amin (attrs dim, keepdim[, dtype]).
uint64_t grad_mask(BackwardContext& c) { return reduce_mask(c.op, c.attrs, 0, c.input_metas[0].dim()); }

Grads sum_backward(BackwardContext& c) {
  Grads r(1);
  if (c.needs_input_grad[0]) r[0] = expand_reduced_grad(c.grad_outputs[0], c.input_metas[0], grad_mask(c), c.attrs.b(1));
  return r;
}
Grads mean_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0]) return r;
  const uint64_t mask = grad_mask(c);
  const int64_t n = ops::reduced_numel(c.input_metas[0].sizes, mask);
  r[0] = expand_reduced_grad(c.grad_outputs[0] / Scalar(static_cast<double>(n)), c.input_metas[0], mask, c.attrs.b(1));
  return r;
}
// prod: the product of the other elements, without dividing by zero: with no zero in a
// slice it is prod / x; with one zero, the zero gets the product of the rest and the others 0;
// with more, everything gets 0. Written from prod(x with zeros replaced by 1) so that it is
// differentiable again.
Grads prod_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0]) return r;
  const Tensor& x = c.inputs[0];
  const int64_t ndim = x.dim();
  const uint64_t mask = grad_mask(c);
  const bool keepdim = c.attrs.b(1);
  Tensor g = unsqueeze_reduced(c.grad_outputs[0], ndim, mask, keepdim);
  if (g.dtype() != x.dtype()) g = g.to(x.dtype());
  if (ndim == 0) {
    r[0] = g;
    return r;
  }
  const std::vector<int64_t> dims = mask_dims(mask, ndim);
  Tensor is_zero = x == Scalar(0);
  Tensor x1 = where(is_zero, Scalar(1), x);
  Tensor p_nz = prod(x1, dims, /*keepdim=*/true);
  Tensor zeros_in_slice = sum(is_zero, dims, /*keepdim=*/true);
  Tensor others = where(is_zero, where(zeros_in_slice == Scalar(1), p_nz, Scalar(0)),
                        where(zeros_in_slice == Scalar(0), p_nz / x1, Scalar(0)));
  r[0] = g * others;
  return r;
}
template <bool kAll>
Grads amax_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0]) return r;
  const int64_t ndim = c.input_metas[0].dim();
  const uint64_t mask = kAll ? ~uint64_t{0} : grad_mask(c);
  const bool keepdim = kAll ? false : c.attrs.b(1);
  r[0] = ops::evenly_distribute_grad(c.grad_outputs[0], c.inputs[0], c.outputs[0], ndim == 0 ? 0 : mask, keepdim);
  return r;
}
// max.dim/min.dim: the gradient goes to the selected index (a one-hot mask along dim).
Grads minmax_dim_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0] || !c.grad_outputs[0].defined()) return r;
  const MetaRef& in = c.input_metas[0];
  const int64_t ndim = in.dim();
  if (ndim == 0) {
    r[0] = c.grad_outputs[0];
    return r;
  }
  const uint64_t mask = ops::single_dim_mask(c.op, c.attrs.i(0), ndim);
  const int64_t dim = mask_dims(mask, ndim)[0];
  const bool keepdim = c.attrs.b(1);
  Tensor idx = unsqueeze_reduced(c.outputs[1], ndim, mask, keepdim);
  Tensor g = unsqueeze_reduced(c.grad_outputs[0], ndim, mask, keepdim);
  std::vector<int64_t> shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(dim)] = in.sizes[static_cast<size_t>(dim)];
  Tensor pos = arange(Scalar(in.sizes[static_cast<size_t>(dim)]), kInt64).reshape(shape);
  r[0] = where(pos == idx, g, Scalar(0)).expand(in.sizes);
  if (r[0].dtype() != in.dtype) r[0] = r[0].to(in.dtype);
  return r;
}
}  // namespace

// ---------------------------------------------------------------- sum / mean / prod
TANDEM_REGISTER_OP(sum) {
  // Backward broadcasts the gradient back to the input shape: needs no saved tensors.
  OpDef d = reduce_def("sum", kDimKeepDtype, sum_like_meta, sum_like_kernel<SumPolicy>);
  d.backward = sum_backward;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(prod) {
  OpDef d = reduce_def("prod", kDimKeepDtype, sum_like_meta, sum_like_kernel<ProdPolicy>);
  d.backward = prod_backward;
  d.save_inputs = 1;   // grad = g * prod / x, with zeros handled from the input
  d.save_outputs = 1;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(mean) {
  OpDef d = reduce_def(
      "mean", kDimKeepDtype,
      [](MetaContext& c) {
        const MetaRef& in = c.inputs[0];
        auto dt = c.attrs.opt_dtype(2);
        if (dt) {
          TANDEM_CHECK(is_floating_point(*dt), TypeError, c.op, "could not infer output dtype: got dtype argument ",
                       dtype_name(*dt), ", expected a floating dtype");
        } else {
          TANDEM_CHECK(is_floating_point(in.dtype), TypeError, c.op, "could not infer output dtype: got input dtype ",
                       dtype_name(in.dtype), ", expected a floating dtype (or pass a floating dtype)");
        }
        uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
        c.outputs.push_back(TensorMeta{dt ? *dt : in.dtype, reduced_sizes(in.sizes, mask, c.attrs.b(1)), {}});
      },
      [](KernelContext& c) {
        const Tensor& out = c.outputs[0];
        const uint64_t mask = reduce_mask(c.op, c.attrs, 0, c.inputs[0].dim());
        const int64_t n = ops::reduced_numel(c.inputs[0].sizes(), mask);
        Tensor x = cast_for_kernel(c.inputs[0], out.dtype());
        TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), c.op, [&] {
          using A = opmath_t<scalar_t>;
          const A count = static_cast<A>(n);
          // PyTorch CPU: sum rounded to the output dtype, then divided.
          auto map = [](scalar_t v) { return static_cast<A>(v); };
          auto fin = [count](A a) { return static_cast<scalar_t>(static_cast<A>(static_cast<scalar_t>(a)) / count); };
          run_reduce(x, out, mask, sum_policy<scalar_t, A>(out.data_ptr<scalar_t>(), map, fin));
        });
      });
  d.backward = mean_backward;
  d.autocast = Autocast::Float32;
  return d;
}

// ---------------------------------------------------------------- amax / amin / max / min
namespace {
void amax_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
  ops::check_nonempty_reduction(c.op, in.sizes, mask, false);
  c.outputs.push_back(TensorMeta{in.dtype, reduced_sizes(in.sizes, mask, c.attrs.b(1)), {}});
}
template <bool Greater>
void amax_kernel(KernelContext& c) {
  minmax_kernel<Greater>(c.inputs[0], c.outputs[0], reduce_mask(c.op, c.attrs, 0, c.inputs[0].dim()), c.op);
}
void full_minmax_meta(MetaContext& c) {
  ops::check_nonempty_reduction(c.op, c.inputs[0].sizes, 0, true);
  c.outputs.push_back(TensorMeta{c.inputs[0].dtype, {}, {}});
}
template <bool Greater>
void full_minmax_kernel(KernelContext& c) {
  const Tensor& x = c.inputs[0];
  minmax_kernel<Greater>(x, c.outputs[0], ~uint64_t{0}, c.op);
}

// max.dim / min.dim: (values, indices) along one dim.
void minmax_dim_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  uint64_t mask = ops::single_dim_mask(c.op, c.attrs.i(0), in.dim());
  ops::check_nonempty_reduction(c.op, in.sizes, mask, false);
  DimVector sizes = reduced_sizes(in.sizes, mask, c.attrs.b(1));
  c.outputs.push_back(TensorMeta{in.dtype, sizes, {}});
  c.outputs.push_back(TensorMeta{kInt64, sizes, {}});
}
template <bool Greater>
void minmax_dim_kernel(KernelContext& c) {
  const Tensor& x = c.inputs[0];
  arg_kernel<Greater>(x, c.outputs[0], c.outputs[1], ops::single_dim_mask(c.op, c.attrs.i(0), x.dim()), c.op);
}
OpDef minmax_dim_def(const char* name, KernelFn k) {
  OpDef d = reduce_def(name, {{"dim", int64_t{0}}, {"keepdim", false}}, minmax_dim_meta, k);
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.backward = minmax_dim_backward;
  d.save_outputs = 2;  // backward scatters the gradient to the saved indices
  return d;
}

// argmax / argmin: dim None reduces the flattened input.
void arg_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  TANDEM_CHECK(in.dtype != kBool, TypeError, c.op, "got dtype bool, expected a numeric dtype (as PyTorch)");
  const bool keepdim = c.attrs.b(1);
  if (c.attrs.is_none(0)) {
    ops::check_nonempty_reduction(c.op, in.sizes, 0, true);
    DimVector sizes;
    if (keepdim) sizes.resize(in.sizes.size(), 1);
    c.outputs.push_back(TensorMeta{kInt64, sizes, {}});
    return;
  }
  uint64_t mask = ops::single_dim_mask(c.op, c.attrs.i(0), in.dim());
  ops::check_nonempty_reduction(c.op, in.sizes, mask, false);
  c.outputs.push_back(TensorMeta{kInt64, reduced_sizes(in.sizes, mask, keepdim), {}});
}
template <bool Greater>
void arg_kernel_op(KernelContext& c) {
  const Tensor& x = c.inputs[0];
  if (c.attrs.is_none(0)) {
    // Flattened index: reduce a contiguous 1-D alias (one reduced dim, logical order).
    Tensor xc = x;
    if (!x.is_contiguous()) {
      xc = empty_tensor(x.sizes(), x.dtype());
      kernels::copy_kernel(xc, x);
    }
    Tensor flat = make_alias(xc, {xc.numel()}, {1}, xc.storage_offset());
    arg_kernel<Greater>(flat, Tensor(), c.outputs[0], 1, c.op);
    return;
  }
  arg_kernel<Greater>(x, Tensor(), c.outputs[0], ops::single_dim_mask(c.op, c.attrs.i(0), x.dim()), c.op);
}
OpDef arg_def(const char* name, KernelFn k) {
  OpDef d = reduce_def(name, kDimKeep, arg_meta, k);
  d.output_differentiable = {false};
  return d;
}
}  // namespace

TANDEM_REGISTER_OP(amax) {
  OpDef d = reduce_def("amax", kDimKeep, amax_meta, amax_kernel<true>);
  d.backward = amax_backward<false>;
  d.save_inputs = 1;  // gradient is shared evenly among the maximal elements
  d.save_outputs = 1;
  return d;
}
TANDEM_REGISTER_OP(amin) {
  OpDef d = reduce_def("amin", kDimKeep, amax_meta, amax_kernel<false>);
  d.backward = amax_backward<false>;
  d.save_inputs = 1;
  d.save_outputs = 1;
  return d;
}
TANDEM_REGISTER_OP(max) {
  OpDef d = reduce_def("max", {}, full_minmax_meta, full_minmax_kernel<true>);
  d.backward = amax_backward<true>;
  d.save_inputs = 1;
  d.save_outputs = 1;
  return d;
}
TANDEM_REGISTER_OP(min) {
  OpDef d = reduce_def("min", {}, full_minmax_meta, full_minmax_kernel<false>);
  d.backward = amax_backward<true>;
  d.save_inputs = 1;
  d.save_outputs = 1;
  return d;
}
TANDEM_REGISTER_OP(max_dim) { return minmax_dim_def("max_dim", minmax_dim_kernel<true>); }
TANDEM_REGISTER_OP(min_dim) { return minmax_dim_def("min_dim", minmax_dim_kernel<false>); }
TANDEM_REGISTER_OP(argmax) { return arg_def("argmax", arg_kernel_op<true>); }
TANDEM_REGISTER_OP(argmin) { return arg_def("argmin", arg_kernel_op<false>); }

// ---------------------------------------------------------------- all / any / count_nonzero
TANDEM_REGISTER_OP(all) { return logical_def("all", logical_kernel<true>); }
TANDEM_REGISTER_OP(any) { return logical_def("any", logical_kernel<false>); }

TANDEM_REGISTER_OP(count_nonzero) {
  OpDef d = reduce_def(
      "count_nonzero", {{"dim", std::monostate{}}},
      [](MetaContext& c) {
        const MetaRef& in = c.inputs[0];
        uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
        c.outputs.push_back(TensorMeta{kInt64, reduced_sizes(in.sizes, mask, false), {}});
      },
      [](KernelContext& c) {
        const Tensor& x = c.inputs[0];
        const Tensor& out = c.outputs[0];
        uint64_t mask = reduce_mask(c.op, c.attrs, 0, x.dim());
        TANDEM_DISPATCH_ALL_TYPES(x.dtype(), c.op, [&] {
          auto map = [](scalar_t v) -> uint64_t { return static_cast<opmath_t<scalar_t>>(v) != opmath_t<scalar_t>(0); };
          auto fin = [](uint64_t a) { return static_cast<int64_t>(a); };
          run_reduce(x, out, mask, sum_policy<scalar_t, uint64_t>(out.data_ptr<int64_t>(), map, fin));
        });
      });
  d.output_differentiable = {false};
  return d;
}

// ---------------------------------------------------------------- functional API
namespace {
AttrValue dims_attr(IntArrayRef dim) { return AttrValue(dim.vec()); }
AttrValue dtype_attr(std::optional<DType> dt) { return opt_attr(dt); }
std::tuple<Tensor, Tensor> two(OpOutputs o) { return {std::move(o[0]), std::move(o[1])}; }
}  // namespace

Tensor sum(const Tensor& self, std::optional<DType> dtype) {
  return dispatch1(op_sum(), {self}, {AttrValue(std::monostate{}), AttrValue(false), dtype_attr(dtype)});
}
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return dispatch1(op_sum(), {self}, {dims_attr(dim), AttrValue(keepdim), dtype_attr(dtype)});
}
Tensor mean(const Tensor& self, std::optional<DType> dtype) {
  return dispatch1(op_mean(), {self}, {AttrValue(std::monostate{}), AttrValue(false), dtype_attr(dtype)});
}
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return dispatch1(op_mean(), {self}, {dims_attr(dim), AttrValue(keepdim), dtype_attr(dtype)});
}
Tensor prod(const Tensor& self, std::optional<DType> dtype) {
  return dispatch1(op_prod(), {self}, {AttrValue(std::monostate{}), AttrValue(false), dtype_attr(dtype)});
}
Tensor prod(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return dispatch1(op_prod(), {self}, {dims_attr(dim), AttrValue(keepdim), dtype_attr(dtype)});
}
Tensor max(const Tensor& self) { return dispatch1(op_max(), {self}); }
Tensor min(const Tensor& self) { return dispatch1(op_min(), {self}); }
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return two(dispatch(op_max_dim(), {self}, {AttrValue(dim), AttrValue(keepdim)}));
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return two(dispatch(op_min_dim(), {self}, {AttrValue(dim), AttrValue(keepdim)}));
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return dispatch1(op_amax(), {self}, {dims_attr(dim), AttrValue(keepdim)});
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return dispatch1(op_amin(), {self}, {dims_attr(dim), AttrValue(keepdim)});
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return dispatch1(op_argmax(), {self}, {opt_attr(dim), AttrValue(keepdim)});
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return dispatch1(op_argmin(), {self}, {opt_attr(dim), AttrValue(keepdim)});
}
Tensor all(const Tensor& self) { return dispatch1(op_all(), {self}); }
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return dispatch1(op_all(), {self}, {dims_attr(dim), AttrValue(keepdim)});
}
Tensor any(const Tensor& self) { return dispatch1(op_any(), {self}); }
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return dispatch1(op_any(), {self}, {dims_attr(dim), AttrValue(keepdim)});
}
Tensor count_nonzero(const Tensor& self, IntArrayRef dim) {
  return dispatch1(op_count_nonzero(), {self}, {dims_attr(dim)});
}

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::sum(std::optional<DType> dtype) const { return tandem::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return tandem::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return tandem::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return tandem::mean(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<DType> dtype) const { return tandem::prod(*this, dtype); }
Tensor Tensor::prod(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return tandem::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return tandem::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return tandem::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return tandem::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return tandem::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return tandem::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return tandem::amin(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return tandem::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return tandem::argmin(*this, dim, keepdim); }
Tensor Tensor::all() const { return tandem::all(*this); }
Tensor Tensor::all(IntArrayRef dim, bool keepdim) const { return tandem::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return tandem::any(*this); }
Tensor Tensor::any(IntArrayRef dim, bool keepdim) const { return tandem::any(*this, dim, keepdim); }
Tensor Tensor::count_nonzero(IntArrayRef dim) const { return tandem::count_nonzero(*this, dim); }

}  // namespace tandem
