// Random ops. Marked OpDef::random so passes never merge or fold them.
#include "tandem/ops/random.h"

#include <vector>

#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/op_utils.h"

namespace tandem {

namespace {
void random_meta(MetaContext& c) {
  const auto& sizes = c.attrs.ints(0);
  check_sizes_nonnegative(sizes, c.op);
  DType dt = c.attrs.dtype(1);
  TANDEM_CHECK(is_floating_point(dt), TypeError, c.op, "got dtype ", dtype_name(dt), ", expected a floating dtype");
  c.outputs.push_back(TensorMeta{dt, sizes, {}});
}

// Draws into a contiguous output: float/double directly, reduced floats via float.
template <typename Fill>
void fill_floating(const Tensor& out, Fill fill) {
  const int64_t n = out.numel();
  switch (out.dtype()) {
    case DType::Float32: fill(out.data_ptr<float>(), n); break;
    case DType::Float64: fill(out.data_ptr<double>(), n); break;
    default: {
      std::vector<float> tmp(static_cast<size_t>(n));
      fill(tmp.data(), n);
      Tensor src = from_blob(tmp.data(), out.sizes(), DType::Float32);
      kernels::copy_kernel(out, src);
    }
  }
}
}  // namespace

TANDEM_REGISTER_OP(rand) {
  OpDef d;
  d.name = "rand";
  d.attrs = {{"size", std::vector<int64_t>{}}, {"dtype", DType::Float32}};
  d.meta = random_meta;
  d.random = true;
  d.cpu_kernel = [](KernelContext& c) {
    fill_floating(c.outputs[0], [](auto* p, int64_t n) { default_generator().fill_uniform(p, n); });
  };
  return d;
}

TANDEM_REGISTER_OP(randn) {
  OpDef d;
  d.name = "randn";
  d.attrs = {{"size", std::vector<int64_t>{}}, {"dtype", DType::Float32}};
  d.meta = random_meta;
  d.random = true;
  d.cpu_kernel = [](KernelContext& c) {
    fill_floating(c.outputs[0], [](auto* p, int64_t n) { default_generator().fill_normal(p, n); });
  };
  return d;
}

TANDEM_REGISTER_OP(randint) {
  OpDef d;
  d.name = "randint";
  d.attrs = {{"low", int64_t{0}}, {"high", int64_t{1}}, {"size", std::vector<int64_t>{}}, {"dtype", DType::Int64}};
  d.random = true;
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.attrs.i(0) < c.attrs.i(1), ValueError, "randint", "expected low < high, got low ", c.attrs.i(0),
                 " and high ", c.attrs.i(1));
    check_sizes_nonnegative(c.attrs.ints(2), "randint");
    c.outputs.push_back(TensorMeta{c.attrs.dtype(3), c.attrs.ints(2), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const int64_t lo = c.attrs.i(0);
    const uint64_t range = static_cast<uint64_t>(c.attrs.i(1) - lo);
    Generator& g = default_generator();
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), "randint", [&] {
      scalar_t* p = out.data_ptr<scalar_t>();
      // 64-bit draws make the modulo bias at most range / 2^64: negligible.
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<scalar_t>(lo + static_cast<int64_t>(g.next_u64() % range));
    });
  };
  return d;
}

TANDEM_REGISTER_OP(bernoulli) {
  OpDef d;
  d.name = "bernoulli";
  d.inputs = {{"self", false, false, false}};
  d.attrs = {{"p", std::monostate{}}};
  d.random = true;
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(is_floating_point(c.inputs[0].dtype), TypeError, "bernoulli", "got dtype ",
                 dtype_name(c.inputs[0].dtype), ", expected a floating dtype");
    if (auto p = c.attrs.opt_f(0))
      TANDEM_CHECK(*p >= 0 && *p <= 1, ValueError, "bernoulli", "expected 0 <= p <= 1, got ", *p);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, c.inputs[0].sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const int64_t n = out.numel();
    std::vector<double> prob;
    if (auto p = c.attrs.opt_f(0)) {
      prob.assign(static_cast<size_t>(n), *p);
    } else {
      Tensor pd = c.inputs[0].to(DType::Float64).contiguous();
      const double* pp = pd.data_ptr<double>();
      prob.assign(pp, pp + n);
      for (double v : prob)  // data-dependent check, before anything is written
        TANDEM_CHECK(v >= 0 && v <= 1, ValueError, "bernoulli", "expected all probabilities in [0, 1], got ", v);
    }
    std::vector<double> u(static_cast<size_t>(n));
    default_generator().fill_uniform(u.data(), n);
    Tensor tmp = empty_tensor(out.sizes(), DType::Float64);
    double* t = tmp.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) t[i] = u[static_cast<size_t>(i)] < prob[static_cast<size_t>(i)] ? 1.0 : 0.0;
    kernels::copy_kernel(out, tmp);
  };
  return d;
}

TANDEM_REGISTER_OP(randperm) {
  OpDef d;
  d.name = "randperm";
  d.attrs = {{"n", int64_t{0}}, {"dtype", DType::Int64}};
  d.random = true;
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.attrs.i(0) >= 0, ValueError, "randperm", "n must be non-negative, got ", c.attrs.i(0));
    c.outputs.push_back(TensorMeta{c.attrs.dtype(1), {c.attrs.i(0)}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const int64_t n = c.attrs.i(0);
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
    Generator& g = default_generator();
    for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
      auto j = static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(i + 1));
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    }
    Tensor src = from_blob(perm.data(), {n}, DType::Int64);
    kernels::copy_kernel(c.outputs[0], src);
  };
  return d;
}

Tensor rand(IntArrayRef sizes, TensorOptions o) {
  Tensor t = dispatch1(op_rand(), {}, {AttrValue(sizes.vec()), AttrValue(o.dtype_or(default_float_dtype()))});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
Tensor randn(IntArrayRef sizes, TensorOptions o) {
  Tensor t = dispatch1(op_randn(), {}, {AttrValue(sizes.vec()), AttrValue(o.dtype_or(default_float_dtype()))});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions o) {
  return dispatch1(op_randint(), {}, {AttrValue(low), AttrValue(high), AttrValue(sizes.vec()), AttrValue(o.dtype_or(DType::Int64))});
}
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions o) { return randint(0, high, sizes, o); }
Tensor rand_like(const Tensor& t) { return rand(t.sizes(), t.dtype()); }
Tensor randn_like(const Tensor& t) { return randn(t.sizes(), t.dtype()); }
Tensor bernoulli(const Tensor& self) { return dispatch1(op_bernoulli(), {self}); }
Tensor bernoulli(const Tensor& self, double p) { return dispatch1(op_bernoulli(), {self}, {AttrValue(p)}); }
Tensor randperm(int64_t n, TensorOptions o) { return dispatch1(op_randperm(), {}, {AttrValue(n), AttrValue(o.dtype_or(DType::Int64))}); }

}  // namespace tandem
