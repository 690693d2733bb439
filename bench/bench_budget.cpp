// Training under a memory budget (issue 13): a model's whole training step (Adam, lr 1e-3)
// compiled with CompileOptions::memory_budget at fractions of the unconstrained step's peak
// (as the planner counts it, the kernels' own allocations measured), down to the smallest
// budget the planner reaches. Models: cnn (the reference cnn, default batch 256) and mlp
// (784-512-512-512-10 with ReLU, default batch 2048: activations larger than the weights'
// gradients, as in the networks budgets are for). Per budget: the measured peak of one
// step (allocator statistics, bytes above the level before the step; lower than the
// planner's figure by the old .grad tensors the step frees first), the median step time,
// what the plan recomputed and offloaded, and whether the loss after 6 steps equals eager's
// bitwise. Every configuration is built and warmed up first and then timed in interleaved
// rounds, so that the ratios to the unconstrained step compare steps run under the same
// machine conditions.
//
// Usage: bench_budget [--model cnn|mlp] [--batch B] [--rounds R] [--steps S] [--step-pct P]
// Output (stdout, read by bench/report.py budget): one header line and one TSV line per
// budget: pct, budget bytes, peak bytes, median ms per step, recomputed values, nodes split by
// batch, offloaded
// bytes, estimated extra ms, "same" or "DIFFERENT" loss; a last line "min" with the smallest
// reachable budget the planner named. Progress on stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tandem/tandem.h"

using namespace tandem;

namespace {

std::string g_model = "cnn";

struct Run {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Optimizer> opt;
  Run() {
    manual_seed(5);
    if (g_model == "cnn") {
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

struct Result {
  int64_t peak = 0;
  double ms = 0;
  float loss6 = 0;
  std::string plan;
  size_t recomputed = 0;
  size_t split = 0;  // nodes run per chunk of examples
  int64_t offloaded = 0;
  double extra_ms = 0;
  int64_t estimate = 0;  // the plan's estimated peak
};

// One configuration of the sweep: its own model and optimizer (the same seed), run eagerly
// or through a program compiled with `budget`.
struct Prog {
  Run run;
  std::shared_ptr<jit::CompiledFunction> cf;
  bool compiled = false;
  int64_t budget = 0;
  std::string label;
  Result res;
  std::vector<double> times;

  Prog(int64_t b, bool c) : compiled(c), budget(b) {
    jit::CompileOptions o;
    o.memory_budget = b;
    cf = compile([this](const std::vector<Tensor>& in) { return std::vector<Tensor>{run.step(in[0], in[1])}; }, o);
  }
  Tensor step(const std::vector<Tensor>& xs, const std::vector<Tensor>& ys, size_t k) {
    const Tensor& x = xs[k % xs.size()];
    const Tensor& y = ys[k % ys.size()];
    return compiled ? (*cf)({x, y})[0] : run.step(x, y);
  }
  // Six steps: the eager first call, the capture, replays (a budget below every plan
  // raises OutOfMemoryError here).
  void warm_up(const std::vector<Tensor>& xs, const std::vector<Tensor>& ys) {
    for (size_t k = 0; k < 6; ++k) res.loss6 = step(xs, ys, k).item<float>();
  }
  void time_round(const std::vector<Tensor>& xs, const std::vector<Tensor>& ys, int steps) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) step(xs, ys, static_cast<size_t>(s));
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps);
  }
  // The median time, the peak of one more step, and what the plan chose.
  void finish(const std::vector<Tensor>& xs, const std::vector<Tensor>& ys) {
    std::sort(times.begin(), times.end());
    if (!times.empty()) res.ms = times[times.size() / 2];
    memory::reset_peak_stats();
    const int64_t before = memory::stats().bytes_in_use;
    step(xs, ys, 0);
    res.peak = memory::stats().peak_bytes_in_use - before;
    if (compiled && cf->last_executor()) {
      const auto& p = cf->last_executor()->budget_plan();
      res.plan = cf->last_executor()->memory_summary();
      res.recomputed = p.recomputed.size();
      res.split = p.split.size();
      res.offloaded = p.offloaded_bytes;
      res.extra_ms = p.extra_seconds * 1e3;
      res.estimate = p.planned_peak;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 0;
  int rounds = 5, steps = 4, step_pct = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && a == "--batch") batch = std::atoll(argv[++i]);
    else if (i + 1 < argc && a == "--model") g_model = argv[++i];
    else if (i + 1 < argc && a == "--rounds") rounds = std::max(1, std::atoi(argv[++i]));
    else if (i + 1 < argc && a == "--steps") steps = std::max(1, std::atoi(argv[++i]));
    else if (i + 1 < argc && a == "--step-pct") step_pct = std::clamp(std::atoi(argv[++i]), 1, 50);
    else {
      std::fprintf(stderr, "usage: %s [--model cnn|mlp] [--batch B] [--rounds R] [--steps S] [--step-pct P]\n", argv[0]);
      return 2;
    }
  }
  if (g_model != "cnn" && g_model != "mlp") {
    std::fprintf(stderr, "bench_budget: unknown model '%s' (cnn or mlp)\n", g_model.c_str());
    return 2;
  }
  if (batch <= 0) batch = g_model == "cnn" ? 256 : 2048;
  set_num_threads(2);
  manual_seed(11);
  std::vector<Tensor> xs, ys;
  for (int k = 0; k < 4; ++k) {
    xs.push_back(g_model == "cnn" ? randn({batch, 1, 28, 28}) : randn({batch, 784}));
    ys.push_back(randint(0, 10, {batch}));
  }
  // Every configuration is made and warmed up first, then timed in interleaved rounds (one
  // round of each in turn), so that the ratios compare steps run under the same machine
  // conditions: this VM's speed drifts by tens of percent over minutes.
  std::vector<std::unique_ptr<Prog>> progs;
  progs.push_back(std::make_unique<Prog>(0, false));
  progs.back()->label = "eager";
  // A budget no plan needs: the program as without one, and the planner's estimate of its
  // peak with the kernels' own allocations measured (the 100% of the sweep).
  progs.push_back(std::make_unique<Prog>(int64_t{1} << 40, true));
  progs.back()->label = "none";
  for (auto& p : progs) p->warm_up(xs, ys);
  // The estimate is known once the program ran (the kernels' own allocations measured).
  progs.back()->finish(xs, ys);
  const int64_t estimate = progs.back()->res.estimate;
  progs.back()->times.clear();
  for (int pct = 100; pct > 0; pct -= step_pct) {
    const int64_t budget = estimate * pct / 100;
    auto p = std::make_unique<Prog>(budget, true);
    p->label = std::to_string(pct);
    try {
      p->warm_up(xs, ys);
      progs.push_back(std::move(p));
    } catch (const OutOfMemoryError& e) {
      // "... expected at least N bytes ...": the smallest budget the planner reaches.
      const std::string msg = e.what();
      const size_t at = msg.find("expected at least ");
      const long long minimum = at == std::string::npos ? -1 : std::atoll(msg.c_str() + at + 18);
      std::fprintf(stderr, "bench_budget: %d%%: %s\n", pct, msg.c_str());
      if (minimum > 0) {
        auto m = std::make_unique<Prog>(minimum, true);
        m->label = "min";
        m->warm_up(xs, ys);
        progs.push_back(std::move(m));
      }
      break;
    }
  }
  for (int i = 0; i < rounds; ++i)
    for (auto& p : progs) p->time_round(xs, ys, steps);
  for (auto& p : progs) p->finish(xs, ys);
  const Result& eager = progs[0]->res;
  const Result& full = progs[1]->res;
  std::fprintf(stderr, "bench_budget: eager %.2f ms, peak %lld; compiled %.2f ms, peak %lld\n", eager.ms,
               static_cast<long long>(eager.peak), full.ms, static_cast<long long>(full.peak));
  std::printf("pct\tbudget\tpeak\tms\trecomputed\tsplit\toffloaded\textra_ms\tloss\n");
  std::printf("eager\t0\t%lld\t%.3f\t0\t0\t0\t0\tsame\n", static_cast<long long>(eager.peak), eager.ms);
  std::printf("none\t%lld\t%lld\t%.3f\t0\t0\t0\t0\t%s\n", static_cast<long long>(full.estimate),
              static_cast<long long>(full.peak), full.ms, full.loss6 == eager.loss6 ? "same" : "DIFFERENT");
  for (size_t i = 2; i < progs.size(); ++i) {
    const Prog& p = *progs[i];
    const Result& r = p.res;
    std::fprintf(stderr, "bench_budget: %s%s: %s\n", p.label.c_str(), p.label == "min" ? "" : "%", r.plan.c_str());
    std::printf("%s\t%lld\t%lld\t%.3f\t%zu\t%zu\t%lld\t%.3f\t%s\n", p.label.c_str(), static_cast<long long>(p.budget),
                static_cast<long long>(r.peak), r.ms, r.recomputed, r.split, static_cast<long long>(r.offloaded), r.extra_ms,
                r.loss6 == eager.loss6 ? "same" : "DIFFERENT");
  }
  return 0;
}
