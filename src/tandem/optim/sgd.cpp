#include "tandem/optim/sgd.h"

#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/optim.h"

namespace tandem::optim {

SGDOptions::SGDOptions(double lr) {
  set("lr", lr);
  set("momentum", 0);
  set("dampening", 0);
  set("weight_decay", 0);
  set("nesterov", 0);
  set("maximize", 0);
  set("fused", 1);
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options) : Optimizer("SGD", options) {
  init_groups({ParamGroup{std::move(params), Options()}});
}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults) : Optimizer("SGD", defaults) {
  init_groups(std::move(groups));
}

void SGD::validate(const Options& o) const {
  detail::check_option(o.lr() >= 0, "SGD", "learning rate", o.lr());
  detail::check_option(o.get("momentum") >= 0, "SGD", "momentum", o.get("momentum"));
  detail::check_option(o.get("weight_decay") >= 0, "SGD", "weight_decay", o.get("weight_decay"));
  for (const char* f : {"nesterov", "maximize", "fused"}) detail::check_flag(o, "SGD", f);
  TANDEM_CHECK(!o.flag("nesterov") || (o.get("momentum") > 0 && o.get("dampening") == 0), ValueError, "SGD",
               "Nesterov momentum requires a momentum and zero dampening (got momentum ", o.get("momentum"),
               ", dampening ", o.get("dampening"), ")");
}

void SGD::step_group(ParamGroup& group) {
  const Options& o = group.options;
  const double lr = o.lr(), momentum = o.get("momentum"), dampening = o.get("dampening");
  const double weight_decay = o.get("weight_decay");
  const bool nesterov = o.flag("nesterov"), maximize = o.flag("maximize");
  const bool fused = o.flag("fused");
  for (Tensor& p : group.params) {
    const Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    ParamState& st = mutable_state(p);
    auto it = st.find("momentum_buffer");
    Tensor buf = it == st.end() ? Tensor() : it->second;
    const bool has_momentum = momentum != 0;
    if (fused && detail::fusable(p, {grad, has_momentum ? buf : Tensor()})) {
      const bool init = has_momentum && !buf.defined();
      if (init) {
        buf = zeros(p.sizes(), p.dtype());
        st["momentum_buffer"] = buf;
      }
      _fused_sgd_(p, grad, has_momentum ? buf : Tensor(), detail::lr_tensor(group), momentum, dampening,
                  weight_decay, nesterov, maximize, init);
      continue;
    }
    // Per-parameter path: PyTorch's _single_tensor_sgd with tandem ops.
    Tensor d_p = maximize ? grad.mul(-1.0) : grad;
    if (weight_decay != 0) d_p = d_p.add(p, weight_decay);
    if (has_momentum) {
      if (!buf.defined()) {
        buf = d_p.clone();
        st["momentum_buffer"] = buf;
      } else {
        buf.mul_(momentum).add_(d_p, 1.0 - dampening);
      }
      d_p = nesterov ? d_p.add(buf, momentum) : buf;
    }
    p.add_(d_p, -lr);
  }
}

}  // namespace tandem::optim
