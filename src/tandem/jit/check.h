#pragma once
// The eager-vs-compiled checker: runs a call eagerly and compiled on copies of the inputs
// and, if anything differs, names the first node (op, value, dtype and sizes, how the
// bytes differ), in the forward and, for calls that need gradients, in the backward.
// TANDEM_CHECK_COMPILED=1 in the environment checks every compiled call of every
// CompiledFunction this way and raises RuntimeError at the first difference.
#include <functional>
#include <string>
#include <vector>

#include "tandem/jit/compile.h"

namespace tandem::jit {

/// What check_compiled found.
struct CheckReport {
  bool compiled = false;       ///< false: the call does not compile (break_reason says why)
  bool equal = true;           ///< every compared value and every output bitwise equal
  std::string break_reason;
  std::string first_difference;  ///< "" when equal: "forward node 7 (mul) %12 float32[4, 3]: ..."
  int values_compared = 0;
  std::string to_string() const;
};

/// Captures fn(inputs) (running it eagerly on copies of the inputs; a call that needs
/// gradients also runs its backward with output gradients of ones), builds the programs
/// as compile() does, runs them on other copies and compares every value the programs
/// compute that the eager run also had (values written in place later are compared
/// through their final state only), then the outputs and the gradients. Tensors fn reads
/// by reference (parameters, running statistics) are shared: state fn updates in place
/// is updated by both runs. Errors raised by fn propagate.
CheckReport check_compiled(const TensorFn& fn, const std::vector<Tensor>& inputs, const CompileOptions& opts = {});

/// The same for a cached program: compares `program` (built for an earlier call) node by
/// node with a fresh capture of fn(inputs), aligned by value id (valid while both captures
/// recorded the same op sequence; otherwise only outputs are compared). This is what the
/// TANDEM_CHECK_COMPILED switch runs; it catches values baked in at capture (a C++ number
/// captured by reference that changed since).
/// `origin` maps the program's value ids to its capture's (a training program's forward,
/// TrainingProgram::forward_origin; nullptr: the same ids); `program_ops` is that
/// capture's op sequence (Capture::captured_ops).
CheckReport check_program(const TensorFn& fn, const std::vector<Tensor>& inputs, runtime::Executor& program,
                          const std::vector<Tensor>& lifted, const std::vector<int>* origin,
                          const std::vector<std::string>& program_ops);

/// The check for a whole training step (a compiled function that runs backward() itself,
/// whose program updates parameters, optimizer state and .grad in place): runs `fn` eagerly
/// on copies of `inputs`, keeps its results, the contents of every tensor in `state` (the
/// tensors the program binds by reference: parameters, optimizer state) and the .grad of
/// every tensor in `grad_owners`; puts those contents, .grad bindings and the default
/// generator back as they were; then performs the call through `run_program` and compares
/// results, state and .grad bitwise, naming the first difference ("state tensor 3
/// float32[10, 128]: ..."). The step is thus taken once, by the program: its state is what
/// the program left. `program_outputs` receives the program's results. Errors raised by
/// either run propagate.
CheckReport check_step(const TensorFn& fn, const std::vector<Tensor>& inputs,
                       const std::function<std::vector<Tensor>()>& run_program, const std::vector<Tensor>& state,
                       const std::vector<Tensor>& grad_owners, std::vector<Tensor>& program_outputs);

/// Whether TANDEM_CHECK_COMPILED is set (read once).
bool check_every_compiled_call();

}  // namespace tandem::jit
