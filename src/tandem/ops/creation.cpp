// Creation and conversion ops. Factories are ops without tensor inputs so that capture
// records them (and constant folding can fold them); from_vector/from_blob wrap data the
// program already has and are not ops.
#include "tandem/ops/creation.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace {
void sizes_dtype_meta(MetaContext& ctx) {
  const auto& sizes = ctx.attrs.ints(0);
  check_sizes_nonnegative(sizes, ctx.op);
  ctx.outputs.push_back(TensorMeta{ctx.attrs.dtype(2), sizes, {}});
}

// PyTorch's checked scalar conversion for fill values (c10::checked_convert): a value
// outside the target's range raises instead of wrapping or hitting undefined behaviour.
// Bool targets take anything; inf and NaN fit floating targets only; a negative integer
// fits uint8 when its magnitude does (it wraps: -1 -> 255, as in PyTorch).
bool scalar_overflows(const Scalar& v, DType t) {
  if (t == DType::Bool || v.is_bool()) return false;
  double hi = 0;
  switch (t) {
    case DType::UInt8: hi = 255; break;
    case DType::Int8: hi = 127; break;
    case DType::Int16: hi = 32767; break;
    case DType::Int32: hi = 2147483647.0; break;
    case DType::Int64: hi = 9223372036854775808.0; break;  // 2^63, exclusive below
    case DType::Float16: hi = 65504.0; break;
    case DType::BFloat16: hi = static_cast<double>(static_cast<float>(BFloat16::from_bits(0x7f7f))); break;
    case DType::Float32: hi = static_cast<double>(std::numeric_limits<float>::max()); break;
    case DType::Float64: hi = std::numeric_limits<double>::max(); break;
    case DType::Bool: break;
  }
  const double lo = t == DType::UInt8 ? 0.0 : t == DType::Int64 ? -hi : -hi - (is_integral(t) ? 1 : 0);
  if (v.is_floating_point()) {
    const double d = v.to_double();
    if (!std::isfinite(d)) return !is_floating_point(t);
    if (t == DType::Int64) return d < lo || d >= hi;
    return d < lo || d > hi;
  }
  const int64_t i = v.to_int();
  if (t == DType::Int64) return false;
  if (t == DType::UInt8) return i > 255 || i < -255;
  return static_cast<double>(i) < lo || static_cast<double>(i) > hi;
}

void check_fill_value(const char* op, const Scalar& v, DType t) {
  TANDEM_CHECK(!scalar_overflows(v, t), TypeError, op, "value ", v, " cannot be converted to type ", dtype_name(t),
               " without overflow");
}
}  // namespace

TANDEM_REGISTER_OP(empty) {
  OpDef d;
  d.name = "empty";
  d.attrs = {{"size", std::vector<int64_t>{}}, {"unused", std::monostate{}}, {"dtype", DType::Float32}};
  d.meta = sizes_dtype_meta;
  d.cpu_kernel = [](KernelContext&) {};
  d.random = true;  // uninitialised contents: never CSE'd or folded
  return d;
}

TANDEM_REGISTER_OP(full) {
  OpDef d;
  d.name = "full";
  d.attrs = {{"size", std::vector<int64_t>{}}, {"fill_value", Scalar(0)}, {"dtype", DType::Float32}};
  d.meta = [](MetaContext& c) {
    sizes_dtype_meta(c);
    check_fill_value("full", c.attrs.scalar(1), c.attrs.dtype(2));
  };
  d.cpu_kernel = [](KernelContext& c) { kernels::fill_kernel(c.outputs[0], c.attrs.scalar(1)); };
  return d;
}

TANDEM_REGISTER_OP(arange) {
  OpDef d;
  d.name = "arange";
  d.attrs = {{"start", Scalar(0)}, {"end", Scalar(0)}, {"step", Scalar(1)}, {"dtype", DType::Int64}};
  // Integer dtypes follow PyTorch: start/end/step are truncated to integers first (so
  // arange(0, 6, 1.5, int32) is [0, 1, 2, 3]) and a step that truncates to 0 is an error;
  // the length comes from the truncated bounds and step for int64 and from the exact ones
  // otherwise (arange(0, 6, 1.5, int64) has 6 elements, with int32 it has 4).
  d.meta = [](MetaContext& c) {
    const Scalar &s0 = c.attrs.scalar(0), &s1 = c.attrs.scalar(1), &s2 = c.attrs.scalar(2);
    const DType dt = c.attrs.dtype(3);
    double start = s0.to_double(), end = s1.to_double(), step = s2.to_double();
    TANDEM_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), ValueError, "arange",
                 "unsupported range: ", start, " -> ", end, " with step ", step);
    if (is_integral(dt, true)) {
      TANDEM_CHECK(s2.to_int() != 0, ValueError, "arange", "step must be nonzero (got ", s2, ", which is 0 as ",
                   dtype_name(dt), ")");
      if (dt == DType::Int64) {
        start = static_cast<double>(s0.to_int());
        end = static_cast<double>(s1.to_int());
        step = static_cast<double>(s2.to_int());
      }
    }
    TANDEM_CHECK(step != 0, ValueError, "arange", "step must be nonzero");
    TANDEM_CHECK((step > 0 && end >= start) || (step < 0 && end <= start), ValueError, "arange",
                 "upper bound and larger bound inconsistent with step sign (start ", start, ", end ", end, ", step ", step, ")");
    int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
    c.outputs.push_back(TensorMeta{dt, {n}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Scalar &s0 = c.attrs.scalar(0), &s2 = c.attrs.scalar(2);
    double start = s0.to_double(), step = s2.to_double();
    bool ints = (s0.is_integral() && s2.is_integral()) || is_integral(out.dtype(), true);
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), "arange", [&] {
      scalar_t* p = out.data_ptr<scalar_t>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        if (ints) p[i] = static_cast<scalar_t>(s0.to_int() + i * s2.to_int());
        else p[i] = static_cast<scalar_t>(start + static_cast<double>(i) * step);
      }
    });
  };
  return d;
}

TANDEM_REGISTER_OP(linspace) {
  OpDef d;
  d.name = "linspace";
  d.attrs = {{"start", 0.0}, {"end", 0.0}, {"steps", int64_t{0}}, {"dtype", DType::Float32}};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.attrs.i(2) >= 0, ValueError, "linspace", "number of steps must be non-negative, got ", c.attrs.i(2));
    c.outputs.push_back(TensorMeta{c.attrs.dtype(3), {c.attrs.i(2)}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    double a = c.attrs.f(0), b = c.attrs.f(1);
    int64_t n = c.attrs.i(2);
    double step = n > 1 ? (b - a) / static_cast<double>(n - 1) : 0.0;
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), "linspace", [&] {
      scalar_t* p = out.data_ptr<scalar_t>();
      // Symmetric evaluation (from both ends) as PyTorch does, so the last value is exact.
      int64_t half = n / 2;
      for (int64_t i = 0; i < n; ++i) {
        double v = n == 1 ? a : i < half ? a + step * static_cast<double>(i) : b - step * static_cast<double>(n - 1 - i);
        p[i] = static_cast<scalar_t>(v);
      }
    });
  };
  return d;
}

TANDEM_REGISTER_OP(eye) {
  OpDef d;
  d.name = "eye";
  d.attrs = {{"n", int64_t{0}}, {"m", int64_t{0}}, {"dtype", DType::Float32}};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.attrs.i(0) >= 0 && c.attrs.i(1) >= 0, ValueError, "eye", "n and m must be non-negative, got ",
                 c.attrs.i(0), " and ", c.attrs.i(1));
    c.outputs.push_back(TensorMeta{c.attrs.dtype(2), {c.attrs.i(0), c.attrs.i(1)}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    kernels::fill_kernel(out, 0);
    int64_t n = out.size(0), m = out.size(1);
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), "eye", [&] {
      scalar_t* p = out.data_ptr<scalar_t>();
      for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = static_cast<scalar_t>(1);
    });
  };
  return d;
}

// clone: contiguous deep copy.
TANDEM_REGISTER_OP(clone) {
  OpDef d;
  d.name = "clone";
  d.inputs = {{"self", false}};
  d.meta = [](MetaContext& c) { c.outputs.push_back(TensorMeta{c.inputs[0].dtype, c.inputs[0].sizes.vec(), {}}); };
  d.cpu_kernel = [](KernelContext& c) { kernels::copy_kernel(c.outputs[0], c.inputs[0]); };
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> { return {c.grad_outputs[0]}; };
  return d;
}

// _to_copy: dtype conversion into a new tensor.
TANDEM_REGISTER_OP(_to_copy) {
  OpDef d;
  d.name = "_to_copy";
  d.pointwise = true;
  d.inputs = {{"self", false}};
  d.attrs = {{"dtype", DType::Float32}};
  d.meta = [](MetaContext& c) { c.outputs.push_back(TensorMeta{c.attrs.dtype(0), c.inputs[0].sizes.vec(), {}}); };
  d.cpu_kernel = [](KernelContext& c) { kernels::copy_kernel(c.outputs[0], c.inputs[0]); };
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> { return {c.grad_outputs[0].to(c.input_metas[0].dtype)}; };
  return d;
}

// copy(self, src): src broadcast to self's shape, converted to self's dtype. The
// in-place variant copy_ writes into self.
TANDEM_REGISTER_OP(copy) {
  OpDef d;
  d.name = "copy";
  // self is differentiable so that copying into a tensor with history is recorded (the
  // overwritten values then get a zero gradient instead of keeping their old history).
  d.inputs = {{"self", false}, {"src", false}};
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &src = c.inputs[1];
    DimVector b = ops::broadcast_shapes("copy_", self.sizes, src.sizes);
    TANDEM_CHECK(IntArrayRef(b).equals(self.sizes), ShapeError, "copy_", "source of shape ", src.sizes,
                 " cannot be broadcast to destination of shape ", self.sizes);
    c.outputs.push_back(TensorMeta{self.dtype, self.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    // Overlapping src/dst (e.g. x.copy_(x.t())) would read values already overwritten.
    const Tensor& src = c.inputs[1];
    if (src.is_alias_of(c.outputs[0])) kernels::copy_kernel(c.outputs[0], src.clone());
    else kernels::copy_kernel(c.outputs[0], src);
  };
  // self is overwritten: its old value gets a zero gradient (PyTorch: zeros_like(grad)).
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    std::vector<Tensor> r(2);
    if (c.needs_input_grad[0]) r[0] = zeros(c.input_metas[0].sizes, c.input_metas[0].dtype);
    if (c.needs_input_grad[1]) r[1] = sum_to_size(c.grad_outputs[0], c.input_metas[1].sizes).to(c.input_metas[1].dtype);
    return r;
  };
  d.inplace_variant = true;
  return d;
}

TANDEM_REGISTER_OP(fill) {
  OpDef d;
  d.name = "fill";
  d.inputs = {{"self", false}};  // differentiable: fill_ cuts the history (zero gradient)
  d.attrs = {{"value", Scalar(0)}};
  d.meta = [](MetaContext& c) {
    check_fill_value("fill_", c.attrs.scalar(0), c.inputs[0].dtype);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, c.inputs[0].sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) { kernels::fill_kernel(c.outputs[0], c.attrs.scalar(0)); };
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    return {zeros(c.input_metas[0].sizes, c.input_metas[0].dtype)};
  };
  d.inplace_variant = true;
  return d;
}

// detach: an alias whose output never carries autograd history.
TANDEM_REGISTER_OP(detach) {
  OpDef d;
  d.name = "detach";
  d.inputs = {{"self", false, false, false}};
  d.view = [](const MetaRef& in, const AttrReader&) { return ViewGeometry{in.sizes.vec(), in.strides.vec(), 0}; };
  d.output_differentiable = {false};
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor empty(IntArrayRef sizes, TensorOptions o) {
  Tensor t = dispatch1(op_empty(), {}, {AttrValue(sizes.vec()), AttrValue(std::monostate{}), AttrValue(o.dtype_or(default_float_dtype()))});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions o) {
  Tensor t = dispatch1(op_full(), {}, {AttrValue(sizes.vec()), AttrValue(value), AttrValue(o.dtype_or(value.dtype()))});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
Tensor zeros(IntArrayRef sizes, TensorOptions o) {
  check_sizes_nonnegative(sizes, "zeros");  // name the function the user called, not full
  return full(sizes, 0, o.dtype(o.dtype_or(default_float_dtype())));
}
Tensor ones(IntArrayRef sizes, TensorOptions o) {
  check_sizes_nonnegative(sizes, "ones");
  return full(sizes, 1, o.dtype(o.dtype_or(default_float_dtype())));
}

Tensor arange(const Scalar& end, TensorOptions o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  bool all_int = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  DType dt = o.dtype_or(all_int ? DType::Int64 : default_float_dtype());
  Tensor t = dispatch1(op_arange(), {}, {AttrValue(start), AttrValue(end), AttrValue(step), AttrValue(dt)});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  Tensor t = dispatch1(op_linspace(), {}, {AttrValue(start), AttrValue(end), AttrValue(steps), AttrValue(o.dtype_or(default_float_dtype()))});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  Tensor t = dispatch1(op_eye(), {}, {AttrValue(n), AttrValue(m.value_or(n)), AttrValue(o.dtype_or(default_float_dtype()))});
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}

namespace {
TensorOptions like(const Tensor& t, const std::optional<TensorOptions>& o) {
  if (!o) return TensorOptions(t.dtype());
  TensorOptions r = *o;
  if (!r.dtype_) r.dtype_ = t.dtype();
  return r;
}
}  // namespace
Tensor empty_like(const Tensor& t, std::optional<TensorOptions> o) { return empty(t.sizes(), like(t, o)); }
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> o) { return zeros(t.sizes(), like(t, o)); }
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> o) { return ones(t.sizes(), like(t, o)); }
Tensor full_like(const Tensor& t, const Scalar& v, std::optional<TensorOptions> o) { return full(t.sizes(), v, like(t, o)); }

template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes, TensorOptions o) {
  check_sizes_nonnegative(sizes, "from_vector");
  TANDEM_CHECK(multiply_integers(sizes) == static_cast<int64_t>(values.size()), ShapeError, "from_vector", "got ",
               values.size(), " values for shape ", sizes, ", expected ", multiply_integers(sizes));
  Tensor t = empty_tensor(sizes, dtype_of_v<T>);
  {
    DispatchDepthGuard internal;  // filling a new tensor is not a data-dependent read
    if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  }
  if (o.dtype_ && *o.dtype_ != t.dtype()) t = t.to(*o.dtype_);
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
template <>
Tensor from_vector<bool>(const std::vector<bool>& values, IntArrayRef sizes, TensorOptions o) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  check_sizes_nonnegative(sizes, "from_vector");
  TANDEM_CHECK(multiply_integers(sizes) == static_cast<int64_t>(values.size()), ShapeError, "from_vector", "got ",
               values.size(), " values for shape ", sizes, ", expected ", multiply_integers(sizes));
  Tensor b = empty_tensor(sizes, DType::Bool);
  {
    DispatchDepthGuard internal;
    if (!bytes.empty()) std::memcpy(b.data_ptr(), bytes.data(), bytes.size());
  }
  if (o.dtype_ && *o.dtype_ != DType::Bool) b = b.to(*o.dtype_);
  if (o.requires_grad_) b.requires_grad_(true);
  return b;
}
template Tensor from_vector(const std::vector<float>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<double>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<int64_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<int32_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<int16_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<int8_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<uint8_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<Half>&, IntArrayRef, TensorOptions);
template Tensor from_vector(const std::vector<BFloat16>&, IntArrayRef, TensorOptions);

Tensor tensor(std::initializer_list<double> v, TensorOptions o) {
  return from_vector(std::vector<double>(v), {static_cast<int64_t>(v.size())}, o.dtype(o.dtype_or(default_float_dtype())));
}
Tensor tensor(std::initializer_list<float> v, TensorOptions o) {
  return from_vector(std::vector<float>(v), {static_cast<int64_t>(v.size())}, o);
}
Tensor tensor(std::initializer_list<int64_t> v, TensorOptions o) {
  return from_vector(std::vector<int64_t>(v), {static_cast<int64_t>(v.size())}, o);
}
Tensor tensor(std::initializer_list<int> v, TensorOptions o) {
  std::vector<int64_t> w(v.begin(), v.end());
  return from_vector(w, {static_cast<int64_t>(w.size())}, o);
}
Tensor tensor(std::initializer_list<bool> v, TensorOptions o) {
  return from_vector(std::vector<bool>(v), {static_cast<int64_t>(v.size())}, o);
}
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions o) {
  std::vector<double> flat;
  size_t cols = rows.size() ? rows.begin()->size() : 0;
  for (const auto& r : rows) {
    TANDEM_CHECK(r.size() == cols, ShapeError, "tensor", "expected sequence of length ", cols, " but got ", r.size());
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return from_vector(flat, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)},
                     o.dtype(o.dtype_or(default_float_dtype())));
}
Tensor scalar_tensor(const Scalar& value, TensorOptions o) { return full({}, value, o); }

Tensor from_blob(void* data, IntArrayRef sizes, DType dtype, std::function<void(void*)> deleter,
                 std::optional<DimVector> strides) {
  check_sizes_nonnegative(sizes, "from_blob");
  DimVector st = strides ? *strides : contiguous_strides(sizes);
  TANDEM_CHECK(st.size() == sizes.size(), ShapeError, "from_blob", "got ", sizes.size(), " sizes and ", st.size(), " strides");
  int64_t extent = 0;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TANDEM_CHECK(st[i] >= 0, ValueError, "from_blob", "negative stride ", st[i]);
    if (sizes[i] == 0) empty = true;
    extent += (sizes[i] - 1) * st[i];
  }
  size_t nbytes = empty ? 0 : static_cast<size_t>((extent + 1) * element_size(dtype));
  auto storage = Storage::make(data, nbytes, kCPU, std::move(deleter));
  return Tensor(IntrusivePtr<TensorImpl>::make(std::move(storage), dtype, sizes.vec(), std::move(st), 0));
}

Tensor clone(const Tensor& self) { return dispatch1(op_clone(), {self}); }
Tensor contiguous(const Tensor& self) { return self.is_contiguous() ? self : clone(self); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::clone() const { return tandem::clone(*this); }
Tensor Tensor::contiguous() const { return tandem::contiguous(*this); }
Tensor Tensor::to(DType dt, bool copy) const {
  if (dt == dtype() && !copy) return *this;
  return dispatch1(op__to_copy(), {*this}, {AttrValue(dt)});
}
Tensor& Tensor::copy_(const Tensor& src) {
  dispatch(*op_copy().inplace, {*this, src});
  return *this;
}
Tensor& Tensor::fill_(const Scalar& v) {
  dispatch(*op_fill().inplace, {*this}, {AttrValue(v)});
  return *this;
}
Tensor& Tensor::zero_() { return fill_(0); }
Tensor Tensor::detach() const { return dispatch1(op_detach(), {*this}); }

}  // namespace tandem
