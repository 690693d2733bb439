// The autograd recording slot of the dispatcher: turns each dispatched op that needs a
// gradient into an OpNode, tracks views, and rewrites history for in-place ops
// (DESIGN.md "The life of an eager op", step 6).
#include <memory>

#include "tandem/autograd/function_nodes.h"
#include "tandem/core/grad_mode.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/creation.h"

namespace tandem::autograd {

namespace {

// A clone of self taken before an in-place kernel ran, for ops whose backward needs the
// old value of input 0 (e.g. mul_).
thread_local Tensor t_inplace_original;

bool input_differentiable(const OpDef& op, size_t i) {
  return op.inputs[std::min(i, op.inputs.size() - 1)].differentiable;
}
bool output_differentiable(const OpDef& op, size_t k) {
  return op.output_differentiable.empty() || (k < op.output_differentiable.size() && op.output_differentiable[k]);
}

Geometry geometry_of(const Tensor& t) { return {t.sizes().vec(), t.strides().vec(), t.storage_offset()}; }

Edge input_edge(const Tensor& t) { return gradient_edge(t); }  // refreshes a written view

void mark_view(const Tensor& out, const Tensor& input) {
  AutogradMeta& m = ensure_meta(out);
  AutogradMeta* im = get_meta(input);
  m.is_view = true;
  m.view_base = (im && im->is_view) ? im->view_base : input;
  m.view_sizes = out.sizes().vec();
  m.view_strides = out.strides().vec();
  m.view_offset = out.storage_offset();
  m.attr_version = out._version();
}

void record(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, OpOutputs& outputs) {
  bool any_out = false;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (output_differentiable(op, k) && outputs[k].defined() && outputs[k].is_floating_point()) any_out = true;
  if (!any_out) {
    t_inplace_original = Tensor();
    return;
  }

  auto node = make_node<OpNode>(op, attrs, static_cast<uint32_t>(outputs.size()));
  const bool inplace_on_view = op.is_inplace && get_meta(inputs[0]) && get_meta(inputs[0])->is_view;
  auto& edges = node->mutable_next_edges();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    node->add_input_info(in);
    Edge e;
    if (in.defined() && input_differentiable(op, i) && in.is_floating_point()) e = input_edge(in);
    // An in-place op on a view always needs the gradient of the view's old value: it is
    // how the base's untouched history receives the region's gradient.
    bool need = e.valid() || (inplace_on_view && i == 0 && in.is_floating_point());
    node->needs_input_grad.push_back(need);
    edges.push_back(std::move(e));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool save = i < 32 && (op.save_inputs >> i) & 1u;
    if (!save) {
      node->saved_inputs.emplace_back();
    } else if (op.is_inplace && i == 0 && t_inplace_original.defined()) {
      node->saved_inputs.emplace_back(t_inplace_original, false, node);
    } else {
      node->saved_inputs.emplace_back(inputs[i], false, node);
    }
  }
  t_inplace_original = Tensor();

  if (op.is_inplace) {
    const Tensor& self = outputs[0];
    AutogradMeta* sm = get_meta(self);
    if (sm && sm->is_view) {
      Tensor base = sm->view_base;
      auto cs = make_node<CopySlices>(base, geometry_of(self), node);
      set_history(base, cs, 0);
      // The view's own history is regenerated from the base on next use.
      sm->attr_version = ~uint64_t{0};
      self.impl()->set_requires_grad_flag(true);
    } else {
      set_history(self, node, 0);
    }
  } else {
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!output_differentiable(op, k) || !outputs[k].defined() || !outputs[k].is_floating_point()) continue;
      set_history(outputs[k], node, static_cast<uint32_t>(k));
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    bool save = k < 32 && (op.save_outputs >> k) & 1u;
    if (save) node->saved_outputs.emplace_back(outputs[k], true, node);
    else node->saved_outputs.emplace_back();
  }
}

bool is_leaf_requiring_grad(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  return t.requires_grad() && (!m || !m->grad_fn);
}

void check_inplace(const OpDef& op, ArrayRef<Tensor> inputs) {
  t_inplace_original = Tensor();
  const Tensor& self = inputs[0];
  if (!is_grad_enabled()) return;
  AutogradMeta* m = get_meta(self);
  if (m && m->is_view) {
    TANDEM_CHECK(!is_leaf_requiring_grad(m->view_base), RuntimeError, op.name,
                 "a view of a leaf tensor that requires grad is being used in an in-place operation");
  }
  TANDEM_CHECK(!(is_leaf_requiring_grad(self) && !(m && m->is_view)), RuntimeError, op.name,
               "a leaf tensor that requires grad is being used in an in-place operation");
  if ((op.save_inputs & 1u) && op.backward) {
    // Keep the old value only when this call will be recorded.
    bool recorded = false;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].requires_grad() && input_differentiable(op, i)) recorded = true;
    // clone() (not detach) keeps the old value's history for double backward.
    if (recorded) t_inplace_original = self.clone();
  }
}

[[maybe_unused]] const bool installed = [] {
  set_autograd_recorder(&record);
  set_inplace_checker(&check_inplace);
  set_view_tracker(&mark_view);
  return true;
}();

}  // namespace

}  // namespace tandem::autograd
