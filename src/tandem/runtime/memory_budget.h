#pragma once
// Training under a memory budget (CompileOptions::memory_budget): fits a program's peak
// memory under a number of bytes by choosing, for values that stay alive across the peak,
// to keep them, to recompute them where they are needed again (a clone of their producing
// node: the same kernel on the same inputs gives the same bytes), or to offload them (their
// bytes go to a spill file and come back before their next use). What Paddle's recompute
// pass and PyTorch's activation checkpointing do by hand, and MindSpore's memory scheduler
// does with its offload plan, chosen here per value by measured costs.
//
// A third choice splits a node that sums over a batch (a convolution's weight gradient)
// and the node making its input into per-chunk pieces, along the chunks its kernel sums
// anyway, so the input is never whole in memory (what micro-batching the backward does
// by hand), at the cost of the adds of partial sums the kernel made anyway.
//
// The choice is greedy and verified: at the step where the estimated live bytes peak, the
// candidate with the most bytes freed per second of extra work is applied, the program's
// memory is estimated again with the planner's own rules (plan_memory for arena programs,
// live bytes for programs that allocate per value), and this repeats until the estimate
// fits. The sequence of choices does not depend on the budget, so a smaller budget takes a
// longer prefix of the same sequence: the planned peak never rises as the budget falls.
// The numbers never change: recomputation reruns the same op on the same bytes, and an
// offloaded value comes back byte for byte.
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/ir/graph.h"

namespace tandem::runtime {

/// The storage of value `value` (a storage root made by a node) leaves memory after node
/// position `after` and comes back before node position `before` (after < before; no node in
/// between reads or writes it). Its views and in-place results read after the gap are
/// rebuilt on the reloaded bytes.
///
/// A sliced offload never comes back whole (`before` is the number of nodes): every use of
/// the storage after `after` touches contiguous pieces of it, which go straight between the
/// spill file and memory. A node reading a piece (a batch-split piece reading its slice of
/// an activation) gets those bytes read into a buffer of its own for the time it runs; a
/// `copy_` into a piece (a split piece's per-example result) writes its source's bytes to
/// the file; views of it are not made. So a storage read chunk by chunk moves once, not
/// once per chunk.
struct Offload {
  int value = -1;
  int after = -1;
  int before = -1;
  int64_t bytes = 0;  ///< the storage's bytes (what the spill file holds)
  bool sliced = false;
};

/// How node position `k` of `g` touches storage root `r` (a value made by a node) when the
/// storage is offloaded sliced (Offload::sliced): the planner and the executor share it.
struct SlicedAccess {
  enum Kind {
    Untouched,  ///< reads and writes nothing on r
    Whole,      ///< needs the storage in memory (its producer, in-place writes, odd layouts)
    View,       ///< a view of it: not made while the storage is out
    Read,       ///< reads dense pieces of it (each gets a buffer of its own, with the piece's strides)
    Write,      ///< `copy_` into a contiguous piece of it, from a contiguous value of the same dtype and sizes
  } kind = Untouched;
  struct Piece {
    int slot = -1;       ///< the node's input (Write: 0, the destination)
    int64_t offset = 0;  ///< bytes from the storage's start
    int64_t bytes = 0;
  };
  std::vector<Piece> pieces;  ///< Read: one per input on r; Write: the destination
};
SlicedAccess sliced_access(const ir::Graph& g, int k, int r);

/// Whether spilling `o` writes the storage's bytes: not for an `empty` storage spilled
/// right where it is made (nothing is in it yet).
bool spill_writes(const ir::Graph& g, const Offload& o);

/// Speeds the budget planner prices its choices with (bytes per second). measure_costs()
/// measures them on this machine once per process.
struct BudgetCosts {
  /// Streaming bandwidth of an elementwise kernel (read + write), for the time a recomputed
  /// node takes: (its input and output bytes) / this.
  double compute_bytes_per_s = 10e9;
  /// Writing to and reading back from the spill file (the page cache).
  double spill_write_bytes_per_s = 2e9;
  double spill_read_bytes_per_s = 4e9;
};

/// Measures BudgetCosts: a memcpy of 16 MiB and a write + read of 8 MiB through a spill file
/// in spill_directory(); cached after the first call. Falls back to the defaults when no
/// spill file can be made (the offload option then raises when used).
const BudgetCosts& measure_costs();

/// Where spill files go: $TANDEM_SPILL_DIR, else $TMPDIR, else /var/tmp (a disk on Debian;
/// /tmp may be a tmpfs, which is memory).
std::string spill_directory();

/// What fit_memory_budget chose.
struct BudgetPlan {
  int64_t budget = 0;               ///< bytes asked for
  /// Estimated peak before any choice (bytes); once the executor has measured the kernels'
  /// own allocations and no choice was needed, with them.
  int64_t unconstrained_peak = 0;
  int64_t planned_peak = 0;         ///< estimated peak of the chosen plan (bytes), kernels' allocations included once measured
  std::vector<Offload> offloads;    ///< node positions in the rewritten graph
  /// Each recomputation: "%12 (relu)" names the value and its producing op.
  std::vector<std::string> recomputed;
  int64_t recomputed_bytes = 0;     ///< bytes no longer kept across a gap
  /// Each node run per chunk of examples with the node making its batch input (see
  /// fit_memory_budget): "convolution_backward -> %40 with _fused_max_pool2d_relu_backward:
  /// 7 chunks of 41 of 256 examples".
  std::vector<std::string> split;
  int64_t offloaded_bytes = 0;
  /// How many of the offloads are read and written in pieces (Offload::sliced).
  int sliced() const;
  double extra_seconds = 0;         ///< estimated time the choices add per run
  /// One paragraph: budget, peaks, what was recomputed and offloaded, the extra time.
  std::string to_text() const;
};

/// Estimated peak bytes of `g` run with or without an arena (Executor::set_use_arena) and
/// the given offloads: without an arena, the maximum over node positions of the bytes live
/// there (each storage rounded to the caching allocator's size class, graph outputs live
/// from their node to the end); with one, plan_memory's arena plus the outputs. Graph
/// inputs (the caller holds them) are not counted. `workspace`, per node position, adds
/// what each node's kernel allocates for itself while it runs (measured by the executor;
/// absent: 0). The figure fit_memory_budget compares with the budget.
int64_t estimate_peak(const ir::Graph& g, bool use_arena, const std::vector<Offload>& offloads,
                      const std::vector<int64_t>* workspace = nullptr);

/// Rewrites `g` (adds recomputation nodes, splits nodes by batch) and chooses offloads so
/// that estimate_peak() is at most `budget` bytes (see the file comment). Split: a node
/// whose outputs are sums over a batch that its kernel sums in chunks (OpDef::batch_chunk:
/// a convolution's weight gradient), whose batch input is made by a batch-separable node
/// (OpDef::batch_separable) and read by nothing else, runs with that producer per chunk
/// (slices of the batch inputs, the two ops on them, `add` of the partial sums in chunk
/// order): the kernel's own chunks and sums, so the same bytes, without that input ever
/// being whole in memory. Recomputed: nodes of pointwise ops
/// (OpDef::pointwise, including fused elementwise nodes) that are not random, write nothing
/// in place, and whose inputs are alive at the point of reuse anyway and unchanged since;
/// never GEMM, convolution, reductions or random ops. Offloaded: any other value made in
/// the program that is not a graph output; without an arena, a storage whose later uses all
/// touch dense pieces of it (64-byte aligned: the kernels see the alignment they would) is
/// offloaded sliced (Offload::sliced). Raises OutOfMemoryError naming the budget, the
/// smallest peak the choices reach and the node where the live bytes peak then, when no
/// plan fits (before `workspace` is measured, that peak leaves the kernels' own allocations
/// out, and the message says so); ValueError for a budget <= 0.
/// `workspace` (per node position, may be null) is kept in step with the nodes inserted;
/// `start` continues an earlier plan of the same graph (the executor refits once its first
/// run has measured the kernels' workspaces; without `start`, `workspace` holds no
/// measurement yet, which the OutOfMemoryError's message says).
BudgetPlan fit_memory_budget(ir::Graph& g, int64_t budget, bool use_arena, const BudgetCosts& costs,
                             std::vector<int64_t>* workspace = nullptr, const BudgetPlan* start = nullptr);

}  // namespace tandem::runtime
