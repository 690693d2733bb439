#include "tandem/autograd/function_nodes.h"

#include <cmath>

#include "tandem/core/grad_mode.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/shape.h"

namespace tandem::autograd {

// ---------------------------------------------------------------- OpNode
OpNode::OpNode(const OpDef& o, ArrayRef<AttrValue> a, uint32_t num_outputs) : op(&o) {
  for (const AttrValue& v : a) attrs.push_back(v);
  num_inputs_ = num_outputs;
}

void OpNode::add_input_info(const Tensor& t) {
  InputInfo info;
  if (t.defined()) {
    info.dims_at = static_cast<uint32_t>(dims.size());
    info.ndim = static_cast<uint32_t>(t.dim());
    for (int64_t v : t.sizes()) dims.push_back(v);
    for (int64_t v : t.strides()) dims.push_back(v);
    info.dtype = t.dtype();
    info.defined = true;
    info.storage_offset = t.storage_offset();
    // Element sizes are powers of two: a shift, not a division, per recorded input.
    info.storage_numel = static_cast<int64_t>(t.storage()->nbytes() >> __builtin_ctzll(t.element_size()));
  }
  input_info.push_back(info);
}

MetaRef OpNode::input_meta(size_t i) const {
  const InputInfo& info = input_info[i];
  MetaRef m;
  m.defined = info.defined;
  m.dtype = info.dtype;
  m.sizes = IntArrayRef(dims.data() + info.dims_at, info.ndim);
  m.strides = IntArrayRef(dims.data() + info.dims_at + info.ndim, info.ndim);
  m.storage_offset = info.storage_offset;
  m.storage_numel = info.storage_numel;
  return m;
}

std::string OpNode::name() const {
  std::string n = op->name;
  if (!n.empty() && n.back() == '_') n.pop_back();
  // PyTorch style: "add" -> "AddBackward".
  bool up = true;
  std::string out;
  for (char c : n) {
    if (c == '_') { up = true; continue; }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out + "Backward";
}

namespace {
bool has_nan(const Tensor& t) {
  if (!t.defined() || !t.is_floating_point()) return false;
  Tensor c = t.detach().to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  for (int64_t i = 0; i < c.numel(); ++i)
    if (std::isnan(p[i])) return true;
  return false;
}
}  // namespace

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grads) {
  TANDEM_CHECK(!released, RuntimeError, name(),
               "trying to backward through the graph a second time (or to read saved tensors after they were "
               "freed); pass retain_graph=true to the first backward if you need to backward twice");
  TANDEM_CHECK(op->backward != nullptr, NotImplementedError, op->name, "the derivative for '", op->name,
               "' is not implemented");
  const size_t n_in = input_info.size();
  SmallVec<Tensor, 3> ins;
  SmallVec<Tensor, 1> outs;
  for (const auto& s : saved_inputs) ins.push_back(s.unpack(*this));
  for (const auto& s : saved_outputs) outs.push_back(s.unpack(*this));
  std::vector<MetaRef> metas;
  metas.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) metas.push_back(input_meta(i));
  BackwardContext ctx{op->name.c_str(), ins.ref(), outs.ref(), grads, AttrReader(op->name.c_str(), attrs.ref()),
                      std::vector<bool>(needs_input_grad.begin(), needs_input_grad.end()), std::move(metas)};
  std::vector<Tensor> result = op->backward(ctx);
  TANDEM_INTERNAL_ASSERT(result.size() <= n_in, "backward of ", op->name, " returned ", result.size(),
                         " gradients for ", n_in, " inputs");
  result.resize(n_in);
  for (size_t i = 0; i < result.size(); ++i) {
    Tensor& g = result[i];
    if (!needs_input_grad[i]) {
      g = Tensor();
      continue;
    }
    if (!g.defined()) continue;
    const MetaRef& info = ctx.input_metas[i];
    TANDEM_INTERNAL_ASSERT(g.sizes().equals(info.sizes), "backward of ", op->name, " returned a gradient of shape ",
                           g.sizes(), " for input ", i, " of shape ", info.sizes);
    if (g.dtype() != info.dtype && is_floating_point(info.dtype)) g = g.to(info.dtype);
    if (is_anomaly_enabled() && has_nan(g))
      throw RuntimeError(str_cat("[", name(), "] returned nan values in its ", i, "th output (anomaly mode); the forward op '",
                                 op->name, "' was created at: ", creation_context.empty() ? "<no anomaly scope>" : creation_context));
  }
  return result;
}

void OpNode::release_variables() {
  for (auto& s : saved_inputs) s.reset();
  for (auto& s : saved_outputs) s.reset();
  released = true;
}

AsStridedBackward::AsStridedBackward(Geometry base, Geometry view, int64_t storage_elems, DType dtype)
    : base_(std::move(base)), view_(std::move(view)), storage_elems_(storage_elems), dtype_(dtype) {}

std::vector<Tensor> AsStridedBackward::apply(std::vector<Tensor>&& grads) {
  if (!grads[0].defined()) return {Tensor()};
  return {as_strided_backward(grads[0], base_, view_, storage_elems_)};
}

// ---------------------------------------------------------------- CopySlices
CopySlices::CopySlices(const Tensor& base, Geometry view, std::shared_ptr<OpNode> fn)
    : base_{base.sizes().vec(), base.strides().vec(), base.storage_offset()},
      view_(std::move(view)),
      storage_elems_(static_cast<int64_t>(base.storage()->nbytes()) / base.element_size()),
      dtype_(base.dtype()),
      fn_(std::move(fn)) {
  next_edges_.push_back(gradient_edge(base));
  const auto& fe = fn_->next_edges();
  for (size_t i = 1; i < fe.size(); ++i) next_edges_.push_back(fe[i]);
}

std::vector<Tensor> CopySlices::apply(std::vector<Tensor>&& grads) {
  std::vector<Tensor> out(next_edges_.size());
  Tensor g = grads[0];
  if (!g.defined()) return out;
  // Lay the base's gradient out on a storage-shaped buffer so the view region can be
  // addressed with the view's own strides.
  Tensor storage = zeros({storage_elems_}, g.dtype());
  storage.as_strided(base_.sizes, base_.strides, base_.offset).copy_(g);
  Tensor region = storage.as_strided(view_.sizes, view_.strides, view_.offset);
  std::vector<Tensor> fg{region.clone()};
  fg.resize(fn_->num_inputs());
  std::vector<Tensor> res = fn_->apply(std::move(fg));
  // The old view values reach the old base through the region; what fn produced for
  // them replaces the region's gradient (zero if fn does not depend on them).
  if (!res.empty() && res[0].defined()) region.copy_(res[0]);
  else region.zero_();
  out[0] = storage.as_strided(base_.sizes, base_.strides, base_.offset).clone();
  for (size_t i = 1; i < res.size() && i < out.size(); ++i) out[i] = res[i];
  return out;
}

void CopySlices::release_variables() { fn_->release_variables(); }

}  // namespace tandem::autograd
