#include "tandem/optim/rmsprop.h"

#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/pointwise.h"

namespace tandem::optim {

RMSpropOptions::RMSpropOptions(double lr) {
  set("lr", lr);
  set("alpha", 0.99);
  set("eps", 1e-8);
  set("weight_decay", 0);
  set("momentum", 0);
  set("centered", 0);
  set("maximize", 0);
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options) : Optimizer("RMSprop", options) {
  init_groups({ParamGroup{std::move(params), Options()}});
}
RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults) : Optimizer("RMSprop", defaults) {
  init_groups(std::move(groups));
}

void RMSprop::validate(const Options& o) const {
  detail::check_option(o.lr() >= 0, "RMSprop", "learning rate", o.lr());
  detail::check_option(o.get("eps") >= 0, "RMSprop", "epsilon", o.get("eps"));
  detail::check_option(o.get("momentum") >= 0, "RMSprop", "momentum", o.get("momentum"));
  detail::check_option(o.get("weight_decay") >= 0, "RMSprop", "weight_decay", o.get("weight_decay"));
  detail::check_option(o.get("alpha") >= 0, "RMSprop", "alpha", o.get("alpha"));
  for (const char* f : {"centered", "maximize"}) detail::check_flag(o, "RMSprop", f);
}

void RMSprop::step_group(ParamGroup& group) {
  const Options& o = group.options;
  const double lr = o.lr(), alpha = o.get("alpha"), eps = o.get("eps"), wd = o.get("weight_decay");
  const double momentum = o.get("momentum");
  const bool centered = o.flag("centered"), maximize = o.flag("maximize");
  for (Tensor& p : group.params) {
    const Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    ParamState& st = mutable_state(p);
    if (!st.count("step")) {
      st["step"] = zeros({}, DType::Float32);
      st["square_avg"] = zeros(p.sizes(), p.dtype());
    }
    if (momentum > 0 && !st.count("momentum_buffer")) st["momentum_buffer"] = zeros(p.sizes(), p.dtype());
    if (centered && !st.count("grad_avg")) st["grad_avg"] = zeros(p.sizes(), p.dtype());
    st.at("step").add_(1);
    Tensor square_avg = st.at("square_avg");
    Tensor g = maximize ? grad.mul(-1.0) : grad;
    if (wd != 0) g = g.add(p, wd);
    square_avg.mul_(alpha).addcmul_(g, g, 1.0 - alpha);
    Tensor avg;
    if (centered) {
      Tensor grad_avg = st.at("grad_avg");
      grad_avg.mul_(alpha).add_(g, 1.0 - alpha);
      avg = pow(square_avg.addcmul(grad_avg, grad_avg, -1), 0.5);
    } else {
      avg = pow(square_avg, 0.5);
    }
    avg.add_(eps);
    if (momentum > 0) {
      Tensor buf = st.at("momentum_buffer");
      buf.mul_(momentum).addcdiv_(g, avg);
      p.add_(buf, -lr);
    } else {
      p.addcdiv_(g, avg, -lr);
    }
  }
}

}  // namespace tandem::optim
