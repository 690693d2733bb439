#include "tandem/core/capture_state.h"

#include <atomic>

namespace tandem::capture_state {
namespace {
thread_local int t_capture = 0;
thread_local int t_dispatch = 0;
thread_local std::string t_reason;
thread_local uint64_t t_capture_id = 0;
thread_local std::vector<StateGuard> t_guards;
thread_local std::vector<PreRun> t_prerun;
thread_local std::string t_retry;
thread_local GradObserver* t_grad_observer = nullptr;
thread_local UserBackward t_user_backward;
std::atomic<uint64_t> g_next_capture{1};
}  // namespace
uint64_t current_capture_id() { return t_capture_id; }
uint64_t begin_capture() {
  t_capture_id = g_next_capture.fetch_add(1, std::memory_order_relaxed);
  t_guards.clear();
  t_prerun.clear();
  t_retry.clear();
  t_user_backward = UserBackward{};
  return t_capture_id;
}
void end_capture(uint64_t id) {
  if (t_capture_id == id) t_capture_id = 0;
}
std::vector<StateGuard>& state_guards() { return t_guards; }
void note_state_guard(const void* key, std::function<uint64_t()> value, std::string what) {
  if (t_capture_id == 0) return;
  for (const auto& g : t_guards)
    if (g.key == key) return;
  StateGuard g;
  g.key = key;
  g.expected = value();
  g.value = std::move(value);
  g.what = std::move(what);
  t_guards.push_back(std::move(g));
}
std::vector<PreRun>& prerun_actions() { return t_prerun; }
void note_prerun(const void* key, std::function<void()> run) {
  if (t_capture_id == 0) return;
  for (const auto& a : t_prerun)
    if (a.key == key) return;
  t_prerun.push_back(PreRun{key, std::move(run)});
}
std::string& retry_reason() { return t_retry; }
GradObserver*& grad_observer() { return t_grad_observer; }
UserBackward& user_backward() { return t_user_backward; }
void note_user_backward(const std::vector<const void*>& roots, bool retain_graph, bool create_graph) {
  if (capture_depth() == 0 || tracing_backward() != 0) return;
  if (create_graph)
    note_break("backward with create_graph=true inside a compiled function (the gradients would carry history, "
               "which a program cannot give them)");
  else if (retain_graph)
    note_break("backward with retain_graph=true inside a compiled function (the eager graph would outlive the call, "
               "which a program does not keep)");
  ++t_user_backward.calls;
  t_user_backward.freed_roots.insert(t_user_backward.freed_roots.end(), roots.begin(), roots.end());
}
std::string& break_reason() { return t_reason; }
int& capture_depth() { return t_capture; }
int& dispatch_depth() { return t_dispatch; }
int& tracing_backward() {
  thread_local int depth = 0;
  return depth;
}
int& traced_multi_gradient_nodes() {
  thread_local int count = 0;
  return count;
}
}  // namespace tandem::capture_state
