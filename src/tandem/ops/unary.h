#pragma once
// Unary elementwise ops (neg, exp, sigmoid, clamp, isnan, ...), following PyTorch 1.13's
// CPU semantics: output shape = input shape; output dtype as PyTorch's (math functions
// lift bool/integer inputs to the default float dtype, abs/neg keep integers, predicates
// return bool). Every function here runs through the dispatcher (one registered op each);
// the "_" variants write into their first argument and return it.
//
// Differences from PyTorch 1.13 CPU, all deliberate: float16 inputs are accepted by every
// op that accepts bfloat16 (PyTorch 1.13 CPU lacks many float16 kernels); they compute in
// float32 and round once, as later PyTorch versions do.
#include <optional>
#include <string>

#include "tandem/core/tensor.h"

namespace tandem {

// ---------------------------------------------------------------- sign and magnitude
/// -x (torch.neg). Integers wrap (neg of INT_MIN is INT_MIN, neg of uint8 5 is 251).
/// TypeError for bool ("use logical_not").
Tensor neg(const Tensor& self);
Tensor& neg_(Tensor& self);
/// |x| (torch.abs). Integers keep their dtype and wrap (abs of INT_MIN is INT_MIN);
/// abs(-0.0) is +0.0. TypeError for bool.
Tensor abs(const Tensor& self);
Tensor& abs_(Tensor& self);
/// -1, 0 or 1 with the input's dtype (torch.sign); sign(nan) = 0, bool stays bool.
Tensor sign(const Tensor& self);
Tensor& sign_(Tensor& self);
/// x * x (torch.square). Bool inputs give int64; integers wrap on overflow.
Tensor square(const Tensor& self);
Tensor& square_(Tensor& self);

// ---------------------------------------------------------------- exponential and logarithm
// All of these accept any dtype; bool/integer inputs give the default float dtype
// (float32). The in-place forms raise TypeError on bool/integer tensors ("result type
// float32 can't be cast to the desired output type").
/// e^x (torch.exp).
Tensor exp(const Tensor& self);
Tensor& exp_(Tensor& self);
/// 2^x (torch.exp2).
Tensor exp2(const Tensor& self);
Tensor& exp2_(Tensor& self);
/// e^x - 1, accurate near 0 (torch.expm1).
Tensor expm1(const Tensor& self);
Tensor& expm1_(Tensor& self);
/// Natural logarithm (torch.log): log(0) = -inf, log(x<0) = nan.
Tensor log(const Tensor& self);
Tensor& log_(Tensor& self);
Tensor log2(const Tensor& self);
Tensor& log2_(Tensor& self);
Tensor log10(const Tensor& self);
Tensor& log10_(Tensor& self);
/// log(1 + x), accurate near 0 (torch.log1p).
Tensor log1p(const Tensor& self);
Tensor& log1p_(Tensor& self);
/// Square root (torch.sqrt); nan for negative inputs.
Tensor sqrt(const Tensor& self);
Tensor& sqrt_(Tensor& self);
/// 1 / sqrt(x) (torch.rsqrt).
Tensor rsqrt(const Tensor& self);
Tensor& rsqrt_(Tensor& self);
/// 1 / x (torch.reciprocal); integer inputs give float (1/0 = inf).
Tensor reciprocal(const Tensor& self);
Tensor& reciprocal_(Tensor& self);

// ---------------------------------------------------------------- trigonometric, hyperbolic, special
// Same dtype rules as exp.
Tensor sin(const Tensor& self);
Tensor& sin_(Tensor& self);
Tensor cos(const Tensor& self);
Tensor& cos_(Tensor& self);
Tensor tan(const Tensor& self);
Tensor& tan_(Tensor& self);
Tensor asin(const Tensor& self);
Tensor& asin_(Tensor& self);
Tensor acos(const Tensor& self);
Tensor& acos_(Tensor& self);
Tensor atan(const Tensor& self);
Tensor& atan_(Tensor& self);
Tensor sinh(const Tensor& self);
Tensor& sinh_(Tensor& self);
Tensor cosh(const Tensor& self);
Tensor& cosh_(Tensor& self);
Tensor tanh(const Tensor& self);
Tensor& tanh_(Tensor& self);
/// Error function (torch.erf) and its complement 1 - erf(x) (torch.erfc).
Tensor erf(const Tensor& self);
Tensor& erf_(Tensor& self);
Tensor erfc(const Tensor& self);
Tensor& erfc_(Tensor& self);
/// 1 / (1 + e^-x) (torch.sigmoid).
Tensor sigmoid(const Tensor& self);
Tensor& sigmoid_(Tensor& self);
/// log(z / (1 - z)) (torch.logit) with z = x clamped to [eps, 1 - eps] when eps is
/// given and >= 0 (no clamping otherwise).
Tensor logit(const Tensor& self, std::optional<double> eps = std::nullopt);
Tensor& logit_(Tensor& self, std::optional<double> eps = std::nullopt);

// ---------------------------------------------------------------- activations
/// max(x, 0) (torch.relu); keeps integer dtypes, relu(nan) = nan. TypeError for bool.
Tensor relu(const Tensor& self);
Tensor& relu_(Tensor& self);
/// relu's gradient (aten::threshold_backward): grad_output where self > threshold (or NaN),
/// else 0; broadcasting, PyTorch's type promotion. TypeError for bool. Linear in
/// grad_output, so differentiable again.
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold);
/// min(max(x, 0), 6) (torch.nn.functional.relu6); integers allowed, TypeError for bool.
Tensor relu6(const Tensor& self);
Tensor& relu6_(Tensor& self);
/// x if x > 0 else negative_slope * x (torch.nn.functional.leaky_relu). Floating
/// dtypes only (TypeError otherwise), as every activation below.
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
Tensor& leaky_relu_(Tensor& self, const Scalar& negative_slope = 0.01);
/// scale * x if x > 0 else alpha * scale * (exp(input_scale * x) - 1) (torch.nn.functional.elu).
Tensor elu(const Tensor& self, const Scalar& alpha = 1.0, const Scalar& scale = 1.0, const Scalar& input_scale = 1.0);
Tensor& elu_(Tensor& self, const Scalar& alpha = 1.0, const Scalar& scale = 1.0, const Scalar& input_scale = 1.0);
/// elu with PyTorch's fixed alpha = 1.6732632423543772 and scale = 1.0507009873554805 (torch.selu).
Tensor selu(const Tensor& self);
Tensor& selu_(Tensor& self);
/// x * Phi(x) (torch.nn.functional.gelu); approximate is "none" (erf form) or "tanh".
/// ValueError for any other string.
Tensor gelu(const Tensor& self, const std::string& approximate = "none");
Tensor& gelu_(Tensor& self, const std::string& approximate = "none");
/// x * sigmoid(x) (torch.nn.functional.silu).
Tensor silu(const Tensor& self);
Tensor& silu_(Tensor& self);
/// x * tanh(softplus(x)) (torch.nn.functional.mish).
Tensor mish(const Tensor& self);
Tensor& mish_(Tensor& self);
/// log(1 + exp(beta * x)) / beta, or x where beta * x > threshold (torch.nn.functional.softplus).
Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);
/// min(max(x + 3, 0), 6) / 6 (torch.nn.functional.hardsigmoid).
Tensor hardsigmoid(const Tensor& self);
Tensor& hardsigmoid_(Tensor& self);
/// x * hardsigmoid(x) (torch.nn.functional.hardswish).
Tensor hardswish(const Tensor& self);
Tensor& hardswish_(Tensor& self);

// ---------------------------------------------------------------- rounding
// Integer inputs are returned unchanged (same dtype); TypeError for bool.
Tensor floor(const Tensor& self);
Tensor& floor_(Tensor& self);
Tensor ceil(const Tensor& self);
Tensor& ceil_(Tensor& self);
/// Rounds half to even (torch.round). With decimals != 0 rounds to that many decimal
/// places (negative: to tens, hundreds, ...) as torch.round(x, decimals=d):
/// nearbyint(x * 10^d) / 10^d computed in the input's float type. TypeError for integer
/// inputs with decimals != 0.
Tensor round(const Tensor& self, int64_t decimals = 0);
Tensor& round_(Tensor& self, int64_t decimals = 0);
Tensor trunc(const Tensor& self);
Tensor& trunc_(Tensor& self);
/// x - trunc(x) (torch.frac). Floating dtypes only (TypeError otherwise).
Tensor frac(const Tensor& self);
Tensor& frac_(Tensor& self);

// ---------------------------------------------------------------- clamping and cleanup
/// min(max(x, min), max) (torch.clamp). The bounds take part in type promotion as
/// Python numbers do (an int tensor clamped with 0.5 gives float32). ValueError when
/// both bounds are missing; TypeError for a bool result or a bound that does not fit
/// the result dtype. NaN inputs stay NaN; if both bounds are given and one is NaN the
/// result is all NaN (a lone NaN bound is ignored, as in PyTorch).
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
/// clamp with tensor bounds that broadcast against self; an undefined Tensor means
/// "no bound" (ValueError when both are undefined). All three take part in type
/// promotion; a NaN bound gives NaN. ShapeError when shapes do not broadcast.
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max);
Tensor& clamp_(Tensor& self, const Tensor& min, const Tensor& max);
/// Aliases of clamp (torch.clip).
Tensor clip(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
Tensor clip(const Tensor& self, const Tensor& min, const Tensor& max);
/// clamp(self, min, nullopt) and clamp(self, nullopt, max) (torch.clamp_min / clamp_max).
Tensor clamp_min(const Tensor& self, const Scalar& min);
Tensor clamp_max(const Tensor& self, const Scalar& max);
/// Replaces NaN by `nan` (default 0), +inf by `posinf` (default the dtype's largest
/// finite value) and -inf by `neginf` (default the lowest finite value)
/// (torch.nan_to_num). Values are converted to the dtype (may become inf). Integer and
/// bool tensors are returned unchanged.
Tensor nan_to_num(const Tensor& self, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt);
Tensor& nan_to_num_(Tensor& self, std::optional<double> nan = std::nullopt,
                    std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt);

// ---------------------------------------------------------------- predicates and logical
/// Bool tensors: x is NaN / +-inf / finite (torch.isnan, isinf, isfinite). Any dtype;
/// integers are never NaN or inf.
Tensor isnan(const Tensor& self);
Tensor isinf(const Tensor& self);
Tensor isfinite(const Tensor& self);
/// x == 0 as bool, for any dtype (torch.logical_not; NaN counts as true, so gives false).
/// The in-place form writes 0/1 in self's dtype.
Tensor logical_not(const Tensor& self);
Tensor& logical_not_(Tensor& self);
/// ~x for integers, !x for bool (torch.bitwise_not). TypeError for floating dtypes.
Tensor bitwise_not(const Tensor& self);
Tensor& bitwise_not_(Tensor& self);

/// -x (torch.neg).
Tensor operator-(const Tensor& self);

}  // namespace tandem
