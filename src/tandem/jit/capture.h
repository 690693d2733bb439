#pragma once
// Capture: runs a function eagerly while an observer on the dispatcher records every op
// into a Graph (one dispatcher, two interpreters). Tensors the function did not create
// and was not given (closure captures) are "lifted": they become extra graph inputs bound
// by reference at every call, so in-place updates to them are seen.
#include <functional>
#include <string>
#include <vector>

#include "tandem/core/capture_state.h"
#include "tandem/ir/graph.h"

namespace tandem::jit {

using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// What a capture produced.
struct Capture {
  ir::Graph graph;                ///< inputs: the call's inputs, then lifted tensors
  std::vector<Tensor> outputs;    ///< the eager results of the capturing call
  std::vector<Tensor> lifted;     ///< tensors bound by reference (after the call inputs)
  bool ok = false;                ///< false: a graph break happened
  std::string break_reason;       ///< why capture stopped
  std::vector<std::string> captured_ops;  ///< op names in order (also when it broke)
  /// State the function read besides tensors (modules it called): the program is valid
  /// while each guard's value() equals its `expected`.
  std::vector<capture_state::StateGuard> state_guards;
  /// Tensors the function made from C++ data (tensor({...}), from_blob): they became
  /// constants copied at capture, cloned on every call (so in-place updates start fresh,
  /// as in eager mode). Descriptions for explain() and `tandem dump`.
  std::vector<std::string> baked_constants;

  // With capture's `with_backward` and outputs that require grad: the graph is a joint
  // graph, the forward's nodes then the backward's (recorded while autograd::grad ran the
  // same backward rules eager mode uses, on the capturing call's tensors).
  bool has_backward = false;
  /// The recorded backward ran a node that received several gradients (a forward op with
  /// several differentiable outputs): see TrainingProgram::backward_without.
  bool backward_joins_gradients = false;
  size_t forward_nodes = 0;           ///< nodes [0, forward_nodes) are the forward's
  size_t forward_inputs = 0;          ///< graph inputs bound at forward time (call + lifted then)
  std::vector<int> grad_output_inputs;  ///< graph input value per differentiable output (its gradient)
  std::vector<bool> output_differentiable;  ///< per output: requires grad (gets a gradient)
  std::vector<int> grad_targets;      ///< forward input positions that require grad
  std::vector<int> grad_values;       ///< per target: value holding its gradient (-1: unused)
  /// The capturing (eager) call's tensor for each value id (undefined for none), for the
  /// eager-vs-compiled checker. A value written in place later holds its final contents.
  std::vector<Tensor> value_tensors;

  // A function that runs backward() (or autograd::grad) itself, and zero_grad and an
  // optimizer step (a whole training step): what a program must do besides its ops.
  bool user_backward = false;   ///< the function ran a backward itself (no joint graph then)
  /// A tensor whose .grad the call rebinds (backward's first accumulation, zero_grad with
  /// set_to_none): after each replay, owner.grad is set to graph output `output` (-1: to
  /// undefined). The owner is bound by reference, like a lifted tensor. `drop_first`: the
  /// program never reads the .grad it finds, so the caller unbinds it before running (as
  /// eager's zero_grad does at the start of a step: its memory is free for the step).
  struct GradBinding {
    Tensor owner;
    int output = -1;
    bool drop_first = false;
  };
  std::vector<GradBinding> grad_bindings;
  size_t num_user_outputs = 0;  ///< graph outputs [0, this) are fn's; the rest feed grad_bindings
  /// Per output of fn: empty, or (an output a backward() inside fn ran from, which freed
  /// its graph) the name of its backward node: a later backward through it raises, as in
  /// eager mode.
  std::vector<std::string> freed_outputs;
  /// Work to do before each replay (an optimizer's learning-rate refresh).
  std::vector<capture_state::PreRun> prerun;
  /// Non-empty: the call cannot be replayed but the next one may be captured (an
  /// optimizer's first step creates its state); ok stays true.
  std::string retry_reason;
};

/// Runs fn(inputs) once, eagerly, recording it. In-place ops whose result dtype differs
/// from self's (x_f16.add_(y_f32)) are recorded as the functional op followed by copy_
/// into self, the dispatcher's "compute wide, then copy". A data-dependent read (item(),
/// data_ptr(), printing) or a dynamic-shape op ends capture with ok == false; the call
/// still completes eagerly and its outputs are returned. Errors raised by fn itself
/// propagate. `with_backward`: when grad mode is on and some outputs require grad, also
/// records their backward (autograd::grad with ones as output gradients, retaining the
/// eager graph, so the caller's own backward still works); an error raised by that
/// backward (a saved tensor modified in place) makes the capture a graph break, so the call
/// runs eagerly and raises where eager mode raises. A function that runs backward() itself
/// (a whole training step: zero_grad, forward, backward, optimizer step) is recorded as it
/// runs, backward ops included; the .grad rebindings are recorded as grad_bindings, with a
/// guard on each such tensor's .grad as the function found it (defined or not; the same
/// tensor when the function read its value).
Capture capture(const TensorFn& fn, const std::vector<Tensor>& inputs, const std::vector<std::string>& input_names = {},
                bool with_backward = false);

}  // namespace tandem::jit
