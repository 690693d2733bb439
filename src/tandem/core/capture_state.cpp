#include "tandem/core/capture_state.h"

#include <atomic>

namespace tandem::capture_state {
namespace {
thread_local int t_capture = 0;
thread_local int t_dispatch = 0;
thread_local std::string t_reason;
thread_local uint64_t t_capture_id = 0;
thread_local std::vector<StateGuard> t_guards;
std::atomic<uint64_t> g_next_capture{1};
}  // namespace
uint64_t current_capture_id() { return t_capture_id; }
uint64_t begin_capture() {
  t_capture_id = g_next_capture.fetch_add(1, std::memory_order_relaxed);
  t_guards.clear();
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
std::string& break_reason() { return t_reason; }
int& capture_depth() { return t_capture; }
int& dispatch_depth() { return t_dispatch; }
int& tracing_backward() {
  thread_local int depth = 0;
  return depth;
}
}  // namespace tandem::capture_state
