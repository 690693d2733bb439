#pragma once
// tandem::profiler: per-op call counts and wall time, gathered through the dispatcher's
// observer hook (like torch.autograd.profiler.profile + key_averages().table()).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/dispatch/dispatcher.h"

namespace tandem::profiler {

/// Aggregate for one op name.
struct OpStats {
  std::string name;
  int64_t calls = 0;
  int64_t total_ns = 0;  ///< inclusive wall time (nested ops counted in their parent too)
  int64_t self_ns = 0;   ///< total minus time spent in nested dispatched ops
};

/// Records every op dispatched on the constructing thread while it is alive and
/// recording. Not copyable.
///   tandem::profiler::Profiler prof;  ... model code ...;  std::cout << prof.table();
class Profiler : public DispatchObserver {
 public:
  Profiler();  ///< starts recording
  ~Profiler() override;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  /// Stops recording (idempotent); results stay readable.
  void stop();
  /// Per-op aggregates, sorted by self time descending, then name (stable).
  std::vector<OpStats> stats() const;
  /// A text table: name, calls, total ms, self ms, self %, us/call.
  std::string table(size_t max_rows = 30) const;

  void on_enter(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, int depth) override;
  void on_exit(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, ArrayRef<Tensor> outputs,
               int depth) override;

 private:
  struct Frame {
    const OpDef* op;
    std::chrono::steady_clock::time_point start;
    int64_t child_ns = 0;
  };
  std::vector<Frame> stack_;
  std::vector<OpStats> by_id_;  // indexed by OpDef::id
  ObserverGuard* guard_ = nullptr;
};

}  // namespace tandem::profiler
