#pragma once
// Helpers shared by op definitions: broadcasting, standard meta functions, attribute
// shorthands. Only ops/ files include this.
#include "tandem/dispatch/dispatcher.h"

namespace tandem::ops {

/// Broadcast two shapes with NumPy/PyTorch rules; ShapeError naming `op` on mismatch.
DimVector broadcast_shapes(const char* op, IntArrayRef a, IntArrayRef b);
/// Broadcast all defined input metas.
DimVector broadcast_all(const char* op, ArrayRef<MetaRef> inputs);

/// Meta for elementwise ops: output = broadcast of all inputs, dtype = common dtype
/// (bool for Promotion::Comparison).
void elementwise_meta(MetaContext& ctx);
/// Elementwise meta whose output dtype is always bool (isnan, logical ops).
void elementwise_bool_meta(MetaContext& ctx);
/// Meta for a unary op keeping the input's shape and the common dtype.
void same_as_input_meta(MetaContext& ctx);

/// Rejects bool/integer inputs for ops defined on floating types only.
void require_floating(const char* op, DType t);
/// Rejects bool inputs for numeric ops (neg, sub).
void require_not_bool(const char* op, DType t, const char* hint);

/// Gradient for a (possibly broadcast) input of a backward rule: `g` summed down to the
/// input's sizes (sum_to_size) and cast to the input's dtype when it differs. Written with
/// ops, so it is differentiable again (double backward).
Tensor reduce_grad(const Tensor& g, const MetaRef& input);

/// Normalises a list of dims (negative wrap, duplicates rejected) for reductions.
DimVector wrap_dims(const char* op, IntArrayRef dims, int64_t ndim);

}  // namespace tandem::ops
