#pragma once
// Training-step benchmark harness shared by bench_train (tandem) and bench_peer_torch_train
// (libtorch). Each program builds the model, optimizer and data its own way and hands a
// `step()` callable (zero_grad, forward, loss, backward, optimizer step; returns the loss)
// to measure(); both then report the same way. C++17 (the peer's standard); no library
// header here, so the two programs share the timing and reporting code line for line.
//
// Usage of both programs:
//   PROGRAM --model mlp|cnn [--rounds R] [--seconds S] [--batch B] [--precision fp32|bf16]
//           [--profile]   (tandem's --mode step only: per-node times to stderr)
// --precision bf16 runs forward and loss under bfloat16 autocast (issue 16; tandem's
// AutocastGuard, libtorch's at::autocast CPU state as torch.autocast("cpu") sets it).
// Output: one line `train/<case><TAB><samples/s><TAB>samples/s` and one line
// `train_rss/<case><TAB><peak RSS MiB><TAB>MiB`, read by bench/report.py, where <case> is
// <model>_<optimizer>, with `_b<B>` appended when B is not 128 and `_bf16` with
// --precision bf16 (case_name); progress goes to stderr.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench::train {

/// The workloads of issue 5: batch 128 (--batch changes it) of Fashion-MNIST shape
/// [128, 1, 28, 28], 10 classes; mlp trains with SGD (lr 0.05, momentum 0.9), cnn with Adam
/// (lr 1e-3).
constexpr int kBatch = 128;
constexpr int kClasses = 10;
constexpr int kBatches = 4;  ///< distinct random batches, cycled
constexpr int kThreads = 2;

struct Options {
  std::string model = "mlp";
  int rounds = 5;         ///< timed rounds; the median is reported
  double seconds = 1.0;   ///< minimum length of one round (and of the warm-up)
  /// tandem only: eager | compiled (the model's forward and backward programs) | step (the
  /// whole step function, optimizer update included, as one program)
  std::string mode = "eager";
  int batch = kBatch;              ///< samples per step
  std::string precision = "fp32";  ///< fp32 | bf16 (forward and loss under bfloat16 autocast)
  /// tandem only, --mode step: after the timed rounds, print the step program's per-node
  /// times (the executor's profile table: calls, total and mean time per node over every
  /// compiled step) to stderr. Profiling adds two clock reads per node, so the figures of
  /// such a run are not the ones to report.
  bool profile = false;
};

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--model" && has_value) o.model = argv[++i];
    else if (a == "--rounds" && has_value) o.rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--seconds" && has_value) o.seconds = std::atof(argv[++i]);
    else if (a == "--mode" && has_value) o.mode = argv[++i];
    else if (a == "--batch" && has_value) o.batch = std::max(1, std::atoi(argv[++i]));
    else if (a == "--precision" && has_value) o.precision = argv[++i];
    else if (a == "--profile") o.profile = true;
    else {
      std::fprintf(stderr,
                   "usage: %s --model mlp|cnn [--rounds R] [--seconds S] [--mode eager|compiled|step] [--batch B] "
                   "[--precision fp32|bf16] [--profile]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.precision != "fp32" && o.precision != "bf16") {
    std::fprintf(stderr, "%s: unknown precision '%s' (fp32 or bf16)\n", argv[0], o.precision.c_str());
    std::exit(2);
  }
  if (o.mode != "eager" && o.mode != "compiled" && o.mode != "step") {
    std::fprintf(stderr, "%s: unknown mode '%s' (eager, compiled or step)\n", argv[0], o.mode.c_str());
    std::exit(2);
  }
  if (o.model != "mlp" && o.model != "cnn") {
    std::fprintf(stderr, "%s: unknown model '%s' (mlp or cnn)\n", argv[0], o.model.c_str());
    std::exit(2);
  }
  return o;
}

inline const char* optimizer_of(const std::string& model) { return model == "mlp" ? "sgd" : "adam"; }

/// The case name of a run: <model>_<optimizer>, then _b<batch> unless the batch is 128,
/// then _bf16 under --precision bf16 ("cnn_adam", "cnn_adam_b256_bf16").
inline std::string case_name(const Options& o) {
  std::string name = o.model + "_" + optimizer_of(o.model);
  if (o.batch != kBatch) name += "_b" + std::to_string(o.batch);
  if (o.precision != "fp32") name += "_" + o.precision;
  return name;
}

/// Peak resident set size of this process so far, MiB (getrusage; Linux reports KiB).
inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// Warms up for `seconds` (primitive creation, allocator caches), then times `rounds`
/// rounds of at least `seconds` each and prints the median throughput and the peak RSS.
/// A non-finite loss is reported as an error (exit 1) rather than as a speed.
template <class Step>
int measure(const char* lib, const Options& o, Step step) {
  using clock = std::chrono::steady_clock;
  auto run_for = [&](double secs, int64_t& steps, double& loss) {
    const auto t0 = clock::now();
    double el = 0;
    steps = 0;
    do {
      loss = step();
      ++steps;
      el = std::chrono::duration<double>(clock::now() - t0).count();
    } while (el < secs);
    return el;
  };
  int64_t steps = 0;
  double loss = 0;
  run_for(o.seconds, steps, loss);
  std::vector<double> rates;
  for (int r = 0; r < o.rounds; ++r) {
    const double el = run_for(o.seconds, steps, loss);
    rates.push_back(static_cast<double>(steps) * o.batch / el);
    std::fprintf(stderr, "%s %s round %d: %lld steps, %.0f samples/s, loss %.4f\n", lib, o.model.c_str(), r,
                 static_cast<long long>(steps), rates.back(), loss);
  }
  const std::string name = case_name(o);
  if (!std::isfinite(loss)) {
    std::printf("train/%s\tnan\terror: loss is not finite\n", name.c_str());
    return 1;
  }
  std::sort(rates.begin(), rates.end());
  std::printf("train/%s\t%.1f\tsamples/s\n", name.c_str(), rates[rates.size() / 2]);
  std::printf("train_rss/%s\t%.1f\tMiB\n", name.c_str(), peak_rss_mib());
  return 0;
}

}  // namespace bench::train
