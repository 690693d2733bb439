#include "tandem/optim/grad_scaler.h"

#include <cmath>

#include "tandem/autograd/engine.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/pointwise.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/unary.h"

namespace tandem::optim {

namespace {
void check_options(const GradScalerOptions& o) {
  TANDEM_CHECK(o.growth_factor > 1.0, ValueError, "GradScaler", "growth_factor should be > 1, got ", o.growth_factor);
  TANDEM_CHECK(o.backoff_factor > 0.0 && o.backoff_factor < 1.0, ValueError, "GradScaler",
               "backoff_factor should be in (0, 1), got ", o.backoff_factor);
  TANDEM_CHECK(o.growth_interval >= 1, ValueError, "GradScaler", "growth_interval should be >= 1, got ",
               o.growth_interval);
  TANDEM_CHECK(std::isfinite(o.init_scale) && o.init_scale > 0, ValueError, "GradScaler",
               "init_scale should be finite and > 0, got ", o.init_scale);
}
}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : opts_(options), scale_(static_cast<float>(options.init_scale)) {
  check_options(opts_);
  scale_tensor_ = scalar_tensor(Scalar(static_cast<double>(scale_)), TensorOptions().dtype(DType::Float32));
}

Tensor GradScaler::scale(const Tensor& outputs) const {
  if (!opts_.enabled) return outputs;
  TANDEM_CHECK(outputs.defined() && is_floating_point(outputs.dtype()), ValueError, "GradScaler.scale",
               "expected a floating-point tensor, got ",
               outputs.defined() ? std::string(dtype_name(outputs.dtype())) : std::string("an undefined tensor"));
  return mul(outputs, scale_tensor_);
}

void GradScaler::unscale_(Optimizer& optimizer) {
  if (!opts_.enabled) return;
  PerOptimizer& st = per_optimizer_[&optimizer];
  TANDEM_CHECK(st.stage != Stage::Unscaled, RuntimeError, "GradScaler.unscale_",
               "unscale_() has already been called on this optimizer since the last update().");
  TANDEM_CHECK(st.stage != Stage::Stepped, RuntimeError, "GradScaler.unscale_",
               "unscale_() is being called after step().");
  // PyTorch: inv_scale = scale.double().reciprocal().float().
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  const Tensor inv_scale = scalar_tensor(Scalar(static_cast<double>(inv)), TensorOptions().dtype(DType::Float32));
  NoGradGuard no_grad;
  // Check every gradient first, so a float16 one raises before anything is divided.
  std::vector<Tensor> grads;
  for (const ParamGroup& g : optimizer.param_groups())
    for (const Tensor& p : g.params) {
      Tensor gr = p.grad();
      if (!gr.defined()) continue;
      TANDEM_CHECK(gr.dtype() != DType::Float16, ValueError, "GradScaler.unscale_",
                   "Attempting to unscale FP16 gradients (parameter of sizes ", p.sizes(),
                   "); keep float32 parameters and let autocast cast them");
      grads.push_back(std::move(gr));
    }
  Tensor found;  // bool, 0-d: some gradient has inf or NaN
  for (Tensor& gr : grads) {
    Tensor bad = logical_not(all(isfinite(gr)));
    found = found.defined() ? logical_or(found, bad) : bad;
    gr.mul_(inv_scale);
  }
  st.found_inf = found.defined() && found.item<bool>();
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!opts_.enabled) {
    optimizer.step();
    return true;
  }
  auto it = per_optimizer_.find(&optimizer);
  if (it != per_optimizer_.end())
    TANDEM_CHECK(it->second.stage != Stage::Stepped, RuntimeError, "GradScaler.step",
                 "step() has already been called since the last update().");
  if (it == per_optimizer_.end() || it->second.stage == Stage::Ready) unscale_(optimizer);
  PerOptimizer& st = per_optimizer_[&optimizer];
  const bool run = !st.found_inf;
  if (run) optimizer.step();
  st.stage = Stage::Stepped;
  return run;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!opts_.enabled) return;
  if (new_scale) {
    TANDEM_CHECK(std::isfinite(*new_scale) && *new_scale > 0, ValueError, "GradScaler.update",
                 "new_scale should be finite and > 0, got ", *new_scale);
    scale_ = static_cast<float>(*new_scale);
  } else {
    bool any_recorded = false, found_inf = false;
    for (const auto& [opt, st] : per_optimizer_) {
      (void)opt;
      if (st.stage == Stage::Ready) continue;
      any_recorded = true;
      found_inf = found_inf || st.found_inf;
    }
    TANDEM_CHECK(any_recorded, RuntimeError, "GradScaler.update", "No inf checks were recorded prior to update.");
    // PyTorch's _amp_update_scale_ in float32.
    if (found_inf) {
      scale_ = scale_ * static_cast<float>(opts_.backoff_factor);
      growth_tracker_ = 0;
    } else if (growth_tracker_ + 1 == opts_.growth_interval) {
      const float grown = scale_ * static_cast<float>(opts_.growth_factor);
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    } else {
      ++growth_tracker_;
    }
  }
  scale_tensor_.fill_(Scalar(static_cast<double>(scale_)));
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return opts_.enabled ? static_cast<double>(scale_) : 1.0; }

std::map<std::string, double> GradScaler::state_dict() const {
  if (!opts_.enabled) return {};
  return {{"scale", static_cast<double>(scale_)},
          {"growth_factor", opts_.growth_factor},
          {"backoff_factor", opts_.backoff_factor},
          {"growth_interval", static_cast<double>(opts_.growth_interval)},
          {"_growth_tracker", static_cast<double>(growth_tracker_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& sd) {
  if (!opts_.enabled) return;
  TANDEM_CHECK(!sd.empty(), RuntimeError, "GradScaler.load_state_dict",
               "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  auto get = [&](const char* k) {
    auto it = sd.find(k);
    TANDEM_CHECK(it != sd.end(), ValueError, "GradScaler.load_state_dict", "state dict has no '", k, "'");
    return it->second;
  };
  GradScalerOptions o = opts_;
  o.init_scale = get("scale");
  o.growth_factor = get("growth_factor");
  o.backoff_factor = get("backoff_factor");
  o.growth_interval = static_cast<int64_t>(get("growth_interval"));
  const double tracker = get("_growth_tracker");
  check_options(o);
  TANDEM_CHECK(tracker >= 0 && tracker < static_cast<double>(o.growth_interval), ValueError,
               "GradScaler.load_state_dict", "_growth_tracker should be in [0, growth_interval), got ", tracker);
  opts_ = o;
  scale_ = static_cast<float>(o.init_scale);
  growth_tracker_ = static_cast<int64_t>(tracker);
  scale_tensor_.fill_(Scalar(static_cast<double>(scale_)));
}

}  // namespace tandem::optim
