#pragma once
// The choice of what a compiled call's forward program saves for its backward program
// (issue 13, "Partitioner with recomputation"). The joint graph (forward nodes, then
// backward nodes) is cut by a minimum cut over forward values weighted by their bytes, as
// PyTorch's AOTAutograd min-cut partitioner does: a value the backward reads is either
// saved by the forward or recomputed in the backward from values that are saved. Only
// cheap, pure ops are recomputed (pointwise ops, views, casts, fused elementwise nodes);
// GEMMs, convolutions, reductions and random ops always run once, in the forward.
// Recomputing an op on the same inputs gives the same bytes, so results stay bitwise.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/ir/graph.h"

namespace tandem::jit {

/// What the forward saves and what the backward runs again.
struct Partition {
  /// Value ids (joint graph), ascending: the forward program outputs them for the backward.
  std::vector<int> saved;
  /// Positions (in the joint graph's node list, all < forward_nodes), ascending: forward
  /// nodes the backward program runs again before its own nodes.
  std::vector<size_t> recompute;
  /// Bytes of the saved values' storages made by the forward (graph inputs, and views of
  /// them, are kept by reference: 0), each storage once.
  int64_t saved_bytes = 0;
  /// The same for the plain rule "save every forward value the backward reads".
  int64_t naive_saved_bytes = 0;
};

/// Chooses the saved values of joint graph `g` whose first `forward_nodes` nodes are the
/// forward. `needed[v]` marks the forward values (graph inputs or forward node outputs)
/// that the backward nodes read or that are gradients (the plain rule's saved set).
///
/// The minimum cut runs over forward values (capacity: the bytes of the value's storage,
/// 0 for graph inputs, with a small preference for later values on ties so the fewest
/// ops are recomputed); values made by ops that may not be recomputed are tied to the
/// forward side. A node may be recomputed when its op is pointwise, a view or
/// OpDef::cheap_to_recompute, is not random and writes nothing, has one output, no
/// storage it reads or makes is written by any node of the joint graph, and each graph
/// input it reads is already in `needed` (so the backward's version checks on saved
/// inputs are those of the plain rule). When the cut saves no fewer bytes than the plain
/// rule, the plain rule's set is returned (nothing recomputed). `enabled` false: always
/// the plain rule. Deterministic: ids and positions only, no hashing.
Partition choose_saved(const ir::Graph& g, size_t forward_nodes, const std::vector<bool>& needed, bool enabled);

}  // namespace tandem::jit
