#pragma once
// Dynamic loss scaling for float16 training (torch.cuda.amp.GradScaler, PyTorch 1.13
// semantics; usable on CPU with tandem's float16 autocast).
//
// float16 has 5 exponent bits: gradients below 2^-24 flush to zero. Training multiplies the
// loss by a large scale S before backward (so the float16 gradients of the autocast ops stay
// representable), divides the float32 parameter gradients by S before the optimizer step
// (unscale_), and skips the step when any of them is inf/NaN (the scale was too large for
// some float16 value). update() then shrinks S by backoff_factor after a skipped step, and
// grows it by growth_factor after growth_interval steps in a row without inf/NaN.
//
//     optim::GradScaler scaler;
//     for (...) {
//       opt.zero_grad();
//       Tensor loss;
//       { AutocastGuard ac(DType::Float16); loss = cross_entropy(model(x), y); }
//       scaler.scale(loss).backward();
//       scaler.step(opt);        // unscales (unless unscale_ was called), steps unless inf/NaN
//       scaler.update();
//     }
//
// Reads the inf/NaN flag on the host in step() (as PyTorch does), so a compiled training
// step that uses a GradScaler runs eagerly (a graph break).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "tandem/core/tensor.h"
#include "tandem/optim/optimizer.h"

namespace tandem::optim {

/// GradScaler's constructor arguments (PyTorch's defaults).
struct GradScalerOptions {
  double init_scale = 65536.0;   ///< 2^16
  double growth_factor = 2.0;    ///< > 1
  double backoff_factor = 0.5;   ///< in (0, 1)
  int64_t growth_interval = 2000;  ///< >= 1 consecutive finite steps before growing
  bool enabled = true;           ///< false: every method is a pass-through (scale returns its input)
};

/// Dynamic loss scaler. Not copyable (it keeps per-optimizer state between step and
/// update). Reference: torch.cuda.amp.GradScaler (torch/cuda/amp/grad_scaler.py, 1.13).
class GradScaler {
 public:
  /// ValueError for growth_factor <= 1, backoff_factor outside (0, 1), growth_interval < 1
  /// or a non-finite / non-positive init_scale.
  explicit GradScaler(GradScalerOptions options = {});
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;

  /// outputs * scale, where scale is a 0-d float32 tensor (so a 0-d float16 loss becomes a
  /// float32 loss, a dimensioned float16 tensor stays float16, as in PyTorch). Differentiable.
  /// Returns `outputs` unchanged when disabled. ValueError for a non-floating tensor.
  Tensor scale(const Tensor& outputs) const;

  /// Divides the gradients of `optimizer`'s parameters by the scale in place and records
  /// whether any of them holds inf or NaN (they are divided either way, as PyTorch's
  /// _amp_foreach_non_finite_check_and_unscale_). Call it before clipping gradients.
  /// RuntimeError when called twice for one optimizer, or after step(), before update();
  /// ValueError for a float16 gradient (keep float32 parameters: autocast casts them).
  void unscale_(Optimizer& optimizer);

  /// Unscales (unless unscale_ was called since the last update), then runs
  /// optimizer.step() unless a gradient held inf/NaN. Returns true when the step ran.
  /// RuntimeError when called twice for one optimizer before update().
  bool step(Optimizer& optimizer);

  /// Updates the scale from the inf/NaN flags of the optimizers stepped or unscaled since
  /// the last update: any inf/NaN -> scale *= backoff_factor and the growth count restarts;
  /// else the count grows and, on reaching growth_interval, scale *= growth_factor (kept
  /// only if finite) and the count restarts. The arithmetic is float32, as PyTorch's
  /// _amp_update_scale_. With `new_scale`, sets the scale to it instead. RuntimeError when
  /// no optimizer was stepped or unscaled since the last update (and no new_scale).
  void update(std::optional<double> new_scale = std::nullopt);

  /// The current scale; 1.0 when disabled (as PyTorch's get_scale).
  double get_scale() const;
  double get_growth_factor() const { return opts_.growth_factor; }
  void set_growth_factor(double v) { opts_.growth_factor = v; }
  double get_backoff_factor() const { return opts_.backoff_factor; }
  void set_backoff_factor(double v) { opts_.backoff_factor = v; }
  int64_t get_growth_interval() const { return opts_.growth_interval; }
  void set_growth_interval(int64_t v) { opts_.growth_interval = v; }
  /// Consecutive steps without inf/NaN since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return opts_.enabled; }

  /// {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} as
  /// PyTorch's state_dict; empty when disabled.
  std::map<std::string, double> state_dict() const;
  /// Loads a state_dict(). RuntimeError for an empty dict (saved from a disabled scaler);
  /// ValueError for a missing key or a bad value.
  void load_state_dict(const std::map<std::string, double>& sd);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };
  GradScalerOptions opts_;
  float scale_;
  int64_t growth_tracker_ = 0;
  Tensor scale_tensor_;  // 0-d float32 holding scale_, multiplied into losses
  // Keyed by optimizer address; only looked up and cleared, never iterated for order.
  std::unordered_map<const Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace tandem::optim
