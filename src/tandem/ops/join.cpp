// Joining and layout ops of the index family: cat (primitive), stack/hstack/vstack,
// repeat/tile/repeat_interleave/roll (composites over views, cat and index_select),
// flip and tril/triu (primitives). The primitives' backward rules are written with ops
// (cat: narrow, flip: flip, tril/triu: themselves); the composites differentiate through
// their parts.
#include <algorithm>

#include "tandem/kernels/cpu/index.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace {
bool is_legacy_empty(IntArrayRef sizes) { return sizes.size() == 1 && sizes[0] == 0; }

// cat: each input gets its slice of the gradient (a legacy empty [0] input gets an empty one).
std::vector<Tensor> cat_backward(BackwardContext& c) {
  std::vector<Tensor> r(c.input_metas.size());
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return r;
  int64_t dim = -1;
  for (const MetaRef& m : c.input_metas)
    if (!is_legacy_empty(m.sizes)) {
      dim = wrap_dim(c.attrs.i(0), m.dim(), c.op);
      break;
    }
  int64_t offset = 0;
  for (size_t i = 0; i < c.input_metas.size(); ++i) {
    const MetaRef& m = c.input_metas[i];
    if (dim < 0 || is_legacy_empty(m.sizes)) {
      if (c.needs_input_grad[i]) r[i] = zeros({0}, g.dtype());
      continue;
    }
    const int64_t n = m.sizes[dim];
    if (c.needs_input_grad[i]) r[i] = narrow(g, dim, offset, n);
    offset += n;
  }
  return r;
}
}  // namespace

// ---------------------------------------------------------------- cat
TANDEM_REGISTER_OP(cat) {
  OpDef d;
  d.name = "cat";
  d.autocast = Autocast::Promote;
  d.inputs = {{"tensors"}};
  d.variadic = true;
  d.attrs = {{"dim", int64_t{0}}};
  d.promotion = Promotion::Default;
  d.backward = cat_backward;  // needs only the input shapes
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(!c.inputs.empty(), ValueError, c.op, "expected a non-empty list of tensors");
    const MetaRef* ref = nullptr;
    size_t ref_pos = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const MetaRef& m = c.inputs[i];
      TANDEM_CHECK(m.dim() > 0, ShapeError, c.op, "zero-dimensional tensor (at position ", i,
                   ") cannot be concatenated, expected tensors with at least 1 dim");
      if (!ref && !is_legacy_empty(m.sizes)) {
        ref = &m;
        ref_pos = i;
      }
    }
    if (!ref) {  // only legacy empty tensors: the result is one too
      c.outputs.push_back(TensorMeta{c.common_dtype, {0}, {}});
      return;
    }
    const int64_t dim = wrap_dim(c.attrs.i(0), ref->dim(), c.op);
    DimVector out = ref->sizes.vec();
    out[dim] = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const MetaRef& m = c.inputs[i];
      if (is_legacy_empty(m.sizes)) continue;
      TANDEM_CHECK(m.dim() == ref->dim(), ShapeError, c.op, "tensors must have the same number of dims: got ",
                   ref->dim(), " (tensor ", ref_pos, ") and ", m.dim(), " (tensor ", i, ")");
      for (int64_t d2 = 0; d2 < m.dim(); ++d2) {
        if (d2 == dim) continue;
        TANDEM_CHECK(m.sizes[d2] == ref->sizes[d2], ShapeError, c.op, "sizes of tensors must match except in dimension ",
                     dim, ": expected size ", ref->sizes[d2], " but got size ", m.sizes[d2], " for tensor number ", i,
                     " in the list (shapes ", ref->sizes, " and ", m.sizes, ")");
      }
      out[dim] += m.sizes[dim];
    }
    c.outputs.push_back(TensorMeta{c.common_dtype, std::move(out), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    if (out.numel() == 0) return;
    int64_t dim = -1;
    for (const Tensor& t : c.inputs)
      if (!is_legacy_empty(t.sizes())) {
        dim = wrap_dim(c.attrs.i(0), t.dim(), c.op);
        break;
      }
    int64_t offset = 0;
    for (const Tensor& t : c.inputs) {
      if (is_legacy_empty(t.sizes())) continue;
      const int64_t n = t.size(dim);
      if (t.numel() > 0) {
        Tensor dst = make_alias(out, t.sizes().vec(), out.strides().vec(), out.storage_offset() + offset * out.stride(dim));
        kernels::copy_kernel(dst, t);
      }
      offset += n;
    }
  };
  return d;
}

// ---------------------------------------------------------------- stack, hstack, vstack
TANDEM_REGISTER_OP(stack) {
  OpDef d;
  d.name = "stack";
  d.autocast = Autocast::Promote;
  d.inputs = {{"tensors"}};
  d.variadic = true;
  d.attrs = {{"dim", int64_t{0}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    TANDEM_CHECK(!in.empty(), ValueError, "stack", "expected a non-empty list of tensors");
    for (size_t i = 1; i < in.size(); ++i)
      TANDEM_CHECK(in[i].sizes().equals(in[0].sizes()), ShapeError, "stack", "expects each tensor to be equal size, but got ",
                   in[0].sizes(), " at entry 0 and ", in[i].sizes(), " at entry ", i);
    const int64_t dim = wrap_dim(a.i(0), in[0].dim() + 1, "stack");
    std::vector<Tensor> parts;
    for (const Tensor& t : in) parts.push_back(t.unsqueeze(dim));
    return {cat(parts, dim)};
  };
  return d;
}

TANDEM_REGISTER_OP(hstack) {
  OpDef d;
  d.name = "hstack";
  d.autocast = Autocast::Promote;
  d.inputs = {{"tensors"}};
  d.variadic = true;
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) -> std::vector<Tensor> {
    TANDEM_CHECK(!in.empty(), ValueError, "hstack", "expected a non-empty list of tensors");
    std::vector<Tensor> parts;
    for (const Tensor& t : in) parts.push_back(t.dim() == 0 ? t.reshape({1}) : t);
    return {cat(parts, parts[0].dim() == 1 ? 0 : 1)};
  };
  return d;
}

TANDEM_REGISTER_OP(vstack) {
  OpDef d;
  d.name = "vstack";
  d.autocast = Autocast::Promote;
  d.inputs = {{"tensors"}};
  d.variadic = true;
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) -> std::vector<Tensor> {
    TANDEM_CHECK(!in.empty(), ValueError, "vstack", "expected a non-empty list of tensors");
    std::vector<Tensor> parts;
    for (const Tensor& t : in) {
      if (t.dim() == 0) parts.push_back(t.reshape({1, 1}));
      else if (t.dim() == 1) parts.push_back(t.unsqueeze(0));
      else parts.push_back(t);
    }
    return {cat(parts, 0)};
  };
  return d;
}

// ---------------------------------------------------------------- repeat, tile
TANDEM_REGISTER_OP(repeat) {
  OpDef d;
  d.name = "repeat";
  d.inputs = {{"self"}};
  d.attrs = {{"repeats", std::vector<int64_t>{}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    const Tensor& self = in[0];
    const auto& r = a.ints(0);
    const int64_t n = static_cast<int64_t>(r.size());
    TANDEM_CHECK(n >= self.dim(), ShapeError, "repeat", "number of repeat dims (", n,
                 ") can not be smaller than the number of dims of the tensor (", self.dim(), ")");
    for (int64_t v : r) TANDEM_CHECK(v >= 0, ValueError, "repeat", "repeats must be non-negative, got ", IntArrayRef(r));
    Tensor x = self;
    while (x.dim() < n) x = x.unsqueeze(0);
    DimVector padded = x.sizes().vec();
    // [s0, s1] -> [1, s0, 1, s1] -> expand [r0, s0, r1, s1] -> reshape [r0*s0, r1*s1]
    for (int64_t i = n - 1; i >= 0; --i) x = x.unsqueeze(i);
    DimVector exp, fin;
    for (int64_t i = 0; i < n; ++i) {
      exp.push_back(r[i]);
      exp.push_back(padded[i]);
      fin.push_back(r[i] * padded[i]);
    }
    Tensor out = x.expand(exp).reshape(fin);
    if (out.is_alias_of(self)) out = out.clone();  // repeat always returns new memory
    return {out};
  };
  return d;
}

TANDEM_REGISTER_OP(tile) {
  OpDef d;
  d.name = "tile";
  d.inputs = {{"self"}};
  d.attrs = {{"dims", std::vector<int64_t>{}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    DimVector r = a.ints(0);
    while (static_cast<int64_t>(r.size()) < in[0].dim()) r.insert(r.begin(), 1);
    return {repeat(in[0], r)};
  };
  return d;
}

// ---------------------------------------------------------------- repeat_interleave
// _repeat_interleave_indices(repeats): [0]*repeats[0] ++ [1]*repeats[1] ++ ... (the
// repeats-only overload of torch.repeat_interleave); output size depends on the data.
TANDEM_REGISTER_OP(_repeat_interleave_indices) {
  OpDef d;
  d.name = "_repeat_interleave_indices";
  d.inputs = {{"repeats", false, false, false}};
  d.attrs = {{"output_size", std::monostate{}}};
  d.dynamic_shape = true;
  d.output_differentiable = {false};
  d.meta = [](MetaContext& c) {
    const MetaRef& r = c.inputs[0];
    TANDEM_CHECK(r.dtype == kInt64 || r.dtype == kInt32, TypeError, c.op, "got repeats of dtype ", dtype_name(r.dtype),
                 ", expected int32 or int64");
    TANDEM_CHECK(r.dim() <= 1, ShapeError, c.op, "repeats must be a 0-dim or 1-dim tensor, got shape ", r.sizes);
    auto os = c.attrs.opt_i(0);
    TANDEM_CHECK(!os || *os >= 0, ValueError, c.op, "output_size must be non-negative, got ", *os);
    c.outputs.push_back(TensorMeta{r.dtype, {os.value_or(-1)}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    Tensor r = c.inputs[0].is_contiguous() ? c.inputs[0] : kernels::contiguous_copy(c.inputs[0]);
    const int64_t n = r.numel();
    const bool is64 = r.dtype() == kInt64;
    std::vector<int64_t> reps(static_cast<size_t>(n));
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
      reps[i] = kernels::load_index(static_cast<const char*>(r.data_ptr()), i, 1, is64);
      TANDEM_CHECK(reps[i] >= 0, ValueError, "repeat_interleave", "repeats can not be negative, got ", reps[i], " at position ", i);
      total += reps[i];
    }
    auto os = c.attrs.opt_i(0);
    TANDEM_CHECK(!os || *os == total, ValueError, "repeat_interleave", "output_size ", os.value_or(0),
                 " does not match the sum of repeats (", total, ")");
    Tensor out = empty_tensor({total}, r.dtype());
    TANDEM_DISPATCH_INTEGRAL_TYPES(r.dtype(), c.op, [&] {
      scalar_t* o = out.data_ptr<scalar_t>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < reps[i]; ++k) *o++ = static_cast<scalar_t>(i);
    });
    c.outputs.push_back(out);
  };
  return d;
}

// repeat_interleave(self, repeats (tensor) | repeats (int attr), dim, output_size).
TANDEM_REGISTER_OP(repeat_interleave) {
  OpDef d;
  d.name = "repeat_interleave";
  d.inputs = {{"self"}, {"repeats", false, true, false}};
  d.attrs = {{"repeats_int", std::monostate{}}, {"dim", std::monostate{}}, {"output_size", std::monostate{}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    const Tensor& self = in[0];
    const Tensor& rt = in[1];
    auto dim_opt = a.opt_i(1);
    auto output_size = a.opt_i(2);
    Tensor input = self;
    int64_t dim = 0;
    if (!dim_opt) input = self.flatten();
    else dim = wrap_dim(*dim_opt, self.dim(), "repeat_interleave");
    if (input.dim() == 0) input = input.reshape({1});
    if (!rt.defined()) {
      TANDEM_CHECK(!a.is_none(0), ValueError, "repeat_interleave", "expected repeats as an int or a tensor, got neither");
      const int64_t r = a.i(0);
      TANDEM_CHECK(r >= 0, ValueError, "repeat_interleave", "repeats can not be negative, got ", r);
      TANDEM_CHECK(!output_size || *output_size == r * input.size(dim), ValueError, "repeat_interleave", "output_size ",
                   output_size.value_or(0), " does not match the required size ", r * input.size(dim));
      DimVector exp = input.sizes().vec();
      exp.insert(exp.begin() + dim + 1, r);
      Tensor out = input.unsqueeze(dim + 1).expand(exp).flatten(dim, dim + 1);
      if (out.is_alias_of(self)) out = out.clone();
      return {out};
    }
    TANDEM_CHECK(rt.dtype() == kInt64 || rt.dtype() == kInt32, TypeError, "repeat_interleave", "got repeats of dtype ",
                 dtype_name(rt.dtype()), ", expected int32 or int64");
    TANDEM_CHECK(rt.dim() <= 1, ShapeError, "repeat_interleave", "repeats must be a 0-dim or 1-dim tensor, got shape ",
                 rt.sizes());
    Tensor reps = rt;
    if (rt.numel() == 1) {
      reps = rt.reshape({1}).expand({input.size(dim)});
    } else {
      TANDEM_CHECK(rt.numel() == input.size(dim), ShapeError, "repeat_interleave",
                   "repeats must have the same size as input along dim, got ", rt.numel(), " and ", input.size(dim));
    }
    Tensor idx = dispatch1(op__repeat_interleave_indices(), {reps}, {opt_attr(output_size)});
    return {index_select(input, dim, idx)};
  };
  return d;
}

// ---------------------------------------------------------------- flip, roll
TANDEM_REGISTER_OP(flip) {
  OpDef d;
  d.name = "flip";
  d.inputs = {{"self"}};
  d.attrs = {{"dims", std::vector<int64_t>{}}};
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {
    if (!c.grad_outputs[0].defined()) return {Tensor()};
    return {flip(c.grad_outputs[0], c.attrs.ints(0))};
  };
  d.meta = [](MetaContext& c) {
    ops::wrap_dims(c.op, c.attrs.ints(0), c.inputs[0].dim());
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, c.inputs[0].sizes.vec(), {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& self = c.inputs[0];
    if (self.numel() == 0) return;
    DimVector dims = ops::wrap_dims(c.op, c.attrs.ints(0), self.dim());
    DimVector st = self.strides().vec();
    int64_t off = self.storage_offset();
    for (int64_t dd : dims) {
      if (self.dim() == 0) break;
      off += (self.size(dd) - 1) * st[dd];
      st[dd] = -st[dd];
    }
    // An internal alias with negative strides walks self backwards along the flipped dims.
    kernels::copy_kernel(c.outputs[0], make_alias(self, self.sizes().vec(), st, off));
  };
  return d;
}

TANDEM_REGISTER_OP(roll) {
  OpDef d;
  d.name = "roll";
  d.inputs = {{"self"}};
  d.attrs = {{"shifts", std::vector<int64_t>{}}, {"dims", std::vector<int64_t>{}}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) -> std::vector<Tensor> {
    const Tensor& self = in[0];
    const auto& shifts = a.ints(0);
    const auto& dims = a.ints(1);
    if (dims.empty()) {
      TANDEM_CHECK(shifts.size() == 1, ShapeError, "roll", "shifts and dimensions must align: got ", shifts.size(),
                   " shifts and no dims, expected exactly one shift");
      return {roll(self.flatten(), shifts, {0}).view(self.sizes())};
    }
    TANDEM_CHECK(shifts.size() == dims.size(), ShapeError, "roll", "shifts and dimensions must align: got ", shifts.size(),
                 " shifts and ", dims.size(), " dims");
    Tensor r = self;
    for (size_t i = 0; i < dims.size(); ++i) {
      const int64_t dd = wrap_dim(dims[i], self.dim(), "roll");
      if (self.dim() == 0 || self.numel() == 0) continue;
      const int64_t n = r.size(dd);
      const int64_t s = ((shifts[i] % n) + n) % n;
      if (s == 0) continue;
      r = cat({r.narrow(dd, n - s, s), r.narrow(dd, 0, n - s)}, dd);
    }
    if (r.is_alias_of(self)) r = r.clone();
    return {r};
  };
  return d;
}

// ---------------------------------------------------------------- tril, triu
namespace {
void tri_meta(MetaContext& c) {
  TANDEM_CHECK(c.inputs[0].dim() >= 2, ShapeError, c.op, "got a tensor with ", c.inputs[0].dim(),
               " dims (shape ", c.inputs[0].sizes, "), expected at least 2");
  c.outputs.push_back(TensorMeta{c.inputs[0].dtype, c.inputs[0].sizes.vec(), {}});
}

template <bool kLower>
void tri_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  const Tensor& self = c.inputs[0];
  if (!out.is_same(self)) kernels::copy_kernel(out, self);
  if (out.numel() == 0) return;
  const int64_t diag = c.attrs.i(0);
  const int64_t nd = out.dim();
  const int64_t rows = out.size(-2), cols = out.size(-1);
  const int64_t rs = out.stride(-2), cs = out.stride(-1);
  const int64_t batches = out.numel() / (rows * cols);
  TANDEM_DISPATCH_BY_SIZE(out.element_size(), c.op, [&] {
    elem_t* base = static_cast<elem_t*>(out.data_ptr());
    parallel_for(0, batches, std::max<int64_t>(1, kGrainSize / (rows * cols)), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        int64_t off = 0, rem = b;
        for (int64_t dd = nd - 3; dd >= 0; --dd) {
          off += (rem % out.size(dd)) * out.stride(dd);
          rem /= out.size(dd);
        }
        for (int64_t i = 0; i < rows; ++i) {
          // Zero columns j with j - i > diag (tril) or j - i < diag (triu).
          int64_t lo = kLower ? std::max<int64_t>(0, i + diag + 1) : 0;
          int64_t hi = kLower ? cols : std::min<int64_t>(cols, std::max<int64_t>(0, i + diag));
          for (int64_t j = lo; j < hi; ++j) base[off + i * rs + j * cs] = elem_t(0);
        }
      }
    });
  });
}
}  // namespace

TANDEM_REGISTER_OP(tril) {
  OpDef d;
  d.name = "tril";
  d.inputs = {{"self"}};
  d.attrs = {{"diagonal", int64_t{0}}};
  d.meta = tri_meta;
  d.cpu_kernel = tri_kernel<true>;
  d.inplace_variant = true;
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {  // the kept triangle
    if (!c.grad_outputs[0].defined()) return {Tensor()};
    return {tril(c.grad_outputs[0], c.attrs.i(0))};
  };
  return d;
}

TANDEM_REGISTER_OP(triu) {
  OpDef d;
  d.name = "triu";
  d.inputs = {{"self"}};
  d.attrs = {{"diagonal", int64_t{0}}};
  d.meta = tri_meta;
  d.cpu_kernel = tri_kernel<false>;
  d.inplace_variant = true;
  d.backward = [](BackwardContext& c) -> std::vector<Tensor> {  // the kept triangle
    if (!c.grad_outputs[0].defined()) return {Tensor()};
    return {triu(c.grad_outputs[0], c.attrs.i(0))};
  };
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return dispatch1(op_cat(), tensors, {AttrValue(dim)}); }
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) { return dispatch1(op_stack(), tensors, {AttrValue(dim)}); }
Tensor hstack(const std::vector<Tensor>& tensors) { return dispatch1(op_hstack(), tensors); }
Tensor vstack(const std::vector<Tensor>& tensors) { return dispatch1(op_vstack(), tensors); }
Tensor repeat(const Tensor& self, IntArrayRef repeats) { return dispatch1(op_repeat(), {self}, {AttrValue(repeats.vec())}); }
Tensor tile(const Tensor& self, IntArrayRef dims) { return dispatch1(op_tile(), {self}, {AttrValue(dims.vec())}); }
Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim, std::optional<int64_t> output_size) {
  return dispatch1(op_repeat_interleave(), {self, Tensor()}, {AttrValue(repeats), opt_attr(dim), opt_attr(output_size)});
}
Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  TANDEM_CHECK(repeats.defined(), ValueError, "repeat_interleave", "got an undefined repeats tensor");
  return dispatch1(op_repeat_interleave(), {self, repeats}, {AttrValue(std::monostate{}), opt_attr(dim), opt_attr(output_size)});
}
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  return dispatch1(op__repeat_interleave_indices(), {repeats}, {opt_attr(output_size)});
}
Tensor flip(const Tensor& self, IntArrayRef dims) { return dispatch1(op_flip(), {self}, {AttrValue(dims.vec())}); }
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  return dispatch1(op_roll(), {self}, {AttrValue(shifts.vec()), AttrValue(dims.vec())});
}
Tensor tril(const Tensor& self, int64_t diagonal) { return dispatch1(op_tril(), {self}, {AttrValue(diagonal)}); }
Tensor triu(const Tensor& self, int64_t diagonal) { return dispatch1(op_triu(), {self}, {AttrValue(diagonal)}); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::repeat(IntArrayRef repeats) const { return tandem::repeat(*this, repeats); }
Tensor Tensor::tile(IntArrayRef dims) const { return tandem::tile(*this, dims); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim, std::optional<int64_t> output_size) const {
  return tandem::repeat_interleave(*this, repeats, dim, output_size);
}
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim, std::optional<int64_t> output_size) const {
  return tandem::repeat_interleave(*this, repeats, dim, output_size);
}
Tensor Tensor::flip(IntArrayRef dims) const { return tandem::flip(*this, dims); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return tandem::roll(*this, shifts, dims); }
Tensor Tensor::tril(int64_t diagonal) const { return tandem::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tandem::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) {
  dispatch(*op_tril().inplace, {*this}, {AttrValue(diagonal)});
  return *this;
}
Tensor& Tensor::triu_(int64_t diagonal) {
  dispatch(*op_triu().inplace, {*this}, {AttrValue(diagonal)});
  return *this;
}

}  // namespace tandem
