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

/// Notes that the function did something a program cannot replay yet: a backward() or an
/// optimizer step inside it (their .grad rebinding and direct kernel writes are not
/// recorded), so the call completes eagerly and the signature runs eagerly with a notice.
inline void note_unreplayable(const char* what) {
  if (capture_depth() > 0 && tracing_backward() == 0 && break_reason().empty())
    break_reason() = std::string(what) +
                     " inside a compiled function is not captured yet (compiling the whole training step is "
                     "future work): compile the model's forward (tandem::compile(module)) and call backward() "
                     "and the optimizer outside";
}

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
