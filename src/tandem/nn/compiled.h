#pragma once
// Compiled modules: tandem::compile(module) runs module->forward through compiled programs
// (PyTorch's torch.compile(module); MindSpore's graph-mode Cell; Paddle's to_static).
//
// Parameters and buffers are program inputs bound at every call (after the caller's
// inputs), never constants baked into the program, so optimizer steps, load_state_dict and
// any in-place update are seen without recompiling. Guards (a change recompiles, up to
// CompileOptions::recompile_limit): the inputs' sizes/dtypes/strides/requires_grad and
// storage sharing, grad mode, the training flag of the module and of every submodule,
// forward (pre-)hooks added or removed anywhere in the tree (Module::hooks_version), the
// set of parameters and buffers (added, removed, undefined), and the identity of each
// parameter and buffer tensor (a tensor replaced by another one recompiles).
//
// Calls with grad mode on where a parameter or input requires grad run eagerly (with a
// one-time notice): graph autodiff and split forward/backward programs for compiled
// training are issue 7. Wrap evaluation in NoGradGuard, as PyTorch eval loops use
// torch.no_grad().
#include <memory>
#include <string>
#include <vector>

#include "tandem/jit/compile.h"
#include "tandem/nn/module.h"

namespace tandem::nn {

/// A module with a compiled forward. Not copyable; not thread-safe (programs own arenas).
/// Holds the module by shared pointer, so the module lives as long as this.
class CompiledModule {
 public:
  /// Wraps `module` (ValueError if null). Nothing is captured until the first call.
  explicit CompiledModule(ModulePtr module, jit::CompileOptions opts = {});
  CompiledModule(const CompiledModule&) = delete;
  CompiledModule& operator=(const CompiledModule&) = delete;

  /// module(input) (forward with hooks), compiled. Same result as the eager call: bitwise
  /// where the same kernels run (all of tandem's ops do).
  Tensor operator()(const Tensor& input);
  /// (*module)(inputs) (forward_list with hooks), compiled (modules with several inputs or
  /// outputs).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  Module& module() const { return *module_; }
  const ModulePtr& module_ptr() const { return module_; }
  /// The underlying compiled function: counters (captures(), compiled_calls(),
  /// eager_calls()), warnings(), recompile_reasons(), last_executor().
  jit::CompiledFunction& function() { return *fn_; }
  const jit::CompiledFunction& function() const { return *fn_; }
  /// The executor of the last compiled call (its graph, memory plan and profile), or
  /// nullptr before the first compiled call.
  runtime::Executor* last_executor() const { return fn_->last_executor(); }
  /// "arena N bytes, lower bound M bytes (r x); outputs K bytes per call" of the last
  /// compiled program, or a sentence saying there is none yet.
  std::string memory_summary() const;
  /// Captures module(inputs) and reports captured ops, graph breaks, guards (with
  /// parameter names) and the planned memory, without caching anything.
  jit::Explanation explain(const std::vector<Tensor>& inputs);

 private:
  void gather(const std::vector<Tensor>& inputs);
  void walk(const Module& m, uint64_t& train_bits, int& nmod);
  void rebuild_names();

  ModulePtr module_;
  std::unique_ptr<jit::CompiledFunction> fn_;
  size_t num_user_ = 0;            // inputs of the current call that are the caller's
  std::vector<Tensor> args_;       // user inputs, then parameters, then buffers
  std::vector<Tensor> buffers_tmp_;
  std::vector<uint64_t> extra_;    // guard values (see rebuild_names for their meaning)
  std::vector<std::string> extra_names_, input_names_;
  std::vector<size_t> shape_key_;  // (num user inputs, modules, parameters, buffers) names were built for
};

/// Compiles a module's forward (see CompiledModule). The PyTorch spelling is
/// torch.compile(module); tandem::compile(fn) compiles a plain function.
std::shared_ptr<CompiledModule> compile(ModulePtr module, jit::CompileOptions opts = {});

}  // namespace tandem::nn

namespace tandem {
using nn::compile;
}  // namespace tandem
