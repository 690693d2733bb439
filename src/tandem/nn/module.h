#pragma once
// nn::Module (MindSpore's Cell): a node in a tree of layers that owns parameters
// (trainable tensors), buffers (state such as BatchNorm running statistics) and
// submodules, following the PyTorch C++ frontend's torch::nn::Module.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::nn {

/// Ordered (insertion order) list of named tensors, as state_dict() returns.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module;
using ModulePtr = std::shared_ptr<Module>;
namespace detail {
struct BackwardHookCall;  // one call's full backward hooks (module.cpp)
}

/// Handle of a forward hook (torch.utils.hooks.RemovableHandle). remove() is idempotent,
/// and a no-op once the module is destroyed when the module is owned by a shared_ptr (the
/// handle watches it through a weak_ptr); a module not owned by a shared_ptr must outlive
/// the handle's remove().
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(Module* m, int64_t id, bool pre);
  void remove();

 private:
  Module* module_ = nullptr;
  std::weak_ptr<Module> owner_;  ///< set when the module is owned by a shared_ptr
  bool tracked_ = false;
  int64_t id_ = -1;
  bool pre_ = false;
};

/// Base class of layers. Subclasses register their tensors and children in their
/// constructor (register_parameter / register_buffer / register_module) and implement
/// forward(). Not copyable: modules are shared through std::shared_ptr.
class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string name = "Module") : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The computation: input [N, ...] -> output, per layer. Modules with other
  /// signatures (several inputs or outputs: Bilinear, MaxPool2d with return_indices)
  /// override forward_list instead.
  virtual Tensor forward(const Tensor& input);
  /// The computation on a list of inputs; the default calls forward(inputs[0]) (ValueError
  /// unless there is exactly one input). Runs no hooks: call operator() for that.
  virtual std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs);
  /// Calls the module (PyTorch's Module.__call__): forward pre-hooks, forward, then forward
  /// hooks (which may replace the input / output), in registration order.
  Tensor operator()(const Tensor& input);
  /// The same for modules with several inputs or outputs: pre-hooks, forward_list, hooks.
  /// List hooks see all inputs and outputs; a one-tensor hook runs when the call has one
  /// input (pre-hook) / one input and one output (hook), and raises ValueError naming the
  /// module otherwise (it cannot see the call; register a list hook).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  const std::string& name() const { return name_; }

  /// Registers a trainable tensor (requires_grad is set when `requires_grad`). ValueError
  /// on a duplicate or dotted name.
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  /// Registers a non-trainable state tensor saved in state_dict (running stats).
  Tensor& register_buffer(const std::string& name, Tensor t);
  /// Registers the data member `*slot` as a parameter that follows the member: assigning
  /// another tensor to it (`linear->weight = w`) replaces the registered parameter, as
  /// attribute assignment does in PyTorch, so state_dict(), parameters() and compiled
  /// modules see the new tensor (a leaf is made to require grad when `requires_grad`).
  /// `slot` must be a member of this module (it must live as long as the module). The
  /// built-in layers register their tensors this way. ValueError as register_parameter.
  void register_parameter(const std::string& name, Tensor* slot, bool requires_grad = true);
  /// The same for a buffer.
  void register_buffer(const std::string& name, Tensor* slot);
  /// Registers a child; its parameters appear as "<name>.<param>".
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

  /// Parameters of this module and (recurse) its descendants, in registration order.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<ModulePtr> children() const;
  std::vector<std::pair<std::string, ModulePtr>> named_children() const;
  /// This module and all descendants, depth first (this first).
  std::vector<Module*> modules();
  /// This module's own registered parameters, buffers and children (not recursive; slots
  /// holding undefined tensors included), without copying: for walks that run on every
  /// call (compiled modules gather their inputs and guards this way).
  const NamedTensors& local_parameters() const {
    sync_slots();
    return params_;
  }
  const NamedTensors& local_buffers() const {
    sync_slots();
    return buffers_;
  }
  const std::vector<std::pair<std::string, ModulePtr>>& local_children() const { return children_; }

  /// Sets training mode here and in all descendants (Dropout, BatchNorm behave differently).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Clears gradients of all parameters: undefined (set_to_none) or zero-filled.
  void zero_grad(bool set_to_none = true);
  /// Converts the floating parameters (and their gradients) and buffers of the whole tree to
  /// the floating `dtype`; integer buffers (num_batches_tracked) keep theirs, as in PyTorch.
  /// In place: each tensor keeps its identity (Tensor::set_data), so layer members and
  /// optimizers holding the parameters see the new dtype. TypeError for a non-floating dtype.
  void to(DType dtype);

  /// Parameters and buffers by dotted name (PyTorch's state_dict keys), detached (sharing
  /// storage), in PyTorch's order: a module's parameters, its buffers, then its children's.
  NamedTensors state_dict() const;
  /// Copies values from `state` into parameters and buffers. strict: raise ValueError
  /// listing missing and unexpected keys; always raise ShapeError/TypeError naming the key
  /// on a shape or dtype mismatch.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  /// One-tensor hooks (modules with one input and one output).
  using ForwardPreHook = std::function<Tensor(Module&, const Tensor&)>;
  using ForwardHook = std::function<Tensor(Module&, const Tensor& input, const Tensor& output)>;
  /// List hooks (PyTorch's hooks see the tuple of positional inputs): any module.
  using ForwardPreListHook = std::function<std::vector<Tensor>(Module&, const std::vector<Tensor>&)>;
  using ForwardListHook =
      std::function<std::vector<Tensor>(Module&, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs)>;
  /// Hook run before forward with the input; may return a replacement (undefined keeps it).
  HookHandle register_forward_pre_hook(ForwardPreHook hook);
  /// List form: gets the inputs; may return replacement inputs (an empty list keeps them).
  HookHandle register_forward_pre_hook(ForwardPreListHook hook);
  /// Hook run after forward with input and output; may return a replacement output.
  HookHandle register_forward_hook(ForwardHook hook);
  /// List form: gets inputs and outputs; may return replacement outputs (empty keeps them).
  /// One-tensor calls (operator()(Tensor)) accept only a one-tensor replacement (ValueError).
  HookHandle register_forward_hook(ForwardListHook hook);
  /// Full backward hook (torch.nn.Module.register_full_backward_hook): called during
  /// backward once the gradients with respect to the module's inputs are computed, with
  /// grad_input (one entry per tensor input of the call; undefined for an input that does
  /// not require grad or got no gradient) and grad_output (one per output; undefined for an
  /// output that got no gradient). It may return replacement grad_input (same length;
  /// entries for inputs that do not require grad are ignored) or an empty list to keep
  /// it. When no input requires grad, the hooks run as soon as grad_output is known, with
  /// all-undefined grad_input, and must return an empty (or all-undefined) list. Runs when
  /// the call was made with grad enabled and some input or output requires grad; the
  /// hooks registered at the time of the call are the ones that run. RuntimeError (raised
  /// from backward) for a replacement of the wrong length; ShapeError for one of the
  /// wrong shape. Under compile() a call that would set these hooks up runs eagerly (a
  /// graph break): the hooks live in the autograd graph, which a program does not replay.
  using BackwardHook = std::function<std::vector<Tensor>(Module&, const std::vector<Tensor>& grad_input,
                                                         const std::vector<Tensor>& grad_output)>;
  /// Full backward pre-hook (torch.nn.Module.register_full_backward_pre_hook): called
  /// with grad_output when the gradients with respect to the module's outputs are known,
  /// before any gradient flows into the module; may return replacement grad_output (same
  /// length, else RuntimeError) or an empty list to keep it. Later pre-hooks and the full
  /// backward hooks see the replacement.
  using BackwardPreHook = std::function<std::vector<Tensor>(Module&, const std::vector<Tensor>& grad_output)>;
  HookHandle register_full_backward_hook(BackwardHook hook);
  HookHandle register_full_backward_pre_hook(BackwardPreHook hook);
  /// Removes the hook with this id: a (forward or backward) pre-hook when `pre`, else a hook.
  void remove_hook(int64_t id, bool pre);
  /// Changes whenever hooks are added or removed anywhere in the tree (compiled modules
  /// guard on it).
  uint64_t hooks_version() const;
  /// A hash of what a compiled program that called this module depends on besides tensor
  /// values: hooks anywhere in the tree, every training flag, and which tensor each
  /// registered parameter and buffer slot holds (identity, not values). A compiled
  /// function that called the module recompiles when it changes.
  uint64_t state_version() const;

  /// Pretty-printed tree (PyTorch repr style).
  virtual std::string extra_repr() const { return ""; }
  std::string to_string(int indent = 0) const;

 protected:
  void add_child(const std::string& name, ModulePtr m);
  bool training_ = true;

 private:
  std::string name_;
  // Registered tensors; an entry with a slot mirrors the member it points to (refreshed
  // by sync_slots() before every read, hence mutable).
  mutable std::vector<std::pair<std::string, Tensor>> params_;
  mutable std::vector<std::pair<std::string, Tensor>> buffers_;
  struct Slot {
    Tensor* member = nullptr;
    bool requires_grad = false;
  };
  std::vector<Slot> param_slots_, buffer_slots_;  // parallel to params_ / buffers_
  bool has_slots_ = false;
  void sync_slots() const;
  std::vector<std::pair<std::string, ModulePtr>> children_;
  // A hook in one of its two forms (the other is empty), kept in registration order.
  struct PreHookEntry {
    int64_t id;
    ForwardPreHook one;
    ForwardPreListHook list;
  };
  struct HookEntry {
    int64_t id;
    ForwardHook one;
    ForwardListHook list;
  };
  std::vector<PreHookEntry> pre_hooks_;
  std::vector<HookEntry> hooks_;
  std::vector<std::pair<int64_t, BackwardHook>> backward_hooks_;
  std::vector<std::pair<int64_t, BackwardPreHook>> backward_pre_hooks_;
  // Set up the backward hooks of one call around its inputs / outputs (identity autograd
  // nodes; see module.cpp). No-ops without backward hooks.
  std::shared_ptr<detail::BackwardHookCall> begin_backward_hooks();
  uint64_t hooks_changes_ = 0;
  void check_new_name(const std::string& name) const;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace tandem::nn
