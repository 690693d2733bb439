#pragma once
// Thread-local grad mode flag. It lives in core (not autograd/) because the dispatcher
// checks it on every call and must not depend on the autograd layer; autograd/ owns the
// user-facing guards (NoGradGuard, EnableGradGuard, InferenceMode) built on it.
namespace tandem {

/// True when ops should record autograd history (thread-local; default true).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

/// True inside tandem::InferenceMode: no tape and no version-counter updates.
bool is_inference_mode();
void set_inference_mode(bool enabled);

/// Restores the previous grad mode when it goes out of scope.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~AutoGradMode() { set_grad_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

}  // namespace tandem
