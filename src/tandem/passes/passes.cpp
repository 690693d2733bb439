#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>

#include "tandem/autograd/engine.h"
#include "tandem/passes/pass_manager.h"

namespace tandem::passes {

namespace {

// Storage roots written by in-place nodes and by ops that mutate inputs.
std::vector<bool> mutated_roots(const ir::Graph& g) {
  std::vector<bool> m(g.values().size(), false);
  for (const auto& n : g.nodes())
    if (!n.dead)
      for (int w : ir::written_values(n)) m[static_cast<size_t>(g.storage_root(w))] = true;
  return m;
}

// Whether the node writes any value in place (its own self or other inputs).
bool has_writes(const ir::Node& n) { return n.op->is_inplace || mutated_inputs(*n.op, n.attrs) != 0; }

bool is_mutated(const ir::Graph& g, const std::vector<bool>& m, int v) { return m[static_cast<size_t>(g.storage_root(v))]; }

// The scalar value of a constant 0-d tensor, if it is one.
std::optional<double> constant_scalar(const ir::Graph& g, int v) {
  if (v < 0) return std::nullopt;
  const ir::Value& val = g.value(v);
  if (val.kind != ir::ValueKind::Constant || val.constant.numel() != 1) return std::nullopt;
  return val.constant.item().to_double();
}

// Values a graph output is, or is a view/in-place result of (its alias chain). The caller
// receives these objects or storages: a pass must not let one of them become a caller's
// input, a constant shared by every call, or the same tensor as another output.
std::vector<bool> reaches_output(const ir::Graph& g) {
  std::vector<bool> r(g.values().size(), false);
  for (int o : g.outputs())
    for (int v = o; v >= 0 && !r[static_cast<size_t>(v)]; v = g.value(v).alias_of) r[static_cast<size_t>(v)] = true;
  return r;
}

bool any_output_reaches(const ir::Node& n, const std::vector<bool>& reach) {
  for (int o : n.outputs)
    if (reach[static_cast<size_t>(o)]) return true;
  return false;
}

bool same_attrs(const std::vector<AttrValue>& a, const std::vector<AttrValue>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

}  // namespace

bool dead_code_elimination(ir::Graph& g) {
  std::vector<bool> live(g.values().size(), false);
  for (int o : g.outputs()) live[static_cast<size_t>(o)] = true;
  bool changed = false;
  auto& nodes = g.mutable_nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node& n = *it;
    if (n.dead) continue;
    // An op that can raise on data (integer division by zero, an index out of range) is
    // kept even when unused: eager raises there, so the program must too.
    bool keep = has_writes(n) || n.op->random || n.op->raises_on_data;
    for (int o : n.outputs) keep = keep || live[static_cast<size_t>(o)];
    if (!keep) {
      n.dead = true;
      changed = true;
      continue;
    }
    for (int i : n.inputs)
      if (i >= 0) live[static_cast<size_t>(i)] = true;
  }
  if (changed) g.compact();
  return changed;
}

bool common_subexpression_elimination(ir::Graph& g) {
  auto mutated = mutated_roots(g);
  // Two identical nodes whose results are both returned stay two: eager returns two
  // independent tensors, and the caller may write one.
  const auto reach = reaches_output(g);
  // Epoch of each storage root: bumped by every in-place write, part of the key.
  std::vector<int> epoch(g.values().size(), 0);
  std::map<std::vector<int64_t>, int> seen;  // key -> node id (ordered map: deterministic)
  bool changed = false;
  for (auto& n : g.mutable_nodes()) {
    if (n.dead) continue;
    bool candidate = !n.op->random && !has_writes(n) && !n.outputs.empty();
    for (int o : n.outputs) candidate = candidate && !is_mutated(g, mutated, o);
    if (candidate) {
      std::vector<int64_t> key{n.op->id};
      for (int i : n.inputs) {
        key.push_back(i);
        key.push_back(i >= 0 ? epoch[static_cast<size_t>(g.storage_root(i))] : 0);
      }
      for (const auto& a : n.attrs) key.push_back(static_cast<int64_t>(hash_attr(a)));
      auto it = seen.find(key);
      if (it != seen.end() && same_attrs(g.nodes()[static_cast<size_t>(it->second)].attrs, n.attrs) &&
          !any_output_reaches(n, reach)) {
        const ir::Node& first = g.nodes()[static_cast<size_t>(it->second)];
        for (size_t k = 0; k < n.outputs.size(); ++k) g.replace_uses(n.outputs[k], first.outputs[k]);
        n.dead = true;
        changed = true;
        continue;
      }
      seen.emplace(std::move(key), n.id);
    }
    for (int w : ir::written_values(n)) ++epoch[static_cast<size_t>(g.storage_root(w))];
  }
  if (changed) g.compact();
  return changed;
}

bool constant_folding(ir::Graph& g) {
  auto mutated = mutated_roots(g);
  // A returned value is computed on every call: a folded constant would be one tensor
  // shared by all calls, so a caller writing into one result would change the next.
  const auto reach = reaches_output(g);
  bool changed = false;
  NoGradGuard ng;
  for (auto& n : g.mutable_nodes()) {
    if (n.dead || n.op->random || has_writes(n) || n.op->view || n.op->dynamic_shape || any_output_reaches(n, reach))
      continue;
    bool all_const = true;
    for (int i : n.inputs) all_const = all_const && (i < 0 || g.value(i).kind == ir::ValueKind::Constant);
    if (!all_const) continue;
    bool out_mutated = false;
    for (int o : n.outputs) out_mutated = out_mutated || is_mutated(g, mutated, o);
    if (out_mutated) continue;
    std::vector<Tensor> ins;
    for (int i : n.inputs) ins.push_back(i >= 0 ? g.value(i).constant : Tensor());
    OpOutputs outs = dispatch(*n.op, ins, n.attrs);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      int c = g.add_constant(outs[k], "folded");
      g.replace_uses(n.outputs[k], c);
    }
    n.dead = true;
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

// Views whose result starts where their input starts (no storage offset change).
bool offset_preserving(const OpDef& op) {
  static const char* const names[] = {"transpose", "permute", "t", "view", "_unsafe_view", "reshape_alias",
                                      "unsqueeze", "squeeze", "expand", "alias", "detach"};
  for (const char* nm : names)
    if (op.name == nm) return true;
  return false;
}

bool noop_removal(ir::Graph& g) {
  auto mutated = mutated_roots(g);
  bool changed = false;
  // Storage roots that an as_strided reads: its offset counts from the storage, so
  // replacing a fresh buffer there (a copy, x * 1) by its input would move the view onto
  // the input's storage and its offset (found by the randomized test).
  std::vector<bool> strided_root(g.values().size(), false);
  for (const auto& n : g.nodes())
    if (!n.dead && n.op->name == "as_strided" && !n.inputs.empty() && n.inputs[0] >= 0)
      strided_root[static_cast<size_t>(g.storage_root(n.inputs[0]))] = true;
  for (auto& n : g.mutable_nodes()) {
    if (n.dead || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] < 0) continue;
    const int in = n.inputs[0], out = n.outputs[0];
    const ir::Value& vi = g.value(in);
    const ir::Value& vo = g.value(out);
    bool same_meta = vi.meta.dtype == vo.meta.dtype && vi.meta.sizes == vo.meta.sizes;
    // Recomputed per node: removals re-link alias chains. A value that a graph output is
    // (or views, or was written in place through) is what the caller gets: removing a copy
    // there would hand out the caller's input, removing a view would return the input
    // object itself where eager returns a new tensor.
    bool is_output = reaches_output(g)[static_cast<size_t>(out)];
    bool remove = false;
    if (n.op->view) {
      // A view with the input's exact geometry (and no offset change) is the input.
      remove = !is_output && same_meta && vi.meta.strides == vo.meta.strides && n.op->name != "as_strided" && n.op->name != "slice" &&
               n.op->name != "select" && n.op->name != "diagonal";
      if (n.op->name == "slice") {
        auto start = AttrReader("slice", n.attrs).opt_i(1).value_or(0);
        remove = !is_output && same_meta && vi.meta.strides == vo.meta.strides && start == 0;
      }
      // A view of a view that lands back on the first view's input geometry (a transpose
      // of a transpose: backward rules transpose a gradient the forward transposed) is
      // that input, when neither view moves the offset.
      const ir::Node* parent = vi.kind == ir::ValueKind::Node ? &g.nodes()[static_cast<size_t>(vi.producer)] : nullptr;
      if (!remove && !is_output && parent && !parent->dead && parent->op->view && offset_preserving(*n.op) &&
          offset_preserving(*parent->op) && !parent->inputs.empty() && parent->inputs[0] >= 0) {
        const int base = parent->inputs[0];
        const ir::Value& vb = g.value(base);
        if (vb.meta.dtype == vo.meta.dtype && vb.meta.sizes == vo.meta.sizes && vb.meta.strides == vo.meta.strides) {
          g.replace_uses(out, base);
          n.dead = true;
          changed = true;
          continue;
        }
      }
    } else if (!has_writes(n) && same_meta && vi.meta.strides == vo.meta.strides && !is_output &&
               !is_mutated(g, mutated, in) && !is_mutated(g, mutated, out) &&
               !strided_root[static_cast<size_t>(g.storage_root(out))]) {
      if (n.op->name == "_to_copy" || n.op->name == "clone") {
        remove = true;
      } else if (n.inputs.size() == 2) {
        auto c = constant_scalar(g, n.inputs[1]);
        const std::string& nm = n.op->name;
        if (c && (nm == "mul" || nm == "div") && *c == 1.0 && (nm == "mul" || AttrReader("div", n.attrs).is_none(0))) remove = true;
        if (c && nm == "sub" && *c == 0.0) remove = true;
        if (c && nm == "add" && *c == 0.0 && !is_floating_point(vo.meta.dtype)) remove = true;
      }
    }
    if (!remove) continue;
    // Graph outputs must stay distinct from graph inputs only by value id; replacing is fine.
    g.replace_uses(out, in);
    n.dead = true;
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

bool canonicalize(ir::Graph& g) {
  bool changed = false;
  for (auto& n : g.mutable_nodes()) {
    if (n.dead || n.inputs.size() != 2 || n.op->is_inplace) continue;
    const std::string& nm = n.op->name;
    // Only swaps that are exact: a bool result (eq, ne) or integer arithmetic. Float
    // kernels are not bitwise commutative: with two NaNs the first operand's payload wins,
    // and min/max of +0 and -0 return one of them by position.
    const ir::Value& out = g.value(n.outputs[0]);
    const bool exact = out.meta.dtype == DType::Bool || is_integral(out.meta.dtype, /*include_bool=*/true);
    bool commutative = nm == "eq" || nm == "ne" ||
                       (exact && (nm == "mul" || nm == "maximum" || nm == "minimum" ||
                                  (nm == "add" && AttrReader("add", n.attrs).scalar(0).to_double() == 1.0)));
    if (commutative && n.inputs[0] > n.inputs[1] && n.inputs[1] >= 0) {
      std::swap(n.inputs[0], n.inputs[1]);
      changed = true;
    }
  }
  return changed;
}

bool inplace_reuse(ir::Graph& g) {
  const auto& values = g.values();
  // Last node touching each storage root (reads and writes through any alias), and roots
  // graph outputs alias (the caller keeps them).
  std::vector<int> last_use(values.size(), -1);
  std::vector<bool> kept(values.size(), false);
  for (const auto& n : g.nodes()) {
    for (int i : n.inputs)
      if (i >= 0) last_use[static_cast<size_t>(g.storage_root(i))] = n.id;
    for (int o : n.outputs) last_use[static_cast<size_t>(g.storage_root(o))] = n.id;
  }
  for (int o : g.outputs()) kept[static_cast<size_t>(g.storage_root(o))] = true;
  bool changed = false, removed = false;
  for (auto& n : g.mutable_nodes()) {
    if (!n.dead && n.op->name == "clone" && n.inputs.size() == 1 && n.inputs[0] >= 0 && n.outputs.size() == 1) {
      // A copy of an intermediate that dies here, with the copy's own layout and a buffer
      // of its own (the whole root, offset 0): the copy is that buffer (eager's
      // AccumulateGrad takes a gradient over the same way when nothing else holds it).
      const int v = n.inputs[0], r = g.storage_root(v), o = n.outputs[0];
      const ir::Value &vin = g.value(v), &vout = g.value(o), &root = g.value(r);
      const bool own = root.kind == ir::ValueKind::Node && !kept[static_cast<size_t>(r)] &&
                       last_use[static_cast<size_t>(r)] == n.id && vin.meta.dtype == vout.meta.dtype &&
                       vin.meta.sizes == vout.meta.sizes && vin.meta.strides == vout.meta.strides &&
                       root.meta.dtype == vin.meta.dtype && root.meta.sizes == vin.meta.sizes &&
                       root.meta.strides == vin.meta.strides;
      if (own) {
        // Its readers and the graph outputs take the intermediate itself.
        last_use[static_cast<size_t>(r)] = std::max(last_use[static_cast<size_t>(r)], last_use[static_cast<size_t>(o)]);
        kept[static_cast<size_t>(r)] = kept[static_cast<size_t>(r)] || kept[static_cast<size_t>(o)];
        g.replace_uses(o, v);
        n.dead = true;
        removed = changed = true;
        continue;
      }
    }
    const OpDef* ip = n.op->inplace;
    if (n.dead || ip == nullptr || n.op->view || n.op->random || n.outputs.size() != 1 || n.inputs.empty() ||
        n.inputs[0] < 0 || has_writes(n))
      continue;
    const int v = n.inputs[0];
    const int r = g.storage_root(v);
    const ir::Value& vin = g.value(v);
    const ir::Value& vout = g.value(n.outputs[0]);
    if (g.value(r).kind != ir::ValueKind::Node || kept[static_cast<size_t>(r)] || last_use[static_cast<size_t>(r)] != n.id)
      continue;
    if (vin.meta.dtype != vout.meta.dtype || vin.meta.sizes != vout.meta.sizes || vin.meta.strides != vout.meta.strides)
      continue;
    // Only a view that covers its root exactly (the root itself, or a contiguous view of
    // a contiguous root with as many elements, hence at offset 0): a result written into
    // part of a larger buffer would come back as a view into it, where eager returns a
    // tensor of its own (other offset, storage size, memory kept alive).
    if (v != r) {
      const ir::Value& root = g.value(r);
      const bool covers = compute_is_contiguous(vin.meta.sizes, vin.meta.strides) &&
                          compute_is_contiguous(root.meta.sizes, root.meta.strides) &&
                          multiply_integers(vin.meta.sizes) == multiply_integers(root.meta.sizes) &&
                          element_size(vin.meta.dtype) == element_size(root.meta.dtype);
      if (!covers) continue;
    }
    bool other_alias = false;  // another view of the same storage would be read while written
    for (size_t k = 1; k < n.inputs.size(); ++k)
      other_alias = other_alias || (n.inputs[k] >= 0 && n.inputs[k] != v && g.storage_root(n.inputs[k]) == r);
    if (other_alias) continue;
    n.op = ip;
    const int o = n.outputs[0];
    g.mutable_value(o).alias_of = v;
    // The result now lives in r: r lives as long as the result, and is kept if it is.
    last_use[static_cast<size_t>(r)] = std::max(last_use[static_cast<size_t>(r)], last_use[static_cast<size_t>(o)]);
    kept[static_cast<size_t>(r)] = kept[static_cast<size_t>(r)] || kept[static_cast<size_t>(o)];
    changed = true;
  }
  if (removed) g.compact();
  return changed;
}

PassManager::PassManager() {
#ifdef NDEBUG
  verify_ = false;
#else
  verify_ = true;
#endif
  add("canonicalize", canonicalize);
  add("constant_folding", constant_folding);
  add("noop_removal", noop_removal);
  add("cse", common_subexpression_elimination);
  add("dce", dead_code_elimination);
  add("fuse_conv_blocks", fuse_conv_blocks);
  add("fuse_mm_casts", fuse_mm_casts);
  add("fuse_pointwise", fuse_pointwise);
  add("inplace_reuse", inplace_reuse);
}

void PassManager::add(std::string name, PassFn fn) { passes_.push_back({std::move(name), std::move(fn), true}); }

void PassManager::set_enabled(const std::string& name, bool enabled) {
  for (auto& p : passes_)
    if (p.name == name) {
      p.enabled = enabled;
      return;
    }
  throw ValueError(str_cat("[PassManager] no pass named '", name, "'"));
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.push_back(p.name);
  return out;
}

std::vector<std::string> PassManager::run(ir::Graph& g) const {
  static const bool dump = std::getenv("TANDEM_DUMP_PASSES") != nullptr;
  std::vector<std::string> changed;
  if (dump) std::cerr << "=== before passes ===\n" << g.to_text();
  for (const auto& p : passes_) {
    if (!p.enabled) continue;
    if (p.fn(g)) changed.push_back(p.name);
    if (verify_) ir::verify(g);
    if (dump) std::cerr << "=== after " << p.name << " ===\n" << g.to_text();
  }
  return changed;
}

}  // namespace tandem::passes
