#!/usr/bin/python3
"""Oracle cases for the pointwise family (ops/pointwise*.cpp): div, floor_divide, remainder,
fmod, pow, maximum/minimum/fmax/fmin, atan2, hypot, comparisons, logical, bitwise, shifts,
where, lerp, addcmul, addcdiv and their in-place variants.

Run: /usr/bin/python3 tests/oracle/gen_pointwise.py  (writes tests/data/oracle/pointwise.json)
"""
import os

import torch

from oracle_lib import CaseWriter, attr, scalar

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "pointwise.json")
torch.manual_seed(1234)
w = CaseWriter()

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I8, U8, I16, I32, I64, B = torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool
NAN, INF = float("nan"), float("inf")
T = torch.tensor


def rnd(*shape, dtype=F32, lo=-5, hi=6, nonzero=False):
    """Small random tensor of `dtype`; integer values in [lo, hi); nonzero avoids 0."""
    if dtype == B:
        return torch.randint(0, 2, shape).bool()
    if dtype.is_floating_point:
        t = torch.randn(shape, dtype=F64) * 3
        if nonzero:
            t = torch.where(t.abs() < 0.25, torch.full_like(t, 0.5), t)
        return t.to(dtype)
    if dtype == U8:
        lo = max(lo, 0)
    t = torch.randint(lo, hi, shape, dtype=I64)
    if nonzero:
        t = torch.where(t == 0, torch.ones_like(t), t)
    return t.to(dtype)


def NONE():
    return attr(None)


# ------------------------------------------------------------------ generic binary suite
def binary_suite(op, fn, attrs=(), dtypes=(F32,), int_ok=True, nonzero_rhs=False, prefix=None, scalar_ok=True):
    """Shapes/layouts/promotion cases shared by every binary op. scalar_ok: the torch op takes a
    Python number as `other` (maximum, atan2, hypot and logical ops take tensors only)."""
    p = prefix or op
    attrs = list(attrs)
    nz = nonzero_rhs
    for dt in dtypes:
        n = str(dt).replace("torch.", "")
        w.add(f"{p}/same_shape/{n}", op, [rnd(2, 3, dtype=dt), rnd(2, 3, dtype=dt, nonzero=nz)], attrs, fn)
        w.add(f"{p}/broadcast_row/{n}", op, [rnd(2, 3, dtype=dt), rnd(3, dtype=dt, nonzero=nz)], attrs, fn)
        w.add(f"{p}/broadcast_both/{n}", op, [rnd(4, 1, 3, dtype=dt), rnd(2, 1, dtype=dt, nonzero=nz)], attrs, fn)
        w.add(f"{p}/zero_dim_rhs/{n}", op, [rnd(2, 3, dtype=dt), rnd(dtype=dt, nonzero=nz)], attrs, fn)
        w.add(f"{p}/zero_dim_lhs/{n}", op, [rnd(dtype=dt), rnd(3, dtype=dt, nonzero=nz)], attrs, fn)
    w.add(f"{p}/both_0d", op, [rnd(), rnd(nonzero=nz)], attrs, fn)
    w.add(f"{p}/transposed_strided", op, [(rnd(3, 4), "transposed"), (rnd(3, 4, nonzero=nz), "strided")], attrs, fn)
    w.add(f"{p}/expanded", op, [(rnd(1, 4), "expanded", (3, 4)), (rnd(3, 1, nonzero=nz), "expanded", (3, 4))], attrs, fn)
    w.add(f"{p}/zero_size", op, [rnd(0, 3), rnd(3, nonzero=nz)], attrs, fn)
    w.add(f"{p}/zero_size_broadcast", op, [rnd(2, 0, 1), rnd(1, 4, nonzero=nz)], attrs, fn)
    w.add(f"{p}/long_row", op, [rnd(67), rnd(67, nonzero=nz)], attrs, fn)  # 4 AVX-512 vectors + a remainder
    w.add(f"{p}/f64_and_f32", op, [rnd(4, dtype=F64), rnd(4, dtype=F32, nonzero=nz)], attrs, fn)
    w.add(f"{p}/f32_dim_and_f64_0d", op, [rnd(4), rnd(dtype=F64, nonzero=nz)], attrs, fn)
    if scalar_ok:
        w.add(f"{p}/float_scalar", op, [rnd(5), scalar(1.75)], attrs, fn)
    w.add(f"{p}/bad_broadcast", op, [rnd(2, 3), rnd(4)], attrs, error="ShapeError")
    if int_ok:
        w.add(f"{p}/int32_and_float64", op, [rnd(5, dtype=I32), rnd(5, dtype=F64, nonzero=nz)], attrs, fn)
        if scalar_ok:
            w.add(f"{p}/int64_and_float_scalar", op, [rnd(5, dtype=I64), scalar(2.5)], attrs, fn)
            w.add(f"{p}/int16_and_int_scalar", op, [rnd(6, dtype=I16), scalar(3)], attrs, fn)
            w.add(f"{p}/half_and_float_scalar", op, [rnd(5, dtype=F16), scalar(1.5)], attrs, fn)
        w.add(f"{p}/uint8_and_int8", op, [rnd(6, dtype=U8, hi=20), rnd(6, dtype=I8, nonzero=nz)], attrs, fn)
        w.add(f"{p}/int8_dim_and_int64_0d", op, [rnd(6, dtype=I8), rnd(dtype=I64, nonzero=nz)], attrs, fn)
        w.add(f"{p}/bool_and_int", op, [rnd(5, dtype=B), rnd(5, dtype=I32, nonzero=nz)], attrs, fn)
        w.add(f"{p}/bf16_and_f32", op, [rnd(5, dtype=BF16), rnd(5, dtype=F32, nonzero=nz)], attrs, fn)
        w.add(f"{p}/half_and_bf16", op, [rnd(5, dtype=F16), rnd(5, dtype=BF16, nonzero=nz)], attrs, fn)


INT_DTYPES = (U8, I8, I16, I32, I64)
ALL_NUM = (F32, F64, F16, BF16) + INT_DTYPES

# ------------------------------------------------------------------ div / floor_divide / remainder / fmod
div_none = lambda a, b: torch.div(a, b)
div_floor = lambda a, b: torch.div(a, b, rounding_mode="floor")
div_trunc = lambda a, b: torch.div(a, b, rounding_mode="trunc")
binary_suite("div", div_none, [NONE()], dtypes=(F32, F64, F16, BF16), nonzero_rhs=True)
binary_suite("div", div_floor, [attr("floor")], dtypes=ALL_NUM, nonzero_rhs=True, prefix="div_floor")
binary_suite("div", div_trunc, [attr("trunc")], dtypes=(F32, I64, I32), nonzero_rhs=True, prefix="div_trunc")
for dt in INT_DTYPES + (B,):
    n = str(dt).replace("torch.", "")
    w.add(f"div/true_int/{n}", "div", [rnd(2, 3, dtype=dt), rnd(3, dtype=dt, nonzero=True)], [NONE()], div_none)
signs_a, signs_b = T([7, -7, 7, -7, 6, -6, 0, 1]), T([2, 2, -2, -2, 3, -3, 5, -5])
for mode, fn in (("floor", div_floor), ("trunc", div_trunc)):
    w.add(f"div_{mode}/signs_int", "div", [signs_a, signs_b], [attr(mode)], fn)
    w.add(f"div_{mode}/signs_float", "div", [signs_a.double(), signs_b.double()], [attr(mode)], fn)
    w.add(f"div_{mode}/fractions", "div", [T([-0.5, 0.5, -3.0, 7.5, -7.5, 1e-30]), T([3.0, -3.0, -1.5, 0.5, 2.5, 3.0])],
          [attr(mode)], fn)
    w.add(f"div_{mode}/float_zero_div", "div", [T([5.0, -5.0, 0.0, NAN]), T([0.0, 0.0, 0.0, 0.0])], [attr(mode)], fn)
    w.add(f"div_{mode}/inf", "div", [T([7.0, INF, -INF, INF, 1.0]), T([INF, 2.0, 2.0, INF, -INF])], [attr(mode)], fn)
    w.add(f"div_{mode}/int_zero_div", "div", [T([5, -5]), T([0, 2])], [attr(mode)], error="ValueError")
    w.add(f"div_{mode}/int_zero_scalar", "div", [T([5, -5], dtype=I32), scalar(0)], [attr(mode)], error="ValueError")
    w.add(f"div_{mode}/bool", "div", [T([True]), T([True])], [attr(mode)], error="TypeError")
    w.add(f"div_{mode}/int8_min_by_minus1", "div", [T([-128, 127], dtype=I8), T([-1, -1], dtype=I8)], [attr(mode)], fn)
    # PyTorch dies of SIGFPE on int32/int64 MIN / -1; tandem wraps like int8 does above.
    w.add(f"div_{mode}/int64_min_by_minus1", "div", [T([-2**63, 5]), T([-1, -1])], [attr(mode)],
          expected=T([-2**63, -5]))
    w.add(f"div_{mode}/int32_min_by_minus1", "div", [T([-2**31], dtype=I32), T([-1], dtype=I32)], [attr(mode)],
          expected=T([-2**31], dtype=I32))
w.add("div/float_zero_div", "div", [T([5.0, -5.0, 0.0, -0.0]), T([0.0, 0.0, 0.0, -0.0])], [NONE()], div_none)
w.add("div/int_zero_div_true", "div", [T([5, -5, 0]), T([0, 0, 0])], [NONE()], div_none)
w.add("div/int_by_float_scalar", "div", [T([5, -5], dtype=I16), scalar(2.5)], [NONE()], div_none)
w.add("div/scalar_int_zero_size", "div", [torch.zeros(0, dtype=I64), scalar(0)], [attr("floor")],
      lambda a, b: torch.div(a, b, rounding_mode="floor"))
w.add("div/bad_mode", "div", [rnd(3), rnd(3)], [attr("round")], error="ValueError")
w.add("div/int64_extremes_floor", "div", [T([2**62, -2**62, 2**63 - 1, -2**63]), T([3, 3, -7, 7])], [attr("floor")],
      div_floor)
w.add("div_/float", "div_", [rnd(2, 3), rnd(3, nonzero=True)], [NONE()], lambda a, b: a.clone().div_(b))
w.add("div_/int_self_true_div", "div_", [T([1, 2]), T([1, -2])], [NONE()], error="TypeError")
w.add("div_/int_self_floor", "div_", [T([1, 2, -7]), T([1, -2, 2])], [attr("floor")],
      lambda a, b: a.clone().div_(b, rounding_mode="floor"))
w.add("div_/float_self_int_other", "div_", [T([1.0, 2.0]), T([3, -4])], [NONE()], lambda a, b: a.clone().div_(b))
w.add("div_/broadcast_changes_shape", "div_", [rnd(3), rnd(2, 3, nonzero=True)], [NONE()], error="ShapeError")

binary_suite("floor_divide", torch.floor_divide, dtypes=(F32, I64, I8, BF16), nonzero_rhs=True)
w.add("floor_divide/signs_int", "floor_divide", [signs_a, signs_b], [], torch.floor_divide)
w.add("floor_divide/signs_float", "floor_divide", [signs_a.float(), signs_b.float()], [], torch.floor_divide)
w.add("floor_divide/float_zero", "floor_divide", [T([5.0, -5.0, 0.0]), T([0.0, 0.0, 0.0])], [], torch.floor_divide)
w.add("floor_divide/uint8_by_int64_neg", "floor_divide", [T([5, 7], dtype=U8), T([-1, -2])], [], torch.floor_divide)
w.add("floor_divide/half", "floor_divide", [T([5.5, -5.5, 3.0], dtype=F16), T([2.0, 2.0, -0.5], dtype=F16)], [],
      torch.floor_divide)
w.add("floor_divide/int_zero", "floor_divide", [T([5, -5]), scalar(0)], [], error="ValueError")
w.add("floor_divide/bool", "floor_divide", [T([True]), T([True])], [], error="TypeError")
w.add("floor_divide_/int", "floor_divide_", [T([7, -7]), scalar(2)], [], lambda a, b: a.clone().floor_divide_(b))

for op, fn in (("remainder", torch.remainder), ("fmod", torch.fmod)):
    binary_suite(op, fn, dtypes=(F32, F64, I64, I32, U8, F16, BF16), nonzero_rhs=True)
    w.add(f"{op}/signs_int", op, [signs_a, signs_b], [], fn)
    w.add(f"{op}/signs_int8", op, [signs_a.to(I8), signs_b.to(I8)], [], fn)
    w.add(f"{op}/signs_float", op, [signs_a.float(), signs_b.float()], [], fn)
    w.add(f"{op}/fractions", op, [T([5.5, -5.5, 5.5, -5.5, -0.0, 0.0]), T([2.0, 2.0, -2.0, -2.0, 3.0, -3.0])], [], fn)
    w.add(f"{op}/nan_inf", op, [T([5.0, -5.0, 5.0, INF, NAN, 1.0, 4.0]), T([INF, INF, -INF, 2.0, 1.0, NAN, 0.0])], [], fn)
    w.add(f"{op}/int_zero", op, [T([5, -5]), T([2, 0])], [], error="ValueError")
    w.add(f"{op}/int_zero_broadcast", op, [T([[5], [6]]), T([3, 0, 1])], [], error="ValueError")
    w.add(f"{op}/bool", op, [T([True]), T([False])], [], error="TypeError")
    w.add(f"{op}/int8_min_by_minus1", op, [T([-128], dtype=I8), T([-1], dtype=I8)], [], fn)
    w.add(f"{op}/int64_min_by_minus1", op, [T([-2**63]), T([-1])], [], expected=T([0]))
    w.add(f"{op}/int_scalar", op, [T([5, -5, 7]), scalar(3)], [], fn)
    w.add(f"{op}/int_by_float_scalar", op, [T([5, -5, 7]), scalar(2.5)], [], fn)
    w.add(f"{op}_/int", f"{op}_", [T([5, -5, 7]), T([3, 3, -3])], [], lambda a, b, fn=fn: getattr(a.clone(), fn.__name__ + "_")(b))
    w.add(f"{op}_/int_self_float_other", f"{op}_", [T([5, -5]), scalar(2.5)], [], error="TypeError")
w.add("remainder/scalar_lhs", "remainder", [scalar(3), T([5, -5, 2])], [], lambda a, b: torch.remainder(a, b))
w.add("remainder/uint8", "remainder", [T([5, 250], dtype=U8), T([3, 7], dtype=U8)], [], torch.remainder)

# ------------------------------------------------------------------ pow
binary_suite("pow", torch.pow, dtypes=(F32, F64))
w.add("pow/float_tensor_tensor", "pow", [T([0.5, 2.0, 3.0, 4.0]).repeat(3), T([2.0, -1.5, 0.0, 0.25]).repeat(3)], [], torch.pow)
w.add("pow/int_tensor_tensor", "pow", [T([2, 3, -2, 0, 1, -1, 5]), T([2, 3, 3, 0, 7, 5, 0])], [], torch.pow)
w.add("pow/int_negative_tensor_exponent", "pow", [T([2, 3, 1, -1, -1, 0]), T([-1, -2, -3, -3, -4, -1])], [], torch.pow)
w.add("pow/int64_overflow_wraps", "pow", [T([2, -2, 3, 7]), T([63, 63, 40, 30])], [], torch.pow)
w.add("pow/int8_overflow_wraps", "pow", [T([2, 3, -3], dtype=I8), T([7, 5, 5], dtype=I8)], [], torch.pow)
w.add("pow/uint8", "pow", [T([2, 3], dtype=U8), T([7, 5], dtype=U8)], [], torch.pow)
w.add("pow/int_0d_negative_exponent_tensor", "pow", [T([2, 3]), T(-1)], [], torch.pow)
w.add("pow/int_negative_scalar_exponent", "pow", [T([2, 3]), scalar(-1)], [], error="ValueError")
w.add("pow/uint8_negative_scalar_exponent", "pow", [T([2, 3], dtype=U8), scalar(-2)], [], error="ValueError")
w.add("pow/bool_negative_scalar_exponent", "pow", [T([True, False]), scalar(-1)], [], error="ValueError")
w.add("pow/int0d_negative_scalar_exponent", "pow", [T(2), scalar(-1)], [], error="ValueError")
w.add("pow/int32_scalar_exponent_overflow", "pow", [T([2], dtype=I32), scalar(2**40)], [], error="ValueError")
w.add("pow/int_float_negative_scalar_exponent", "pow", [T([2, 3]), scalar(-1.0)], [], lambda a, b: torch.pow(a, b))
w.add("pow/float_negative_int_scalar", "pow", [T([2.0, 3.0]), scalar(-1)], [], lambda a, b: torch.pow(a, b))
for e in (2, 3, 0.5, -0.5, -1, -2, 0, 1, 1.5, 2.0):
    w.add(f"pow/float_scalar_exponent_{e}", "pow", [rnd(7).abs() + 0.1, scalar(e)], [], lambda a, b: torch.pow(a, b))
w.add("pow/int_scalar_exponent", "pow", [T([2, -3, 4], dtype=I16), scalar(3)], [], lambda a, b: torch.pow(a, b))
w.add("pow/int_scalar_exponent_2", "pow", [T([2, -3, 40000], dtype=I32), scalar(2)], [], lambda a, b: torch.pow(a, b))
w.add("pow/int_tensor_float_scalar", "pow", [T([2, 3]), scalar(0.5)], [], lambda a, b: torch.pow(a, b))
w.add("pow/bool_tensor_int_scalar", "pow", [T([True, False]), scalar(2)], [], lambda a, b: torch.pow(a, b))
w.add("pow/int_tensor_bool_scalar", "pow", [T([2, 3]), scalar(True)], [], lambda a, b: torch.pow(a, b))
w.add("pow/bool_bool", "pow", [T([True, False]), T([True, True])], [], error="TypeError")
w.add("pow/scalar_base_int", "pow", [scalar(2), T([2, -1, 0, 10])], [], lambda a, b: torch.pow(a, b))
w.add("pow/scalar_base_float", "pow", [scalar(2.5), T([2, -1])], [], lambda a, b: torch.pow(a, b))
w.add("pow/scalar_base_minus1", "pow", [scalar(-1), T([3, -3, 4])], [], lambda a, b: torch.pow(a, b))
w.add("pow/scalar_base_bool_exponent", "pow", [scalar(2), T([True, False])], [], lambda a, b: torch.pow(a, b))
w.add("pow/special_floats", "pow", [T([0.0, -0.0, -2.0, 2.0, NAN, 1.0, -8.0, INF]), T([-1.0, -1.0, 0.5, INF, 0.0, NAN, 1 / 3, -1.0])],
      [], torch.pow)
w.add("pow/half_scalar", "pow", [rnd(5, dtype=F16).abs(), scalar(2)], [], lambda a, b: torch.pow(a, b))
w.add("pow/half_tensor", "pow", [rnd(5, dtype=F16).abs(), rnd(5).clamp(-2, 2).to(F16)], [], torch.pow)
w.add("pow/bf16_tensor", "pow", [rnd(5, dtype=BF16).abs(), rnd(5).clamp(-2, 2).to(BF16)], [], torch.pow)
w.add("pow/int_and_0d_float", "pow", [T([2, 3]), T(2.5)], [], torch.pow)
w.add("pow/0d_float_and_int", "pow", [T(2.5), T([2, 3])], [], torch.pow)
w.add("pow/int8_and_0d_int64", "pow", [T([2, 3], dtype=I8), T(2)], [], torch.pow)
w.add("pow/broadcast_column", "pow", [T([1.0, 2.0]), T([[1], [2]])], [], torch.pow)
w.add("pow_/float_tensor", "pow_", [T([2.0, 3.0]), T([2, 3])], [], lambda a, b: a.clone().pow_(b))
w.add("pow_/float_scalar", "pow_", [T([2.0, 3.0]), scalar(0.5)], [], lambda a, b: a.clone().pow_(b))
w.add("pow_/int_self_float_scalar", "pow_", [T([2, 3]), scalar(0.5)], [], error="TypeError")
w.add("pow_/int_self_negative_scalar", "pow_", [T([2, 3]), scalar(-2)], [], error="ValueError")

# ------------------------------------------------------------------ maximum / minimum / fmax / fmin
for op in ("maximum", "minimum", "fmax", "fmin"):
    fn = getattr(torch, op)
    binary_suite(op, fn, dtypes=(F32, I64, I8, U8, F16, BF16), scalar_ok=False)
    w.add(f"{op}/nan", op, [T([1.0, NAN, 3.0, NAN, -INF]), T([2.0, 1.0, NAN, NAN, INF])], [], fn)
    w.add(f"{op}/nan_f64_broadcast", op, [T([[NAN], [1.0]], dtype=F64), T([0.0, NAN, 5.0], dtype=F64)], [], fn)
    w.add(f"{op}/nan_half", op, [T([1.0, NAN, 3.0], dtype=F16), T([2.0, 1.0, NAN], dtype=F16)], [], fn)
    w.add(f"{op}/bool", op, [T([True, False, True, False]), T([True, True, False, False])], [], fn)
    w.add(f"{op}/int_and_float_0d", op, [T([1, 2]), T(1.5)], [], fn)
    w.add(f"{op}/int64_extremes", op, [T([2**63 - 1, -2**63, 0]), T([-2**63, 2**63 - 1, -1])], [], fn)
    w.add(f"{op}/uint8_and_int8_edges", op, [T([200, 0], dtype=U8), T([-1, 5], dtype=I8)], [], fn)

# ------------------------------------------------------------------ atan2 / hypot
binary_suite("atan2", torch.atan2, dtypes=(F32, F64, BF16), scalar_ok=False)
w.add("atan2/quadrants", "atan2", [T([1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, -0.0, INF, -INF, NAN]),
                                   T([1.0, -1.0, 1.0, -1.0, 0.0, 0.0, -0.0, -0.0, INF, 1.0, 1.0])], [], torch.atan2)
w.add("atan2/int_to_float", "atan2", [T([1, 2]), T([1, -2])], [], torch.atan2)
w.add("atan2/bool_to_float", "atan2", [T([True, False]), T([True, True])], [], torch.atan2)
w.add("atan2/int_and_f64", "atan2", [T([1, 2]), T([1.0, -2.0], dtype=F64)], [], torch.atan2)
w.add("atan2/half", "atan2", [rnd(3, dtype=F16), rnd(3, dtype=F16)], [], error="TypeError")
w.add("atan2_/float", "atan2_", [rnd(4), rnd(4)], [], lambda a, b: a.clone().atan2_(b))
w.add("atan2_/int_self", "atan2_", [T([1, 2]), T([1, -2])], [], error="TypeError")

binary_suite("hypot", torch.hypot, dtypes=(F32, F64, BF16), int_ok=False, scalar_ok=False)
w.add("hypot/special", "hypot", [T([3.0, 0.0, INF, NAN, 1e30, -5.0]), T([4.0, 0.0, NAN, INF, 1e30, 12.0])], [], torch.hypot)
w.add("hypot/int_and_float", "hypot", [T([3], dtype=I32), T([4.0])], [], torch.hypot)
w.add("hypot/f32_and_f64", "hypot", [T([3.0]), T([4.0], dtype=F64)], [], torch.hypot)
w.add("hypot/int", "hypot", [T([3, 2]), T([4, -2])], [], error="TypeError")
w.add("hypot/half", "hypot", [rnd(3, dtype=F16), rnd(3, dtype=F16)], [], error="TypeError")
w.add("hypot_/float", "hypot_", [rnd(4), rnd(4)], [], lambda a, b: a.clone().hypot_(b))

# ------------------------------------------------------------------ comparisons
for op in ("eq", "ne", "lt", "le", "gt", "ge"):
    fn = getattr(torch, op)
    binary_suite(op, fn, dtypes=(F32, I64, B, F16, BF16, U8))
    w.add(f"{op}/ties_int", op, [T([1, 2, 3, -1]), T([1, 3, 2, -1])], [], fn)
    w.add(f"{op}/int_vs_float", op, [T([1, 2, 3]), T([1.0, 2.5, 2.0])], [], fn)
    w.add(f"{op}/int_vs_float_scalar", op, [T([1, 2]), scalar(1.5)], [], fn)
    w.add(f"{op}/uint8_vs_negative_scalar", op, [T([1, 255], dtype=U8), scalar(-1)], [], fn)
    w.add(f"{op}/int8_vs_big_scalar", op, [T([1, 44], dtype=I8), scalar(300)], [], fn)
    w.add(f"{op}/nan_inf", op, [T([NAN, NAN, 1.0, INF, -INF, 0.0]), T([NAN, 1.0, NAN, INF, INF, -0.0])], [], fn)
    w.add(f"{op}/f32_vs_f64_0d", op, [T([0.0, 1.0]), T(1e-300, dtype=F64)], [], fn)
    w.add(f"{op}/int64_extremes", op, [T([2**63 - 1, -2**63, 2**62]), T([2**63 - 1, 2**63 - 1, 2**62 + 1])], [], fn)
    w.add(f"{op}/bool_vs_int", op, [T([True, False, True]), T([1, 0, 2])], [], fn)
    w.add(f"{op}_/float_self", f"{op}_", [T([1.0, 2.0, 3.0]), T([1.0, 3.0, 2.0])], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))
    w.add(f"{op}_/int_self_float_scalar", f"{op}_", [T([1, 2]), scalar(1.5)], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))
    w.add(f"{op}_/bool_self", f"{op}_", [T([True, False]), T([True, True])], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))
    w.add(f"{op}_/shape_change", f"{op}_", [T([1.0]), T([1.0, 2.0])], [], error="ShapeError")

# ------------------------------------------------------------------ logical
for op in ("logical_and", "logical_or", "logical_xor"):
    fn = getattr(torch, op)
    binary_suite(op, fn, dtypes=(B, F32, I64, F16), scalar_ok=False)
    w.add(f"{op}/truth_table", op, [T([True, True, False, False]), T([True, False, True, False])], [], fn)
    w.add(f"{op}/mixed", op, [T([1, 0, 2, 0]), T([1.0, 1.0, 0.0, 0.0])], [], fn)
    w.add(f"{op}/nan_is_true", op, [T([NAN, 0.0, NAN, -0.0]), T([0.0, 0.0, NAN, 1.0])], [], fn)
    w.add(f"{op}/f32_and_tiny_f64_0d", op, [T([1.0, 0.0]), T(1e-300, dtype=F64)], [], fn)
    w.add(f"{op}/uint8_int8", op, [T([0, 200, 3], dtype=U8), T([-1, 0, 0], dtype=I8)], [], fn)
    w.add(f"{op}_/int_self", f"{op}_", [T([1, 0, 2]), T([1.0, 1.0, 0.0])], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))
    w.add(f"{op}_/float_self", f"{op}_", [T([1.5, 0.0, 2.0]), T([1.0, 1.0, 0.0])], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))

# ------------------------------------------------------------------ bitwise
for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    fn = getattr(torch, op)
    for dt in INT_DTYPES + (B,):
        n = str(dt).replace("torch.", "")
        w.add(f"{op}/{n}", op, [rnd(2, 3, dtype=dt, lo=-100, hi=100), rnd(3, dtype=dt, lo=-100, hi=100)], [], fn)
    w.add(f"{op}/int64_extremes", op, [T([2**63 - 1, -2**63, -1, 12]), T([-1, -1, 2**62, 10])], [], fn)
    w.add(f"{op}/uint8_int8", op, [T([12, 10, 255], dtype=U8), T([-1], dtype=I8)], [], fn)
    w.add(f"{op}/int_scalar", op, [T([12, 10]), scalar(3)], [], fn)
    w.add(f"{op}/bool_bool_scalar", op, [T([True, False]), scalar(True)], [], fn)
    w.add(f"{op}/bool_int_scalar", op, [T([True, False]), scalar(3)], [], fn)
    w.add(f"{op}/transposed_strided", op, [(rnd(3, 4, dtype=I32, lo=-50, hi=50), "transposed"),
                                           (rnd(3, 4, dtype=I32, lo=-50, hi=50), "strided")], [], fn)
    w.add(f"{op}/zero_size", op, [rnd(0, 2, dtype=I64), rnd(2, dtype=I64)], [], fn)
    w.add(f"{op}/float", op, [T([1.0]), T([1.0])], [], error="TypeError")
    w.add(f"{op}/int_float_scalar", op, [T([1, 2]), scalar(3.0)], [], error="TypeError")
    w.add(f"{op}/bad_broadcast", op, [T([1, 2]), T([1, 2, 3])], [], error="ShapeError")
    w.add(f"{op}_/int", f"{op}_", [T([12, 10]), T([10, 3])], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))
    w.add(f"{op}_/bool_self_int_other", f"{op}_", [T([True]), T([3])], [], error="TypeError")

# ------------------------------------------------------------------ shifts
for op in ("bitwise_left_shift", "bitwise_right_shift"):
    fn = getattr(torch, op)
    for dt in INT_DTYPES:
        n = str(dt).replace("torch.", "")
        bits = torch.iinfo(dt).bits
        a = rnd(2, 4, dtype=dt, lo=-100, hi=100)
        s = torch.randint(0, bits, (4,), dtype=I64).to(dt)
        w.add(f"{op}/{n}", op, [a, s], [], fn)
    w.add(f"{op}/negative_values", op, [T([-8, -1, -7, 8]), T([1, 3, 2, 62])], [], fn)
    w.add(f"{op}/int8_edges", op, [T([1, 2, -128, 127], dtype=I8), T([7, 7, 1, 6], dtype=I8)], [], fn)
    w.add(f"{op}/uint8_edges", op, [T([200, 127, 1, 255], dtype=U8), T([3, 7, 7, 1], dtype=U8)], [], fn)
    w.add(f"{op}/scalar_rhs", op, [T([1, 2, -4]), scalar(1)], [], fn)
    w.add(f"{op}/scalar_lhs", op, [scalar(1), T([1, 2, 3])], [], lambda a, b, fn=fn: fn(a, b))
    w.add(f"{op}/int32_scalar_keeps_dtype", op, [T([1, 2], dtype=I32), scalar(1)], [], fn)
    w.add(f"{op}/broadcast", op, [T([[1], [-16]]), T([0, 1, 2])], [], fn)
    w.add(f"{op}/bool", op, [T([True]), T([True])], [], error="TypeError")
    w.add(f"{op}/float", op, [T([1.0]), T([1])], [], error="TypeError")
    w.add(f"{op}_/int", f"{op}_", [T([1, 64]), scalar(3)], [], lambda a, b, op=op: getattr(a.clone(), op + "_")(b))

# ------------------------------------------------------------------ where
wh = lambda c, a, b: torch.where(c, a, b)
w.add("where/same_shape", "where", [rnd(2, 3, dtype=B), rnd(2, 3), rnd(2, 3)], [], wh)
w.add("where/broadcast_all", "where", [rnd(2, 1, 1, dtype=B), rnd(1, 3, 1), rnd(1, 1, 4)], [], wh)
w.add("where/cond_broadcast", "where", [T([[True], [False]]), T([1, 2]), T(0.0)], [], wh)
w.add("where/promote_int_float", "where", [T([True, False]), T([1, 2]), T([1.5, 2.5])], [], wh)
w.add("where/scalar_other", "where", [T([True, False]), T([1, 2], dtype=I8), scalar(5)], [], wh)
w.add("where/scalar_float_other", "where", [T([True, False]), T([1, 2]), scalar(2.5)], [], wh)
w.add("where/both_scalars_int", "where", [T([True, False]), scalar(1), scalar(2)], [], wh)
w.add("where/both_scalars_mixed", "where", [T([True, False]), scalar(1), scalar(2.5)], [], wh)
w.add("where/int8_and_0d_int64", "where", [T([True, False]), T([1, 2], dtype=I8), T(5)], [], wh)
w.add("where/uint8_cond", "where", [T([1, 0, 7], dtype=U8), T([1, 2, 3]), T([4, 5, 6])], [], wh)
w.add("where/nan_inf", "where", [T([True, False, True]), T([NAN, 1.0, INF]), T([0.0, NAN, 0.0])], [], wh)
w.add("where/layouts", "where", [(rnd(3, 4, dtype=B), "transposed"), (rnd(3, 4), "strided"), (rnd(1, 4), "expanded", (3, 4))], [], wh)
w.add("where/zero_size", "where", [rnd(0, 3, dtype=B), rnd(3), rnd(0, 1)], [], wh)
w.add("where/long_row", "where", [rnd(67, dtype=B), rnd(67), rnd(67)], [], wh)
for dt in (F16, BF16, F64, I64, I16, U8, B):
    n = str(dt).replace("torch.", "")
    w.add(f"where/{n}", "where", [rnd(5, dtype=B), rnd(5, dtype=dt), rnd(5, dtype=dt)], [], wh)
w.add("where/float_cond", "where", [T([1.0, 0.0]), T([1, 2]), T([3, 4])], [], error="TypeError")
w.add("where/int64_cond", "where", [T([1, 0]), T([1, 2]), T([3, 4])], [], error="TypeError")
w.add("where/bad_broadcast", "where", [T([True, False, True]), T([1, 2]), T([3, 4])], [], error="ShapeError")

# ------------------------------------------------------------------ lerp
lp = lambda a, b, wt: torch.lerp(a, b, wt)
for wt in (0.0, 0.25, 0.5, 0.75, 1.0, -0.7, 1.8):
    w.add(f"lerp/scalar_weight_{wt}", "lerp", [rnd(2, 3), rnd(2, 3), scalar(wt)], [], lp)
w.add("lerp/int_scalar_weight", "lerp", [rnd(4), rnd(4), scalar(2)], [], lp)
w.add("lerp/tensor_weight", "lerp", [rnd(2, 3), rnd(2, 3), torch.rand(2, 3) * 1.6 - 0.3], [], lp)
w.add("lerp/broadcast_all", "lerp", [T([[1.0, 2.0]]), T([[3.0], [5.0]]), T([0.5, 0.6])], [], lp)
w.add("lerp/broadcast_self", "lerp", [T(1.0), T([3.0, 5.0]), scalar(0.5)], [], lp)
w.add("lerp/weight_0d_tensor", "lerp", [rnd(3), rnd(3), T(0.3)], [], lp)
w.add("lerp/layouts", "lerp", [(rnd(3, 4), "transposed"), (rnd(3, 4), "strided"), (torch.rand(1, 4), "expanded", (3, 4))], [], lp)
w.add("lerp/long_row", "lerp", [rnd(67), rnd(67), torch.rand(67)], [], lp)
w.add("lerp/zero_size", "lerp", [rnd(0, 2), rnd(2), scalar(0.5)], [], lp)
w.add("lerp/f64", "lerp", [rnd(4, dtype=F64), rnd(4, dtype=F64), rnd(4, dtype=F64)], [], lp)
w.add("lerp/bf16", "lerp", [rnd(4, dtype=BF16), rnd(4, dtype=BF16), scalar(0.3)], [], lp)
w.add("lerp/bf16_tensor_weight", "lerp", [rnd(4, dtype=BF16), rnd(4, dtype=BF16), torch.rand(4).to(BF16)], [], lp)
w.add("lerp/nan_inf", "lerp", [T([NAN, 1.0, INF, 0.0]), T([1.0, NAN, 1.0, INF]), scalar(0.5)], [], lp)
w.add("lerp/end_dtype_mismatch", "lerp", [rnd(3), rnd(3, dtype=F64), scalar(0.5)], [], error="TypeError")
w.add("lerp/weight_dtype_mismatch", "lerp", [rnd(3), rnd(3), T(0.5, dtype=F64)], [], error="TypeError")
w.add("lerp/int", "lerp", [T([1, 2]), T([3, 5]), scalar(0.5)], [], error="TypeError")
w.add("lerp/half", "lerp", [rnd(3, dtype=F16), rnd(3, dtype=F16), scalar(0.5)], [], error="TypeError")
w.add("lerp/bad_broadcast", "lerp", [rnd(3), rnd(4), scalar(0.5)], [], error="ShapeError")
w.add("lerp_/scalar", "lerp_", [rnd(2, 3), rnd(3), scalar(0.5)], [], lambda a, b, c: a.clone().lerp_(b, c))
w.add("lerp_/tensor", "lerp_", [rnd(2, 3), rnd(2, 3), torch.rand(3)], [], lambda a, b, c: a.clone().lerp_(b, c))
w.add("lerp_/shape_change", "lerp_", [rnd(2), rnd(1, 2), scalar(0.5)], [], error="ShapeError")

# ------------------------------------------------------------------ addcmul / addcdiv
acm = lambda v: (lambda a, b, c: torch.addcmul(a, b, c, value=v))
acd = lambda v: (lambda a, b, c: torch.addcdiv(a, b, c, value=v))
w.add("addcmul/float", "addcmul", [rnd(2, 3), rnd(2, 3), rnd(2, 3)], [attr(1, "scalar")], acm(1))
w.add("addcmul/value", "addcmul", [rnd(2, 3), rnd(3), rnd(2, 1)], [attr(0.5, "scalar")], acm(0.5))
w.add("addcmul/int", "addcmul", [T([1, 2]), T([3, 4]), T([5, 6])], [attr(2, "scalar")], acm(2))
w.add("addcmul/int_float_value_truncates", "addcmul", [T([1, 2]), T([3, 4]), T([5, 6])], [attr(0.5, "scalar")], acm(0.5))
w.add("addcmul/int_bool_value", "addcmul", [T([1, 2]), T([3, 4]), T([5, 6])], [attr(True, "scalar")], acm(True))
w.add("addcmul/int_float_promotes", "addcmul", [T([1, 2]), T([3.0, 4.0]), T([5, 6])], [attr(2, "scalar")], acm(2))
w.add("addcmul/int8_and_int64", "addcmul", [T([1, 2], dtype=I8), T([3, 4]), T(5)], [attr(2, "scalar")], acm(2))
w.add("addcmul/int64_overflow_wraps", "addcmul", [T([2**62]), T([2**62]), T([4])], [attr(1, "scalar")], acm(1))
w.add("addcmul/int8_overflow_wraps", "addcmul", [T([100], dtype=I8), T([100], dtype=I8), T([3], dtype=I8)], [attr(1, "scalar")], acm(1))
w.add("addcmul/f64", "addcmul", [rnd(4, dtype=F64), rnd(4, dtype=F64), rnd(4, dtype=F64)], [attr(-1.5, "scalar")], acm(-1.5))
w.add("addcmul/bf16", "addcmul", [rnd(4, dtype=BF16), rnd(4, dtype=BF16), rnd(4, dtype=BF16)], [attr(0.5, "scalar")], acm(0.5))
w.add("addcmul/layouts", "addcmul", [(rnd(3, 4), "transposed"), (rnd(3, 4), "strided"), (rnd(1, 4), "expanded", (3, 4))],
      [attr(1, "scalar")], acm(1))
w.add("addcmul/long_row", "addcmul", [rnd(67), rnd(67), rnd(67)], [attr(0.25, "scalar")], acm(0.25))
w.add("addcmul/zero_size", "addcmul", [rnd(0, 3), rnd(3), rnd(1)], [attr(1, "scalar")], acm(1))
w.add("addcmul/nan_inf", "addcmul", [T([NAN, 1.0, INF]), T([1.0, INF, 1.0]), T([1.0, 0.0, -INF])], [attr(1, "scalar")], acm(1))
w.add("addcmul/bool", "addcmul", [T([True]), T([True]), T([False])], [attr(1, "scalar")], error="TypeError")
w.add("addcmul/half", "addcmul", [rnd(3, dtype=F16), rnd(3, dtype=F16), rnd(3, dtype=F16)], [attr(1, "scalar")], error="TypeError")
w.add("addcmul/int8_value_overflow", "addcmul", [T([1], dtype=I8), T([3], dtype=I8), T([5], dtype=I8)], [attr(300, "scalar")],
      error="ValueError")
w.add("addcmul/bad_broadcast", "addcmul", [rnd(3), rnd(4), rnd(3)], [attr(1, "scalar")], error="ShapeError")
w.add("addcmul_/float", "addcmul_", [rnd(2, 3), rnd(3), rnd(2, 3)], [attr(2, "scalar")], lambda a, b, c: a.clone().addcmul_(b, c, value=2))
w.add("addcmul_/int_self_float_other", "addcmul_", [T([1, 2]), T([1.0, 2.0]), T([1, 2])], [attr(1, "scalar")], error="TypeError")

w.add("addcdiv/float", "addcdiv", [rnd(2, 3), rnd(2, 3), rnd(2, 3, nonzero=True)], [attr(1, "scalar")], acd(1))
w.add("addcdiv/value", "addcdiv", [rnd(2, 3), rnd(3), rnd(2, 1, nonzero=True)], [attr(-0.5, "scalar")], acd(-0.5))
w.add("addcdiv/zero_div", "addcdiv", [T([1.0, 2.0, 0.0]), T([3.0, -4.0, 0.0]), T([0.0, 0.0, 0.0])], [attr(2, "scalar")], acd(2))
w.add("addcdiv/int_self_float_t1", "addcdiv", [T([1, 2]), T([3.0, 4.0]), T([5, 6])], [attr(2, "scalar")], acd(2))
w.add("addcdiv/float_t1_bool_t2", "addcdiv", [T([1.0, 2.0]), T([1.0, 0.0]), T([True, True])], [attr(1, "scalar")], acd(1))
w.add("addcdiv/f32_and_f64_0d", "addcdiv", [rnd(3), rnd(3), T(2.0, dtype=F64)], [attr(1, "scalar")], acd(1))
w.add("addcdiv/f64", "addcdiv", [rnd(4, dtype=F64), rnd(4, dtype=F64), rnd(4, dtype=F64, nonzero=True)], [attr(3, "scalar")], acd(3))
w.add("addcdiv/bf16", "addcdiv", [rnd(4, dtype=BF16), rnd(4, dtype=BF16), rnd(4, dtype=BF16, nonzero=True)], [attr(1, "scalar")], acd(1))
w.add("addcdiv/layouts", "addcdiv", [(rnd(3, 4), "transposed"), (rnd(3, 4), "strided"), (rnd(1, 4, nonzero=True), "expanded", (3, 4))],
      [attr(1, "scalar")], acd(1))
w.add("addcdiv/long_row", "addcdiv", [rnd(67), rnd(67), rnd(67, nonzero=True)], [attr(0.25, "scalar")], acd(0.25))
w.add("addcdiv/zero_size", "addcdiv", [rnd(0, 3), rnd(3), rnd(1, nonzero=True)], [attr(1, "scalar")], acd(1))
w.add("addcdiv/int_int", "addcdiv", [T([1, 2]), T([3, 4]), T([5, 6])], [attr(2, "scalar")], error="TypeError")
w.add("addcdiv/float_self_int_int", "addcdiv", [T([1.0, 2.0]), T([3, 4]), T([5, 6])], [attr(2, "scalar")], error="TypeError")
w.add("addcdiv/bool_bool", "addcdiv", [T([1.0, 2.0]), T([True, False]), T([True, True])], [attr(1, "scalar")], error="TypeError")
w.add("addcdiv/half", "addcdiv", [rnd(3, dtype=F16), rnd(3, dtype=F16), rnd(3, dtype=F16)], [attr(1, "scalar")], error="TypeError")
w.add("addcdiv/bad_broadcast", "addcdiv", [rnd(3), rnd(3), rnd(2, 2)], [attr(1, "scalar")], error="ShapeError")
w.add("addcdiv_/float", "addcdiv_", [rnd(2, 3), rnd(3), rnd(2, 3, nonzero=True)], [attr(2, "scalar")],
      lambda a, b, c: a.clone().addcdiv_(b, c, value=2))
w.add("addcdiv_/int_self_float_tensors", "addcdiv_", [T([1, 2]), T([1.0, 2.0]), T([1.0, 2.0])], [attr(1, "scalar")], error="TypeError")
w.add("addcdiv_/int_tensors", "addcdiv_", [T([1.0, 2.0]), T([3, 4]), T([5, 6])], [attr(1, "scalar")], error="TypeError")

import re
_seen = set()
for c in w.cases:
    k = re.sub(r"[^A-Za-z0-9]", "_", c["name"])
    assert k not in _seen, f"duplicate test name after sanitising: {c['name']}"
    _seen.add(k)
w.write(OUT)
