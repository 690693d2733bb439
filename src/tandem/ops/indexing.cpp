// Advanced indexing (aten::index / aten::index_put) and the TensorIndex API of the
// PyTorch C++ frontend (at::indexing::get_item / set_item).
//
// Ops: "index" (composite: turns bool/uint8 masks into int64 indices with nonzero, then
// calls "_index"), "_index" (static-shape gather by int64 indices) and "index_put"
// (+ "index_put_"; static shape, masks handled inside the kernel). Basic indexing
// (integers, slices, None, Ellipsis) never reaches an op of this file: it is a chain of
// select/slice/unsqueeze views.
#include <algorithm>
#include <sstream>

#include "tandem/kernels/cpu/index.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/op_utils.h"

namespace tandem {

const OpDef& op_alias();  // ops/shape.cpp

namespace indexing {
TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  TANDEM_CHECK(s != nullptr && std::string(s) == "...", ValueError, "TensorIndex", "got the string \"",
               s ? s : "(null)", "\", expected \"...\" (the only string index)");
}
TensorIndex::TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {
  TANDEM_CHECK(tensor_.defined(), ValueError, "TensorIndex", "got an undefined tensor, expected a defined index tensor");
}
}  // namespace indexing

namespace {

bool is_mask_dtype(DType t) { return t == kBool || t == kUInt8; }

// Validates a list of index entries (undefined = whole dim, int64 indices, or bool/uint8
// masks covering mask.dim() dims) against self's sizes. Returns whether a mask is present.
bool validate_entries(const char* op, IntArrayRef self_sizes, ArrayRef<MetaRef> entries, bool allow_masks) {
  const int64_t nd = static_cast<int64_t>(self_sizes.size());
  int64_t p = 0;
  bool has_mask = false;
  for (const MetaRef& m : entries) {
    if (!m.defined) {
      ++p;
      continue;
    }
    if (is_mask_dtype(m.dtype) && allow_masks) {
      TANDEM_CHECK(m.dim() > 0, IndexError, op,
                   "a 0-dim bool/uint8 index tensor is not supported here, expected a mask with at least 1 dim "
                   "(use a bool TensorIndex for a 0-dim condition)");
      has_mask = true;
      for (int64_t j = 0; j < m.dim(); ++j) {
        TANDEM_CHECK(p + j < nd, IndexError, op, "too many indices for tensor of dimension ", nd);
        TANDEM_CHECK(m.sizes[j] == self_sizes[p + j], IndexError, op, "the shape of the mask ", m.sizes, " at index ", j,
                     " does not match the shape of the indexed tensor ", self_sizes, " at index ", p + j);
      }
      p += m.dim();
    } else {
      TANDEM_CHECK(m.dtype == kInt64, IndexError, op, "tensors used as indices must be long, byte or bool tensors, got ",
                   dtype_name(m.dtype));
      ++p;
    }
  }
  TANDEM_CHECK(p <= nd, IndexError, op, "too many indices for tensor of dimension ", nd);
  return has_mask;
}

// Result layout of advanced indexing with int64 indices (entries[k] indexes self dim k).
struct AdvPlan {
  DimVector bshape;              // broadcast shape of the index tensors
  DimVector out_sizes;           // indexing result shape
  std::vector<int64_t> dims;     // indexed self dims, in order
  std::vector<int64_t> src_dim;  // per result dim: the self dim it walks, or -1 for index dims
  int64_t bstart = 0;            // first result dim of the index dims
};

AdvPlan plan_advanced(const char* op, IntArrayRef self_sizes, ArrayRef<MetaRef> entries) {
  const int64_t nd = static_cast<int64_t>(self_sizes.size());
  TANDEM_CHECK(static_cast<int64_t>(entries.size()) <= nd, IndexError, op, "too many indices for tensor of dimension ", nd,
               " (got ", entries.size(), ")");
  AdvPlan p;
  bool any = false, ok = true;
  for (size_t k = 0; k < entries.size(); ++k) {
    const MetaRef& m = entries[k];
    if (!m.defined) continue;
    p.dims.push_back(static_cast<int64_t>(k));
    if (!any) {
      p.bshape = m.sizes.vec();
      any = true;
      continue;
    }
    const size_t n = std::max(p.bshape.size(), m.sizes.size());
    DimVector b(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t x = i < p.bshape.size() ? p.bshape[p.bshape.size() - 1 - i] : 1;
      int64_t y = i < m.sizes.size() ? m.sizes[m.sizes.size() - 1 - i] : 1;
      if (x != y && x != 1 && y != 1) ok = false;
      b[n - 1 - i] = x == 1 ? y : x;
    }
    p.bshape = std::move(b);
  }
  if (!ok) {
    std::ostringstream shapes;
    bool first = true;
    for (const MetaRef& m : entries)
      if (m.defined) {
        shapes << (first ? "" : ", ") << m.sizes;
        first = false;
      }
    throw IndexError(str_cat("[", op, "] shape mismatch: indexing tensors could not be broadcast together with shapes ",
                             shapes.str()));
  }
  auto push_self = [&](int64_t d) {
    p.out_sizes.push_back(self_sizes[d]);
    p.src_dim.push_back(d);
  };
  auto push_b = [&] {
    p.bstart = static_cast<int64_t>(p.out_sizes.size());
    for (int64_t s : p.bshape) {
      p.out_sizes.push_back(s);
      p.src_dim.push_back(-1);
    }
  };
  if (!any) {
    for (int64_t d = 0; d < nd; ++d) push_self(d);
    return p;
  }
  const bool adjacent = p.dims.back() - p.dims.front() + 1 == static_cast<int64_t>(p.dims.size());
  if (adjacent) {
    for (int64_t d = 0; d < p.dims.front(); ++d) push_self(d);
    push_b();
    for (int64_t d = p.dims.back() + 1; d < nd; ++d) push_self(d);
  } else {
    push_b();
    for (int64_t d = 0; d < nd; ++d)
      if (std::find(p.dims.begin(), p.dims.end(), d) == p.dims.end()) push_self(d);
  }
  return p;
}

std::vector<MetaRef> metas_of(ArrayRef<Tensor> ts) {
  std::vector<MetaRef> m;
  for (const Tensor& t : ts) m.push_back(MetaRef::of(t));
  return m;
}

// Element offsets (in target's elements) of every index position, and the aliases of
// `target` and of the offsets laid out over the result shape. Checks index values.
struct AdvViews {
  Tensor target_view;
  Tensor offs_view;
};
AdvViews advanced_views(const char* op, const Tensor& target, const AdvPlan& p, ArrayRef<Tensor> entries) {
  std::vector<Tensor> idx;
  DimVector sizes, strides;
  for (int64_t d : p.dims) {
    idx.push_back(kernels::expand_alias(entries[d], p.bshape));
    sizes.push_back(target.size(d));
    strides.push_back(target.stride(d));
  }
  Tensor offsets = empty_tensor(p.bshape, kInt64);
  kernels::compute_index_offsets(offsets, idx, sizes, strides, p.dims, op);
  DimVector tst, ost;
  const DimVector bst = contiguous_strides(p.bshape);
  for (size_t i = 0; i < p.out_sizes.size(); ++i) {
    const int64_t sd = p.src_dim[i];
    tst.push_back(sd >= 0 ? target.stride(sd) : 0);
    ost.push_back(sd >= 0 ? 0 : bst[i - static_cast<size_t>(p.bstart)]);
  }
  return {kernels::restride(target, p.out_sizes, tst), kernels::restride(offsets, p.out_sizes, ost)};
}

// Replaces each mask by the int64 index tensors of its nonzero positions (one per mask dim).
std::vector<Tensor> expand_masks_kernel(ArrayRef<Tensor> entries) {
  std::vector<Tensor> out;
  for (const Tensor& t : entries) {
    if (t.defined() && is_mask_dtype(t.dtype())) {
      Tensor nz = kernels::nonzero(t);
      const int64_t n = nz.size(0), k = nz.size(1);
      for (int64_t j = 0; j < k; ++j) out.push_back(make_alias(nz, {n}, {k}, nz.storage_offset() + j));
    } else {
      out.push_back(t);
    }
  }
  return out;
}

void check_values_broadcast(const char* op, IntArrayRef values, IntArrayRef result) {
  bool ok = values.size() <= result.size();
  for (size_t i = 0; ok && i < values.size(); ++i) {
    int64_t v = values[values.size() - 1 - i], r = result[result.size() - 1 - i];
    ok = v == r || v == 1;
  }
  TANDEM_CHECK(ok, ShapeError, op, "shape mismatch: value tensor of shape ", values,
               " cannot be broadcast to indexing result of shape ", result);
}

// ---------------------------------------------------------------- backward rules
// Written with index_put / index, so they are differentiable again.
std::vector<Tensor> saved_entries(BackwardContext& c, size_t first) {
  return std::vector<Tensor>(c.inputs.begin() + static_cast<std::ptrdiff_t>(first), c.inputs.end());
}

// _index: the gradient is added back at the indexed positions (an index may repeat).
std::vector<Tensor> index_backward(BackwardContext& c) {
  std::vector<Tensor> r(c.input_metas.size());
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return r;
  r[0] = index_put(zeros(c.input_metas[0].sizes, g.dtype()), saved_entries(c, 1), g, /*accumulate=*/true);
  return r;
}

// index_put: self keeps the gradient outside the written positions (all of it with
// accumulate); values get the gradient of the positions they were written to, summed
// over broadcasting. With repeated indices and accumulate=false every duplicate gets it,
// as in PyTorch.
std::vector<Tensor> index_put_backward(BackwardContext& c) {
  std::vector<Tensor> r(c.input_metas.size());
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  std::vector<Tensor> entries = saved_entries(c, 2);
  if (c.needs_input_grad[0])
    r[0] = c.attrs.b(0) ? g : index_put(g, entries, zeros({}, g.dtype()), /*accumulate=*/false);
  if (c.needs_input_grad[1]) r[1] = ops::reduce_grad(index(g, entries), c.input_metas[1]);
  return r;
}

}  // namespace

// ---------------------------------------------------------------- _index, index
TANDEM_REGISTER_OP(_index) {
  OpDef d;
  d.name = "_index";
  d.inputs = {{"self"}, {"indices", false, true, false}};
  d.variadic = true;
  d.save_inputs = ~uint32_t{1};  // the indices (the backward is index_put with accumulate)
  d.backward = index_backward;
  d.meta = [](MetaContext& c) {
    const MetaRef& self = c.inputs[0];
    ArrayRef<MetaRef> entries(c.inputs.data() + 1, c.inputs.size() - 1);
    validate_entries("index", self.sizes, entries, false);
    AdvPlan p = plan_advanced("index", self.sizes, entries);
    c.outputs.push_back(TensorMeta{self.dtype, std::move(p.out_sizes), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& self = c.inputs[0];
    const Tensor& out = c.outputs[0];
    ArrayRef<Tensor> entries(c.inputs.data() + 1, c.inputs.size() - 1);
    std::vector<MetaRef> metas = metas_of(entries);
    AdvPlan p = plan_advanced("index", self.sizes(), metas);
    if (p.dims.empty()) {
      kernels::copy_kernel(out, self);
      return;
    }
    AdvViews v = advanced_views("index", self, p, entries);
    kernels::gather_by_offsets(out, v.target_view, v.offs_view);
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

TANDEM_REGISTER_OP(index) {
  OpDef d;
  d.name = "index";
  d.inputs = {{"self"}, {"indices", false, true, false}};
  d.variadic = true;
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) -> std::vector<Tensor> {
    const Tensor& self = in[0];
    ArrayRef<Tensor> entries(in.data() + 1, in.size() - 1);
    std::vector<MetaRef> metas = metas_of(entries);
    const bool has_mask = validate_entries("index", self.sizes(), metas, true);
    std::vector<Tensor> args{self};
    for (const Tensor& t : entries) {
      if (has_mask && t.defined() && is_mask_dtype(t.dtype())) {
        Tensor nz = nonzero(t);  // dispatched: the data-dependent step is visible to capture
        for (int64_t j = 0; j < nz.size(1); ++j) args.push_back(nz.select(1, j));
      } else {
        args.push_back(t);
      }
    }
    return {dispatch1(op__index(), args)};
  };
  return d;
}

// ---------------------------------------------------------------- index_put
TANDEM_REGISTER_OP(index_put) {
  OpDef d;
  d.name = "index_put";
  d.autocast = Autocast::Promote;
  d.inputs = {{"self"}, {"values"}, {"indices", false, true, false, InputOverlap::None}};
  d.variadic = true;
  d.attrs = {{"accumulate", false}};
  d.save_inputs = ~uint32_t{0b11};
  d.backward = index_put_backward;
  d.inplace_variant = true;
  d.meta = [](MetaContext& c) {
    const MetaRef &self = c.inputs[0], &values = c.inputs[1];
    TANDEM_CHECK(values.dtype == self.dtype, TypeError, c.op,
                 "index_put requires the source and destination dtypes to match, got ", dtype_name(self.dtype),
                 " for the destination and ", dtype_name(values.dtype), " for the source");
    ArrayRef<MetaRef> entries(c.inputs.data() + 2, c.inputs.size() - 2);
    const bool has_mask = validate_entries(c.op, self.sizes, entries, true);
    if (!has_mask) {  // with masks the result shape depends on the data: checked in the kernel
      AdvPlan p = plan_advanced(c.op, self.sizes, entries);
      check_values_broadcast(c.op, values.sizes, p.out_sizes);
    }
    c.outputs.push_back(TensorMeta{self.dtype, self.sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor &self = c.inputs[0], &out = c.outputs[0];
    std::vector<Tensor> entries = expand_masks_kernel(ArrayRef<Tensor>(c.inputs.data() + 2, c.inputs.size() - 2));
    std::vector<MetaRef> metas = metas_of(entries);
    AdvPlan p = plan_advanced(c.op, out.sizes(), metas);
    check_values_broadcast(c.op, c.inputs[1].sizes(), p.out_sizes);
    Tensor values = c.inputs[1].is_alias_of(out) ? kernels::contiguous_copy(c.inputs[1]) : c.inputs[1];
    AdvViews v;
    if (!p.dims.empty()) v = advanced_views(c.op, out, p, entries);  // checks every index before any write
    if (!out.is_same(self)) kernels::copy_kernel(out, self);
    if (p.dims.empty()) {  // no index tensors: assign to (or add into) the whole tensor
      Tensor zero = empty_tensor({}, kInt64);
      *zero.data_ptr<int64_t>() = 0;
      v.target_view = out;
      v.offs_view = kernels::expand_alias(zero, out.sizes());
    }
    kernels::scatter_by_offsets(v.target_view, kernels::expand_alias(values, p.out_sizes), v.offs_view, c.attrs.b(0));
  };
  d.raises_on_data = true;  // an index out of range
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor index(const Tensor& self, const std::vector<Tensor>& indices) {
  std::vector<Tensor> args{self};
  args.insert(args.end(), indices.begin(), indices.end());
  return dispatch1(op_index(), args);
}
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  std::vector<Tensor> args{self, values};
  args.insert(args.end(), indices.begin(), indices.end());
  return dispatch1(op_index_put(), args, {AttrValue(accumulate)});
}
Tensor& index_put_(Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  std::vector<Tensor> args{self, values};
  args.insert(args.end(), indices.begin(), indices.end());
  dispatch(*op_index_put().inplace, args, {AttrValue(accumulate)});
  return self;
}

// ---------------------------------------------------------------- TensorIndex API
namespace {
using indexing::TensorIndex;

Tensor apply_select(const Tensor& t, int64_t dim, int64_t index, int64_t real_dim) {
  TANDEM_CHECK(t.dim() > 0, IndexError, "index",
               "invalid index of a 0-dim tensor, expected no integer index (use item() to read a 0-dim tensor)");
  const int64_t size = t.size(dim);
  TANDEM_CHECK(index >= -size && index < size, IndexError, "index", "index ", index, " is out of bounds for dimension ",
               real_dim, " with size ", size);
  return t.select(dim, index);
}

Tensor apply_slice(const Tensor& t, int64_t dim, const indexing::Slice& s) {
  const int64_t step = s.step().value_or(1);
  TANDEM_CHECK(step != 0, ValueError, "index", "slice step cannot be zero");
  TANDEM_CHECK(step > 0, ValueError, "index", "slice step must be greater than zero, got ", step);
  return t.slice(dim, s.start(), s.stop(), step);
}

Tensor bool_to_index(bool b) { return b ? zeros({1}, kInt64) : empty({0}, kInt64); }

void record(std::vector<Tensor>& out, int64_t& dim, Tensor t) {
  out.resize(static_cast<size_t>(dim) + 1);
  out[static_cast<size_t>(dim)] = std::move(t);
  ++dim;
}

// at::indexing::applySlicing: applies the basic indices as views and collects the tensor
// indices (one slot per result dim, undefined = whole dim) for advanced indexing.
Tensor apply_slicing(const Tensor& self, const std::vector<TensorIndex>& indices, std::vector<Tensor>& tensor_indices) {
  int64_t specified = 0, ellipses = 0;
  for (const TensorIndex& ix : indices) {
    switch (ix.kind()) {
      case TensorIndex::Kind::Integer:
      case TensorIndex::Kind::Slice: ++specified; break;
      case TensorIndex::Kind::Ellipsis: ++ellipses; break;
      case TensorIndex::Kind::Tensor:
        specified += is_mask_dtype(ix.tensor().dtype()) ? ix.tensor().dim() : 1;
        break;
      default: break;
    }
  }
  TANDEM_CHECK(ellipses <= 1, IndexError, "index", "an index can only have a single ellipsis ('...'), got ", ellipses);
  TANDEM_CHECK(specified <= self.dim(), IndexError, "index", "too many indices for tensor of dimension ", self.dim(),
               " (got ", specified, ")");
  Tensor result = self;
  int64_t dim = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    const TensorIndex& ix = indices[i];
    const int64_t real_dim = static_cast<int64_t>(i);
    switch (ix.kind()) {
      case TensorIndex::Kind::Integer: result = apply_select(result, dim, ix.integer(), real_dim); break;
      case TensorIndex::Kind::Slice: result = apply_slice(result, dim, ix.slice()); ++dim; break;
      case TensorIndex::Kind::Ellipsis: dim += self.dim() - specified; break;
      case TensorIndex::Kind::None: result = result.unsqueeze(dim); ++dim; break;
      case TensorIndex::Kind::Boolean:
        result = result.unsqueeze(dim);
        record(tensor_indices, dim, bool_to_index(ix.boolean()));
        break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = ix.tensor();
        if (t.dim() == 0 && is_integral(t.dtype(), true)) {
          if (!is_mask_dtype(t.dtype())) {
            result = apply_select(result, dim, t.item<int64_t>(), real_dim);
          } else {
            result = result.unsqueeze(dim);
            record(tensor_indices, dim, bool_to_index(t.item<int64_t>() != 0));
          }
        } else {
          record(tensor_indices, dim, t);
        }
        break;
      }
    }
  }
  return result;
}

// copy_to of set_item: drops leading size-1 dims of src, then copy_ (broadcast, cast).
void copy_to(Tensor dst, const Tensor& src) {
  if (dst.sizes().equals(src.sizes())) {
    dst.copy_(src);
    return;
  }
  DimVector s = src.sizes().vec();
  size_t lead = 0;
  while (lead < s.size() && s[lead] == 1) ++lead;
  dst.copy_(src.view(DimVector(s.begin() + static_cast<std::ptrdiff_t>(lead), s.end())));
}

Tensor strip_leading_ones(const Tensor& t) {
  DimVector s = t.sizes().vec();
  size_t lead = 0;
  while (lead < s.size() && s[lead] == 1) ++lead;
  if (lead == 0) return t;
  return t.view(DimVector(s.begin() + static_cast<std::ptrdiff_t>(lead), s.end()));
}
}  // namespace

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  TANDEM_CHECK(defined(), ValueError, "index", "called on an undefined tensor");
  TANDEM_CHECK(!indices.empty(), ValueError, "index", "got an empty index list, expected at least one index");
  // A single integer selects directly (so a 0-d tensor reports "invalid index of a 0-dim tensor").
  if (indices.size() == 1 && indices[0].is_integer()) return apply_select(*this, 0, indices[0].integer(), 0);
  std::vector<Tensor> tensor_indices;
  Tensor sliced = apply_slicing(*this, indices, tensor_indices);
  if (tensor_indices.empty()) {
    if (sliced.is_same(*this)) sliced = dispatch1(op_alias(), {sliced});  // x[...] is a new view
    return sliced;
  }
  return tandem::index(sliced, tensor_indices);
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value) {
  TANDEM_CHECK(defined(), ValueError, "index_put_", "called on an undefined tensor");
  TANDEM_CHECK(value.defined(), ValueError, "index_put_", "got an undefined value tensor");
  TANDEM_CHECK(!indices.empty(), ValueError, "index_put_", "got an empty index list, expected at least one index");
  if (indices.size() == 1) {
    const TensorIndex& ix = indices[0];
    if (ix.is_boolean() && !ix.boolean()) return *this;  // x[False] = v writes nothing
    if (ix.is_ellipsis()) { copy_to(*this, value); return *this; }
    if (ix.is_none() || (ix.is_boolean() && ix.boolean())) { copy_to(unsqueeze(0), value); return *this; }
    if (ix.is_integer()) { copy_to(apply_select(*this, 0, ix.integer(), 0), value); return *this; }
    if (ix.is_slice()) { copy_to(apply_slice(*this, 0, ix.slice()), value); return *this; }
  }
  std::vector<Tensor> tensor_indices;
  Tensor sliced = apply_slicing(*this, indices, tensor_indices);
  if (tensor_indices.empty()) {
    copy_to(sliced, value);
    return *this;
  }
  tandem::index_put_(sliced, tensor_indices, strip_leading_ones(value), false);
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) {
  TANDEM_CHECK(defined(), ValueError, "index_put_", "called on an undefined tensor");
  kernels::check_scalar_fits(value, dtype(), "index_put_");
  return index_put_(indices, full({}, value, dtype()));
}

Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  return tandem::index_put_(*this, indices, values, accumulate);
}
Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) const {
  return tandem::index_put(*this, indices, values, accumulate);
}

}  // namespace tandem
