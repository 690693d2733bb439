// Training under a memory budget (CompileOptions::memory_budget, issue 13): a whole training
// step compiled at budgets from its unconstrained peak down to the smallest one reachable.
// At every budget the measured peak of a step stays under the budget and does not rise as
// the budget falls, and losses and parameters equal eager's bitwise.
#include <gtest/gtest.h>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {

// "mlp": 784-512-512-512-10 with ReLU at batch 2048, whose step peaks where backward
// starts, with every activation saved (4 MiB each against 3.5 MiB of weight gradients: the
// budget has room to work); "cnn": the reference cnn, whose
// peak is one node's working set (conv1's backward: its 28x28 gradient and oneDNN's
// reordered copy of it) unless the batch is large enough for the planner to split that
// backward by batch.
struct Trainer {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Optimizer> opt;
  explicit Trainer(const std::string& kind) {
    manual_seed(5);
    if (kind == "cnn") {
      model = nn::models::fashion_cnn();
    } else {
      model = nn::models::mlp({784, 512, 512, 512, 10});
    }
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    opt->zero_grad();
    Tensor loss = cross_entropy((*model)(x), y);
    loss.backward();
    opt->step();
    return loss.detach();
  }
};

std::shared_ptr<jit::CompiledFunction> compile_step(Trainer& t, int64_t budget) {
  jit::CompileOptions o;
  o.memory_budget = budget;
  return compile([&t](const std::vector<Tensor>& in) { return std::vector<Tensor>{t.step(in[0], in[1])}; }, o);
}

// Peak bytes of one step above the level before it.
template <typename F>
int64_t step_peak(F&& step) {
  memory::reset_peak_stats();
  const int64_t before = memory::stats().bytes_in_use;
  step();
  return memory::stats().peak_bytes_in_use - before;
}

struct Data {
  std::vector<Tensor> xs, ys, losses;
  Trainer ref;
  Data(const std::string& kind, int64_t batch) : ref(kind) {
    manual_seed(17);
    for (int s = 0; s < 5; ++s) {
      xs.push_back(kind == "cnn" ? randn({batch, 1, 28, 28}) : randn({batch, 784}));
      ys.push_back(randint(0, 10, {batch}));
    }
    for (int s = 0; s < 5; ++s) losses.push_back(ref.step(xs[static_cast<size_t>(s)], ys[static_cast<size_t>(s)]));
  }
};

// The unconstrained step's peak as the planner counts it once the kernels' own allocations
// are measured: the program's values, its new .grad tensors included (the measured peak
// above the level before a step is lower by the old .grad tensors the step frees first).
int64_t unconstrained_peak(const std::string& kind, Data& d) {
  Trainer t(kind);
  auto cf = compile_step(t, int64_t{1} << 40);
  for (size_t s = 0; s < 4; ++s) (*cf)({d.xs[s], d.ys[s]});
  EXPECT_EQ(cf->compiled_calls(), 2);
  const auto& plan = cf->last_executor()->budget_plan();
  EXPECT_TRUE(plan.recomputed.empty() && plan.offloads.empty()) << plan.to_text();
  const int64_t measured = step_peak([&] { (*cf)({d.xs[4], d.ys[4]}); });
  EXPECT_LE(measured, plan.unconstrained_peak) << "the estimate must not be below the measured peak";
  return plan.unconstrained_peak;
}

// Compiles `kind`'s step at budgets from 100% of its unconstrained peak down in steps of
// `step_pct` until one is below the minimum: each fitted budget runs five steps whose losses
// and parameters equal eager's bit for bit, with the measured peak at most the budget and
// never rising as the budget falls. The minimum raises OutOfMemoryError naming it, after at
// least `min_fitted` budgets fitted. Returns how many did.
int sweep_budgets(const std::string& kind, int64_t batch, int step_pct, int min_fitted) {
  Data d(kind, batch);
  const int64_t full = unconstrained_peak(kind, d);
  int64_t last_peak = INT64_MAX;
  int fitted = 0;
  for (int pct = 100; pct > 0; pct -= step_pct) {
    const int64_t budget = full * pct / 100;
    SCOPED_TRACE("budget " + std::to_string(pct) + "% = " + std::to_string(budget) + " bytes");
    Trainer t(kind);
    auto cf = compile_step(t, budget);
    std::vector<Tensor> got;
    int64_t peak = 0;
    try {
      for (size_t s = 0; s < 5; ++s) {
        auto run = [&] { got.push_back((*cf)({d.xs[s], d.ys[s]})[0]); };
        if (s == 4) peak = step_peak(run); else run();
      }
    } catch (const OutOfMemoryError& e) {
      // The capture (the second call) plans the budget; one below the minimum raises there,
      // naming it.
      EXPECT_NE(std::string(e.what()).find("expected at least"), std::string::npos) << e.what();
      EXPECT_GE(fitted, min_fitted) << "the planner should reach well below the unconstrained peak: " << e.what();
      break;
    }
    ++fitted;
    EXPECT_EQ(got.size(), 5u);
    if (got.size() != 5u) break;
    for (size_t s = 0; s < 5; ++s) EXPECT_TRUE(bitwise_equal(got[s], d.losses[s])) << "loss of step " << s;
    auto pa = t.model->parameters(), pb = d.ref.model->parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(bitwise_equal(pa[i], pb[i])) << "parameter " << i;
    EXPECT_EQ(cf->compiled_calls(), 3);
    const auto* ex = cf->last_executor();
    EXPECT_NE(ex, nullptr);
    if (!ex) break;
    const auto& plan = ex->budget_plan();
    if (pct < 100) {
      EXPECT_FALSE(plan.offloads.empty() && plan.recomputed.empty() && plan.split.empty()) << ex->memory_summary();
    }
    EXPECT_LE(peak, budget) << ex->memory_summary();
    EXPECT_LE(peak, last_peak) << "the peak rose as the budget fell; " << ex->memory_summary();
    last_peak = peak;
  }
  EXPECT_LT(fitted, 100 / step_pct) << "a budget of " << step_pct << "% fitted: the minimum is not being enforced";
  return fitted;
}

// Five steps of `kind`'s step compiled with `budget` (the capture and the run that measures
// the kernels' own allocations first): the plan, the measured peak of the last step, and
// whether losses and parameters equal eager's bit for bit (checked here).
struct BudgetRun {
  std::shared_ptr<jit::CompiledFunction> cf;
  int64_t peak = 0;
  const runtime::BudgetPlan& plan() const { return cf->last_executor()->budget_plan(); }
};
BudgetRun run_with_eagers_numbers(Data& d, const std::string& kind, int64_t budget) {
  Trainer t(kind);
  BudgetRun r;
  r.cf = compile_step(t, budget);
  std::vector<Tensor> got;
  for (size_t s = 0; s < 5; ++s) {
    auto run = [&] { got.push_back((*r.cf)({d.xs[s], d.ys[s]})[0]); };
    if (s == 4) r.peak = step_peak(run); else run();
  }
  EXPECT_NE(r.cf->last_executor(), nullptr);
  for (size_t s = 0; s < 5; ++s) EXPECT_TRUE(bitwise_equal(got[s], d.losses[s])) << "loss of step " << s;
  auto pa = t.model->parameters(), pb = d.ref.model->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(bitwise_equal(pa[i], pb[i])) << "parameter " << i;
  return r;
}

}  // namespace

// The mlp's minimum is about 62% of its peak: a backward node's working set plus the weight
// gradients (3.5 MiB), which stay to the end.
TEST(CompileBudget, AStepFitsEveryBudgetDownToTheMinimumWithEagersNumbers) { sweep_budgets("mlp", 2048, 5, 4); }

// At batch 32 (below the convolution backward's chunk of images, so nothing splits) the
// cnn's peak is the working set of conv1's backward (nothing else is in memory there but
// that node's inputs, outputs and the kernel's own allocations): just under it, the error
// names that node.
TEST(CompileBudget, TheMinimumIsNamedWithTheNodeWhereMemoryPeaks) {
  Data d("cnn", 32);
  const int64_t full = unconstrained_peak("cnn", d);
  Trainer t("cnn");
  auto cf = compile_step(t, full / 2);
  try {
    // The second call captures and plans (kernels' allocations unknown: 0); the first run
    // measures them and the next one plans with them.
    for (size_t s = 0; s < 4; ++s) (*cf)({d.xs[s], d.ys[s]});
    FAIL() << "half the cnn's peak fitted: " << cf->last_executor()->memory_summary();
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("expected at least"), std::string::npos) << msg;
    EXPECT_NE(msg.find("live bytes peak at node"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the kernel's own allocations"), std::string::npos) << msg;
  }
}

// At batch 96 the cnn's convolution backwards sum their weight gradients in chunks of
// images (41 for conv1, 83 for conv2), so the planner can run each with the pooling
// backward that makes its input per chunk: its first choice, before any offload. The pieces
// are the kernel's own chunks and sums, so losses and parameters stay eager's bit for bit.
TEST(CompileBudget, TheCnnSplitsItsConvolutionBackwardsByBatchWithEagersNumbers) {
  Data d("cnn", 96);
  const int64_t budget = unconstrained_peak("cnn", d) * 9 / 10;
  const BudgetRun r = run_with_eagers_numbers(d, "cnn", budget);
  ASSERT_NE(r.cf->last_executor(), nullptr);
  const auto& plan = r.plan();
  ASSERT_FALSE(plan.split.empty()) << plan.to_text();
  EXPECT_NE(plan.split[0].find("convolution_backward"), std::string::npos) << plan.to_text();
  EXPECT_NE(plan.split[0].find("_fused_max_pool2d_relu_backward"), std::string::npos) << plan.to_text();
  EXPECT_NE(plan.to_text().find("split"), std::string::npos);
  EXPECT_LE(r.peak, budget) << r.cf->last_executor()->memory_summary();
  EXPECT_LE(plan.planned_peak, budget) << plan.to_text();
}

// Issue 13's sweep: the cnn at batch 256, budgets from 100% down to the minimum in steps of
// 10%. Below 70% the planner both splits the convolution backwards by batch and offloads
// the storages the pieces read (whole between pieces, or in pieces); a split once moved an
// earlier offload's reload onto a piece that does not read the storage, the next round
// offloaded it again over an overlapping gap, and the buffer plan failed (ValueError from
// plan_memory).
TEST(CompileBudget, TheCnnAtBatch256FitsEveryBudgetDownToTheMinimumWithEagersNumbers) { sweep_budgets("cnn", 256, 10, 5); }

// At 45% of its peak (17.4 MiB: below the 21.6 MiB the planner reached before sliced
// offloads) the cnn's step fits only by sending the activations the split pieces read, and
// the gradient they assemble chunk by chunk, to the spill file once and moving them a
// chunk at a time. (Written for 40% of a 45.6 MiB peak; since the pool backward reads only
// the window codes the peak is 38.6 MiB, and the minimum, 16.0 MiB, 41%.)
TEST(CompileBudget, TheCnnAt45PercentOffloadsWhatTheSplitPiecesReadInPieces) {
  Data d("cnn", 256);
  const int64_t budget = unconstrained_peak("cnn", d) * 45 / 100;
  const BudgetRun r = run_with_eagers_numbers(d, "cnn", budget);
  ASSERT_NE(r.cf->last_executor(), nullptr);
  EXPECT_GT(r.plan().sliced(), 0) << r.plan().to_text();
  EXPECT_FALSE(r.plan().split.empty()) << r.plan().to_text();
  EXPECT_LE(r.peak, budget) << r.cf->last_executor()->memory_summary();
}

// A compiled module trained by the caller's backward() splits into two programs; a budget
// cannot hold across them, so it is refused by name rather than ignored.
TEST(CompileBudget, ASplitForwardBackwardProgramRefusesABudget) {
  manual_seed(1);
  auto model = nn::models::fashion_mlp();
  jit::CompileOptions o;
  o.memory_budget = int64_t{1} << 20;
  auto f = compile([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*model)(in[0])}; }, o);
  try {
    (*f)({randn({4, 784})});
    FAIL() << "a split program took a budget";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("memory_budget"), std::string::npos) << e.what();
  }
}
