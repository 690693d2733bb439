#pragma once
// Workloads shared by bench_core (tandem) and bench_peer_torch (libtorch). Each case is a
// template over a small adapter `Lib`, so both programs run the same code line for line
// and register the same case names; only the adapter differs. C++17 (the peer's standard).
//
// A `Lib` provides: `Tensor`, `NoGrad` (RAII guard), `zeros(sizes)`, `ones(sizes)`,
// `add(a, b)`, `sum_dim0(a)`, `to_double(a)`. Case names are "group/case"; bench/report.py makes one table per group.
#include <benchmark/benchmark.h>

#include <cstdint>

namespace bench {

/// Sum of the sizes: reads the metadata a view chain computed, so it cannot be skipped.
template <class T>
int64_t size_sum(const T& t) {
  int64_t s = 0;
  for (int64_t d : t.sizes()) s += d;
  return s;
}

/// The view chain of issue 2: 64x64 -> [16,256] -> [256,16] -> [64,16] -> [1,64,16].
template <class T>
T view_chain(const T& x) {
  return x.view({16, 256}).transpose(0, 1).slice(0, 0, 128, 2).unsqueeze(0);
}
constexpr int64_t kChainSizeSum = 1 + 64 + 16;

/// Both programs check results once before timing, so a wrong answer is never reported
/// as a time.
template <class Lib>
bool chain_ok() {
  return size_sum(view_chain(Lib::zeros({64, 64}))) == kChainSizeSum;
}

template <class Lib>
void zeros_64x64(benchmark::State& st) {
  for (auto _ : st) {
    auto x = Lib::zeros({64, 64});
    benchmark::DoNotOptimize(x);
  }
}

template <class Lib>
void view_chain_only(benchmark::State& st) {
  if (!chain_ok<Lib>()) return st.SkipWithError("view chain gave wrong sizes");
  auto x = Lib::zeros({64, 64});
  for (auto _ : st) benchmark::DoNotOptimize(size_sum(view_chain(x)));
}

template <class Lib>
void zeros_view_chain(benchmark::State& st) {
  if (!chain_ok<Lib>()) return st.SkipWithError("view chain gave wrong sizes");
  for (auto _ : st) benchmark::DoNotOptimize(size_sum(view_chain(Lib::zeros({64, 64}))));
}

template <class Lib>
void add_1elem(benchmark::State& st) {
  typename Lib::NoGrad no_grad;
  auto a = Lib::ones({1});
  auto b = Lib::ones({1});
  if (size_sum(Lib::add(a, b)) != 1) return st.SkipWithError("add gave wrong sizes");
  for (auto _ : st) {
    auto c = Lib::add(a, b);
    benchmark::DoNotOptimize(c);
  }
}

/// Add of two 10^7-element float32 tensors, no grad: memory bound (120 MB moved per op:
/// two reads and one write). bytes_per_second in the JSON gives the bandwidth.
template <class Lib>
void add_1e7(benchmark::State& st) {
  typename Lib::NoGrad no_grad;
  auto a = Lib::ones({10000000});
  auto b = Lib::ones({10000000});
  if (size_sum(Lib::add(a, b)) != 10000000) return st.SkipWithError("add gave wrong sizes");
  for (auto _ : st) {
    auto c = Lib::add(a, b);
    benchmark::DoNotOptimize(c);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * 3 * 4 * 10000000);
}

/// Kernel loops on an in-cache [128, 256] float32 tensor (a training batch's activation),
/// no grad: the column sum (a reduction over the outer dim) and the float32 -> float64
/// conversion, the loops GCC's -O2 cost model had left scalar (CMakeLists.txt).
template <class Lib, int Which>
void kernel_128x256(benchmark::State& st) {
  typename Lib::NoGrad no_grad;
  auto a = Lib::ones({128, 256});
  auto run = [&] { return Which == 0 ? Lib::sum_dim0(a) : Lib::to_double(a); };
  if (size_sum(run()) != (Which == 0 ? 256 : 128 + 256)) return st.SkipWithError("wrong result sizes");
  for (auto _ : st) {
    auto c = run();
    benchmark::DoNotOptimize(c);
  }
}

/// Registers every case under its shared name. Wall time drives the iteration count:
/// the peer's OpenMP threads can burn CPU that thread CPU time would not show.
template <class Lib>
void register_all() {
  benchmark::RegisterBenchmark("view/zeros_64x64", zeros_64x64<Lib>)->UseRealTime();
  benchmark::RegisterBenchmark("view/view_chain", view_chain_only<Lib>)->UseRealTime();
  benchmark::RegisterBenchmark("view/zeros_view_chain", zeros_view_chain<Lib>)->UseRealTime();
  benchmark::RegisterBenchmark("eltwise/add_1elem", add_1elem<Lib>)->UseRealTime();
  benchmark::RegisterBenchmark("eltwise/add_1e7", add_1e7<Lib>)->UseRealTime();
  benchmark::RegisterBenchmark("kernel/sum_dim0_128x256", kernel_128x256<Lib, 0>)->UseRealTime();
  benchmark::RegisterBenchmark("kernel/to_float64_128x256", kernel_128x256<Lib, 1>)->UseRealTime();
}

/// Shared main body: `register_all`, then Google Benchmark's usual flags
/// (run_all.sh passes --benchmark_out=... --benchmark_out_format=json).
template <class Lib>
int run_main(int argc, char** argv) {
  register_all<Lib>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace bench
