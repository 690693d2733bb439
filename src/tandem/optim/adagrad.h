#pragma once
// Adagrad (torch.optim.Adagrad, PyTorch 1.13).
#include "tandem/optim/optimizer.h"

namespace tandem::optim {

/// Options of Adagrad (PyTorch defaults): lr 1e-2, lr_decay 0, weight_decay 0,
/// initial_accumulator_value 0, eps 1e-10, maximize false.
struct AdagradOptions : Options {
  explicit AdagradOptions(double lr = 1e-2);
  using Options::lr;
  AdagradOptions& lr(double v) { set("lr", v); return *this; }
  AdagradOptions& lr_decay(double v) { set("lr_decay", v); return *this; }
  AdagradOptions& weight_decay(double v) { set("weight_decay", v); return *this; }
  AdagradOptions& initial_accumulator_value(double v) { set("initial_accumulator_value", v); return *this; }
  AdagradOptions& eps(double v) { set("eps", v); return *this; }
  AdagradOptions& maximize(bool v) { set("maximize", v); return *this; }
};

/// Adagrad: step t += 1; g = grad (negated when maximize) + weight_decay * param;
/// clr = lr / (1 + (t - 1) lr_decay); sum += g^2; param -= clr g / (sqrt(sum) + eps).
/// State: "step" (0-d float32) and "sum" (filled with the group's
/// initial_accumulator_value), created for every parameter when its group is added (as
/// PyTorch's constructor does). Deviation: PyTorch 1.13 fills every sum with the
/// constructor's value even for a group that sets its own, and creates no state for
/// groups added later (their first step raises KeyError); tandem uses the group's value.
/// Per-parameter path (tandem ops) only.
/// ValueError: lr, lr_decay, weight_decay, initial_accumulator_value or eps < 0.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& options = AdagradOptions());
  Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults = AdagradOptions());

 protected:
  void validate(const Options& o) const override;
  std::vector<std::string> state_names() const override { return {"step", "sum"}; }
  void on_group_added(ParamGroup& group) override;
  void step_group(ParamGroup& group) override;

 private:
  void init_state(const Tensor& p, const Options& o);
};

}  // namespace tandem::optim
