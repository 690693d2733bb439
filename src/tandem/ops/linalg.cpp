// Linear algebra ops. mm/bmm/addmm/baddbmm/dot have kernels (kernels/cpu/gemm.h); matmul,
// mv, linear and outer are composites built on them (so their gradients come from the
// primitives' rules). einsum lives in einsum.cpp.
#include "tandem/ops/linalg.h"

#include "tandem/kernels/cpu/gemm.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/onednn.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace ops {

/// TypeError unless all defined metas share one dtype that the gemm kernels support.
void check_matmul_dtypes(const char* op, ArrayRef<MetaRef> in) {
  DType first = DType::Float32;
  bool have = false;
  for (const MetaRef& m : in) {
    if (!m.defined) continue;
    if (!have) {
      first = m.dtype;
      have = true;
      continue;
    }
    TANDEM_CHECK(m.dtype == first, TypeError, op, "expected all operands to have the same dtype, got ",
                 dtype_name(first), " and ", dtype_name(m.dtype));
  }
  TANDEM_CHECK(!have || kernels::gemm_supports(first), TypeError, op, "got dtype ", dtype_name(first),
               ", expected one of uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64");
}

/// ShapeError unless `self` expands to `target` (PyTorch's expand rule: trailing-aligned,
/// each size equal or 1, no more dims than the target).
void check_expandable(const char* op, IntArrayRef self, IntArrayRef target) {
  const int64_t nd = static_cast<int64_t>(target.size()), sd = static_cast<int64_t>(self.size());
  TANDEM_CHECK(sd <= nd, ShapeError, op, "self of size ", self, " cannot be broadcast to the result size ", target);
  for (int64_t i = 0; i < sd; ++i) {
    const int64_t s = self[sd - 1 - i], t = target[nd - 1 - i];
    TANDEM_CHECK(s == t || s == 1, ShapeError, op, "the expanded size of the tensor (", t,
                 ") must match the existing size (", s, ") at non-singleton dimension ", nd - 1 - i,
                 ". Target sizes: ", target, ". Tensor sizes: ", self);
  }
}

}  // namespace ops

namespace {

bool beta_is_zero(const Scalar& beta, DType dt) {
  return is_floating_point(dt) ? beta.to_double() == 0.0 : beta.to<int64_t>() == 0;
}

void check_mm_shapes(const char* op, const MetaRef& a, const MetaRef& b) {
  TANDEM_CHECK(a.dim() == 2, ShapeError, op, "mat1 must be a matrix, got ", a.dim(), "-D tensor");
  TANDEM_CHECK(b.dim() == 2, ShapeError, op, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
  TANDEM_CHECK(a.sizes[1] == b.sizes[0], ShapeError, op, "mat1 and mat2 shapes cannot be multiplied (", a.sizes[0], "x",
               a.sizes[1], " and ", b.sizes[0], "x", b.sizes[1], ")");
}

void check_bmm_shapes(const char* op, const MetaRef& a, const MetaRef& b) {
  TANDEM_CHECK(a.dim() == 3, ShapeError, op, "batch1 must be a 3D tensor, got ", a.dim(), "-D tensor");
  TANDEM_CHECK(b.dim() == 3, ShapeError, op, "batch2 must be a 3D tensor, got ", b.dim(), "-D tensor");
  TANDEM_CHECK(b.sizes[0] == a.sizes[0] && b.sizes[1] == a.sizes[2], ShapeError, op,
               "expected size for first two dimensions of batch2 tensor to be: [", a.sizes[0], ", ", a.sizes[2],
               "] but got: [", b.sizes[0], ", ", b.sizes[1], "]");
}

OpDef matmul_like(const char* name, std::vector<InputSpec> inputs) {
  OpDef d;
  d.name = name;
  d.inputs = std::move(inputs);
  d.promotion = Promotion::None;  // PyTorch's matmul family requires equal dtypes
  return d;
}

}  // namespace


// ---------------------------------------------------------------- backward rules
// All rules are linear in the grad and written with ops (mm/bmm on transposed views, no
// copies), so they are differentiable again (double backward).
namespace {

Tensor scaled(const Tensor& t, const Scalar& s) { return s.to_double() == 1.0 ? t : t * s; }

/// True for a 2-D matrix stored column-major (a transposed contiguous matrix, such as
/// linear's weight.t()).
bool column_major(const Tensor& t) {
  return t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
}

/// Gradient of a @ b with respect to b, laid out like b (as PyTorch does): for a
/// column-major b, (g^T a)^T, so that the transpose's own backward (linear's weight.t())
/// hands a contiguous gradient to the leaf and nothing is copied.
Tensor mat2_grad(const Tensor& a, const Tensor& b, const Tensor& g) {
  if (column_major(b)) return mm(g.t(), a).t();
  return mm(a.t(), g);
}

std::vector<Tensor> mm_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(2);
  if (!g.defined()) return r;
  if (c.needs_input_grad[0]) r[0] = mm(g, c.inputs[1].t());
  if (c.needs_input_grad[1]) r[1] = mat2_grad(c.inputs[0], c.inputs[1], g);
  return r;
}

std::vector<Tensor> bmm_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(2);
  if (!g.defined()) return r;
  if (c.needs_input_grad[0]) r[0] = bmm(g, c.inputs[1].mT());
  if (c.needs_input_grad[1]) r[1] = bmm(c.inputs[0].mT(), g);
  return r;
}

/// addmm / baddbmm: out = beta * self + alpha * (a @ b).
std::vector<Tensor> add_product_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(3);
  if (!g.defined()) return r;
  const Scalar& beta = c.attrs.scalar(0);
  const Scalar& alpha = c.attrs.scalar(1);
  const bool batched = g.dim() == 3;
  auto prod = [&](const Tensor& x, const Tensor& y) { return batched ? bmm(x, y) : mm(x, y); };
  if (c.needs_input_grad[0]) r[0] = ops::reduce_grad(scaled(g, beta), c.input_metas[0]);
  if (c.needs_input_grad[1]) r[1] = scaled(prod(g, c.inputs[2].mT()), alpha);
  if (c.needs_input_grad[2])
    r[2] = scaled(batched ? bmm(c.inputs[1].mT(), g) : mat2_grad(c.inputs[1], c.inputs[2], g), alpha);
  return r;
}

std::vector<Tensor> dot_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> r(2);
  if (!g.defined()) return r;
  if (c.needs_input_grad[0]) r[0] = mul(g, c.inputs[1]);
  if (c.needs_input_grad[1]) r[1] = mul(g, c.inputs[0]);
  return r;
}

}  // namespace

TANDEM_REGISTER_OP(mm) {
  OpDef d = matmul_like("mm", {{"self"}, {"mat2"}});
  d.meta = [](MetaContext& c) {
    ops::check_matmul_dtypes(c.op, c.inputs);
    check_mm_shapes(c.op, c.inputs[0], c.inputs[1]);
    c.outputs.push_back(TensorMeta{c.inputs[0].dtype, {c.inputs[0].sizes[0], c.inputs[1].sizes[1]}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    kernels::bmm_out(c.op, c.outputs[0], c.inputs[0], c.inputs[1]);
  };
  d.save_inputs = 0b11;
  d.backward = mm_backward;
  d.autocast = Autocast::LowerPrecision;
  return d;
}

// _fused_mm_to_copy(self, mat2; dtype, cast_mat2) = _to_copy(mm(self, m), dtype) with
// m = mat2, or with cast_mat2 m = _to_copy(mat2, self's dtype): compiled mode's cast of a
// narrow product, made by the fuse_mm_casts pass where only the cast reads the product
// (autocast programs: a bfloat16 weight gradient cast to its float32 parameter's dtype;
// cast_mat2 where the product's right operand is the autocast copy of a tensor that stays
// alive anyway, such as the model's input). self: [M, K] bfloat16 or float16; mat2: [K, N]
// of self's dtype, or with cast_mat2 any floating dtype; dtype float32; result [M, N]
// float32. The product is mm's own (the same kernel, rounded to the narrow dtype), written
// into the front half of the result's bytes and widened there in place; until then the
// back half holds the narrow copy of mat2 (cast_mat2, converted as _to_copy converts it)
// and, where it fits, the product's oneDNN scratchpad. So bitwise the unfused ops' result,
// without the narrow product's or the narrow operand's buffer. No backward (the pass runs
// on programs without gradients). TypeError for other dtypes, ShapeError as mm.
TANDEM_REGISTER_OP(_fused_mm_to_copy) {
  OpDef d = matmul_like("_fused_mm_to_copy", {{"self"}, {"mat2"}});
  d.attrs = {{"dtype", DType::Float32}, {"cast_mat2", false}};
  d.meta = [](MetaContext& c) {
    const MetaRef &a = c.inputs[0], &b = c.inputs[1];
    const DType from = a.dtype, to = c.attrs.dtype(0);
    const bool cast = c.attrs.b(1);
    TANDEM_CHECK((from == kBFloat16 || from == kFloat16) && to == kFloat32 &&
                     (cast ? is_floating_point(b.dtype) : b.dtype == from),
                 TypeError, c.op, "got ", dtype_name(from), " and ", dtype_name(b.dtype), " operands and dtype ",
                 dtype_name(to), ", expected a bfloat16 or float16 self, mat2 of its dtype (any floating dtype with ",
                 "cast_mat2) and dtype float32");
    check_mm_shapes(c.op, a, b);
    c.outputs.push_back(TensorMeta{to, {a.sizes[0], b.sizes[1]}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const DType from = c.inputs[0].dtype();
    const bool cast = c.attrs.b(1);
    auto narrow_copy = [&](const Tensor& t) {  // as _to_copy makes it: contiguous
      Tensor n = empty_tensor(t.sizes(), from);
      kernels::copy_kernel(n, t);
      return n;
    };
    if (!out.is_contiguous()) {  // no front half to borrow: the unfused ops as they are
      Tensor narrow = empty_tensor(out.sizes(), from);
      kernels::bmm_out(c.op, narrow, c.inputs[0], cast ? narrow_copy(c.inputs[1]) : c.inputs[1]);
      kernels::copy_kernel(out, narrow);
      return;
    }
    // The narrow product over the first half of the result's bytes (offsets in elements:
    // a float32 element is two narrow ones); the back half is free until the widening.
    const size_t es = element_size(from);
    Tensor narrow(IntrusivePtr<TensorImpl>::make(out.storage(), from, out.sizes(), out.storage_offset() * 2));
    char* const storage_base = static_cast<char*>(out.storage()->data());
    char* spare = static_cast<char*>(out.data_ptr()) + static_cast<size_t>(narrow.numel()) * es;
    char* const end = static_cast<char*>(out.data_ptr()) + static_cast<size_t>(out.numel()) * sizeof(float);
    auto align64 = [&](char* p) {
      return p + ((64 - reinterpret_cast<uintptr_t>(p) % 64) % 64);
    };
    Tensor mat2 = c.inputs[1];
    if (cast) {
      char* at = align64(spare);
      const size_t bytes = static_cast<size_t>(mat2.numel()) * es;
      if (at + bytes <= end && (at - storage_base) % static_cast<ptrdiff_t>(es) == 0) {
        Tensor n(IntrusivePtr<TensorImpl>::make(out.storage(), from, mat2.sizes(), (at - storage_base) / es));
        kernels::copy_kernel(n, mat2);
        mat2 = n;
        spare = at + bytes;
      } else {
        mat2 = narrow_copy(mat2);
      }
    }
    {
      kernels::onednn::ScratchpadLoan loan(spare, static_cast<size_t>(end - spare));
      kernels::bmm_out(c.op, narrow, c.inputs[0], mat2);
    }
    kernels::widen_in_place(out, from);
  };
  return d;
}

TANDEM_REGISTER_OP(bmm) {
  OpDef d = matmul_like("bmm", {{"self"}, {"mat2"}});
  d.meta = [](MetaContext& c) {
    ops::check_matmul_dtypes(c.op, c.inputs);
    check_bmm_shapes(c.op, c.inputs[0], c.inputs[1]);
    const MetaRef &a = c.inputs[0], &b = c.inputs[1];
    c.outputs.push_back(TensorMeta{a.dtype, {a.sizes[0], a.sizes[1], b.sizes[2]}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) { kernels::bmm_out(c.op, c.outputs[0], c.inputs[0], c.inputs[1]); };
  d.save_inputs = 0b11;
  d.backward = bmm_backward;
  d.autocast = Autocast::LowerPrecision;
  return d;
}

namespace {
// addmm and baddbmm: out = beta * self + alpha * (a @ b); self broadcast first.
void add_product_kernel(KernelContext& c) {
  const Tensor& out = c.outputs[0];
  const Scalar& beta = c.attrs.scalar(0);
  const Scalar& alpha = c.attrs.scalar(1);
  const bool bz = beta_is_zero(beta, out.dtype());
  if (!bz) kernels::copy_kernel(out, c.inputs[0]);
  kernels::bmm_out(c.op, out, c.inputs[1], c.inputs[2], alpha, bz ? Scalar(0) : beta);
}
}  // namespace

TANDEM_REGISTER_OP(addmm) {
  OpDef d = matmul_like("addmm", {{"self"}, {"mat1"}, {"mat2"}});
  d.attrs = {{"beta", Scalar(1)}, {"alpha", Scalar(1)}};
  d.meta = [](MetaContext& c) {
    ops::check_matmul_dtypes(c.op, c.inputs);
    check_mm_shapes(c.op, c.inputs[1], c.inputs[2]);
    DimVector out{c.inputs[1].sizes[0], c.inputs[2].sizes[1]};
    ops::check_expandable(c.op, c.inputs[0].sizes, out);
    c.outputs.push_back(TensorMeta{c.inputs[1].dtype, std::move(out), {}});
  };
  d.cpu_kernel = add_product_kernel;
  d.save_inputs = 0b110;  // self's gradient needs only its shape
  d.backward = add_product_backward;
  d.autocast = Autocast::LowerPrecision;
  return d;
}

TANDEM_REGISTER_OP(baddbmm) {
  OpDef d = matmul_like("baddbmm", {{"self"}, {"batch1"}, {"batch2"}});
  d.attrs = {{"beta", Scalar(1)}, {"alpha", Scalar(1)}};
  d.meta = [](MetaContext& c) {
    ops::check_matmul_dtypes(c.op, c.inputs);
    check_bmm_shapes(c.op, c.inputs[1], c.inputs[2]);
    const MetaRef &a = c.inputs[1], &b = c.inputs[2];
    DimVector out{a.sizes[0], a.sizes[1], b.sizes[2]};
    ops::check_expandable(c.op, c.inputs[0].sizes, out);
    c.outputs.push_back(TensorMeta{a.dtype, std::move(out), {}});
  };
  d.cpu_kernel = add_product_kernel;
  d.save_inputs = 0b110;
  d.backward = add_product_backward;
  d.autocast = Autocast::LowerPrecision;
  return d;
}

TANDEM_REGISTER_OP(dot) {
  OpDef d = matmul_like("dot", {{"self"}, {"tensor"}});
  d.meta = [](MetaContext& c) {
    const MetaRef &a = c.inputs[0], &b = c.inputs[1];
    TANDEM_CHECK(a.dim() == 1 && b.dim() == 1, ShapeError, c.op, "1D tensors expected, but got ", a.dim(), "D and ",
                 b.dim(), "D tensors");
    TANDEM_CHECK(a.sizes[0] == b.sizes[0], ShapeError, c.op, "inconsistent tensor size, expected tensor [",
                 a.sizes[0], "] and src [", b.sizes[0], "] to have the same number of elements, but got ", a.sizes[0],
                 " and ", b.sizes[0], " elements respectively");
    ops::check_matmul_dtypes(c.op, c.inputs);
    c.outputs.push_back(TensorMeta{a.dtype, {}, {}});
  };
  d.cpu_kernel = [](KernelContext& c) { kernels::dot_out(c.op, c.outputs[0], c.inputs[0], c.inputs[1]); };
  d.save_inputs = 0b11;
  d.backward = dot_backward;
  return d;
}

// ---------------------------------------------------------------- composites
namespace {

void check_same_dtypes(const char* op, std::initializer_list<Tensor> ts) {
  SmallVec<MetaRef, 4> metas;
  for (const Tensor& t : ts) metas.push_back(MetaRef::of(t));
  ops::check_matmul_dtypes(op, metas.ref());
}

/// True when t [..., n, m] views as [(...*n), m] without a copy.
bool foldable(const Tensor& t) {
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) rows *= t.size(d);
  return compute_view_strides(t.sizes(), t.strides(), {rows, t.size(-1)}).has_value();
}

Tensor matmul_impl(const Tensor& t1, const Tensor& t2) {
  const int64_t d1 = t1.dim(), d2 = t2.dim();
  TANDEM_CHECK(d1 > 0 && d2 > 0, ShapeError, "matmul", "both arguments to matmul need to be at least 1D, but they are ",
               d1, "D and ", d2, "D");
  check_same_dtypes("matmul", {t1, t2});
  if (d1 == 1 && d2 == 1) return dot(t1, t2);
  if (d1 == 2 && d2 == 1) return mv(t1, t2);
  if (d1 == 1 && d2 == 2) return squeeze(mm(unsqueeze(t1, 0), t2), 0);
  if (d1 == 2 && d2 == 2) return mm(t1, t2);
  // [..., n, m] @ [m(, p)]: fold the batch into the rows of one mm when that is a view.
  if (d1 >= 3 && d2 <= 2 && foldable(t1)) {
    const Tensor rhs = d2 == 1 ? unsqueeze(t2, 1) : t2;
    Tensor r = mm(reshape(t1, {-1, t1.size(-1)}), rhs);
    DimVector out(t1.sizes().begin(), t1.sizes().end() - 1);
    if (d2 == 2) out.push_back(t2.size(1));
    return view(r, out);
  }
  // [n(, m)] @ [..., m, p] with a foldable transpose: (t2^T @ t1^T)^T.
  if (d2 >= 3 && d1 <= 2 && foldable(t2.mT())) {
    Tensor r = matmul_impl(t2.mT(), d1 == 2 ? t1.t() : t1);
    return d1 == 2 ? r.mT() : r;
  }
  // General case: broadcast the batch dims, flatten them, bmm.
  const int64_t n = d1 > 1 ? t1.size(-2) : 1, m1 = t1.size(-1);
  const int64_t m2 = d2 > 1 ? t2.size(-2) : t2.size(-1), p = d2 > 1 ? t2.size(-1) : 1;
  const DimVector b1(t1.sizes().begin(), t1.sizes().end() - std::min<int64_t>(d1, 2));
  const DimVector b2(t2.sizes().begin(), t2.sizes().end() - std::min<int64_t>(d2, 2));
  TANDEM_CHECK(m1 == m2, ShapeError, "matmul", "shapes ", t1.sizes(), " and ", t2.sizes(),
               " cannot be multiplied (inner sizes ", m1, " and ", m2, " differ)");
  const DimVector batch = ops::broadcast_shapes("matmul", b1, b2);
  const int64_t B = multiply_integers(batch);
  DimVector e1 = batch, e2 = batch;
  e1.insert(e1.end(), {n, m1});
  e2.insert(e2.end(), {m2, p});
  Tensor a = reshape(expand(d1 == 1 ? unsqueeze(t1, 0) : t1, e1), {B, n, m1});
  Tensor b = reshape(expand(d2 == 1 ? unsqueeze(t2, 1) : t2, e2), {B, m2, p});
  Tensor r = bmm(a, b);
  DimVector out = batch;
  if (d1 > 1) out.push_back(n);
  if (d2 > 1) out.push_back(p);
  return view(r, out);
}

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

}  // namespace

TANDEM_REGISTER_OP(matmul) {
  OpDef d = matmul_like("matmul", {{"self"}, {"other"}});
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) { return one(matmul_impl(in[0], in[1])); };
  d.autocast = Autocast::LowerPrecision;
  return d;
}

TANDEM_REGISTER_OP(mv) {
  OpDef d = matmul_like("mv", {{"self"}, {"vec"}});
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) {
    const Tensor &a = in[0], &v = in[1];
    TANDEM_CHECK(a.dim() == 2 && v.dim() == 1, ShapeError, "mv", "vector + matrix @ vector expected, got self of ",
                 a.dim(), "-D and vec of ", v.dim(), "-D");
    TANDEM_CHECK(a.size(1) == v.size(0), ShapeError, "mv", "size mismatch, got matrix ", a.sizes(), " and vector ",
                 v.sizes());
    return one(squeeze(mm(a, unsqueeze(v, 1)), 1));
  };
  return d;
}

TANDEM_REGISTER_OP(outer) {
  OpDef d = matmul_like("outer", {{"self"}, {"vec2"}});
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) {
    TANDEM_CHECK(in[0].dim() == 1, ShapeError, "outer", "expected 1-D argument self, but got ", in[0].dim(), "-D");
    TANDEM_CHECK(in[1].dim() == 1, ShapeError, "outer", "expected 1-D argument vec2, but got ", in[1].dim(), "-D");
    return one(mul(unsqueeze(in[0], 1), unsqueeze(in[1], 0)));
  };
  return d;
}

TANDEM_REGISTER_OP(linear) {
  OpDef d = matmul_like("linear", {{"input"}, {"weight"}, {"bias", true, true}});
  d.composite = [](ArrayRef<Tensor> in, const AttrReader&) {
    const Tensor &x = in[0], &w = in[1], &b = in[2];
    check_same_dtypes("linear", {x, w, b});
    TANDEM_CHECK(w.dim() <= 2, ShapeError, "linear", "weight must be 1-D or 2-D, got ", w.dim(), "-D");
    const Tensor wt = w.t();
    if (b.defined() && w.dim() == 2) {
      if (x.dim() == 2) return one(addmm(b, x, wt));
      // [*, in] with a foldable layout: one addmm over the flattened rows (bias fused).
      if (x.dim() >= 3 && foldable(x)) {
        TANDEM_CHECK(x.size(-1) == w.size(1), ShapeError, "linear", "mat1 and mat2 shapes cannot be multiplied (",
                     x.numel() / std::max<int64_t>(x.size(-1), 1), "x", x.size(-1), " and ", w.size(1), "x", w.size(0), ")");
        DimVector out(x.sizes().begin(), x.sizes().end() - 1);
        out.push_back(w.size(0));
        return one(view(addmm(b, reshape(x, {-1, x.size(-1)}), wt), out));
      }
    }
    Tensor r = matmul(x, wt);
    if (b.defined()) r = add(r, b);
    return one(r);
  };
  d.autocast = Autocast::LowerPrecision;
  return d;
}

// ---------------------------------------------------------------- functional API
Tensor mm(const Tensor& self, const Tensor& mat2) { return dispatch1(op_mm(), {self, mat2}); }
Tensor bmm(const Tensor& self, const Tensor& mat2) { return dispatch1(op_bmm(), {self, mat2}); }
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  return dispatch1(op_addmm(), {self, mat1, mat2}, {AttrValue(beta), AttrValue(alpha)});
}
Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  return dispatch1(op_baddbmm(), {self, b1, b2}, {AttrValue(beta), AttrValue(alpha)});
}
Tensor dot(const Tensor& self, const Tensor& other) { return dispatch1(op_dot(), {self, other}); }
Tensor mv(const Tensor& self, const Tensor& vec) { return dispatch1(op_mv(), {self, vec}); }
Tensor matmul(const Tensor& self, const Tensor& other) { return dispatch1(op_matmul(), {self, other}); }
Tensor outer(const Tensor& self, const Tensor& vec2) { return dispatch1(op_outer(), {self, vec2}); }
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return dispatch1(op_linear(), {input, weight, bias});
}

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::matmul(const Tensor& other) const { return tandem::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& mat2) const { return tandem::mm(*this, mat2); }
Tensor Tensor::bmm(const Tensor& mat2) const { return tandem::bmm(*this, mat2); }
Tensor Tensor::dot(const Tensor& other) const { return tandem::dot(*this, other); }
Tensor Tensor::mv(const Tensor& vec) const { return tandem::mv(*this, vec); }
Tensor Tensor::outer(const Tensor& vec2) const { return tandem::outer(*this, vec2); }
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) const {
  return tandem::addmm(*this, mat1, mat2, beta, alpha);
}
Tensor Tensor::baddbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) const {
  return tandem::baddbmm(*this, b1, b2, beta, alpha);
}

}  // namespace tandem
