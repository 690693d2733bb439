#pragma once
// tandem::compile: the compiled way to run a function (DESIGN.md "The life of a compiled
// call"). The first call with a new input signature captures the function (running it
// eagerly), optimises the graph, plans its memory and builds an executor; later calls
// with the same signature run the executor. Calls that cannot be compiled run eagerly.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/jit/capture.h"
#include "tandem/jit/training.h"
#include "tandem/runtime/executor.h"

namespace tandem::jit {

struct CheckReport;  // jit/check.h

/// Options of a compiled function.
struct CompileOptions {
  /// Signatures compiled before the function falls back to eager for good (with a
  /// one-time warning naming the input that kept changing).
  int recompile_limit = 8;
  /// Raise (GraphBreak) instead of running eagerly when capture breaks.
  bool strict = false;
  /// Passes to disable by name (see passes::PassManager).
  std::vector<std::string> disabled_passes;
  /// Record per-node times in the executor.
  bool profile = false;
  /// Split training programs by a minimum cut (jit/partition.h): the backward program may
  /// run cheap pure ops (pointwise, views, casts) again instead of the forward saving their
  /// results, when that saves bytes. false: the forward saves every value the backward
  /// reads. The numbers are the same either way.
  bool recompute = true;
  /// Bytes the program may use at its peak (0: no limit): the values it makes, beyond the
  /// inputs the caller holds (parameters, optimizer state, the batch). Values alive across
  /// the peak are recomputed or offloaded to a spill file until the estimate fits
  /// (runtime/memory_budget.h); the numbers stay those of eager mode. Applies to programs
  /// that run whole: a compiled training step (the function calls backward() and the
  /// optimizer) and inference; a call that would split into forward and backward programs
  /// (a compiled module trained by the caller's backward()) raises NotImplementedError.
  /// OutOfMemoryError names the smallest peak reachable when the budget is below it.
  int64_t memory_budget = 0;
};

/// Everything a compiled program depends on besides tensor values (the guards).
struct Signature {
  struct InputSig {
    DType dtype;
    DimVector sizes;
    DimVector strides;
    bool requires_grad;
    bool wrapped_number = false;  ///< a C++ number argument (compile_with_scalars)
  };
  std::vector<InputSig> inputs;
  std::vector<int> alias_groups;  ///< inputs sharing storage get the same group number
  /// Two inputs share a storage but are different tensors (views of one buffer): such a
  /// call runs eagerly (the graph would not know that writes through one are seen
  /// through the other). The same tensor passed twice is fine.
  bool distinct_views = false;
  bool grad_enabled = true;
  bool training = false;           ///< module training flag (set by callers that have one)
  /// Autocast state of the calling thread (autocast::state_key(): off, bfloat16, float16):
  /// the casts are graph nodes, so entering or leaving autocast recompiles.
  uint64_t autocast = 0;
  /// Caller state (compiled modules: hooks version, submodule training flags, parameter
  /// and buffer identities); compared element by element.
  std::vector<uint64_t> extra;
  /// For messages only (not compared): names of the inputs ("x", "fc1.weight") and of
  /// the extra entries ("forward hooks", "parameter 'fc1.weight'"). Empty: "input 3".
  std::vector<std::string> input_names;
  std::vector<std::string> extra_names;
  bool operator==(const Signature& o) const;
  /// Describes the first difference from `o` to this signature, naming the input or the
  /// state that changed: "input 'x' sizes [2, 3] -> [4, 3]", "training flag true -> false".
  std::string diff(const Signature& o) const;
  /// Human-readable guard list (one line per guard), as explain() prints it.
  std::vector<std::string> describe() const;
};

/// What a caller with state (a compiled module) adds to a call: the training flag, extra
/// guard values, and names for messages. Pointers may be null; they must outlive the call.
struct CallState {
  bool training = false;
  const std::vector<uint64_t>* extra = nullptr;            ///< compared (Signature::extra)
  const std::vector<std::string>* extra_names = nullptr;   ///< messages only
  const std::vector<std::string>* input_names = nullptr;   ///< messages and graph input names
};

/// Fills `s` with the signature of a call (reusing its buffers); names are left empty.
/// ValueError for an undefined input.
void signature_of(const std::vector<Tensor>& inputs, const CallState& state, Signature& s);

/// Result of explain(): what capture saw and what the program would do.
struct Explanation {
  bool compiled = false;
  std::string break_reason;
  std::vector<std::string> captured_ops;
  std::string graph_text;           ///< after passes
  std::vector<std::string> guards;  ///< human-readable guard list
  int64_t arena_bytes = 0;
  int64_t lower_bound_bytes = 0;
  std::string to_string() const;
};

/// A compiled callable with a cache of programs per signature. Not copyable; not
/// thread-safe (programs own their arenas).
class CompiledFunction {
 public:
  CompiledFunction(TensorFn fn, CompileOptions opts = {});
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;

  /// Calls the function on `inputs`.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  /// Same, with a caller-supplied part of the signature (used by compiled modules, which
  /// pass their parameters and buffers as inputs after the user's and guard on the
  /// training flag, hooks and parameter identities through `state`).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const CallState& state);
  /// Shorthand: a training flag and one opaque state hash.
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training, uint64_t extra);

  const CompileOptions& options() const { return opts_; }
  /// Compiled programs in the cache, eager fallbacks taken, captures run.
  int num_programs() const { return static_cast<int>(cache_.size()); }
  int64_t eager_calls() const { return eager_calls_; }
  int64_t compiled_calls() const { return compiled_calls_; }
  int captures() const { return captures_; }
  /// Captures that could not be kept but let the next call capture again (an optimizer's
  /// first step inside the function creates its state); each ran eagerly.
  int retries() const { return retries_; }
  /// Warnings issued so far (one-time notices: recompile limit, graph break, autograd).
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// Why each capture after the first happened: what differed from the signature of the
  /// call before it ("input 0 sizes [2] -> [4]", "training flag true -> false").
  const std::vector<std::string>& recompile_reasons() const { return recompile_reasons_; }
  /// True once the recompile limit was hit (every later call runs eagerly).
  bool gave_up() const { return given_up_; }
  /// Tensors the program used by the last call reads without receiving them (lifted:
  /// bound by reference at capture); empty when there is none.
  const std::vector<Tensor>& last_lifted() const;
  /// Adds a one-time notice (once per key) to warnings() and prints it to stderr.
  void notice_once(const std::string& key, const std::string& msg) { warn_once(key, msg); }
  /// The executor used by the last compiled call (nullptr if none); for a call that
  /// needed gradients, its forward program.
  runtime::Executor* last_executor() const { return last_; }
  /// Compares the program the previous call used (a cached signature) with eager mode on
  /// copies of `inputs`, node by node (see check_program in jit/check.h): what the
  /// TANDEM_CHECK_COMPILED switch does on every call. Not compiled: report says why. For a
  /// training step (the function runs backward() itself) this is check_step: the call is
  /// made once eagerly, the state put back, and once through the program, which leaves its
  /// update (one step is taken).
  CheckReport check_last(const std::vector<Tensor>& inputs);
  /// The programs of the last compiled call that needed gradients (nullptr if none).
  const TrainingProgram* last_training_program() const { return last_train_; }

 private:
  struct Entry {
    Signature sig;
    std::unique_ptr<runtime::Executor> exec;  // null: this signature runs eagerly (break)
    std::vector<Tensor> lifted;
    std::string break_reason;
    std::vector<capture_state::StateGuard> state_guards;  // modules the capture called
    std::shared_ptr<TrainingProgram> train;  // set: a forward and a backward program
    std::vector<bool> lifted_requires_grad;  // at capture (part of a training program's guard)
    std::vector<std::string> captured_ops;   // for the eager-vs-compiled checker
    // A whole training step (the function ran backward itself): what each replay does
    // besides the program's ops (see Capture).
    bool user_backward = false;
    size_t num_user_outputs = 0;
    std::vector<Capture::GradBinding> grad_bindings;
    std::vector<std::string> freed_outputs;
    std::vector<capture_state::PreRun> prerun;
  };
  // Runs e's program on `all` (inputs then lifted) and does its effects beyond the ops.
  std::vector<Tensor> replay(Entry& e, std::vector<Tensor>&& all);
  // check_step (jit/check.h) for a training step's entry; `outs` gets the program's results.
  CheckReport check_step_entry(Entry& e, const std::vector<Tensor>& inputs, std::vector<Tensor>& outs);
  void warn_once(const std::string& key, const std::string& msg);
  std::vector<Tensor> run_eager(const std::vector<Tensor>& inputs);

  TensorFn fn_;
  CompileOptions opts_;
  std::vector<Entry> cache_;
  Signature sig_;                 // scratch: the current call's signature (reused buffers)
  std::optional<Signature> last_sig_;  // signature of the previous call (for messages)
  int last_entry_ = -1;           // cache entry the previous call used (-1: none / last_sig_)
  bool given_up_ = false;
  std::vector<std::string> recompile_reasons_;
  int captures_ = 0;
  int retries_ = 0;
  int64_t eager_calls_ = 0;
  int64_t compiled_calls_ = 0;
  std::vector<std::string> warnings_;
  std::vector<std::string> warned_keys_;
  runtime::Executor* last_ = nullptr;
  const TrainingProgram* last_train_ = nullptr;
};

/// Compiles `fn` (see CompiledFunction).
std::shared_ptr<CompiledFunction> compile(TensorFn fn, CompileOptions opts = {});

/// A function of tensors and C++ numbers. Each number reaches fn as a 0-d tensor flagged
/// as a wrapped number (float64 for floating values, int64 for integers, bool), so that
/// `x * s[0]` promotes exactly as `x * 2.5` would (a float16 x stays float16).
using ScalarTensorFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& tensors, const std::vector<Tensor>& scalars)>;

/// A compiled function whose C++ number arguments are program inputs: a new value is
/// bound at each call instead of being baked in at capture (a lambda capturing a number
/// by reference, or computing one, bakes the value of the capturing call into the program
/// as a constant; explain() lists such constants). Changing a number's kind (floating,
/// integral, bool) recompiles; changing its value does not. Numbers used as attributes
/// (clamp's bounds, a reduction's dims) cannot be inputs: pass them as tensors or accept
/// the recompile-free constant.
class ScalarCompiledFunction {
 public:
  ScalarCompiledFunction(ScalarTensorFn fn, CompileOptions opts = {});
  /// Calls fn(tensors, scalars) compiled.
  std::vector<Tensor> operator()(const std::vector<Tensor>& tensors, const std::vector<Scalar>& scalars);
  /// Counters, warnings and the last executor.
  CompiledFunction& function() { return *fn_; }

 private:
  std::shared_ptr<size_t> num_tensors_;  // shared with the wrapped lambda
  std::unique_ptr<CompiledFunction> fn_;
};

/// Compiles a function of tensors and C++ numbers (see ScalarCompiledFunction).
std::shared_ptr<ScalarCompiledFunction> compile_with_scalars(ScalarTensorFn fn, CompileOptions opts = {});
/// Captures fn(inputs) and reports ops, breaks, guards and planned memory (no caching).
Explanation explain(const TensorFn& fn, const std::vector<Tensor>& inputs, const CompileOptions& opts = {},
                    const CallState& state = {});

/// Builds the optimised program for a successful capture (shared by compile and explain).
std::unique_ptr<runtime::Executor> build_program(Capture& c, const CompileOptions& opts);

}  // namespace tandem::jit

namespace tandem {
using jit::compile;
using jit::compile_with_scalars;
using jit::explain;
}  // namespace tandem
