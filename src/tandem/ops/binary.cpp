// Binary elementwise ops. Each op: schema + promotion + elementwise meta + a kernel built
// from kernels::binary_kernel; the in-place variant ("add_") is derived by the registry.
#include "tandem/ops/binary.h"

#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/shape.h"

namespace tandem {

std::vector<Tensor> add_backward(BackwardContext& c);
std::vector<Tensor> sub_backward(BackwardContext& c);
std::vector<Tensor> mul_backward(BackwardContext& c);

namespace {
OpDef binary_op(const char* name, Promotion p = Promotion::Default) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}, {"other"}};
  d.promotion = p;
  d.meta = ops::elementwise_meta;
  d.inplace_variant = true;
  d.pointwise = true;
  return d;
}
}  // namespace

TANDEM_REGISTER_OP(add) {
  OpDef d = binary_op("add");
  d.backward = add_backward;
  d.attrs = {{"alpha", Scalar(1)}};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(!(c.common_dtype == DType::Bool && !c.attrs.scalar(0).is_bool()) || c.attrs.scalar(0).to_int() == 1,
                 TypeError, c.op, "for bool inputs alpha must be a bool or 1");
    TANDEM_CHECK(is_floating_point(c.common_dtype) || !c.attrs.scalar(0).is_floating_point(), TypeError, c.op,
                 "for integral input tensors, argument alpha must not be a floating point number");
    ops::elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Scalar& alpha = c.attrs.scalar(0);
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      using M = kernels::opmath_t<scalar_t>;
      if constexpr (std::is_same_v<scalar_t, bool>) {
        kernels::binary_kernel<bool, bool>(out, c.inputs[0], c.inputs[1], [](bool a, bool b) { return a || b; });
      } else {
        const M al = alpha.to<M>();
        if (al == M(1))
          kernels::binary_kernel<scalar_t, scalar_t>(out, c.inputs[0], c.inputs[1], [](M a, M b) { return a + b; });
        else
          kernels::binary_kernel<scalar_t, scalar_t>(out, c.inputs[0], c.inputs[1], [al](M a, M b) { return a + al * b; });
      }
    });
  };
  return d;
}

TANDEM_REGISTER_OP(sub) {
  OpDef d = binary_op("sub");
  d.backward = sub_backward;
  d.attrs = {{"alpha", Scalar(1)}};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.common_dtype != DType::Bool, TypeError, c.op,
                 "subtraction with two bool tensors is not supported, expected numeric tensors; use logical_xor");
    TANDEM_CHECK(is_floating_point(c.common_dtype) || !c.attrs.scalar(0).is_floating_point(), TypeError, c.op,
                 "for integral input tensors, argument alpha must not be a floating point number");
    ops::elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Scalar& alpha = c.attrs.scalar(0);
    TANDEM_DISPATCH_NUMERIC_TYPES(out.dtype(), c.op, [&] {
      using M = kernels::opmath_t<scalar_t>;
      const M al = alpha.to<M>();
      kernels::binary_kernel<scalar_t, scalar_t>(out, c.inputs[0], c.inputs[1], [al](M a, M b) { return a - al * b; });
    });
  };
  return d;
}

TANDEM_REGISTER_OP(mul) {
  OpDef d = binary_op("mul");
  d.backward = mul_backward;
  d.save_inputs = 0b11;
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    TANDEM_DISPATCH_ALL_TYPES(out.dtype(), c.op, [&] {
      using M = kernels::opmath_t<scalar_t>;
      if constexpr (std::is_same_v<scalar_t, bool>)
        kernels::binary_kernel<bool, bool>(out, c.inputs[0], c.inputs[1], [](bool a, bool b) { return a && b; });
      else
        kernels::binary_kernel<scalar_t, scalar_t>(out, c.inputs[0], c.inputs[1], [](M a, M b) { return a * b; });
    });
  };
  return d;
}

// ---------------------------------------------------------------- backward rules
using ops::reduce_grad;

std::vector<Tensor> add_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Scalar& alpha = c.attrs.scalar(0);
  std::vector<Tensor> r(2);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g, c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(alpha.to_double() == 1.0 ? g : g * alpha, c.input_metas[1]);
  return r;
}
std::vector<Tensor> sub_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(2);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g, c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(g * (-c.attrs.scalar(0).to_double()), c.input_metas[1]);
  return r;
}
std::vector<Tensor> mul_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(2);
  if (c.needs_input_grad[0]) r[0] = reduce_grad(g * c.inputs[1], c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = reduce_grad(g * c.inputs[0], c.input_metas[1]);
  return r;
}

// ---------------------------------------------------------------- functional API
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return dispatch1(op_add(), {a, b}, {AttrValue(alpha)}); }
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrap_scalar(b), alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return dispatch1(op_sub(), {a, b}, {AttrValue(alpha)}); }
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrap_scalar(b), alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch1(op_mul(), {a, b}); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrap_scalar(b)); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(wrap_scalar(a), b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrap_scalar(a), b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(wrap_scalar(a), b); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return tandem::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return tandem::add(*this, o, alpha); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  dispatch1(*op_add().inplace, {*this, o}, {AttrValue(alpha)});
  return *this;
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) { return add_(wrap_scalar(o), alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return tandem::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return tandem::sub(*this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  dispatch1(*op_sub().inplace, {*this, o}, {AttrValue(alpha)});
  return *this;
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return sub_(wrap_scalar(o), alpha); }
Tensor Tensor::mul(const Tensor& o) const { return tandem::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return tandem::mul(*this, o); }
Tensor& Tensor::mul_(const Tensor& o) {
  dispatch1(*op_mul().inplace, {*this, o});
  return *this;
}
Tensor& Tensor::mul_(const Scalar& o) { return mul_(wrap_scalar(o)); }
Tensor& Tensor::operator+=(const Tensor& o) { return add_(o); }
Tensor& Tensor::operator+=(const Scalar& o) { return add_(o); }
Tensor& Tensor::operator-=(const Tensor& o) { return sub_(o); }
Tensor& Tensor::operator-=(const Scalar& o) { return sub_(o); }
Tensor& Tensor::operator*=(const Tensor& o) { return mul_(o); }
Tensor& Tensor::operator*=(const Scalar& o) { return mul_(o); }
Tensor Tensor::sum_to_size(IntArrayRef sizes) const { return tandem::sum_to_size(*this, sizes); }

}  // namespace tandem
