// Unary activations (relu ... hardswish) and clamping (clamp with scalar or tensor
// bounds). Same pattern as unary.cpp: one OpDef per op, kernels from unary_kernel.
#include <string>

#include "tandem/ops/unary.h"
#include "tandem/ops/unary_impl.h"

namespace tandem {

using namespace unary_detail;


// ---------------------------------------------------------------- backward rules
// PyTorch's derivatives (1.13) written with tandem ops. x: saved input, y: saved output.
namespace {
constexpr double kSeluAlphaG = 1.6732632423543772848170429916717;
constexpr double kSeluScaleG = 1.0507009873554804934193349852946;

Grads relu_backward(BackwardContext& c) {
  // threshold_backward(grad, result, 0): the gradient passes where the result is not <= 0.
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) { return threshold_backward(g, c.outputs[0], 0); });
}
Grads relu6_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    const Tensor& x = c.inputs[0];
    return where(logical_and(x > Scalar(0), x < Scalar(6)), g, Scalar(0));
  });
}
Grads leaky_relu_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    return where(c.inputs[0] > Scalar(0), g, g * c.attrs.scalar(0));
  });
}
// elu: scale for x > 0, else input_scale * alpha * scale * exp(input_scale * x).
Tensor elu_grad(const Tensor& g, const Tensor& x, double alpha, double scale, double input_scale) {
  Tensor neg_part = g * (exp(x * Scalar(input_scale)) * Scalar(input_scale * alpha * scale));
  return where(x > Scalar(0), g * Scalar(scale), neg_part);
}
Grads elu_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    return elu_grad(g, c.inputs[0], c.attrs.f(0), c.attrs.f(1), c.attrs.f(2));
  });
}
Grads selu_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    return elu_grad(g, c.inputs[0], kSeluAlphaG, kSeluScaleG, 1.0);
  });
}
Grads gelu_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) -> Tensor {
    const Tensor& x = c.inputs[0];
    if (c.attrs.str(0) == "tanh") {
      constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
      constexpr double kKappa = 0.044715;
      Tensor x_sq = x * x;
      Tensor t = tanh((x + x_sq * x * Scalar(kKappa)) * Scalar(kBeta));
      Tensor left = (t + Scalar(1)) * Scalar(0.5);
      Tensor right = x * Scalar(0.5) * (Scalar(1) - t * t) * ((x_sq * Scalar(3 * kKappa) + Scalar(1)) * Scalar(kBeta));
      return g * (left + right);
    }
    // Phi(x) + x phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
    Tensor cdf = (erf(x * Scalar(0.7071067811865476)) + Scalar(1)) * Scalar(0.5);
    Tensor pdf = exp(x * x * Scalar(-0.5)) * Scalar(0.3989422804014327);
    return g * (cdf + x * pdf);
  });
}
Grads silu_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    const Tensor& x = c.inputs[0];
    Tensor s = sigmoid(x);
    return g * (s * (x * (Scalar(1) - s) + Scalar(1)));
  });
}
Grads mish_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    const Tensor& x = c.inputs[0];
    Tensor t = tanh(softplus(x));
    return g * (t + x * sigmoid(x) * (Scalar(1) - t * t));
  });
}
Grads softplus_backward(BackwardContext& c) {
  // Linear above the threshold (z = beta x > threshold), else sigmoid(beta x).
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    Tensor z = c.inputs[0] * c.attrs.scalar(0);
    return where(z > c.attrs.scalar(1), g, g * sigmoid(z));
  });
}
Grads hardsigmoid_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    const Tensor& x = c.inputs[0];
    return where(logical_and(x > Scalar(-3), x < Scalar(3)), g * Scalar(1.0 / 6.0), Scalar(0));
  });
}
Grads hardswish_backward(BackwardContext& c) {
  // 0 below -3, x / 3 + 1/2 on [-3, 3], 1 above (PyTorch's boundary choices).
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    const Tensor& x = c.inputs[0];
    Tensor mid = where(x <= Scalar(3), g * (x * Scalar(1.0 / 3.0) + Scalar(0.5)), g);
    return where(x < Scalar(-3), Scalar(0), mid);
  });
}
// clamp: the gradient passes where min <= x <= max.
Grads clamp_backward(BackwardContext& c) {
  return unary_grad(c, [](BackwardContext& c, const Tensor& g) {
    const Tensor& x = c.inputs[0];
    const auto lo = c.attrs.opt_scalar(0), hi = c.attrs.opt_scalar(1);
    Tensor pass;
    if (lo) pass = x >= *lo;
    if (hi) pass = pass.defined() ? logical_and(pass, x <= *hi) : x <= *hi;
    return where(pass, g, Scalar(0));
  });
}
// clamp with tensor bounds (PyTorch's clamp_backward_min_max): self where it lies inside,
// min where self < min (and min < max), max where self > max (or max < min, which wins).
Grads clamp_tensor_backward(BackwardContext& c) {
  const Tensor& g = c.grad_outputs[0];
  const Tensor &x = c.inputs[0], &lo = c.inputs[1], &hi = c.inputs[2];
  Grads r(3);
  if (!g.defined()) return r;
  if (lo.defined() && hi.defined()) {
    if (c.needs_input_grad[0])
      r[0] = ops::reduce_grad(where(logical_and(x >= lo, x <= hi), g, Scalar(0)), c.input_metas[0]);
    if (c.needs_input_grad[1])
      r[1] = ops::reduce_grad(where(logical_and(x < lo, lo < hi), g, Scalar(0)), c.input_metas[1]);
    if (c.needs_input_grad[2])
      r[2] = ops::reduce_grad(where(logical_or(x > hi, hi < lo), g, Scalar(0)), c.input_metas[2]);
  } else if (lo.defined()) {
    if (c.needs_input_grad[0]) r[0] = ops::reduce_grad(where(x >= lo, g, Scalar(0)), c.input_metas[0]);
    if (c.needs_input_grad[1]) r[1] = ops::reduce_grad(where(x < lo, g, Scalar(0)), c.input_metas[1]);
  } else {
    if (c.needs_input_grad[0]) r[0] = ops::reduce_grad(where(x <= hi, g, Scalar(0)), c.input_metas[0]);
    if (c.needs_input_grad[2]) r[2] = ops::reduce_grad(where(x > hi, g, Scalar(0)), c.input_metas[2]);
  }
  return r;
}
}  // namespace

// ---------------------------------------------------------------- relu family
TANDEM_REGISTER_OP(relu) {
  OpDef d = unary_def("relu", Promotion::Default);
  d.meta = numeric_meta;
  d.cpu_kernel = [](KernelContext& c) {
    numeric_kernel(c, [](auto x) {
      using M = decltype(x);
      if constexpr (std::is_unsigned_v<M>) return x;
      else return x < M(0) ? M(0) : x;  // NaN and -0.0 pass through, as PyTorch
    });
  };
  d.backward = relu_backward;
  d.save_outputs = 1;
  return d;
}

// threshold_backward(grad_output, self; threshold) = self <= threshold ? 0 : grad_output,
// one elementwise pass (relu's gradient). Linear in grad_output; no gradient for self.
TANDEM_REGISTER_OP(threshold_backward) {
  OpDef d;
  d.name = "threshold_backward";
  d.pointwise = true;
  // threshold_backward_ writes the result over grad_output: compiled mode's inplace_reuse
  // uses it when the gradient dies here (a ReLU's backward then allocates nothing).
  d.inplace_variant = true;
  d.inputs = {{"grad_output"}, {"self"}};
  d.attrs = {{"threshold", Scalar(0)}};
  d.promotion = Promotion::Default;
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.common_dtype != DType::Bool, TypeError, c.op, "got bool tensors, expected a numeric dtype");
    ops::elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Scalar& th = c.attrs.scalar(0);
    TANDEM_DISPATCH_NUMERIC_TYPES(out.dtype(), c.op, [&] {
      using M = kernels::opmath_t<scalar_t>;
      const M t = th.to<M>();
      kernels::binary_kernel<scalar_t, scalar_t>(out, c.inputs[0], c.inputs[1],
                                                 [t](M g, M y) { return y <= t ? M(0) : g; });
    });
  };
  d.backward = [](BackwardContext& c) {
    Grads r(2);
    if (c.grad_outputs[0].defined() && c.needs_input_grad[0])
      r[0] = threshold_backward(c.grad_outputs[0], c.inputs[1], c.attrs.scalar(0));
    return r;
  };
  d.save_inputs = 0b10;
  return d;
}

TANDEM_REGISTER_OP(relu6) {
  OpDef d = unary_def("relu6", Promotion::Default);
  d.meta = numeric_meta;
  d.cpu_kernel = [](KernelContext& c) {
    numeric_kernel(c, [](auto x) {
      using M = decltype(x);
      M t = x;
      if constexpr (!std::is_unsigned_v<M>) t = t < M(0) ? M(0) : t;
      return M(6) < t ? M(6) : t;
    });
  };
  d.backward = relu6_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(leaky_relu) {
  OpDef d = unary_def("leaky_relu", Promotion::Default);
  d.attrs = {{"negative_slope", Scalar(0.01)}};
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) {
    const double slope = c.attrs.f(0);
    floating_kernel_p(c, [&]<typename M>() {
      const M s = static_cast<M>(slope);
      return [s](M x) { return x > M(0) ? x : x * s; };
    });
  };
  d.backward = leaky_relu_backward;
  d.save_inputs = 1;
  return d;
}

namespace {
// elu(x) = scale * x for x > 0, else alpha * scale * (exp(input_scale * x) - 1).
void elu_kernel(KernelContext& c, double alpha, double scale, double input_scale) {
  floating_kernel_p(c, [&]<typename M>() {
    const M pos = static_cast<M>(scale), neg = static_cast<M>(alpha * scale), in = static_cast<M>(input_scale);
    return [pos, neg, in](M x) {
      const M p = x * pos;
      const M n = (vexp(x * in) - M(1)) * neg;  // exp - 1 as PyTorch (elu(-0.0) = +0.0)
      return x > M(0) ? p : n;
    };
  });
}
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
}  // namespace

TANDEM_REGISTER_OP(elu) {
  OpDef d = unary_def("elu", Promotion::Default);
  d.attrs = {{"alpha", Scalar(1.0)}, {"scale", Scalar(1.0)}, {"input_scale", Scalar(1.0)}};
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) { elu_kernel(c, c.attrs.f(0), c.attrs.f(1), c.attrs.f(2)); };
  d.backward = elu_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(selu) {
  OpDef d = unary_def("selu", Promotion::Default);
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) { elu_kernel(c, kSeluAlpha, kSeluScale, 1.0); };
  d.backward = selu_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(gelu) {
  OpDef d = unary_def("gelu", Promotion::Default);
  d.attrs = {{"approximate", std::string("none")}};
  d.meta = [](MetaContext& c) {
    const std::string& a = c.attrs.str(0);
    TANDEM_CHECK(a == "none" || a == "tanh", ValueError, c.op, "got approximate='", a,
                 "', expected 'none' or 'tanh'");
    floating_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    if (c.attrs.str(0) == "tanh") {
      // 0.5 x (1 + tanh(u)) = x sigmoid(2u): no cancellation for negative x.
      floating_kernel(c, [](auto x) {
        using M = decltype(x);
        const M u2 = M(2 * 0.7978845608028654) * (x + M(0.044715) * x * x * x);  // 2 sqrt(2/pi) (x + 0.044715 x^3)
        return x / (M(1) + vexp(-u2));
      });
    } else {
      floating_kernel(c, [](auto x) {
        using M = decltype(x);
        return x * M(0.5) * verf_plus1(x * M(0.7071067811865476));  // x Phi(x), Phi via erf(x / sqrt(2))
      });
    }
  };
  d.backward = gelu_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(silu) {
  OpDef d = unary_def("silu", Promotion::Default);
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) {
    floating_kernel(c, [](auto x) { return x / (decltype(x)(1) + vexp(-x)); });
  };
  d.backward = silu_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(mish) {
  OpDef d = unary_def("mish", Promotion::Default);
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) {
    // tanh(log(1 + n)) = n (n + 2) / (n (n + 2) + 2) with n = e^x; x itself beyond 20,
    // where that is 1 in float and n (n + 2) could overflow.
    floating_kernel(c, [](auto x) {
      using M = decltype(x);
      const M n = vexp(x);
      const M q = n * (n + M(2));
      const M y = x * (q / (q + M(2)));
      return x > M(20) ? x : y;
    });
  };
  d.backward = mish_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(softplus) {
  OpDef d = unary_def("softplus", Promotion::Default, /*inplace=*/false);
  d.attrs = {{"beta", Scalar(1)}, {"threshold", Scalar(20)}};
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) {
    const double beta = c.attrs.f(0), threshold = c.attrs.f(1);
    floating_kernel_p(c, [&]<typename M>() {
      const M b = static_cast<M>(beta), t = static_cast<M>(threshold);
      return [b, t](M x) {
        // log(1 + e^z) = max(z, 0) + log(1 + e^-|z|): no overflow, accurate for z << 0.
        const M z = x * b;
        const M y = ((z > M(0) ? z : M(0)) + vlog1p_nonneg(vexp(-std::abs(z)))) / b;
        return z > t ? x : y;
      };
    });
  };
  d.backward = softplus_backward;
  d.save_inputs = 1;
  d.autocast = Autocast::Float32;
  return d;
}

TANDEM_REGISTER_OP(hardsigmoid) {
  OpDef d = unary_def("hardsigmoid", Promotion::Default);
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) {
    floating_kernel(c, [](auto x) {
      using M = decltype(x);
      M t = x + M(3);
      t = t < M(0) ? M(0) : t;
      t = M(6) < t ? M(6) : t;
      return t / M(6);
    });
  };
  d.backward = hardsigmoid_backward;
  d.save_inputs = 1;
  return d;
}

TANDEM_REGISTER_OP(hardswish) {
  OpDef d = unary_def("hardswish", Promotion::Default);
  d.meta = floating_meta;
  d.cpu_kernel = [](KernelContext& c) {
    floating_kernel(c, [](auto x) {
      using M = decltype(x);
      M t = x + M(3);
      t = t < M(0) ? M(0) : t;
      t = M(6) < t ? M(6) : t;
      return x * t / M(6);
    });
  };
  d.backward = hardswish_backward;
  d.save_inputs = 1;
  return d;
}

// ---------------------------------------------------------------- clamp (scalar bounds)
namespace {
MetaRef wrapped_meta(const Scalar& s) {
  MetaRef m;
  m.dtype = s.is_bool() ? kBool : s.is_integral() ? kInt64 : kFloat64;
  m.is_wrapped_number = true;
  return m;
}

// PyTorch converts clamp bounds with an overflow check (c10's checked_convert): a value
// outside the result dtype's range is an error; an unsigned type also accepts negatives
// down to -max (they wrap), and floating types accept +-inf and NaN.
bool bound_fits(const Scalar& s, DType t) {
  if (s.is_bool()) return true;
  if (is_floating_point(t)) {
    if (!s.is_floating_point()) return true;
    double v = s.to_double();
    if (!std::isfinite(v) || t == kFloat64) return true;
    double mx = t == kFloat32   ? static_cast<double>(std::numeric_limits<float>::max())
                : t == kFloat16 ? 65504.0
                                : static_cast<double>(static_cast<float>(BFloat16::from_bits(0x7f7f)));
    return v >= -mx && v <= mx;
  }
  const int64_t v = s.to_int();  // integral result: the bound is an int (a float bound would promote)
  return TANDEM_DISPATCH_INTEGRAL_TYPES(t, "clamp", [&]() -> bool {
    using L = std::numeric_limits<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, int64_t>) return true;
    else if constexpr (std::is_unsigned_v<scalar_t>) return v <= static_cast<int64_t>(L::max()) && v >= -static_cast<int64_t>(L::max());
    else return v >= static_cast<int64_t>(L::lowest()) && v <= static_cast<int64_t>(L::max());
  });
}
}  // namespace

TANDEM_REGISTER_OP(clamp) {
  OpDef d = unary_def("clamp", Promotion::None);  // the bounds take part: meta promotes
  d.attrs = {{"min", std::monostate{}}, {"max", std::monostate{}}};
  d.meta = [](MetaContext& c) {
    const auto lo = c.attrs.opt_scalar(0), hi = c.attrs.opt_scalar(1);
    TANDEM_CHECK(lo || hi, ValueError, c.op, "got min=None and max=None, expected at least one bound");
    SmallVec<MetaRef, 3> metas;
    metas.push_back(c.inputs[0]);
    if (lo) metas.push_back(wrapped_meta(*lo));
    if (hi) metas.push_back(wrapped_meta(*hi));
    const DType t = result_type(metas.ref());
    TANDEM_CHECK(t != kBool, TypeError, c.op, "got a bool input with bool bounds, expected a numeric dtype");
    for (const auto& s : {lo, hi})
      TANDEM_CHECK(!s || bound_fits(*s, t), TypeError, c.op, "bound ", *s, " cannot be converted to type ",
                   dtype_name(t), " without overflow");
    TensorMeta m;
    m.dtype = t;
    m.sizes = c.inputs[0].sizes.vec();
    c.outputs.push_back(std::move(m));
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const auto lo = c.attrs.opt_scalar(0), hi = c.attrs.opt_scalar(1);
    if (is_floating_point(out.dtype()) && lo && hi && (std::isnan(lo->to_double()) || std::isnan(hi->to_double())))
      return kernels::fill_kernel(out, Scalar(std::numeric_limits<double>::quiet_NaN()));
    // The bounds may have promoted the result: convert the input first, then clamp in place.
    const Tensor& src = c.inputs[0];
    Tensor in = src;
    if (src.dtype() != out.dtype()) {
      kernels::copy_kernel(out, src);
      in = out;
    }
    Tensor args[1] = {in};
    KernelContext kc{c.op, ArrayRef<Tensor>(args, 1), c.attrs, c.outputs};
    numeric_kernel_p(kc, [&]<typename M>() {
      // (In unsigned types a negative int bound wraps, as in PyTorch's conversion.)
      const M l = lo ? lo->template to<M>() : M(0), h = hi ? hi->template to<M>() : M(0);
      const bool has_l = lo.has_value(), has_h = hi.has_value();
      return [l, h, has_l, has_h](M x) {
        M t = has_l && x < l ? l : x;  // min(max(x, l), h): NaN x stays NaN
        return has_h && h < t ? h : t;
      };
    });
  };
  d.backward = clamp_backward;
  d.save_inputs = 1;
  return d;
}

// ---------------------------------------------------------------- clamp (tensor bounds)
TANDEM_REGISTER_OP(clamp_tensor) {
  OpDef d = unary_def("clamp_tensor", Promotion::Default);
  d.inputs = {{"self"}, {"min", true, /*optional=*/true}, {"max", true, /*optional=*/true}};
  d.meta = [](MetaContext& c) {
    TANDEM_CHECK(c.inputs[1].defined || c.inputs[2].defined, ValueError, c.op,
                 "got min=None and max=None, expected at least one bound");
    TANDEM_CHECK(c.common_dtype != kBool, TypeError, c.op, "got bool inputs, expected a numeric dtype");
    ops::elementwise_meta(c);
  };
  d.cpu_kernel = [](KernelContext& c) {
    const Tensor& out = c.outputs[0];
    const Tensor &x = c.inputs[0], &lo = c.inputs[1], &hi = c.inputs[2];
    TANDEM_DISPATCH_NUMERIC_TYPES(out.dtype(), c.op, [&] {
      using M = kernels::opmath_t<scalar_t>;
      // A NaN bound gives NaN (unlike the scalar form); a NaN input stays NaN.
      if (lo.defined() && hi.defined()) {
        kernels::ternary_kernel<scalar_t, scalar_t, scalar_t, scalar_t>(out, x, lo, hi, [](M v, M l, M h) {
          if (is_nan(l)) return l;
          if (is_nan(h)) return h;
          M t = v < l ? l : v;
          return h < t ? h : t;
        });
      } else if (lo.defined()) {
        kernels::binary_kernel<scalar_t, scalar_t>(out, x, lo, [](M v, M l) { return is_nan(l) ? l : (v < l ? l : v); });
      } else {
        kernels::binary_kernel<scalar_t, scalar_t>(out, x, hi, [](M v, M h) { return is_nan(h) ? h : (h < v ? h : v); });
      }
    });
  };
  d.backward = clamp_tensor_backward;
  d.save_inputs = 0b111;
  return d;
}

// ---------------------------------------------------------------- functional API
#define TANDEM_UNARY_FN(ident)                                                            \
  Tensor ident(const Tensor& self) { return dispatch1(op_##ident(), {self}); }           \
  Tensor& ident##_(Tensor& self) {                                                        \
    dispatch(*op_##ident().inplace, {self});                                              \
    return self;                                                                          \
  }
TANDEM_UNARY_FN(relu)
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  return dispatch1(op_threshold_backward(), {grad_output, self}, {AttrValue(threshold)});
}
TANDEM_UNARY_FN(relu6)
TANDEM_UNARY_FN(selu)
TANDEM_UNARY_FN(silu)
TANDEM_UNARY_FN(mish)
TANDEM_UNARY_FN(hardsigmoid)
TANDEM_UNARY_FN(hardswish)
#undef TANDEM_UNARY_FN

Tensor leaky_relu(const Tensor& self, const Scalar& slope) { return dispatch1(op_leaky_relu(), {self}, {AttrValue(slope)}); }
Tensor& leaky_relu_(Tensor& self, const Scalar& slope) {
  dispatch(*op_leaky_relu().inplace, {self}, {AttrValue(slope)});
  return self;
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return dispatch1(op_elu(), {self}, {AttrValue(alpha), AttrValue(scale), AttrValue(input_scale)});
}
Tensor& elu_(Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  dispatch(*op_elu().inplace, {self}, {AttrValue(alpha), AttrValue(scale), AttrValue(input_scale)});
  return self;
}
Tensor gelu(const Tensor& self, const std::string& approximate) {
  return dispatch1(op_gelu(), {self}, {AttrValue(approximate)});
}
Tensor& gelu_(Tensor& self, const std::string& approximate) {
  dispatch(*op_gelu().inplace, {self}, {AttrValue(approximate)});
  return self;
}
Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return dispatch1(op_softplus(), {self}, {AttrValue(beta), AttrValue(threshold)});
}

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return dispatch1(op_clamp(), {self}, {opt_attr(min), opt_attr(max)});
}
Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  dispatch(*op_clamp().inplace, {self}, {opt_attr(min), opt_attr(max)});
  return self;
}
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max) {
  return dispatch1(op_clamp_tensor(), {self, min, max});
}
Tensor& clamp_(Tensor& self, const Tensor& min, const Tensor& max) {
  dispatch(*op_clamp_tensor().inplace, {self, min, max});
  return self;
}
Tensor clip(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp(self, min, max);
}
Tensor clip(const Tensor& self, const Tensor& min, const Tensor& max) { return clamp(self, min, max); }
Tensor clamp_min(const Tensor& self, const Scalar& min) { return clamp(self, min, std::nullopt); }
Tensor clamp_max(const Tensor& self, const Scalar& max) { return clamp(self, std::nullopt, max); }

// ---------------------------------------------------------------- Tensor methods
Tensor Tensor::relu() const { return tandem::relu(*this); }
Tensor& Tensor::relu_() { return tandem::relu_(*this); }
Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return tandem::clamp(*this, min, max);
}
Tensor Tensor::clamp(const Tensor& min, const Tensor& max) const { return tandem::clamp(*this, min, max); }
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return tandem::clamp_(*this, min, max);
}
Tensor& Tensor::clamp_(const Tensor& min, const Tensor& max) { return tandem::clamp_(*this, min, max); }
Tensor Tensor::clip(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return tandem::clip(*this, min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return tandem::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return tandem::clamp_max(*this, max); }

}  // namespace tandem
