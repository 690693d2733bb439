#include "tandem/nn/module.h"

#include <atomic>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/autograd/function.h"
#include "tandem/core/capture_state.h"
#include "tandem/core/grad_mode.h"

namespace tandem::nn {

namespace {
std::atomic<int64_t> g_hook_ids{1};
}

HookHandle::HookHandle(Module* m, int64_t id, bool pre) : module_(m), id_(id), pre_(pre) {
  if (m) owner_ = m->weak_from_this();
  tracked_ = !owner_.expired();
}

void HookHandle::remove() {
  if (module_ && id_ >= 0) {
    if (!tracked_) {
      module_->remove_hook(id_, pre_);
    } else if (auto owner = owner_.lock()) {
      owner->remove_hook(id_, pre_);
    }
  }
  id_ = -1;
}

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError(str_cat("[", name_, "] forward(Tensor) is not implemented"));
}

std::vector<Tensor> Module::forward_list(const std::vector<Tensor>& inputs) {
  TANDEM_CHECK(inputs.size() == 1, ValueError, name_, "forward takes one tensor, got ", inputs.size());
  return {forward(inputs[0])};
}

namespace {
// While a capture runs, a module call registers a guard on the module's state (a program
// replayed after a hook was added or a parameter replaced would skip or read the wrong
// thing) and checks that forward did not rebind its own parameters or buffers: a rebinding
// (`acc = acc * acc` on a buffer) happens only while capturing, so the program could not
// replay it.
class CaptureNote {
 public:
  explicit CaptureNote(const Module& m) : m_(m) {
    if (capture_state::current_capture_id() == 0) [[likely]] return;
    active_ = true;
    before_ = m.state_version();
    const Module* mp = &m;
    capture_state::note_state_guard(mp, [mp] { return mp->state_version(); },
                                    "module '" + m.name() + "' (hooks, training flags, parameter and buffer tensors)");
  }
  ~CaptureNote() {
    if (active_ && m_.state_version() != before_)
      capture_state::note_break("module '" + m_.name() +
                                "' replaced one of its parameters or buffers (or hooks or training flags) while it ran; "
                                "a compiled program cannot replay that (update them in place instead)");
  }
  CaptureNote(const CaptureNote&) = delete;
  CaptureNote& operator=(const CaptureNote&) = delete;

 private:
  const Module& m_;
  bool active_ = false;
  uint64_t before_ = 0;
};
}  // namespace

// ---------------------------------------------------------------- full backward hooks
// PyTorch's torch.utils.hooks.BackwardHook: the call's inputs and outputs pass through
// identity autograd nodes. The outputs' node sees grad_output first (the engine runs it
// before anything inside the module) and runs the pre-hooks; the inputs' node sees
// grad_input last (it waits for every path through the module) and runs the full hooks.
namespace detail {
struct BackwardHookCall {
  Module* module = nullptr;
  // Watched, not owned (a module keeping its last output would own itself through the
  // graph): the hooks of a module owned by a shared_ptr and destroyed before backward are
  // skipped; a module not owned by a shared_ptr must outlive the backward pass.
  std::weak_ptr<Module> owner;
  bool tracked = false;
  Module* alive() const {
    if (!tracked) return module;
    return owner.expired() ? nullptr : module;
  }
  std::vector<Module::BackwardHook> hooks;
  std::vector<Module::BackwardPreHook> pre_hooks;
  size_t n_inputs = 0;
  bool inputs_hooked = false;  // some input requires grad: the inputs' node runs the full hooks
  bool have_grad_outputs = false;
  std::vector<Tensor> grad_outputs;
};
}  // namespace detail

namespace {
using detail::BackwardHookCall;

std::shared_ptr<BackwardHookCall> call_of(autograd::AutogradContext* ctx) {
  return std::any_cast<std::shared_ptr<BackwardHookCall>>(ctx->saved_data.at("call"));
}

std::vector<Tensor> backward_outputs_node(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
  auto call = call_of(ctx);
  if (!call->alive()) return grads;
  Module& m = *call->module;
  for (auto& hook : call->pre_hooks) {
    std::vector<Tensor> r = hook(m, grads);
    if (r.empty()) continue;
    TANDEM_CHECK(r.size() == grads.size(), RuntimeError, m.name(), "a full backward pre-hook returned ", r.size(),
                 " grad_output entries, expected ", grads.size(), " (or none to keep them)");
    grads = std::move(r);
  }
  call->grad_outputs = grads;
  call->have_grad_outputs = true;
  if (!call->inputs_hooked) {
    // No input requires grad: the inputs' node does not exist, so the hooks run now.
    std::vector<Tensor> none(call->n_inputs);
    for (auto& hook : call->hooks) {
      std::vector<Tensor> r = hook(m, none, call->grad_outputs);
      for (const Tensor& t : r)
        TANDEM_CHECK(!t.defined(), RuntimeError, m.name(), "a full backward hook returned a gradient for a module "
                     "call where no input requires grad; it must return an empty list (or undefined tensors)");
    }
    call->grad_outputs.clear();
    call->have_grad_outputs = false;
  }
  return grads;
}

std::vector<Tensor> backward_inputs_node(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
  auto call = call_of(ctx);
  if (!call->have_grad_outputs || !call->alive()) return grads;  // no gradient reached the outputs' node
  Module& m = *call->module;
  for (auto& hook : call->hooks) {
    std::vector<Tensor> r = hook(m, grads, call->grad_outputs);
    if (r.empty()) continue;
    TANDEM_CHECK(r.size() == grads.size(), RuntimeError, m.name(), "a full backward hook returned ", r.size(),
                 " grad_input entries, expected ", grads.size(), " (or none to keep them)");
    grads = std::move(r);
  }
  call->grad_outputs.clear();
  call->have_grad_outputs = false;
  return grads;
}

// Passes `xs` through an identity node running `fn` in backward. Tensors that do not
// require grad come out as plain aliases (non-differentiable, as PyTorch's
// BackwardHookFunction marks them).
std::vector<Tensor> identity_node(const std::shared_ptr<BackwardHookCall>& call, const std::vector<Tensor>& xs,
                                  autograd::CppNode::BackwardFn fn, const char* name) {
  auto node = autograd::make_node<autograd::CppNode>(name, fn);
  node->ctx.set_materialize_grads(false);
  node->ctx.saved_data["call"] = call;
  std::vector<Tensor> outs;
  for (const Tensor& x : xs) {
    node->ctx.needs_input_grad_.push_back(x.defined() && x.requires_grad());
    outs.push_back(x.defined() ? make_alias(x, x.sizes(), x.strides(), x.storage_offset()) : x);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].defined() && !node->ctx.needs_input_grad(i)) node->ctx.mark_non_differentiable({outs[i]});
  return autograd::detail::wrap_outputs(node, xs, std::move(outs));
}

bool any_requires_grad(const std::vector<Tensor>& xs) {
  for (const Tensor& x : xs)
    if (x.defined() && x.requires_grad()) return true;
  return false;
}

bool all_defined(const std::vector<Tensor>& xs) {
  for (const Tensor& x : xs)
    if (!x.defined()) return false;
  return true;
}

std::vector<Tensor> hook_inputs(const std::shared_ptr<BackwardHookCall>& call, const std::vector<Tensor>& in) {
  if (!call) [[likely]] return in;
  call->n_inputs = in.size();
  if (!any_requires_grad(in) || !all_defined(in)) return in;
  capture_state::note_break("module '" + call->module->name() +
                            "' has full backward hooks, which live in the autograd graph a compiled program does not replay");
  call->inputs_hooked = true;
  return identity_node(call, in, backward_inputs_node, "BackwardHookFunctionBackward");
}

std::vector<Tensor> hook_outputs(const std::shared_ptr<BackwardHookCall>& call, const std::vector<Tensor>& out) {
  if (!call || !any_requires_grad(out) || !all_defined(out)) [[likely]] return out;
  capture_state::note_break("module '" + call->module->name() +
                            "' has full backward hooks, which live in the autograd graph a compiled program does not replay");
  return identity_node(call, out, backward_outputs_node, "BackwardHookFunctionBackward");
}
}  // namespace

std::shared_ptr<detail::BackwardHookCall> Module::begin_backward_hooks() {
  if ((backward_hooks_.empty() && backward_pre_hooks_.empty()) || !is_grad_enabled()) [[likely]]
    return nullptr;
  auto call = std::make_shared<detail::BackwardHookCall>();
  call->module = this;
  call->owner = weak_from_this();
  call->tracked = !call->owner.expired();
  for (const auto& [id, h] : backward_hooks_) call->hooks.push_back(h);
  for (const auto& [id, h] : backward_pre_hooks_) call->pre_hooks.push_back(h);
  return call;
}

Tensor Module::operator()(const Tensor& input) {
  CaptureNote note(*this);
  Tensor x = input;
  for (auto& h : pre_hooks_) {
    if (h.one) {
      Tensor r = h.one(*this, x);
      if (r.defined()) x = r;
    } else {
      std::vector<Tensor> r = h.list(*this, {x});
      TANDEM_CHECK(r.size() <= 1, ValueError, name_, "a forward pre-hook returned ", r.size(),
                   " inputs for a one-tensor call, expected 1 (or none to keep the input)");
      if (!r.empty() && r[0].defined()) x = r[0];
    }
  }
  auto bw = begin_backward_hooks();
  if (bw) [[unlikely]]
    x = hook_inputs(bw, {x})[0];
  Tensor y = forward(x);
  for (auto& h : hooks_) {
    if (h.one) {
      Tensor r = h.one(*this, x, y);
      if (r.defined()) y = r;
    } else {
      std::vector<Tensor> r = h.list(*this, {x}, {y});
      TANDEM_CHECK(r.size() <= 1, ValueError, name_, "a forward hook returned ", r.size(),
                   " outputs for a one-tensor call, expected 1 (or none to keep the output)");
      if (!r.empty() && r[0].defined()) y = r[0];
    }
  }
  if (bw) [[unlikely]]
    y = hook_outputs(bw, {y})[0];
  return y;
}

std::vector<Tensor> Module::operator()(const std::vector<Tensor>& inputs) {
  CaptureNote note(*this);
  std::vector<Tensor> in = inputs;
  for (auto& h : pre_hooks_) {
    if (h.one) {
      TANDEM_CHECK(in.size() == 1, ValueError, name_, "a one-tensor forward pre-hook cannot take a call with ", in.size(),
                   " inputs, expected 1 (register a list hook: std::vector<Tensor>(Module&, const std::vector<Tensor>&))");
      Tensor r = h.one(*this, in[0]);
      if (r.defined()) in[0] = r;
    } else {
      std::vector<Tensor> r = h.list(*this, in);
      if (!r.empty()) in = std::move(r);
    }
  }
  auto bw = begin_backward_hooks();
  if (bw) [[unlikely]]
    in = hook_inputs(bw, in);
  std::vector<Tensor> out = forward_list(in);
  for (auto& h : hooks_) {
    if (h.one) {
      TANDEM_CHECK(in.size() == 1 && out.size() == 1, ValueError, name_, "a one-tensor forward hook cannot take a call with ",
                   in.size(), " inputs and ", out.size(), " outputs, expected 1 and 1 (register a list hook: "
                   "std::vector<Tensor>(Module&, const std::vector<Tensor>&, const std::vector<Tensor>&))");
      Tensor r = h.one(*this, in[0], out[0]);
      if (r.defined()) out[0] = r;
    } else {
      std::vector<Tensor> r = h.list(*this, in, out);
      if (!r.empty()) out = std::move(r);
    }
  }
  if (bw) [[unlikely]]
    out = hook_outputs(bw, out);
  return out;
}

void Module::check_new_name(const std::string& name) const {
  TANDEM_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError, name_, "invalid name '", name,
               "', expected a non-empty name without '.'");
  for (const auto& p : params_) TANDEM_CHECK(p.first != name, ValueError, name_, "attribute '", name, "' already exists");
  for (const auto& b : buffers_) TANDEM_CHECK(b.first != name, ValueError, name_, "attribute '", name, "' already exists");
  for (const auto& c : children_) TANDEM_CHECK(c.first != name, ValueError, name_, "attribute '", name, "' already exists");
}

Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name);
  if (t.defined() && requires_grad) t.requires_grad_(true);
  params_.emplace_back(name, std::move(t));
  param_slots_.push_back({});
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name);
  buffers_.emplace_back(name, std::move(t));
  buffer_slots_.push_back({});
  return buffers_.back().second;
}

void Module::register_parameter(const std::string& name, Tensor* slot, bool requires_grad) {
  TANDEM_CHECK(slot != nullptr, ValueError, name_, "register_parameter('", name, "') got a null member pointer");
  register_parameter(name, *slot, requires_grad);
  param_slots_.back() = Slot{slot, requires_grad};
  has_slots_ = true;
}

void Module::register_buffer(const std::string& name, Tensor* slot) {
  TANDEM_CHECK(slot != nullptr, ValueError, name_, "register_buffer('", name, "') got a null member pointer");
  register_buffer(name, *slot);
  buffer_slots_.back() = Slot{slot, false};
  has_slots_ = true;
}

void Module::sync_slots() const {
  if (!has_slots_) [[likely]] return;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Slot& s = param_slots_[i];
    if (!s.member || s.member->impl() == params_[i].second.impl()) continue;
    Tensor& t = *s.member;
    // A replacement assigned to a trainable member is trainable, as an nn.Parameter is.
    if (t.defined() && s.requires_grad && !t.requires_grad() && t.is_leaf()) t.requires_grad_(true);
    params_[i].second = t;
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Slot& s = buffer_slots_[i];
    if (s.member && s.member->impl() != buffers_[i].second.impl()) buffers_[i].second = *s.member;
  }
}

void Module::add_child(const std::string& name, ModulePtr m) {
  check_new_name(name);
  TANDEM_CHECK(m != nullptr, ValueError, name_, "submodule '", name, "' is null");
  children_.emplace_back(name, std::move(m));
}

NamedTensors Module::named_parameters(bool recurse) const {
  sync_slots();
  NamedTensors out;
  for (const auto& p : params_)
    if (p.second.defined()) out.push_back(p);
  if (recurse)
    for (const auto& [cn, c] : children_)
      for (auto& [n, t] : c->named_parameters(true)) out.emplace_back(cn + "." + n, t);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  sync_slots();
  // named_parameters' order, without building the names (zero_grad calls this every step).
  std::vector<Tensor> out;
  for (const auto& p : params_)
    if (p.second.defined()) out.push_back(p.second);
  if (recurse)
    for (const auto& [cn, c] : children_)
      for (Tensor& t : c->parameters(true)) out.push_back(std::move(t));
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  sync_slots();
  NamedTensors out;
  for (const auto& b : buffers_)
    if (b.second.defined()) out.push_back(b);
  if (recurse)
    for (const auto& [cn, c] : children_)
      for (auto& [n, t] : c->named_buffers(true)) out.emplace_back(cn + "." + n, t);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<ModulePtr> Module::children() const {
  std::vector<ModulePtr> out;
  for (const auto& c : children_) out.push_back(c.second);
  return out;
}
std::vector<std::pair<std::string, ModulePtr>> Module::named_children() const { return children_; }

std::vector<Module*> Module::modules() {
  std::vector<Module*> out{this};
  for (auto& [n, c] : children_)
    for (Module* m : c->modules()) out.push_back(m);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      NoGradGuard ng;
      g.zero_();
    }
  }
}

void Module::to(DType dtype) {
  TANDEM_CHECK(is_floating_point(dtype), TypeError, "Module.to", "got ", dtype_name(dtype),
               ", expected a floating dtype (only floating parameters and buffers are converted)");
  NoGradGuard ng;
  // In place (Tensor::set_data): the layers' members (Linear::weight, ...) and anything else
  // holding these tensors, an optimizer included, see the converted values.
  auto convert = [dtype](const Tensor& t) {
    if (!t.defined() || !t.is_floating_point() || t.dtype() == dtype) return;
    t.set_data(t.detach().to(dtype));
    if (t.grad().defined() && t.grad().dtype() != dtype) t.grad().set_data(t.grad().to(dtype));
  };
  sync_slots();
  for (auto& [n, p] : params_) convert(p);
  for (auto& [n, b] : buffers_) convert(b);
  for (auto& [n, c] : children_) c->to(dtype);
}

NamedTensors Module::state_dict() const {
  sync_slots();
  // PyTorch's order: this module's parameters, then its buffers, then each child's entries.
  NamedTensors out;
  for (const auto& [n, t] : params_)
    if (t.defined()) out.emplace_back(n, t.detach());
  for (const auto& [n, t] : buffers_)
    if (t.defined()) out.emplace_back(n, t.detach());
  for (const auto& [cn, c] : children_)
    for (auto& [n, t] : c->state_dict()) out.emplace_back(cn + "." + n, std::move(t));
  return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  NamedTensors mine = named_parameters();
  for (auto& nb : named_buffers()) mine.push_back(nb);
  std::vector<std::string> missing, unexpected;
  for (const auto& [n, t] : mine) {
    bool found = false;
    for (const auto& [k, v] : state) found = found || k == n;
    if (!found) missing.push_back(n);
  }
  for (const auto& [k, v] : state) {
    bool found = false;
    for (const auto& [n, t] : mine) found = found || k == n;
    if (!found) unexpected.push_back(k);
  }
  if (strict && (!missing.empty() || !unexpected.empty())) {
    std::ostringstream os;
    os << "[load_state_dict] error(s) in loading state_dict for " << name_ << ":";
    if (!missing.empty()) {
      os << " missing keys:";
      for (auto& m : missing) os << " \"" << m << "\"";
    }
    if (!unexpected.empty()) {
      os << (missing.empty() ? "" : ";") << " unexpected keys:";
      for (auto& u : unexpected) os << " \"" << u << "\"";
    }
    throw ValueError(os.str());
  }
  // Check every shape/dtype before writing anything: a failed load changes nothing.
  for (const auto& [n, t] : mine)
    for (const auto& [k, v] : state)
      if (k == n) {
        TANDEM_CHECK(v.sizes().equals(t.sizes()), ShapeError, "load_state_dict", "size mismatch for ", n,
                     ": copying a param with shape ", v.sizes(), ", the shape in the current model is ", t.sizes());
        TANDEM_CHECK(v.dtype() == t.dtype(), TypeError, "load_state_dict", "dtype mismatch for ", n, ": got ",
                     dtype_name(v.dtype()), ", the model has ", dtype_name(t.dtype()));
      }
  NoGradGuard ng;
  for (auto& [n, t] : mine)
    for (const auto& [k, v] : state)
      if (k == n) {
        Tensor dst = t;
        dst.copy_(v);
      }
}

HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  int64_t id = g_hook_ids.fetch_add(1);
  pre_hooks_.push_back({id, std::move(hook), nullptr});
  ++hooks_changes_;
  return HookHandle(this, id, true);
}

HookHandle Module::register_forward_pre_hook(ForwardPreListHook hook) {
  int64_t id = g_hook_ids.fetch_add(1);
  pre_hooks_.push_back({id, nullptr, std::move(hook)});
  ++hooks_changes_;
  return HookHandle(this, id, true);
}

HookHandle Module::register_forward_hook(ForwardHook hook) {
  int64_t id = g_hook_ids.fetch_add(1);
  hooks_.push_back({id, std::move(hook), nullptr});
  ++hooks_changes_;
  return HookHandle(this, id, false);
}

HookHandle Module::register_forward_hook(ForwardListHook hook) {
  int64_t id = g_hook_ids.fetch_add(1);
  hooks_.push_back({id, nullptr, std::move(hook)});
  ++hooks_changes_;
  return HookHandle(this, id, false);
}

HookHandle Module::register_full_backward_hook(BackwardHook hook) {
  TANDEM_CHECK(hook != nullptr, ValueError, name_, "register_full_backward_hook got an empty hook");
  int64_t id = g_hook_ids.fetch_add(1);
  backward_hooks_.emplace_back(id, std::move(hook));
  ++hooks_changes_;
  return HookHandle(this, id, false);
}

HookHandle Module::register_full_backward_pre_hook(BackwardPreHook hook) {
  TANDEM_CHECK(hook != nullptr, ValueError, name_, "register_full_backward_pre_hook got an empty hook");
  int64_t id = g_hook_ids.fetch_add(1);
  backward_pre_hooks_.emplace_back(id, std::move(hook));
  ++hooks_changes_;
  return HookHandle(this, id, true);
}

void Module::remove_hook(int64_t id, bool pre) {
  // Ids are unique across all kinds, so `pre` only narrows the search.
  auto drop = [&](auto& list, auto id_of) {
    for (auto it = list.begin(); it != list.end(); ++it)
      if (id_of(*it) == id) {
        list.erase(it);
        ++hooks_changes_;
        return true;
      }
    return false;
  };
  auto entry_id = [](const auto& e) { return e.id; };
  auto pair_id = [](const auto& e) { return e.first; };
  if (pre) {
    if (!drop(pre_hooks_, entry_id)) drop(backward_pre_hooks_, pair_id);
  } else {
    if (!drop(hooks_, entry_id)) drop(backward_hooks_, pair_id);
  }
}

uint64_t Module::hooks_version() const {
  uint64_t v = hooks_changes_ * 1315423911ULL + pre_hooks_.size() * 31 + hooks_.size() +
               (backward_hooks_.size() + backward_pre_hooks_.size()) * 7919;
  for (const auto& [n, c] : children_) v = v * 1099511628211ULL + c->hooks_version();
  return v;
}

uint64_t Module::state_version() const {
  sync_slots();
  uint64_t v = hooks_version();
  auto mix = [&v](uint64_t x) { v = (v ^ x) * 1099511628211ULL; };
  // Own state, then the children, depth first; no allocation.
  auto visit = [&](const Module& m, auto&& self) -> void {
    m.sync_slots();
    mix(m.training_ ? 1 : 2);
    // An undefined slot is not a parameter (as in parameters()): it leaves no trace.
    for (const auto& [n, t] : m.params_)
      if (t.defined()) mix(reinterpret_cast<uintptr_t>(t.impl()));
    for (const auto& [n, t] : m.buffers_)
      if (t.defined()) mix(reinterpret_cast<uintptr_t>(t.impl()));
    mix(m.children_.size());
    for (const auto& [n, c] : m.children_) self(*c, self);
  };
  visit(*this, visit);
  return v;
}

std::string Module::to_string(int indent) const {
  std::ostringstream os;
  os << name_ << "(" << extra_repr();
  if (!children_.empty()) {
    os << "\n";
    for (const auto& [n, c] : children_) os << std::string(static_cast<size_t>(indent + 2), ' ') << "(" << n << "): " << c->to_string(indent + 2) << "\n";
    os << std::string(static_cast<size_t>(indent), ' ');
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.to_string(); }

}  // namespace tandem::nn
