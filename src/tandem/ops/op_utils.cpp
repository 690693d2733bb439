#include "tandem/ops/op_utils.h"

#include <algorithm>

#include "tandem/ops/shape.h"

namespace tandem::ops {

DimVector broadcast_shapes(const char* op, IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    TANDEM_CHECK(x == y || x == 1 || y == 1, ShapeError, op, "shapes ", a, " and ", b,
                 " are not broadcastable (size ", x, " vs ", y, " at dim ", static_cast<int64_t>(n - 1 - i), ")");
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

DimVector broadcast_all(const char* op, ArrayRef<MetaRef> inputs) {
  DimVector out;
  bool first = true;
  for (const MetaRef& m : inputs) {
    if (!m.defined) continue;
    if (first) {
      out = m.sizes.vec();
      first = false;
    } else if (!m.sizes.equals(out)) {
      out = broadcast_shapes(op, out, m.sizes);
    }
  }
  return out;
}

void elementwise_meta(MetaContext& ctx) {
  TensorMeta m;
  m.dtype = ctx.common_dtype;
  m.sizes = broadcast_all(ctx.op, ctx.inputs);
  ctx.outputs.push_back(std::move(m));
}

void elementwise_bool_meta(MetaContext& ctx) {
  TensorMeta m;
  m.dtype = DType::Bool;
  m.sizes = broadcast_all(ctx.op, ctx.inputs);
  ctx.outputs.push_back(std::move(m));
}

void same_as_input_meta(MetaContext& ctx) {
  TensorMeta m;
  m.dtype = ctx.common_dtype;
  m.sizes = ctx.inputs[0].sizes.vec();
  ctx.outputs.push_back(std::move(m));
}

void require_floating(const char* op, DType t) {
  TANDEM_CHECK(is_floating_point(t), TypeError, op, "got dtype ", dtype_name(t), ", expected a floating dtype");
}

void require_not_bool(const char* op, DType t, const char* hint) {
  TANDEM_CHECK(t != DType::Bool, TypeError, op, "got dtype bool, ", hint);
}

DimVector wrap_dims(const char* op, IntArrayRef dims, int64_t ndim) {
  DimVector out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    TANDEM_CHECK(!seen[static_cast<size_t>(w)], ValueError, op, "dim ", w, " appears multiple times in the list of dims ", dims);
    seen[static_cast<size_t>(w)] = true;
    out.push_back(w);
  }
  return out;
}

Tensor reduce_grad(const Tensor& g, const MetaRef& input) {
  Tensor r = input.sizes.equals(g.sizes()) ? g : sum_to_size(g, input.sizes);
  return r.dtype() == input.dtype ? r : r.to(input.dtype);
}

}  // namespace tandem::ops
