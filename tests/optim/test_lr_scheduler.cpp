// Hand-written tests of the learning-rate schedulers: errors, state_dict round trips,
// step(epoch), resuming with last_epoch, and the schedule reaching the optimizer.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "optim_test_util.h"

using namespace tandem;
using namespace tandem::optim;
using namespace tandem::optim::testing;

namespace {

struct Fixture {
  Tensor a = make_param(zeros({2}));
  Tensor b = make_param(zeros({1}));
  SGD opt{{ParamGroup{{a}, {}}, ParamGroup{{b}, Options{{"lr", 0.05}}}}, SGDOptions(0.1).momentum(0.9)};
};

using Factory = std::function<std::shared_ptr<LRScheduler>(Optimizer&)>;

std::vector<std::pair<std::string, Factory>> factories() {
  return {
      {"StepLR", [](Optimizer& o) { return std::make_shared<StepLR>(o, 3, 0.5); }},
      {"MultiStepLR", [](Optimizer& o) { return std::make_shared<MultiStepLR>(o, std::vector<int64_t>{2, 5, 5}, 0.3); }},
      {"ExponentialLR", [](Optimizer& o) { return std::make_shared<ExponentialLR>(o, 0.9); }},
      {"CosineAnnealingLR", [](Optimizer& o) { return std::make_shared<CosineAnnealingLR>(o, 6, 0.001); }},
      {"LinearLR", [](Optimizer& o) { return std::make_shared<LinearLR>(o, 0.2, 1.0, 6); }},
      {"OneCycleLR",
       [](Optimizer& o) {
         OneCycleOptions c;
         c.max_lrs = {0.5, 0.2};
         c.total_steps = 30;
         return std::make_shared<OneCycleLR>(o, c);
       }},
      {"SequentialLR",
       [](Optimizer& o) {
         auto warm = std::make_shared<LinearLR>(o, 0.1, 1.0, 4);
         auto cos = std::make_shared<CosineAnnealingLR>(o, 10);
         return std::make_shared<SequentialLR>(o, std::vector<std::shared_ptr<LRScheduler>>{warm, cos},
                                               std::vector<int64_t>{4});
       }},
  };
}

// Saving optimizer + scheduler after k steps and loading both into fresh objects gives the
// same lrs (and momenta) as an uninterrupted run.
TEST(LRSchedulerStateDict, RoundTripContinuesExactly) {
  for (const auto& [name, make] : factories()) {
    Fixture f;
    auto s = make(f.opt);
    for (int k = 0; k < 7; ++k) {
      f.opt.step();
      s->step();
    }
    const OptimizerStateDict osd = f.opt.state_dict();
    const SchedulerStateDict ssd = s->state_dict();
    EXPECT_EQ(ssd.scheduler, name);

    Fixture g;
    auto s2 = make(g.opt);  // fresh: its constructor changed the groups; loading restores them
    g.opt.load_state_dict(osd);
    s2->load_state_dict(ssd);
    EXPECT_EQ(s2->get_last_lr(), s->get_last_lr()) << name;
    EXPECT_EQ(s2->last_epoch(), s->last_epoch()) << name;
    for (int k = 0; k < 15; ++k) {
      f.opt.step();
      g.opt.step();
      s->step();
      s2->step();
      EXPECT_EQ(s2->get_last_lr(), s->get_last_lr()) << name << " step " << k;
      for (size_t i = 0; i < 2; ++i)
        EXPECT_EQ(g.opt.param_groups()[i].options.get("momentum"), f.opt.param_groups()[i].options.get("momentum"))
            << name;
    }
  }
}

TEST(LRSchedulerStateDict, LoadErrors) {
  Fixture f;
  StepLR s(f.opt, 2);
  SchedulerStateDict sd = s.state_dict();
  {
    auto bad = sd;
    bad.scheduler = "ExponentialLR";
    EXPECT_THROW(s.load_state_dict(bad), ValueError);
  }
  {
    auto bad = sd;
    bad.values["base_lrs"] = {0.1};
    EXPECT_THROW(s.load_state_dict(bad), ValueError);
  }
  {
    auto bad = sd;
    bad.values.erase("gamma");
    EXPECT_THROW(s.load_state_dict(bad), ValueError);
  }
  {
    auto bad = sd;
    bad.values["step_size"] = {0};
    EXPECT_THROW(s.load_state_dict(bad), ValueError);
  }
  {
    auto bad = sd;
    bad.values["last_epoch"] = {1.5};
    EXPECT_THROW(s.load_state_dict(bad), ValueError);
  }
  EXPECT_EQ(s.last_epoch(), 0);
  // SequentialLR: wrong number of children, and a bad child leaves every child unchanged.
  Fixture g;
  auto warm = std::make_shared<LinearLR>(g.opt, 0.5, 1.0, 2);
  auto exp = std::make_shared<ExponentialLR>(g.opt, 0.5);
  SequentialLR seq(g.opt, {warm, exp}, {2});
  for (int k = 0; k < 3; ++k) seq.step();
  auto ssd = seq.state_dict();
  ASSERT_EQ(ssd.children.size(), 2u);
  auto bad = ssd;
  bad.children.pop_back();
  EXPECT_THROW(seq.load_state_dict(bad), ValueError);
  bad = ssd;
  bad.children[0].values["last_epoch"] = {0};
  bad.children[1].scheduler = "StepLR";
  const int64_t warm_epoch = warm->last_epoch();
  EXPECT_THROW(seq.load_state_dict(bad), ValueError);
  EXPECT_EQ(warm->last_epoch(), warm_epoch);
}

TEST(LRSchedulerErrors, Construction) {
  Fixture f;
  EXPECT_THROW(StepLR(f.opt, 0), ValueError);
  EXPECT_THROW(CosineAnnealingLR(f.opt, 0), ValueError);
  EXPECT_THROW(LinearLR(f.opt, 0.0), ValueError);
  EXPECT_THROW(LinearLR(f.opt, 1.5), ValueError);
  EXPECT_THROW(LinearLR(f.opt, 0.5, -0.1), ValueError);
  EXPECT_THROW(LinearLR(f.opt, 0.5, 1.0, 0), ValueError);
  OneCycleOptions c;
  c.max_lrs = {0.1};
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);  // no total_steps / epochs
  c.epochs = 2;
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);  // epochs without steps_per_epoch
  c.steps_per_epoch = 0;
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);
  c.total_steps = 0;
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);
  c.total_steps = 10;
  c.pct_start = 1.5;
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);
  c.pct_start = 0.3;
  c.anneal_strategy = "exp";
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);
  c.anneal_strategy = "cos";
  c.max_lrs = {0.1, 0.2, 0.3};  // two groups
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);
  c.max_lrs = {0.1};
  c.base_momentums = {0.8, 0.8, 0.8};
  EXPECT_THROW(OneCycleLR(f.opt, c), ValueError);
  {
    Tensor p = make_param(zeros({1}));
    Adagrad ada({p});
    OneCycleOptions m;
    m.max_lrs = {0.1};
    m.total_steps = 5;
    EXPECT_THROW(OneCycleLR(ada, m), ValueError);  // no momentum to cycle
    m.cycle_momentum = false;
    OneCycleLR ok(ada, m);
    EXPECT_DOUBLE_EQ(ok.get_last_lr()[0], 0.1 / 25.0);
  }
  // SequentialLR
  auto s1 = std::make_shared<ExponentialLR>(f.opt, 0.9);
  auto s2 = std::make_shared<StepLR>(f.opt, 2);
  EXPECT_THROW(SequentialLR(f.opt, {s1, s2}, {}), ValueError);
  EXPECT_THROW(SequentialLR(f.opt, {s1, s2}, {1, 2}), ValueError);
  EXPECT_THROW(SequentialLR(f.opt, {}, {}), ValueError);
  Fixture other;
  auto s3 = std::make_shared<ExponentialLR>(other.opt, 0.9);
  EXPECT_THROW(SequentialLR(f.opt, {s1, s3}, {2}), ValueError);
  SequentialLR seq(f.opt, {s1, s2}, {2});
  EXPECT_THROW(seq.step(3), NotImplementedError);
  // Resuming needs initial_lr in every group.
  Tensor p = make_param(zeros({1}));
  SGD fresh({p}, SGDOptions(0.1));
  EXPECT_THROW(StepLR(fresh, 2, 0.1, /*last_epoch=*/4), ValueError);
}

TEST(LRScheduler, ClosedFormStepEpoch) {
  Fixture f;
  StepLR s(f.opt, 3, 0.5);
  s.step(7);  // PyTorch's deprecated step(epoch): closed form base * gamma^(7 // 3)
  EXPECT_EQ(s.last_epoch(), 7);
  EXPECT_EQ(s.get_last_lr()[0], 0.1 * 0.25);
  EXPECT_EQ(s.get_last_lr()[1], 0.05 * 0.25);
  CosineAnnealingLR c(f.opt, 10, 0.0);
  c.step(5);
  EXPECT_NEAR(c.get_last_lr()[0], 0.1 * 0.5, 1e-16);  // base_lrs are the initial lrs
}

TEST(LRScheduler, ResumeWithLastEpoch) {
  // PyTorch: with last_epoch given and initial_lr present, the first lr of
  // CosineAnnealingLR is the closed form at last_epoch + 1.
  Tensor p = make_param(zeros({1}));
  SGD opt({ParamGroup{{p}, Options{{"initial_lr", 0.2}}}}, SGDOptions(0.01));
  CosineAnnealingLR c(opt, 10, 0.0, /*last_epoch=*/4);
  EXPECT_EQ(c.last_epoch(), 5);
  EXPECT_EQ(c.base_lrs()[0], 0.2);
  EXPECT_DOUBLE_EQ(c.get_last_lr()[0], 0.2 * (1 + std::cos(std::numbers::pi * 5 / 10)) / 2);
}

TEST(LRScheduler, ScheduledLrDrivesTheOptimizer) {
  Tensor p = make_param(tensor({1.0}, DType::Float64));
  SGD opt({p}, SGDOptions(1.0));
  ExponentialLR s(opt, 0.5);
  double expect = 1.0, lr = 1.0;
  for (int k = 0; k < 4; ++k) {
    p.set_grad(tensor({1.0}, DType::Float64));
    opt.step();
    expect -= lr;
    EXPECT_EQ(p.item<double>(), expect);
    s.step();
    lr *= 0.5;
    EXPECT_EQ(opt.param_groups()[0].options.lr(), lr);
  }
}

TEST(LRScheduler, OneCycleCyclesAdamBeta1) {
  Tensor p = make_param(zeros({1}));
  Adam opt({p}, AdamOptions(0.1).betas(0.9, 0.99));
  OneCycleOptions c;
  c.max_lrs = {1.0};
  c.total_steps = 10;
  OneCycleLR s(opt, c);
  const Options& o = opt.param_groups()[0].options;
  EXPECT_EQ(o.get("beta1"), 0.95);
  EXPECT_EQ(o.get("beta2"), 0.99);
  EXPECT_EQ(o.get("max_lr"), 1.0);
  EXPECT_EQ(o.get("initial_lr"), 1.0 / 25);
  EXPECT_EQ(o.get("min_lr"), 1.0 / 25 / 1e4);
  for (int k = 0; k < 10; ++k) s.step();
  EXPECT_THROW(s.step(), ValueError);
  // The options a scheduler adds are accepted by load_state_dict and add_param_group.
  auto sd = opt.state_dict();
  EXPECT_EQ(sd.param_groups[0].options.at("initial_lr"), 1.0 / 25);
  Tensor q = make_param(zeros({1}));
  Adam opt2({q}, AdamOptions(0.1));
  opt2.load_state_dict(sd);
  EXPECT_EQ(opt2.param_groups()[0].options.get("max_momentum"), 0.95);
  opt2.add_param_group(ParamGroup{{make_param(zeros({1}))}, Options{{"initial_lr", 0.3}}});
}

}  // namespace
