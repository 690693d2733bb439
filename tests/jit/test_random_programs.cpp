// Randomized equivalence of eager and compiled mode: small random programs over ~45 op
// kinds (pointwise, broadcasting binary, comparisons, where, reductions with keepdim,
// softmax, views/reshape/transpose/slicing, matmul/linear, conv2d, pooling, cat,
// index_select, factories, random draws, casts, and in-place ops on inputs, on
// intermediates and through views), random shapes. Each program runs eagerly, then
// compiled twice (the capturing call, then the cached program), from clones of the same
// inputs and the same RNG seed. Outputs (dtype, sizes, strides, bytes) and the inputs the
// program mutated must be bitwise equal: compiled mode runs the same kernels on the same
// data in the same order (the in-place reuse pass swaps relu for relu_, the same kernel
// writing over its dead input), so there is no tolerance to hide behind.
// Inputs are views at random storage offsets of buffers padded with NaN junk, sometimes
// with NaN payloads and signed zeros inside (compared as bytes), sometimes the same tensor
// twice; the cached program is called on inputs at *other* offsets than the capture saw.
// Steps also take as_strided/diagonal/unfold views of any value (intermediates included),
// make tensors from C++ data inside the function, run in-place ops whose result type is
// wider than self, and divide by a divisor computed from the data; a last "poisoned" call
// makes that division raise, and the compiled call must raise the same error type.
// Outputs may alias each other or the inputs: which output shares storage with which
// input or output, and which is the very input object, must match eager.
// Fixed seeds: TANDEM_RANDOM_PROGRAMS=N runs N programs instead of the default;
// TANDEM_RANDOM_SECONDS=S runs programs from TANDEM_RANDOM_SEED (default: time-based) until
// S seconds have passed (`./run fuzz programs S`), printing the seed of any failure.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "tandem/tandem.h"

using namespace tandem;

namespace {

using Vals = std::vector<Tensor>;
using StepFn = std::function<Tensor(const Vals&)>;

/// splitmix64: portable and reproducible (std distributions are not).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  bool coin(double p = 0.5) { return static_cast<double>(next() % 1000000) < p * 1e6; }
};

bool is_float(const Tensor& t) { return t.is_floating_point(); }

/// Index of a random value satisfying `pred`, or -1.
template <class Pred>
int pick(const Vals& v, Rng& r, Pred pred) {
  std::vector<int> ok;
  for (size_t i = 0; i < v.size(); ++i)
    if (pred(v[i])) ok.push_back(static_cast<int>(i));
  return ok.empty() ? -1 : ok[static_cast<size_t>(r.below(static_cast<int64_t>(ok.size())))];
}

bool broadcastable(IntArrayRef a, IntArrayRef b) {
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    int64_t x = a[a.size() - 1 - k], y = b[b.size() - 1 - k];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

struct OpKind {
  std::string name;
  std::function<StepFn(const Vals&, int num_inputs, Rng&)> propose;  // empty StepFn: nothing fits
};

using UnaryFn = Tensor (*)(const Tensor&);

OpKind unary(std::string name, std::function<Tensor(const Tensor&)> f) {
  return {name, [f](const Vals& v, int, Rng& r) -> StepFn {
            int i = pick(v, r, is_float);
            if (i < 0) return {};
            return [i, f](const Vals& x) { return f(x[static_cast<size_t>(i)]); };
          }};
}

OpKind binary(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> f) {
  return {name, [f](const Vals& v, int, Rng& r) -> StepFn {
            int i = pick(v, r, is_float);
            if (i < 0) return {};
            const Tensor& a = v[static_cast<size_t>(i)];
            int j = pick(v, r, [&](const Tensor& b) { return b.is_floating_point() && broadcastable(a.sizes(), b.sizes()); });
            if (j < 0) j = i;
            return [i, j, f](const Vals& x) { return f(x[static_cast<size_t>(i)], x[static_cast<size_t>(j)]); };
          }};
}

/// A reduction-like op along a random dim of a value with dim >= 1.
OpKind along_dim(std::string name, std::function<Tensor(const Tensor&, int64_t, bool)> f) {
  return {name, [f](const Vals& v, int, Rng& r) -> StepFn {
            int i = pick(v, r, [](const Tensor& t) { return t.is_floating_point() && t.dim() >= 1 && t.numel() > 0; });
            if (i < 0) return {};
            int64_t d = r.below(v[static_cast<size_t>(i)].dim());
            if (r.coin()) d -= v[static_cast<size_t>(i)].dim();  // negative dims too
            bool keep = r.coin();
            return [i, d, keep, f](const Vals& x) { return f(x[static_cast<size_t>(i)], d, keep); };
          }};
}

std::vector<OpKind> op_kinds() {
  std::vector<OpKind> k;
  // Broadcasting binary ops, and C++ numbers (wrapped-number constants).
  k.push_back(binary("add", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); }));
  k.push_back(binary("sub", [](const Tensor& a, const Tensor& b) { return a - b; }));
  k.push_back(binary("mul", [](const Tensor& a, const Tensor& b) { return a * b; }));
  k.push_back(binary("div", [](const Tensor& a, const Tensor& b) { return a / b; }));
  k.push_back(binary("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }));
  k.push_back(binary("where_gt", [](const Tensor& a, const Tensor& b) { return where(gt(a, b), a, b); }));
  k.push_back(binary("lt_to_float", [](const Tensor& a, const Tensor& b) { return lt(a, b).to(kFloat32); }));
  k.push_back(binary("eq_scalar_where", [](const Tensor& a, const Tensor& b) { return where(eq(a, 0.0), b, a); }));
  k.push_back(unary("scalar_mul", [](const Tensor& a) { return a * 1.5; }));
  k.push_back(unary("scalar_sub_int", [](const Tensor& a) { return a - 2; }));
  // Pointwise.
  k.push_back(unary("neg", [](const Tensor& a) { return neg(a); }));
  k.push_back(unary("exp", [](const Tensor& a) { return exp(a); }));
  k.push_back(unary("tanh", [](const Tensor& a) { return tanh(a); }));
  k.push_back(unary("sigmoid", [](const Tensor& a) { return sigmoid(a); }));
  k.push_back(unary("relu", [](const Tensor& a) { return relu(a); }));
  k.push_back(unary("sqrt_abs", [](const Tensor& a) { return sqrt(abs(a)); }));
  k.push_back(unary("square", [](const Tensor& a) { return square(a); }));
  k.push_back(unary("clamp", [](const Tensor& a) { return clamp(a, Scalar(-0.5), Scalar(0.75)); }));
  k.push_back(unary("gelu", [](const Tensor& a) { return gelu(a); }));
  k.push_back(unary("log1p_abs", [](const Tensor& a) { return log1p(abs(a)); }));
  k.push_back(unary("masked_fill", [](const Tensor& a) { return masked_fill(a, gt(a, 0.5), Scalar(-1.0)); }));
  k.push_back(unary("cast_f64_f32", [](const Tensor& a) { return (a.to(kFloat64) * 3.0).to(kFloat32); }));
  // Reductions (keepdim or not) and normalisations along a dim.
  k.push_back(along_dim("sum", [](const Tensor& a, int64_t d, bool kd) { return sum(a, {d}, kd); }));
  k.push_back(along_dim("mean", [](const Tensor& a, int64_t d, bool kd) { return mean(a, {d}, kd); }));
  k.push_back(along_dim("amax", [](const Tensor& a, int64_t d, bool kd) { return amax(a, {d}, kd); }));
  k.push_back(along_dim("logsumexp", [](const Tensor& a, int64_t d, bool kd) { return logsumexp(a, {d}, kd); }));
  k.push_back(along_dim("softmax", [](const Tensor& a, int64_t d, bool) { return softmax(a, d); }));
  k.push_back(along_dim("log_softmax", [](const Tensor& a, int64_t d, bool) { return log_softmax(a, d); }));
  k.push_back(along_dim("cumsum", [](const Tensor& a, int64_t d, bool) { return cumsum(a, d); }));
  k.push_back(along_dim("flip", [](const Tensor& a, int64_t d, bool) { return flip(a, {d}); }));
  k.push_back(along_dim("max_values", [](const Tensor& a, int64_t d, bool kd) { return std::get<0>(max(a, d, kd)); }));
  // Views and reshapes.
  k.push_back(along_dim("slice", [](const Tensor& a, int64_t d, bool step2) {
    int64_t n = a.size(d);
    return a.slice(d, n > 2 ? 1 : 0, n, step2 ? 2 : 1);
  }));
  k.push_back(along_dim("unsqueeze", [](const Tensor& a, int64_t d, bool) { return a.unsqueeze(d); }));
  k.push_back(along_dim("select", [](const Tensor& a, int64_t d, bool) { return a.select(d, a.size(d) - 1); }));
  k.push_back(unary("reshape_flat", [](const Tensor& a) { return a.reshape({-1}); }));
  k.push_back(unary("view_split", [](const Tensor& a) {
    if (a.dim() >= 1 && a.size(-1) % 2 == 0 && a.is_contiguous()) {
      DimVector s = a.sizes().vec();
      s.back() /= 2;
      s.push_back(2);
      return a.view(s);
    }
    return a.flatten();
  }));
  k.push_back(unary("transpose", [](const Tensor& a) { return a.dim() >= 2 ? a.transpose(0, a.dim() - 1) : a.unsqueeze(0); }));
  k.push_back(unary("permute", [](const Tensor& a) {
    std::vector<int64_t> p;
    for (int64_t d = a.dim() - 1; d >= 0; --d) p.push_back(d);
    return a.permute(p);
  }));
  k.push_back(unary("expand", [](const Tensor& a) {
    DimVector s = a.sizes().vec();
    s.insert(s.begin(), 3);
    return a.unsqueeze(0).expand(s);
  }));
  k.push_back(unary("contiguous", [](const Tensor& a) { return a.contiguous(); }));
  k.push_back(unary("squeeze", [](const Tensor& a) { return a.squeeze(); }));
  // Joins and indexing.
  k.push_back({"cat", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.is_floating_point() && t.dim() >= 1; });
                 if (i < 0) return {};
                 const Tensor& a = v[static_cast<size_t>(i)];
                 int j = pick(v, r, [&](const Tensor& b) { return b.dtype() == a.dtype() && b.sizes().equals(a.sizes()); });
                 int64_t d = r.below(a.dim());
                 return [i, j, d](const Vals& x) { return cat({x[static_cast<size_t>(i)], x[static_cast<size_t>(j)] * 2.0}, d); };
               }});
  k.push_back({"index_select", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.is_floating_point() && t.dim() >= 1 && t.numel() > 0; });
                 if (i < 0) return {};
                 const Tensor& a = v[static_cast<size_t>(i)];
                 int64_t d = r.below(a.dim());
                 std::vector<int64_t> idx;
                 for (int n = 0; n < 4; ++n) idx.push_back(r.below(a.size(d)));
                 Tensor index = from_vector(idx, {4}, kInt64);  // lifted: read by fn, not passed in
                 return [i, d, index](const Vals& x) { return index_select(x[static_cast<size_t>(i)], d, index); };
               }});
  // Linear algebra with weights the function holds (lifted tensors).
  k.push_back({"matmul", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.dtype() == kFloat32 && t.dim() >= 1 && t.dim() <= 3; });
                 if (i < 0) return {};
                 Tensor w = randn({v[static_cast<size_t>(i)].size(-1), 1 + r.below(5)});
                 return [i, w](const Vals& x) { return matmul(x[static_cast<size_t>(i)], w); };
               }});
  k.push_back({"linear", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.dtype() == kFloat32 && t.dim() >= 1; });
                 if (i < 0) return {};
                 int64_t out = 1 + r.below(6);
                 Tensor w = randn({out, v[static_cast<size_t>(i)].size(-1)}), b = randn({out});
                 return [i, w, b](const Vals& x) { return linear(x[static_cast<size_t>(i)], w, b); };
               }});
  // Convolution and pooling on 4-D values.
  auto four_d = [](const Tensor& t) { return t.dtype() == kFloat32 && t.dim() == 4 && t.size(2) >= 2 && t.size(3) >= 2; };
  k.push_back({"conv2d", [four_d](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, four_d);
                 if (i < 0) return {};
                 Tensor w = randn({1 + r.below(4), v[static_cast<size_t>(i)].size(1), 3, 3}), b = randn({w.size(0)});
                 int64_t stride = 1 + r.below(2);
                 return [i, w, b, stride](const Vals& x) { return conv2d(x[static_cast<size_t>(i)], w, b, {stride}, {1}); };
               }});
  // conv -> relu -> pool chains (fuse_conv_blocks), sometimes with the conv result read
  // again (then nothing fuses).
  k.push_back({"conv_relu_pool", [four_d](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [&](const Tensor& t) { return four_d(t) && t.size(2) >= 2 && t.size(3) >= 2; });
                 if (i < 0) return {};
                 Tensor w = randn({8 * (1 + r.below(2)), v[static_cast<size_t>(i)].size(1), 3, 3}), b = randn({w.size(0)});
                 const bool reuse = r.coin(0.3), pool = r.coin(0.8);
                 return [i, w, b, reuse, pool](const Vals& x) {
                   Tensor c = conv2d(x[static_cast<size_t>(i)], w, b, {1}, {1});
                   Tensor y = relu(c);
                   if (pool) y = max_pool2d(y, {2, 2});
                   return reuse ? y + c.sum({1}, true).slice(2, 0, y.size(2)).slice(3, 0, y.size(3)) : y;
                 };
               }});
  k.push_back({"max_pool2d", [four_d](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, four_d);
                 if (i < 0) return {};
                 return [i](const Vals& x) { return max_pool2d(x[static_cast<size_t>(i)], {2, 2}); };
               }});
  k.push_back({"avg_pool2d", [four_d](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, four_d);
                 if (i < 0) return {};
                 return [i](const Vals& x) { return avg_pool2d(x[static_cast<size_t>(i)], {2, 2}, {1}); };
               }});
  k.push_back({"layer_norm", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.dtype() == kFloat32 && t.dim() >= 1 && t.numel() > 0; });
                 if (i < 0) return {};
                 Tensor w = randn({v[static_cast<size_t>(i)].size(-1)});
                 return [i, w](const Vals& x) {
                   const Tensor& a = x[static_cast<size_t>(i)];
                   return layer_norm(a, {a.size(-1)}, w);
                 };
               }});
  // Factories (constant folded) and random draws (fresh per call, same as eager).
  k.push_back(unary("plus_arange", [](const Tensor& a) {
    return a.dim() >= 1 ? a + arange(a.size(-1), kFloat32) * 0.5 : a + full({}, 0.25);
  }));
  k.push_back(unary("plus_rand", [](const Tensor& a) { return a + rand(a.sizes(), a.dtype()); }));
  // In-place ops: on inputs, on intermediates, through a view.
  k.push_back({"inplace_input", [](const Vals& v, int num_inputs, Rng& r) -> StepFn {
                 int i = pick(Vals(v.begin(), v.begin() + num_inputs), r, is_float);
                 if (i < 0) return {};
                 return [i](const Vals& x) {
                   Tensor t = x[static_cast<size_t>(i)];
                   return t.mul_(1.5);
                 };
               }});
  k.push_back({"inplace_any", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, is_float);
                 if (i < 0) return {};
                 int which = static_cast<int>(r.below(3));
                 return [i, which](const Vals& x) {
                   Tensor t = x[static_cast<size_t>(i)];
                   return which == 0 ? t.add_(1.0) : which == 1 ? t.relu_() : t.clamp_(Scalar(-1.0), Scalar(1.0));
                 };
               }});
  k.push_back({"inplace_view", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.is_floating_point() && t.dim() >= 1 && t.size(0) >= 2; });
                 if (i < 0) return {};
                 return [i](const Vals& x) {
                   Tensor t = x[static_cast<size_t>(i)];
                   t.slice(0, 0, 1).mul_(-2.0);
                   return t;
                 };
               }});
  // Views with explicit geometry, of any value (inputs at offsets, intermediates in the
  // arena): relative (no offset) or absolute (an offset into the value's storage).
  k.push_back({"as_strided", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.is_floating_point() && t.numel() > 1; });
                 if (i < 0) return {};
                 const Tensor& a = v[static_cast<size_t>(i)];
                 const int64_t n = static_cast<int64_t>(a.storage()->nbytes()) / a.element_size();
                 const int64_t rows = 1 + r.below(3), cols = 1 + r.below(3);
                 const int64_t s1 = r.below(3), s0 = cols * (1 + r.below(2));
                 const bool absolute = r.coin();
                 const int64_t off = r.below(std::max<int64_t>(1, n - (rows - 1) * s0 - (cols - 1) * s1));
                 return [i, rows, cols, s0, s1, absolute, off](const Vals& x) {
                   const Tensor& t = x[static_cast<size_t>(i)];
                   Tensor view = absolute ? t.as_strided({rows, cols}, {s0, s1}, off) : t.as_strided({rows, cols}, {s0, s1});
                   return view * 1.0;  // reads it (a view of junk padding is fine: same junk)
                 };
               }});
  k.push_back({"diagonal_unfold", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.is_floating_point() && t.dim() >= 2 && t.numel() > 0; });
                 if (i < 0) return {};
                 const bool diag = r.coin();
                 const int64_t off = r.below(2), size = 1 + r.below(2), step = 1 + r.below(2);
                 return [i, diag, off, size, step](const Vals& x) {
                   const Tensor& t = x[static_cast<size_t>(i)];
                   return diag ? t.diagonal(off) + 0.5 : t.unfold(-1, std::min(size, t.size(-1)), step).sum({-1});
                 };
               }});
  // Tensors made from C++ data inside the function (not ops: capture must not bind the
  // capturing call's object), sometimes updated in place.
  k.push_back({"cpp_data", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.dtype() == kFloat32 && t.dim() >= 1; });
                 if (i < 0) return {};
                 const int64_t n = v[static_cast<size_t>(i)].size(-1);
                 std::vector<float> vals;
                 for (int64_t e = 0; e < n; ++e) vals.push_back(static_cast<float>(r.below(7)) - 3.0f);
                 const bool inplace = r.coin();
                 return [i, vals, n, inplace](const Vals& x) {
                   Tensor c = from_vector(vals, {n}, kFloat32);
                   if (inplace) c.add_(x[static_cast<size_t>(i)].sum());
                   return x[static_cast<size_t>(i)] * c;
                 };
               }});
  // In-place ops whose result type is wider than self: computed wide, copied into self.
  k.push_back({"inplace_promote", [](const Vals& v, int, Rng& r) -> StepFn {
                 int i = pick(v, r, [](const Tensor& t) { return t.dtype() == kFloat32; });
                 if (i < 0) return {};
                 const int which = static_cast<int>(r.below(3));
                 return [i, which](const Vals& x) {
                   const Tensor& a = x[static_cast<size_t>(i)];
                   if (which == 0) {
                     Tensor h = a.to(kFloat16);
                     h.add_(a);  // float16 += float32
                     return h;
                   }
                   if (which == 1) {
                     Tensor t = (a * 4.0).to(kInt64);
                     t.lt_(a);  // int64 < float32: bool stored as int64
                     return t;
                   }
                   Tensor t = a * 1.0;
                   t.mul_(a.to(kFloat64));  // float32 *= float64
                   return t;
                 };
               }});
  // A division by a divisor computed from the data, whose result may be unused: the
  // poisoned call (an input element set to 12345) makes the divisor zero, and the
  // compiled call must raise as eager does (dead-code elimination must keep it).
  k.push_back({"div_guard", [](const Vals& v, int num_inputs, Rng& r) -> StepFn {
                 int i = pick(Vals(v.begin(), v.begin() + num_inputs), r, [](const Tensor& t) {
                   return t.is_floating_point() && t.numel() > 0;
                 });
                 if (i < 0) return {};
                 const bool use = r.coin(0.3);
                 return [i, use](const Vals& x) {
                   const Tensor& a = x[static_cast<size_t>(i)];
                   Tensor d = ne(a, 12345.0).to(kInt64);
                   Tensor q = full_like(d, 7).div(d, "trunc");
                   return use ? a + q : a * 1.0;
                 };
               }});
  return k;
}

struct Program {
  int num_inputs = 0;
  std::vector<StepFn> steps;
  std::vector<std::string> kinds;
  std::vector<int> outputs;
  std::vector<Tensor> inputs;  // pristine; every run gets copies (see relocate)
  int same_as = -1;            // input num_inputs-1 is the same tensor as this input (-1: none)
  std::vector<int> poison;     // inputs whose element 0 set to 12345 makes div_guard raise
};

Vals run_steps(const Program& p, const Vals& inputs) {
  Vals vals = inputs;
  for (const auto& s : p.steps) vals.push_back(s(vals));
  Vals out;
  for (int o : p.outputs) out.push_back(vals[static_cast<size_t>(o)]);
  return out;
}

/// A copy of `t` with the same sizes and strides at storage offset `offset`, in a storage
/// whose other elements are NaN junk with a payload (a read outside the tensor's own
/// elements shows up as different bytes, unless eager reads the same junk).
Tensor relocate(const Tensor& t, int64_t offset) {
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * t.stride(d);
  if (t.numel() == 0) extent = 0;
  Tensor store = empty_tensor({offset + extent + 3}, t.dtype());
  if (t.dtype() == kFloat32) {
    const uint32_t junk = 0x7fc0beefu;
    for (int64_t e = 0; e < store.numel(); ++e) std::memcpy(static_cast<float*>(store.data_ptr()) + e, &junk, 4);
  } else {
    store.fill_(-7.0);
  }
  Tensor out = store.as_strided(t.sizes(), t.strides(), offset);
  out.copy_(t);
  return out;
}

/// Copies of a program's inputs, each at storage offset `offset` + its index (so calls
/// with different offsets share sizes and strides), keeping "the same tensor twice".
Vals placed(const Program& p, int64_t offset) {
  Vals c;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (static_cast<int>(i) == p.num_inputs - 1 && p.same_as >= 0) {
      c.push_back(c[static_cast<size_t>(p.same_as)]);
      continue;
    }
    c.push_back(relocate(p.inputs[i], offset + static_cast<int64_t>(i)));
  }
  return c;
}

Tensor random_input(Rng& r) {
  int64_t dims = r.below(5);  // 0-d .. 4-d
  DimVector s;
  if (dims == 4) {
    s = {1 + r.below(2), 1 + r.below(3), 4 + r.below(4), 4 + r.below(4)};
  } else {
    for (int64_t d = 0; d < dims; ++d) s.push_back(1 + r.below(5));
  }
  DType dt = r.coin(0.1) ? kFloat64 : kFloat32;
  Tensor t = randn(s, dt);
  if (dims >= 2 && r.coin(0.2)) t = t.transpose(0, 1);  // a non-contiguous input
  if (dims >= 1 && r.coin(0.15)) t = t.slice(0, 0, t.size(0), 2);  // stepped
  if (dt == kFloat32 && t.numel() >= 2 && r.coin(0.3)) {
    // Signed zeros and NaNs with payloads: max/min, relu, pooling and copies must keep
    // their bits exactly as eager's kernels do.
    Tensor flat = t.contiguous();
    const uint32_t bits[] = {0x80000000u, 0x7fc12345u, 0xffc00042u, 0x00000000u};
    for (int e = 0; e < 2; ++e) {
      const uint32_t b = bits[r.below(4)];
      std::memcpy(static_cast<float*>(flat.data_ptr()) + r.below(flat.numel()), &b, 4);
    }
    if (t.is_contiguous()) t = flat;
    else t.copy_(flat);  // keeps t's layout (a float copy keeps the bits)
  }
  return t;
}

/// Builds a program by proposing steps and keeping those that run eagerly without error.
Program generate(uint64_t seed, const std::vector<OpKind>& kinds, std::map<std::string, int>& used) {
  Rng r{seed};
  manual_seed(seed);
  Program p;
  p.num_inputs = 1 + static_cast<int>(r.below(3));
  for (int i = 0; i < p.num_inputs; ++i) p.inputs.push_back(random_input(r));
  if (r.coin(0.4)) {  // make sure convolutions and pools get exercised
    p.inputs.push_back(randn({1 + r.below(2), 1 + r.below(3), 5 + r.below(4), 5 + r.below(4)}));
    ++p.num_inputs;
  }
  if (r.coin(0.1)) {  // the same tensor passed twice
    p.same_as = static_cast<int>(r.below(p.num_inputs));
    p.inputs.push_back(p.inputs[static_cast<size_t>(p.same_as)]);
    ++p.num_inputs;
  }
  Vals vals = placed(p, 0);
  const int want = 4 + static_cast<int>(r.below(11));
  for (int attempt = 0; attempt < 60 && static_cast<int>(p.steps.size()) < want; ++attempt) {
    const OpKind& k = kinds[static_cast<size_t>(r.below(static_cast<int64_t>(kinds.size())))];
    StepFn f = k.propose(vals, p.num_inputs, r);
    if (!f) continue;
    // The generation run is the eager run of the program so far: a step that raises here
    // (shapes that do not fit, an in-place write into an expanded view) raises in its
    // meta check, before any kernel wrote, and is left out.
    Tensor out;
    try {
      out = f(vals);
    } catch (const Error&) {
      continue;
    }
    bool existing = false;  // in-place steps return a value the program already has
    for (const Tensor& t : vals) existing = existing || t.impl() == out.impl();
    if (!existing && out.numel() > 4096) continue;  // keep programs small and fast
    vals.push_back(out);
    p.steps.push_back(std::move(f));
    p.kinds.push_back(k.name);
  }
  // Inputs a div_guard step reads (found by poisoning each input in a trial run).
  bool guarded = false;
  for (const auto& n : p.kinds) guarded = guarded || n == "div_guard";
  for (int i = 0; guarded && i < p.num_inputs; ++i) {
    Vals trial = placed(p, 0);
    if (!trial[static_cast<size_t>(i)].is_floating_point() || trial[static_cast<size_t>(i)].numel() == 0) continue;
    trial[static_cast<size_t>(i)].as_strided({1}, {1}).fill_(12345.0);  // its first element
    try {
      run_steps(p, trial);
    } catch (const Error&) {
      p.poison.push_back(i);
    }
  }
  for (const auto& n : p.kinds) ++used[n];
  const int n = static_cast<int>(vals.size());
  p.outputs.push_back(n - 1);
  for (int extra = static_cast<int>(r.below(3)); extra > 0; --extra) p.outputs.push_back(static_cast<int>(r.below(n)));
  return p;
}

/// Bitwise equality with dtype, sizes and strides; explains the first difference.
std::string differs(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) return str_cat("dtype ", dtype_name(a.dtype()), " vs ", dtype_name(b.dtype()));
  if (!a.sizes().equals(b.sizes())) return str_cat("sizes ", a.sizes(), " vs ", b.sizes());
  if (!a.strides().equals(b.strides())) return str_cat("strides ", a.strides(), " vs ", b.strides());
  Tensor x = a.contiguous(), y = b.contiguous();
  if (x.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) != 0) {
    double worst = is_floating_point(a.dtype())
                       ? amax(abs(x.to(kFloat64) - y.to(kFloat64))).item<double>()
                       : -1.0;
    return str_cat("values differ (max abs diff ", worst, ")");
  }
  return "";
}

std::string describe(const Program& p, uint64_t seed) {
  std::ostringstream os;
  os << "seed " << seed << ", inputs:";
  for (const Tensor& t : p.inputs) os << " " << dtype_name(t.dtype()) << t.sizes() << (t.is_contiguous() ? "" : "(strided)");
  os << "\nsteps:";
  for (const auto& k : p.kinds) os << " " << k;
  return os.str();
}

int num_programs() {
  const char* env = std::getenv("TANDEM_RANDOM_PROGRAMS");
  return env ? std::atoi(env) : 400;
}

double fuzz_seconds() {
  const char* env = std::getenv("TANDEM_RANDOM_SECONDS");
  return env ? std::atof(env) : 0.0;
}

uint64_t base_seed() {
  if (const char* env = std::getenv("TANDEM_RANDOM_SEED")) return std::strtoull(env, nullptr, 10);
  if (fuzz_seconds() > 0)
    return static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ULL;
  return 1000;  // the fixed slice ./run test runs
}

}  // namespace

TEST(RandomPrograms, EagerAndCompiledAgreeBitwise) {
  NoGradGuard no_grad;
  const auto kinds = op_kinds();
  ASSERT_GE(kinds.size(), 40u);
  std::map<std::string, int> used;
  std::set<std::string> graph_ops;
  const int n = num_programs();
  const double seconds = fuzz_seconds();
  const uint64_t first_seed = base_seed();
  if (seconds > 0) std::cout << "[random programs] fuzzing for " << seconds << " s from seed " << first_seed << "\n";
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int compiled_programs = 0;
  for (int k = 0; seconds > 0 ? elapsed() < seconds : k < n; ++k) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(k);
    Program p = generate(seed, kinds, used);
    SCOPED_TRACE(describe(p, seed));
    const uint64_t run_seed = seed * 7919;

    auto cf = compile([&p](const Vals& in) { return run_steps(p, in); });
    for (int call = 0; call < 3; ++call) {  // 0: capture (runs eagerly), 1, 2: the cached program
      // Call 1 sees the capture's offsets; call 2 the same sizes and strides at others.
      const int64_t offset = call == 2 ? 5 : 0;
      Vals eager_in = placed(p, offset);
      manual_seed(run_seed);
      Vals eager = run_steps(p, eager_in);
      // The RNG state after the eager call: the compiled calls must advance it the same way.
      Tensor eager_next = rand({1});
      Vals in = placed(p, offset);
      manual_seed(run_seed);
      Vals got = (*cf)(in);
      Tensor next = rand({1});
      ASSERT_EQ(got.size(), eager.size());
      for (size_t o = 0; o < got.size(); ++o) {
        std::string d = differs(eager[o], got[o]);
        ASSERT_EQ(d, "") << "call " << call << ", output " << o;
        // Aliasing: which input (object or storage) and which earlier output each output
        // shares, exactly as eager.
        for (size_t i = 0; i < in.size(); ++i) {
          ASSERT_EQ(got[o].impl() == in[i].impl(), eager[o].impl() == eager_in[i].impl())
              << "call " << call << ", output " << o << " is (or is not) input " << i;
          ASSERT_EQ(got[o].storage().get() == in[i].storage().get(),
                    eager[o].storage().get() == eager_in[i].storage().get())
              << "call " << call << ", output " << o << " shares (or not) input " << i << "'s storage";
        }
        for (size_t j = 0; j < o; ++j)
          ASSERT_EQ(got[o].storage().get() == got[j].storage().get(),
                    eager[o].storage().get() == eager[j].storage().get())
              << "call " << call << ", outputs " << j << " and " << o << " share (or not) storage";
      }
      for (size_t i = 0; i < in.size(); ++i) {
        std::string d = differs(eager_in[i], in[i]);
        ASSERT_EQ(d, "") << "call " << call << ", mutated input " << i;
      }
      ASSERT_EQ(differs(eager_next, next), "") << "call " << call << " left the generator in another state";
    }
    ASSERT_EQ(cf->captures(), 1);
    ASSERT_EQ(cf->compiled_calls(), 2) << "the later calls did not run the compiled program";
    ASSERT_TRUE(cf->warnings().empty()) << cf->warnings()[0];
    // Poisoned inputs: the guarded division raises in eager mode; compiled must raise the
    // same error type (not skip the unused division).
    for (int i : p.poison) {
      auto poisoned = [&] {
        Vals in = placed(p, 2);
        in[static_cast<size_t>(i)].as_strided({1}, {1}).fill_(12345.0);
        return in;
      };
      std::string eager_error, compiled_error;
      try {
        run_steps(p, poisoned());
      } catch (const Error& e) {
        eager_error = typeid(e).name();
      }
      try {
        (*cf)(poisoned());
      } catch (const Error& e) {
        compiled_error = typeid(e).name();
      }
      ASSERT_FALSE(eager_error.empty()) << "poisoning input " << i << " did not make eager raise";
      ASSERT_EQ(compiled_error, eager_error) << "poisoned input " << i;
    }
    ++compiled_programs;
    for (const auto& node : cf->last_executor()->graph().nodes()) graph_ops.insert(node.op->name);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ostringstream os;
  for (const auto& [name, count] : used) os << " " << name << "=" << count;
  std::cout << "[random programs] " << compiled_programs << " programs in " << secs << " s; step kinds used:" << os.str()
            << "\n[random programs] " << graph_ops.size() << " distinct ops in the compiled graphs:";
  for (const auto& o : graph_ops) std::cout << " " << o;
  std::cout << "\n";
  // Every kind was drawn, and the graphs cover well over 25 distinct ops (not asserted
  // when replaying a few seeds: TANDEM_RANDOM_PROGRAMS=1 TANDEM_RANDOM_SEED=S).
  if (compiled_programs >= 200) {
    EXPECT_EQ(used.size(), kinds.size());
    EXPECT_GE(graph_ops.size(), 30u);
  }
}

// Compiled training on the same random programs: the inputs require grad (each enters the
// program through `+ 0.0`, so in-place steps write a non-leaf as eager allows), the loss
// weighs every differentiable output by fixed random weights, and the gradients of the
// inputs from the compiled forward + backward programs must equal eager's byte for byte.
// When eager's backward raises, the compiled call must raise the same error type.
TEST(RandomPrograms, GradientsEqualEagerBitwise) {
  const auto kinds = op_kinds();
  std::map<std::string, int> used;
  const int n = std::max(1, num_programs() / 2);
  const double seconds = fuzz_seconds();
  const uint64_t first_seed = base_seed() + 500000;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int trained = 0, raised = 0, compiled_both = 0;
  for (int k = 0; seconds > 0 ? elapsed() < seconds / 2 : k < n; ++k) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(k);
    Program p;
    {
      NoGradGuard ng;
      p = generate(seed, kinds, used);
    }
    SCOPED_TRACE(describe(p, seed));
    auto body = [&p](const Vals& in) {
      Vals shifted;
      for (const Tensor& t : in) shifted.push_back(t.requires_grad() ? t + 0.0 : t);
      return run_steps(p, shifted);
    };
    auto cf = compile(body);
    // One call: the loss and the input gradients (or the error's type).
    auto call = [&](bool compiled, Vals& grads, std::string& error) {
      NoGradGuard outer;
      Vals in = placed(p, 0);
      for (Tensor& t : in) {
        t = t.detach();
        if (is_floating_point(t.dtype())) t.requires_grad_();
      }
      EnableGradGuard eg;
      manual_seed(seed * 31);
      try {
        Vals out = compiled ? (*cf)(in) : body(in);
        Tensor loss;
        for (size_t o = 0; o < out.size(); ++o) {
          if (!out[o].requires_grad()) continue;
          Tensor w;
          {
            NoGradGuard ng;
            manual_seed(seed * 131 + o);
            w = randn(out[o].sizes(), out[o].dtype());
          }
          Tensor term = (out[o] * w).sum().to(kFloat64);
          loss = loss.defined() ? loss + term : term;
        }
        if (!loss.defined()) return false;
        loss.backward();
      } catch (const Error& e) {
        error = typeid(e).name();
        return true;
      }
      for (const Tensor& t : in) grads.push_back(t.grad());
      return true;
    };
    bool any = false;
    for (int c = 0; c < 3; ++c) {  // 0: capture (eager with the backward traced), 1, 2: programs
      Vals eg, cg;
      std::string ee, ce;
      any = call(false, eg, ee);
      if (!any) break;
      ASSERT_TRUE(call(true, cg, ce));
      ASSERT_EQ(ce, ee) << "call " << c << ": eager raised '" << ee << "', compiled '" << ce << "'";
      if (!ee.empty()) {
        ++raised;
        break;
      }
      ASSERT_EQ(cg.size(), eg.size());
      for (size_t i = 0; i < eg.size(); ++i) {
        ASSERT_EQ(cg[i].defined(), eg[i].defined()) << "call " << c << ", gradient of input " << i;
        if (eg[i].defined()) {
          ASSERT_EQ(differs(eg[i], cg[i]), "") << "call " << c << ", gradient of input " << i;
        }
      }
    }
    if (any) ++trained;
    if (cf->compiled_calls() == 2) ++compiled_both;
  }
  std::cout << "[random programs] gradients of " << trained << " programs (" << raised
            << " raised in both modes; " << compiled_both << " ran the compiled forward and backward programs twice) in "
            << elapsed() << " s\n";
  EXPECT_GT(trained, n / 4);
  EXPECT_GT(compiled_both, trained / 2);  // most ran compiled, not through the eager fallback
}

// The whole step compiled on the same random programs: the function itself runs the
// backward of a weighted loss of its outputs (the floating inputs are leaves it reads by
// reference, as a training step reads its parameters), so the program holds forward and
// backward and rebinds the leaves' .grad. Outputs, loss and every leaf's .grad must equal
// eager's byte for byte; when eager raises, the compiled call raises the same error type.
TEST(RandomPrograms, WholeStepWithBackwardInsideEqualsEagerBitwise) {
  const auto kinds = op_kinds();
  std::map<std::string, int> used;
  const int n = std::max(1, num_programs() / 2);
  const double seconds = fuzz_seconds();
  const uint64_t first_seed = base_seed() + 900000;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int stepped = 0, replayed = 0;
  for (int k = 0; seconds > 0 ? elapsed() < seconds / 2 : k < n; ++k) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(k);
    Program p;
    {
      NoGradGuard ng;
      p = generate(seed, kinds, used);
    }
    SCOPED_TRACE(describe(p, seed));
    // Per mode: the leaves (floating inputs requiring grad; undefined for the others).
    Vals leaves[2];
    for (Vals& l : leaves) {
      NoGradGuard ng;
      Vals in = placed(p, 0);
      for (const Tensor& t : in) l.push_back(is_floating_point(t.dtype()) ? t.detach().requires_grad_() : Tensor());
    }
    auto step = [&p, seed](const Vals& mine, const Vals& in) {
      Vals shifted;
      for (size_t i = 0; i < in.size(); ++i) shifted.push_back(mine[i].defined() ? mine[i] + 0.0 : in[i]);
      Vals out = run_steps(p, shifted);
      Tensor loss;
      for (size_t o = 0; o < out.size(); ++o) {
        if (!out[o].requires_grad()) continue;
        Tensor w = randn(out[o].sizes(), out[o].dtype());  // drawn from the generator the caller seeded
        Tensor term = (out[o] * w).sum().to(kFloat64);
        loss = loss.defined() ? loss + term : term;
      }
      if (loss.defined()) loss.backward();
      Vals res;
      for (const Tensor& o : out) res.push_back(o.detach());
      res.push_back(loss.defined() ? loss.detach() : zeros({}, kFloat64));
      return res;
    };
    auto cf = compile([&](const Vals& in) { return step(leaves[1], in); });
    bool done = false;
    for (int c = 0; c < 3 && !done; ++c) {  // 0: capture, 1, 2: the program
      Vals res[2];
      std::string error[2];
      for (int mode = 0; mode < 2; ++mode) {
        for (Tensor& l : leaves[mode])
          if (l.defined()) l.set_grad(Tensor());
        Vals in;
        {
          NoGradGuard ng;
          in = placed(p, 0);
          for (Tensor& t : in) t = t.detach();
        }
        manual_seed(seed * 31);
        try {
          res[mode] = mode ? (*cf)(in) : step(leaves[0], in);
        } catch (const Error& e) {
          error[mode] = typeid(e).name();
        }
      }
      ASSERT_EQ(error[1], error[0]) << "call " << c;
      if (!error[0].empty()) {
        done = true;
        break;
      }
      ASSERT_EQ(res[0].size(), res[1].size());
      for (size_t o = 0; o < res[0].size(); ++o) ASSERT_EQ(differs(res[0][o], res[1][o]), "") << "call " << c << ", output " << o;
      for (size_t i = 0; i < leaves[0].size(); ++i) {
        if (!leaves[0][i].defined()) continue;
        const Tensor &ge = leaves[0][i].grad(), &gc = leaves[1][i].grad();
        ASSERT_EQ(ge.defined(), gc.defined()) << "call " << c << ", .grad of leaf " << i;
        if (ge.defined()) {
          ASSERT_EQ(differs(ge, gc), "") << "call " << c << ", .grad of leaf " << i;
        }
      }
    }
    ++stepped;
    if (cf->compiled_calls() == 2) ++replayed;
  }
  std::cout << "[random programs] whole steps of " << stepped << " programs (" << replayed
            << " replayed the program twice) in " << elapsed() << " s\n";
  EXPECT_GT(replayed, stepped / 2);  // most ran compiled, not through the eager fallback
}
