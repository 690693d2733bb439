// Shape and view ops. View ops declare a stride rule (OpDef::view); the dispatcher makes
// the alias. Composite ops (reshape, flatten, split, ...) are written with the views.
#include "tandem/ops/shape.h"

#include <algorithm>
#include <numeric>

#include <cstring>

#include "tandem/core/mem_overlap.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/op_utils.h"

namespace tandem {

DimVector infer_size(const char* op, IntArrayRef shape, int64_t numel) {
  DimVector out = shape.vec();
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TANDEM_CHECK(!infer, ValueError, op, "only one dimension can be inferred, got shape ", shape);
      infer = i;
    } else {
      TANDEM_CHECK(shape[i] >= 0, ValueError, op, "invalid shape dimension ", shape[i], " in ", shape);
      known *= shape[i];
    }
  }
  if (infer) {
    TANDEM_CHECK(known != 0 && numel % known == 0, ShapeError, op, "shape ", shape, " is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    TANDEM_CHECK(known == numel, ShapeError, op, "shape ", shape, " is invalid for input of size ", numel);
  }
  return out;
}

std::optional<DimVector> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides, IntArrayRef new_sizes) {
  const int64_t numel = multiply_integers(old_sizes);
  if (numel == 0) {
    if (old_sizes.equals(new_sizes)) return old_strides.vec();
    return contiguous_strides(new_sizes);
  }
  if (old_sizes.empty()) return DimVector(new_sizes.size(), 1);
  DimVector out(new_sizes.size());
  // Walk the old dims from the innermost, grouping runs that are contiguous with each
  // other ("chunks"); each chunk must be covered exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    bool chunk_ends = d == 0 || (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= new_sizes[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

namespace {

OpDef view_op(const char* name, std::vector<AttrSpec> attrs, ViewFn fn) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self", false}};
  d.attrs = std::move(attrs);
  d.view = fn;
  return d;
}

// Backward rules of the views: each maps the view's gradient back to the input's shape.
const DimVector& in_sizes(BackwardContext& c) {
  static thread_local DimVector v;
  v = c.input_metas[0].sizes.vec();
  return v;
}
std::vector<Tensor> reshape_back(BackwardContext& c) { return {c.grad_outputs[0].reshape(c.input_metas[0].sizes)}; }
// Scatter the gradient into zeros of the input's shape through the same view.
template <typename ApplyView>
std::vector<Tensor> scatter_back(BackwardContext& c, ApplyView apply) {
  Tensor z = zeros(in_sizes(c), c.grad_outputs[0].dtype());
  apply(z).copy_(c.grad_outputs[0]);
  return {z};
}

}  // namespace

// ---------------------------------------------------------------- view ops
TANDEM_REGISTER_OP(view) {
  OpDef d = view_op("view", {{"size", std::vector<int64_t>{}}}, [](const MetaRef& in, const AttrReader& a) {
    DimVector sizes = infer_size("view", a.ints(0), in.numel());
    auto st = compute_view_strides(in.sizes, in.strides, sizes);
    TANDEM_CHECK(st.has_value(), ShapeError, "view", "view size ", sizes,
                 " is not compatible with input tensor's size ", in.sizes, " and stride ", in.strides,
                 " (at least one dimension spans across two contiguous subspaces); use reshape instead");
    return ViewGeometry{std::move(sizes), std::move(*st), 0};
  });
  d.backward = reshape_back;
  return d;
}

TANDEM_REGISTER_OP(as_strided) {
  OpDef d = view_op("as_strided", {{"size", std::vector<int64_t>{}}, {"stride", std::vector<int64_t>{}}, {"storage_offset", std::monostate{}}},
                 [](const MetaRef& in, const AttrReader& a) -> ViewGeometry {
                   // No storage_offset: the view starts at the input's own offset (kept
                   // relative, so a compiled program applies it to whatever offset the
                   // input has on a later call). Bounds are checked here, on every
                   // application (eager and compiled), whenever the storage is known.
                   const auto& sizes = a.ints(0);
                   const auto& strides = a.ints(1);
                   const std::optional<int64_t> abs = a.opt_i(2);
                   TANDEM_CHECK(sizes.size() == strides.size(), ShapeError, "as_strided", "got ", sizes.size(),
                                " sizes and ", strides.size(), " strides, expected the same number");
                   int64_t max_index = 0;
                   bool empty = false;
                   for (size_t i = 0; i < sizes.size(); ++i) {
                     TANDEM_CHECK(sizes[i] >= 0, ValueError, "as_strided", "negative size ", sizes[i], " in ", sizes);
                     TANDEM_CHECK(strides[i] >= 0, ValueError, "as_strided", "negative stride ", strides[i], " in ",
                                  strides);
                     if (sizes[i] == 0) empty = true;
                     else max_index += (sizes[i] - 1) * strides[i];
                   }
                   if (abs) TANDEM_CHECK(*abs >= 0, ValueError, "as_strided", "negative storage offset ", *abs);
                   if (in.storage_known) {
                     const int64_t off = abs.value_or(in.storage_offset);
                     TANDEM_CHECK(empty || off + max_index < in.storage_numel, ValueError, "as_strided", "sizes ",
                                  IntArrayRef(sizes), ", strides ", IntArrayRef(strides), " and storage offset ", off,
                                  " require a storage of ", off + max_index + 1, " elements, but the storage has ",
                                  in.storage_numel);
                   }
                   return ViewGeometry{sizes, strides, abs.value_or(0), abs.has_value()};
                 });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    const MetaRef& in = c.input_metas[0];
    Geometry base{in.sizes.vec(), in.strides.vec(), in.storage_offset};
    Geometry view{c.attrs.ints(0), c.attrs.ints(1), c.attrs.opt_i(2).value_or(in.storage_offset)};
    return {as_strided_backward(c.grad_outputs[0], base, view, in.storage_numel)};
  };
  return d;
}

TANDEM_REGISTER_OP(permute) {
  OpDef d = view_op("permute", {{"dims", std::vector<int64_t>{}}}, [](const MetaRef& in, const AttrReader& a) {
    const auto& dims = a.ints(0);
    TANDEM_CHECK(static_cast<int64_t>(dims.size()) == in.dim(), ValueError, "permute", "number of dims in ", IntArrayRef(dims),
                 " doesn't match the tensor's ", in.dim(), " dims");
    DimVector w = ops::wrap_dims("permute", dims, in.dim());
    ViewGeometry g;
    for (int64_t d : w) {
      g.sizes.push_back(in.sizes[d]);
      g.strides.push_back(in.strides[d]);
    }
    return g;
  });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    DimVector w = ops::wrap_dims("permute", c.attrs.ints(0), c.input_metas[0].dim());
    DimVector inv(w.size());
    for (size_t i = 0; i < w.size(); ++i) inv[static_cast<size_t>(w[i])] = static_cast<int64_t>(i);
    return {c.grad_outputs[0].permute(inv)};
  };
  return d;
}

TANDEM_REGISTER_OP(transpose) {
  OpDef d = view_op("transpose", {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, [](const MetaRef& in, const AttrReader& a) {
    int64_t d0 = wrap_dim(a.i(0), in.dim(), "transpose"), d1 = wrap_dim(a.i(1), in.dim(), "transpose");
    ViewGeometry g{in.sizes.vec(), in.strides.vec(), 0};
    if (in.dim() > 0) {
      std::swap(g.sizes[d0], g.sizes[d1]);
      std::swap(g.strides[d0], g.strides[d1]);
    }
    return g;
  });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    return {c.grad_outputs[0].transpose(c.attrs.i(0), c.attrs.i(1))};
  };
  return d;
}

TANDEM_REGISTER_OP(slice) {
  OpDef d = view_op("slice", {{"dim", int64_t{0}}, {"start", std::monostate{}}, {"end", std::monostate{}}, {"step", int64_t{1}}},
                 [](const MetaRef& in, const AttrReader& a) {
                   TANDEM_CHECK(in.dim() > 0, IndexError, "slice", "cannot be applied to a 0-dim tensor");
                   int64_t dim = wrap_dim(a.i(0), in.dim(), "slice");
                   int64_t step = a.i(3);
                   TANDEM_CHECK(step > 0, ValueError, "slice", "step must be positive, got ", step);
                   int64_t size = in.sizes[dim];
                   int64_t start = a.opt_i(1).value_or(0), end = a.opt_i(2).value_or(size);
                   if (start < 0) start += size;
                   if (end < 0) end += size;
                   start = std::clamp<int64_t>(start, 0, size);
                   end = std::clamp<int64_t>(end, start, size);
                   ViewGeometry g{in.sizes.vec(), in.strides.vec(), start * in.strides[dim]};
                   g.sizes[dim] = (end - start + step - 1) / step;
                   g.strides[dim] = in.strides[dim] * step;
                   return g;
                 });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    return scatter_back(c, [&](const Tensor& z) { return z.slice(c.attrs.i(0), c.attrs.opt_i(1), c.attrs.opt_i(2), c.attrs.i(3)); });
  };
  return d;
}

TANDEM_REGISTER_OP(select) {
  OpDef d = view_op("select", {{"dim", int64_t{0}}, {"index", int64_t{0}}}, [](const MetaRef& in, const AttrReader& a) {
    TANDEM_CHECK(in.dim() > 0, IndexError, "select", "cannot be applied to a 0-dim tensor");
    int64_t dim = wrap_dim(a.i(0), in.dim(), "select");
    int64_t size = in.sizes[dim], index = a.i(1);
    TANDEM_CHECK(index >= -size && index < size, IndexError, "select", "index ", index,
                 " out of range for tensor of size ", in.sizes, " at dimension ", dim);
    if (index < 0) index += size;
    ViewGeometry g{in.sizes.vec(), in.strides.vec(), index * in.strides[dim]};
    g.sizes.erase(g.sizes.begin() + dim);
    g.strides.erase(g.strides.begin() + dim);
    return g;
  });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    return scatter_back(c, [&](const Tensor& z) { return z.select(c.attrs.i(0), c.attrs.i(1)); });
  };
  return d;
}

TANDEM_REGISTER_OP(squeeze) {
  // dims: None = every size-1 dim; otherwise the listed dims that have size 1.
  OpDef d = view_op("squeeze", {{"dims", std::monostate{}}}, [](const MetaRef& in, const AttrReader& a) {
    std::vector<bool> drop(static_cast<size_t>(in.dim()), false);
    if (a.is_none(0)) {
      for (int64_t d = 0; d < in.dim(); ++d) drop[d] = in.sizes[d] == 1;
    } else {
      for (int64_t d : ops::wrap_dims("squeeze", a.ints(0), in.dim()))
        if (in.dim() > 0) drop[d] = in.sizes[d] == 1;
    }
    ViewGeometry g;
    for (int64_t d = 0; d < in.dim(); ++d) {
      if (drop[d]) continue;
      g.sizes.push_back(in.sizes[d]);
      g.strides.push_back(in.strides[d]);
    }
    return g;
  });
  d.backward = reshape_back;
  return d;
}

TANDEM_REGISTER_OP(unsqueeze) {
  OpDef d = view_op("unsqueeze", {{"dim", int64_t{0}}}, [](const MetaRef& in, const AttrReader& a) {
    int64_t dim = wrap_dim(a.i(0), in.dim() + 1, "unsqueeze");
    ViewGeometry g{in.sizes.vec(), in.strides.vec(), 0};
    int64_t st = dim >= in.dim() ? 1 : in.sizes[dim] * in.strides[dim];
    g.sizes.insert(g.sizes.begin() + dim, 1);
    g.strides.insert(g.strides.begin() + dim, st);
    return g;
  });
  d.backward = reshape_back;
  return d;
}

TANDEM_REGISTER_OP(expand) {
  OpDef d = view_op("expand", {{"size", std::vector<int64_t>{}}}, [](const MetaRef& in, const AttrReader& a) {
    const auto& target = a.ints(0);
    const int64_t nd = static_cast<int64_t>(target.size()), td = in.dim();
    TANDEM_CHECK(nd >= td, ShapeError, "expand", "the number of sizes provided (", nd,
                 ") must be greater or equal to the number of dimensions in the tensor (", td, ")");
    ViewGeometry g{DimVector(nd), DimVector(nd), 0};
    for (int64_t i = nd - 1; i >= 0; --i) {
      int64_t dim = td - (nd - i);
      int64_t size = dim >= 0 ? in.sizes[dim] : 1;
      // New leading dims get stride size*stride of the dim after them; expanding a 0-d
      // tensor gives all-zero strides (PyTorch's geometry).
      int64_t stride = dim >= 0 ? in.strides[dim] : (i + 1 < nd ? g.sizes[i + 1] * g.strides[i + 1] : 0);
      int64_t want = target[i];
      if (want == -1) {
        TANDEM_CHECK(dim >= 0, ShapeError, "expand", "-1 is not allowed in a leading, non-existing dimension ", i,
                     " of size ", IntArrayRef(target));
        want = size;
      }
      TANDEM_CHECK(want >= 0, ValueError, "expand", "invalid size ", want, " in ", IntArrayRef(target));
      if (size != want) {
        TANDEM_CHECK(size == 1, ShapeError, "expand", "the expanded size of the tensor (", want,
                     ") must match the existing size (", size, ") at non-singleton dimension ", i,
                     ". Target sizes: ", IntArrayRef(target), ". Tensor sizes: ", in.sizes);
        size = want;
        stride = 0;
      }
      g.sizes[i] = size;
      g.strides[i] = stride;
    }
    return g;
  });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    return {sum_to_size(c.grad_outputs[0], c.input_metas[0].sizes)};
  };
  return d;
}

TANDEM_REGISTER_OP(diagonal) {
  OpDef d = view_op("diagonal", {{"offset", int64_t{0}}, {"dim1", int64_t{0}}, {"dim2", int64_t{1}}},
                 [](const MetaRef& in, const AttrReader& a) {
                   // A tensor with < 2 dims fails in wrap_dim (IndexError) or the identical-dims
                   // check (ValueError), as in PyTorch.
                   int64_t off = a.i(0);
                   int64_t d1 = wrap_dim(a.i(1), in.dim(), "diagonal"), d2 = wrap_dim(a.i(2), in.dim(), "diagonal");
                   TANDEM_CHECK(d1 != d2, ValueError, "diagonal", "dimensions cannot be identical ", a.i(1), ", ", a.i(2));
                   int64_t n1 = in.sizes[d1], n2 = in.sizes[d2];
                   int64_t diag = off >= 0 ? std::max<int64_t>(std::min(n1, n2 - off), 0)
                                           : std::max<int64_t>(std::min(n1 + off, n2), 0);
                   ViewGeometry g;
                   if (diag > 0) g.storage_offset = off >= 0 ? off * in.strides[d2] : -off * in.strides[d1];
                   for (int64_t d = 0; d < in.dim(); ++d) {
                     if (d == d1 || d == d2) continue;
                     g.sizes.push_back(in.sizes[d]);
                     g.strides.push_back(in.strides[d]);
                   }
                   g.sizes.push_back(diag);
                   g.strides.push_back(in.strides[d1] + in.strides[d2]);
                   return g;
                 });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    return scatter_back(c, [&](const Tensor& z) { return z.diagonal(c.attrs.i(0), c.attrs.i(1), c.attrs.i(2)); });
  };
  return d;
}

// unfold: windows of `size` elements every `step` along dimension, as a new last dim of
// stride stride(dimension); the windowed dim gets (n - size) / step + 1 entries of stride
// stride(dimension) * step. Windows may overlap (step < size), so the gradient adds up
// every window's contribution (index_add) instead of scattering through the view.
TANDEM_REGISTER_OP(unfold) {
  OpDef d = view_op("unfold", {{"dimension", int64_t{0}}, {"size", int64_t{1}}, {"step", int64_t{1}}},
                    [](const MetaRef& in, const AttrReader& a) {
                      const int64_t dim = wrap_dim(a.i(0), in.dim(), "unfold");
                      const int64_t size = a.i(1), step = a.i(2);
                      TANDEM_CHECK(size >= 0, ValueError, "unfold", "got size ", size, ", expected a size >= 0");
                      TANDEM_CHECK(step > 0, ValueError, "unfold", "got step ", step, ", expected a step > 0");
                      const int64_t n = in.dim() == 0 ? 1 : in.sizes[dim];
                      TANDEM_CHECK(size <= n, ValueError, "unfold", "got size ", size, " for dimension ", dim,
                                   " of size ", n, ", expected a size <= ", n);
                      ViewGeometry g;
                      if (in.dim() == 0) {
                        g.sizes = {size};
                        g.strides = {1};
                        return g;
                      }
                      g.sizes = in.sizes.vec();
                      g.strides = in.strides.vec();
                      g.sizes[dim] = (n - size) / step + 1;
                      g.strides[dim] = in.strides[dim] * step;
                      g.sizes.push_back(size);
                      g.strides.push_back(in.strides[dim]);
                      return g;
                    });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    const MetaRef& in = c.input_metas[0];
    if (in.dim() == 0) return {g.sum().reshape({})};
    const int64_t dim = wrap_dim(c.attrs.i(0), in.dim(), "unfold");
    const int64_t size = c.attrs.i(1), step = c.attrs.i(2), windows = g.size(dim);
    if (windows == 0 || size == 0) return {zeros(in.sizes, g.dtype())};
    // Window w's element j came from position w * step + j along dim.
    Tensor index = (arange(Scalar(windows), kInt64) * Scalar(step)).unsqueeze(1) + arange(Scalar(size), kInt64).unsqueeze(0);
    Tensor gm = movedim(g, -1, dim + 1).flatten(dim, dim + 1);
    return {index_add(zeros(in.sizes, g.dtype()), dim, index.flatten(), gm)};
  };
  return d;
}

// Alias: same geometry, new tensor handle (detach() and no-op views use it).
TANDEM_REGISTER_OP(alias) {
  OpDef d = view_op("alias", {}, [](const MetaRef& in, const AttrReader&) {
    return ViewGeometry{in.sizes.vec(), in.strides.vec(), 0};
  });
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> { return {c.grad_outputs[0]}; };
  return d;
}

// ---------------------------------------------------------------- scatter into views
// slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter: a copy of self whose
// elements under a view (the view op's own stride rule, with the view op's attributes in
// the same order) are replaced by src, PyTorch's `out = self.clone(); view(out).copy_(src)`:
// the functional form of an in-place write through a view. src must have the view's
// shape exactly (no broadcasting, ShapeError) and is converted to self's dtype as copy_
// converts. The output is contiguous, except that as_strided_scatter keeps the layout of a
// self that is dense without overlap (transposed, permuted), as PyTorch's clone does,
// because its geometry addresses the output's storage.
namespace {

// The message of a view rule's error with the scatter op's name in place of the view's.
std::string renamed(const char* op, const Error& e) {
  std::string msg = e.what();
  const size_t k = msg.rfind('[', 0) == 0 ? msg.find("] ") : std::string::npos;
  return str_cat("[", op, "] ", k == std::string::npos ? msg : msg.substr(k + 2));
}

// Runs a view rule, naming the scatter op in its errors (the rule names its view op).
ViewGeometry scatter_view(const char* op, const OpDef& view, const MetaRef& m, ArrayRef<AttrValue> attrs) {
  try {
    return view.view(m, AttrReader(op, attrs));
  } catch (const IndexError& e) {
    throw IndexError(renamed(op, e));
  } catch (const ShapeError& e) {
    throw ShapeError(renamed(op, e));
  } catch (const ValueError& e) {
    throw ValueError(renamed(op, e));
  } catch (const TypeError& e) {
    throw TypeError(renamed(op, e));
  }
}

// Strides of as_strided_scatter's output: self's when self is dense without overlap
// (PyTorch's clone keeps that layout), else contiguous (empty).
DimVector scatter_out_strides(const MetaRef& self) {
  if (!is_non_overlapping_and_dense(self.sizes, self.strides) || compute_is_contiguous(self.sizes, self.strides))
    return {};
  return self.strides.vec();
}

// The input meta as the output sees it: the output's strides on a fresh storage.
MetaRef scatter_out_meta(const MetaRef& self, const DimVector& strides, DimVector& holder) {
  MetaRef m = self;
  holder = strides.empty() ? contiguous_strides(self.sizes) : strides;
  m.strides = holder;
  m.storage_offset = 0;
  m.storage_numel = self.numel();
  m.storage_known = true;
  m.is_wrapped_number = false;
  return m;
}

template <const OpDef& (*View)()>
void view_scatter_meta(MetaContext& c) {
  const MetaRef &self = c.inputs[0], &src = c.inputs[1];
  const bool keep_layout = View == &op_as_strided;
  DimVector out_strides = keep_layout ? scatter_out_strides(self) : DimVector{}, holder;
  MetaRef out = scatter_out_meta(self, out_strides, holder);
  ViewGeometry g = scatter_view(c.op, View(), out, c.attrs.all());
  TANDEM_CHECK(src.sizes.equals(IntArrayRef(g.sizes)), ShapeError, c.op, "expected src to have a size equal to the slice of self. src size = ",
               src.sizes, ", slice size = ", IntArrayRef(g.sizes));
  // Positions written twice would leave whichever write came last (PyTorch writes them in
  // an unspecified order); a write must be defined, as the dispatcher demands of in-place ops.
  TANDEM_CHECK(!has_internal_overlap(g.sizes, g.strides), ValueError, c.op,
               "unsupported operation: more than one element of the written-to view refers to a single memory location "
               "(sizes ", IntArrayRef(g.sizes), ", strides ", IntArrayRef(g.strides), ")");
  c.outputs.push_back(TensorMeta{self.dtype, self.sizes.vec(), std::move(out_strides)});
}

template <const OpDef& (*View)()>
void view_scatter_kernel(KernelContext& c) {
  const Tensor &self = c.inputs[0], &src = c.inputs[1], &out = c.outputs[0];
  kernels::copy_kernel(out, self);
  // The geometry addresses out's storage: an absolute offset counts from out's own start.
  Tensor region = apply_view(View(), out, c.attrs.all(), out.storage_offset());
  kernels::copy_kernel(region, src);
}

OpDef view_scatter_def(const char* name, std::vector<AttrSpec> attrs, MetaFn meta, KernelFn kernel) {
  OpDef d;
  d.name = name;
  d.inputs = {{"self", false}, {"src", false}};
  d.attrs = std::move(attrs);
  d.meta = meta;
  d.cpu_kernel = kernel;
  return d;
}

// The gradient of self is the output's gradient with the region zeroed; src's is the
// region (in src's dtype). `scatter(g, zeros)` and `region(g)` use the same view.
template <typename Scatter, typename Region>
std::vector<Tensor> view_scatter_backward(BackwardContext& c, Scatter scatter, Region region) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(2);
  if (c.needs_input_grad[0]) r[0] = scatter(g, zeros(c.input_metas[1].sizes, g.dtype()));
  if (c.needs_input_grad[1]) r[1] = region(g).to(c.input_metas[1].dtype);
  return r;
}

}  // namespace

TANDEM_REGISTER_OP(slice_scatter) {
  OpDef d = view_scatter_def("slice_scatter",
                             {{"dim", int64_t{0}}, {"start", std::monostate{}}, {"end", std::monostate{}}, {"step", int64_t{1}}},
                             view_scatter_meta<op_slice>, view_scatter_kernel<op_slice>);
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    const int64_t dim = c.attrs.i(0), step = c.attrs.i(3);
    const auto start = c.attrs.opt_i(1), end = c.attrs.opt_i(2);
    return view_scatter_backward(
        c, [&](const Tensor& g, const Tensor& z) { return slice_scatter(g, z, dim, start, end, step); },
        [&](const Tensor& g) { return g.slice(dim, start, end, step); });
  };
  return d;
}

TANDEM_REGISTER_OP(select_scatter) {
  OpDef d = view_scatter_def("select_scatter", {{"dim", int64_t{0}}, {"index", int64_t{0}}},
                             view_scatter_meta<op_select>, view_scatter_kernel<op_select>);
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    const int64_t dim = c.attrs.i(0), index = c.attrs.i(1);
    return view_scatter_backward(
        c, [&](const Tensor& g, const Tensor& z) { return select_scatter(g, z, dim, index); },
        [&](const Tensor& g) { return g.select(dim, index); });
  };
  return d;
}

TANDEM_REGISTER_OP(diagonal_scatter) {
  OpDef d = view_scatter_def("diagonal_scatter", {{"offset", int64_t{0}}, {"dim1", int64_t{0}}, {"dim2", int64_t{1}}},
                             view_scatter_meta<op_diagonal>, view_scatter_kernel<op_diagonal>);
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    const int64_t off = c.attrs.i(0), d1 = c.attrs.i(1), d2 = c.attrs.i(2);
    return view_scatter_backward(
        c, [&](const Tensor& g, const Tensor& z) { return diagonal_scatter(g, z, off, d1, d2); },
        [&](const Tensor& g) { return g.diagonal(off, d1, d2); });
  };
  return d;
}

TANDEM_REGISTER_OP(as_strided_scatter) {
  OpDef d = view_scatter_def("as_strided_scatter",
                             {{"size", std::vector<int64_t>{}}, {"stride", std::vector<int64_t>{}}, {"storage_offset", std::monostate{}}},
                             view_scatter_meta<op_as_strided>, view_scatter_kernel<op_as_strided>);
  d.cacheable_meta = false;  // the output's strides follow self's strides, which the meta cache does not key on
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    const auto& size = c.attrs.ints(0);
    const auto& stride = c.attrs.ints(1);
    const int64_t off = c.attrs.opt_i(2).value_or(0);
    // The geometry addresses the output's layout (self's when dense, else contiguous):
    // lay the gradient out that way first, with differentiable ops.
    const MetaRef& self = c.input_metas[0];
    const DimVector out_strides = scatter_out_strides(self);
    auto in_layout = [&](const Tensor& g) {
      if (out_strides.empty()) return g.contiguous();
      DimVector order(static_cast<size_t>(g.dim()));  // dims by decreasing stride: the storage order
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return out_strides[a] > out_strides[b]; });
      DimVector inv(order.size());
      for (size_t i = 0; i < order.size(); ++i) inv[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
      return g.permute(order).contiguous().permute(inv);
    };
    return view_scatter_backward(
        c, [&](const Tensor& g, const Tensor& z) { return as_strided_scatter(in_layout(g), z, size, stride, off); },
        [&](const Tensor& g) {
          const int64_t n = multiply_integers(IntArrayRef(size));
          if (n == 0) return zeros(size, g.dtype());
          // Offsets relative to the laid-out gradient's own start (it may be a view).
          Tensor laid = in_layout(g);
          Tensor flat = laid.as_strided({laid.numel()}, {1});
          return flat.narrow(0, off, laid.numel() - off).as_strided(size, stride);
        });
  };
  return d;
}

// sum_to_size: reduces broadcast dims (the gradient of expand and of broadcasting ops).
TANDEM_REGISTER_OP(sum_to_size) {
  OpDef d;
  d.name = "sum_to_size";
  d.inputs = {{"self", false}};
  d.attrs = {{"size", std::vector<int64_t>{}}};
  d.meta = [](MetaContext& c) {
    const auto& target = c.attrs.ints(0);
    DimVector b = ops::broadcast_shapes("sum_to_size", target, c.inputs[0].sizes);
    TANDEM_CHECK(IntArrayRef(b).equals(c.inputs[0].sizes), ShapeError, "sum_to_size", "size ", IntArrayRef(target),
                 " is not expandable to size ", c.inputs[0].sizes);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, target, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Tensor& in = c.inputs[0];
    // Accumulate in double for floats (exact enough for any size we meet), then round.
    if (in.dtype() == DType::Float32 && in.is_contiguous() && out.is_contiguous()) {
      // The common case (a bias gradient: [N, C] -> [C]): only leading dims are summed.
      // Each result is 0.0 + its inputs in increasing order, in double, rounded once: the
      // sums the general path below makes.
      const IntArrayRef is = in.sizes(), os = out.sizes();
      const size_t lead = is.size() - os.size();
      size_t first_kept = lead;  // leading dims of the target that are 1 are summed too
      while (first_kept < is.size() && os[first_kept - lead] == 1) ++first_kept;
      bool suffix = true;
      for (size_t k = first_kept; k < is.size(); ++k) suffix = suffix && os[k - lead] == is[k];
      if (suffix) {
        const int64_t inner = out.numel(), outer = inner == 0 ? 0 : in.numel() / inner;
        thread_local std::vector<double> acc;
        acc.assign(static_cast<size_t>(inner), 0.0);
        const float* src = in.data_ptr<float>();
        for (int64_t i = 0; i < outer; ++i)
          for (int64_t j = 0; j < inner; ++j) acc[static_cast<size_t>(j)] += static_cast<double>(src[i * inner + j]);
        float* dst = out.data_ptr<float>();
        for (int64_t j = 0; j < inner; ++j) dst[j] = static_cast<float>(acc[static_cast<size_t>(j)]);
        return;
      }
    }
    DType acc_t = is_floating_point(out.dtype()) ? DType::Float64 : DType::Int64;
    if (out.dtype() == DType::Bool) acc_t = DType::Int64;
    Tensor acc = empty_tensor(out.sizes(), acc_t);
    kernels::fill_kernel(acc, 0);
    Tensor acc_view = make_alias(acc, acc.sizes().vec(), acc.strides().vec(), 0).expand(in.sizes());
    Tensor ops_[2] = {acc_view, in};
    auto it = kernels::ElementwiseIter::make(ArrayRef<Tensor>(ops_, 2));
    TANDEM_DISPATCH_ALL_TYPES(in.dtype(), "sum_to_size", [&] {
      kernels::for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          scalar_t v;
          std::memcpy(&v, p[1] + i * st[1], sizeof(scalar_t));
          if (acc_t == DType::Float64) *reinterpret_cast<double*>(p[0] + i * st[0]) += static_cast<double>(static_cast<kernels::opmath_t<scalar_t>>(v));
          else *reinterpret_cast<int64_t*>(p[0] + i * st[0]) += static_cast<int64_t>(v);
        }
      });
    });
    kernels::copy_kernel(out, acc);
  };
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> { return {c.grad_outputs[0].expand(c.input_metas[0].sizes)}; };
  return d;
}

Tensor as_strided_backward(const Tensor& grad_view, const Geometry& base, const Geometry& view, int64_t storage_elems) {
  Tensor g = grad_view;
  Geometry v = view;
  // Broadcast (stride-0) dims map many view elements to one storage element: sum them
  // first so the scatter below never writes one location twice.
  DimVector target = v.sizes;
  bool any_zero = false;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.strides[d] == 0 && v.sizes[d] > 1) {
      target[d] = 1;
      any_zero = true;
    }
  }
  if (any_zero) {
    g = sum_to_size(g, target);
    v.sizes = target;
  }
  Tensor storage = zeros({storage_elems}, g.dtype());
  storage.as_strided(v.sizes, v.strides, v.offset).copy_(g);
  return storage.as_strided(base.sizes, base.strides, base.offset).clone();
}

// ---------------------------------------------------------------- functional API
// View geometry offsets are relative to the input's storage offset: add it here.
namespace {
Tensor run_view(const OpDef& op, const Tensor& self, ArrayRef<AttrValue> attrs) {
  TANDEM_CHECK(self.defined(), ValueError, op.name, "got an undefined tensor");
  return dispatch1(op, {self}, attrs);
}
}  // namespace

Tensor view(const Tensor& self, IntArrayRef sizes) { return run_view(op_view(), self, {AttrValue(sizes.vec())}); }

Tensor reshape(const Tensor& self, IntArrayRef sizes) {
  DimVector s = infer_size("reshape", sizes, self.numel());
  if (compute_view_strides(self.sizes(), self.strides(), s)) return view(self, s);
  return view(self.clone(), s);
}

Tensor permute(const Tensor& self, IntArrayRef dims) { return run_view(op_permute(), self, {AttrValue(dims.vec())}); }
Tensor transpose(const Tensor& self, int64_t d0, int64_t d1) {
  return run_view(op_transpose(), self, {AttrValue(d0), AttrValue(d1)});
}
Tensor t(const Tensor& self) {
  TANDEM_CHECK(self.dim() <= 2, ValueError, "t", "expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return self.dim() < 2 ? transpose(self, 0, 0) : transpose(self, 0, 1);
}
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return run_view(op_slice(), self, {AttrValue(dim), opt_attr(start), opt_attr(end), AttrValue(step)});
}
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  TANDEM_CHECK(self.dim() > 0, IndexError, "narrow", "cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, self.dim(), "narrow");  // errors name the op the user called
  int64_t size = self.size(dim);
  TANDEM_CHECK(start >= -size && start <= size, IndexError, "narrow", "start (", start, ") is out of bounds for dim of size ", size);
  if (start < 0) start += size;
  TANDEM_CHECK(length >= 0 && start + length <= size, IndexError, "narrow", "start (", start, ") + length (", length,
               ") exceeds dimension size (", size, ")");
  return slice(self, dim, start, start + length, 1);
}
Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  return run_view(op_select(), self, {AttrValue(dim), AttrValue(index)});
}
Tensor squeeze(const Tensor& self) { return run_view(op_squeeze(), self, {AttrValue(std::monostate{})}); }
Tensor squeeze(const Tensor& self, int64_t dim) { return run_view(op_squeeze(), self, {AttrValue(DimVector{dim})}); }
Tensor unsqueeze(const Tensor& self, int64_t dim) { return run_view(op_unsqueeze(), self, {AttrValue(dim)}); }
Tensor expand(const Tensor& self, IntArrayRef sizes) { return run_view(op_expand(), self, {AttrValue(sizes.vec())}); }
Tensor broadcast_to(const Tensor& self, IntArrayRef sizes) { return expand(self, sizes); }

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  int64_t s = wrap_dim(start_dim, self.dim(), "flatten"), e = wrap_dim(end_dim, self.dim(), "flatten");
  TANDEM_CHECK(s <= e, ValueError, "flatten", "start_dim (", start_dim, ") cannot come after end_dim (", end_dim, ")");
  if (s == e) return self;
  DimVector sizes;
  for (int64_t d = 0; d < s; ++d) sizes.push_back(self.size(d));
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= self.size(d);
  sizes.push_back(m);
  for (int64_t d = e + 1; d < self.dim(); ++d) sizes.push_back(self.size(d));
  return reshape(self, sizes);
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  int64_t d = wrap_dim(dim, self.dim(), "unflatten");
  TANDEM_CHECK(!sizes.empty(), ValueError, "unflatten", "sizes must be non-empty");
  DimVector inner = infer_size("unflatten", sizes, self.size(d));
  DimVector full;
  for (int64_t i = 0; i < d; ++i) full.push_back(self.size(i));
  for (int64_t v : inner) full.push_back(v);
  for (int64_t i = d + 1; i < self.dim(); ++i) full.push_back(self.size(i));
  return view(self, full);
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  TANDEM_CHECK(self.dim() > 0, ValueError, "split", "expects at least a 1-dimensional tensor");
  TANDEM_CHECK(split_size >= 0, ValueError, "split", "split_size must be non-negative, got ", split_size);
  dim = wrap_dim(dim, self.dim(), "split");
  int64_t size = self.size(dim);
  TANDEM_CHECK(split_size > 0 || size == 0, ValueError, "split", "split_size can only be 0 if dimension size is 0, but got dimension size of ", size);
  std::vector<Tensor> out;
  if (size == 0) {
    out.push_back(narrow(self, dim, 0, 0));
    return out;
  }
  for (int64_t s = 0; s < size; s += split_size) out.push_back(narrow(self, dim, s, std::min(split_size, size - s)));
  return out;
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef sizes, int64_t dim) {
  TANDEM_CHECK(self.dim() > 0, ValueError, "split_with_sizes", "expects at least a 1-dimensional tensor");
  dim = wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : sizes) {
    TANDEM_CHECK(s >= 0, ValueError, "split_with_sizes", "split sizes must be non-negative, got ", sizes);
    total += s;
  }
  TANDEM_CHECK(total == self.size(dim), ShapeError, "split_with_sizes", "split sizes ", sizes, " sum to ", total,
               ", expected the size of dim ", dim, " (", self.size(dim), ")");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(self, dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  TANDEM_CHECK(self.dim() > 0, ValueError, "chunk", "expects at least a 1-dimensional tensor");
  TANDEM_CHECK(chunks > 0, ValueError, "chunk", "number of chunks must be greater than 0, got ", chunks);
  dim = wrap_dim(dim, self.dim(), "chunk");
  int64_t size = self.size(dim);
  int64_t split_size = (size + chunks - 1) / chunks;
  if (split_size == 0 && size == 0) {
    std::vector<int64_t> sizes(static_cast<size_t>(chunks), 0);
    return split_with_sizes(self, sizes, dim);
  }
  return split(self, split_size, dim);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  TANDEM_CHECK(self.dim() > 0, ValueError, "unbind", "dimension specified as ", dim, " but tensor has no dimensions");
  int64_t d = wrap_dim(dim, self.dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.size(d); ++i) out.push_back(select(self, d, i));
  return out;
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return run_view(op_diagonal(), self, {AttrValue(offset), AttrValue(dim1), AttrValue(dim2)});
}

Tensor unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return run_view(op_unfold(), self, {AttrValue(dimension), AttrValue(size), AttrValue(step)});
}

Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset) {
  // The view rule checks bounds against the storage (no view reads outside it). Without
  // an offset the attribute stays None ("from self's offset"), not self's offset at this
  // call: a captured program must not bake in the offset its first input had.
  return run_view(op_as_strided(), self,
                  {AttrValue(sizes.vec()), AttrValue(strides.vec()),
                   storage_offset ? AttrValue(*storage_offset) : AttrValue(std::monostate{})});
}

Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  auto opt = [](std::optional<int64_t> v) { return v ? AttrValue(*v) : AttrValue(std::monostate{}); };
  return dispatch1(op_slice_scatter(), {self, src}, {AttrValue(dim), opt(start), opt(end), AttrValue(step)});
}

Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  return dispatch1(op_select_scatter(), {self, src}, {AttrValue(dim), AttrValue(index)});
}

Tensor diagonal_scatter(const Tensor& self, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) {
  return dispatch1(op_diagonal_scatter(), {self, src}, {AttrValue(offset), AttrValue(dim1), AttrValue(dim2)});
}

Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) {
  return dispatch1(op_as_strided_scatter(), {self, src},
                   {AttrValue(sizes.vec()), AttrValue(strides.vec()),
                    storage_offset ? AttrValue(*storage_offset) : AttrValue(std::monostate{})});
}

Tensor sum_to_size(const Tensor& self, IntArrayRef sizes) {
  if (self.sizes().equals(sizes)) return self;
  return dispatch1(op_sum_to_size(), {self}, {AttrValue(sizes.vec())});
}

Tensor movedim(const Tensor& self, int64_t source, int64_t destination) {
  int64_t n = self.dim();
  int64_t s = wrap_dim(source, n, "movedim"), d = wrap_dim(destination, n, "movedim");
  if (n == 0) return permute(self, {});  // 0-d: dims 0/-1 name the tensor itself
  DimVector order;
  for (int64_t i = 0; i < n; ++i)
    if (i != s) order.push_back(i);
  order.insert(order.begin() + d, s);
  return permute(self, order);
}

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::view(IntArrayRef sizes) const { return tandem::view(*this, sizes); }
Tensor Tensor::reshape(IntArrayRef sizes) const { return tandem::reshape(*this, sizes); }
Tensor Tensor::permute(IntArrayRef dims) const { return tandem::permute(*this, dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return tandem::transpose(*this, d0, d1); }
Tensor Tensor::t() const { return tandem::t(*this); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return tandem::slice(*this, dim, start, end, step);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const { return tandem::narrow(*this, dim, start, length); }
Tensor Tensor::select(int64_t dim, int64_t index) const { return tandem::select(*this, dim, index); }
Tensor Tensor::squeeze() const { return tandem::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return tandem::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return tandem::unsqueeze(*this, dim); }
Tensor Tensor::expand(IntArrayRef sizes) const { return tandem::expand(*this, sizes); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return tandem::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes) const { return tandem::unflatten(*this, dim, sizes); }
std::vector<Tensor> Tensor::split(int64_t s, int64_t dim) const { return tandem::split(*this, s, dim); }
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef s, int64_t dim) const { return tandem::split_with_sizes(*this, s, dim); }
std::vector<Tensor> Tensor::chunk(int64_t c, int64_t dim) const { return tandem::chunk(*this, c, dim); }
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return tandem::unbind(*this, dim); }
Tensor Tensor::diagonal(int64_t o, int64_t d1, int64_t d2) const { return tandem::diagonal(*this, o, d1, d2); }
Tensor Tensor::unfold(int64_t dimension, int64_t size, int64_t step) const {
  return tandem::unfold(*this, dimension, size, step);
}
Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> off) const {
  return tandem::as_strided(*this, sizes, strides, off);
}
Tensor Tensor::slice_scatter(const Tensor& src, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                             int64_t step) const {
  return tandem::slice_scatter(*this, src, dim, start, end, step);
}
Tensor Tensor::select_scatter(const Tensor& src, int64_t dim, int64_t index) const {
  return tandem::select_scatter(*this, src, dim, index);
}
Tensor Tensor::diagonal_scatter(const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) const {
  return tandem::diagonal_scatter(*this, src, offset, dim1, dim2);
}
Tensor Tensor::as_strided_scatter(const Tensor& src, IntArrayRef sizes, IntArrayRef strides,
                                  std::optional<int64_t> storage_offset) const {
  return tandem::as_strided_scatter(*this, src, sizes, strides, storage_offset);
}

}  // namespace tandem
