// Hand-written tests of the optimizers: options and defaults, errors, parameter groups,
// zero_grad, grad mode and version counters, fused vs per-parameter paths on large and
// odd tensors, state_dict round trips and load errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "optim_test_util.h"

using namespace tandem;
using namespace tandem::optim;
using namespace tandem::optim::testing;

namespace {

Tensor seeded(IntArrayRef sizes, uint64_t seed, DType dt = DType::Float32, double scale = 1.0) {
  // Deterministic values without depending on the RNG: a scrambled sine.
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * std::sin(0.7 * static_cast<double>(i) + 1.3 * static_cast<double>(seed)) *
                                (1.0 + 0.5 * std::cos(0.11 * static_cast<double>(i * (int64_t)seed + 3)));
  return from_vector(v, sizes, dt);
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Optimizer configurations exercised by the generic tests.
struct Config {
  std::string kind;
  std::map<std::string, double> options;
};
std::vector<Config> configs() {
  return {
      {"SGD", {{"lr", 0.1}}},
      {"SGD", {{"lr", 0.05}, {"momentum", 0.9}, {"weight_decay", 0.01}}},
      {"SGD", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}, {"maximize", 1}}},
      {"SGD", {{"lr", 0.05}, {"momentum", 0.7}, {"dampening", 0.2}}},
      {"Adam", {{"lr", 0.01}}},
      {"Adam", {{"lr", 0.01}, {"amsgrad", 1}, {"weight_decay", 0.1}, {"maximize", 1}}},
      {"AdamW", {{"lr", 0.01}}},
      {"AdamW", {{"lr", 0.02}, {"amsgrad", 1}, {"beta1", 0.5}, {"beta2", 0.9}, {"eps", 1e-4}}},
      {"RMSprop", {{"lr", 0.01}, {"momentum", 0.5}, {"centered", 1}}},
      {"RMSprop", {{"lr", 0.01}, {"weight_decay", 0.1}}},
      {"Adagrad", {{"lr", 0.1}, {"lr_decay", 0.01}, {"initial_accumulator_value", 0.1}}},
  };
}

std::string describe(const Config& c) {
  std::string s = c.kind;
  for (const auto& [k, v] : c.options) s += " " + k + "=" + std::to_string(v);
  return s;
}

void set_grads(const std::vector<Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i)
    params[i].set_grad(seeded(params[i].sizes(), 100 + 7 * static_cast<uint64_t>(step) + i, params[i].dtype()));
}

// ---------------------------------------------------------------- options
TEST(OptimOptions, DefaultsMatchPyTorch) {
  SGDOptions s(0.1);
  EXPECT_EQ(s.get("momentum"), 0);
  EXPECT_EQ(s.get("dampening"), 0);
  EXPECT_EQ(s.get("weight_decay"), 0);
  EXPECT_FALSE(s.flag("nesterov"));
  EXPECT_FALSE(s.flag("maximize"));
  EXPECT_TRUE(s.flag("fused"));
  AdamOptions a;
  EXPECT_EQ(a.lr(), 1e-3);
  EXPECT_EQ(a.get("beta1"), 0.9);
  EXPECT_EQ(a.get("beta2"), 0.999);
  EXPECT_EQ(a.get("eps"), 1e-8);
  EXPECT_EQ(a.get("weight_decay"), 0);
  EXPECT_FALSE(a.flag("amsgrad"));
  AdamWOptions w;
  EXPECT_EQ(w.get("weight_decay"), 1e-2);
  EXPECT_EQ(w.lr(), 1e-3);
  RMSpropOptions r;
  EXPECT_EQ(r.lr(), 1e-2);
  EXPECT_EQ(r.get("alpha"), 0.99);
  EXPECT_EQ(r.get("eps"), 1e-8);
  AdagradOptions g;
  EXPECT_EQ(g.lr(), 1e-2);
  EXPECT_EQ(g.get("eps"), 1e-10);
  EXPECT_EQ(g.get("initial_accumulator_value"), 0);
  // Builders chain and keep their type.
  SGDOptions c = SGDOptions(0.5).momentum(0.9).nesterov(true).weight_decay(1e-4);
  EXPECT_EQ(c.lr(), 0.5);
  EXPECT_EQ(c.get("momentum"), 0.9);
  EXPECT_TRUE(c.flag("nesterov"));
  AdamWOptions cw = AdamWOptions(0.1).betas(0.8, 0.9).amsgrad(true);
  EXPECT_EQ(cw.get("beta1"), 0.8);
  EXPECT_EQ(cw.get("beta2"), 0.9);
  EXPECT_EQ(cw.get("weight_decay"), 1e-2);
}

TEST(OptimOptions, MissingOptionRaises) {
  Options o{{"lr", 0.1}};
  EXPECT_EQ(o.lr(), 0.1);
  EXPECT_THROW(o.get("momentum"), ValueError);
  EXPECT_EQ(o.get("momentum", 0.25), 0.25);
  EXPECT_FALSE(o.has("momentum"));
}

// ---------------------------------------------------------------- construction errors
template <typename F>
void expect_value_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected ValueError containing '" << needle << "'";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(OptimErrors, BadHyperParameters) {
  Tensor p = make_param(zeros({3}));
  expect_value_error([&] { SGD({p}, SGDOptions(-0.1)); }, "Invalid learning rate");
  expect_value_error([&] { SGD({p}, SGDOptions(0.1).momentum(-1)); }, "Invalid momentum");
  expect_value_error([&] { SGD({p}, SGDOptions(0.1).weight_decay(-1)); }, "Invalid weight_decay");
  expect_value_error([&] { SGD({p}, SGDOptions(0.1).nesterov(true)); }, "Nesterov momentum requires");
  expect_value_error([&] { SGD({p}, SGDOptions(0.1).nesterov(true).momentum(0.9).dampening(0.1)); },
                     "Nesterov momentum requires");
  expect_value_error([&] { Adam({p}, AdamOptions(-1e-3)); }, "Invalid learning rate");
  expect_value_error([&] { Adam({p}, AdamOptions().eps(-1e-8)); }, "Invalid epsilon");
  expect_value_error([&] { Adam({p}, AdamOptions().betas(1.0, 0.999)); }, "beta parameter at index 0");
  expect_value_error([&] { Adam({p}, AdamOptions().betas(-0.1, 0.999)); }, "beta parameter at index 0");
  expect_value_error([&] { Adam({p}, AdamOptions().betas(0.9, 1.0)); }, "beta parameter at index 1");
  expect_value_error([&] { Adam({p}, AdamOptions().weight_decay(-0.1)); }, "Invalid weight_decay");
  expect_value_error([&] { AdamW({p}, AdamWOptions().betas(0.9, 1.5)); }, "beta parameter at index 1");
  expect_value_error([&] { AdamW({p}, AdamWOptions(-1)); }, "Invalid learning rate");
  expect_value_error([&] { RMSprop({p}, RMSpropOptions().alpha(-0.5)); }, "Invalid alpha");
  expect_value_error([&] { RMSprop({p}, RMSpropOptions().momentum(-0.5)); }, "Invalid momentum");
  expect_value_error([&] { RMSprop({p}, RMSpropOptions().eps(-1)); }, "Invalid epsilon");
  expect_value_error([&] { Adagrad({p}, AdagradOptions().lr_decay(-1)); }, "Invalid lr_decay");
  expect_value_error([&] { Adagrad({p}, AdagradOptions().initial_accumulator_value(-1)); },
                     "Invalid initial_accumulator_value");
  expect_value_error([&] { Adagrad({p}, AdagradOptions().eps(-1)); }, "Invalid epsilon");
  // Flags must be 0 or 1.
  SGDOptions bad(0.1);
  bad.set("maximize", 2);
  expect_value_error([&] { SGD({p}, bad); }, "expected 0 or 1");
  // The message names the optimizer.
  try {
    Adam({p}, AdamOptions(-1));
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[Adam]", 0), 0u) << e.what();
  }
}

TEST(OptimErrors, BadParameters) {
  Tensor p = make_param(zeros({3}));
  expect_value_error([&] { SGD(std::vector<Tensor>{}, SGDOptions(0.1)); }, "empty parameter list");
  expect_value_error([&] { SGD(std::vector<ParamGroup>{}, SGDOptions(0.1)); }, "empty parameter list");
  expect_value_error([&] { SGD({Tensor()}, SGDOptions(0.1)); }, "undefined");
  expect_value_error([&] { SGD({zeros({3}, DType::Int64)}, SGDOptions(0.1)); }, "floating");
  Tensor nonleaf = p.mul(2.0);
  expect_value_error([&] { SGD({nonleaf}, SGDOptions(0.1)); }, "non-leaf");
  expect_value_error([&] { SGD({p, p}, SGDOptions(0.1)); }, "twice");
  expect_value_error([&] { SGD({ParamGroup{{p}, {}}, ParamGroup{{p}, {}}}, SGDOptions(0.1)); },
                     "more than one parameter group");
  // Group options are checked like the defaults, and unknown names are rejected.
  Tensor q = make_param(zeros({2}));
  expect_value_error([&] { SGD({ParamGroup{{p}, {}}, ParamGroup{{q}, Options{{"lr", -1.0}}}}, SGDOptions(0.1)); },
                     "Invalid learning rate");
  expect_value_error([&] { SGD({ParamGroup{{p}, Options{{"weight_decy", 0.1}}}}, SGDOptions(0.1)); },
                     "unknown option 'weight_decy'");
  SGD opt({p}, SGDOptions(0.1));
  expect_value_error([&] { opt.add_param_group(ParamGroup{{p}, {}}); }, "more than one parameter group");
  expect_value_error([&] { opt.add_param_group(ParamGroup{{}, {}}); }, "empty parameter list");
  EXPECT_EQ(opt.param_groups().size(), 1u);
  expect_value_error([&] { opt.state(q); }, "not a parameter");
}

// ---------------------------------------------------------------- groups, zero_grad, skipping
TEST(Optimizer, ParamGroupsUseTheirOwnOptions) {
  Tensor a = make_param(tensor({1.0f, 2.0f})), b = make_param(tensor({3.0f})), c = make_param(tensor({-1.0f}));
  SGD opt({ParamGroup{{a}, {}}, ParamGroup{{b}, Options{{"lr", 0.5}}}}, SGDOptions(0.1));
  opt.add_param_group(ParamGroup{{c}, Options{{"lr", 0.01}, {"weight_decay", 1.0}}});
  ASSERT_EQ(opt.param_groups().size(), 3u);
  EXPECT_EQ(opt.param_groups()[1].options.lr(), 0.5);
  EXPECT_EQ(opt.param_groups()[1].options.get("momentum"), 0);  // filled from the defaults
  EXPECT_EQ(opt.param_groups()[2].options.get("weight_decay"), 1.0);
  a.set_grad(tensor({1.0f, 1.0f}));
  b.set_grad(tensor({1.0f}));
  c.set_grad(tensor({1.0f}));
  opt.step();
  EXPECT_EQ(values(a), (std::vector<double>{static_cast<float>(1.0f - 0.1f), static_cast<float>(2.0f - 0.1f)}));
  EXPECT_EQ(values(b)[0], 2.5);
  // weight decay: g = 1 + 1 * (-1) = 0 -> unchanged.
  EXPECT_EQ(values(c)[0], -1.0);
}

TEST(Optimizer, ParametersWithoutGradAreSkipped) {
  Tensor a = make_param(tensor({1.0f})), b = make_param(tensor({2.0f}));
  SGD opt({a, b}, SGDOptions(0.1).momentum(0.9));
  a.set_grad(tensor({1.0f}));
  opt.step();
  EXPECT_EQ(values(b)[0], 2.0);
  EXPECT_TRUE(opt.state(a).count("momentum_buffer"));
  EXPECT_TRUE(opt.state(b).empty());
  // PyTorch keeps no buffer without momentum either.
  Tensor c = make_param(tensor({1.0f}));
  SGD plain({c}, SGDOptions(0.1));
  c.set_grad(tensor({1.0f}));
  plain.step();
  EXPECT_TRUE(plain.state(c).empty());
}

TEST(Optimizer, ZeroGrad) {
  Tensor a = make_param(tensor({1.0f, 2.0f})), b = make_param(tensor({3.0f}));
  Adam opt({a, b});
  a.set_grad(tensor({1.0f, 1.0f}));
  b.set_grad(tensor({2.0f}));
  Tensor ga = a.grad();
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_alias_of(ga));  // zeroed in place
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{0}));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  opt.zero_grad();  // no grads: nothing to do
}

TEST(Optimizer, StepRunsWithoutGradAndBumpsVersions) {
  for (bool fused : {true, false}) {
    Tensor p = make_param(seeded({4, 5}, 1));
    Adam opt({p}, AdamOptions(0.1).fused(fused).amsgrad(true));
    p.set_grad(seeded({4, 5}, 2));
    const uint64_t v0 = p._version();
    ASSERT_TRUE(is_grad_enabled());
    opt.step();  // in place on a leaf that requires grad: must run under NoGradGuard
    EXPECT_TRUE(is_grad_enabled());
    EXPECT_GT(p._version(), v0) << "fused=" << fused;
    EXPECT_TRUE(p.is_leaf());
    EXPECT_TRUE(p.requires_grad());
    EXPECT_EQ(p.grad_fn(), nullptr);
    const Tensor m = opt.state(p).at("exp_avg");
    const uint64_t mv = m._version();
    p.set_grad(seeded({4, 5}, 3));
    opt.step();
    EXPECT_GT(m._version(), mv);
    EXPECT_EQ(opt.state(p).at("step").item<double>(), 2.0);
  }
  for (bool fused : {true, false}) {
    Tensor p = make_param(seeded({7}, 1));
    SGD opt({p}, SGDOptions(0.1).momentum(0.9).fused(fused));
    p.set_grad(seeded({7}, 2));
    const uint64_t v0 = p._version();
    opt.step();
    EXPECT_GT(p._version(), v0);
  }
}

TEST(Optimizer, ClosureRunsWithGradAndReturnsLoss) {
  Tensor w = make_param(tensor({2.0f}));
  SGD opt({w}, SGDOptions(0.1));
  int calls = 0;
  auto closure = [&] {
    ++calls;
    EXPECT_TRUE(is_grad_enabled());
    opt.zero_grad();
    Tensor loss = w * w;  // d/dw = 2w = 4
    loss.backward(ones({1}));
    return loss;
  };
  Tensor loss;
  {
    NoGradGuard ng;
    loss = opt.step(closure);
  }
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(loss.defined());
  EXPECT_EQ(loss.item<double>(), 4.0);
  EXPECT_FLOAT_EQ(values(w)[0], 2.0f - 0.1f * 4.0f);
  EXPECT_FALSE(opt.step().defined());
}

// ---------------------------------------------------------------- fused vs per-parameter path
// Large tensors (> kGrainSize: the parallel loop), both dtypes, several steps: bitwise
// equal on this build.
TEST(OptimFused, LargeTensorsMatchPerParameterPathBitwise) {
  for (const Config& c : configs()) {
    if (c.kind != "SGD" && c.kind != "Adam" && c.kind != "AdamW") continue;
    for (DType dt : {DType::Float32, DType::Float64}) {
      std::vector<Tensor> pa = {make_param(seeded({70001}, 1, dt)), make_param(seeded({3, 50}, 2, dt))};
      std::vector<Tensor> pb = {make_param(pa[0]), make_param(pa[1])};
      auto oa = c.options, ob = c.options;
      oa["fused"] = 1;
      ob["fused"] = 0;
      auto A = make_optimizer(c.kind, {ParamGroup{pa, {}}}, oa);
      auto B = make_optimizer(c.kind, {ParamGroup{pb, {}}}, ob);
      for (int s = 0; s < 3; ++s) {
        set_grads(pa, s);
        set_grads(pb, s);
        A->step();
        B->step();
      }
      for (size_t i = 0; i < pa.size(); ++i)
        EXPECT_TRUE(paths_agree(pa[i], pb[i]))
            << describe(c) << " " << dtype_name(dt) << " param " << i << ": " << max_ulp_diff(pa[i], pb[i]) << " ulp";
      auto sa = A->state_dict(), sb = B->state_dict();
      ASSERT_EQ(sa.state.size(), sb.state.size());
      for (size_t k = 0; k < sa.state.size(); ++k)
        EXPECT_TRUE(paths_agree(sa.state[k].second, sb.state[k].second)) << describe(c) << " " << sa.state[k].first;
    }
  }
}

// Non-contiguous and reduced-precision parameters take the per-parameter path.
TEST(OptimFused, IneligibleTensorsFallBack) {
  // A transposed (non-contiguous) parameter gives the same values as a contiguous one.
  Tensor base = seeded({5, 4}, 3);
  Tensor pt = base.t();  // [4, 5] view
  pt.requires_grad_(true);
  ASSERT_FALSE(pt.is_contiguous());
  Tensor pc = make_param(pt.contiguous());
  Adam A({pt}, AdamOptions(0.1).amsgrad(true));
  Adam B({pc}, AdamOptions(0.1).amsgrad(true));
  for (int s = 0; s < 3; ++s) {
    Tensor g = seeded({4, 5}, 10 + static_cast<uint64_t>(s));
    pt.set_grad(g);
    pc.set_grad(g);
    A.step();
    B.step();
  }
  EXPECT_TRUE(paths_agree(pt.contiguous(), pc));
  EXPECT_FALSE(pt.is_contiguous());  // updated in place, geometry kept

  // float16 / bfloat16 parameters: close to the float32 result.
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor p32 = make_param(seeded({6}, 4));
    Tensor plo = make_param(p32.to(dt));
    SGD o32({p32}, SGDOptions(0.1).momentum(0.9));
    SGD olo({plo}, SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < 3; ++s) {
      Tensor g = seeded({6}, 20 + static_cast<uint64_t>(s));
      p32.set_grad(g);
      plo.set_grad(g.to(dt));
      o32.step();
      olo.step();
    }
    EXPECT_EQ(plo.dtype(), dt);
    auto a = values(p32), b = values(plo);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.05) << dtype_name(dt);
    EXPECT_EQ(olo.state(plo).at("momentum_buffer").dtype(), dt);
  }
}

// The fused updates are registry ops: an optimizer step dispatches them (so capture and
// the profiler see it), the dispatcher bumps the written tensors' versions, and a changed
// learning rate reaches them through the group's lr tensor.
TEST(OptimFused, StepDispatchesTheFusedOpsAndReadsTheCurrentLearningRate) {
  struct Names : DispatchObserver {
    std::vector<std::string> seen;
    void on_enter(const OpDef& op, ArrayRef<Tensor>, ArrayRef<AttrValue>, int) override { seen.push_back(op.name); }
  };
  for (const char* kind : {"SGD", "Adam", "AdamW"}) {
    std::vector<Tensor> pa = {make_param(seeded({40}, 1))}, pb = {make_param(pa[0])};
    std::map<std::string, double> o{{"lr", 0.1}};
    if (std::string(kind) == "SGD") o["momentum"] = 0.9;
    auto oa = o, ob = o;
    ob["fused"] = 0;
    auto A = make_optimizer(kind, {ParamGroup{pa, {}}}, oa);
    auto B = make_optimizer(kind, {ParamGroup{pb, {}}}, ob);
    for (int s = 0; s < 4; ++s) {
      // A schedule-like change of the learning rate between steps.
      for (auto* opt : {A.get(), B.get()}) opt->param_groups()[0].options.set("lr", 0.1 / (s + 1));
      set_grads(pa, s);
      set_grads(pb, s);
      const int64_t v0 = pa[0]._version();
      Names names;
      {
        ObserverGuard g(&names);
        A->step();
      }
      const std::string op = std::string("_fused_") + (std::string(kind) == "SGD" ? "sgd_" : std::string(kind) == "Adam" ? "adam_" : "adamw_");
      EXPECT_NE(std::find(names.seen.begin(), names.seen.end(), op), names.seen.end()) << kind;
      EXPECT_GT(pa[0]._version(), v0) << kind;
      B->step();
      EXPECT_TRUE(paths_agree(pa[0], pb[0])) << kind << " step " << s;
    }
    EXPECT_EQ(A->param_groups()[0].lr_tensor.item<double>(), 0.1 / 4) << kind;
  }
}

// The ops check what they get, naming the op and the argument.
TEST(OptimFused, OpsRejectBadArgumentsByName) {
  Tensor p = zeros({4}), g = ones({4}), buf = zeros({4}), lr = full({}, 0.1, DType::Float64);
  auto raises = [](const std::function<void()>& f, const std::string& what) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no error, expected one mentioning " << what;
  };
  raises([&] { _fused_sgd_(p, ones({5}), buf, lr, 0.9, 0, 0, false, false, false); }, "grad has shape [5]");
  raises([&] { _fused_sgd_(p, g.to(DType::Float64), buf, lr, 0.9, 0, 0, false, false, false); }, "grad has dtype float64");
  raises([&] { _fused_sgd_(p, g, Tensor(), lr, 0.9, 0, 0, false, false, false); }, "needs a momentum_buffer");
  raises([&] { _fused_sgd_(p, g, buf, lr, 0.0, 0, 0, false, false, false); }, "takes no momentum_buffer");
  raises([&] { _fused_sgd_(p, g, Tensor(), ones({2}), 0.0, 0, 0, false, false, false); }, "lr has shape [2]");
  raises([&] { _fused_sgd_(p.to(DType::Int64), g.to(DType::Int64), Tensor(), lr, 0.0, 0, 0, false, false, false); },
         "expected float32 or float64");
  raises([&] { _fused_sgd_(zeros({4, 2}).t(), ones({2, 4}), Tensor(), lr, 0.0, 0, 0, false, false, false); },
         "not contiguous");
  // The parameter and its momentum buffer in one storage: refused before anything is written.
  Tensor both = zeros({8});
  raises([&] { _fused_sgd_(both.slice(0, 0, 4), g, both.slice(0, 2, 6), lr, 0.9, 0, 0, false, false, false); },
         "single memory location");
  EXPECT_EQ(both.abs().sum().item<double>(), 0.0);
  Tensor step = full({}, 1.0);
  raises([&] { _fused_adam_(p, g, zeros({4}), zeros({4}), Tensor(), step, lr, 0.9, 0.999, 1e-8, 0, true, false); },
         "needs a max_exp_avg_sq");
  raises([&] { _fused_adam_(p, g, zeros({4}), Tensor(), Tensor(), step, lr, 0.9, 0.999, 1e-8, 0, false, false); },
         "exp_avg_sq");
  raises([&] { _fused_adamw_(p, g, zeros({4}), zeros({4}), Tensor(), full({}, 1, DType::Int64), lr, 0.9, 0.999, 1e-8, 0,
                             false, false); },
         "state_step has dtype int64");
  EXPECT_EQ(p.abs().sum().item<double>(), 0.0);
}

// 0-d and empty parameters work on both paths.
TEST(OptimFused, ScalarAndEmptyParameters) {
  for (const Config& c : configs()) {
    std::vector<Tensor> outs[2];
    for (int fused = 0; fused < 2; ++fused) {
      auto opts = c.options;
      if (c.kind == "SGD" || c.kind == "Adam" || c.kind == "AdamW") opts["fused"] = fused;
      std::vector<Tensor> p = {make_param(full({}, 0.5)), make_param(zeros({0, 3}))};
      auto opt = make_optimizer(c.kind, {ParamGroup{p, {}}}, opts);
      for (int s = 0; s < 3; ++s) {
        p[0].set_grad(full({}, 0.25 * (s + 1)));
        p[1].set_grad(zeros({0, 3}));
        opt->step();
      }
      EXPECT_EQ(p[0].dim(), 0);
      EXPECT_NE(p[0].item<double>(), 0.5) << describe(c);
      EXPECT_EQ(p[1].numel(), 0);
      outs[fused] = p;
    }
    EXPECT_TRUE(paths_agree(outs[0][0], outs[1][0])) << describe(c);
  }
}

// ---------------------------------------------------------------- state_dict
// Save after k steps, load into a fresh optimizer over copies of the parameters, continue:
// the same values as an uninterrupted run, bit for bit.
TEST(OptimStateDict, RoundTripContinuesExactly) {
  for (const Config& c : configs()) {
    for (bool fused : {true, false}) {
      auto opts = c.options;
      if (c.kind == "SGD" || c.kind == "Adam" || c.kind == "AdamW") opts["fused"] = fused ? 1 : 0;
      else if (!fused) continue;
      std::vector<Tensor> p = {make_param(seeded({3, 4}, 1)), make_param(seeded({5}, 2))};
      auto opt = make_optimizer(c.kind, {ParamGroup{{p[0]}, {}}, ParamGroup{{p[1]}, Options{{"lr", 0.002}}}}, opts);
      for (int s = 0; s < 3; ++s) {
        set_grads(p, s);
        opt->step();
      }
      OptimizerStateDict sd = opt->state_dict();
      std::vector<Tensor> q = {make_param(p[0]), make_param(p[1])};
      auto opt2 = make_optimizer(c.kind, {ParamGroup{{q[0]}, {}}, ParamGroup{{q[1]}, {}}}, opts);
      opt2->load_state_dict(sd);
      EXPECT_EQ(opt2->param_groups()[1].options.lr(), 0.002) << describe(c);
      for (int s = 3; s < 6; ++s) {
        set_grads(p, s);
        set_grads(q, s);
        opt->step();
        opt2->step();
      }
      for (size_t i = 0; i < p.size(); ++i) EXPECT_TRUE(paths_agree(p[i], q[i])) << describe(c) << " param " << i;
    }
  }
}

TEST(OptimStateDict, Format) {
  Tensor a = make_param(seeded({2, 3}, 1)), b = make_param(seeded({4}, 2)), c = make_param(seeded({1}, 3));
  Adam opt({ParamGroup{{a, b}, {}}, ParamGroup{{c}, Options{{"lr", 0.5}, {"amsgrad", 1}}}}, AdamOptions(0.01));
  a.set_grad(seeded({2, 3}, 4));
  c.set_grad(seeded({1}, 5));
  opt.step();
  OptimizerStateDict sd = opt.state_dict();
  EXPECT_EQ(sd.optimizer, "Adam");
  std::vector<std::string> keys;
  for (const auto& [k, t] : sd.state) keys.push_back(k);
  // b has no gradient: no state. Names are ordered per parameter.
  EXPECT_EQ(keys, (std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq", "state.0.step",
                                            "state.2.exp_avg", "state.2.exp_avg_sq", "state.2.max_exp_avg_sq",
                                            "state.2.step"}));
  ASSERT_EQ(sd.param_groups.size(), 2u);
  EXPECT_EQ(sd.param_groups[0].params, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sd.param_groups[1].params, (std::vector<int64_t>{2}));
  EXPECT_EQ(sd.param_groups[1].options.at("lr"), 0.5);
  EXPECT_EQ(sd.param_groups[0].options.at("lr"), 0.01);
  EXPECT_EQ(sd.param_groups[0].options.at("beta2"), 0.999);
  EXPECT_EQ(sd.state[2].second.dim(), 0);
  EXPECT_EQ(sd.state[2].second.dtype(), DType::Float32);
  // The snapshot is a copy.
  Tensor saved = sd.state[0].second;
  saved.fill_(123.0);
  EXPECT_NE(values(opt.state(a).at("exp_avg"))[0], 123.0);
}

TEST(OptimStateDict, LoadCastsToTheParameterDtype) {
  Tensor a = make_param(seeded({3}, 1));
  SGD opt({a}, SGDOptions(0.1).momentum(0.9));
  a.set_grad(seeded({3}, 2));
  opt.step();
  auto sd = opt.state_dict();
  Tensor b = make_param(a.to(DType::Float64));
  SGD opt2({b}, SGDOptions(0.1).momentum(0.9));
  opt2.load_state_dict(sd);
  EXPECT_EQ(opt2.state(b).at("momentum_buffer").dtype(), DType::Float64);
  EXPECT_EQ(values(opt2.state(b).at("momentum_buffer")), values(opt.state(a).at("momentum_buffer")));
}

TEST(OptimStateDict, LoadErrorsLeaveTheOptimizerUnchanged) {
  Tensor a = make_param(seeded({3}, 1)), b = make_param(seeded({2}, 2));
  Adam src({a, b}, AdamOptions(0.01));
  a.set_grad(seeded({3}, 3));
  b.set_grad(seeded({2}, 4));
  src.step();
  const OptimizerStateDict good = src.state_dict();

  Tensor x = make_param(seeded({3}, 1)), y = make_param(seeded({2}, 2));
  Adam dst({x, y}, AdamOptions(0.05));
  auto check_unchanged = [&] {
    EXPECT_TRUE(dst.state(x).empty());
    EXPECT_EQ(dst.param_groups()[0].options.lr(), 0.05);
  };
  auto expect_error = [&](const OptimizerStateDict& sd, const std::string& needle, bool shape = false) {
    try {
      dst.load_state_dict(sd);
      ADD_FAILURE() << "expected an error containing '" << needle << "'";
    } catch (const ShapeError& e) {
      EXPECT_TRUE(shape) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    } catch (const ValueError& e) {
      EXPECT_FALSE(shape) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    check_unchanged();
  };
  {
    auto sd = good;
    sd.optimizer = "SGD";
    expect_error(sd, "got the state of a SGD optimizer");
  }
  {
    auto sd = good;
    sd.param_groups.push_back(sd.param_groups[0]);
    expect_error(sd, "different number of parameter groups");
  }
  {
    auto sd = good;
    sd.param_groups[0].params.pop_back();
    expect_error(sd, "doesn't match the size");
  }
  {
    auto sd = good;
    sd.state[0].first = "state.x.exp_avg";
    expect_error(sd, "malformed state key");
  }
  {
    auto sd = good;
    sd.state[0].first = "momentum";
    expect_error(sd, "malformed state key");
  }
  {
    auto sd = good;
    sd.state[0].first = "state.7.exp_avg";
    expect_error(sd, "not in param_groups");
  }
  {
    auto sd = good;
    sd.state[0].first = "state.0.momentum_buffer";
    expect_error(sd, "unknown state 'momentum_buffer'");
  }
  {
    auto sd = good;
    sd.state[0].second = zeros({4});
    expect_error(sd, "shape", /*shape=*/true);
  }
  {
    auto sd = good;
    sd.param_groups[0].options["lr"] = -1;
    expect_error(sd, "Invalid learning rate");
  }
  {
    auto sd = good;
    sd.state.push_back(sd.state[0]);
    expect_error(sd, "duplicate state key");
  }
  // And the good one loads.
  dst.load_state_dict(good);
  EXPECT_EQ(dst.param_groups()[0].options.lr(), 0.01);
  EXPECT_EQ(dst.state(x).at("step").item<double>(), 1.0);
}

// ---------------------------------------------------------------- per-optimizer details
TEST(Adagrad, StateIsCreatedPerGroupWithTheGroupsInitialValue) {
  Tensor a = make_param(seeded({2}, 1)), b = make_param(seeded({3}, 2));
  Adagrad opt({ParamGroup{{a}, {}}, ParamGroup{{b}, Options{{"initial_accumulator_value", 0.5}}}},
              AdagradOptions(0.1).initial_accumulator_value(0.25));
  // Created eagerly (PyTorch's constructor does), before any step.
  EXPECT_EQ(values(opt.state(a).at("sum")), (std::vector<double>{0.25, 0.25}));
  EXPECT_EQ(values(opt.state(b).at("sum")), (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(opt.state(a).at("step").item<double>(), 0.0);
  Tensor c = make_param(seeded({1}, 3));
  opt.add_param_group(ParamGroup{{c}, {}});
  EXPECT_EQ(values(opt.state(c).at("sum")), (std::vector<double>{0.25}));
  EXPECT_EQ(opt.state_dict().state.size(), 6u);
}

TEST(SGD, MomentumTurnedOnLaterCreatesTheBuffer) {
  Tensor p = make_param(tensor({1.0f}));
  SGD opt({p}, SGDOptions(0.1));
  p.set_grad(tensor({1.0f}));
  opt.step();
  EXPECT_TRUE(opt.state(p).empty());
  opt.param_groups()[0].options.set("momentum", 0.9);  // as OneCycleLR's momentum cycling does
  opt.step();
  ASSERT_TRUE(opt.state(p).count("momentum_buffer"));
  EXPECT_EQ(values(opt.state(p).at("momentum_buffer"))[0], 1.0);
  EXPECT_FLOAT_EQ(values(p)[0], 0.8f);
}

TEST(AdamW, DecayAppliesEvenWithoutGradientSignal) {
  // Zero gradient: Adam leaves the parameter alone, AdamW shrinks it by (1 - lr * wd).
  for (bool fused : {true, false}) {
    Tensor a = make_param(tensor({2.0f})), w = make_param(tensor({2.0f}));
    Adam adam({a}, AdamOptions(0.1).fused(fused));
    AdamW adamw({w}, AdamWOptions(0.1).weight_decay(0.5).fused(fused));
    a.set_grad(zeros({1}));
    w.set_grad(zeros({1}));
    adam.step();
    adamw.step();
    EXPECT_EQ(values(a)[0], 2.0);
    EXPECT_EQ(values(w)[0], static_cast<double>(2.0f * static_cast<float>(1.0 - 0.1 * 0.5)));
  }
}

}  // namespace
