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

#include "tandem/core/tensor.h"

namespace tandem::onnx {

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
/// of the outputs; initializers by name.
struct Graph {
  std::string source;  ///< the file (or a label) for error messages
  std::vector<Node> nodes;
  std::vector<std::string> user_inputs;
  std::vector<std::string> all_inputs;
  std::vector<std::string> outputs;
  std::vector<std::pair<std::string, Tensor>> initializers;  ///< file order
  int64_t opset = 0;  ///< the default domain's version
};

/// A value during interpretation: its tensor and whether it is "known", i.e. computed
/// only from constants (Constant nodes, integer initializers) and input shapes, never
/// from input data or trainable parameters. Known values may be read on the host (shape
/// arguments: Reshape's shape, Slice's starts) even while compiled mode captures: their
/// values are the same on every replay under the program's shape guards.
struct Value {
  Tensor t;
  bool known = false;
};

/// What a converter sees: the node, its input values (undefined for omitted optional
/// inputs) and accessors for attributes and host-read inputs that raise tandem errors
/// naming the op, the node and the file.
class Ctx {
 public:
  Ctx(const Node& node, const std::vector<const Value*>& inputs, const std::string& source)
      : node_(node), inputs_(inputs), source_(source) {}

  const Node& node() const { return node_; }
  /// The opset version of the node's domain the model imports.
  int64_t opset() const { return node_.opset; }
  /// Number of inputs given (trailing omitted ones included when named "").
  size_t num_inputs() const { return inputs_.size(); }
  /// True when input i is present (given and not the empty name).
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr && inputs_[i]->t.defined(); }
  /// Input i's tensor; ValueError naming the node when it is missing.
  const Tensor& in(size_t i) const;
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
};

/// A converter: computes a node's outputs (one tensor per ONNX output it produces; fewer
/// when trailing optional outputs are not produced).
using Converter = std::function<std::vector<Tensor>(Ctx&)>;

/// The converter of ONNX op `op_type` in the default domain, or nullptr (converters.cpp).
const Converter* find_converter(const std::string& op_type);
/// The ONNX op types that have a converter, sorted.
std::vector<std::string> converter_names();

/// ONNX TensorProto data type code -> tandem dtype; TypeError naming `what` for types
/// tandem has no dtype for (uint16/32/64, string, complex).
DType dtype_from_onnx(int64_t code, const std::string& what);

}  // namespace tandem::onnx
