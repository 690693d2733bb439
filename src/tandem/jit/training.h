#pragma once
// Compiled training (DESIGN.md "The life of a compiled call", step 4, and principle 3: a
// compiled function is an op too). A capture that recorded its backward (a joint graph) is
// split into a forward program (the user's outputs plus the values the backward needs)
// and a backward program (those saved values plus the output gradients -> gradients of
// the inputs and parameters that require grad). A call runs the forward program and puts
// one node on the eager tape; its backward runs the backward program. So compiled and
// eager code mix freely in one model and one backward().
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tandem/jit/capture.h"
#include "tandem/runtime/executor.h"

namespace tandem::jit {

struct CompileOptions;

/// The two programs of a call that needs gradients, and how their values connect.
struct TrainingProgram {
  /// Inputs: the call's inputs, then the lifted tensors. Outputs: the user's outputs,
  /// then the saved values.
  std::unique_ptr<runtime::Executor> forward;
  /// Inputs: the saved values, then one gradient per differentiable output. Outputs: one
  /// gradient per target with one (`targets`, `target_has_grad`).
  std::unique_ptr<runtime::Executor> backward;
  size_t num_outputs = 0;               ///< the user's outputs
  size_t num_saved = 0;                 ///< saved values after them
  std::vector<bool> output_differentiable;  ///< per user output
  std::vector<int> targets;             ///< forward input position of each gradient
  std::vector<bool> target_has_grad;    ///< false: unused (the gradient is undefined)
  int64_t saved_bytes = 0;              ///< bytes of the saved values at capture
  /// What the forward would save without recomputation (every forward value the backward
  /// reads): saved_bytes <= naive_saved_bytes.
  int64_t naive_saved_bytes = 0;
  /// Ops of the forward nodes the backward program runs again (jit/partition.h), in order.
  std::vector<std::string> recomputed_ops;
  /// Value id in the joint (captured) graph of each value of the forward / backward
  /// program (-1: made by a pass), for the eager-vs-compiled checker.
  std::vector<int> forward_origin, backward_origin;
  /// Both programs as text, saved values marked ("# saved").
  std::string to_text() const;

  /// The backward before the pass manager ran (same inputs and outputs as `backward`):
  /// what backward_without() prunes.
  ir::Graph backward_unoptimised;
  /// A backward program for a call whose caller gave no gradient to some differentiable
  /// outputs (`present`: one flag per gradient input of `backward`; some false), as eager
  /// mode's engine would run it: nothing flows from a missing gradient (no zeros), a
  /// gradient sum with a missing term is the other term, and targets that only missing
  /// gradients reach get none. Made on first use and kept. Its inputs: the saved values,
  /// then the present gradients; `has_grad`: per target with a gradient in `backward`,
  /// whether this program returns one. NotImplementedError (naming CompiledFunctionBackward)
  /// when a missing gradient meets an op other than such a sum (say a concatenation of two
  /// outputs' gradients), where eager mode's result cannot be derived from the recording.
  struct PartialBackward {
    std::unique_ptr<runtime::Executor> program;
    std::vector<bool> has_grad;
  };
  const PartialBackward& backward_without(const std::vector<bool>& present);
  /// The options the programs were compiled with (for programs made later).
  std::shared_ptr<const CompileOptions> options;
  /// Capture::backward_joins_gradients: backward_without raises (a node's rule decides
  /// what a missing gradient of one of its outputs means).
  bool backward_joins_gradients = false;

 private:
  std::mutex partial_mu_;
  std::vector<std::pair<std::vector<bool>, std::unique_ptr<PartialBackward>>> partial_;
};

/// Splits a capture with a recorded backward into a TrainingProgram (each program
/// optimised by the pass manager and memory-planned on its own). The forward program's
/// inputs are the capture's call inputs and lifted tensors, in the capture's order.
std::shared_ptr<TrainingProgram> build_training_program(Capture& c, const CompileOptions& opts);

/// Runs `p` on `inputs` (the call's inputs, then the lifted tensors): the forward
/// program, then, when grad mode is on and some input requiring grad got a target, one
/// node on the tape ("CompiledFunctionBackward") holding the saved values (version
/// checked: an in-place change before backward raises, as in eager mode). Its backward
/// runs the backward program; with create_graph it raises NotImplementedError (double
/// backward through a compiled program is not supported: call the function eagerly).
std::vector<Tensor> run_training_program(const std::shared_ptr<TrainingProgram>& p, const std::vector<Tensor>& inputs);

/// `out` with the history of a result whose graph a backward() already freed: one node
/// named `node_name` (the eager result's grad_fn) whose backward raises eager mode's
/// RuntimeError ("trying to backward through the graph a second time ..."). A compiled
/// training step returns its loss so.
Tensor with_freed_history(const Tensor& out, const std::string& node_name);

}  // namespace tandem::jit
