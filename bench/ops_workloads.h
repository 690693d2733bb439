#pragma once
// Linear-algebra and convolution workloads shared by bench_ops (tandem) and
// bench_peer_torch_ops (libtorch), in the style of workloads.h: each case is a template
// over a small adapter `Lib`, so both programs run the same code and register the same
// case names. C++17 (the peer's standard).
//
// A `Lib` provides: `Tensor`, `NoGrad` (RAII guard), `full(sizes, value)`,
// `matmul(a, b)`, `conv2d(x, w, b, padding)`, `max_pool2d(x, k)`, and
// `at(t, i, j...)` reading one float element (to check results before timing).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace bench_ops {

inline bool near(double got, double want) { return std::fabs(got - want) <= 1e-3 * std::fabs(want) + 1e-3; }

/// n x n x n matmul in float32 (or float64); reports GFLOP/s.
template <class Lib>
void matmul_square(benchmark::State& st, int64_t n, bool f64) {
  typename Lib::NoGrad no_grad;
  auto a = Lib::full({n, n}, 0.5, f64);
  auto b = Lib::full({n, n}, 0.25, f64);
  if (!near(Lib::at2(Lib::matmul(a, b), n - 1, 0), 0.125 * static_cast<double>(n)))
    return st.SkipWithError("matmul gave a wrong result");
  for (auto _ : st) {
    auto c = Lib::matmul(a, b);
    benchmark::DoNotOptimize(c);
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n) * n * n / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

/// conv2d forward: [128, 32, 28, 28] * 64 filters 3x3, padding 1, with bias.
template <class Lib>
void conv2d_128x32x28(benchmark::State& st) {
  typename Lib::NoGrad no_grad;
  auto x = Lib::full({128, 32, 28, 28}, 1.0, false);
  auto w = Lib::full({64, 32, 3, 3}, 1.0, false);
  auto b = Lib::full({64}, 0.5, false);
  auto y = Lib::conv2d(x, w, b, 1);
  // Interior: 32 * 9 ones + bias; corner: 32 * 4 + bias.
  if (!near(Lib::at4(y, 1, 2, 5, 5), 288.5) || !near(Lib::at4(y, 127, 63, 0, 0), 128.5))
    return st.SkipWithError("conv2d gave a wrong result");
  for (auto _ : st) {
    auto r = Lib::conv2d(x, w, b, 1);
    benchmark::DoNotOptimize(r);
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * 128 * 64 * 28 * 28 * 32 * 9 / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

/// max_pool2d 2x2 (stride 2) on [128, 64, 28, 28]; reports bytes read + written per second.
template <class Lib>
void max_pool2d_128x64x28(benchmark::State& st) {
  typename Lib::NoGrad no_grad;
  auto x = Lib::full({128, 64, 28, 28}, 1.5, false);
  if (!near(Lib::at4(Lib::max_pool2d(x, 2), 3, 4, 13, 13), 1.5)) return st.SkipWithError("max_pool2d gave a wrong result");
  for (auto _ : st) {
    auto r = Lib::max_pool2d(x, 2);
    benchmark::DoNotOptimize(r);
  }
  st.counters["bytes/s"] = benchmark::Counter(4.0 * 128 * 64 * (28 * 28 + 14 * 14),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::OneK::kIs1024);
}

/// Registers every case. Wall time drives the iteration count (see workloads.h).
template <class Lib>
void register_all() {
  benchmark::RegisterBenchmark("linalg/matmul_2048_f32", [](benchmark::State& s) { matmul_square<Lib>(s, 2048, false); })
      ->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("linalg/matmul_256_f32", [](benchmark::State& s) { matmul_square<Lib>(s, 256, false); })
      ->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("linalg/matmul_64_f32", [](benchmark::State& s) { matmul_square<Lib>(s, 64, false); })
      ->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("linalg/matmul_512_f64", [](benchmark::State& s) { matmul_square<Lib>(s, 512, true); })
      ->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("conv/conv2d_128x32x28_64x3x3", conv2d_128x32x28<Lib>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("conv/max_pool2d_128x64x28_2x2", max_pool2d_128x64x28<Lib>)
      ->UseRealTime()->Unit(benchmark::kMillisecond);
}

template <class Lib>
int run_main(int argc, char** argv) {
  register_all<Lib>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace bench_ops
