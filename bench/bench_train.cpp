// tandem's training-step benchmark (issue 5): the Fashion-MNIST reference models of
// nn/models.h on random data of Fashion-MNIST shape, batch 128, 2 threads, no special
// environment. mlp + SGD (lr 0.05, momentum 0.9), cnn + Adam (lr 1e-3); each step is
// zero_grad, forward, cross_entropy, backward, optimizer step. The libtorch peer is
// bench/peer/torch_train.cpp; bench/run_all.sh runs both, one model per process.
// --mode compiled runs the model through tandem::compile(model): a forward and a backward
// program per step (loss, backward's remaining tape and the optimizer step stay eager).
//   bench_train --model mlp|cnn [--rounds R] [--seconds S] [--mode eager|compiled]
// Besides the harness's lines (train/, train_rss/), prints tandem's memory figures of one
// step and, compiled, the capture + compile time (issue 12), as `NAME<TAB>VALUE<TAB>UNIT`:
//   train_peak/<case>     bytes: allocator peak during one step above the level before it
//                         (compiled: the programs' arenas included, taken per run)
//   train_arena/<case>    bytes: the forward and backward programs' arenas (compiled only);
//                         train_arena_forward/<case>: the forward program's part
//   train_saved/<case>    bytes: allocator bytes the forward left alive for the backward
//                         (in use after the model's forward, minus before, minus the logits)
//   train_saved_program/<case>  bytes: TrainingProgram::saved_bytes (compiled only)
//   train_compile/<case>  ms: first compiled step (capture, graph autodiff, split, passes,
//                         planning) minus the median of the next steady compiled steps
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
    xs.push_back(tandem::randn({bt::kBatch, 1, 28, 28}));
    ys.push_back(tandem::randint(0, bt::kClasses, {bt::kBatch}));
  }
  auto compiled = tandem::compile(std::static_pointer_cast<tandem::nn::Module>(model));
  const bool use_compiled = o.mode == "compiled";
  bool run_compiled = use_compiled;  // off for the eager warm-up step before the capture
  int64_t it = 0;
  // Memory probe (off while timing): allocator bytes in use after zero_grad and after the
  // model's forward, and the logits' bytes.
  bool probe = false;
  int64_t before_forward = 0, after_forward = 0, logits_bytes = 0;
  auto step = [&] {
    const size_t i = static_cast<size_t>(it++ % bt::kBatches);
    opt->zero_grad();
    if (probe) before_forward = in_use();
    tandem::Tensor logits = run_compiled ? (*compiled)(xs[i]) : model->forward(xs[i]);
    if (probe) {
      after_forward = in_use();
      logits_bytes = block_bytes(logits);
    }
    tandem::Tensor loss = tandem::cross_entropy(logits, ys[i]);
    loss.backward();
    opt->step();
    return loss.item<double>();
  };
  const std::string name = o.model + "_" + bt::optimizer_of(o.model);

  double compile_ms = -1;
  if (use_compiled) {
    // Capture + compile time: an eager step first (oneDNN primitives, allocator caches,
    // optimizer state), so the first compiled step differs from a steady one only by the
    // capture (which runs the step's forward and backward eagerly) and the compile.
    run_compiled = false;
    step();
    run_compiled = true;
    auto timed = [&] {
      const auto t0 = clock_type::now();
      step();
      return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    };
    const double first = timed();
    std::vector<double> steady;
    for (int k = 0; k < 7; ++k) steady.push_back(timed());
    std::sort(steady.begin(), steady.end());
    compile_ms = first - steady[steady.size() / 2];
    if (compiled->function().compiled_calls() < 7) {
      std::fprintf(stderr, "bench_train: the model did not compile (%lld compiled calls)\n",
                   static_cast<long long>(compiled->function().compiled_calls()));
      std::printf("train/%s\tnan\terror: the model did not compile\n", name.c_str());
      return 1;
    }
  }

  const int rc = bt::measure(use_compiled ? "tandem_compiled" : "tandem", o, step);
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
    std::printf("train_compile/%s\t%.2f\tms\n", name.c_str(), compile_ms);
  }
  std::printf("train_peak/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(peak));
  std::printf("train_saved/%s\t%lld\tbytes\n", name.c_str(), static_cast<long long>(saved));
  return 0;
}
