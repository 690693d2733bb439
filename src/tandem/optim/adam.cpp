#include "tandem/optim/adam.h"

#include <cmath>

#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/optim.h"
#include "tandem/ops/pointwise.h"

namespace tandem::optim {

AdamOptions::AdamOptions(double lr) {
  set("lr", lr);
  set("beta1", 0.9);
  set("beta2", 0.999);
  set("eps", 1e-8);
  set("weight_decay", 0);
  set("amsgrad", 0);
  set("maximize", 0);
  set("fused", 1);
}

AdamWOptions::AdamWOptions(double lr) {
  Options::operator=(AdamOptions(lr));
  set("weight_decay", 1e-2);
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options) : Adam("Adam", options, false) {
  init_groups({ParamGroup{std::move(params), Options()}});
}
Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults) : Adam("Adam", defaults, false) {
  init_groups(std::move(groups));
}
Adam::Adam(std::string name, const Options& defaults, bool decoupled)
    : Optimizer(std::move(name), defaults), decoupled_(decoupled) {}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options) : Adam("AdamW", options, true) {
  init_groups({ParamGroup{std::move(params), Options()}});
}
AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults) : Adam("AdamW", defaults, true) {
  init_groups(std::move(groups));
}

void Adam::validate(const Options& o) const {
  const std::string& n = name();
  detail::check_option(o.lr() >= 0, n, "learning rate", o.lr());
  detail::check_option(o.get("eps") >= 0, n, "epsilon", o.get("eps"));
  const double b1 = o.get("beta1"), b2 = o.get("beta2");
  TANDEM_CHECK(b1 >= 0 && b1 < 1, ValueError, n, "Invalid beta parameter at index 0: ", b1, ", expected [0, 1)");
  TANDEM_CHECK(b2 >= 0 && b2 < 1, ValueError, n, "Invalid beta parameter at index 1: ", b2, ", expected [0, 1)");
  detail::check_option(o.get("weight_decay") >= 0, n, "weight_decay", o.get("weight_decay"));
  for (const char* f : {"amsgrad", "maximize", "fused"}) detail::check_flag(o, n, f);
}

void Adam::step_group(ParamGroup& group) {
  const Options& o = group.options;
  const double lr = o.lr(), beta1 = o.get("beta1"), beta2 = o.get("beta2"), eps = o.get("eps");
  const double weight_decay = o.get("weight_decay");
  const bool amsgrad = o.flag("amsgrad"), maximize = o.flag("maximize");
  const bool fused = o.flag("fused");
  for (Tensor& p : group.params) {
    const Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    ParamState& st = mutable_state(p);
    if (!st.count("step")) {
      st["step"] = zeros({}, DType::Float32);
      st["exp_avg"] = zeros(p.sizes(), p.dtype());
      st["exp_avg_sq"] = zeros(p.sizes(), p.dtype());
    }
    if (amsgrad && !st.count("max_exp_avg_sq")) st["max_exp_avg_sq"] = zeros(p.sizes(), p.dtype());
    Tensor step_t = st.at("step"), exp_avg = st.at("exp_avg"), exp_avg_sq = st.at("exp_avg_sq");
    Tensor max_sq = amsgrad ? st.at("max_exp_avg_sq") : Tensor();
    step_t.add_(1);
    if (fused && detail::fusable(p, {grad, exp_avg, exp_avg_sq, max_sq})) {
      // The op reads the step count and the learning rate from their tensors.
      (decoupled_ ? _fused_adamw_ : _fused_adam_)(p, grad, exp_avg, exp_avg_sq, max_sq, step_t,
                                                  detail::lr_tensor(group), beta1, beta2, eps, weight_decay,
                                                  amsgrad, maximize);
      continue;
    }
    // Per-parameter path: PyTorch's _single_tensor_adam / _single_tensor_adamw.
    const double step = step_t.item<double>();
    Tensor g = maximize ? grad.mul(-1.0) : grad;
    if (decoupled_)
      p.mul_(1.0 - lr * weight_decay);
    else if (weight_decay != 0)
      g = g.add(p, weight_decay);
    exp_avg.mul_(beta1).add_(g, 1.0 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
    const double bias_correction1 = 1.0 - std::pow(beta1, step);
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    const double step_size = lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    Tensor v = exp_avg_sq;
    if (amsgrad) {
      max_sq.copy_(maximum(max_sq, exp_avg_sq));
      v = max_sq;
    }
    // sqrt as pow(v, 0.5): the pow kernel computes exactly std::sqrt for that exponent.
    Tensor denom = pow(v, 0.5).div_(bias_correction2_sqrt).add_(eps);
    p.addcdiv_(exp_avg, denom, -step_size);
  }
}

}  // namespace tandem::optim
