#pragma once
// ONNX import: load a .onnx model (ONNX's protobuf format, read with Debian's libonnx
// generated classes) as an nn::Module that runs eagerly, trains (float initializers are
// parameters) and compiles (tandem::compile(module)).
//
// Reference: the ONNX IR specification (onnx/docs/IR.md) and operator specification
// (onnx/docs/Operators.md, one converter per op and opset range in converters.cpp).
//
// Errors (all tandem::Error subclasses, messages start with "[onnx] FILE: "):
//  - RuntimeError: unreadable file or directory, truncated or malformed protobuf,
//    external data that cannot be read;
//  - ValueError: a graph that is not a DAG (cycle), an undefined input name, a value
//    defined twice, tensor data whose size disagrees with the dims, negative or absurd
//    dims, a bad attribute;
//  - TypeError: a tensor element type tandem has no dtype for (uint16/32/64, string);
//  - NotImplementedError: an op (or an op's opset version or attribute) with no
//    converter, naming the op and the opset.
#include <memory>
#include <string>
#include <vector>

#include "tandem/nn/module.h"

namespace tandem::onnx {

struct Graph;

/// An ONNX value as the importer passes it between nodes and across the graph boundary
/// (forward_values): a tensor, a sequence of tensors (ONNX's sequence type, a
/// SequenceProto in files), or an empty optional (an OptionalProto with no value; an
/// optional that holds a value is that value). `known`: computed only from constants and
/// input shapes (see graph.h), so it may be read on the host while compiled mode captures.
struct Value {
  enum class Kind { Tensor, Sequence, None };
  Tensor t;  ///< Kind::Tensor
  bool known = false;
  Kind kind = Kind::Tensor;
  std::vector<Tensor> seq;  ///< Kind::Sequence, in order

  Value() = default;
  Value(Tensor x, bool is_known) : t(std::move(x)), known(is_known) {}
  static Value tensor(Tensor x, bool known = false) { return Value(std::move(x), known); }
  static Value sequence(std::vector<Tensor> s, bool known = false) {
    Value v;
    v.kind = Kind::Sequence;
    v.seq = std::move(s);
    v.known = known;
    return v;
  }
  /// The empty optional.
  static Value none() {
    Value v;
    v.kind = Kind::None;
    v.known = true;
    return v;
  }
  /// "tensor", "sequence" or "empty optional", for messages.
  const char* kind_name() const {
    return kind == Kind::Tensor ? "tensor" : kind == Kind::Sequence ? "sequence" : "empty optional";
  }
};

/// An imported ONNX model. forward_list(inputs) binds `inputs` by position to the graph
/// inputs that are not initializers (or, when as many tensors as all graph inputs are
/// given, to all graph inputs, overriding initializers: old PyTorch exports list their
/// initializers as inputs) and returns the graph outputs in order. Float initializers are
/// parameters (requires_grad, named after the initializer with '.' replaced by '_');
/// other initializers are buffers. ValueError for a wrong number of inputs; the op
/// errors of the converters otherwise.
class OnnxModel : public nn::Module {
 public:
  explicit OnnxModel(std::shared_ptr<const Graph> graph);
  /// Tensor inputs and outputs only: a graph input or output that is a sequence or an
  /// optional raises NotImplementedError (call forward_values).
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;
  /// Any values (tensors, sequences, empty optionals) in and out, bound as forward_list
  /// binds tensors. Models with sequence or optional graph inputs/outputs run eagerly
  /// this way; tandem::compile (tensors only) cannot call them.
  std::vector<Value> forward_values(const std::vector<Value>& inputs);
  /// One input, one output.
  Tensor forward(const Tensor& input) override;

  /// Graph input names bound at call time (non-initializers), in order.
  const std::vector<std::string>& input_names() const;
  /// Graph output names, in order.
  const std::vector<std::string>& output_names() const;
  /// The opset version of the default ONNX domain the model imports.
  int64_t opset() const;
  /// The ONNX op types the graph uses (sorted, unique).
  std::vector<std::string> op_types() const;
  const Graph& graph() const { return *graph_; }

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<std::pair<std::string, Tensor*>> slots_;  // initializer name -> its registered tensor
  std::vector<std::unique_ptr<Tensor>> storage_;
};

/// Loads `path` (a .onnx ModelProto; external data files are read relative to its
/// folder). Errors: see the file comment.
std::shared_ptr<OnnxModel> load_model(const std::string& path);
/// Loads a model from serialized bytes; `label` names it in errors and `base_dir` is where
/// external data files are looked up ("" refuses external data).
std::shared_ptr<OnnxModel> load_model_from_bytes(const std::string& bytes, const std::string& label,
                                                 const std::string& base_dir = "");
/// Reads a serialized TensorProto (the backend test data's input_N.pb / output_N.pb).
/// RuntimeError for an unreadable or malformed file, ValueError / TypeError as above.
Tensor load_tensor(const std::string& path);
/// Parses a serialized TensorProto held in memory (`label` names it in errors).
Tensor load_tensor_from_bytes(const std::string& bytes, const std::string& label);
/// Writes `t` as a serialized TensorProto (raw_data, little-endian) to `path`, atomically;
/// `name` goes in its name field. RuntimeError when the file cannot be written.
void save_tensor(const std::string& path, const Tensor& t, const std::string& name = "");
/// Exports `module`'s forward on `example_inputs` as an ONNX model (opset 13) at `path`:
/// compiled mode's capture (eval mode, no_grad) records the ops; each becomes ONNX nodes,
/// parameters and buffers become initializers (named as in state_dict), the inputs
/// input_0.. and the outputs output_0.. with the example's shapes (fixed, no dynamic
/// axes). NotImplementedError names a tandem op without an ONNX mapping (the table in
/// export.cpp: elementwise basics, mm/addmm, conv2d, pooling, views, softmax, casts,
/// batch norm in eval mode) or a forward that does not capture as one graph;
/// RuntimeError when the file cannot be written. The module's training flag is restored.
void export_model(const nn::ModulePtr& module, const std::vector<Tensor>& example_inputs, const std::string& path);
/// Sets the most subgraph runs (If branches, Loop / Scan / SequenceMap bodies, nested ones
/// included) one forward call may make before it raises a ValueError naming the node: the
/// bound that keeps a Loop without trip count or ending condition (ONNX allows both) from
/// running forever. Default 2^20 (1,048,576). Returns the previous bound; ValueError for
/// n < 1. Process-wide.
int64_t set_max_subgraph_runs(int64_t n);
/// The ONNX op types (default domain) the importer converts, sorted.
std::vector<std::string> supported_ops();

}  // namespace tandem::onnx
