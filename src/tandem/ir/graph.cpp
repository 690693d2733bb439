#include "tandem/ir/graph.h"

#include <sstream>

namespace tandem::ir {

namespace {
TensorMeta with_strides(TensorMeta m) {
  if (m.strides.empty() && !m.sizes.empty()) m.strides = contiguous_strides(m.sizes);
  return m;
}
}  // namespace

MetaRef meta_ref(const Value& v) {
  MetaRef r;
  r.dtype = v.meta.dtype;
  r.sizes = v.meta.sizes;
  r.strides = v.meta.strides;
  // A C++ number captured as a constant keeps its lower rank in type promotion.
  r.is_wrapped_number = v.wrapped_number ||
                        (v.kind == ValueKind::Constant && v.constant.defined() && v.constant.impl()->is_wrapped_number());
  return r;
}

int Graph::add_input(const TensorMeta& meta, std::string name) {
  Value v;
  v.id = static_cast<int>(values_.size());
  v.kind = ValueKind::Input;
  v.meta = with_strides(meta);
  v.input_index = static_cast<int>(inputs_.size());
  v.name = std::move(name);
  values_.push_back(std::move(v));
  inputs_.push_back(values_.back().id);
  return values_.back().id;
}

int Graph::add_constant(const Tensor& t, std::string name) {
  Value v;
  v.id = static_cast<int>(values_.size());
  v.kind = ValueKind::Constant;
  v.meta = TensorMeta{t.dtype(), t.sizes().vec(), t.strides().vec()};
  v.constant = t;
  v.name = std::move(name);
  values_.push_back(std::move(v));
  return values_.back().id;
}

int Graph::add_node(const OpDef& op, std::vector<int> inputs, std::vector<AttrValue> attrs,
                    std::vector<TensorMeta> output_metas) {
  if (output_metas.empty()) {
    std::vector<MetaRef> in;
    for (int id : inputs) {
      if (id < 0) {
        MetaRef m;
        m.defined = false;
        in.push_back(m);
      } else {
        in.push_back(meta_ref(value(id)));
      }
    }
    auto metas = infer_meta(op, in, attrs);
    for (auto& m : metas) output_metas.push_back(std::move(m));
  }
  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.op = &op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (size_t k = 0; k < output_metas.size(); ++k) {
    Value v;
    v.id = static_cast<int>(values_.size());
    v.kind = ValueKind::Node;
    v.meta = with_strides(std::move(output_metas[k]));
    v.producer = n.id;
    v.output_index = static_cast<int>(k);
    if (k == 0 && (op.view || op.is_inplace) && !n.inputs.empty()) v.alias_of = n.inputs[0];
    values_.push_back(std::move(v));
    n.outputs.push_back(values_.back().id);
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

int Graph::storage_root(int id) const {
  while (id >= 0 && value(id).alias_of >= 0) id = value(id).alias_of;
  return id;
}

void Graph::compact() {
  std::vector<Node> live;
  for (auto& n : nodes_)
    if (!n.dead) live.push_back(std::move(n));
  nodes_ = std::move(live);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].id = static_cast<int>(i);
    for (int o : nodes_[i].outputs) values_[static_cast<size_t>(o)].producer = static_cast<int>(i);
  }
}

void Graph::replace_uses(int from, int to) {
  for (auto& n : nodes_)
    for (int& i : n.inputs)
      if (i == from) i = to;
  for (int& o : outputs_)
    if (o == from) o = to;
  // Views and in-place results of `from` now share `to`'s storage: passes (in-place reuse,
  // the planner) reason about storage through alias_of, so a stale link would point them at
  // a removed value (in-place reuse wrote into a folded constant that way).
  for (auto& v : values_)
    if (v.alias_of == from && v.id != to) v.alias_of = to;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values_.size(), 0);
  for (const auto& n : nodes_)
    if (!n.dead)
      for (int i : n.inputs)
        if (i >= 0) ++uses[static_cast<size_t>(i)];
  for (int o : outputs_) ++uses[static_cast<size_t>(o)];
  return uses;
}

SmallVec<int, 2> written_values(const Node& n) {
  SmallVec<int, 2> out;
  if (n.op->is_inplace && !n.inputs.empty() && n.inputs[0] >= 0) out.push_back(n.inputs[0]);
  if (n.op->mutates_inputs) {
    const uint32_t m = mutated_inputs(*n.op, n.attrs);
    for (size_t i = 0; i < n.inputs.size() && i < 32; ++i)
      if ((m >> i & 1u) && n.inputs[i] >= 0) out.push_back(n.inputs[i]);
  }
  return out;
}

namespace {
std::string vname(const Value& v) { return "%" + std::to_string(v.id); }
std::string type_str(const TensorMeta& m) { return str_cat(dtype_name(m.dtype), IntArrayRef(m.sizes)); }
}  // namespace

std::string Graph::to_text() const {
  std::ostringstream os;
  os << "graph(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Value& v = value(inputs_[i]);
    os << (i ? ", " : "") << vname(v) << ": " << type_str(v.meta);
    if (!v.name.empty()) os << " \"" << v.name << "\"";
  }
  os << ") {\n";
  for (const Value& v : values_)
    if (v.kind == ValueKind::Constant) os << "  " << vname(v) << ": " << type_str(v.meta) << " = constant\n";
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    os << "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value& v = value(n.outputs[k]);
      os << (k ? ", " : "") << vname(v) << ": " << type_str(v.meta);
    }
    os << " = " << n.op->name << "(";
    bool first = true;
    for (int i : n.inputs) {
      os << (first ? "" : ", ") << (i < 0 ? std::string("None") : vname(value(i)));
      first = false;
    }
    for (size_t a = 0; a < n.attrs.size(); ++a) {
      const std::string& an = a < n.op->attrs.size() ? n.op->attrs[a].name : "attr" + std::to_string(a);
      os << (first ? "" : ", ") << an << "=" << n.attrs[a];
      first = false;
    }
    os << ")";
    if (n.op->view) os << "  # view of " << vname(value(n.inputs[0]));
    auto written = written_values(n);
    for (size_t k = 0; k < written.size(); ++k) os << (k ? ", " : "  # writes ") << vname(value(written[k]));
    os << "\n";
  }
  os << "  return (";
  for (size_t i = 0; i < outputs_.size(); ++i) os << (i ? ", " : "") << vname(value(outputs_[i]));
  os << ")\n}\n";
  return os.str();
}

std::string Graph::to_dot() const {
  std::ostringstream os;
  os << "digraph tandem {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  for (int i : inputs_)
    os << "  v" << i << " [shape=ellipse, label=\"" << (value(i).name.empty() ? vname(value(i)) : value(i).name) << "\\n"
       << type_str(value(i).meta) << "\"];\n";
  for (const Value& v : values_)
    if (v.kind == ValueKind::Constant) os << "  v" << v.id << " [shape=note, label=\"const " << type_str(v.meta) << "\"];\n";
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    os << "  n" << n.id << " [shape=box, label=\"" << n.op->name << "\"];\n";
    for (int i : n.inputs) {
      if (i < 0) continue;
      const Value& v = value(i);
      if (v.kind == ValueKind::Node) os << "  n" << v.producer << " -> n" << n.id << " [label=\"" << type_str(v.meta) << "\"];\n";
      else os << "  v" << i << " -> n" << n.id << ";\n";
    }
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Value& v = value(outputs_[k]);
    os << "  out" << k << " [shape=ellipse, label=\"output " << k << "\"];\n";
    if (v.kind == ValueKind::Node) os << "  n" << v.producer << " -> out" << k << ";\n";
    else os << "  v" << v.id << " -> out" << k << ";\n";
  }
  os << "}\n";
  return os.str();
}

void verify(const Graph& g) {
  std::vector<bool> defined(g.values().size(), false);
  for (const Value& v : g.values()) {
    TANDEM_CHECK(v.id >= 0 && static_cast<size_t>(v.id) < g.values().size(), RuntimeError, "verify", "bad value id ", v.id);
    if (v.kind != ValueKind::Node) defined[static_cast<size_t>(v.id)] = true;
  }
  for (size_t idx = 0; idx < g.nodes().size(); ++idx) {
    const Node& n = g.nodes()[idx];
    TANDEM_CHECK(!n.dead, RuntimeError, "verify", "node ", idx, " is dead but not compacted");
    TANDEM_CHECK(n.id == static_cast<int>(idx), RuntimeError, "verify", "node ", idx, " has id ", n.id);
    TANDEM_CHECK(n.op != nullptr, RuntimeError, "verify", "node ", idx, " has no op");
    std::vector<MetaRef> in;
    for (int i : n.inputs) {
      if (i < 0) {
        MetaRef m;
        m.defined = false;
        in.push_back(m);
        continue;
      }
      TANDEM_CHECK(defined[static_cast<size_t>(i)], RuntimeError, "verify", "node ", idx, " (", n.op->name,
                   ") uses %", i, " before it is defined");
      in.push_back(meta_ref(g.value(i)));
    }
    for (int o : n.outputs) {
      const Value& v = g.value(o);
      TANDEM_CHECK(v.producer == n.id, RuntimeError, "verify", "value %", o, " claims producer ", v.producer,
                   " but node ", n.id, " (", n.op->name, ") defines it");
      TANDEM_CHECK(!defined[static_cast<size_t>(o)], RuntimeError, "verify", "value %", o, " is defined twice");
      defined[static_cast<size_t>(o)] = true;
    }
    if (n.op->dynamic_shape || n.op->composite) continue;
    auto metas = infer_meta(*n.op, in, n.attrs);
    TANDEM_CHECK(metas.size() == n.outputs.size(), RuntimeError, "verify", "node ", idx, " (", n.op->name, ") has ",
                 n.outputs.size(), " outputs but its meta gives ", metas.size());
    for (size_t k = 0; k < metas.size(); ++k) {
      const Value& v = g.value(n.outputs[k]);
      TANDEM_CHECK(metas[k].dtype == v.meta.dtype && IntArrayRef(metas[k].sizes).equals(v.meta.sizes), RuntimeError,
                   "verify", "node ", idx, " (", n.op->name, ") output ", k, " is recorded as ", dtype_name(v.meta.dtype),
                   IntArrayRef(v.meta.sizes), " but meta inference gives ", dtype_name(metas[k].dtype),
                   IntArrayRef(metas[k].sizes));
    }
  }
  for (int o : g.outputs())
    TANDEM_CHECK(o >= 0 && defined[static_cast<size_t>(o)], RuntimeError, "verify", "graph output %", o, " is not defined");
}

}  // namespace tandem::ir
