// tandem's training-step benchmark (issue 5): the Fashion-MNIST reference models of
// nn/models.h on random data of Fashion-MNIST shape, batch 128, 2 threads, no special
// environment. mlp + SGD (lr 0.05, momentum 0.9), cnn + Adam (lr 1e-3); each step is
// zero_grad, forward, cross_entropy, backward, optimizer step. The libtorch peer is
// bench/peer/torch_train.cpp; bench/run_all.sh runs both, one model per process.
// --mode compiled runs the model through tandem::compile(model): a forward and a backward
// program per step (loss, backward's remaining tape and the optimizer step stay eager).
// --mode step compiles the whole step function (zero_grad, forward, loss, backward, the
// optimizer's fused update) into one program; loss.item() stays outside it.
// --precision bf16 (issue 16) runs the model's forward and the loss under
// tandem::AutocastGuard(bfloat16) in every mode (the backward and the optimizer step outside
// it, as `tandem train --precision bf16` does); --batch B changes the batch (default 128).
// The float32 eager run also times the optimizer update alone, eager and compiled.
//   bench_train --model mlp|cnn [--rounds R] [--seconds S] [--mode eager|compiled|step]
//               [--batch B] [--precision fp32|bf16]
// Besides the harness's lines (train/, train_rss/), prints tandem's memory figures of one
// step and, compiled, the capture + compile time (issue 12), as `NAME<TAB>VALUE<TAB>UNIT`:
//   train_peak/<case>     bytes: allocator peak during one step above the level before it
//                         (compiled, step: the programs' arenas included, taken per run)
//   train_arena/<case>    bytes: the arenas the programs take per run (0 for one that
//                         allocates per value): forward + backward (compiled), the step
//                         program's (step); train_arena_forward/<case>: the forward
//                         program's part (compiled); train_arena_plan/<case> and
//                         train_arena_bound/<case>: the step program's planned arena and
//                         the plan's lower bound, the most planned bytes live at once (step)
//   train_saved/<case>    bytes: allocator bytes the forward left alive for the backward
//                         (in use after the model's forward, minus before, minus the logits;
//                         not step, whose forward runs inside the program)
//   train_saved_program/<case>  bytes: TrainingProgram::saved_bytes (compiled only)
//   train_compile/<case>  ms: the capturing step (capture, graph autodiff, split or fusion,
//                         passes, planning) minus the median of the next 7 steady steps
//   train_loss9/<case>    the loss of the 9th step (before the timed rounds), to compare modes
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "tandem/tandem.h"
#include "train_harness.h"

namespace {

using clock_type = std::chrono::steady_clock;

int64_t in_use() { return tandem::memory::stats().bytes_in_use; }
int64_t block_bytes(const tandem::Tensor& t) {
  return static_cast<int64_t>(tandem::cpu_allocator_round_size(static_cast<size_t>(t.nbytes())));
}

}  // namespace

int main(int argc, char** argv) {
  namespace bt = bench::train;
  const bt::Options o = bt::parse(argc, argv);
  tandem::set_num_threads(bt::kThreads);
  tandem::manual_seed(0);
  const bool cnn = o.model == "cnn";
  auto model = cnn ? tandem::nn::models::fashion_cnn() : tandem::nn::models::fashion_mlp();
  std::unique_ptr<tandem::optim::Optimizer> opt;
  if (cnn) opt = std::make_unique<tandem::optim::Adam>(model->parameters(), tandem::optim::AdamOptions(1e-3));
  else opt = std::make_unique<tandem::optim::SGD>(model->parameters(), tandem::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<tandem::Tensor> xs, ys;
  for (int i = 0; i < bt::kBatches; ++i) {
    xs.push_back(tandem::randn({o.batch, 1, 28, 28}));
    ys.push_back(tandem::randint(0, bt::kClasses, {o.batch}));
  }
  const bool bf16 = o.precision == "bf16";
  const bool use_compiled = o.mode == "compiled", use_step = o.mode == "step";
  std::shared_ptr<tandem::nn::CompiledModule> compiled;
  if (use_compiled) compiled = tandem::compile(std::static_pointer_cast<tandem::nn::Module>(model));
  // --mode step: the eager step below as one function of (x, y), compiled whole.
  std::shared_ptr<tandem::jit::CompiledFunction> whole;
  if (use_step) {
    tandem::jit::CompileOptions copts;
    copts.profile = o.profile;
    whole = tandem::compile([&](const std::vector<tandem::Tensor>& in) {
      opt->zero_grad();
      tandem::Tensor loss;
      {
        tandem::AutocastGuard autocast(tandem::DType::BFloat16, bf16);
        loss = tandem::cross_entropy(model->forward(in[0]), in[1]);
      }
      loss.backward();
      opt->step();
      return std::vector<tandem::Tensor>{loss.detach()};
    }, copts);
  }
  bool run_compiled = use_compiled;  // off for the eager warm-up step before the capture
  int64_t it = 0;
  // Memory probe (off while timing): allocator bytes in use after zero_grad and after the
  // model's forward, and the logits' bytes.
  bool probe = false;
  int64_t before_forward = 0, after_forward = 0, logits_bytes = 0;
  auto step = [&] {
    const size_t i = static_cast<size_t>(it++ % bt::kBatches);
    if (use_step) return (*whole)({xs[i], ys[i]})[0].item<double>();
    opt->zero_grad();
    if (probe) before_forward = in_use();
    tandem::Tensor loss;
    {
      tandem::AutocastGuard autocast(tandem::DType::BFloat16, bf16);
      tandem::Tensor logits = run_compiled ? (*compiled)(xs[i]) : model->forward(xs[i]);
      if (probe) {
        after_forward = in_use();
        logits_bytes = block_bytes(logits);
      }
      loss = tandem::cross_entropy(logits, ys[i]);
    }
    loss.backward();
    opt->step();
    return loss.item<double>();
  };
  const std::string name = bt::case_name(o);

  double compile_ms = -1;
  // Loss of the 9th step (the same seed and batches in every mode): the report checks that
  // eager, compiled and step agree, i.e. that the programs train as eager does.
  double loss9 = 0;
  if (!use_compiled && !use_step) {
    for (int k = 0; k < 9; ++k) loss9 = step();
  } else {
    // Capture + compile time: an eager step first (oneDNN primitives, allocator caches,
    // optimizer state), so the capturing step differs from a steady one only by the
    // capture (which runs the step's ops eagerly) and the compile. The whole step's first
    // call is that eager step: it creates the optimizer state, so its capture is dropped
    // (retries()) and the second call captures.
    auto timed = [&] {
      const auto t0 = clock_type::now();
      loss9 = step();
      return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    };
    run_compiled = false;
    const double warm = timed();
    run_compiled = use_compiled;
    const double first = timed();
    std::vector<double> steady;
    for (int k = 0; k < 7; ++k) steady.push_back(timed());
    std::sort(steady.begin(), steady.end());
    const tandem::jit::CompiledFunction& f = use_step ? *whole : compiled->function();
    // Without a retry the whole step's first call captured (then it includes the warm-up).
    const bool first_captured = use_step && f.retries() == 0;
    compile_ms = (first_captured ? warm : first) - steady[steady.size() / 2];
    if (use_step)
      std::fprintf(stderr, "bench_train: whole step: %d capture(s), %d retry(ies), %lld compiled call(s)%s\n",
                   f.captures(), f.retries(), static_cast<long long>(f.compiled_calls()),
                   first_captured ? "; the first call captured, so the compile time includes the warm-up" : "");
    if (f.compiled_calls() < 7) {
      const char* what = use_step ? "the step" : "the model";
      std::fprintf(stderr, "bench_train: %s did not compile (%lld compiled calls)\n", what,
                   static_cast<long long>(f.compiled_calls()));
      for (const auto& w : f.warnings()) std::fprintf(stderr, "  warning: %s\n", w.c_str());
      std::printf("train/%s\tnan\terror: %s did not compile\n", name.c_str(), what);
      return 1;
    }
  }

  const int rc = bt::measure(use_step ? "tandem_step" : use_compiled ? "tandem_compiled" : "tandem", o, step);
  if (rc != 0) return rc;

  // Memory of one step, after the warm-up and timed rounds (caches as in a steady run).
  probe = true;
  tandem::memory::reset_peak_stats();
  const int64_t before_step = in_use();
  step();
  int64_t peak = tandem::memory::stats().peak_bytes_in_use - before_step;
  const int64_t saved = after_forward - before_forward - logits_bytes;
  if (use_compiled) {
    const tandem::jit::TrainingProgram* p = compiled->function().last_training_program();
    if (p == nullptr) {
      std::fprintf(stderr, "bench_train: no training program after the compiled steps\n");
      return 1;
    }
    // Arenas the programs take per run (the backward allocates per value instead: 0).
    auto arena_of = [](const tandem::runtime::Executor& e) { return e.uses_arena() ? e.plan().arena_bytes : 0; };
    const int64_t fwd_arena = arena_of(*p->forward), bwd_arena = arena_of(*p->backward);
    std::printf("train_arena/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(fwd_arena + bwd_arena));
    std::printf("train_arena_forward/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(fwd_arena));
    std::printf("train_saved_program/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(p->saved_bytes));
  }
  if (use_step) {
    const tandem::runtime::Executor* e = whole->last_executor();
    if (e == nullptr) {
      std::fprintf(stderr, "bench_train: no step program after the compiled steps\n");
      return 1;
    }
    std::fprintf(stderr, "bench_train: step program: %s\n", e->memory_summary().c_str());
    if (o.profile) std::fprintf(stderr, "bench_train: per-node profile\n%s\n", e->profile_table().c_str());
    std::printf("train_arena/%s\t%lld\tbytes\n", name.c_str(),
                static_cast<long long>(e->uses_arena() ? e->plan().arena_bytes : 0));
    std::printf("train_arena_plan/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(e->plan().arena_bytes));
    std::printf("train_arena_bound/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(e->plan().lower_bound));
  }
  if (use_compiled || use_step) std::printf("train_compile/%s\t%.2f\tms\n", name.c_str(), compile_ms);
  std::printf("train_loss9/%s\t%.9g\tloss\n", name.c_str(), loss9);
  std::printf("train_peak/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(peak));
  if (!use_step) std::printf("train_saved/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(saved));
  if (!use_compiled && !use_step && !bf16) {
    // The optimizer update alone over all parameters (issue 13: one fused update against
    // tandem's per-parameter eager update), on the gradients of the last step: eager
    // opt.step() (one fused kernel per parameter) against the update compiled as one
    // program; interleaved rounds of 200 updates, median per update.
    auto update = tandem::compile([&](const std::vector<tandem::Tensor>&) {
      opt->step();
      return std::vector<tandem::Tensor>{};
    });
    for (int k = 0; k < 3; ++k) (*update)({});
    std::vector<double> eager_us, compiled_us;
    for (int r = 0; r < 7; ++r) {
      for (int pass = 0; pass < 2; ++pass) {
        const auto t0 = clock_type::now();
        for (int k = 0; k < 200; ++k) {
          if (pass == 0) opt->step();
          else (*update)({});
        }
        const double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / 200;
        (pass == 0 ? eager_us : compiled_us).push_back(us);
      }
    }
    std::sort(eager_us.begin(), eager_us.end());
    std::sort(compiled_us.begin(), compiled_us.end());
    std::printf("train_update/%s\t%.2f\tus\n", name.c_str(), eager_us[eager_us.size() / 2]);
    std::printf("train_update_compiled/%s\t%.2f\tus\n", name.c_str(), compiled_us[compiled_us.size() / 2]);
  }
  return 0;
}
