#pragma once
// Thread-local state that lets graph capture detect data-dependent reads. Capture runs the
// function eagerly on real tensors, so a read from user code (item(), data_ptr(),
// printing) still returns the real value; it is only noted, and the capture then counts
// as a graph break. Reads inside the dispatcher (kernels, meta) are not noted.
// It lives in core because Tensor's accessors check it.
#include <string>

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
