// Compiling the whole training step (issue 12): zero_grad, forward, loss, backward() and
// optimizer.step() captured into one program that updates parameters, gradients and
// optimizer state in place. Losses, parameters, .grad and optimizer state must equal
// eager's bitwise, step after step; what a program cannot replay runs eagerly.
#include <gtest/gtest.h>

#include <functional>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A model, its optimizer and one training step on them, eager; `twin` builds the same
// from the same seed.
struct Trainer {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Optimizer> opt;
  bool set_to_none = true;
  Tensor step(const Tensor& x, const Tensor& y) {
    opt->zero_grad(set_to_none);
    Tensor loss = cross_entropy((*model)(x), y);
    loss.backward();
    opt->step();
    return loss;
  }
};

enum class Opt { SgdMomentum, Sgd, Adam, AdamW, Adagrad, RMSprop };

Trainer make_trainer(Opt kind, bool cnn = false) {
  manual_seed(8);
  Trainer t;
  t.model = cnn ? nn::models::fashion_cnn() : std::make_shared<nn::Sequential>();
  if (!cnn) {
    t.model->push_back(std::make_shared<nn::Linear>(12, 16));
    t.model->push_back(std::make_shared<nn::ReLU>());
    t.model->push_back(std::make_shared<nn::Linear>(16, 5));
  }
  auto params = t.model->parameters();
  switch (kind) {
    case Opt::SgdMomentum:
      t.opt = std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
      break;
    case Opt::Sgd: t.opt = std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05)); break;
    case Opt::Adam: t.opt = std::make_unique<optim::Adam>(params, optim::AdamOptions(1e-2)); break;
    case Opt::AdamW: t.opt = std::make_unique<optim::AdamW>(params, optim::AdamWOptions(1e-2)); break;
    case Opt::Adagrad: t.opt = std::make_unique<optim::Adagrad>(params, optim::AdagradOptions(1e-2)); break;
    case Opt::RMSprop:
      t.opt = std::make_unique<optim::RMSprop>(params, optim::RMSpropOptions(1e-2).momentum(0.9).centered(true));
      break;
  }
  return t;
}

// Parameters, their .grad and the optimizer state of two trainers are bitwise equal.
void expect_same_state(Trainer& a, Trainer& b, const std::string& when) {
  auto pa = a.model->named_parameters(), pb = b.model->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(pa[i].second, pb[i].second)) << when << ": " << pa[i].first;
    EXPECT_EQ(pa[i].second.grad().defined(), pb[i].second.grad().defined()) << when << ": " << pa[i].first;
    if (pa[i].second.grad().defined()) {
      EXPECT_TRUE(bitwise_equal(pa[i].second.grad(), pb[i].second.grad())) << when << ": " << pa[i].first << ".grad";
    }
    const auto& sa = a.opt->state(pa[i].second);
    const auto& sb = b.opt->state(pb[i].second);
    ASSERT_EQ(sa.size(), sb.size()) << when << ": " << pa[i].first;
    for (const auto& [k, v] : sa) EXPECT_TRUE(bitwise_equal(v, sb.at(k))) << when << ": " << pa[i].first << " " << k;
  }
}

std::shared_ptr<jit::CompiledFunction> compile_step(Trainer& t) {
  return compile([&t](const std::vector<Tensor>& in) { return std::vector<Tensor>{t.step(in[0], in[1]).detach()}; });
}

}  // namespace

// The whole step as one program: every optimizer kind with fused updates, bitwise equal to
// eager at every step; the first step runs eagerly (it creates the optimizer state), the
// second is captured, the rest replay one program.
TEST(CompileStep, WholeStepEqualsEagerBitwiseForEachOptimizer) {
  // RMSprop updates its parameters with in-place ops (p.addcdiv_), not a fused op: the
  // .grad of a parameter written in place is still the parameter's (it once broke the graph
  // as "a tensor it made itself").
  for (Opt kind : {Opt::SgdMomentum, Opt::Adam, Opt::AdamW, Opt::RMSprop}) {
    SCOPED_TRACE(static_cast<int>(kind));
    Trainer e = make_trainer(kind), c = make_trainer(kind);
    auto cf = compile_step(c);
    manual_seed(31);
    for (int s = 0; s < 6; ++s) {
      Tensor x = randn({4, 12}), y = randint(0, 5, {4});
      Tensor le = e.step(x, y).detach();
      Tensor lc = (*cf)({x, y})[0];
      EXPECT_TRUE(bitwise_equal(le, lc)) << "loss of step " << s;
      expect_same_state(e, c, "step " + std::to_string(s));
    }
    EXPECT_EQ(cf->retries(), 1);
    EXPECT_EQ(cf->num_programs(), 1);
    EXPECT_EQ(cf->compiled_calls(), 4);
    EXPECT_TRUE(cf->warnings().empty()) << cf->warnings()[0];
    ASSERT_NE(cf->last_executor(), nullptr);
    // The program holds the backward and the updates: the optimizer's ops are in it.
    bool has_update = false;
    for (const auto& n : cf->last_executor()->graph().nodes())
      has_update = has_update || contains(n.op->name, kind == Opt::RMSprop ? "addcdiv" : "_fused_");
    EXPECT_TRUE(has_update);
  }
}

// Plain SGD has no state: the first step is captured with no .grad defined on entry, the
// second (whose .grad are defined on entry) once more; then one program per state.
TEST(CompileStep, GradientsDefinedOrNotOnEntryAreGuarded) {
  Trainer e = make_trainer(Opt::Sgd), c = make_trainer(Opt::Sgd);
  auto cf = compile_step(c);
  manual_seed(32);
  for (int s = 0; s < 5; ++s) {
    Tensor x = randn({4, 12}), y = randint(0, 5, {4});
    if (s == 3) {  // the user clears the gradients between steps: the first program's case
      e.model->zero_grad();
      c.model->zero_grad();
    }
    EXPECT_TRUE(bitwise_equal(e.step(x, y).detach(), (*cf)({x, y})[0])) << "step " << s;
    expect_same_state(e, c, "step " + std::to_string(s));
  }
  EXPECT_EQ(cf->num_programs(), 2);
  EXPECT_EQ(cf->compiled_calls(), 3);
}

// zero_grad(set_to_none=false) zeroes .grad in place and backward accumulates into it: the
// program reads those tensors by reference (a guard on their identity), so a user who holds
// a .grad sees every update, as in eager mode.
TEST(CompileStep, GradientsZeroedInPlaceStayTheSameTensors) {
  Trainer e = make_trainer(Opt::SgdMomentum), c = make_trainer(Opt::SgdMomentum);
  e.set_to_none = c.set_to_none = false;
  auto cf = compile_step(c);
  manual_seed(33);
  Tensor held;
  for (int s = 0; s < 6; ++s) {
    Tensor x = randn({4, 12}), y = randint(0, 5, {4});
    EXPECT_TRUE(bitwise_equal(e.step(x, y).detach(), (*cf)({x, y})[0])) << "step " << s;
    expect_same_state(e, c, "step " + std::to_string(s));
    const Tensor& g = c.model->parameters()[0].grad();
    if (s == 2) held = g;
    if (s > 2) {
      EXPECT_TRUE(held.is_same(g)) << "step " << s << ": .grad was rebound";
    }
  }
  EXPECT_EQ(cf->num_programs(), 1);
  EXPECT_EQ(cf->compiled_calls(), 4);
}

// Trains e eagerly and c through its compiled step for 3 epochs of 3 steps under StepLR
// (the rate halves each epoch), expecting the same losses and state bitwise; returns the
// compiled step's {programs, compiled calls}. `unfused`: SGD's per-parameter path (it reads
// lr as a number).
std::pair<int, int64_t> train_under_step_lr(Opt kind, bool unfused = false) {
  Trainer e = make_trainer(kind), c = make_trainer(kind);
  if (unfused)
    for (Trainer* t : {&e, &c}) t->opt->param_groups()[0].options.set("fused", 0.0);
  optim::StepLR se(*e.opt, 1, 0.5), sc(*c.opt, 1, 0.5);
  auto cf = compile_step(c);
  manual_seed(34);
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int s = 0; s < 3; ++s) {
      Tensor x = randn({4, 12}), y = randint(0, 5, {4});
      EXPECT_TRUE(bitwise_equal(e.step(x, y).detach(), (*cf)({x, y})[0])) << "epoch " << epoch << " step " << s;
      expect_same_state(e, c, "epoch " + std::to_string(epoch));
    }
    se.step();
    sc.step();
  }
  return {cf->num_programs(), cf->compiled_calls()};
}

// A learning-rate scheduler changes lr (a C++ number) every epoch: the program reads it
// from a tensor refreshed before each replay, so there is no recompile and no stale rate.
TEST(CompileStep, LearningRateSchedulerCausesNoRecompile) {
  for (Opt kind : {Opt::SgdMomentum, Opt::Adam}) {
    const auto [programs, compiled_calls] = train_under_step_lr(kind);
    EXPECT_EQ(programs, 1) << static_cast<int>(kind);
    EXPECT_EQ(compiled_calls, 7) << static_cast<int>(kind);
  }
}

// An optimizer whose update reads lr as a number (RMSprop's in-place ops, SGD with
// fused=false) bakes the rate into the program: then the rate is part of the optimizer's
// guard, and a scheduler's change recompiles instead of replaying the old rate.
TEST(CompileStep, ABakedLearningRateIsGuardedNotReplayedStale) {
  for (Opt kind : {Opt::RMSprop, Opt::Sgd}) {
    const auto [programs, compiled_calls] = train_under_step_lr(kind, /*unfused=*/kind == Opt::Sgd);
    EXPECT_GE(compiled_calls, 3) << static_cast<int>(kind);  // it compiles at all
    EXPECT_GE(programs, 3) << static_cast<int>(kind);        // one per rate
  }
}

// Options other than lr are baked into the update ops: changing one recompiles (a guard on
// the optimizer), never replays the old value.
TEST(CompileStep, ChangingAnOptimizerOptionRecompiles) {
  Trainer e = make_trainer(Opt::SgdMomentum), c = make_trainer(Opt::SgdMomentum);
  auto cf = compile_step(c);
  manual_seed(35);
  for (int s = 0; s < 6; ++s) {
    if (s == 3) {
      e.opt->param_groups()[0].options.set("momentum", 0.5);
      c.opt->param_groups()[0].options.set("momentum", 0.5);
    }
    Tensor x = randn({4, 12}), y = randint(0, 5, {4});
    EXPECT_TRUE(bitwise_equal(e.step(x, y).detach(), (*cf)({x, y})[0])) << "step " << s;
    expect_same_state(e, c, "step " + std::to_string(s));
  }
  EXPECT_EQ(cf->num_programs(), 2);
  ASSERT_FALSE(cf->recompile_reasons().empty());
  EXPECT_TRUE(contains(cf->recompile_reasons().back(), "optimizer 'SGD'")) << cf->recompile_reasons().back();
}

// The step returns its loss with history: its graph was freed by the step's backward, so a
// second backward raises eager mode's error, compiled or not.
TEST(CompileStep, TheReturnedLossRaisesEagersErrorOnASecondBackward) {
  Trainer e = make_trainer(Opt::SgdMomentum), c = make_trainer(Opt::SgdMomentum);
  auto cf = compile([&c](const std::vector<Tensor>& in) { return std::vector<Tensor>{c.step(in[0], in[1])}; });
  manual_seed(36);
  for (int s = 0; s < 4; ++s) {
    Tensor x = randn({4, 12}), y = randint(0, 5, {4});
    Tensor le = e.step(x, y), lc = (*cf)({x, y})[0];
    EXPECT_TRUE(bitwise_equal(le.detach(), lc.detach())) << "step " << s;
    EXPECT_EQ(le.requires_grad(), lc.requires_grad());
    std::string eager_error, compiled_error;
    try {
      le.backward();
    } catch (const RuntimeError& err) {
      eager_error = err.what();
    }
    try {
      lc.backward();
    } catch (const RuntimeError& err) {
      compiled_error = err.what();
    }
    EXPECT_TRUE(contains(eager_error, "backward through the graph a second time")) << eager_error;
    EXPECT_EQ(eager_error, compiled_error) << "step " << s;
  }
  EXPECT_EQ(cf->compiled_calls(), 2);
}

// What a program cannot replay runs eagerly with a notice, and the numbers stay eager's: an
// optimizer that reads tensor data on the host (Adagrad's step count), a backward that
// keeps its graph, a hook that runs after accumulation.
TEST(CompileStep, WhatCannotBeReplayedRunsEagerly) {
  {
    Trainer e = make_trainer(Opt::Adagrad), c = make_trainer(Opt::Adagrad);
    auto cf = compile_step(c);
    manual_seed(37);
    for (int s = 0; s < 3; ++s) {
      Tensor x = randn({4, 12}), y = randint(0, 5, {4});
      EXPECT_TRUE(bitwise_equal(e.step(x, y).detach(), (*cf)({x, y})[0])) << "step " << s;
      expect_same_state(e, c, "Adagrad step " + std::to_string(s));
    }
    EXPECT_EQ(cf->compiled_calls(), 0);
    ASSERT_FALSE(cf->warnings().empty());
    EXPECT_TRUE(contains(cf->warnings()[0], "item()")) << cf->warnings()[0];
  }
  {
    Trainer c = make_trainer(Opt::Sgd);
    auto cf = compile([&c](const std::vector<Tensor>& in) {
      Tensor loss = cross_entropy((*c.model)(in[0]), in[1]);
      loss.backward({}, /*retain_graph=*/true);
      return std::vector<Tensor>{loss};
    });
    manual_seed(38);
    for (int s = 0; s < 2; ++s) {
      Tensor loss = (*cf)({randn({4, 12}), randint(0, 5, {4})})[0];
      loss.backward();  // the retained graph: eager mode allows a second backward
    }
    EXPECT_EQ(cf->compiled_calls(), 0);
    ASSERT_FALSE(cf->warnings().empty());
    EXPECT_TRUE(contains(cf->warnings()[0], "retain_graph")) << cf->warnings()[0];
  }
  {
    Trainer c = make_trainer(Opt::Sgd);
    int calls = 0;
    auto h = autograd::register_post_accumulate_grad_hook(c.model->parameters()[0], [&calls](Tensor&) { ++calls; });
    auto cf = compile_step(c);
    manual_seed(39);
    for (int s = 0; s < 3; ++s) (*cf)({randn({4, 12}), randint(0, 5, {4})});
    EXPECT_EQ(calls, 3);  // the hook ran at every step
    EXPECT_EQ(cf->compiled_calls(), 0);
  }
}

// The reference models of the issue: mlp with SGD momentum and cnn with Adam, 20 steps of
// the whole step compiled equal 20 eager steps bitwise (losses, parameters, .grad, state).
TEST(CompileStep, ReferenceModelsTrainBitwiseEqualToEager) {
  for (bool cnn : {false, true}) {
    SCOPED_TRACE(cnn ? "cnn + Adam" : "mlp + SGD momentum");
    auto make = [cnn] {
      manual_seed(21);
      Trainer t;
      t.model = cnn ? nn::models::fashion_cnn() : nn::models::fashion_mlp();
      if (cnn) {
        t.opt = std::make_unique<optim::Adam>(t.model->parameters(), optim::AdamOptions(1e-3));
      } else {
        t.opt = std::make_unique<optim::SGD>(t.model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
      }
      return t;
    };
    Trainer e = make(), c = make();
    auto cf = compile_step(c);
    manual_seed(99);
    for (int s = 0; s < 20; ++s) {
      Tensor x = cnn ? randn({8, 1, 28, 28}) : randn({8, 784});
      Tensor y = randint(0, 10, {8});
      EXPECT_TRUE(bitwise_equal(e.step(x, y).detach(), (*cf)({x, y})[0])) << "loss of step " << s;
    }
    expect_same_state(e, c, "after 20 steps");
    EXPECT_EQ(cf->num_programs(), 1);
    EXPECT_EQ(cf->compiled_calls(), 18);
  }
}

// The compiled step frees what eager frees when eager frees it: the old .grad at the start
// (zero_grad), each activation after its last use. Its peak is not above eager's.
TEST(CompileStep, PeakMemoryIsNotAboveEagers) {
  for (bool cnn : {false, true}) {
    SCOPED_TRACE(cnn ? "cnn" : "mlp");
    manual_seed(4);
    Trainer t;
    t.model = cnn ? nn::models::fashion_cnn() : nn::models::fashion_mlp();
    t.opt = std::make_unique<optim::SGD>(t.model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    auto cf = compile_step(t);
    Tensor x = randn({16, 1, 28, 28}), y = randint(0, 10, {16});
    auto peak_of = [&](auto&& step) {
      for (int i = 0; i < 3; ++i) step();
      memory::reset_peak_stats();
      const int64_t before = memory::stats().bytes_in_use;
      step();
      return memory::stats().peak_bytes_in_use - before;
    };
    const int64_t eager = peak_of([&] { t.step(x, y); });
    const int64_t compiled = peak_of([&] { (*cf)({x, y}); });
    EXPECT_GT(cf->compiled_calls(), 0);
    EXPECT_LE(compiled, eager) << "compiled step peak " << compiled << " bytes, eager " << eager;
  }
}

// The eager-vs-compiled checker on a training step: the call runs eagerly, the state goes
// back, the program takes the step; results, parameters, optimizer state and .grad are
// compared. A C++ number baked in at capture and changed since is caught (by name).
TEST(CompileStep, TheCheckerComparesAWholeStepAndTakesItOnce) {
  Trainer e = make_trainer(Opt::SgdMomentum), c = make_trainer(Opt::SgdMomentum);
  double scale = 1.0;  // captured by reference: a constant of the program
  auto step = [&scale](Trainer& t, const Tensor& x, const Tensor& y) {
    t.opt->zero_grad();
    Tensor loss = cross_entropy((*t.model)(x), y) * scale;
    loss.backward();
    t.opt->step();
    return loss.detach();
  };
  auto cf = compile([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{step(c, in[0], in[1])}; });
  manual_seed(40);
  for (int s = 0; s < 3; ++s) {
    Tensor x = randn({4, 12}), y = randint(0, 5, {4});
    step(e, x, y);
    (*cf)({x, y});
  }
  ASSERT_EQ(cf->compiled_calls(), 1);
  Tensor x = randn({4, 12}), y = randint(0, 5, {4});
  step(e, x, y);
  jit::CheckReport rep = cf->check_last({x, y});
  EXPECT_TRUE(rep.compiled);
  EXPECT_TRUE(rep.equal) << rep.to_string();
  EXPECT_GT(rep.values_compared, 6);
  expect_same_state(e, c, "after the checked step");  // one step taken, not two
  scale = 2.0;
  rep = cf->check_last({x, y});
  EXPECT_FALSE(rep.equal);
  EXPECT_NE(rep.first_difference.find("output 0"), std::string::npos) << rep.first_difference;
}

// A scheduler stepped inside the compiled function sets C++ numbers no program replays:
// the function runs eagerly with a notice, so the rate keeps changing as in eager mode.
TEST(CompileStep, ASchedulerSteppedInsideRunsEagerly) {
  Trainer e = make_trainer(Opt::SgdMomentum), c = make_trainer(Opt::SgdMomentum);
  optim::StepLR se(*e.opt, 1, 0.5), sc(*c.opt, 1, 0.5);
  auto cf = compile([&](const std::vector<Tensor>& in) {
    Tensor loss = c.step(in[0], in[1]).detach();
    sc.step();
    return std::vector<Tensor>{loss};
  });
  manual_seed(41);
  for (int s = 0; s < 4; ++s) {
    Tensor x = randn({4, 12}), y = randint(0, 5, {4});
    Tensor le = e.step(x, y).detach();
    se.step();
    EXPECT_TRUE(bitwise_equal(le, (*cf)({x, y})[0])) << "step " << s;
    expect_same_state(e, c, "step " + std::to_string(s));
  }
  EXPECT_EQ(e.opt->param_groups()[0].options.lr(), c.opt->param_groups()[0].options.lr());
  EXPECT_EQ(cf->compiled_calls(), 0);
  ASSERT_FALSE(cf->warnings().empty());
  EXPECT_NE(cf->warnings().back().find("scheduler"), std::string::npos) << cf->warnings().back();
}

// A .grad the function reads and then unbinds (a binding to "undefined", with no program
// output) is unbound after every replay too.
TEST(CompileStep, AGradReadThenUnboundIsUnboundOnReplay) {
  Tensor p = randn({3}).requires_grad_();
  Tensor g = full({3}, 2.0);
  auto cf = compile([&p](const std::vector<Tensor>& in) {
    Tensor s = p.grad().sum() + in[0].sum();
    p.set_grad(Tensor());
    return std::vector<Tensor>{s};
  });
  for (int call = 0; call < 3; ++call) {
    p.set_grad(g);  // the same tensor each time: the program reads it by reference
    Tensor s = (*cf)({ones({2})})[0];
    EXPECT_EQ(s.item<double>(), 8.0) << "call " << call;
    EXPECT_FALSE(p.grad().defined()) << "call " << call;
  }
  EXPECT_EQ(cf->compiled_calls(), 2);
}
