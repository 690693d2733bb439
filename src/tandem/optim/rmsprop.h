#pragma once
// RMSprop (torch.optim.RMSprop, PyTorch 1.13).
#include "tandem/optim/optimizer.h"

namespace tandem::optim {

/// Options of RMSprop (PyTorch defaults): lr 1e-2, alpha 0.99, eps 1e-8, weight_decay 0,
/// momentum 0, centered false, maximize false.
struct RMSpropOptions : Options {
  explicit RMSpropOptions(double lr = 1e-2);
  using Options::lr;
  RMSpropOptions& lr(double v) { set("lr", v); return *this; }
  RMSpropOptions& alpha(double v) { set("alpha", v); return *this; }
  RMSpropOptions& eps(double v) { set("eps", v); return *this; }
  RMSpropOptions& weight_decay(double v) { set("weight_decay", v); return *this; }
  RMSpropOptions& momentum(double v) { set("momentum", v); return *this; }
  RMSpropOptions& centered(bool v) { set("centered", v); return *this; }
  RMSpropOptions& maximize(bool v) { set("maximize", v); return *this; }
};

/// RMSprop: g = grad (negated when maximize) + weight_decay * param;
/// s = alpha s + (1 - alpha) g^2; centered: a = alpha a + (1 - alpha) g and
/// avg = sqrt(s - a^2) + eps, else avg = sqrt(s) + eps; with momentum:
/// b = momentum b + g / avg, param -= lr b; else param -= lr g / avg.
/// State: "step" (0-d float32 count), "square_avg", "momentum_buffer" (momentum > 0),
/// "grad_avg" (centered). Per-parameter path (tandem ops) only.
/// ValueError: lr, eps, momentum, weight_decay or alpha < 0; bad flags.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = RMSpropOptions());
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults = RMSpropOptions());

 protected:
  void validate(const Options& o) const override;
  std::vector<std::string> state_names() const override {
    return {"step", "square_avg", "momentum_buffer", "grad_avg"};
  }
  void step_group(ParamGroup& group) override;
};

}  // namespace tandem::optim
