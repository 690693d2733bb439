#include "tandem/optim/adagrad.h"

#include "tandem/autograd/engine.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/pointwise.h"

namespace tandem::optim {

AdagradOptions::AdagradOptions(double lr) {
  set("lr", lr);
  set("lr_decay", 0);
  set("weight_decay", 0);
  set("initial_accumulator_value", 0);
  set("eps", 1e-10);
  set("maximize", 0);
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options) : Optimizer("Adagrad", options) {
  init_groups({ParamGroup{std::move(params), Options()}});
}
Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults) : Optimizer("Adagrad", defaults) {
  init_groups(std::move(groups));
}

void Adagrad::validate(const Options& o) const {
  detail::check_option(o.lr() >= 0, "Adagrad", "learning rate", o.lr());
  detail::check_option(o.get("lr_decay") >= 0, "Adagrad", "lr_decay", o.get("lr_decay"));
  detail::check_option(o.get("weight_decay") >= 0, "Adagrad", "weight_decay", o.get("weight_decay"));
  detail::check_option(o.get("initial_accumulator_value") >= 0, "Adagrad", "initial_accumulator_value",
                       o.get("initial_accumulator_value"));
  detail::check_option(o.get("eps") >= 0, "Adagrad", "epsilon", o.get("eps"));
  detail::check_flag(o, "Adagrad", "maximize");
}

void Adagrad::init_state(const Tensor& p, const Options& o) {
  NoGradGuard ng;
  ParamState& st = mutable_state(p);
  st["step"] = zeros({}, DType::Float32);
  st["sum"] = full(p.sizes(), o.get("initial_accumulator_value"), p.dtype());
}

void Adagrad::on_group_added(ParamGroup& group) {
  for (const Tensor& p : group.params) init_state(p, group.options);
}

void Adagrad::step_group(ParamGroup& group) {
  const Options& o = group.options;
  const double lr = o.lr(), lr_decay = o.get("lr_decay"), wd = o.get("weight_decay"), eps = o.get("eps");
  const bool maximize = o.flag("maximize");
  for (Tensor& p : group.params) {
    const Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    ParamState& st = mutable_state(p);
    if (!st.count("step") || !st.count("sum")) init_state(p, o);
    Tensor step_t = st.at("step"), sum = st.at("sum");
    step_t.add_(1);
    const double step = step_t.item<double>();
    Tensor g = maximize ? grad.mul(-1.0) : grad;
    if (wd != 0) g = g.add(p, wd);
    const double clr = lr / (1 + (step - 1) * lr_decay);
    sum.addcmul_(g, g, 1);
    Tensor std_ = pow(sum, 0.5).add_(eps);
    p.addcdiv_(g, std_, -clr);
  }
}

}  // namespace tandem::optim
