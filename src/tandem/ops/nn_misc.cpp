// Dropout (native_dropout + the dropout composite), embedding (+ embedding_dense_backward)
// and one_hot (a composite over the static-shape _one_hot op).
#include "tandem/core/capture_state.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/nn.h"
#include "tandem/ops/nn_util.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/shape.h"

namespace tandem {

const OpDef& op_embedding();
const OpDef& op_embedding_dense_backward();

namespace {

// ---------------------------------------------------------------- dropout
void check_p(const char* op, double p) {
  TANDEM_CHECK(p >= 0 && p <= 1, ValueError, op, "dropout probability has to be between 0 and 1, but got ", p);
}

// native_dropout(input; p, train) -> (output, mask)
void dropout_meta(MetaContext& c) {
  const MetaRef& in = c.inputs[0];
  ops::require_floating_input(c.op, in.dtype);
  check_p(c.op, c.attrs.f(0));
  c.outputs.push_back(TensorMeta{in.dtype, in.sizes.vec(), {}});
  c.outputs.push_back(TensorMeta{DType::Bool, in.sizes.vec(), {}});
}

void dropout_kernel(KernelContext& c) {
  if (!c.attrs.b(1)) {
    kernels::copy_kernel(c.outputs[0], c.inputs[0]);
    kernels::fill_kernel(c.outputs[1], true);
    return;
  }
  kernels::dropout_kernel(c.outputs[0], c.outputs[1], kernels::contiguous_as(c.inputs[0], c.inputs[0].dtype()),
                          c.attrs.f(0));
}

// grad * mask / (1 - p): written with mul, so it is differentiable again.
std::vector<Tensor> dropout_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const double p = c.attrs.f(0);
  const double scale = !c.attrs.b(1) ? 1.0 : p < 1 ? 1.0 / (1.0 - p) : 0.0;
  return {g * c.outputs[1] * scale};
}

std::vector<Tensor> dropout_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  const double p = a.f(0);
  check_p("dropout", p);
  if (!a.b(1)) return {in[0]};
  return {std::get<0>(native_dropout(in[0], p, true))};
}

// ---------------------------------------------------------------- embedding
// embedding(weight, indices; padding_idx=None (F.embedding convention, negative wraps),
//           scale_grad_by_freq)
void check_indices(const char* op, const MetaRef& idx) {
  TANDEM_CHECK(idx.dtype == DType::Int64 || idx.dtype == DType::Int32, TypeError, op, "got indices of dtype ",
               dtype_name(idx.dtype), ", expected int64 or int32");
}

// padding_idx normalised to [0, V), or -1 for none; ValueError when out of range.
int64_t normalize_padding(const char* op, const AttrReader& a, size_t k, int64_t V) {
  auto p = a.opt_i(k);
  if (!p) return -1;
  TANDEM_CHECK(*p >= -V && *p < V, ValueError, op, "got padding_idx ", *p, ", expected a value in [", -V, ", ", V,
               ") (padding_idx must be within num_embeddings)");
  return *p < 0 ? *p + V : *p;
}

void embedding_meta(MetaContext& c) {
  const MetaRef &w = c.inputs[0], &idx = c.inputs[1];
  TANDEM_CHECK(w.dim() == 2, ShapeError, c.op, "got weight of shape ", w.sizes, ", expected a 2-D weight");
  check_indices(c.op, idx);
  normalize_padding(c.op, c.attrs, 0, w.sizes[0]);
  DimVector out = idx.sizes.vec();
  out.push_back(w.sizes[1]);
  c.outputs.push_back(TensorMeta{w.dtype, out, {}});
}

void embedding_kernel(KernelContext& c) {
  const Tensor& w = c.inputs[0];
  kernels::embedding_kernel(c.outputs[0], kernels::contiguous_as(w, w.dtype()), c.inputs[1]);
}

std::vector<Tensor> embedding_rule(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return {Tensor(), Tensor()};
  const int64_t V = c.input_metas[0].sizes[0];
  const int64_t pad = normalize_padding(c.op, c.attrs, 0, V);
  return {embedding_dense_backward(g, c.inputs[1], V, pad < 0 ? std::nullopt : std::optional<int64_t>(pad),
                                   c.attrs.b(1)),
          Tensor()};
}

// embedding_dense_backward(grad_output, indices; num_weights, padding_idx, scale_grad_by_freq)
void embedding_backward_meta(MetaContext& c) {
  const MetaRef &g = c.inputs[0], &idx = c.inputs[1];
  ops::require_floating_input(c.op, g.dtype, "grad_output");
  check_indices(c.op, idx);
  const int64_t V = c.attrs.i(0);
  TANDEM_CHECK(V >= 0, ValueError, c.op, "got num_weights ", V, ", expected >= 0");
  normalize_padding(c.op, c.attrs, 1, V);
  bool ok = g.dim() == idx.dim() + 1;
  for (int64_t d = 0; ok && d < idx.dim(); ++d) ok = g.sizes[d] == idx.sizes[d];
  TANDEM_CHECK(ok, ShapeError, c.op, "got grad_output of shape ", g.sizes, " for indices of shape ", idx.sizes,
               ", expected indices.shape + [D]");
  c.outputs.push_back(TensorMeta{g.dtype, {V, g.sizes[g.sizes.size() - 1]}, {}});
}

void embedding_backward_kernel(KernelContext& c) {
  const int64_t pad = normalize_padding(c.op, c.attrs, 1, c.attrs.i(0));
  kernels::embedding_backward_kernel(c.outputs[0], c.inputs[0], c.inputs[1], pad, c.attrs.b(2));
}

// Linear in grad_output; the adjoint gathers the rows back (padding rows contribute zero).
std::vector<Tensor> embedding_backward_rule(BackwardContext& c) {
  const Tensor& gg = c.grad_outputs[0];
  if (!gg.defined() || !c.needs_input_grad[0]) return {Tensor(), Tensor()};
  TANDEM_CHECK(!c.attrs.b(2), NotImplementedError, c.op,
               "double backward with scale_grad_by_freq=true is not implemented");
  const Tensor& idx = c.inputs[1];
  Tensor r = dispatch1(op_embedding(), {gg, idx});
  const int64_t pad = normalize_padding(c.op, c.attrs, 1, c.attrs.i(0));
  if (pad >= 0) r = r * ne(idx, Scalar(pad)).unsqueeze(-1);
  return {r, Tensor()};
}

// ---------------------------------------------------------------- one_hot
// _one_hot(indices; num_classes >= 0): static output shape indices.shape + [num_classes].
void one_hot_meta(MetaContext& c) {
  const MetaRef& idx = c.inputs[0];
  TANDEM_CHECK(idx.dtype == DType::Int64, TypeError, c.op, "got indices of dtype ", dtype_name(idx.dtype),
               ", expected int64 (one_hot is only applicable to index tensors)");
  const int64_t n = c.attrs.i(0);
  TANDEM_CHECK(n >= 0, ValueError, c.op, "got num_classes ", n, ", expected >= 0 (or -1 to infer it)");
  DimVector out = idx.sizes.vec();
  out.push_back(n);
  c.outputs.push_back(TensorMeta{DType::Int64, out, {}});
}

void one_hot_kernel(KernelContext& c) {
  kernels::one_hot_kernel(c.outputs[0], kernels::contiguous_as(c.inputs[0], DType::Int64), c.attrs.i(0));
}

std::vector<Tensor> one_hot_composite(ArrayRef<Tensor> in, const AttrReader& a) {
  const Tensor& idx = in[0];
  TANDEM_CHECK(idx.dtype() == DType::Int64, TypeError, "one_hot", "got indices of dtype ", dtype_name(idx.dtype()),
               ", expected int64 (one_hot is only applicable to index tensors)");
  int64_t n = a.i(0);
  TANDEM_CHECK(n >= -1, ValueError, "one_hot", "got num_classes ", n, ", expected >= 0 (or -1 to infer it)");
  if (n == -1) {
    TANDEM_CHECK(idx.numel() > 0, ValueError, "one_hot", "can not infer the number of classes from an empty tensor");
    // The output shape depends on the data: note it so a capture becomes a graph break.
    if (capture_state::capture_depth() > 0 && capture_state::break_reason().empty())
      capture_state::break_reason() = "one_hot with num_classes=-1 reads tensor data (its output shape depends on it)";
    Tensor c = kernels::contiguous_as(idx, DType::Int64);
    const int64_t* p = c.data_ptr<int64_t>();
    int64_t mx = p[0];
    for (int64_t i = 1; i < c.numel(); ++i) mx = std::max(mx, p[i]);
    n = std::max<int64_t>(mx, 0) + 1;
  }
  return {dispatch1(get_op("_one_hot"), {idx}, {AttrValue(n)})};
}

}  // namespace

TANDEM_REGISTER_OP(native_dropout) {
  OpDef d;
  d.name = "native_dropout";
  d.inputs = {{"input"}};
  d.attrs = {{"p", 0.5}, {"train", true}};
  d.num_outputs = 2;
  d.output_differentiable = {true, false};
  d.random = true;
  d.meta = dropout_meta;
  d.cpu_kernel = dropout_kernel;
  d.backward = dropout_rule;
  d.save_outputs = 0b10;
  return d;
}

TANDEM_REGISTER_OP(dropout) {
  OpDef d;
  d.name = "dropout";
  d.inputs = {{"input"}};
  d.attrs = {{"p", 0.5}, {"train", true}};
  d.random = true;
  d.composite = dropout_composite;
  return d;
}

TANDEM_REGISTER_OP(embedding) {
  OpDef d;
  d.name = "embedding";
  d.inputs = {{"weight", false}, {"indices", false, false, false}};
  d.attrs = {{"padding_idx", std::monostate{}}, {"scale_grad_by_freq", false}};
  d.meta = embedding_meta;
  d.cpu_kernel = embedding_kernel;
  d.backward = embedding_rule;
  d.save_inputs = 0b10;
  d.raises_on_data = true;  // an index out of range
  return d;
}

TANDEM_REGISTER_OP(embedding_dense_backward) {
  OpDef d;
  d.name = "embedding_dense_backward";
  d.inputs = {{"grad_output", false}, {"indices", false, false, false}};
  d.attrs = {{"num_weights", int64_t{0}}, {"padding_idx", std::monostate{}}, {"scale_grad_by_freq", false}};
  d.meta = embedding_backward_meta;
  d.cpu_kernel = embedding_backward_kernel;
  d.backward = embedding_backward_rule;
  d.save_inputs = 0b10;
  d.raises_on_data = true;  // an index out of range
  return d;
}

TANDEM_REGISTER_OP(_one_hot) {
  OpDef d;
  d.name = "_one_hot";
  d.inputs = {{"indices", false, false, false}};
  d.attrs = {{"num_classes", int64_t{0}}};
  d.meta = one_hot_meta;
  d.cpu_kernel = one_hot_kernel;
  return d;
}

TANDEM_REGISTER_OP(one_hot) {
  OpDef d;
  d.name = "one_hot";
  d.inputs = {{"indices", false, false, false}};
  d.attrs = {{"num_classes", int64_t{-1}}};
  d.composite = one_hot_composite;
  d.raises_on_data = true;  // a class outside [0, num_classes)
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor dropout(const Tensor& input, double p, bool training) {
  return dispatch1(op_dropout(), {input}, {AttrValue(p), AttrValue(training)});
}
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, bool train) {
  OpOutputs o = dispatch(op_native_dropout(), {input}, {AttrValue(p), AttrValue(train)});
  return {o[0], o[1]};
}
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx,
                 bool scale_grad_by_freq) {
  return dispatch1(op_embedding(), {weight, indices}, {opt_attr(padding_idx), AttrValue(scale_grad_by_freq)});
}
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                std::optional<int64_t> padding_idx, bool scale_grad_by_freq) {
  return dispatch1(op_embedding_dense_backward(), {grad_output, indices},
                   {AttrValue(num_weights), opt_attr(padding_idx), AttrValue(scale_grad_by_freq)});
}
Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  return dispatch1(op_one_hot(), {indices}, {AttrValue(num_classes)});
}

}  // namespace tandem
