// Compiled mode vs eager, in tandem: Fashion-MNIST CNN inference (bench/cnn_workload.h),
// eval mode, no gradients. The libtorch peer (bench/peer/torch_compile.cpp) times the same
// model eagerly and as TorchScript. Cases (Google Benchmark names):
//   cnn/b<N>/tandem_eager      (*model)(x)
//   cnn/b<N>/tandem_compiled   (*tandem::compile(model))(x), the cached program
//   cnn_compile/b<N>/capture   a fresh compile() and its first call: capture (one eager
//                              forward), passes, memory planning
//   pointwise/gelu/tandem_eager, .../tandem_compiled   the elementwise chain of
//                              cnn_workload.h, eagerly and through tandem::compile (one
//                              _fused_pointwise node); counter checksum (sum of the result)
// Counters: checksum (of the check batch's logits), peak_bytes (tandem allocator bytes in
// use at the peak of a call; compiled: the arena included, taken per call), arena_bytes,
// lower_bound_bytes.
// Run by bench/run_all.sh (`./run bench` or `./run bench compile`).
#include <benchmark/benchmark.h>

#include <string>

#include "cnn_workload.h"
#include "tandem/tandem.h"

namespace {

using namespace tandem;

std::shared_ptr<nn::Sequential> make_model() {
  auto model = nn::models::fashion_cnn();
  model->eval();
  NoGradGuard ng;
  auto params = model->named_parameters();
  if (params.size() != static_cast<size_t>(bench_cnn::kNumParams)) throw ValueError("fashion_cnn changed: update cnn_workload.h");
  for (int p = 0; p < bench_cnn::kNumParams; ++p) {
    Tensor& t = params[static_cast<size_t>(p)].second;
    if (params[static_cast<size_t>(p)].first != bench_cnn::kParams[p].name || t.numel() != bench_cnn::numel(bench_cnn::kParams[p]))
      throw ValueError("fashion_cnn changed: update cnn_workload.h");
    float* d = t.data_ptr<float>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = bench_cnn::param_value(p, i);
  }
  return model;
}

Tensor make_input(int64_t n) {
  Tensor x = empty({n, 1, 28, 28});
  float* d = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) d[i] = bench_cnn::input_value(i);
  return x;
}

double checksum_of(const Tensor& logits) {
  Tensor c = logits.contiguous();
  return bench_cnn::checksum(c.data_ptr<float>(), c.numel());
}

/// Bytes the allocator had in use at the peak of f(), above what was in use before.
template <class F>
int64_t peak_during(F&& f) {
  memory::reset_peak_stats();
  const int64_t before = memory::stats().bytes_in_use;
  f();
  return memory::stats().peak_bytes_in_use - before;
}

void eager(benchmark::State& st, int64_t batch) {
  NoGradGuard ng;
  auto model = make_model();
  st.counters["checksum"] = checksum_of((*model)(make_input(bench_cnn::kCheckBatch)));
  Tensor x = make_input(batch);
  (*model)(x);  // warm caches (oneDNN primitives, allocator)
  st.counters["peak_bytes"] = static_cast<double>(peak_during([&] { (*model)(x); }));
  for (auto _ : st) {
    Tensor y = (*model)(x);
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * batch);
}

void compiled(benchmark::State& st, int64_t batch) {
  NoGradGuard ng;
  auto model = make_model();
  auto cm = compile(model);
  Tensor check = make_input(bench_cnn::kCheckBatch);
  (*cm)(check);
  st.counters["checksum"] = checksum_of((*cm)(check));  // the compiled program's answer
  Tensor x = make_input(batch);
  (*cm)(x);  // capture for this batch size
  (*cm)(x);  // warm
  const runtime::Executor* ex = cm->last_executor();
  if (!ex || cm->function().compiled_calls() < 2) return st.SkipWithError("the call did not compile");
  st.counters["arena_bytes"] = static_cast<double>(ex->plan().arena_bytes);
  st.counters["lower_bound_bytes"] = static_cast<double>(ex->plan().lower_bound);
  st.counters["peak_bytes"] = static_cast<double>(peak_during([&] { (*cm)(x); }));  // the arena is taken per call
  for (auto _ : st) {
    Tensor y = (*cm)(x);
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * batch);
}

void capture(benchmark::State& st, int64_t batch) {
  NoGradGuard ng;
  auto model = make_model();
  Tensor x = make_input(batch);
  (*model)(x);  // warm oneDNN's primitive cache: time capture, not primitive creation
  for (auto _ : st) {
    auto cm = compile(model);
    Tensor y = (*cm)(x);
    benchmark::DoNotOptimize(y);
  }
}

std::vector<Tensor> gelu_chain(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Tensor inner = (x + x * x * x * 0.044715) * 0.7978845608;
  return {x * 0.5 * (inner.tanh() + 1.0)};
}

void pointwise(benchmark::State& st, bool use_compiled) {
  NoGradGuard ng;
  Tensor x = empty({bench_cnn::kPointwiseRows, bench_cnn::kPointwiseCols});
  float* d = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) d[i] = bench_cnn::pointwise_value(i);
  auto cf = compile(gelu_chain);
  auto run = [&] { return use_compiled ? (*cf)({x})[0] : gelu_chain({x})[0]; };
  run();
  st.counters["checksum"] = run().to(kFloat64).sum().item<double>();
  if (use_compiled && cf->compiled_calls() < 1) return st.SkipWithError("the call did not compile");
  for (auto _ : st) {
    Tensor y = run();
    benchmark::DoNotOptimize(y);
  }
  st.SetBytesProcessed(st.iterations() * x.nbytes() * 2);  // read x once, write y once
}

}  // namespace

int main(int argc, char** argv) {
  set_num_threads(2);  // comparisons are at 2 threads, as the peer
  for (int64_t b : bench_cnn::kBatches) {
    const std::string s = "cnn/b" + std::to_string(b);
    benchmark::RegisterBenchmark((s + "/tandem_eager").c_str(), eager, b)->UseRealTime();
    benchmark::RegisterBenchmark((s + "/tandem_compiled").c_str(), compiled, b)->UseRealTime();
  }
  benchmark::RegisterBenchmark("cnn_compile/b128/capture", capture, int64_t{128})->UseRealTime();
  benchmark::RegisterBenchmark("pointwise/gelu/tandem_eager", pointwise, false)->UseRealTime();
  benchmark::RegisterBenchmark("pointwise/gelu/tandem_compiled", pointwise, true)->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
