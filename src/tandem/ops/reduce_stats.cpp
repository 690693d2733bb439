// Statistical reductions: var, std, var_mean, std_mean (Welford in float64, merged with
// Chan's formula), logsumexp (one-pass running max), norm (vector p-norms).
#include "tandem/ops/reduce.h"
#include "tandem/ops/reduce_common.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/unary.h"

namespace tandem {

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

// ---------------------------------------------------------------- var / std
struct WelfordAcc {
  double n = 0, mean = 0, m2 = 0;
};

/// Outputs: first = var (or std when Sqrt), optional second = mean.
template <typename T, bool Sqrt>
struct VarPolicy {
  using in_t = T;
  using acc_t = WelfordAcc;
  static constexpr int kLanes = 8;  // independent chains hide the division latency
  T* out;
  T* mean_out;  // may be null
  double correction;
  WelfordAcc identity() const { return {}; }
  void step(WelfordAcc& a, T v, int64_t) const {
    const double x = static_cast<double>(static_cast<opmath_t<T>>(v));
    a.n += 1;
    const double d = x - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (x - a.mean);
  }
  void merge(WelfordAcc& a, const WelfordAcc& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const double n = a.n + b.n, d = b.mean - a.mean;
    a.mean += d * (b.n / n);
    a.m2 += b.m2 + d * d * (a.n * b.n / n);
    a.n = n;
  }
  void write(int64_t o, const WelfordAcc& a) const {
    const double dof = std::max(0.0, a.n - correction);
    const double var = a.m2 / dof;
    out[o] = static_cast<T>(Sqrt ? std::sqrt(var) : var);
    if (mean_out) mean_out[o] = static_cast<T>(a.n == 0 ? std::numeric_limits<double>::quiet_NaN() : a.mean);
  }
};

void var_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  TANDEM_CHECK(is_floating_point(in.dtype), TypeError, c.op, "got dtype ", dtype_name(in.dtype),
               ", expected a floating dtype (std and var only support floating point)");
  uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
  DimVector sizes = reduced_sizes(in.sizes, mask, c.attrs.b(2));
  c.outputs.push_back(TensorMeta{in.dtype, sizes, {}});
}
void var_mean_meta(MetaContext& c) {
  var_meta(c);
  c.outputs.push_back(c.outputs[0]);
}

template <bool Sqrt>
void var_kernel(KernelContext& c) {
  const Tensor& x = c.inputs[0];
  const uint64_t mask = reduce_mask(c.op, c.attrs, 0, x.dim());
  const double correction = c.attrs.f(1);
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), c.op, [&] {
    scalar_t* mean_out = c.outputs.size() > 1 ? c.outputs[1].data_ptr<scalar_t>() : nullptr;
    run_reduce(x, c.outputs[0], mask, VarPolicy<scalar_t, Sqrt>{c.outputs[0].data_ptr<scalar_t>(), mean_out, correction});
  });
}

template <bool kSqrt>
std::vector<Tensor> var_backward(BackwardContext& c);  // below

OpDef var_def(const char* name, bool with_mean, bool sqrt) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}};
  d.attrs = {{"dim", std::monostate{}}, {"correction", 1.0}, {"keepdim", false}};
  d.meta = with_mean ? var_mean_meta : var_meta;
  d.cpu_kernel = sqrt ? var_kernel<true> : var_kernel<false>;
  d.num_outputs = with_mean ? 2 : 1;
  d.backward = sqrt ? var_backward<true> : var_backward<false>;
  d.save_inputs = 1;                 // d var / dx = 2 (x - mean) / dof
  d.save_outputs = sqrt ? 1u : 0u;   // d std = d var / (2 std)
  return d;
}

// ---------------------------------------------------------------- logsumexp
template <typename A>
struct LseAcc {
  A m = -std::numeric_limits<A>::infinity();
  A s = 0;
};

/// Running (max, sum of exp(x - max)); the max only changes by rescaling the sum, so one
/// pass suffices. Equal infinities add exp(0) instead of exp(inf - inf).
template <typename T>
struct LsePolicy {
  using in_t = T;
  using A = opmath_t<T>;
  using acc_t = LseAcc<A>;
  static constexpr int kLanes = 4;
  T* out;
  acc_t identity() const { return {}; }
  void step(acc_t& a, T v, int64_t) const {
    const A x = static_cast<A>(v);
    if (x > a.m) {
      a.s = a.s * std::exp(a.m - x) + A(1);
      a.m = x;
    } else if (x == a.m) {
      a.s += A(1);
    } else {
      a.s += std::exp(x - a.m);
    }
  }
  void merge(acc_t& a, const acc_t& b) const {
    if (b.m > a.m) {
      a.s = a.s * std::exp(a.m - b.m) + b.s;
      a.m = b.m;
    } else if (b.m == a.m) {
      a.s += b.s;
    } else {
      a.s += b.s * std::exp(b.m - a.m);
    }
  }
  void write(int64_t o, const acc_t& a) const {
    out[o] = static_cast<T>(a.s == A(0) ? -std::numeric_limits<A>::infinity() : std::log(a.s) + a.m);
  }
};

// ---------------------------------------------------------------- norm
enum class NormKind { Two, One, Zero, Inf, NegInf, General };

struct NormSpec {
  NormKind kind;
  double p;
};

NormSpec parse_norm_p(const char* op, const AttrValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    if (*s == "fro") return {NormKind::Two, 2.0};
    TANDEM_CHECK(*s != "nuc", NotImplementedError, op, "got p='nuc', expected a vector norm (the nuclear norm is a ",
                 "matrix norm: use linalg)");
    throw ValueError(str_cat("[", op, "] got p='", *s, "', expected a number, 'fro' or 'nuc'"));
  }
  double p;
  if (const auto* sc = std::get_if<Scalar>(&v)) p = sc->to_double();
  else if (const auto* d = std::get_if<double>(&v)) p = *d;
  else if (const auto* i = std::get_if<int64_t>(&v)) p = static_cast<double>(*i);
  else if (std::holds_alternative<std::monostate>(v)) p = 2.0;
  else throw TypeError(str_cat("[", op, "] got p=", v, ", expected a number or a string"));
  if (p == 2) return {NormKind::Two, p};
  if (p == 1) return {NormKind::One, p};
  if (p == 0) return {NormKind::Zero, p};
  if (std::isinf(p)) return {p > 0 ? NormKind::Inf : NormKind::NegInf, p};
  return {NormKind::General, p};
}

template <typename T, typename Map, typename Fin>
struct NormSumPolicy {
  using in_t = T;
  using acc_t = opmath_t<T>;
  static constexpr int kLanes = sizeof(acc_t) <= 4 ? 32 : 16;
  T* out;
  Map map;
  Fin fin;
  acc_t identity() const { return acc_t(0); }
  void step(acc_t& a, T v, int64_t) const { a += map(static_cast<acc_t>(v)); }
  void merge(acc_t& a, const acc_t& b) const { a += b; }
  void write(int64_t o, const acc_t& a) const { out[o] = static_cast<T>(fin(a)); }
};
template <typename T, typename Map, typename Fin>
NormSumPolicy<T, Map, Fin> norm_sum(T* out, Map m, Fin f) {
  return {out, m, f};
}

/// max |x| (Greater) or min |x|; NaN propagates.
template <typename T, bool Greater>
struct AbsExtremePolicy {
  using in_t = T;
  using acc_t = opmath_t<T>;
  static constexpr int kLanes = 16;
  T* out;
  static acc_t pick(acc_t a, acc_t x) { return (x != x || (Greater ? x > a : x < a)) ? x : a; }
  acc_t identity() const { return Greater ? acc_t(0) : std::numeric_limits<acc_t>::infinity(); }
  void step(acc_t& a, T v, int64_t) const { a = pick(a, std::abs(static_cast<acc_t>(v))); }
  void merge(acc_t& a, const acc_t& b) const { a = pick(a, b); }
  void write(int64_t o, const acc_t& a) const { out[o] = static_cast<T>(a); }
};

void norm_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  parse_norm_p(c.op, c.attrs.at(0));
  auto dt = c.attrs.opt_dtype(3);
  TANDEM_CHECK(is_floating_point(in.dtype), TypeError, c.op, "got input dtype ", dtype_name(in.dtype),
               ", expected a floating dtype");
  if (dt)
    TANDEM_CHECK(is_floating_point(*dt), TypeError, c.op, "got dtype argument ", dtype_name(*dt),
                 ", expected a floating dtype");
  uint64_t mask = reduce_mask(c.op, c.attrs, 1, in.dim());
  c.outputs.push_back(TensorMeta{dt ? *dt : in.dtype, reduced_sizes(in.sizes, mask, c.attrs.b(2)), {}});
}

void norm_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  const NormSpec spec = parse_norm_p(c.op, c.attrs.at(0));
  const uint64_t mask = reduce_mask(c.op, c.attrs, 1, c.inputs[0].dim());
  if (ops::reduced_numel(c.inputs[0].sizes(), mask) == 0) {
    kernels::fill_kernel(out, 0);  // every p-norm of an empty vector is 0 (as PyTorch)
    return;
  }
  Tensor x = cast_for_kernel(c.inputs[0], out.dtype());
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), c.op, [&] {
    using A = opmath_t<scalar_t>;
    scalar_t* o = out.data_ptr<scalar_t>();
    auto ident = [](A a) { return a; };
    switch (spec.kind) {
      case NormKind::Two:
        run_reduce(x, out, mask, norm_sum<scalar_t>(o, [](A v) { return v * v; }, [](A a) { return std::sqrt(a); }));
        break;
      case NormKind::One:
        run_reduce(x, out, mask, norm_sum<scalar_t>(o, [](A v) { return std::abs(v); }, ident));
        break;
      case NormKind::Zero:
        run_reduce(x, out, mask, norm_sum<scalar_t>(o, [](A v) { return v != A(0) ? A(1) : A(0); }, ident));
        break;
      case NormKind::Inf:
        run_reduce(x, out, mask, AbsExtremePolicy<scalar_t, true>{o});
        break;
      case NormKind::NegInf:
        run_reduce(x, out, mask, AbsExtremePolicy<scalar_t, false>{o});
        break;
      case NormKind::General: {
        const A p = static_cast<A>(spec.p), inv = static_cast<A>(1.0 / spec.p);
        run_reduce(x, out, mask,
                   norm_sum<scalar_t>(o, [p](A v) { return std::pow(std::abs(v), p); }, [inv](A a) { return std::pow(a, inv); }));
        break;
      }
    }
  });
}


// ---------------------------------------------------------------- backward rules
// PyTorch's derivatives (1.13) written with tandem ops so they are differentiable again.
using Grads = std::vector<Tensor>;

/// g with the reduced dims restored (size 1), cast to the input's dtype.
Tensor grad_like_out(const Tensor& g, const Tensor& x, uint64_t mask, bool keepdim) {
  Tensor r = ops::unsqueeze_reduced(g, x.dim(), mask, keepdim);
  return r.dtype() == x.dtype() ? r : r.to(x.dtype());
}

// var = sum((x - mean)^2) / (N - correction); std = sqrt(var) (zero gradient where std = 0);
// var_mean/std_mean also pass the mean's gradient, g / N to every element.
template <bool kSqrt>
Grads var_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0]) return r;
  const Tensor& x = c.inputs[0];
  const uint64_t mask = reduce_mask(c.op, c.attrs, 0, x.dim());
  const bool keepdim = c.attrs.b(2);
  const double n = static_cast<double>(ops::reduced_numel(x.sizes(), mask));
  const double dof = n - c.attrs.f(1);
  const std::vector<int64_t> dims = ops::mask_dims(mask, x.dim());
  Tensor acc;
  if (c.grad_outputs[0].defined()) {
    Tensor g = grad_like_out(c.grad_outputs[0], x, mask, keepdim);
    if constexpr (kSqrt) {
      Tensor sd = grad_like_out(c.outputs[0], x, mask, keepdim);
      g = where(sd == Scalar(0), Scalar(0), g / (sd * Scalar(2)));
    }
    Tensor centered = x.dim() == 0 ? x - x : x - mean(x, dims, /*keepdim=*/true);
    acc = g * centered * Scalar(2.0 / dof);
  }
  if (c.grad_outputs.size() > 1 && c.grad_outputs[1].defined()) {
    Tensor gm = grad_like_out(c.grad_outputs[1], x, mask, keepdim) / Scalar(n);
    acc = acc.defined() ? acc + gm : gm.expand(x.sizes());
  }
  if (acc.defined() && !acc.sizes().equals(x.sizes())) acc = acc.expand(x.sizes());
  r[0] = acc;
  return r;
}

Grads logsumexp_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0]) return r;
  const Tensor& x = c.inputs[0];
  const uint64_t mask = reduce_mask(c.op, c.attrs, 0, x.dim());
  const bool keepdim = c.attrs.b(1);
  Tensor g = grad_like_out(c.grad_outputs[0], x, mask, keepdim);
  Tensor out = grad_like_out(c.outputs[0], x, mask, keepdim);
  r[0] = g * exp(x - out);
  return r;
}

// norm: p = 2 (fro): x g / norm (0 where the norm is 0); p = 1: sign(x) g; p = 0: zero;
// p = +-inf: sign(x) g shared evenly among the elements whose |x| equals the result;
// otherwise x |x|^(p - 2) g / norm^(p - 1) (0 where the norm is 0).
Grads norm_backward(BackwardContext& c) {
  Grads r(1);
  if (!c.needs_input_grad[0]) return r;
  const Tensor& x = c.inputs[0];
  const NormSpec spec = parse_norm_p(c.op, c.attrs.at(0));
  const uint64_t mask = reduce_mask(c.op, c.attrs, 1, x.dim());
  const bool keepdim = c.attrs.b(2);
  Tensor g = grad_like_out(c.grad_outputs[0], x, mask, keepdim);
  Tensor out = grad_like_out(c.outputs[0], x, mask, keepdim);
  Tensor res;
  switch (spec.kind) {
    case NormKind::Zero: res = x * Scalar(0); break;
    case NormKind::One: res = g * sign(x); break;
    case NormKind::Two: res = where(out == Scalar(0), Scalar(0), x * (g / out)); break;
    case NormKind::Inf:
    case NormKind::NegInf:
      res = sign(x) * ops::evenly_distribute_grad(g, abs(x), out, x.dim() == 0 ? 0 : mask, /*keepdim=*/true);
      break;
    case NormKind::General: {
      Tensor ax = abs(x);
      Tensor num = x * pow(ax, Scalar(spec.p - 2));
      if (spec.p < 2) num = where(x == Scalar(0), Scalar(0), num);  // |x|^(p-2) is inf at 0
      res = where(out == Scalar(0), Scalar(0), num * (g / pow(out, Scalar(spec.p - 1))));
      break;
    }
  }
  if (!res.sizes().equals(x.sizes())) res = res.expand(x.sizes());
  r[0] = res;
  return r;
}
}  // namespace


TANDEM_REGISTER_OP(var) {
  OpDef d = var_def("var", false, false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(std) {
  OpDef d = var_def("std", false, true);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(var_mean) {
  OpDef d = var_def("var_mean", true, false);
  d.autocast = Autocast::Float32;
  return d;
}
TANDEM_REGISTER_OP(std_mean) {
  OpDef d = var_def("std_mean", true, true);
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(logsumexp) {
  OpDef d;
  d.name = "logsumexp";
  d.autocast = Autocast::Float32;
  d.inputs = {{"self"}};
  d.attrs = {{"dim", std::monostate{}}, {"keepdim", false}};
  d.promotion = Promotion::IntToFloat;  // bool/integer inputs compute in the default float dtype
  d.meta = [](MetaContext& c) {
    const MetaRef& in = c.inputs[0];
    uint64_t mask = reduce_mask(c.op, c.attrs, 0, in.dim());
    c.outputs.push_back(TensorMeta{c.common_dtype, reduced_sizes(in.sizes, mask, c.attrs.b(1)), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& x = c.inputs[0];
    const Tensor& out = c.outputs[0];
    uint64_t mask = reduce_mask(c.op, c.attrs, 0, x.dim());
    TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), c.op, [&] { run_reduce(x, out, mask, LsePolicy<scalar_t>{out.data_ptr<scalar_t>()}); });
  };
  d.backward = logsumexp_backward;
  d.save_inputs = 1;  // grad = g * exp(x - out)
  d.save_outputs = 1;
  return d;
}

TANDEM_REGISTER_OP(norm) {
  OpDef d;
  d.name = "norm";
  d.autocast = Autocast::Float32;
  d.inputs = {{"self"}};
  d.attrs = {{"p", Scalar(2)}, {"dim", std::monostate{}}, {"keepdim", false}, {"dtype", std::monostate{}}};
  d.meta = norm_meta;
  d.cpu_kernel = norm_kernel;
  d.backward = norm_backward;
  d.save_inputs = 1;
  d.save_outputs = 1;
  return d;
}

// ---------------------------------------------------------------- functional API
namespace {
AttrValue dims_or_none(std::optional<IntArrayRef> dim) {
  return dim ? AttrValue(dim->vec()) : AttrValue(std::monostate{});
}
std::tuple<Tensor, Tensor> two(OpOutputs o) { return {std::move(o[0]), std::move(o[1])}; }
Tensor var_call(const OpDef& op, const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim) {
  return dispatch1(op, {self}, {dims_or_none(dim), AttrValue(correction), AttrValue(keepdim)});
}
}  // namespace

Tensor var(const Tensor& self) { return var_call(op_var(), self, std::nullopt, 1.0, false); }
Tensor var(const Tensor& self, IntArrayRef dim, bool unbiased, bool keepdim) {
  return var_call(op_var(), self, dim, unbiased ? 1.0 : 0.0, keepdim);
}
Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim) {
  return var_call(op_var(), self, dim, correction, keepdim);
}
Tensor std(const Tensor& self) { return var_call(op_std(), self, std::nullopt, 1.0, false); }
Tensor std(const Tensor& self, IntArrayRef dim, bool unbiased, bool keepdim) {
  return var_call(op_std(), self, dim, unbiased ? 1.0 : 0.0, keepdim);
}
Tensor std(const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim) {
  return var_call(op_std(), self, dim, correction, keepdim);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim) {
  return two(dispatch(op_var_mean(), {self}, {dims_or_none(dim), AttrValue(correction), AttrValue(keepdim)}));
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim, double correction, bool keepdim) {
  return two(dispatch(op_std_mean(), {self}, {dims_or_none(dim), AttrValue(correction), AttrValue(keepdim)}));
}
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return dispatch1(op_logsumexp(), {self}, {AttrValue(dim.vec()), AttrValue(keepdim)});
}
Tensor norm(const Tensor& self, const Scalar& p) { return dispatch1(op_norm(), {self}, {AttrValue(p)}); }
Tensor norm(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return dispatch1(op_norm(), {self}, {AttrValue(p), AttrValue(dim.vec()), AttrValue(keepdim), opt_attr(dtype)});
}
Tensor norm(const Tensor& self, const char* p, IntArrayRef dim, bool keepdim) {
  return dispatch1(op_norm(), {self}, {AttrValue(std::string(p)), AttrValue(dim.vec()), AttrValue(keepdim)});
}

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::var() const { return tandem::var(*this); }
Tensor Tensor::var(IntArrayRef dim, bool unbiased, bool keepdim) const { return tandem::var(*this, dim, unbiased, keepdim); }
Tensor Tensor::var(std::optional<IntArrayRef> dim, double correction, bool keepdim) const {
  return tandem::var(*this, dim, correction, keepdim);
}
Tensor Tensor::std() const { return tandem::std(*this); }
Tensor Tensor::std(IntArrayRef dim, bool unbiased, bool keepdim) const { return tandem::std(*this, dim, unbiased, keepdim); }
Tensor Tensor::std(std::optional<IntArrayRef> dim, double correction, bool keepdim) const {
  return tandem::std(*this, dim, correction, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const { return tandem::logsumexp(*this, dim, keepdim); }
Tensor Tensor::norm(const Scalar& p) const { return tandem::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return tandem::norm(*this, p, dim, keepdim, dtype);
}
Tensor Tensor::norm(const char* p, IntArrayRef dim, bool keepdim) const { return tandem::norm(*this, p, dim, keepdim); }

}  // namespace tandem
