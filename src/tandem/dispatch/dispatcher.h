#pragma once
// The one dispatch path every op call goes through (DESIGN.md principle 2):
//   promote -> infer meta (cached) -> view (alias) or allocate -> kernel
//   -> autograd recording slot -> observers.
// Observers see every call (the profiler and graph capture use this hook); the autograd
// layer installs the recording slot, so neither needs any op to change.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/dispatch/op_def.h"

namespace tandem {

using OpOutputs = SmallVec<Tensor, 2>;

/// Registers `def` (and its in-place variant when def.inplace_variant). Returns the
/// stored definition, valid for the life of the program. Raises ValueError on a duplicate name.
const OpDef& register_op(OpDef def);
/// Looks up an op by name; nullptr if absent.
const OpDef* find_op(const std::string& name);
/// Looks up an op by name; raises ValueError if absent.
const OpDef& get_op(const std::string& name);
/// All registered ops in registration order (stable ids).
std::vector<const OpDef*> all_ops();

/// Runs `op` on `inputs` with `attrs` (positional, schema order; missing trailing attrs
/// take their defaults). Returns the outputs. Raises the op's validation errors.
OpOutputs dispatch(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs = {});
/// Single-output convenience.
Tensor dispatch1(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs = {});

/// Compiled-mode entry points: no meta inference, observers or autograd.
/// Applies a view op's stride rule to `input` and returns the alias. An absolute storage
/// offset (as_strided's) counts from element `absolute_base` of the storage: 0 for a
/// caller's tensor, the buffer's place for a value the executor put inside its arena (in
/// eager mode that value had a storage of its own, starting at 0).
Tensor apply_view(const OpDef& op, const Tensor& input, ArrayRef<AttrValue> attrs, int64_t absolute_base = 0);
/// Runs op's kernel with outputs the caller allocated (an in-place op gets self as
/// outputs[0]); promotable inputs are cast as dispatch() would. `result_dtype` is the
/// dtype meta inference gave output 0 (for in-place ops computing in a wider dtype).
void run_kernel(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, OpOutputs& outputs,
                DType result_dtype);

/// Runs meta inference only (no data): used by the IR verifier and capture.
SmallVec<TensorMeta, 2> infer_meta(const OpDef& op, ArrayRef<MetaRef> inputs, ArrayRef<AttrValue> attrs);

/// Type promotion of PyTorch's result_type over the given metas: dimensioned tensors
/// outrank 0-d tensors, which outrank wrapped numbers, within a category
/// (bool < integer < floating).
DType result_type(ArrayRef<MetaRef> metas);

/// Wraps a C++ number as a 0-d tensor flagged as a wrapped number.
Tensor wrap_scalar(const Scalar& s);

/// Sees every dispatched call. Callbacks run on the calling thread.
class DispatchObserver {
 public:
  virtual ~DispatchObserver() = default;
  /// Before the op runs. `depth` is 0 for user calls, >0 inside composite ops.
  virtual void on_enter(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, int depth) {}
  /// After the op ran (and after autograd recording).
  virtual void on_exit(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs,
                       ArrayRef<Tensor> outputs, int depth) {}
};

/// Installs an observer for the current thread until the guard is destroyed.
class ObserverGuard {
 public:
  explicit ObserverGuard(DispatchObserver* obs);
  ~ObserverGuard();
  ObserverGuard(const ObserverGuard&) = delete;
  ObserverGuard& operator=(const ObserverGuard&) = delete;

 private:
  DispatchObserver* obs_;
};

/// Autograd's recording slot: called after a non-composite op ran with grad mode on and
/// some differentiable input requiring grad. Installed once by the autograd layer.
using AutogradRecorder = void (*)(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs,
                                  OpOutputs& outputs);
void set_autograd_recorder(AutogradRecorder r);
/// Called before an in-place op writes into a tensor (autograd's leaf/view checks).
using InplaceChecker = void (*)(const OpDef& op, ArrayRef<Tensor> inputs);
void set_inplace_checker(InplaceChecker c);
/// Called for every view op output while grad mode is on, so that a later in-place
/// write through the view can rewrite its base's history.
using ViewTracker = void (*)(const Tensor& view, const Tensor& base);
void set_view_tracker(ViewTracker t);

/// Meta cache statistics (hits/misses since the last clear) and control.
struct MetaCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
};
MetaCacheStats meta_cache_stats();
void clear_meta_cache();
void set_meta_cache_enabled(bool enabled);

}  // namespace tandem

/// Registers an OpDef at static-initialisation time from the op's family file.
/// Usage: TANDEM_REGISTER_OP(add) { OpDef d; d.name = "add"; ...; return d; }
/// and then `const OpDef& op_add()` returns it.
#define TANDEM_REGISTER_OP(ident)                                                 \
  static ::tandem::OpDef tandem_make_op_##ident();                                \
  const ::tandem::OpDef& op_##ident() {                                           \
    static const ::tandem::OpDef& d = ::tandem::register_op(tandem_make_op_##ident()); \
    return d;                                                                      \
  }                                                                                \
  [[maybe_unused]] static const ::tandem::OpDef& tandem_reg_##ident = op_##ident(); \
  static ::tandem::OpDef tandem_make_op_##ident()
