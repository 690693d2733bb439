#pragma once
// The ONNX importer's own graph form (no protobuf types: only model.cpp includes the
// generated ONNX headers). The loader (model.cpp) parses a ModelProto into a Graph,
// checking every field it reads; the interpreter (OnnxModel::forward_list) walks the
// nodes in topological order and calls one converter per node (converters.cpp), which
// computes the node's outputs with tandem's public op API (so everything goes through the
// dispatcher, and eager mode, autograd and compiled-mode capture all see ordinary ops).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unordered_map>

#include "tandem/core/tensor.h"
#include "tandem/onnx/onnx.h"

namespace tandem::onnx {

struct Graph;

/// One attribute of a node (AttributeProto), with the fields tandem uses. `kind` is the
/// AttributeProto type name ("INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS",
/// "TENSOR", "GRAPH", ...).
struct Attr {
  std::string kind;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  Tensor t;  ///< TENSOR attributes (Constant's value)
  std::shared_ptr<const Graph> g;  ///< GRAPH attributes (If's branches, Loop's and Scan's body)
};

/// One node (NodeProto): op type, domain, the opset version of that domain the model
/// imports, input/output value names (an empty input name is an omitted optional input).
struct Node {
  std::string op_type;
  std::string domain;
  std::string name;  ///< the node's name, or "#<index>" when the file gives none
  int64_t opset = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, Attr> attrs;
};

/// A parsed, checked graph: nodes in topological order; the names of the graph inputs
/// that are not initializers (bound by position at call time), of all graph inputs, and
/// of the outputs; initializers by name. A subgraph (a GRAPH attribute) may read values
/// of the graphs around it: `free_vars` names those it reads (its nested subgraphs'
/// included), which the enclosing graph orders its nodes by.
struct Graph {
  std::string source;  ///< the file (or a label) for error messages
  std::vector<Node> nodes;
  std::vector<std::string> user_inputs;
  std::vector<std::string> all_inputs;
  std::vector<std::string> outputs;
  std::vector<std::pair<std::string, Tensor>> initializers;  ///< file order
  int64_t opset = 0;  ///< the default domain's version
  std::vector<std::string> free_vars;  ///< outer-scope values read (subgraphs only)
};

/// The values visible to a node during interpretation: its graph's environment, then the
/// enclosing graphs' (a subgraph reads outer-scope values by name). See Value (onnx.h) for
/// `known`: values computed only from constants (Constant nodes, integer initializers)
/// and input shapes, never from input data or trainable parameters, may be read on the
/// host (shape arguments: Reshape's shape, Slice's starts) even while compiled mode
/// captures: their values are the same on every replay under the program's shape guards.
struct Scope {
  const std::unordered_map<std::string, Value>* env = nullptr;
  const Scope* parent = nullptr;
  /// The value named `name` here or in an enclosing scope; nullptr when none defines it.
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->env->find(name);
      if (it != s->env->end()) return &it->second;
    }
    return nullptr;
  }
};

/// Interprets `g`: `env` holds its bound inputs and initializers (it receives every value
/// the nodes compute), `outer` the enclosing scopes (nullptr for a model's main graph).
/// Returns the graph outputs in order. Errors: the converters' (tandem::Error naming the
/// node); NotImplementedError for a graph output a converter does not compute.
std::vector<Value> run_graph(const Graph& g, std::unordered_map<std::string, Value>& env, const Scope* outer);

/// Raises NotImplementedError naming the node for each node of `g` (and of its subgraphs)
/// whose op has no converter or whose domain tandem does not handle.
void check_converters(const Graph& g);

/// What a converter sees: the node, its input values (undefined for omitted optional
/// inputs) and accessors for attributes and host-read inputs that raise tandem errors
/// naming the op, the node and the file.
class Ctx {
 public:
  Ctx(const Node& node, const std::vector<const Value*>& inputs, const std::string& source,
      const Scope* scope = nullptr)
      : node_(node), inputs_(inputs), source_(source), scope_(scope) {}

  const Node& node() const { return node_; }
  /// The opset version of the node's domain the model imports.
  int64_t opset() const { return node_.opset; }
  /// Number of inputs given (trailing omitted ones included when named "").
  size_t num_inputs() const { return inputs_.size(); }
  /// True when input i is present (given, not the empty name, not an empty optional).
  bool has(size_t i) const {
    if (i >= inputs_.size() || inputs_[i] == nullptr) return false;
    const Value& v = *inputs_[i];
    return v.kind == Value::Kind::Sequence || (v.kind == Value::Kind::Tensor && v.t.defined());
  }
  /// Input i's tensor; ValueError naming the node when it is missing or not a tensor.
  const Tensor& in(size_t i) const;
  /// Input i as a value of any kind (an empty optional included); ValueError naming the
  /// node when the input is not given.
  const Value& value(size_t i) const;
  /// Input i's sequence; ValueError naming the node when it is missing or not a sequence.
  const std::vector<Tensor>& seq(size_t i) const;
  /// The GRAPH attribute `name`; ValueError naming the node when it is missing or not a
  /// graph.
  const Graph& graph_attr(const std::string& name) const;
  /// Runs subgraph `body` with `inputs` bound by position to its inputs (ValueError naming
  /// the node for a count mismatch) and this node's scope as the outer scope; returns its
  /// outputs.
  std::vector<Value> run(const Graph& body, std::vector<Value> inputs) const;
  /// Whether input i is a known value (see Value).
  bool known(size_t i) const { return has(i) && inputs_[i]->known; }
  /// Input i's elements as int64 (any integer dtype, any shape, flattened). Known inputs
  /// are read without ending a capture; others are data reads (a graph break).
  std::vector<int64_t> ints(size_t i) const;
  /// Input i's elements as doubles (flattened), read as ints() reads.
  std::vector<double> doubles(size_t i) const;

  bool has_attr(const std::string& name) const { return node_.attrs.count(name) != 0; }
  int64_t attr_i(const std::string& name, int64_t dflt) const;
  double attr_f(const std::string& name, double dflt) const;
  std::string attr_s(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> dflt = {}) const;
  std::vector<double> attr_floats(const std::string& name) const;
  const Attr* attr(const std::string& name) const;

  /// The model file (or label) errors name.
  const std::string& source() const { return source_; }
  /// "[onnx] FILE: node NAME (OP, opset V): " prefix for messages.
  std::string where() const;
  /// Raises NotImplementedError "<where> <what>".
  [[noreturn]] void unsupported(const std::string& what) const;
  /// Raises ValueError "<where> <what>".
  [[noreturn]] void invalid(const std::string& what) const;

 private:
  const Node& node_;
  const std::vector<const Value*>& inputs_;
  const std::string& source_;
  const Scope* scope_;
};

/// A converter: computes a node's outputs (one tensor per ONNX output it produces; fewer
/// when trailing optional outputs are not produced).
using Converter = std::function<std::vector<Tensor>(Ctx&)>;

/// A value converter: ops that take or produce sequences and optionals, and control flow
/// (If, Loop, Scan, SequenceMap), which run subgraphs (values.cpp).
using ValueConverter = std::function<std::vector<Value>(Ctx&)>;

/// The converter of ONNX op `op_type` in `domain` ("" is the default domain; the
/// ai.onnx.preview.training ops are the others), or nullptr (converters.cpp).
const Converter* find_converter(const std::string& op_type, const std::string& domain = "");
/// The value converter of ONNX op `op_type` (default domain), or nullptr (values.cpp).
const ValueConverter* find_value_converter(const std::string& op_type);
/// The ONNX op types that have a converter of either kind, sorted (ops of another domain
/// as "domain:Op").
std::vector<std::string> converter_names();
/// The op types with a value converter (values.cpp).
std::vector<std::string> value_converter_names();

/// ONNX TensorProto data type code -> tandem dtype; TypeError naming `what` for types
/// tandem has no dtype for (uint16/32/64, string, complex).
DType dtype_from_onnx(int64_t code, const std::string& what);

}  // namespace tandem::onnx
