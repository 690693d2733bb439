// softmax / log_softmax and their backward ops (_softmax_backward_data,
// _log_softmax_backward_data), each with a backward rule (double backward supported).
#include "tandem/core/grad_mode.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/nn_util.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace {

// softmax(self, dim, dtype=None): output in `dtype` (input converted first) or input's dtype.
void softmax_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  wrap_dim(c.attrs.i(0), std::max<int64_t>(in.dim(), 1), c.op);
  DType out = c.attrs.opt_dtype(1).value_or(in.dtype);
  TANDEM_CHECK(is_floating_point(out), TypeError, c.op, "got dtype ", dtype_name(out),
               ", expected a floating dtype (pass dtype= to convert an integer input)");
  c.outputs.push_back(TensorMeta{out, in.sizes.vec(), {}});
}

template <bool Log>
void softmax_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  const int64_t dim = wrap_dim(c.attrs.i(0), std::max<int64_t>(out.dim(), 1), c.op);
  Tensor in = kernels::contiguous_as(c.inputs[0], out.dtype());
  kernels::softmax_kernel(out, in, out.dim() == 0 ? 0 : dim, Log);
}

// _softmax_backward_data(grad_output, output, dim, input_dtype)
void softmax_backward_meta(MetaContext& c) {
  const MetaRef &g = c.inputs[0], &y = c.inputs[1];
  TANDEM_CHECK(g.sizes.equals(y.sizes), ShapeError, c.op, "got grad_output of shape ", g.sizes,
               " and output of shape ", y.sizes, ", expected equal shapes");
  ops::require_floating_input(c.op, y.dtype, "output");
  ops::require_floating_input(c.op, g.dtype, "grad_output");
  wrap_dim(c.attrs.i(0), std::max<int64_t>(y.dim(), 1), c.op);
  DType out = c.attrs.dtype(1);
  ops::require_floating_input(c.op, out, "input_dtype");
  c.outputs.push_back(TensorMeta{out, y.sizes.vec(), {}});
}

template <bool Log>
void softmax_backward_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  const Tensor& y_in = c.inputs[1];
  const int64_t dim = y_in.dim() == 0 ? 0 : wrap_dim(c.attrs.i(0), y_in.dim(), c.op);
  const DType t = y_in.dtype();
  Tensor y = kernels::contiguous_as(y_in, t);
  Tensor g = kernels::contiguous_as(c.inputs[0], t);
  if (out.dtype() == t) {
    kernels::softmax_backward_kernel(out, g, y, dim, Log);
  } else {
    Tensor tmp = empty_tensor(out.sizes(), t);
    kernels::softmax_backward_kernel(tmp, g, y, dim, Log);
    kernels::copy_kernel(out, tmp);
  }
}

std::vector<Tensor> softmax_backward_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  return {_softmax_backward_data(g, c.outputs[0], c.attrs.i(0), c.input_metas[0].dtype)};
}

std::vector<Tensor> log_softmax_backward_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  return {_log_softmax_backward_data(g, c.outputs[0], c.attrs.i(0), c.input_metas[0].dtype)};
}

// Double backward of _softmax_backward_data: gI = y * (g - sum(g * y)).
//   d/dg: y * (ggI - sum(ggI * y))            = _softmax_backward_data(ggI, y)
//   d/dy: ggI * (g - sum(g * y)) - g * sum(ggI * y)
std::vector<Tensor> softmax_backward_data_rule(BackwardContext& c) {
  const Tensor& gg_in = c.grad_outputs[0];
  if (!gg_in.defined()) return {Tensor(), Tensor()};
  const Tensor &g = c.inputs[0], &y = c.inputs[1];
  const int64_t dim = y.dim() == 0 ? 0 : wrap_dim(c.attrs.i(0), y.dim(), c.op);
  Tensor gg = gg_in.to(y.dtype());
  std::vector<Tensor> r(2);
  if (c.needs_input_grad[0]) r[0] = _softmax_backward_data(gg, y, dim, g.dtype());
  if (c.needs_input_grad[1]) {
    Tensor gc = g.to(y.dtype());
    r[1] = gg * (gc - ops::sum_keepdim(gc * y, dim)) - gc * ops::sum_keepdim(gg * y, dim);
  }
  return r;
}

// Double backward of _log_softmax_backward_data: gI = g - exp(y) * sum(g).
//   d/dg: ggI - sum(ggI * exp(y))
//   d/dy: -exp(y) * ggI * sum(g)
// y is a log_softmax output, so exp(y) == softmax(y) (its values sum to one); softmax is
// used because exp belongs to the unary family. Along log_softmax outputs (the only
// values this op receives from autograd) the two also have the same derivative.
std::vector<Tensor> log_softmax_backward_data_rule(BackwardContext& c) {
  const Tensor& gg_in = c.grad_outputs[0];
  if (!gg_in.defined()) return {Tensor(), Tensor()};
  const Tensor &g = c.inputs[0], &y = c.inputs[1];
  const int64_t dim = y.dim() == 0 ? 0 : wrap_dim(c.attrs.i(0), y.dim(), c.op);
  Tensor gg = gg_in.to(y.dtype());
  Tensor e = softmax(y, dim);
  std::vector<Tensor> r(2);
  if (c.needs_input_grad[0]) r[0] = (gg - ops::sum_keepdim(gg * e, dim)).to(g.dtype());
  if (c.needs_input_grad[1]) r[1] = (e * gg * ops::sum_keepdim(g.to(y.dtype()), dim)) * -1.0;
  return r;
}

OpDef softmax_def(const char* name) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self"}};
  d.attrs = {{"dim", int64_t{-1}}, {"dtype", std::monostate{}}};
  d.meta = softmax_meta;
  d.save_outputs = 0b1;
  return d;
}

OpDef softmax_backward_def(const char* name) {
  OpDef d;
  d.name = name;
  d.inputs = {{"grad_output", false}, {"output", false}};
  d.attrs = {{"dim", int64_t{-1}}, {"input_dtype", DType::Float32}};
  d.meta = softmax_backward_meta;
  d.save_inputs = 0b11;
  return d;
}

}  // namespace

TANDEM_REGISTER_OP(softmax) {
  OpDef d = softmax_def("softmax");
  d.cpu_kernel = softmax_kernel<false>;
  d.backward = softmax_backward_rule;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(log_softmax) {
  OpDef d = softmax_def("log_softmax");
  d.cpu_kernel = softmax_kernel<true>;
  d.backward = log_softmax_backward_rule;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(_softmax_backward_data) {
  OpDef d = softmax_backward_def("_softmax_backward_data");
  d.cpu_kernel = softmax_backward_kernel<false>;
  d.backward = softmax_backward_data_rule;
  return d;
}

TANDEM_REGISTER_OP(_log_softmax_backward_data) {
  OpDef d = softmax_backward_def("_log_softmax_backward_data");
  d.cpu_kernel = softmax_backward_kernel<true>;
  d.backward = log_softmax_backward_data_rule;
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return dispatch1(op_softmax(), {self}, {AttrValue(dim), opt_attr(dtype)});
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return dispatch1(op_log_softmax(), {self}, {AttrValue(dim), opt_attr(dtype)});
}
Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype) {
  return dispatch1(op__softmax_backward_data(), {grad_output, output}, {AttrValue(dim), AttrValue(input_dtype)});
}
Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                  DType input_dtype) {
  return dispatch1(op__log_softmax_backward_data(), {grad_output, output}, {AttrValue(dim), AttrValue(input_dtype)});
}

Tensor Tensor::softmax(int64_t dim, std::optional<DType> dtype) const { return tandem::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<DType> dtype) const {
  return tandem::log_softmax(*this, dim, dtype);
}

}  // namespace tandem
