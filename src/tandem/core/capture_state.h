#pragma once
// Thread-local state that lets graph capture detect data-dependent reads. Capture runs the
// function eagerly on real tensors, so a read from user code (item(), data_ptr(),
// printing) still returns the real value; it is only noted, and the capture then counts
// as a graph break. Reads inside the dispatcher (kernels, meta) are not noted.
// It lives in core because Tensor's accessors check it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/core/error.h"

namespace tandem {

class Tensor;

/// Raised by a strict compiled function (compile options) when capture hits a graph
/// break; otherwise breaks only make the function run eagerly.
class GraphBreak : public Error {
 public:
  explicit GraphBreak(const std::string& reason) : Error("[compile] graph break: " + reason), reason_(reason) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

namespace capture_state {
/// Non-zero while a capture runs on this thread.
int& capture_depth();
/// Non-zero while the dispatcher runs an op on this thread.
int& dispatch_depth();
/// The first data-dependent read noted during the current capture ("" if none).
std::string& break_reason();
/// Id of the capture running on this thread (0: none). Storages created while it runs
/// remember it (StorageImpl::capture_id), so capture can tell a tensor the function made
/// from C++ data (tensor({...}), from_blob: not an op, so not recorded) from one it
/// merely reads.
uint64_t current_capture_id();
/// Starts a capture on this thread: sets a fresh id (returned) and clears the notes below.
uint64_t begin_capture();
/// Ends the capture begun with `id` (restores "none").
void end_capture(uint64_t id);

/// State the captured function read that is not a tensor input: a module it called. The
/// program is valid while value() returns what it returned at capture. Layers above core
/// (nn::Module) add these while a capture runs; capture collects them.
struct StateGuard {
  const void* key = nullptr;          ///< identity (one guard per module)
  std::function<uint64_t()> value;    ///< current state (hooks, parameters, buffers, flags)
  std::string what;                   ///< for messages: "module 'Linear' (hooks, ...)"
  uint64_t expected = 0;              ///< value() when noted
};
/// The guards noted by the current capture on this thread.
std::vector<StateGuard>& state_guards();
/// Adds a guard (once per key) while a capture runs; no-op otherwise.
void note_state_guard(const void* key, std::function<uint64_t()> value, std::string what);
/// Notes a reason the capture cannot be replayed (like a data read: the call completes
/// eagerly and the signature runs eagerly). The first reason wins.
inline void note_break(const std::string& why) {
  if (capture_depth() > 0 && break_reason().empty()) break_reason() = why;
}

/// Non-zero while capture itself traces the backward of the captured call (the engine
/// then runs on traced values on purpose; a backward() the user's function calls is not).
int& tracing_backward();
/// Nodes that received two or more gradients while capture traced a backward (a forward op
/// with several differentiable outputs): how such a node treats a missing one is its own
/// rule's business, so a program cannot leave one out by pruning (jit/training.cpp).
int& traced_multi_gradient_nodes();

/// Why the current capture cannot be replayed although the next call's may be ("" if
/// none): the call completes eagerly, nothing is cached, and the next call captures again.
/// An optimizer's first step notes it (it creates its state: tensors a program would not
/// bind); the second step is captured.
std::string& retry_reason();
/// Notes a retry reason (the first wins) while a capture runs; no-op otherwise.
inline void note_retry(const std::string& why) {
  if (capture_depth() > 0 && tracing_backward() == 0 && retry_reason().empty()) retry_reason() = why;
}

/// Work a program's caller must do before each replay because the capture could not
/// record it as an op: an optimizer copies each group's current learning rate (which a
/// scheduler changes as a C++ number) into the tensor its update ops read.
struct PreRun {
  const void* key = nullptr;      ///< identity (one action per key)
  std::function<void()> run;
};
/// The actions noted by the current capture on this thread.
std::vector<PreRun>& prerun_actions();
/// Adds an action (once per key) while a capture runs; no-op otherwise.
void note_prerun(const void* key, std::function<void()> run);

/// Sees each read or write of a tensor's .grad while a capture runs, before it happens
/// (Tensor::grad, Tensor::set_grad, gradient accumulation by backward): capture records
/// the .grad each such tensor had on entry (a guard) and the one it has at the end (the
/// program rebinds it after every replay, as eager mode's backward does).
class GradObserver {
 public:
  virtual ~GradObserver() = default;
  virtual void on_grad_access(const Tensor& owner) = 0;
};
/// The observer of the capture running on this thread (nullptr: none).
GradObserver*& grad_observer();
/// Calls the observer, if a capture runs and the access is the function's (not capture's
/// own backward tracing).
inline void observe_grad(const Tensor& owner) {
  if (capture_depth() > 0 && tracing_backward() == 0) [[unlikely]]
    if (GradObserver* o = grad_observer()) o->on_grad_access(owner);
}

/// backward() / autograd::grad() calls the captured function made (not capture's own).
struct UserBackward {
  int calls = 0;
  /// Roots of calls without retain_graph (TensorImpl addresses): their graph is freed, so
  /// a later backward through them raises in eager mode.
  std::vector<const void*> freed_roots;
};
/// The current capture's record (cleared by begin_capture).
UserBackward& user_backward();
/// Records a backward() or autograd::grad() over `roots` while a capture runs. With
/// retain_graph or create_graph it notes a break instead (the eager graph would outlive
/// the call, or the gradients would carry history, which a program cannot give them).
void note_user_backward(const std::vector<const void*>& roots, bool retain_graph, bool create_graph);

/// Notes a data read from user code while capturing (see the file comment).
inline void check_data_read(const char* what) {
  if (capture_depth() > 0 && dispatch_depth() == 0) [[unlikely]] {
    if (break_reason().empty())
      break_reason() = std::string(what) + " reads tensor data, so the result depends on the values computed";
  }
}
}  // namespace capture_state

/// Marks the current thread as inside the dispatcher for its lifetime.
struct DispatchDepthGuard {
  DispatchDepthGuard() { ++capture_state::dispatch_depth(); }
  ~DispatchDepthGuard() { --capture_state::dispatch_depth(); }
};

}  // namespace tandem
