// optim::GradScaler (issue 16): dynamic loss scaling for float16 autocast training, with
// torch.cuda.amp.GradScaler's semantics (scale, unscale_, inf/NaN check, skipped steps,
// growth and backoff, state_dict).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {

double max_abs(const Tensor& t) { return max(abs(t.to(kFloat64))).item<double>(); }

// A tiny regression whose gradients are ~1e-9: below float16's smallest subnormal (6e-8).
struct Tiny {
  Tensor w, x, target;
  Tiny() {
    manual_seed(11);
    w = randn({8, 4}).requires_grad_(true);
    x = randn({16, 8});
    target = randn({16, 4});
  }
  // mse_loss is on the float32 list: its gradient is computed in float32, then cast to
  // float16 by the autocast cast's backward before the float16 matmul's backward.
  Tensor loss(bool autocast) {
    if (!autocast) return mul(mse_loss(mm(x, w), target), 1e-8);
    AutocastGuard ac(kFloat16);
    return mul(mse_loss(mm(x, w), target), 1e-8);
  }
};

}  // namespace

TEST(GradScaler, UnderflowingGradientsTrainWithScaling) {
  // Without scaling the float16 gradients flush to zero: nothing would train.
  {
    Tiny t;
    t.loss(true).backward();
    ASSERT_TRUE(t.w.grad().defined());
    EXPECT_EQ(max_abs(t.w.grad()), 0.0);
  }
  // float32 reference and float16 + GradScaler, 6 SGD steps each.
  Tiny ref, amp;
  optim::SGD opt_ref({ref.w}, optim::SGDOptions(1e8));
  optim::SGD opt_amp({amp.w}, optim::SGDOptions(1e8));
  optim::GradScaler scaler;
  const double first = ref.loss(false).item<double>();
  for (int s = 0; s < 6; ++s) {
    opt_ref.zero_grad();
    ref.loss(false).backward();
    opt_ref.step();
    opt_amp.zero_grad();
    Tensor l = amp.loss(true);
    EXPECT_EQ(l.dtype(), kFloat32);
    scaler.scale(l).backward();
    EXPECT_EQ(amp.w.grad().dtype(), kFloat32);
    EXPECT_GT(max_abs(amp.w.grad()), 0.0) << "step " << s;
    EXPECT_TRUE(scaler.step(opt_amp)) << "step " << s;
    scaler.update();
  }
  EXPECT_EQ(scaler.get_scale(), 65536.0);  // no inf: unchanged (growth_interval 2000)
  EXPECT_EQ(scaler.growth_tracker(), 6);
  EXPECT_LT(ref.loss(false).item<double>(), 0.8 * first);
  // The float16 run follows the float32 one up to float16 rounding.
  EXPECT_LE(max_abs(sub(amp.w.detach(), ref.w.detach())), 5e-2);
  EXPECT_LT(amp.loss(false).item<double>(), 0.8 * first);
}

TEST(GradScaler, InfStepIsSkippedAndScaleBacksOff) {
  Tensor w = ones({3}).requires_grad_(true);
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  optim::GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 2;
  optim::GradScaler scaler(o);
  // A step whose gradient holds inf: skipped, the scale halves, the growth count restarts.
  w.set_grad(from_vector(std::vector<float>{1024, std::numeric_limits<float>::infinity(), 0}, {3}));
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_TRUE(bitwise_equal(w.detach(), ones({3})));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  // NaN too.
  w.set_grad(from_vector(std::vector<float>{std::nanf(""), 0, 0}, {3}));
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 256.0);
  // Finite steps run with the unscaled gradient; after growth_interval of them, it grows.
  for (int s = 0; s < 2; ++s) {
    w.set_grad(full({3}, 256.0 * 2));  // unscaled: 2
    EXPECT_TRUE(scaler.step(opt));
    EXPECT_TRUE(bitwise_equal(w.grad(), full({3}, 2.0)));
    scaler.update();
  }
  EXPECT_TRUE(bitwise_equal(w.detach(), full({3}, 1.0 - 2 * 0.5 * 2)));
  EXPECT_EQ(scaler.get_scale(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  scaler.update(8.0);  // explicit new scale
  EXPECT_EQ(scaler.get_scale(), 8.0);
  EXPECT_TRUE(bitwise_equal(scaler.scale(full({2}, 3.0)), full({2}, 24.0)));
}

// A real float16 overflow: the scaled loss's gradient is inf in float16, the step is skipped.
TEST(GradScaler, Float16OverflowIsDetected) {
  manual_seed(2);
  Tensor w = randn({4, 4}).requires_grad_(true);
  Tensor w0 = w.detach().clone();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  optim::GradScalerOptions o;
  o.init_scale = 1e30;  // float16's max is 65504
  optim::GradScaler scaler(o);
  Tensor loss;
  {
    AutocastGuard ac(kFloat16);
    loss = sum(mm(randn({2, 4}), w));
  }
  scaler.scale(loss).backward();
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_TRUE(bitwise_equal(w.detach(), w0));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(static_cast<float>(1e30) * 0.5f));
}

TEST(GradScaler, UnscaleOnceThenStepDoesNotUnscaleAgain) {
  Tensor w = zeros({2}).requires_grad_(true);
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  optim::GradScaler scaler;
  w.set_grad(full({2}, 65536.0 * 3));
  scaler.unscale_(opt);
  EXPECT_TRUE(bitwise_equal(w.grad(), full({2}, 3.0)));
  optim::clip_grad_value_(std::vector<Tensor>{w}, 1.0);  // what unscale_ is for: clipping true gradients
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_TRUE(bitwise_equal(w.detach(), full({2}, -1.0)));
  scaler.update();
}

TEST(GradScaler, Errors) {
  Tensor w = zeros({2}).requires_grad_(true);
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  optim::GradScaler scaler;
  EXPECT_THROW(scaler.update(), RuntimeError);  // no inf checks recorded
  w.set_grad(ones({2}));
  scaler.unscale_(opt);
  EXPECT_THROW(scaler.unscale_(opt), RuntimeError);
  scaler.step(opt);
  EXPECT_THROW(scaler.step(opt), RuntimeError);
  EXPECT_THROW(scaler.unscale_(opt), RuntimeError);
  scaler.update();
  // float16 gradients: parameters must stay float32.
  Tensor h = zeros({2}, kFloat16).requires_grad_(true);
  optim::SGD opt_h({h}, optim::SGDOptions(1.0));
  h.set_grad(ones({2}, kFloat16));
  EXPECT_THROW(scaler.unscale_(opt_h), ValueError);
  EXPECT_THROW(scaler.scale(ones({2}, kInt64)), ValueError);
  optim::GradScalerOptions bad;
  bad.growth_factor = 1.0;
  EXPECT_THROW(optim::GradScaler{bad}, ValueError);
  bad = {};
  bad.backoff_factor = 1.5;
  EXPECT_THROW(optim::GradScaler{bad}, ValueError);
  bad = {};
  bad.growth_interval = 0;
  EXPECT_THROW(optim::GradScaler{bad}, ValueError);
}

TEST(GradScaler, StateDictRoundTripAndDisabled) {
  optim::GradScalerOptions o;
  o.init_scale = 128;
  o.growth_interval = 3;
  optim::GradScaler a(o);
  Tensor w = zeros({2}).requires_grad_(true);
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  w.set_grad(ones({2}));
  a.step(opt);
  a.update();
  auto sd = a.state_dict();
  EXPECT_EQ(sd.at("scale"), 128.0);
  EXPECT_EQ(sd.at("_growth_tracker"), 1.0);
  EXPECT_EQ(sd.at("growth_interval"), 3.0);
  optim::GradScaler b;
  b.load_state_dict(sd);
  EXPECT_EQ(b.get_scale(), 128.0);
  EXPECT_EQ(b.growth_tracker(), 1);
  EXPECT_EQ(b.get_growth_interval(), 3);
  EXPECT_THROW(b.load_state_dict({}), RuntimeError);
  sd.erase("scale");
  EXPECT_THROW(b.load_state_dict(sd), ValueError);
  // Disabled: pass-through.
  optim::GradScalerOptions off;
  off.enabled = false;
  optim::GradScaler d(off);
  Tensor x = full({2}, 3.0);
  EXPECT_TRUE(bitwise_equal(d.scale(x), x));
  EXPECT_EQ(d.get_scale(), 1.0);
  EXPECT_TRUE(d.state_dict().empty());
  w.set_grad(ones({2}));
  EXPECT_TRUE(d.step(opt));
  d.update();
}
