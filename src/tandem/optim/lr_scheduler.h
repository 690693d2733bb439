#pragma once
// Learning-rate schedulers (torch.optim.lr_scheduler, PyTorch 1.13): StepLR, MultiStepLR,
// ExponentialLR, CosineAnnealingLR, LinearLR, OneCycleLR and SequentialLR.
//
// As in PyTorch, constructing a scheduler records each group's "initial_lr" (kept if
// already there) and performs the initial step (last_epoch becomes 0); call step() after
// each optimizer.step(). step() uses the recursive ("chainable") formulas of get_lr(),
// so a scheduler composes with manual changes of the groups' lr exactly as PyTorch's.
// The optimizer must outlive its schedulers (they keep a reference).
//
// State dict (SchedulerStateDict): the scheduler kind, every number as a list of doubles
// ("last_epoch", "step_count", "base_lrs", "last_lr" and the hyper-parameters), and the
// children's states for SequentialLR — JSON-able for io/.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/optim/optimizer.h"

namespace tandem::optim {

/// Serializable scheduler state (see the header comment).
struct SchedulerStateDict {
  std::string scheduler;
  std::map<std::string, std::vector<double>> values;
  std::vector<SchedulerStateDict> children;
};

/// Base class (torch's _LRScheduler).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  const std::string& name() const { return name_; }
  /// Advances one epoch: last_epoch += 1 and every group's lr is set to get_lr().
  virtual void step();
  /// Jumps to `epoch` (PyTorch's deprecated step(epoch)): uses the closed form where the
  /// scheduler has one (all here but OneCycleLR). SequentialLR uses it at milestones.
  virtual void step(int64_t epoch);
  /// The lrs set by the last step, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  virtual SchedulerStateDict state_dict() const;
  /// Restores a state from the same kind of scheduler on an optimizer with as many groups.
  /// ValueError otherwise (kind, group count, missing entries). Hyper-parameters are
  /// restored too (as PyTorch's __dict__ update).
  virtual void load_state_dict(const SchedulerStateDict& sd);

 protected:
  /// last_epoch -1 starts fresh; another value resumes and needs "initial_lr" in every
  /// group (ValueError otherwise). Derived constructors call initial_step() last.
  LRScheduler(std::string name, Optimizer& optimizer, int64_t last_epoch);
  /// PyTorch's _initial_step: step count 0, then one step().
  void initial_step();
  /// Recursive formula for the new lrs at last_epoch_ (PyTorch's get_lr()).
  virtual std::vector<double> get_lr() = 0;
  /// Closed form at last_epoch_, when the scheduler has one.
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }
  /// Hyper-parameters for the state dict; load gets them back (entries validated).
  virtual void save_extra(std::map<std::string, std::vector<double>>& v) const {}
  virtual void load_extra(const std::map<std::string, std::vector<double>>& v) {}
  void apply_lrs(const std::vector<double>& lrs);
  std::vector<double> group_lrs() const;

  std::string name_;
  Optimizer* optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  std::vector<double> last_lr_;

  friend class SequentialLR;
};

/// lr *= gamma every step_size epochs (torch StepLR). ValueError: step_size < 1.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(std::map<std::string, std::vector<double>>& v) const override;
  void load_extra(const std::map<std::string, std::vector<double>>& v) override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// lr *= gamma at each milestone epoch (a milestone listed k times multiplies by gamma^k,
/// as PyTorch's Counter) (torch MultiStepLR).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(std::map<std::string, std::vector<double>>& v) const override;
  void load_extra(const std::map<std::string, std::vector<double>>& v) override;

 private:
  std::vector<int64_t> milestones_;  // sorted, with repeats
  double gamma_;
};

/// lr *= gamma every epoch (torch ExponentialLR).
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(std::map<std::string, std::vector<double>>& v) const override;
  void load_extra(const std::map<std::string, std::vector<double>>& v) override;

 private:
  double gamma_;
};

/// Cosine annealing from the base lr to eta_min over T_max epochs, then back up (the
/// curve continues periodically, as PyTorch) (torch CosineAnnealingLR).
/// ValueError: T_max < 1.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(std::map<std::string, std::vector<double>>& v) const override;
  void load_extra(const std::map<std::string, std::vector<double>>& v) override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// Multiplies the lr by a factor going linearly from start_factor to end_factor over
/// total_iters epochs (torch LinearLR). ValueError: start_factor outside (0, 1] (PyTorch
/// 1.13 accepts 0 and then divides by zero), end_factor outside [0, 1], total_iters < 1.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5,
           int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(std::map<std::string, std::vector<double>>& v) const override;
  void load_extra(const std::map<std::string, std::vector<double>>& v) override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// Options of OneCycleLR (PyTorch defaults). max_lrs: one value for all groups or one
/// per group. total_steps, or epochs and steps_per_epoch, must be given.
struct OneCycleOptions {
  std::vector<double> max_lrs;
  std::optional<int64_t> total_steps;
  std::optional<int64_t> epochs;
  std::optional<int64_t> steps_per_epoch;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  ///< "cos" or "linear"
  bool cycle_momentum = true;
  std::vector<double> base_momentums = {0.85};  ///< one for all groups or one per group
  std::vector<double> max_momentums = {0.95};
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

/// The 1cycle policy (torch OneCycleLR): lr rises from max_lr / div_factor to max_lr over
/// pct_start of the steps, then anneals to initial_lr / final_div_factor (three_phase:
/// back to initial_lr first). With cycle_momentum the group's "momentum" (or "beta1")
/// cycles inversely between max_momentum and base_momentum. Sets the groups'
/// initial_lr/max_lr/min_lr (and max_momentum/base_momentum) options.
/// ValueError: no total_steps nor epochs*steps_per_epoch, non-positive counts, pct_start
/// outside [0, 1], unknown anneal_strategy, wrong number of per-group values,
/// cycle_momentum on an optimizer without momentum/beta1, stepping past total_steps.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleOptions& options, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  void save_extra(std::map<std::string, std::vector<double>>& v) const override;
  void load_extra(const std::map<std::string, std::vector<double>>& v) override;

 private:
  struct Phase {
    double end_step;
    const char* start_lr;
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  void build_phases();
  double anneal(double start, double end, double pct) const;
  int64_t total_steps_ = 0;
  double pct_start_ = 0.3;
  bool linear_ = false;
  bool cycle_momentum_ = true;
  bool use_beta1_ = false;
  bool three_phase_ = false;
  std::vector<Phase> phases_;
};

/// Runs schedulers one after another, switching at the milestones (torch SequentialLR);
/// e.g. LinearLR warm-up then CosineAnnealingLR. At a milestone the next scheduler starts
/// at its epoch 0 (closed form). ValueError: no schedulers, a scheduler of another
/// optimizer, milestones.size() != schedulers.size() - 1.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  void step() override;
  /// NotImplementedError (PyTorch's SequentialLR has no step(epoch) either).
  void step(int64_t epoch) override;
  SchedulerStateDict state_dict() const override;
  void load_state_dict(const SchedulerStateDict& sd) override;
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace tandem::optim
