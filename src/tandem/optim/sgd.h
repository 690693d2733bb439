#pragma once
// Stochastic gradient descent with momentum (torch.optim.SGD, PyTorch 1.13).
#include "tandem/optim/optimizer.h"

namespace tandem::optim {

/// Options of SGD (PyTorch defaults): lr (required), momentum 0, dampening 0,
/// weight_decay 0, nesterov false, maximize false, and fused true (tandem: run the fused
/// single-loop kernel for contiguous float32/float64 parameters; the per-parameter path
/// built from tandem ops otherwise — both give bitwise equal results on this build).
struct SGDOptions : Options {
  explicit SGDOptions(double lr);
  using Options::lr;
  SGDOptions& lr(double v) { set("lr", v); return *this; }
  SGDOptions& momentum(double v) { set("momentum", v); return *this; }
  SGDOptions& dampening(double v) { set("dampening", v); return *this; }
  SGDOptions& weight_decay(double v) { set("weight_decay", v); return *this; }
  SGDOptions& nesterov(bool v) { set("nesterov", v); return *this; }
  SGDOptions& maximize(bool v) { set("maximize", v); return *this; }
  SGDOptions& fused(bool v) { set("fused", v); return *this; }
};

/// SGD: with g = grad (negated when maximize) + weight_decay * param, momentum buffer
/// b = g on the first step and b = momentum * b + (1 - dampening) * g afterwards,
/// direction d = g + momentum * b (nesterov) or b, param -= lr * d.
/// State: "momentum_buffer" (only when momentum != 0).
/// ValueError: lr < 0, momentum < 0, weight_decay < 0, nesterov with momentum <= 0 or
/// dampening != 0, flags other than 0/1.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);

 protected:
  void validate(const Options& o) const override;
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
  void step_group(ParamGroup& group) override;
};

}  // namespace tandem::optim
