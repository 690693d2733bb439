#pragma once
// Automatic mixed precision, as PyTorch's `torch.autocast("cpu", dtype=torch.bfloat16)`.
//
// While an AutocastGuard is enabled on a thread, dispatch() casts the floating inputs of
// every op whose OpDef::autocast policy is not None before the op runs: LowerPrecision ops
// (matmul, linear, conv) get the autocast dtype, Float32 ops (softmax, losses, norms,
// exp/log/pow, accumulating reductions) get float32, Promote ops (cat, stack, where) get the
// widest floating dtype among their inputs. The policy is data on each OpDef; this is the
// one place that applies it. Each cast is a real `_to_copy` op dispatched like any other, so
// autograd differentiates through it (the gradient of a float32 leaf is float32) and graph
// capture records it (compiled and eager runs compute the same bytes).
//
// Weight cast cache (PyTorch's): within one autocast region (until the outermost guard is
// destroyed), a float32 leaf that requires grad is cast to the autocast dtype once and the
// cast tensor is reused, so a parameter used twice is converted once and its gradient flows
// back through one cast. tandem also checks the source's version counter (an in-place update
// such as an optimizer step inside the region casts again: PyTorch would reuse a stale cast)
// and the grad mode the cast was made under (a cast made under no_grad has no history).
//
// Backward rules run with autocast off (the engine suspends it): backward ops run in the
// dtypes the forward chose, which is what PyTorch's `custom_bwd` guarantees and what its
// docs recommend (leave the autocast region before backward()).
#include <cstdint>

#include "tandem/dispatch/op_def.h"

namespace tandem {

/// Enables (or, with enabled=false, disables) autocast on this thread until destroyed,
/// restoring the previous state. Nestable: an inner guard may change the dtype or switch
/// autocast off for a block. `dtype` is the lower-precision dtype, BFloat16 (PyTorch's CPU
/// default) or Float16; anything else raises ValueError ("[autocast] ..."). The weight
/// cast cache is cleared when the outermost guard is destroyed; cache_enabled=false
/// disables it inside this guard. Reference: torch.autocast(device_type="cpu", dtype,
/// enabled, cache_enabled).
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = DType::BFloat16, bool enabled = true, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
  bool prev_cache_;
};

/// True when autocast is on for this thread (torch.is_autocast_cpu_enabled).
bool is_autocast_enabled();
/// The lower-precision dtype autocast casts to (torch.get_autocast_cpu_dtype); BFloat16
/// when no guard set another.
DType autocast_dtype();
/// Drops every cached weight cast of this thread (torch.clear_autocast_cache).
void clear_autocast_cache();

namespace autocast {

/// Number of entries in this thread's weight cast cache (for tests).
int64_t cache_size();

/// A value that identifies the autocast state for compiled-mode signatures: 0 when off,
/// otherwise distinct per dtype. A program captured under one state is only replayed under
/// the same state.
uint64_t state_key();
/// "off" or "bfloat16" / "float16", for messages.
const char* state_name(uint64_t key);

/// Switches autocast off on this thread without ending the region (nesting and the weight
/// cache stay as they are): the autograd engine runs backward rules under it, and the
/// dispatcher runs a composite op's body under it once the op's own policy has cast the
/// inputs (PyTorch excludes the autocast key while a listed op runs).
class SuspendGuard {
 public:
  SuspendGuard();
  ~SuspendGuard();
  SuspendGuard(const SuspendGuard&) = delete;
  SuspendGuard& operator=(const SuspendGuard&) = delete;

 private:
  bool prev_;
};

/// Gives this thread an empty weight cast cache until destroyed, then puts the previous one
/// back. Graph capture uses it so that a captured function casts each weight inside the
/// program (once: the cache works within the capture as in eager) rather than reusing a
/// cast tensor made before the capture, which the program would read as a stale constant.
class CacheScope {
 public:
  CacheScope();
  ~CacheScope();
  CacheScope(const CacheScope&) = delete;
  CacheScope& operator=(const CacheScope&) = delete;

 private:
  void* saved_;
};

/// Applies op.autocast to `inputs` (the dispatcher's step before promotion). Returns
/// `inputs` itself when autocast is off, the op has no policy or nothing needs a cast;
/// otherwise the cast inputs, held in `storage`. Casts dispatch `_to_copy` (recorded by
/// autograd and capture); float32 leaves requiring grad go through the weight cast cache.
ArrayRef<Tensor> cast_inputs(const OpDef& op, ArrayRef<Tensor> inputs, SmallVec<Tensor, 4>& storage);

}  // namespace autocast
}  // namespace tandem
