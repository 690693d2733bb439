#pragma once
// Optimizer base class: parameter groups with per-group hyper-parameters, per-parameter
// state, zero_grad, step and state_dict / load_state_dict (torch.optim.Optimizer, PyTorch
// 1.13 semantics; names as in the PyTorch C++ frontend's torch::optim).
//
// Hyper-parameters are numbers in an `Options` map (name -> double; flags are 0 or 1), so
// that per-group values, learning-rate schedulers and checkpoints treat every optimizer
// alike. Each optimizer has a typed builder (SGDOptions(0.1).momentum(0.9)) that fills
// in all of its defaults.
//
// State dict format (OptimizerStateDict), designed for io/ (named tensors + JSON):
//   optimizer     "SGD", "Adam", ... (load_state_dict checks it)
//   state         nn::NamedTensors "state.<param_index>.<name>", param_index counting the
//                 parameters of all groups in order (PyTorch's packed ids), <name> one of
//                 the optimizer's state names (step, momentum_buffer, exp_avg, exp_avg_sq,
//                 max_exp_avg_sq, square_avg, grad_avg, sum); "step" is a 0-d float32
//                 tensor (PyTorch 1.13's torch.tensor(0.)), the others have the parameter's
//                 shape and dtype. Tensors are detached copies.
//   param_groups  per group: `params` (the indices, consecutive) and `options` (every
//                 hyper-parameter of the group, plus scheduler entries like initial_lr);
//                 PyTorch's `betas` tuple is stored as beta1 / beta2.
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tandem/core/tensor.h"
#include "tandem/nn/module.h"

namespace tandem::optim {

using nn::NamedTensors;

/// Hyper-parameters of a parameter group: name -> value. Flags (nesterov, amsgrad,
/// maximize, centered, fused) are 0 or 1. Ordered by name.
class Options {
 public:
  Options() = default;
  Options(std::initializer_list<std::pair<const std::string, double>> values) : values_(values) {}
  explicit Options(std::map<std::string, double> values) : values_(std::move(values)) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  /// The value of `name`; ValueError when the group has no such option.
  double get(const std::string& name) const;
  double get(const std::string& name, double fallback) const;
  /// get(name) != 0.
  bool flag(const std::string& name) const { return get(name) != 0; }
  Options& set(const std::string& name, double value) {
    values_[name] = value;
    return *this;
  }
  double lr() const { return get("lr"); }
  Options& lr(double v) { return set("lr", v); }
  const std::map<std::string, double>& values() const { return values_; }
  bool operator==(const Options& o) const { return values_ == o.values_; }

 private:
  std::map<std::string, double> values_;
};

/// A set of parameters sharing hyper-parameters. Options given here override the
/// optimizer's defaults; the missing ones are filled from them by add_param_group.
struct ParamGroup {
  ParamGroup() = default;
  ParamGroup(std::vector<Tensor> params_, Options options_ = {})
      : params(std::move(params_)), options(std::move(options_)) {}
  std::vector<Tensor> params;
  Options options;
  /// options.lr() as a 0-d float64 tensor, made by add_param_group and refreshed by each
  /// step(): the fused update ops read the learning rate from a tensor, so a captured step
  /// reads the current value instead of baking a constant into the program.
  Tensor lr_tensor;
  /// Updates of the current step that read lr_tensor (detail::lr_tensor counts them): when
  /// a captured step updated a parameter without it, the rate is a constant of the program
  /// and becomes part of its guard.
  int lr_tensor_reads = 0;
};

/// Per-parameter state: name -> tensor (see the state names above).
using ParamState = std::map<std::string, Tensor>;

/// One group in a state dict.
struct GroupStateDict {
  std::vector<int64_t> params;
  std::map<std::string, double> options;
};

/// Serializable optimizer state (format in the header comment).
struct OptimizerStateDict {
  std::string optimizer;
  NamedTensors state;
  std::vector<GroupStateDict> param_groups;
};

/// Closure re-evaluating the model for step(closure): returns the loss.
using LossClosure = std::function<Tensor()>;

/// Base class of the optimizers. Not copyable. Parameters are held by handle: the
/// optimizer updates the caller's tensors in place.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// "SGD", "Adam", ...
  const std::string& name() const { return name_; }
  /// The defaults every group starts from (the options given to the constructor).
  const Options& defaults() const { return defaults_; }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

  /// Adds a group (torch add_param_group): missing options come from defaults().
  /// ValueError: empty or undefined parameters, a non-leaf or non-floating parameter, a
  /// parameter already in this or another group, an unknown option name or a bad value
  /// (the same checks as the constructor, applied to every group).
  void add_param_group(ParamGroup group);

  /// Clears the gradients of all parameters: undefined when set_to_none (the default, as
  /// PyTorch >= 2.0 and nn::Module::zero_grad), else zero-filled in place (detached).
  void zero_grad(bool set_to_none = true);

  /// One update of every parameter that has a gradient (parameters without .grad are
  /// skipped, as PyTorch). Runs under NoGradGuard; parameters and state are written in
  /// place and their version counters bumped. With a closure, first evaluates it with
  /// grad mode on and returns its loss (undefined tensor without closure).
  Tensor step(const LossClosure& closure = nullptr);

  /// The state of parameter `param` (empty before its first step). ValueError if the
  /// tensor is not one of this optimizer's parameters.
  const ParamState& state(const Tensor& param) const;

  /// Snapshot of the state and the groups' options (detached copies of the tensors).
  OptimizerStateDict state_dict() const;
  /// Loads a snapshot taken from an optimizer of the same kind with the same group
  /// sizes; tensors are copied (cast to the parameter's dtype, except "step"), options
  /// replace the groups' (parameters are kept; missing options come from defaults()).
  /// ValueError: other optimizer kind, different number of groups or group sizes,
  /// malformed key, parameter index out of range, unknown state name, bad option value;
  /// ShapeError: a state tensor whose shape differs from its parameter's. On error the
  /// optimizer is unchanged.
  void load_state_dict(const OptimizerStateDict& sd);

 protected:
  Optimizer(std::string name, Options defaults);
  /// Adds the constructor's groups (ValueError "optimizer got an empty parameter list"
  /// when there are none). Call at the end of the derived constructor.
  void init_groups(std::vector<ParamGroup> groups);
  /// Raises ValueError for a bad hyper-parameter value in `o` (a complete group).
  virtual void validate(const Options& o) const = 0;
  /// Names of the per-parameter state entries this optimizer may hold.
  virtual std::vector<std::string> state_names() const = 0;
  /// Called once per group added (Adagrad creates its state eagerly, as PyTorch).
  virtual void on_group_added(ParamGroup& group) {}
  /// Updates the parameters of one group (grad mode is off).
  virtual void step_group(ParamGroup& group) = 0;
  /// The state of `param`, created empty on first use.
  ParamState& mutable_state(const Tensor& param) { return state_[param.impl()]; }

 private:
  size_t num_state_tensors() const;
  /// Hash of the options a step bakes in (all but lr) and the identities of the tensors
  /// it binds (parameters, lr tensors, state): a captured step's guard.
  uint64_t capture_key() const;
  /// True when the last captured step baked a learning rate into its program (an update
  /// that read options.lr() as a number: RMSprop, Adagrad, unfused SGD/Adam): then the
  /// rates are part of capture_key(), so changing one recompiles instead of replaying the
  /// old rate.
  bool lr_baked_ = false;
  /// Inside a capture: notes the guard and the pre-run learning-rate refresh.
  void note_capture();
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // guards outlive the optimizer

  std::string name_;
  Options defaults_;
  std::vector<ParamGroup> groups_;
  // Keyed by the parameter's TensorImpl (groups hold the parameters alive); only looked
  // up (or counted), never iterated in order, so ordering comes from the groups.
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

/// Option names a learning-rate scheduler may add to a group (accepted by every
/// optimizer besides its own hyper-parameters).
const std::vector<std::string>& scheduler_option_names();

namespace detail {
/// ValueError "[<opt>] Invalid <what> value: <v>" unless ok.
void check_option(bool ok, const std::string& opt, const char* what, double v);
/// ValueError unless o.get(name) is 0 or 1.
void check_flag(const Options& o, const std::string& opt, const char* name);
/// True when the fused loop may run: float32/float64 `param`, contiguous, and every other
/// defined tensor contiguous with the same dtype and numel.
bool fusable(const Tensor& param, std::initializer_list<Tensor> others);
/// group.lr_tensor holding group.options.lr(): refreshed by a plain store, not an op, so a
/// captured step reads the current rate (its caller refreshes it before each replay).
/// Made by add_param_group; one made later (inside a captured call) makes the capture retry.
const Tensor& lr_tensor(ParamGroup& group);
/// Stores group.options.lr() into group.lr_tensor (made when undefined), without an op.
void refresh_lr(ParamGroup& group);
}  // namespace detail

}  // namespace tandem::optim
