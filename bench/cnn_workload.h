#pragma once
// The compiled-mode benchmark workload, shared by bench_compile (tandem) and
// bench_peer_torch_compile (libtorch): Fashion-MNIST CNN inference (nn::models::fashion_cnn:
// conv 1->32 3x3 pad 1, ReLU, max pool 2, conv 32->64 3x3 pad 1, ReLU, max pool 2,
// flatten, linear 3136->128, ReLU, linear 128->10) in eval mode without gradients.
//
// Both programs fill the parameters and the input from the same formulas, so they compute
// the same logits; each reports a checksum of the logits of a fixed batch as a counter and
// bench/report.py checks that the programs agree before it prints any time. C++17.
#include <cmath>
#include <cstdint>

namespace bench_cnn {

/// Batch sizes timed. The target is batch 256; 128 is the training batch and 1 is
/// latency-bound (per-op overhead dominates).
constexpr int64_t kBatches[] = {1, 128, 256};

/// Parameter shapes in fashion_cnn's named_parameters() order.
struct ParamShape {
  const char* name;
  int64_t dims[4];
  int ndim;
};
constexpr ParamShape kParams[] = {
    {"0.weight", {32, 1, 3, 3}, 4},   {"0.bias", {32}, 1},  {"3.weight", {64, 32, 3, 3}, 4}, {"3.bias", {64}, 1},
    {"7.weight", {128, 3136}, 2},     {"7.bias", {128}, 1}, {"9.weight", {10, 128}, 2},      {"9.bias", {10}, 1},
};
constexpr int kNumParams = 8;

inline int64_t numel(const ParamShape& p) {
  int64_t n = 1;
  for (int d = 0; d < p.ndim; ++d) n *= p.dims[d];
  return n;
}

/// Fan-in of parameter `p` (of its layer's weight), for a PyTorch-like scale.
inline int64_t fan_in(int p) {
  const ParamShape& w = kParams[p & ~1];
  int64_t f = 1;
  for (int d = 1; d < w.ndim; ++d) f *= w.dims[d];
  return f;
}

/// Element i of parameter p: deterministic, O(1/sqrt(fan_in)) like the default init.
inline float param_value(int p, int64_t i) {
  return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1.3 * p) / std::sqrt(static_cast<double>(fan_in(p))));
}

/// Element i of the input batch [N, 1, 28, 28].
inline float input_value(int64_t i) { return static_cast<float>(std::sin(0.011 * static_cast<double>(i)) * 1.5); }

/// Batch of the correctness check.
constexpr int64_t kCheckBatch = 4;

/// Checksum of logits [kCheckBatch, 10]: sum of |v| * (1 + (k % 7)) over elements k.
inline double checksum(const float* logits, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += std::fabs(static_cast<double>(logits[k])) * static_cast<double>(1 + k % 7);
  return s;
}

/// The elementwise-fusion workload (issue 13): GELU's tanh form written out as nine
/// elementwise ops, y = x * 0.5 * (tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1),
/// on a [kPointwiseRows, kPointwiseCols] float32 tensor with x[i] = pointwise_value(i). No
/// op's intermediate is read twice, so tandem's compiled program fuses the chain into one
/// node; eager runs nine passes over 16 MiB.
constexpr int64_t kPointwiseRows = 4096, kPointwiseCols = 1024;
inline float pointwise_value(int64_t i) { return static_cast<float>(std::sin(0.001 * static_cast<double>(i)) * 3.0); }

}  // namespace bench_cnn
