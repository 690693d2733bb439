#pragma once
// Autograd overhead workloads (issue 4, "Benchmarks"), shared by bench_core (tandem) and
// bench_peer_torch (libtorch) like workloads.h: each case is a template over an adapter.
//
// A grad adapter `G` provides, besides workloads.h's `Tensor`, `ones`, `add`:
//   `Linear` (a layer type), `linear(in, out)` -> Linear, `forward(Linear&, x)`,
//   `zero_grad(Linear&, set_to_none)`, `relu(x)`, `mse_loss(a, b)`, `backward(loss)`,
//   `requires_grad(t)` (returns t marked as a leaf requiring grad), `grad(t)` (its .grad),
//   `weight(Linear&)`, `numel(t)`, and the allocator's figures where the library exposes
//   them (-1 where not): `tensor_bytes_in_use()`, `reset_tensor_peak()`, `tensor_peak_bytes()`,
//   `block_bytes(nbytes)` (what a tensor of nbytes counts in bytes in use).
// Memory figures are reported as Google Benchmark counters named `mem_*` (bytes);
// bench/report.py turns them into rows of the "autograd_mem" table.
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cmath>
#include <cstdint>

namespace bench {

/// Heap bytes in use according to glibc (every malloc, whichever library made it).
inline int64_t heap_bytes_in_use() { return static_cast<int64_t>(mallinfo2().uordblks); }

/// `a + b` on 1-element float32 leaves that require grad: each op records a tape node
/// (PyTorch: AddBackward0 with two AccumulateGrad edges), freed with its result.
template <class G>
void add_1elem_requires_grad(benchmark::State& st) {
  auto a = G::requires_grad(G::ones({1}));
  auto b = G::requires_grad(G::ones({1}));
  if (G::numel(G::add(a, b)) != 1) return st.SkipWithError("add gave wrong sizes");
  for (auto _ : st) {
    auto c = G::add(a, b);
    benchmark::DoNotOptimize(c);
  }
}

/// The tiny MLP 16-16-16-1 with ReLU, batch 1.
template <class G>
struct TinyMlp {
  typename G::Linear l1 = G::linear(16, 16), l2 = G::linear(16, 16), l3 = G::linear(16, 1);
  typename G::Tensor x = G::ones({1, 16}), y = G::ones({1, 1});

  /// zero_grad, forward, MSE loss, backward: one training step without the update.
  void step(bool set_to_none) {
    G::zero_grad(l1, set_to_none);
    G::zero_grad(l2, set_to_none);
    G::zero_grad(l3, set_to_none);
    auto h = G::relu(G::forward(l1, x));
    h = G::relu(G::forward(l2, h));
    auto loss = G::mse_loss(G::forward(l3, h), y);
    G::backward(loss);
  }
  /// True once a step left a gradient of the right size on the first and last weights.
  bool grads_ok() {
    return G::numel(G::grad(G::weight(l1))) == 256 && G::numel(G::grad(G::weight(l3))) == 16;
  }
};

/// One step; `set_to_none` picks zero_grad's mode (true: grads are dropped and the next
/// backward allocates them; false: they are zero-filled and accumulated into in place,
/// libtorch 1.13's C++ default).
template <class G, bool kSetToNone>
void mlp16_step(benchmark::State& st) {
  TinyMlp<G> m;
  m.step(kSetToNone);
  if (!m.grads_ok()) return st.SkipWithError("MLP step gave no weight gradients");
  for (auto _ : st) m.step(kSetToNone);
}

/// Forward and loss only (graph recorded, then dropped without backward).
template <class G>
void mlp16_forward(benchmark::State& st) {
  TinyMlp<G> m;
  for (auto _ : st) {
    auto h = G::relu(G::forward(m.l1, m.x));
    h = G::relu(G::forward(m.l2, h));
    auto loss = G::mse_loss(G::forward(m.l3, h), m.y);
    benchmark::DoNotOptimize(loss);
  }
}

/// Memory of the MLP step (zero_grad with zero fill, so the gradients stay allocated):
///   mem_tensor_retained: allocator bytes in use after the 2nd..Nth steps minus before them
///     (0 when backward frees the whole graph; -1 on a library without allocator stats);
///   mem_tensor_first_step: the same over the first step, minus the gradients' bytes
///     (what the first backward left allocated besides the new .grad tensors);
///   mem_tensor_peak_step: allocator peak during a step above the level before it;
///   mem_heap_retained: glibc heap bytes in use after the 100 steps minus before (tape
///     nodes and anything else a step leaks; about 0 expected: a few hundred bytes of
///     thread-local or cache growth are not a per-step leak).
template <class G>
void mlp16_memory(benchmark::State& st) {
  int64_t first = 0, retained = 0, peak = 0, heap = 0;
  for (auto _ : st) {
    TinyMlp<G> m;
    // The gradients' bytes as the allocator counts them (tandem rounds to size classes).
    const int64_t grad_bytes = 2 * G::block_bytes(4 * 256) + 3 * G::block_bytes(4 * 16) + G::block_bytes(4);
    int64_t t0 = G::tensor_bytes_in_use();
    m.step(false);
    int64_t t1 = G::tensor_bytes_in_use();
    int64_t h1 = heap_bytes_in_use();
    for (int i = 0; i < 100; ++i) m.step(false);
    int64_t t2 = G::tensor_bytes_in_use();
    int64_t h2 = heap_bytes_in_use();
    if (!m.grads_ok()) return st.SkipWithError("MLP step gave no weight gradients");
    G::reset_tensor_peak();
    m.step(false);
    int64_t t3 = G::tensor_peak_bytes();
    first = t0 < 0 ? -1 : t1 - t0 - grad_bytes;
    retained = t0 < 0 ? -1 : t2 - t1;
    peak = t0 < 0 ? -1 : t3 - t2;
    heap = h2 - h1;
  }
  st.counters["mem_tensor_first_step"] = static_cast<double>(first);
  st.counters["mem_tensor_retained"] = static_cast<double>(retained);
  st.counters["mem_tensor_peak_step"] = static_cast<double>(peak);
  st.counters["mem_heap_retained"] = static_cast<double>(heap);
}

/// Registers the autograd cases (groups "autograd" and "autograd_mem").
template <class G>
void register_autograd() {
  benchmark::RegisterBenchmark("autograd/add_1elem_requires_grad", add_1elem_requires_grad<G>)->UseRealTime();
  benchmark::RegisterBenchmark("autograd/mlp16_forward", mlp16_forward<G>)->UseRealTime();
  benchmark::RegisterBenchmark("autograd/mlp16_step", mlp16_step<G, true>)->UseRealTime();
  benchmark::RegisterBenchmark("autograd/mlp16_step_zero_fill", mlp16_step<G, false>)->UseRealTime();
  benchmark::RegisterBenchmark("autograd_mem/mlp16", mlp16_memory<G>)->UseRealTime()->Iterations(1);
}

}  // namespace bench
