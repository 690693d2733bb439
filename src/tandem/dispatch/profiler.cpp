#include "tandem/dispatch/profiler.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tandem::profiler {

Profiler::Profiler() { guard_ = new ObserverGuard(this); }
Profiler::~Profiler() { stop(); }
void Profiler::stop() {
  delete guard_;
  guard_ = nullptr;
}

void Profiler::on_enter(const OpDef& op, ArrayRef<Tensor>, ArrayRef<AttrValue>, int) {
  stack_.push_back({&op, std::chrono::steady_clock::now(), 0});
}

void Profiler::on_exit(const OpDef& op, ArrayRef<Tensor>, ArrayRef<AttrValue>, ArrayRef<Tensor>, int) {
  if (stack_.empty() || stack_.back().op != &op) return;  // started mid-call
  Frame f = stack_.back();
  stack_.pop_back();
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - f.start).count();
  if (!stack_.empty()) stack_.back().child_ns += ns;
  if (by_id_.size() <= static_cast<size_t>(op.id)) by_id_.resize(static_cast<size_t>(op.id) + 1);
  OpStats& s = by_id_[static_cast<size_t>(op.id)];
  s.name = op.name;
  ++s.calls;
  s.total_ns += ns;
  s.self_ns += ns - f.child_ns;
}

std::vector<OpStats> Profiler::stats() const {
  std::vector<OpStats> out;
  for (const auto& s : by_id_)
    if (s.calls) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const OpStats& a, const OpStats& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  return out;
}

std::string Profiler::table(size_t max_rows) const {
  auto rows = stats();
  int64_t total_self = 0;
  for (const auto& r : rows) total_self += r.self_ns;
  std::ostringstream os;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-28s %10s %12s %12s %8s %12s\n", "op", "calls", "total ms", "self ms", "self %", "us/call");
  os << buf << std::string(87, '-') << '\n';
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const auto& r = rows[i];
    std::snprintf(buf, sizeof buf, "%-28s %10lld %12.3f %12.3f %7.1f%% %12.2f\n", r.name.c_str(),
                  static_cast<long long>(r.calls), r.total_ns / 1e6, r.self_ns / 1e6,
                  total_self ? 100.0 * static_cast<double>(r.self_ns) / static_cast<double>(total_self) : 0.0,
                  r.total_ns / 1e3 / static_cast<double>(r.calls));
    os << buf;
  }
  if (rows.size() > max_rows) os << "... " << rows.size() - max_rows << " more ops\n";
  return os.str();
}

}  // namespace tandem::profiler
