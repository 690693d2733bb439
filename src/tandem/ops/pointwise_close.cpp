// Closeness and equality tests of the pointwise family: isclose, allclose, equal. All three
// are composite ops (written with comparisons and arithmetic, so each step rounds as
// PyTorch's does) and not differentiable; allclose and equal return a 0-d bool tensor as
// ops, and a C++ bool from their functional forms.
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/unary.h"

namespace tandem {

namespace {

// Validation shared by isclose and allclose (PyTorch raises before computing anything).
void check_close_args(const char* op, const Tensor& a, const Tensor& b, double rtol, double atol) {
  TANDEM_CHECK(a.dtype() == b.dtype(), TypeError, op, "expected self and other to have the same dtype, got ",
               dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  TANDEM_CHECK(rtol >= 0, ValueError, op, "rtol must be greater than or equal to zero, got ", rtol);
  TANDEM_CHECK(atol >= 0, ValueError, op, "atol must be greater than or equal to zero, got ", atol);
  ops::broadcast_shapes(op, a.sizes(), b.sizes());
}

// equal values, or (equal_nan) both NaN, or a finite difference within atol + rtol*|other|.
// Bool and integer inputs take the default float dtype for the tolerance arithmetic.
Tensor close_values(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  Tensor close = eq(a, b);
  const bool floating = is_floating_point(a.dtype());
  if (equal_nan && floating) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  const Tensor fa = floating ? a : a.to(default_float_dtype());
  const Tensor fb = floating ? b : b.to(default_float_dtype());
  const Tensor allowed = abs(fb * Scalar(rtol)) + Scalar(atol);
  const Tensor actual = abs(fa - fb);
  return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)));
}

OpDef close_def(const char* name, CompositeFn body) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self", false, false, false}, {"other", false, false, false}};
  d.attrs = {{"rtol", 1e-5}, {"atol", 1e-8}, {"equal_nan", false}};
  d.composite = body;
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(isclose) {
  return close_def("isclose", [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    check_close_args("isclose", in[0], in[1], a.f(0), a.f(1));
    return {close_values(in[0], in[1], a.f(0), a.f(1), a.b(2))};
  });
}
TANDEM_REGISTER_OP(allclose) {
  return close_def("allclose", [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    check_close_args("allclose", in[0], in[1], a.f(0), a.f(1));
    return {all(close_values(in[0], in[1], a.f(0), a.f(1), a.b(2)))};
  });
}

// equal: a 0-d bool tensor; false for different sizes, else all(self == other) with type
// promotion (NaN != NaN).
TANDEM_REGISTER_OP(equal) {
  OpDef d;
  d.name = "equal";
  d.inputs = {{"self", false, false, false}, {"other", false, false, false}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) -> std::vector<Tensor> {
    if (!in[0].sizes().equals(in[1].sizes())) return {full({}, Scalar(false), kBool)};
    return {all(eq(in[0], in[1]))};
  };
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return dispatch1(op_isclose(), {self, other}, {AttrValue(rtol), AttrValue(atol), AttrValue(equal_nan)});
}
bool allclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return dispatch1(op_allclose(), {self, other}, {AttrValue(rtol), AttrValue(atol), AttrValue(equal_nan)}).item<bool>();
}
bool equal(const Tensor& self, const Tensor& other) { return dispatch1(op_equal(), {self, other}).item<bool>(); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return tandem::isclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return tandem::allclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& other) const { return tandem::equal(*this, other); }

}  // namespace tandem
