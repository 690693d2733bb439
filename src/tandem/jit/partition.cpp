#include "tandem/jit/partition.h"

#include <algorithm>
#include <limits>

#include "tandem/runtime/memory_budget.h"

namespace tandem::jit {

namespace {

// Dinic's maximum flow on a small directed graph (two vertices per forward value).
class MaxFlow {
 public:
  explicit MaxFlow(int n) : head_(static_cast<size_t>(n), -1), level_(static_cast<size_t>(n)), it_(static_cast<size_t>(n)) {}

  void add_edge(int from, int to, int64_t cap) {
    edges_.push_back({to, head_[static_cast<size_t>(from)], cap});
    head_[static_cast<size_t>(from)] = static_cast<int>(edges_.size()) - 1;
    edges_.push_back({from, head_[static_cast<size_t>(to)], 0});
    head_[static_cast<size_t>(to)] = static_cast<int>(edges_.size()) - 1;
  }

  void run(int s, int t) {
    while (bfs(s, t)) {
      it_ = head_;
      while (dfs(s, t, kInf) > 0) {
      }
    }
  }

  /// After run(): the vertices reachable from s in the residual graph (the source side).
  std::vector<bool> source_side(int s) const {
    std::vector<bool> seen(head_.size(), false);
    std::vector<int> stack{s};
    seen[static_cast<size_t>(s)] = true;
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (int e = head_[static_cast<size_t>(u)]; e >= 0; e = edges_[static_cast<size_t>(e)].next) {
        const Edge& ed = edges_[static_cast<size_t>(e)];
        if (ed.cap > 0 && !seen[static_cast<size_t>(ed.to)]) {
          seen[static_cast<size_t>(ed.to)] = true;
          stack.push_back(ed.to);
        }
      }
    }
    return seen;
  }

  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

 private:
  struct Edge {
    int to, next;
    int64_t cap;
  };

  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<int> queue{s};
    level_[static_cast<size_t>(s)] = 0;
    for (size_t q = 0; q < queue.size(); ++q) {
      const int u = queue[q];
      for (int e = head_[static_cast<size_t>(u)]; e >= 0; e = edges_[static_cast<size_t>(e)].next) {
        const Edge& ed = edges_[static_cast<size_t>(e)];
        if (ed.cap > 0 && level_[static_cast<size_t>(ed.to)] < 0) {
          level_[static_cast<size_t>(ed.to)] = level_[static_cast<size_t>(u)] + 1;
          queue.push_back(ed.to);
        }
      }
    }
    return level_[static_cast<size_t>(t)] >= 0;
  }

  int64_t dfs(int u, int t, int64_t f) {
    if (u == t) return f;
    for (int& e = it_[static_cast<size_t>(u)]; e >= 0; e = edges_[static_cast<size_t>(e)].next) {
      Edge& ed = edges_[static_cast<size_t>(e)];
      if (ed.cap <= 0 || level_[static_cast<size_t>(ed.to)] != level_[static_cast<size_t>(u)] + 1) continue;
      const int64_t got = dfs(ed.to, t, std::min(f, ed.cap));
      if (got > 0) {
        ed.cap -= got;
        edges_[static_cast<size_t>(e ^ 1)].cap += got;
        return got;
      }
    }
    return 0;
  }

  std::vector<Edge> edges_;
  std::vector<int> head_, level_, it_;
};

}  // namespace

Partition choose_saved(const ir::Graph& g, size_t forward_nodes, const std::vector<bool>& needed, bool enabled) {
  const size_t nv = g.values().size(), n = g.nodes().size();
  int max_id = -1;
  for (const auto& node : g.nodes()) max_id = std::max(max_id, node.id);
  std::vector<int> position(static_cast<size_t>(max_id + 1), -1);  // node id -> position in the node list
  for (size_t k = 0; k < n; ++k) position[static_cast<size_t>(g.nodes()[k].id)] = static_cast<int>(k);
  auto producer_pos = [&](int v) {
    const ir::Value& val = g.value(v);
    return val.kind == ir::ValueKind::Node ? position[static_cast<size_t>(val.producer)] : -1;
  };
  // Bytes a saved value keeps alive: its storage when the forward made it, else nothing.
  auto cost = [&](int v) -> int64_t {
    const int root = g.storage_root(v);
    return g.value(root).kind == ir::ValueKind::Node ? span_bytes(g.value(root).meta) : 0;
  };
  auto bytes_of = [&](const std::vector<int>& vs) {
    int64_t b = 0;
    std::vector<bool> counted(nv, false);
    for (int v : vs) {
      const int root = g.storage_root(v);
      if (g.value(root).kind != ir::ValueKind::Node || counted[static_cast<size_t>(root)]) continue;
      counted[static_cast<size_t>(root)] = true;
      b += span_bytes(g.value(root).meta);
    }
    return b;
  };

  Partition plain;
  for (size_t v = 0; v < nv; ++v)
    if (needed[v]) plain.saved.push_back(static_cast<int>(v));
  plain.saved_bytes = plain.naive_saved_bytes = bytes_of(plain.saved);
  if (!enabled || plain.saved_bytes == 0) return plain;

  // Storages some node writes (in-place results, mutated inputs): nothing reading or
  // making them is recomputed, since its bytes in the backward could differ.
  std::vector<bool> written(nv, false);
  for (const auto& node : g.nodes())
    for (int w : ir::written_values(node)) written[static_cast<size_t>(g.storage_root(w))] = true;
  std::vector<bool> forward_value(nv, false);
  for (int v : g.inputs()) forward_value[static_cast<size_t>(v)] = true;
  for (size_t k = 0; k < forward_nodes; ++k)
    for (int o : g.nodes()[k].outputs) forward_value[static_cast<size_t>(o)] = true;
  auto recomputable = [&](size_t k) {
    const ir::Node& node = g.nodes()[k];
    const OpDef& op = *node.op;
    if (!(op.pointwise || op.cheap_to_recompute || op.view) || op.random || op.is_inplace || op.raises_on_data ||
        op.mutates_inputs || node.outputs.size() != 1 || written[static_cast<size_t>(g.storage_root(node.outputs[0]))])
      return false;
    for (int i : node.inputs) {
      if (i < 0) continue;
      const ir::Value& iv = g.value(i);
      if (iv.kind == ir::ValueKind::Constant) continue;
      if (!forward_value[static_cast<size_t>(i)] || written[static_cast<size_t>(g.storage_root(i))]) return false;
      if (iv.kind == ir::ValueKind::Input && !needed[static_cast<size_t>(i)]) return false;
    }
    return true;
  };

  // Vertices: in(v) = 2v, out(v) = 2v + 1, then the source and the sink. The in -> out
  // edge is the price of saving v; a tie goes to the later value (fewer ops recomputed).
  const int s = static_cast<int>(2 * nv), t = s + 1;
  MaxFlow flow(t + 1);
  constexpr int64_t kTieScale = 1024;
  const int64_t fwd = static_cast<int64_t>(forward_nodes);
  for (size_t v = 0; v < nv; ++v) {
    if (!forward_value[v]) continue;
    const int vi = static_cast<int>(v);
    const int pos = producer_pos(vi);
    const int64_t earlier = pos < 0 ? fwd : fwd - pos;  // graph inputs count as earliest
    flow.add_edge(2 * vi, 2 * vi + 1, cost(vi) * kTieScale + std::min<int64_t>(earlier, kTieScale - 1));
    if (pos < 0 || !recomputable(static_cast<size_t>(pos))) {
      flow.add_edge(s, 2 * vi, MaxFlow::kInf);
    } else {
      for (int i : g.nodes()[static_cast<size_t>(pos)].inputs)
        if (i >= 0 && g.value(i).kind != ir::ValueKind::Constant) flow.add_edge(2 * i + 1, 2 * vi, MaxFlow::kInf);
    }
    if (needed[v]) flow.add_edge(2 * vi + 1, t, MaxFlow::kInf);
  }
  flow.run(s, t);
  const std::vector<bool> side = flow.source_side(s);

  // Walk back from what the backward reads: a value on the cut is saved, any other is made
  // again by its producer from the values that one reads.
  Partition cut;
  std::vector<bool> want(needed), is_saved(nv, false), redo(n, false);
  for (size_t k = forward_nodes; k-- > 0;) {  // producers before their readers
    for (int o : g.nodes()[k].outputs) {
      const size_t v = static_cast<size_t>(o);
      if (!want[v]) continue;
      if ((side[2 * v] && !side[2 * v + 1]) || !recomputable(k)) {
        is_saved[v] = true;
        continue;
      }
      redo[k] = true;
      for (int i : g.nodes()[k].inputs)
        if (i >= 0 && g.value(i).kind != ir::ValueKind::Constant) want[static_cast<size_t>(i)] = true;
    }
  }
  for (int v : g.inputs())
    if (want[static_cast<size_t>(v)]) is_saved[static_cast<size_t>(v)] = true;
  for (size_t v = 0; v < nv; ++v)
    if (is_saved[v]) cut.saved.push_back(static_cast<int>(v));
  for (size_t k = 0; k < forward_nodes; ++k)
    if (redo[k]) cut.recompute.push_back(k);
  cut.saved_bytes = bytes_of(cut.saved);
  cut.naive_saved_bytes = plain.naive_saved_bytes;
  return cut.saved_bytes < plain.saved_bytes ? cut : plain;
}

}  // namespace tandem::jit
