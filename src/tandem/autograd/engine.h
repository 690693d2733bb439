#pragma once
// The backward engine and the user-facing autograd API (torch.autograd semantics).
#include <optional>
#include <vector>

#include "tandem/autograd/node.h"
#include "tandem/core/grad_mode.h"

namespace tandem::autograd {

/// Computes gradients of `outputs` (seeded with `grad_outputs`, or 1 for scalar outputs)
/// and accumulates them into the .grad of every leaf that requires grad
/// (torch.autograd.backward). Iterative: any graph depth works. The graph's saved tensors
/// are freed unless retain_graph (default: create_graph). create_graph records the
/// backward computation itself, for higher-order gradients.
/// Errors: RuntimeError if an output does not require grad, if a non-scalar output has no
/// grad_output, or when backpropagating through a freed graph; ShapeError if a
/// grad_output's shape differs from its output's.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

/// Returns d(outputs)/d(inputs) (weighted by grad_outputs) without touching .grad
/// (torch.autograd.grad). An input not reached gives an undefined tensor when allow_unused,
/// else RuntimeError.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

/// Disables gradient recording in its scope (torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Enables gradient recording in its scope (inside a NoGradGuard, say).
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

/// Inference mode (torch::InferenceMode): no tape and no version-counter updates.
/// Tensors made inside must not be used later in autograd-recorded computations that
/// are modified in place (their versions were not tracked).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_grad_;
  bool prev_inference_;
};

/// Removable handle of a registered hook; remove() is idempotent.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  RemovableHandle(std::weak_ptr<Node::PreHookList> hooks, int64_t id) : hooks_(std::move(hooks)), id_(id) {}
  RemovableHandle(const Tensor& leaf, int64_t id, bool post_acc) : leaf_(leaf), id_(id), post_acc_(post_acc) {}
  void remove();

 private:
  std::weak_ptr<Node::PreHookList> hooks_;
  Tensor leaf_;
  int64_t id_ = -1;
  bool post_acc_ = false;
};

/// Registers `hook` on the gradient of t (Tensor.register_hook): called with the gradient
/// when it is computed; a defined return value replaces it. RuntimeError if t does not
/// require grad.
RemovableHandle register_hook(const Tensor& t, std::function<Tensor(const Tensor&)> hook);
/// Leaf only: called with the leaf after its .grad was accumulated.
RemovableHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(Tensor&)> hook);

/// Queues `callback` to run once the backward() running on this thread has finished its
/// graph, before backward() returns (torch's Variable._execution_engine.queue_callback).
/// Callbacks run in the order queued; one that throws ends backward() with its error
/// (later ones are dropped). A nested backward (a hook's own) runs its own callbacks.
/// Distributed data parallel waits for its gradient all-reduces here. RuntimeError when
/// no backward() is running on this thread (autograd::grad does not run callbacks).
void queue_callback(std::function<void()> callback);

namespace detail {
/// True while the backward running on this thread keeps its graph (retain_graph or
/// create_graph); false outside a backward. A node that frees its saved tensors before
/// the engine's release_variables() (to lower the peak) may do so only when this is false.
bool backward_keeps_graph();
}  // namespace detail

}  // namespace tandem::autograd

namespace tandem {
using autograd::EnableGradGuard;
using autograd::InferenceMode;
using autograd::NoGradGuard;
}  // namespace tandem
