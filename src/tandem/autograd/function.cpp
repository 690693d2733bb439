#include "tandem/autograd/function.h"

#include <algorithm>

#include "tandem/ops/creation.h"

namespace tandem::autograd {

void AutogradContext::save_for_backward(std::vector<Tensor> tensors) { to_save_ = std::move(tensors); }

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  std::vector<Tensor> out;
  for (const auto& s : saved_) out.push_back(s.unpack(name_));
  return out;
}

void AutogradContext::mark_dirty(const std::vector<Tensor>& tensors) {
  for (const auto& t : tensors) dirty_.push_back(t.impl());
}
void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& tensors) {
  for (const auto& t : tensors) non_differentiable_.push_back(t.impl());
}

std::vector<Tensor> CppNode::apply(std::vector<Tensor>&& grads) {
  TANDEM_CHECK(!released_, RuntimeError, name_,
               "trying to backward through the graph a second time; pass retain_graph=true to the first backward");
  if (ctx.materialize_grads_)
    for (size_t k = 0; k < grads.size(); ++k)
      if (!grads[k].defined()) grads[k] = zeros(output_sizes[k], output_dtypes[k]);
  std::vector<Tensor> res = fn_(&ctx, std::move(grads));
  TANDEM_CHECK(res.size() >= input_sizes.size(), RuntimeError, name_, "function backward returned an incorrect number of gradients (expected ",
               input_sizes.size(), ", got ", res.size(), ")");
  res.resize(input_sizes.size());
  for (size_t i = 0; i < res.size(); ++i) {
    if (!ctx.needs_input_grad(i)) {
      res[i] = Tensor();
      continue;
    }
    if (res[i].defined())
      TANDEM_CHECK(res[i].sizes().equals(input_sizes[i]), ShapeError, name_, "function backward returned a gradient of shape ",
                   res[i].sizes(), " for input ", i, " of shape ", IntArrayRef(input_sizes[i]));
  }
  return res;
}

void CppNode::release_variables() {
  for (auto& s : ctx.saved_) s.reset();
  released_ = true;
}

namespace detail {

std::vector<Tensor> wrap_outputs(const std::shared_ptr<CppNode>& node, const std::vector<Tensor>& inputs,
                                 std::vector<Tensor> outputs) {
  AutogradContext& ctx = node->ctx;
  ctx.name_ = node->name();
  bool any = std::any_of(ctx.needs_input_grad_.begin(), ctx.needs_input_grad_.end(), [](bool b) { return b; });
  for (size_t k = 0; k < outputs.size(); ++k) {
    Tensor& o = outputs[k];
    bool is_input = false;
    for (const Tensor& in : inputs) is_input = is_input || (in.defined() && in.is_same(o));
    bool dirty = std::find(ctx.dirty_.begin(), ctx.dirty_.end(), o.impl()) != ctx.dirty_.end();
    // An input returned unchanged gets its own handle so its history is not overwritten.
    if (is_input && !dirty) o = make_alias(o, o.sizes(), o.strides(), o.storage_offset());
    if (dirty) {
      AutogradMeta* m = get_meta(o);
      TANDEM_CHECK(!(o.requires_grad() && (!m || !m->grad_fn) && is_grad_enabled()), RuntimeError, ctx.name_,
                   "a leaf tensor that requires grad has been marked dirty (modified in place)");
      o.bump_version();
    }
  }
  if (any) {
    auto& edges = node->mutable_next_edges();
    for (const Tensor& in : inputs) {
      edges.push_back(in.defined() && in.requires_grad() ? gradient_edge(in) : Edge{});
      node->input_sizes.push_back(in.defined() ? in.sizes().vec() : DimVector{});
    }
    node->set_num_outputs(static_cast<uint32_t>(outputs.size()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& o = outputs[k];
      node->output_sizes.push_back(o.sizes().vec());
      node->output_dtypes.push_back(o.dtype());
      bool nd = std::find(ctx.non_differentiable_.begin(), ctx.non_differentiable_.end(), o.impl()) != ctx.non_differentiable_.end();
      if (!nd && o.is_floating_point()) set_history(o, node, static_cast<uint32_t>(k));
    }
  } else {
    node->input_sizes.resize(inputs.size());
  }
  for (const Tensor& t : ctx.to_save_) {
    bool is_out = false;
    for (const Tensor& o : outputs) is_out = is_out || o.is_same(t);
    ctx.saved_.emplace_back(t, is_out && any, node);
  }
  ctx.to_save_.clear();
  return outputs;
}

}  // namespace detail
}  // namespace tandem::autograd
