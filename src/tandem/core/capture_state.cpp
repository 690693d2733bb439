#include "tandem/core/capture_state.h"

namespace tandem::capture_state {
namespace {
thread_local int t_capture = 0;
thread_local int t_dispatch = 0;
thread_local std::string t_reason;
}  // namespace
std::string& break_reason() { return t_reason; }
int& capture_depth() { return t_capture; }
int& dispatch_depth() { return t_dispatch; }
}  // namespace tandem::capture_state
