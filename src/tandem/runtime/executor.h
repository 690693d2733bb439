#pragma once
// Executes a Graph: kernels in order on preplanned buffers. Intermediates live in one
// arena (offsets from the memory planner), taken from the caching allocator for each run
// and given back after it (the same block, in steady state); views alias their
// source and in-place results their input, as in eager mode. Buffers that a graph
// output aliases are allocated per call, so outputs the caller keeps are never
// overwritten by a later call.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <memory>

#include "tandem/ir/graph.h"
#include "tandem/runtime/memory_budget.h"
#include "tandem/runtime/memory_planner.h"
#include "tandem/runtime/spill_file.h"

namespace tandem::runtime {

/// Per-node timing of one or more runs.
struct NodeProfile {
  std::string op;
  int node = 0;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t bytes = 0;  ///< bytes written (outputs)
  int64_t start_ns = 0;  ///< start of the last run, relative to that run's start (Chrome trace)
  int64_t last_ns = 0;
};

/// A compiled, runnable program. Not copyable; not thread-safe (one arena).
class Executor {
 public:
  /// Takes the graph (already optimised and verified) and plans its memory.
  explicit Executor(ir::Graph graph);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs with `inputs` bound to the graph inputs in order (metas must match the graph's;
  /// the caller's guards ensure it). Returns the graph outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  /// Same, taking the inputs over (`inputs` is left empty): each is released after its
  /// last use, so a value nobody else holds is freed during the run.
  std::vector<Tensor> run(std::vector<Tensor>&& inputs);
  /// false: every planned buffer is allocated when its value is made and freed after its
  /// last use (through the caching allocator, as eager mode does) instead of living in the
  /// arena for the whole run. The backward program of a training step runs so: its inputs
  /// (the saved values) are freed as it consumes them, and its peak memory is eager's.
  void set_use_arena(bool on);
  /// Whether runs use the arena (plan().arena_bytes) or allocate per value.
  bool uses_arena() const { return use_arena_; }
  /// Fits the program's estimated peak under `budget` bytes (runtime/memory_budget.h:
  /// recomputes cheap values and offloads others to a spill file) and plans again; call
  /// after set_use_arena. The results do not change. OutOfMemoryError when no plan fits
  /// (naming the smallest peak reachable), ValueError for budget <= 0.
  void fit_memory_budget(int64_t budget, const BudgetCosts& costs = measure_costs());
  /// The first run under a budget measures what each node's kernel allocates for itself
  /// (scratchpads, reordered copies; core/memory_watch.h); when that puts the estimate over
  /// the budget, the next run first extends the plan with it (and raises OutOfMemoryError
  /// there if nothing fits). So runs after the first stay under the budget.
  /// What fit_memory_budget chose (budget 0: none asked).
  const BudgetPlan& budget_plan() const { return budget_plan_; }

  const ir::Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }
  /// Arena bytes / lower bound and the per-call output bytes, as text (without an arena:
  /// says so, with what the plan would take).
  std::string memory_summary() const;

  void set_profiling(bool on) { profiling_ = on; }
  /// Called after each node ran, with the node and every value computed so far (indexed
  /// by value id): the eager-vs-compiled checker compares them. Empty: none (the default).
  using NodeCallback = std::function<void(const ir::Node&, const std::vector<Tensor>& values)>;
  void set_node_callback(NodeCallback cb) { node_callback_ = std::move(cb); }
  const std::vector<NodeProfile>& profile() const { return profile_; }
  /// Table: op, calls, total ms, us/call, bytes.
  std::string profile_table() const;
  /// Chrome trace (Perfetto) JSON of the last profiled run.
  std::string chrome_trace() const;

 private:
  // Plans buffers (with the offloads' gaps) and the release lists for graph_.
  void prepare();
  // Before node position k: brings offloaded storages back; after it: sends them out.
  void reload_before(size_t k, std::vector<Tensor>& env);
  void spill_after(size_t k, std::vector<Tensor>& env);
  // Node position k touches sliced offloads: reads its pieces of them into `ins`; true when
  // the node is done without running (a view of one, or a copy_ into one, written to the file).
  bool sliced_through_file(size_t k, SmallVec<Tensor, 4>& ins);

  ir::Graph graph_;
  MemoryPlan plan_;
  // Per value: buffer index in the arena (-1 none), or output buffer flag.
  std::vector<int> buffer_of_;
  std::vector<bool> per_call_;   // value roots allocated each call (graph outputs alias them)
  std::vector<int64_t> buffer_offset_;
  Tensor arena_;
  bool use_arena_ = true;
  std::vector<std::vector<int>> release_after_;  // per node position: values to drop after it
  bool profiling_ = false;
  std::vector<NodeProfile> profile_;
  NodeCallback node_callback_;
  BudgetPlan budget_plan_;
  BudgetCosts budget_costs_;
  std::vector<int64_t> workspace_;  // per node position: bytes its kernel allocated for itself
  bool calibrated_ = true;          // workspace_ measured (false: the next run measures it)
  bool refit_ = false;              // the measured workspace exceeds the budget: refit first
  // One per BudgetPlan offload: its slot in the spill file, the arena buffer of the
  // reloaded bytes (-1 without an arena), the values rebuilt on them.
  struct OffloadRun {
    Offload o;
    int64_t file_offset = 0;
    int spill_buffer = -1;                 // the arena buffer the bytes leave
    int reload_buffer = -1;
    std::vector<int> on_storage;           // every value made by a node on the storage (its aliases)
    std::vector<int> rebuilt;              // values made before the gap and read after it
    std::vector<int64_t> rebuilt_offset;   // each one's byte offset from the storage's start (set at spill)
    bool write = true;                     // false: an `empty` storage spilled where it is made
  };
  std::vector<OffloadRun> offload_runs_;
  // Per node position: how it touches sliced offloads' storages (Offload::sliced).
  struct SlicedStep {
    size_t run = 0;
    SlicedAccess access;
  };
  std::vector<std::vector<SlicedStep>> sliced_at_;
  std::vector<std::vector<int>> spill_at_, reload_at_;  // per node position: offload_runs_ indices
  std::unique_ptr<SpillFile> spill_;
};

}  // namespace tandem::runtime
