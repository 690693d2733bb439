#include "tandem/runtime/memory_budget.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "tandem/core/allocator.h"
#include "tandem/core/mem_overlap.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/runtime/memory_planner.h"
#include "tandem/runtime/spill_file.h"

namespace tandem::runtime {

namespace {

std::string mib(int64_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  os << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}

// Who uses each storage, by node position. A storage is a root value made by a node; its
// uses are every read or write of it or of a value aliasing it (views, in-place results).
struct Liveness {
  std::vector<int> root;                // per value: storage root
  std::vector<std::vector<int>> uses;   // per root value: sorted node positions
  std::vector<bool> per_call;           // per root: a graph output aliases it
  std::vector<bool> planned;            // per root: made by a node, non-empty
  std::vector<int64_t> bytes;           // per root: span bytes
  int num_nodes = 0;
  const ir::Graph* graph = nullptr;

  explicit Liveness(const ir::Graph& g) : graph(&g) {
    const auto& values = g.values();
    const size_t nv = values.size();
    root.resize(nv);
    for (size_t v = 0; v < nv; ++v) root[v] = g.storage_root(static_cast<int>(v));
    uses.assign(nv, {});
    per_call.assign(nv, false);
    planned.assign(nv, false);
    bytes.assign(nv, 0);
    for (int o : g.outputs()) per_call[static_cast<size_t>(root[static_cast<size_t>(o)])] = true;
    num_nodes = static_cast<int>(g.nodes().size());
    for (int k = 0; k < num_nodes; ++k) {
      const ir::Node& n = g.nodes()[static_cast<size_t>(k)];
      auto touch = [&](int v) {
        auto& u = uses[static_cast<size_t>(root[static_cast<size_t>(v)])];
        if (u.empty() || u.back() != k) u.push_back(k);
      };
      for (int i : n.inputs)
        if (i >= 0) touch(i);
      for (int o : n.outputs) touch(o);
    }
    for (const auto& v : values)
      if (v.kind == ir::ValueKind::Node && v.alias_of < 0 && v.producer >= 0 && !uses[static_cast<size_t>(v.id)].empty()) {
        bytes[static_cast<size_t>(v.id)] = span_bytes(v.meta);
        planned[static_cast<size_t>(v.id)] = bytes[static_cast<size_t>(v.id)] > 0;
      }
  }

  // The intervals of node positions a root occupies memory, with its offload gaps cut out
  // (a sliced gap runs to the end: the storage never comes back whole).
  std::vector<std::pair<int, int>> segments(int r, const std::vector<Offload>& offloads) const {
    const auto& u = uses[static_cast<size_t>(r)];
    int first = u.front(), last = per_call[static_cast<size_t>(r)] ? num_nodes - 1 : u.back();
    std::vector<std::pair<int, int>> gaps;
    int sliced_after = -1;
    for (const auto& o : offloads)
      if (o.value == r) {
        if (o.sliced) sliced_after = o.after;
        else gaps.emplace_back(o.after, o.before);
      }
    std::sort(gaps.begin(), gaps.end());
    std::vector<std::pair<int, int>> seg;
    int start = first;
    for (const auto& [a, b] : gaps) {
      seg.emplace_back(start, a);
      start = b;
    }
    seg.emplace_back(start, sliced_after >= 0 ? sliced_after : last);
    return seg;
  }
};

// Byte offset of value v from the start of its storage, through views (their stride rules
// on the metas) and in-place results; -1 when not known before running (as_strided's
// absolute offsets, views that change the dtype).
int64_t offset_in_storage(const ir::Graph& g, int v) {
  int64_t off = 0;
  for (;;) {
    const ir::Value& val = g.value(v);
    if (val.alias_of < 0) return off;
    if (val.kind != ir::ValueKind::Node || val.producer < 0) return -1;
    const ir::Node& p = g.nodes()[static_cast<size_t>(val.producer)];
    if (p.op->view) {
      const ir::Value& in = g.value(p.inputs[0]);
      if (in.meta.dtype != val.meta.dtype) return -1;
      const ViewGeometry geo = p.op->view(ir::meta_ref(in), AttrReader(p.op->name.c_str(), p.attrs));
      if (geo.absolute_offset) return -1;
      off += geo.storage_offset * static_cast<int64_t>(element_size(val.meta.dtype));
    }
    v = val.alias_of;
  }
}

// Extra bytes per node position that sliced offloads add: the buffers their pieces are
// read into, alive while the reading node runs.
std::vector<int64_t> sliced_reads(const Liveness& L, const std::vector<Offload>& offloads) {
  std::vector<int64_t> extra(static_cast<size_t>(L.num_nodes), 0);
  for (const auto& o : offloads) {
    if (!o.sliced) continue;
    for (int k : L.uses[static_cast<size_t>(o.value)]) {
      if (k <= o.after) continue;
      const SlicedAccess acc = sliced_access(*L.graph, k, o.value);
      if (acc.kind != SlicedAccess::Read) continue;
      for (const auto& piece : acc.pieces)
        extra[static_cast<size_t>(k)] += static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(piece.bytes)));
    }
  }
  return extra;
}

// Live bytes per node position (graph inputs not counted), each storage rounded to the
// allocator's size class as a program without an arena allocates it.
std::vector<int64_t> live_bytes(const Liveness& L, const std::vector<Offload>& offloads, bool per_call_only,
                                const std::vector<int64_t>* workspace) {
  std::vector<int64_t> delta(static_cast<size_t>(L.num_nodes) + 1, 0);
  for (size_t r = 0; r < L.planned.size(); ++r) {
    if (!L.planned[r] || (per_call_only && !L.per_call[r])) continue;
    const int64_t b = static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(L.bytes[r])));
    for (const auto& [s, e] : L.segments(static_cast<int>(r), offloads)) {
      delta[static_cast<size_t>(s)] += b;
      delta[static_cast<size_t>(e) + 1] -= b;
    }
  }
  std::vector<int64_t> live(static_cast<size_t>(L.num_nodes), 0);
  const std::vector<int64_t> pieces = per_call_only ? std::vector<int64_t>() : sliced_reads(L, offloads);
  int64_t cur = 0;
  for (int k = 0; k < L.num_nodes; ++k) {
    cur += delta[static_cast<size_t>(k)];
    const int64_t ws = workspace && static_cast<size_t>(k) < workspace->size() ? (*workspace)[static_cast<size_t>(k)] : 0;
    live[static_cast<size_t>(k)] = cur + ws + (pieces.empty() ? 0 : pieces[static_cast<size_t>(k)]);
  }
  return live;
}

int64_t peak_of(const Liveness& L, bool use_arena, const std::vector<Offload>& offloads,
                const std::vector<int64_t>* workspace) {
  if (L.num_nodes == 0) return 0;
  if (!use_arena) {
    auto live = live_bytes(L, offloads, false, workspace);
    return *std::max_element(live.begin(), live.end());
  }
  std::vector<BufferRequest> reqs;
  for (size_t r = 0; r < L.planned.size(); ++r) {
    if (!L.planned[r] || L.per_call[r]) continue;
    for (const auto& [s, e] : L.segments(static_cast<int>(r), offloads)) reqs.push_back({L.bytes[r], s, e});
  }
  auto outs = live_bytes(L, offloads, true, workspace);
  return plan_memory(reqs).arena_bytes + *std::max_element(outs.begin(), outs.end());
}

// Whether node position k writes the storage `r` (an in-place result or a mutated input).
bool writes_storage(const ir::Graph& g, const Liveness& L, int k, int r) {
  const ir::Node& n = g.nodes()[static_cast<size_t>(k)];
  for (int w : ir::written_values(n))
    if (L.root[static_cast<size_t>(w)] == r) return true;
  return false;
}

struct Candidate {
  int root = -1;
  int after = -1, before = -1;
  bool recompute = false;
  bool sliced = false;  // Offload::sliced: out from `after` on, read and written in pieces
  bool widens = false;  // [after, before] is the union with overlapping gaps of the storage
  double seconds = 0;
  int64_t bytes = 0;  // rounded bytes freed across the gap
};

// Values aliasing storage `r` that are read at or after position `b` but made at or before
// `a` (the executor rebuilds them on reloaded bytes; a recomputed value has only itself).
std::vector<int> read_across(const ir::Graph& g, const Liveness& L, int r, int a, int b) {
  std::vector<int> out;
  for (int k = b; k < L.num_nodes; ++k)
    for (int i : g.nodes()[static_cast<size_t>(k)].inputs) {
      if (i < 0 || L.root[static_cast<size_t>(i)] != r) continue;
      const ir::Value& v = g.value(i);
      if (v.producer <= a && std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
    }
  return out;
}

bool has_absolute_view(const ir::Graph& g, const Liveness& L, int r) {
  for (const auto& n : g.nodes())
    if (n.op->view && !n.inputs.empty() && n.inputs[0] >= 0 && L.root[static_cast<size_t>(n.inputs[0])] == r) {
      // as_strided's offset counts from the storage start, which a reload moves.
      for (const auto& s : n.op->attrs)
        if (s.name == "storage_offset") return true;
    }
  return false;
}

// Whether the node making root r can be run again before position b: a cheap, pure op
// whose inputs are graph inputs or storages alive at b anyway and unchanged since.
bool can_recompute(const ir::Graph& g, const Liveness& L, const std::vector<Offload>& offloads, int r, int b) {
  const ir::Value& v = g.value(r);
  const ir::Node& p = g.nodes()[static_cast<size_t>(v.producer)];
  const OpDef& op = *p.op;
  if (!(op.pointwise || op.cheap_to_recompute) || op.random || op.view || op.is_inplace || op.raises_on_data ||
      p.outputs.size() != 1 || !ir::written_values(p).empty())
    return false;
  for (int i : p.inputs) {
    if (i < 0) continue;
    const ir::Value& iv = g.value(i);
    if (iv.kind != ir::ValueKind::Node) continue;  // inputs and constants stay bound
    const int ri = L.root[static_cast<size_t>(i)];
    if (ri == r) return false;
    const auto& u = L.uses[static_cast<size_t>(ri)];
    if (u.empty() || (u.back() < b && !L.per_call[static_cast<size_t>(ri)])) return false;  // would live longer
    for (const auto& o : offloads)
      if (o.value == ri && o.after < b && o.before > v.producer) return false;
    for (int k = v.producer + 1; k < b; ++k)
      if (writes_storage(g, L, k, ri)) return false;
  }
  return true;
}

int64_t node_bytes(const ir::Graph& g, int producer) {
  const ir::Node& p = g.nodes()[static_cast<size_t>(producer)];
  int64_t b = 0;
  for (int i : p.inputs)
    if (i >= 0) b += span_bytes(g.value(i).meta);
  for (int o : p.outputs) b += span_bytes(g.value(o).meta);
  return b;
}

// Inserts a copy of root r's producing node before position b and makes every read at or
// after b use the copy. Returns the new node's position.
void insert_recompute(ir::Graph& g, int r, int b) {
  const ir::Node p = g.nodes()[static_cast<size_t>(g.value(r).producer)];
  const int id = g.add_node(*p.op, p.inputs, p.attrs, {g.value(r).meta});
  const int r2 = g.nodes()[static_cast<size_t>(id)].outputs[0];
  auto& nodes = g.mutable_nodes();
  ir::Node clone = std::move(nodes.back());
  nodes.pop_back();
  nodes.insert(nodes.begin() + b, std::move(clone));
  for (size_t k = static_cast<size_t>(b) + 1; k < nodes.size(); ++k)
    for (int& i : nodes[k].inputs)
      if (i == r) i = r2;
  g.compact();  // renumbers node ids and producers in the new order
  // Views and in-place results made from the copy alias it, not the original.
  for (auto& v : g.mutable_values())
    if (v.alias_of == r && v.kind == ir::ValueKind::Node && v.producer > b) v.alias_of = r2;
}

// The sliced offload of storage r (without an arena) for the peak at position s, if it
// frees memory there (root -1 if not): out for good after its last use that needs it
// whole, if that is before s and the storage is in memory at s. The spill point moves on to
// a next use that reads all of it anyway (past views of it), while the positions passed
// are below the peak: there keeping it costs no memory and saves reading it back. Cost: the
// storage's write, each block's read or write, minus the whole gaps it replaces.
Candidate sliced_candidate(const ir::Graph& g, const Liveness& L, const std::vector<Offload>& offloads,
                           const std::vector<int64_t>& live, int s, int r, const BudgetCosts& costs) {
  Candidate c;
  const auto& u = L.uses[static_cast<size_t>(r)];
  if (u.back() < s) return c;
  int a = -1;
  for (auto k = u.rbegin(); k != u.rend() && a < 0; ++k)
    if (sliced_access(g, *k, r).kind == SlicedAccess::Whole) a = *k;
  for (auto k = std::upper_bound(u.begin(), u.end(), a); a >= 0 && k != u.end() && *k < s; ++k) {
    const SlicedAccess acc = sliced_access(g, *k, r);
    if (acc.kind == SlicedAccess::View) continue;
    int64_t read = 0;
    for (const auto& piece : acc.pieces) read += piece.bytes;
    bool below = true;
    for (int q = a + 1; q < *k; ++q) below = below && live[static_cast<size_t>(q)] < live[static_cast<size_t>(s)];
    if (!below || acc.kind != SlicedAccess::Read || read < L.bytes[static_cast<size_t>(r)]) break;
    a = *k;
  }
  bool held = false;
  for (const auto& [x, y] : L.segments(r, offloads)) held = held || (x <= s && s <= y);
  if (a < 0 || a >= s || !held) return c;
  const double nbytes = static_cast<double>(L.bytes[static_cast<size_t>(r)]);
  const Offload o{r, a, L.num_nodes, L.bytes[static_cast<size_t>(r)], true};
  double seconds = spill_writes(g, o) ? nbytes / costs.spill_write_bytes_per_s : 0.0;
  int64_t at_s = 0;  // the buffers of the blocks read at s
  for (int k : u) {
    if (k <= a) continue;
    const SlicedAccess acc = sliced_access(g, k, r);
    for (const auto& piece : acc.pieces) {
      const double pb = static_cast<double>(piece.bytes);
      if (acc.kind == SlicedAccess::Write) {
        seconds += pb / costs.spill_write_bytes_per_s;
      } else {
        seconds += pb / costs.spill_read_bytes_per_s;
        if (k == s) at_s += static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(piece.bytes)));
      }
    }
  }
  for (const auto& other : offloads)
    if (other.value == r && other.after >= a)
      seconds -= nbytes / costs.spill_write_bytes_per_s + nbytes / costs.spill_read_bytes_per_s;
  const int64_t freed =
      static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(L.bytes[static_cast<size_t>(r)]))) - at_s;
  if (freed <= 0) return c;
  c.root = r;
  c.after = a;
  c.before = L.num_nodes;
  c.sliced = true;
  c.seconds = seconds;
  c.bytes = freed;
  return c;
}

// A node that sums over a batch in chunks (OpDef::batch_chunk) whose batch input is made
// by a batch-separable node (OpDef::batch_separable) that nothing else reads: the pair can
// run per chunk of examples, so that input is never whole in memory.
struct BatchSplit {
  int p = -1, c = -1;  // positions of the producer and of the summing node
  int input = -1;      // which input of the summing node the producer's output is
  int64_t n = 0, chunk = 0;
  int64_t bytes = 0;   // the producer's output, rounded as allocated
};

std::optional<BatchSplit> find_batch_split(const ir::Graph& g, const Liveness& L, int c) {
  const ir::Node& cn = g.nodes()[static_cast<size_t>(c)];
  const OpDef& cop = *cn.op;
  if (!cop.batch_chunk || !ir::written_values(cn).empty()) return std::nullopt;
  int64_t n = -1;
  std::vector<MetaRef> metas;
  for (size_t j = 0; j < cn.inputs.size(); ++j) {
    const int v = cn.inputs[j];
    MetaRef m;
    if (v < 0) {
      m.defined = false;
    } else {
      m = ir::meta_ref(g.value(v));
    }
    metas.push_back(m);
    if (!(cop.batch_inputs >> j & 1)) continue;
    if (v < 0 || g.value(v).meta.sizes.empty()) return std::nullopt;
    const int64_t nj = g.value(v).meta.sizes[0];
    if (n >= 0 && nj != n) return std::nullopt;
    n = nj;
  }
  const int64_t chunk = cop.batch_chunk(ArrayRef<MetaRef>(metas), AttrReader(cop.name.c_str(), cn.attrs));
  if (chunk <= 0 || n <= chunk) return std::nullopt;
  for (size_t j = 0; j < cn.inputs.size(); ++j) {
    if (!(cop.batch_inputs >> j & 1)) continue;
    const int v = cn.inputs[j];
    const ir::Value& val = g.value(v);
    if (val.kind != ir::ValueKind::Node || val.alias_of >= 0 || L.per_call[static_cast<size_t>(v)]) continue;
    const int p = val.producer;
    const auto& u = L.uses[static_cast<size_t>(v)];
    if (u.size() != 2 || u[0] != p || u[1] != c) continue;  // read by this node alone
    const ir::Node& pn = g.nodes()[static_cast<size_t>(p)];
    const OpDef& pop = *pn.op;
    if (!pop.batch_separable || pop.random || pop.view || pop.is_inplace || pn.outputs.size() != 1 ||
        !ir::written_values(pn).empty())
      continue;
    bool ok = true;
    for (size_t k = 0; ok && k < pn.inputs.size(); ++k) {
      const int i = pn.inputs[k];
      if (i < 0) continue;
      const ir::Value& iv = g.value(i);
      if ((pop.batch_inputs >> k & 1) && (iv.meta.sizes.empty() || iv.meta.sizes[0] != n)) ok = false;
      if (!ok || iv.kind != ir::ValueKind::Node) continue;
      // The pieces run where the summing node ran: the producer's inputs must be unchanged
      // until then and, unless nothing runs in between, alive there anyway.
      const int ri = L.root[static_cast<size_t>(i)];
      for (int q = p + 1; ok && q < c; ++q) ok = !writes_storage(g, L, q, ri);
      const auto& ui = L.uses[static_cast<size_t>(ri)];
      if (p + 1 != c && ui.back() < c && !L.per_call[static_cast<size_t>(ri)]) ok = false;
    }
    if (!ok) continue;
    BatchSplit s;
    s.p = p;
    s.c = c;
    s.input = static_cast<int>(j);
    s.n = n;
    s.chunk = chunk;
    s.bytes = static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(L.bytes[static_cast<size_t>(v)])));
    return s;
  }
  return std::nullopt;
}

std::vector<AttrValue> default_attrs(const OpDef& op) {
  std::vector<AttrValue> a;
  for (const auto& spec : op.attrs) a.push_back(spec.default_value);
  return a;
}

// Replaces the pair of `s` by, per chunk of examples: slices of the batch inputs (views),
// the producer on them, the summing node on them and the producer's piece, then `add`
// nodes summing the pieces' outputs in chunk order (per-example outputs: a copy of the
// piece into its slice of the whole, made empty first), placed where the summing node was.
// Returns the number of nodes that took the pair's place.
int apply_batch_split(ir::Graph& g, const BatchSplit& s) {
  const ir::Node pn = g.nodes()[static_cast<size_t>(s.p)];
  const ir::Node cn = g.nodes()[static_cast<size_t>(s.c)];
  const OpDef& slice = get_op("slice");
  const OpDef& add = get_op("add");
  const size_t first_new = g.nodes().size();
  auto out0 = [&](int node) { return g.nodes()[static_cast<size_t>(node)].outputs[0]; };
  // The inputs of a piece: slices of the batch inputs (but input `own`, which the caller
  // sets), the other inputs as they are.
  auto piece = [&](const OpDef& op, const ir::Node& n, int64_t n0, int64_t n1, int own) {
    std::vector<int> in;
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const int v = n.inputs[j];
      if (v < 0 || !(op.batch_inputs >> j & 1) || static_cast<int>(j) == own) {
        in.push_back(v);
        continue;
      }
      std::vector<AttrValue> a{AttrValue(int64_t{0}), AttrValue(n0), AttrValue(n1), AttrValue(int64_t{1})};
      in.push_back(out0(g.add_node(slice, {v}, std::move(a))));
    }
    return in;
  };
  std::vector<int> sum(cn.outputs.size(), -1);
  // Per-example outputs: each piece is copied into its slice of the whole output.
  const OpDef& empty = get_op("empty");
  const OpDef& copy_ = get_op("copy_");
  std::vector<bool> per_example(cn.outputs.size(), false);
  for (size_t o = 0; o < cn.outputs.size(); ++o) {
    const TensorMeta& m = g.value(cn.outputs[o]).meta;
    if (!(cn.op->batch_outputs >> o & 1) || span_bytes(m) == 0) continue;
    per_example[o] = true;
    std::vector<AttrValue> a{AttrValue(std::vector<int64_t>(m.sizes.begin(), m.sizes.end())), AttrValue(std::monostate{}),
                             AttrValue(m.dtype)};
    sum[o] = out0(g.add_node(empty, {}, std::move(a)));
  }
  for (int64_t n0 = 0; n0 < s.n; n0 += s.chunk) {
    const int64_t n1 = std::min(s.n, n0 + s.chunk);
    const int part = out0(g.add_node(*pn.op, piece(*pn.op, pn, n0, n1, -1), pn.attrs));
    std::vector<int> cin = piece(*cn.op, cn, n0, n1, s.input);
    cin[static_cast<size_t>(s.input)] = part;
    const int id = g.add_node(*cn.op, cin, cn.attrs);
    const std::vector<int> outs = g.nodes()[static_cast<size_t>(id)].outputs;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (per_example[o]) {
        std::vector<AttrValue> a{AttrValue(int64_t{0}), AttrValue(n0), AttrValue(n1), AttrValue(int64_t{1})};
        const int dst = out0(g.add_node(slice, {sum[o]}, std::move(a)));
        g.add_node(copy_, {dst, outs[o]}, {});
        continue;
      }
      if (sum[o] < 0 || span_bytes(g.value(outs[o]).meta) == 0) {  // the first piece, or not computed
        if (sum[o] < 0) sum[o] = outs[o];
        continue;
      }
      sum[o] = out0(g.add_node(add, {sum[o], outs[o]}, default_attrs(add)));
    }
  }
  auto& nodes = g.mutable_nodes();
  std::vector<ir::Node> fresh(std::make_move_iterator(nodes.begin() + static_cast<std::ptrdiff_t>(first_new)),
                              std::make_move_iterator(nodes.end()));
  nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(first_new), nodes.end());
  const int count = static_cast<int>(fresh.size());
  nodes[static_cast<size_t>(s.p)].dead = true;
  nodes[static_cast<size_t>(s.c)].dead = true;
  nodes.insert(nodes.begin() + s.c + 1, std::make_move_iterator(fresh.begin()), std::make_move_iterator(fresh.end()));
  for (size_t o = 0; o < cn.outputs.size(); ++o) g.replace_uses(cn.outputs[o], sum[o]);
  g.compact();
  return count;
}

}  // namespace

SlicedAccess sliced_access(const ir::Graph& g, int k, int r) {
  SlicedAccess acc;
  const ir::Node& n = g.nodes()[static_cast<size_t>(k)];
  auto on_r = [&](int v) { return v >= 0 && g.storage_root(v) == r; };
  bool in_r = false, out_r = false;
  for (int i : n.inputs) in_r = in_r || on_r(i);
  for (int o : n.outputs) out_r = out_r || on_r(o);
  if (!in_r && !out_r) return acc;
  acc.kind = SlicedAccess::Whole;
  // A dense piece (contiguous, or a batch slice of a channels-last value: its elements
  // fill one byte range) at a known offset; 64-byte aligned, as the storage's start is, so
  // a kernel reading the piece from a buffer of its own (with the piece's strides) sees the
  // alignment and layout it would have seen.
  auto piece = [&](int slot, int v) {
    const ir::Value& val = g.value(v);
    if (!is_non_overlapping_and_dense(val.meta.sizes, val.meta.strides)) return false;
    const int64_t off = offset_in_storage(g, v);
    if (off < 0 || off % 64 != 0) return false;
    acc.pieces.push_back({slot, off, span_bytes(val.meta)});
    return true;
  };
  if (n.op->view) {
    if (in_r) acc.kind = SlicedAccess::View;
    return acc;
  }
  static const OpDef& copy_op = get_op("copy_");
  if (n.op == &copy_op) {
    if (n.inputs.size() == 2 && on_r(n.inputs[0]) && !on_r(n.inputs[1])) {
      const TensorMeta& d = g.value(n.inputs[0]).meta;
      const TensorMeta& src = g.value(n.inputs[1]).meta;
      // A contiguous source is written as it is: no copy outside the plan's estimate.
      if (d.dtype == src.dtype && std::equal(d.sizes.begin(), d.sizes.end(), src.sizes.begin(), src.sizes.end()) &&
          compute_is_contiguous(src.sizes, src.strides) && piece(0, n.inputs[0]))
        acc.kind = SlicedAccess::Write;
    }
    if (acc.kind != SlicedAccess::Write) acc.pieces.clear();
    return acc;
  }
  if (out_r) return acc;
  for (int w : ir::written_values(n))
    if (on_r(w)) return acc;
  for (size_t j = 0; j < n.inputs.size(); ++j)
    if (on_r(n.inputs[j]) && !piece(static_cast<int>(j), n.inputs[j])) {
      acc.pieces.clear();
      return acc;
    }
  acc.kind = SlicedAccess::Read;
  return acc;
}

bool spill_writes(const ir::Graph& g, const Offload& o) {
  static const OpDef& empty_op = get_op("empty");
  const int producer = g.value(o.value).producer;
  return !(producer == o.after && g.nodes()[static_cast<size_t>(producer)].op == &empty_op);
}

int BudgetPlan::sliced() const {
  return static_cast<int>(std::count_if(offloads.begin(), offloads.end(), [](const Offload& o) { return o.sliced; }));
}

std::string spill_directory() {
  for (const char* var : {"TANDEM_SPILL_DIR", "TMPDIR"})
    if (const char* d = std::getenv(var); d && *d) return d;
  return "/var/tmp";
}

const BudgetCosts& measure_costs() {
  static const BudgetCosts costs = [] {
    BudgetCosts c;
    using clk = std::chrono::steady_clock;
    const size_t n = size_t{16} << 20;
    std::vector<char> a(n, 1), b(n, 2);
    std::memcpy(b.data(), a.data(), n);  // fault the pages in first
    auto t0 = clk::now();
    std::memcpy(b.data(), a.data(), n);
    double s = std::chrono::duration<double>(clk::now() - t0).count();
    if (s > 0) c.compute_bytes_per_s = 2.0 * static_cast<double>(n) / s;
    try {
      SpillFile f(spill_directory());
      const size_t m = size_t{8} << 20;
      f.write(0, a.data(), m);  // first write allocates the file's pages
      t0 = clk::now();
      f.write(0, a.data(), m);
      double w = std::chrono::duration<double>(clk::now() - t0).count();
      t0 = clk::now();
      f.read(0, b.data(), m);
      double r = std::chrono::duration<double>(clk::now() - t0).count();
      if (w > 0) c.spill_write_bytes_per_s = static_cast<double>(m) / w;
      if (r > 0) c.spill_read_bytes_per_s = static_cast<double>(m) / r;
    } catch (const Error&) {
      // No spill file here: keep the defaults; an offload raises when it runs.
    }
    return c;
  }();
  return costs;
}

int64_t estimate_peak(const ir::Graph& g, bool use_arena, const std::vector<Offload>& offloads,
                      const std::vector<int64_t>* workspace) {
  Liveness L(g);
  return peak_of(L, use_arena, offloads, workspace);
}

BudgetPlan fit_memory_budget(ir::Graph& g, int64_t budget, bool use_arena, const BudgetCosts& costs,
                             std::vector<int64_t>* workspace, const BudgetPlan* start) {
  TANDEM_CHECK(budget > 0, ValueError, "memory_budget", "got ", budget, " bytes, expected a positive number of bytes");
  BudgetPlan plan;
  if (start) plan = *start;
  plan.budget = budget;
  if (!start) plan.unconstrained_peak = estimate_peak(g, use_arena, {}, workspace);
  int64_t peak = estimate_peak(g, use_arena, plan.offloads, workspace);
  // Each round frees at least one storage across one gap, so the loop ends; the bound
  // only guards against a bug.
  for (int round = 0; peak > budget; ++round) {
    TANDEM_INTERNAL_ASSERT(round < 1000000, "memory budget planner did not converge");
    Liveness L(g);
    auto live = live_bytes(L, plan.offloads, false, workspace);
    const int s = static_cast<int>(std::max_element(live.begin(), live.end()) - live.begin());
    Candidate best;
    double best_score = -1;
    std::vector<bool> sliced_root(L.planned.size(), false);
    for (const auto& o : plan.offloads)
      if (o.sliced) sliced_root[static_cast<size_t>(o.value)] = true;
    for (size_t r = 0; r < L.planned.size(); ++r) {
      if (!L.planned[r] || L.per_call[r]) continue;
      const auto& u = L.uses[r];
      if (!use_arena && !sliced_root[r]) {
        const Candidate c = sliced_candidate(g, L, plan.offloads, live, s, static_cast<int>(r), costs);
        const double score = static_cast<double>(c.bytes) / std::max(c.seconds, 1e-12);
        if (c.root >= 0 && score > best_score) {
          best_score = score;
          best = c;
        }
      }
      auto it = std::lower_bound(u.begin(), u.end(), s);
      if (it == u.begin() || it == u.end() || *it == s) continue;  // not alive across s, or used at s
      const int a = *(it - 1), b = *it;
      bool in_gap = false;
      for (const auto& o : plan.offloads)
        if (o.value == static_cast<int>(r) && o.after <= a && o.before >= b) in_gap = true;
      if (in_gap) continue;
      // Gaps of this storage that overlap [a, b] without containing it (a batch split moves
      // a reload onto its first piece, which may not read the storage): two overlapping
      // gaps would be two spills of one storage, which no buffer plan can hold, so the
      // candidate is their union, one gap, if nothing reads the storage inside it.
      int lo = a, hi = b;
      bool widens = false;
      for (bool grew = true; grew;) {
        grew = false;
        for (const auto& o : plan.offloads)
          if (o.value == static_cast<int>(r) && o.after < hi && lo < o.before) {
            widens = true;
            if (o.after < lo || o.before > hi) grew = true;
            lo = std::min(lo, o.after);
            hi = std::max(hi, o.before);
          }
      }
      if (widens && std::upper_bound(u.begin(), u.end(), lo) != std::lower_bound(u.begin(), u.end(), hi)) continue;
      Candidate c;
      c.root = static_cast<int>(r);
      c.after = lo;
      c.before = hi;
      c.bytes = static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(L.bytes[r])));
      const auto across = read_across(g, L, c.root, a, b);
      if (widens) {
        c.widens = true;
        c.seconds = 0;  // the bytes are spilled and reloaded once either way
      } else if (across.size() == 1 && across[0] == c.root && can_recompute(g, L, plan.offloads, c.root, b)) {
        c.recompute = true;
        c.seconds = static_cast<double>(node_bytes(g, g.value(c.root).producer)) / costs.compute_bytes_per_s;
      } else {
        if (has_absolute_view(g, L, c.root)) continue;
        c.seconds = static_cast<double>(L.bytes[r]) / costs.spill_write_bytes_per_s +
                    static_cast<double>(L.bytes[r]) / costs.spill_read_bytes_per_s;
      }
      const double score = static_cast<double>(c.bytes) / std::max(c.seconds, 1e-12);
      if (score > best_score) {
        best_score = score;
        best = c;
      }
    }
    // Running a node that sums over a batch per chunk of examples, with the batch-separable
    // node making its input (OpDef::batch_chunk): that input is never whole in memory, for
    // the time of the adds of the partial sums.
    std::optional<BatchSplit> split;
    for (int k = s; k < L.num_nodes; ++k) {
      if (!g.nodes()[static_cast<size_t>(k)].op->batch_chunk) continue;
      auto bs = find_batch_split(g, L, k);
      if (!bs || bs->p > s) continue;
      // A sliced offload's uses stay as they were classified (sliced_access).
      bool touches_sliced = false;
      for (int q : {bs->p, bs->c})
        for (int i : g.nodes()[static_cast<size_t>(q)].inputs)
          touches_sliced = touches_sliced || (i >= 0 && sliced_root[static_cast<size_t>(L.root[static_cast<size_t>(i)])]);
      if (touches_sliced) continue;
      const int64_t pieces = (bs->n + bs->chunk - 1) / bs->chunk;
      const int64_t freed = bs->bytes - bs->bytes / bs->n * bs->chunk;
      int64_t summed = 0;
      for (int o : g.nodes()[static_cast<size_t>(k)].outputs) summed += span_bytes(g.value(o).meta);
      const double seconds = static_cast<double>(3 * summed * (pieces - 1)) / costs.compute_bytes_per_s;
      const double score = static_cast<double>(freed) / std::max(seconds, 1e-12);
      if (freed > 0 && score > best_score) {
        best_score = score;
        split = bs;
        best = Candidate();
        best.seconds = seconds;
      }
    }
    if (split) {
      const BatchSplit& bs = *split;
      const ir::Node& cn = g.nodes()[static_cast<size_t>(bs.c)];
      const OpDef* pop = g.nodes()[static_cast<size_t>(bs.p)].op;
      const OpDef* cop = cn.op;
      std::string name = str_cat(cop->name, " -> %", cn.outputs.empty() ? -1 : cn.outputs[0], " with ", pop->name,
                                 ": ", (bs.n + bs.chunk - 1) / bs.chunk, " chunks of ", bs.chunk, " of ", bs.n,
                                 " examples");
      const int count = apply_batch_split(g, bs);
      auto moved = [&](int q, bool after) {
        if (q == bs.p || q == bs.c) return after ? bs.c - 2 + count : bs.c - 1;
        if (q < bs.p) return q;
        return q < bs.c ? q - 1 : q - 2 + count;
      };
      for (auto& o : plan.offloads) {
        o.after = moved(o.after, true);
        o.before = moved(o.before, false);
      }
      if (workspace && !workspace->empty()) {
        std::vector<int64_t> ws;
        auto at = [&](int q) { return static_cast<size_t>(q) < workspace->size() ? (*workspace)[static_cast<size_t>(q)] : 0; };
        for (int q = 0; q < L.num_nodes; ++q) {
          if (q == bs.p) continue;
          if (q == bs.c) {
            for (int f = 0; f < count; ++f) {
              const OpDef* op = g.nodes()[static_cast<size_t>(bs.c - 1 + f)].op;
              ws.push_back(op == pop ? at(bs.p) : op == cop ? at(bs.c) : 0);
            }
            continue;
          }
          ws.push_back(at(q));
        }
        *workspace = std::move(ws);
      }
      plan.split.push_back(std::move(name));
      plan.extra_seconds += best.seconds;
      peak = estimate_peak(g, use_arena, plan.offloads, workspace);
      continue;
    }
    if (best.root < 0) {
      const ir::Node& n = g.nodes()[static_cast<size_t>(s)];
      // What is in memory there: the largest storages and the kernel's own allocations.
      std::vector<std::pair<int64_t, int>> there;
      for (size_t r = 0; r < L.planned.size(); ++r) {
        if (!L.planned[r]) continue;
        for (const auto& [a, b] : L.segments(static_cast<int>(r), plan.offloads))
          if (a <= s && s <= b) there.emplace_back(L.bytes[r], static_cast<int>(r));
      }
      std::sort(there.begin(), there.end(), [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
      std::string largest;
      for (size_t i = 0; i < there.size() && i < 4; ++i) {
        const ir::Value& v = g.value(there[i].second);
        largest += str_cat(i ? ", " : "", "%", v.id, " (", g.nodes()[static_cast<size_t>(v.producer)].op->name, ", ",
                           mib(there[i].first), L.per_call[static_cast<size_t>(v.id)] ? ", an output" : "", ")");
      }
      // A first fit (no `start`) comes before any run has measured the kernels' own
      // allocations, and the figure leaves them out: say so, since the minimum named after
      // the first run can then be higher.
      const bool measured = workspace && start;
      const int64_t ws = measured && static_cast<size_t>(s) < workspace->size() ? (*workspace)[static_cast<size_t>(s)] : 0;
      throw OutOfMemoryError(str_cat("[memory_budget] got a budget of ", budget, " bytes (", mib(budget),
                                     "), expected at least ", peak, " bytes (", mib(peak),
                                     "): the smallest peak this program reaches by recomputing and offloading; ",
                                     "its live bytes peak at node ", s, " (", n.op->name, "): ", there.size(),
                                     " value(s) in memory there, the largest ", largest, "; the kernel's own allocations ",
                                     measured ? mib(ws)
                                              : std::string("not measured yet (left out of this figure: the first "
                                                            "run measures them, and can raise the minimum)")));
    }
    if (best.recompute) {
      const std::string name = "%" + std::to_string(best.root) + " (" + g.nodes()[static_cast<size_t>(g.value(best.root).producer)].op->name + ")";
      const int producer = g.value(best.root).producer;
      insert_recompute(g, best.root, best.before);
      if (workspace && static_cast<size_t>(producer) < workspace->size()) {
        const int64_t ws = (*workspace)[static_cast<size_t>(producer)];  // the same kernel on the same shapes
        workspace->insert(workspace->begin() + best.before, ws);
      }
      for (auto& o : plan.offloads) {
        if (o.after >= best.before) ++o.after;
        if (o.before >= best.before) ++o.before;
      }
      plan.recomputed.push_back(name);
      plan.recomputed_bytes += best.bytes;
    } else {
      // An offload; a union (widens) or a sliced one replaces the storage's gaps it covers.
      for (size_t j = 0; j < plan.offloads.size();) {
        const Offload& o = plan.offloads[j];
        const bool covered = best.sliced   ? o.after >= best.after
                             : best.widens ? best.after <= o.after && o.before <= best.before
                                           : false;
        if (o.value == best.root && covered) {
          plan.offloaded_bytes -= o.bytes;
          plan.offloads.erase(plan.offloads.begin() + static_cast<std::ptrdiff_t>(j));
        } else {
          ++j;
        }
      }
      plan.offloads.push_back(
          {best.root, best.after, best.before, L.bytes[static_cast<size_t>(best.root)], best.sliced});
      plan.offloaded_bytes += L.bytes[static_cast<size_t>(best.root)];
    }
    plan.extra_seconds += best.seconds;
    peak = estimate_peak(g, use_arena, plan.offloads, workspace);
  }
  plan.planned_peak = peak;
  return plan;
}

std::string BudgetPlan::to_text() const {
  std::ostringstream os;
  os << "memory budget " << budget << " bytes (" << mib(budget) << "): peak " << mib(unconstrained_peak) << " -> "
     << mib(planned_peak) << "; recomputed " << recomputed.size() << " value(s) (" << mib(recomputed_bytes) << ")";
  if (!recomputed.empty()) {
    os << ": ";
    for (size_t i = 0; i < recomputed.size() && i < 8; ++i) os << (i ? ", " : "") << recomputed[i];
    if (recomputed.size() > 8) os << ", ...";
  }
  if (!split.empty()) {
    os << "; split " << split.size() << " node(s) by batch: ";
    for (size_t i = 0; i < split.size() && i < 4; ++i) os << (i ? ", " : "") << split[i];
    if (split.size() > 4) os << ", ...";
  }
  os << "; offloaded " << offloads.size() << " value(s) (" << mib(offloaded_bytes) << ")";
  if (sliced() > 0) os << ", " << sliced() << " of them read and written in pieces";
  os << " to a spill file in " << spill_directory() << "; estimated extra time " << extra_seconds * 1e3 << " ms per run";
  return os.str();
}

}  // namespace tandem::runtime
