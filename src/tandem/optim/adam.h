#pragma once
// Adam and AdamW (torch.optim.Adam / torch.optim.AdamW, PyTorch 1.13).
#include "tandem/optim/optimizer.h"

namespace tandem::optim {

/// Options of Adam (PyTorch defaults): lr 1e-3, betas (0.9, 0.999) stored as beta1/beta2,
/// eps 1e-8, weight_decay 0, amsgrad false, maximize false, fused true (tandem: one fused
/// loop per contiguous float32/float64 parameter; bitwise equal to the op path on this
/// build).
struct AdamOptions : Options {
  explicit AdamOptions(double lr = 1e-3);
  using Options::lr;
  AdamOptions& lr(double v) { set("lr", v); return *this; }
  AdamOptions& betas(double beta1, double beta2) { set("beta1", beta1); set("beta2", beta2); return *this; }
  AdamOptions& eps(double v) { set("eps", v); return *this; }
  AdamOptions& weight_decay(double v) { set("weight_decay", v); return *this; }
  AdamOptions& amsgrad(bool v) { set("amsgrad", v); return *this; }
  AdamOptions& maximize(bool v) { set("maximize", v); return *this; }
  AdamOptions& fused(bool v) { set("fused", v); return *this; }
};

/// AdamW's options: Adam's, with weight_decay defaulting to 1e-2 (as PyTorch).
struct AdamWOptions : Options {
  explicit AdamWOptions(double lr = 1e-3);
  using Options::lr;
  AdamWOptions& lr(double v) { set("lr", v); return *this; }
  AdamWOptions& betas(double beta1, double beta2) { set("beta1", beta1); set("beta2", beta2); return *this; }
  AdamWOptions& eps(double v) { set("eps", v); return *this; }
  AdamWOptions& weight_decay(double v) { set("weight_decay", v); return *this; }
  AdamWOptions& amsgrad(bool v) { set("amsgrad", v); return *this; }
  AdamWOptions& maximize(bool v) { set("maximize", v); return *this; }
  AdamWOptions& fused(bool v) { set("fused", v); return *this; }
};

/// Adam: step t += 1; g = grad (negated when maximize) + weight_decay * param;
/// m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2; (amsgrad: vmax =
/// max(vmax, v), used for v); param -= lr / (1 - beta1^t) * m / (sqrt(v) /
/// sqrt(1 - beta2^t) + eps).
/// State: "step" (0-d float32), "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad).
/// ValueError: lr < 0, eps < 0, a beta outside [0, 1), weight_decay < 0, bad flags.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = AdamOptions());

 protected:
  Adam(std::string name, const Options& defaults, bool decoupled);
  void validate(const Options& o) const override;
  std::vector<std::string> state_names() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
  void step_group(ParamGroup& group) override;

 private:
  bool decoupled_ = false;
};

/// AdamW: Adam with decoupled weight decay — param *= 1 - lr * weight_decay before the
/// update, and the gradient carries no L2 term. Same state and errors as Adam.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults = AdamWOptions());
};

}  // namespace tandem::optim
