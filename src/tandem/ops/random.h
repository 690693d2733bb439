#pragma once
// Random ops. All draw from the process-wide generator (core/generator.h, Philox4x32-10)
// in a fixed order, so the same seed gives the same values eagerly and compiled.
#include "tandem/core/generator.h"
#include "tandem/core/tensor.h"

namespace tandem {

/// Uniform [0, 1) values of `sizes` (floating dtype, default float32). TypeError for
/// non-floating dtypes (torch.rand).
Tensor rand(IntArrayRef sizes, TensorOptions opts = {});
/// Standard normal values (torch.randn).
Tensor randn(IntArrayRef sizes, TensorOptions opts = {});
/// Integers uniform in [low, high) (dtype default int64); ValueError if low >= high.
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions opts = {});
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions opts = {});
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);
/// 1 with probability p[i] (p = self's values, in [0, 1]), else 0; same shape and dtype
/// as self (torch.bernoulli). ValueError if a probability is outside [0, 1].
Tensor bernoulli(const Tensor& self);
/// 1 with probability p for every element of a tensor shaped like self.
Tensor bernoulli(const Tensor& self, double p);
/// A random permutation of 0..n-1 (int64), torch.randperm.
Tensor randperm(int64_t n, TensorOptions opts = {});

}  // namespace tandem
