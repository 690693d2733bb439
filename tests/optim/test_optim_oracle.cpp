// Replays tests/data/optim.json (tests/oracle/gen_optim.py, torch.optim 1.13): every
// optimizer case through both the fused and the per-parameter path, every scheduler's lr
// sequence, and the clipping utilities. One GoogleTest test per case.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "optim_test_util.h"
#include "support/tensor_json.h"

using namespace tandem;
using namespace tandem::optim;
using namespace tandem::optim::testing;
using nlohmann::json;

namespace tandem::optim::testing {
double max_ulp_diff(const Tensor& a, const Tensor& b) {
  Tensor ca = a.contiguous(), cb = b.contiguous();
  double worst = 0;
  auto ord32 = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  auto ord64 = [](double f) {
    int64_t i;
    std::memcpy(&i, &f, 8);
    return i < 0 ? static_cast<double>(INT64_MIN) - static_cast<double>(i) : static_cast<double>(i);
  };
  for (int64_t k = 0; k < ca.numel(); ++k) {
    double d;
    if (ca.dtype() == DType::Float32) {
      float x = ca.data_ptr<float>()[k], y = cb.data_ptr<float>()[k];
      if (std::isnan(x) && std::isnan(y)) continue;
      d = std::fabs(static_cast<double>(ord32(x) - ord32(y)));
    } else {
      double x = ca.data_ptr<double>()[k], y = cb.data_ptr<double>()[k];
      if (std::isnan(x) && std::isnan(y)) continue;
      d = std::fabs(ord64(x) - ord64(y));
    }
    worst = std::max(worst, d);
  }
  return worst;
}
}  // namespace tandem::optim::testing

namespace {

json load_doc() {
  std::ifstream in(std::filesystem::path(TANDEM_TEST_DATA_DIR) / "optim.json");
  return json::parse(in);
}

std::map<std::string, double> options_from(const json& j) {
  std::map<std::string, double> o;
  for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = oracle::json_number(it.value());
  return o;
}

// Runs one optimizer case; returns the parameters after each step and the final state dict.
struct CaseRun {
  std::vector<std::vector<Tensor>> after;  // [step][param]
  OptimizerStateDict state;
};

CaseRun run_case(const json& c, bool fused) {
  std::vector<Tensor> params;
  for (const auto& t : c.at("params")) params.push_back(make_param(oracle::tensor_from_json(t)));
  std::vector<ParamGroup> groups;
  for (const auto& g : c.at("groups")) {
    ParamGroup pg;
    for (int64_t i : g.at("params").get<std::vector<int64_t>>()) pg.params.push_back(params[static_cast<size_t>(i)]);
    pg.options = Options(options_from(g.at("options")));
    groups.push_back(pg);
  }
  auto defaults = options_from(c.at("defaults"));
  const std::string kind = c.at("optimizer");
  if (kind == "SGD" || kind == "Adam" || kind == "AdamW") defaults["fused"] = fused ? 1 : 0;
  auto opt = make_optimizer(kind, groups, defaults);
  CaseRun r;
  for (const auto& step_grads : c.at("grads")) {
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& g = step_grads[i];
      params[i].set_grad(g.is_null() ? Tensor() : oracle::tensor_from_json(g));
    }
    opt->step();
    std::vector<Tensor> now;
    for (const Tensor& p : params) now.push_back(p.detach().clone());
    r.after.push_back(now);
  }
  r.state = opt->state_dict();
  return r;
}

class OptimizerCase : public ::testing::Test {
 public:
  OptimizerCase(json c, bool fused) : case_(std::move(c)), fused_(fused) {}
  void TestBody() override {
    CaseRun r = run_case(case_, fused_);
    // On the x86-64 FMA machine the data was made on, every value is bitwise equal to
    // torch's; the tolerance leaves room for other CPUs (torch's vector kernels fuse
    // differently without FMA).
    const bool f64 = case_.at("dtype") == "float64";
    const double rtol = f64 ? 1e-12 : 2e-5, atol = f64 ? 1e-13 : 2e-6;
    const auto& expected = case_.at("expected");
    ASSERT_EQ(r.after.size(), expected.size());
    for (size_t s = 0; s < expected.size(); ++s)
      for (size_t i = 0; i < expected[s].size(); ++i) {
        std::string diff = oracle::compare_tensors(r.after[s][i], oracle::tensor_from_json(expected[s][i]), rtol, atol);
        EXPECT_TRUE(diff.empty()) << "step " << s << " param " << i << ": " << diff;
      }
    // Final state vs torch's state_dict (same names, step counts included).
    const auto& want_state = case_.at("state");
    std::map<std::string, Tensor> got;
    for (const auto& [k, t] : r.state.state) got[k] = t;
    EXPECT_EQ(got.size(), want_state.size());
    for (auto it = want_state.begin(); it != want_state.end(); ++it) {
      auto g = got.find(it.key());
      ASSERT_NE(g, got.end()) << "missing state " << it.key();
      Tensor want = oracle::tensor_from_json(it.value());
      Tensor have = g->second;
      if (it.key().find(".step") != std::string::npos) {
        EXPECT_EQ(have.item<double>(), want.item<double>()) << it.key();
        EXPECT_EQ(have.dtype(), DType::Float32) << it.key();
        continue;
      }
      std::string diff = oracle::compare_tensors(have, want, rtol, atol);
      EXPECT_TRUE(diff.empty()) << it.key() << ": " << diff;
    }
  }

 private:
  json case_;
  bool fused_;
};

// Fused and per-parameter paths agree bit for bit (kernels/cpu/optim.h), states included.
class FusedVsUnfusedCase : public ::testing::Test {
 public:
  explicit FusedVsUnfusedCase(json c) : case_(std::move(c)) {}
  void TestBody() override {
    CaseRun a = run_case(case_, true), b = run_case(case_, false);
    for (size_t s = 0; s < a.after.size(); ++s)
      for (size_t i = 0; i < a.after[s].size(); ++i)
        // paths_agree: bitwise in optimised builds, close in the -O1 sanitizer build.
        EXPECT_TRUE(paths_agree(a.after[s][i], b.after[s][i]))
            << "step " << s << " param " << i << ": " << max_ulp_diff(a.after[s][i], b.after[s][i]) << " ulp apart";
    ASSERT_EQ(a.state.state.size(), b.state.state.size());
    for (size_t k = 0; k < a.state.state.size(); ++k) {
      EXPECT_EQ(a.state.state[k].first, b.state.state[k].first);
      EXPECT_TRUE(paths_agree(a.state.state[k].second, b.state.state[k].second)) << a.state.state[k].first;
    }
  }

 private:
  json case_;
};

// ---------------------------------------------------------------- schedulers
std::shared_ptr<LRScheduler> build_scheduler(Optimizer& opt, const json& s) {
  const std::string type = s.at("type");
  if (type == "StepLR") return std::make_shared<StepLR>(opt, s.at("step_size").get<int64_t>(), s.value("gamma", 0.1));
  if (type == "MultiStepLR")
    return std::make_shared<MultiStepLR>(opt, s.at("milestones").get<std::vector<int64_t>>(), s.value("gamma", 0.1));
  if (type == "ExponentialLR") return std::make_shared<ExponentialLR>(opt, s.at("gamma").get<double>());
  if (type == "CosineAnnealingLR")
    return std::make_shared<CosineAnnealingLR>(opt, s.at("T_max").get<int64_t>(), s.value("eta_min", 0.0));
  if (type == "LinearLR")
    return std::make_shared<LinearLR>(opt, s.value("start_factor", 1.0 / 3), s.value("end_factor", 1.0),
                                      s.value("total_iters", int64_t{5}));
  if (type == "OneCycleLR") {
    OneCycleOptions o;
    o.max_lrs = s.at("max_lr").get<std::vector<double>>();
    if (s.contains("total_steps")) o.total_steps = s.at("total_steps").get<int64_t>();
    if (s.contains("epochs")) o.epochs = s.at("epochs").get<int64_t>();
    if (s.contains("steps_per_epoch")) o.steps_per_epoch = s.at("steps_per_epoch").get<int64_t>();
    o.pct_start = s.value("pct_start", 0.3);
    o.anneal_strategy = s.value("anneal_strategy", std::string("cos"));
    o.cycle_momentum = s.value("cycle_momentum", true);
    if (s.contains("base_momentum")) o.base_momentums = s.at("base_momentum").get<std::vector<double>>();
    if (s.contains("max_momentum")) o.max_momentums = s.at("max_momentum").get<std::vector<double>>();
    o.div_factor = s.value("div_factor", 25.0);
    o.final_div_factor = s.value("final_div_factor", 1e4);
    o.three_phase = s.value("three_phase", false);
    return std::make_shared<OneCycleLR>(opt, o);
  }
  if (type == "SequentialLR") {
    std::vector<std::shared_ptr<LRScheduler>> subs;
    for (const auto& sub : s.at("schedulers")) subs.push_back(build_scheduler(opt, sub));
    return std::make_shared<SequentialLR>(opt, subs, s.at("milestones").get<std::vector<int64_t>>());
  }
  throw std::runtime_error("unknown scheduler " + type);
}

struct SchedFixture {
  std::vector<Tensor> params;
  std::unique_ptr<Optimizer> opt;
};

SchedFixture make_sched_optimizer(const json& c) {
  SchedFixture f;
  const auto& o = c.at("optimizer");
  std::vector<ParamGroup> groups;
  for (double lr : o.at("lrs").get<std::vector<double>>()) {
    f.params.push_back(make_param(zeros({2})));
    groups.push_back(ParamGroup{{f.params.back()}, Options{{"lr", lr}}});
  }
  auto defaults = options_from(o.at("options"));
  defaults["lr"] = o.at("lrs")[0].get<double>();
  f.opt = make_optimizer(o.at("type"), groups, defaults);
  return f;
}

std::vector<double> momenta(const Optimizer& opt) {
  std::vector<double> m;
  for (const auto& g : opt.param_groups())
    m.push_back(g.options.has("beta1") ? g.options.get("beta1") : g.options.get("momentum", 0.0));
  return m;
}

class SchedulerCase : public ::testing::Test {
 public:
  explicit SchedulerCase(json c) : case_(std::move(c)) {}
  void TestBody() override {
    SchedFixture f = make_sched_optimizer(case_);
    auto s = build_scheduler(*f.opt, case_.at("scheduler"));
    const auto& lrs = case_.at("lrs");
    const auto& moms = case_.at("momenta");
    for (size_t k = 0; k < lrs.size(); ++k) {
      if (k > 0) {
        f.opt->step();
        s->step();
      }
      auto want = lrs[k].get<std::vector<double>>();
      const auto& got = s->get_last_lr();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        // Same formulas in the same order with the same libm: equal up to an ulp or so.
        EXPECT_NEAR(got[i], want[i], 1e-15 + 4e-16 * std::fabs(want[i])) << "step " << k << " group " << i;
        EXPECT_EQ(f.opt->param_groups()[i].options.lr(), got[i]);
      }
      auto wm = moms[k].get<std::vector<double>>();
      auto gm = momenta(*f.opt);
      for (size_t i = 0; i < wm.size(); ++i)
        EXPECT_NEAR(gm[i], wm[i], 1e-15 + 4e-16 * std::fabs(wm[i])) << "momentum, step " << k << " group " << i;
    }
    if (case_.value("error_after", false)) {
      f.opt->step();
      EXPECT_THROW(s->step(), ValueError);
    }
  }

 private:
  json case_;
};

// ---------------------------------------------------------------- clipping
class ClipNormCase : public ::testing::Test {
 public:
  explicit ClipNormCase(json c) : case_(std::move(c)) {}
  void TestBody() override {
    std::vector<Tensor> params;
    for (const auto& g : case_.at("grads")) {
      Tensor gt = oracle::tensor_from_json(g);
      Tensor p = make_param(zeros_like(gt));
      p.set_grad(gt);
      params.push_back(p);
    }
    const double total = clip_grad_norm_(params, case_.at("max_norm").get<double>(),
                                         oracle::json_number(case_.at("norm_type")));
    const double want = oracle::json_number(case_.at("total"));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(total));
    } else if (std::isinf(want)) {
      EXPECT_EQ(total, want);
    } else {
      EXPECT_NEAR(total, want, 1e-6 * std::fabs(want) + 1e-12);
    }
    const auto& clipped = case_.at("clipped");
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor w = oracle::tensor_from_json(clipped[i]);
      const double rtol = w.dtype() == DType::Float64 && case_.value("total_dtype", "") == "float64" ? 1e-12 : 2e-6;
      std::string diff = oracle::compare_tensors(params[i].grad(), w, rtol, 1e-7);
      EXPECT_TRUE(diff.empty()) << "grad " << i << ": " << diff;
    }
  }

 private:
  json case_;
};

class ClipValueCase : public ::testing::Test {
 public:
  explicit ClipValueCase(json c) : case_(std::move(c)) {}
  void TestBody() override {
    std::vector<Tensor> params;
    for (const auto& g : case_.at("grads")) {
      Tensor gt = oracle::tensor_from_json(g);
      Tensor p = make_param(zeros_like(gt));
      p.set_grad(gt);
      params.push_back(p);
    }
    clip_grad_value_(params, case_.at("clip_value").get<double>());
    const auto& clipped = case_.at("clipped");
    for (size_t i = 0; i < params.size(); ++i) {
      std::string diff = oracle::compare_tensors(params[i].grad(), oracle::tensor_from_json(clipped[i]), 0, 0);
      EXPECT_TRUE(diff.empty()) << "grad " << i << ": " << diff;
    }
  }

 private:
  json case_;
};

std::string sanitize(std::string s) {
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

const bool registered = [] {
  json doc = load_doc();
  for (const auto& c : doc.at("optimizers")) {
    const std::string name = sanitize(c.at("name").get<std::string>());
    const std::string kind = c.at("optimizer");
    ::testing::RegisterTest("OptimOracle", (name + "_unfused").c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new OptimizerCase(c, false); });
    if (kind == "SGD" || kind == "Adam" || kind == "AdamW") {
      ::testing::RegisterTest("OptimOracle", (name + "_fused").c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [c]() -> ::testing::Test* { return new OptimizerCase(c, true); });
      ::testing::RegisterTest("OptimFusedVsUnfused", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [c]() -> ::testing::Test* { return new FusedVsUnfusedCase(c); });
    }
  }
  for (const auto& c : doc.at("schedulers")) {
    ::testing::RegisterTest("SchedulerOracle", sanitize(c.at("name")).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new SchedulerCase(c); });
  }
  for (const auto& c : doc.at("clip_norm")) {
    ::testing::RegisterTest("ClipGradNormOracle", sanitize(c.at("name")).c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [c]() -> ::testing::Test* { return new ClipNormCase(c); });
  }
  for (const auto& c : doc.at("clip_value")) {
    ::testing::RegisterTest("ClipGradValueOracle", sanitize(c.at("name")).c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [c]() -> ::testing::Test* { return new ClipValueCase(c); });
  }
  return true;
}();

}  // namespace
