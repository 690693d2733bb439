// Three-operand elementwise ops: where (selection), lerp, addcmul, addcdiv.
#include <cmath>

#include "tandem/ops/pointwise.h"
#include "tandem/ops/pointwise_util.h"

namespace tandem {

using namespace ops;
using namespace ops::pw;

namespace {
/// Two's-complement (wrapping) view of an integer, for overflow-free integer arithmetic.
template <typename T>
uint64_t wrap64(T x) {
  return static_cast<uint64_t>(static_cast<int64_t>(x));
}

template <typename M>
M lerp_rule(M a, M b, M w) {
  // From the nearer end, so lerp(a, b, 1) == b exactly (PyTorch's formula).
  return std::abs(w) < M(0.5) ? a + w * (b - a) : b - (b - a) * (M(1) - w);
}

void lerp_meta(MetaContext& c) {
  const MetaRef &self = c.inputs[0], &end = c.inputs[1], &weight = c.inputs[2];
  require_floating(c.op, self.dtype);
  reject_half(c.op, self.dtype, "float32, float64 or bfloat16");
  TANDEM_CHECK(end.dtype == self.dtype, TypeError, c.op, "expected dtype ", dtype_name(self.dtype),
               " for `end` but got dtype ", dtype_name(end.dtype), " (lerp does not promote)");
  TANDEM_CHECK(weight.is_wrapped_number || weight.dtype == self.dtype, TypeError, c.op, "expected dtype ",
               dtype_name(self.dtype), " for `weight` but got dtype ", dtype_name(weight.dtype), " (lerp does not promote)");
  c.common_dtype = self.dtype;
  elementwise_meta(c);
}

template <typename T>
void lerp_typed(const Tensor& out, const Tensor& self, const Tensor& end, const Tensor& weight) {
  using M = opmath_t<T>;
  if constexpr (!std::is_same_v<T, Half>) {  // rejected by meta, as PyTorch 1.13 CPU
    if (weight.impl()->is_wrapped_number()) {
      const M w = wrapped_value(weight).to<M>();
      kernels::binary_kernel<T, T>(out, self, end, [w](M a, M b) { return lerp_rule(a, b, w); });
    } else {
      kernels::ternary_kernel<T, T, T, T>(out, self, end, weight, [](M a, M b, M w) { return lerp_rule(a, b, w); });
    }
  }
}

void lerp_kernel(KernelContext& c) {
  TANDEM_DISPATCH_FLOATING_TYPES(c.outputs[0].dtype(), c.op,
                                 [&] { lerp_typed<scalar_t>(c.outputs[0], c.inputs[0], c.inputs[1], c.inputs[2]); });
}

template <bool kDiv>
void addc_kernel(const char* op, const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                 const Scalar& value) {
  TANDEM_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, Half>) {
      TANDEM_INTERNAL_ASSERT(false, "float16 is rejected by meta");
    } else if constexpr (std::is_integral_v<scalar_t>) {
      if constexpr (!kDiv) {
        const M v = checked_scalar<scalar_t>(value, op, "value");
        kernels::ternary_kernel<scalar_t, scalar_t, scalar_t, scalar_t>(out, self, t1, t2, [v](M a, M b, M d) {
          return static_cast<scalar_t>(wrap64(a) + wrap64(v) * wrap64(b) * wrap64(d));
        });
      } else {
        TANDEM_INTERNAL_ASSERT(false, "integral addcdiv is rejected by meta");
      }
    } else {
      const M v = value.to<M>();
      if constexpr (kDiv)
        kernels::ternary_kernel<scalar_t, scalar_t, scalar_t, scalar_t>(out, self, t1, t2,
                                                                        [v](M a, M b, M d) { return a + v * b / d; });
      else
        kernels::ternary_kernel<scalar_t, scalar_t, scalar_t, scalar_t>(out, self, t1, t2,
                                                                        [v](M a, M b, M d) { return a + v * b * d; });
    }
  });
}

OpDef addc_def(const char* name) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}, {"tensor1"}, {"tensor2"}};
  d.attrs = {{"value", Scalar(1)}};
  d.inplace_variant = true;
  d.pointwise = true;
  d.save_inputs = 0b110;  // self is not needed
  return d;
}

// ---------------------------------------------------------------- backward rules
// PyTorch's derivatives (1.13), written with tandem ops (differentiable again) and reduced
// to each input's shape and dtype.
using Grads = std::vector<Tensor>;

// where: the gradient flows to the selected operand; the condition gets none.
Grads where_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor& cond = c.inputs[0];
  Grads r(3);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(where(cond, g, Scalar(0)), c.input_metas[1]);
  if (c.needs_input_grad[2]) r[2] = reduce_grad(where(cond, Scalar(0), g), c.input_metas[2]);
  return r;
}

// lerp = self + weight * (end - self): dself = 1 - weight, dend = weight,
// dweight = end - self. A C++ number weight is a constant (1 - w is computed in double:
// as a tensor op, two wrapped numbers would promote to the default float dtype).
Grads lerp_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor &self = c.inputs[0], &end = c.inputs[1], &w = c.inputs[2];
  Grads r(3);
  if (is_wrapped(w)) {
    const double wv = wrapped_constant(w).to_double();
    if (c.needs_input_grad[0]) r[0] = reduce_grad(g * Scalar(1.0 - wv), c.input_metas[0]);
    if (c.needs_input_grad[1]) r[1] = reduce_grad(g * Scalar(wv), c.input_metas[1]);
    return r;
  }
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g * (Scalar(1) - w), c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(g * w, c.input_metas[1]);
  if (c.needs_input_grad[2]) r[2] = reduce_grad(g * (end - self), c.input_metas[2]);
  return r;
}

// g * value, skipping the product for the default value 1.
Tensor scaled(const Tensor& g, const Scalar& value) {
  return !value.is_floating_point() && !value.is_bool() && value.to_int() == 1 ? g : g * value;
}

// addcmul = self + value * t1 * t2.
Grads addcmul_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Scalar& value = c.attrs.scalar(0);
  Grads r(3);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g, c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(scaled(g * c.inputs[2], value), c.input_metas[1]);
  if (c.needs_input_grad[2]) r[2] = reduce_grad(scaled(g * c.inputs[1], value), c.input_metas[2]);
  return r;
}

// addcdiv = self + value * t1 / t2: dt1 = value / t2, dt2 = -value * t1 / t2^2.
Grads addcdiv_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Scalar& value = c.attrs.scalar(0);
  const Tensor &t1 = c.inputs[1], &t2 = c.inputs[2];
  Grads r(3);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g, c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(scaled(g, value) / t2, c.input_metas[1]);
  if (c.needs_input_grad[2]) r[2] = reduce_grad(negated(scaled(g, value)) * t1 / (t2 * t2), c.input_metas[2]);
  return r;
}
}  // namespace

TANDEM_REGISTER_OP(where) {
  OpDef d;
  d.name = "where";
  d.autocast = Autocast::Promote;
  d.pointwise = true;
  d.inputs = {{"condition", /*promote=*/false, /*optional=*/false, /*differentiable=*/false}, {"self"}, {"other"}};
  d.promotion = Promotion::Default;
  d.meta = [](MetaContext& c) {
    const DType cd = c.inputs[0].dtype;
    TANDEM_CHECK(cd == DType::Bool || cd == DType::UInt8, TypeError, c.op,
                 "expected condition to be a bool tensor, but got a tensor with dtype ", dtype_name(cd));
    elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    // The condition is read as bytes (bool or uint8; nonzero is true) so the loop vectorises.
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      using T = bytes_t<scalar_t>;
      using M = opmath_t<T>;
      kernels::ternary_kernel<T, uint8_t, T, T>(out, c.inputs[0], c.inputs[1], c.inputs[2],
                                                [](uint8_t p, M x, M y) { return p ? x : y; });
    });
  };
  d.backward = where_backward;
  d.save_inputs = 0b001;
  return d;
}

// lerp does not promote (PyTorch requires equal dtypes), so Promotion::None; a C++ number
// weight arrives as a wrapped 0-d tensor of any dtype and is read as a scalar.
TANDEM_REGISTER_OP(lerp) {
  OpDef d;
  d.name = "lerp";
  d.pointwise = true;
  d.inputs = {{"self"}, {"end"}, {"weight"}};
  d.promotion = Promotion::None;
  d.meta = lerp_meta;
  d.cpu_kernel = lerp_kernel;
  d.inplace_variant = true;
  d.backward = lerp_backward;
  d.save_inputs = 0b111;
  return d;
}

TANDEM_REGISTER_OP(addcmul) {
  OpDef d = addc_def("addcmul");
  d.promotion = Promotion::Default;
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.common_dtype != DType::Bool, TypeError, c.op, "got bool tensors, expected numeric tensors");
    reject_half(c.op, c.common_dtype, "an integer dtype, float32, float64 or bfloat16");
    elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    addc_kernel<false>(c.op, c.outputs[0], c.inputs[0], c.inputs[1], c.inputs[2], c.attrs.scalar(0));
  };
  d.backward = addcmul_backward;
  d.autocast = Autocast::Promote;
  return d;
}

// addcdiv rejects integer tensor1/tensor2 by their own dtypes, before promotion, so it
// promotes itself (Promotion::None): meta sees the dtypes the caller passed.
TANDEM_REGISTER_OP(addcdiv) {
  OpDef d = addc_def("addcdiv");
  d.promotion = Promotion::None;
  d.meta = [](MetaContext& c) {
    const DType t1 = c.inputs[1].dtype, t2 = c.inputs[2].dtype;
    TANDEM_CHECK(!(is_integral(t1, true) && is_integral(t2, true)), TypeError, c.op, "got integer tensor1 (",
                 dtype_name(t1), ") and tensor2 (", dtype_name(t2),
                 "), expected a floating tensor1 or tensor2: integer division with addcdiv is no longer supported "
                 "(PyTorch); for the old behaviour use self + value * div(tensor1, tensor2, \"trunc\")");
    const DType t = result_type(c.inputs);
    require_floating(c.op, t);
    reject_half(c.op, t, "float32, float64 or bfloat16");
    c.common_dtype = t;
    elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const DType t = out.dtype();
    addc_kernel<true>(c.op, out, cast_to(c.inputs[0], t), cast_to(c.inputs[1], t), cast_to(c.inputs[2], t),
                      c.attrs.scalar(0));
  };
  d.backward = addcdiv_backward;
  d.autocast = Autocast::Promote;
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return dispatch1(op_where(), {cond, a, b}); }
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) { return where(cond, a, wrap_scalar(b)); }
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) { return where(cond, wrap_scalar(a), b); }
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) { return where(cond, wrap_scalar(a), wrap_scalar(b)); }
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& w) { return dispatch1(op_lerp(), {self, end, wrap_scalar(w)}); }
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& w) { return dispatch1(op_lerp(), {self, end, w}); }
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return dispatch1(op_addcmul(), {self, t1, t2}, {AttrValue(value)});
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return dispatch1(op_addcdiv(), {self, t1, t2}, {AttrValue(value)});
}

Tensor Tensor::where(const Tensor& cond, const Tensor& other) const { return tandem::where(cond, *this, other); }
Tensor Tensor::where(const Tensor& cond, const Scalar& other) const { return tandem::where(cond, *this, other); }
Tensor Tensor::lerp(const Tensor& end, const Scalar& w) const { return tandem::lerp(*this, end, w); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& w) const { return tandem::lerp(*this, end, w); }
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) {
  dispatch1(*op_lerp().inplace, {*this, end, wrap_scalar(w)});
  return *this;
}
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& w) {
  dispatch1(*op_lerp().inplace, {*this, end, w});
  return *this;
}
Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  return tandem::addcmul(*this, t1, t2, value);
}
Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value) {
  dispatch1(*op_addcmul().inplace, {*this, t1, t2}, {AttrValue(value)});
  return *this;
}
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  return tandem::addcdiv(*this, t1, t2, value);
}
Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value) {
  dispatch1(*op_addcdiv().inplace, {*this, t1, t2}, {AttrValue(value)});
  return *this;
}

}  // namespace tandem
