#include "tandem/core/grad_mode.h"

namespace tandem {
namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_inference = false;
}
bool is_inference_mode() { return t_inference; }
void set_inference_mode(bool enabled) { t_inference = enabled; }
bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }
}  // namespace tandem
