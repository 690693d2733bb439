#pragma once
// Graph IR for compiled mode: a Graph is a list of Nodes in execution order; each Node
// applies one registered op (OpDef) to input Values with attributes and defines output
// Values. Values carry metadata (dtype, sizes, strides) and know how they alias: a view
// output aliases its input's storage, an in-place output is its input's storage.
// Ids are dense indices in creation order, so every walk is deterministic.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/dispatch/dispatcher.h"

namespace tandem::ir {

/// How a value comes into being.
enum class ValueKind : uint8_t {
  Input,     ///< bound at each call (function argument, parameter, buffer, lifted tensor)
  Constant,  ///< a tensor fixed at compile time (folded values)
  Node,      ///< an output of a node
};

/// One SSA value.
struct Value {
  int id = -1;
  ValueKind kind = ValueKind::Node;
  TensorMeta meta;          ///< dtype, sizes, strides (strides always filled)
  int producer = -1;        ///< node id for ValueKind::Node
  int output_index = 0;     ///< which output of the producer
  int input_index = -1;     ///< position in Graph::inputs for ValueKind::Input
  Tensor constant;          ///< for ValueKind::Constant
  std::string name;         ///< for printing ("x", "fc1.weight", "%12")
  /// Storage this value lives in: itself, or (views and in-place results) the value
  /// whose storage it shares. Chains resolve to a root by Graph::storage_root().
  int alias_of = -1;
  /// An input bound to a C++ number wrapped as a 0-d tensor (compile_with_scalars): it
  /// ranks below tensors in type promotion, as the number itself would.
  bool wrapped_number = false;
};

/// `v`'s metadata as the dispatcher's meta functions take it (a view of v.meta: valid
/// while v is). A number captured as a constant keeps its lower rank in type promotion.
MetaRef meta_ref(const Value& v);

/// One op application.
struct Node {
  int id = -1;
  const OpDef* op = nullptr;
  std::vector<int> inputs;   ///< value ids (-1 for an undefined optional tensor)
  std::vector<AttrValue> attrs;
  std::vector<int> outputs;  ///< value ids
  bool dead = false;         ///< removed by a pass (compacted by Graph::compact())
};

/// A function's graph. Not copyable (passes edit it in place); cheap to move.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  /// Adds a graph input with `meta` and a display name.
  int add_input(const TensorMeta& meta, std::string name);
  /// Adds a constant tensor.
  int add_constant(const Tensor& t, std::string name = "");
  /// Appends a node applying `op`; output metas given by the caller (from capture) or
  /// inferred with the op's meta function when empty. Returns the node id.
  int add_node(const OpDef& op, std::vector<int> inputs, std::vector<AttrValue> attrs,
               std::vector<TensorMeta> output_metas = {});
  /// Marks values as graph outputs (in order).
  void set_outputs(std::vector<int> outputs) { outputs_ = std::move(outputs); }

  const std::vector<Value>& values() const { return values_; }
  std::vector<Value>& mutable_values() { return values_; }
  const Value& value(int id) const { return values_.at(static_cast<size_t>(id)); }
  Value& mutable_value(int id) { return values_.at(static_cast<size_t>(id)); }
  /// Live nodes in execution order.
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  std::vector<int>& mutable_outputs() { return outputs_; }

  /// The value whose storage `id` shares (follows alias_of to the root).
  int storage_root(int id) const;
  /// Drops dead nodes (keeps order) and renumbers node ids.
  void compact();
  /// Replaces every use of value `from` (node inputs and graph outputs) by `to`, and makes
  /// values that aliased `from` (its views and in-place results) alias `to`.
  void replace_uses(int from, int to);
  /// Number of live uses of each value (node inputs plus graph outputs).
  std::vector<int> use_counts() const;

  /// Human-readable text, one node per line:
  ///   %3: float32[2, 3] = add(%1, %2, alpha=1)
  std::string to_text() const;
  /// Graphviz DOT.
  std::string to_dot() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
};

/// The value ids node `n` writes in place: an in-place op's self (input 0) and the inputs
/// its op marks as mutated for these attributes (OpDef::mutates_inputs, e.g. batch norm's
/// running stats in training). Empty for pure nodes.
SmallVec<int, 2> written_values(const Node& n);

/// Checks structural invariants: every value is defined before use, node ids and value
/// ids are consistent, outputs exist, and each node's recorded output metas equal its op's
/// meta inference (views: the stride rule). Raises RuntimeError naming the node.
void verify(const Graph& g);

}  // namespace tandem::ir
