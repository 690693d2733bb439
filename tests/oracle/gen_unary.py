#!/usr/bin/python3
"""Oracle cases for the unary family (src/tandem/ops/unary.cpp, unary_nn.cpp).

Run: /usr/bin/python3 tests/oracle/gen_unary.py  -> tests/data/oracle/unary.json

For every op: float32/float64/bfloat16/float16 inputs, integer and bool inputs (dtype
rules), transposed/strided/expanded layouts, 0-d and empty tensors, a 37-element vector
(vector loop + remainder), NaN/inf/-0.0, integer edge values, in-place variants and every
error path. PyTorch 1.13 CPU lacks float16 kernels for many of these ops; tandem computes
float16 in float32 and rounds once, so those expectations are PyTorch's float32 result
rounded to float16 (likewise bfloat16 for mish).
"""
import math
import os

import torch
import torch.nn.functional as F

from oracle_lib import CaseWriter, attr, scalar

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "unary.json")
torch.manual_seed(0)
w = CaseWriter()

NAN, INF = float("nan"), float("inf")
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
DNAME = {torch.float32: "float32", torch.float64: "float64", torch.bfloat16: "bfloat16", torch.float16: "float16",
         torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
         torch.bool: "bool"}
INT_EDGES = {
    torch.uint8: [0, 1, 127, 128, 254, 255],
    torch.int8: [-128, -127, -1, 0, 1, 127],
    torch.int16: [-32768, -32767, -1, 0, 1, 32767],
    torch.int32: [-2**31, -2**31 + 1, -1, 0, 7, 2**31 - 1],
    torch.int64: [-2**63, -2**63 + 1, -3, 0, 5, 2**63 - 1],
}


def rnd(shape, lo, hi, dtype=torch.float32):
    return (torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def robust(fn):
    """fn applied as PyTorch does; where PyTorch 1.13 has no kernel for a reduced float
    dtype, compute in float32 and round once (tandem's documented behaviour)."""
    def run(*args):
        try:
            return fn(*args)
        except RuntimeError as e:
            if "not implemented for" not in str(e):
                raise
            t = args[0]
            assert t.dtype in (torch.float16, torch.bfloat16), e
            return fn(t.float(), *args[1:]).to(t.dtype)
    return run


def error_case(name, op, inputs, attrs, error, fn=None):
    """An error case; when `fn` is given PyTorch must raise too (sanity check)."""
    if fn is not None:
        raw = [x[0] if isinstance(x, tuple) else x for x in inputs]
        try:
            fn(*raw)
        except (RuntimeError, TypeError, ValueError, IndexError):
            pass
        else:
            raise AssertionError(f"PyTorch did not raise for {name}")
    w.add(name, op, inputs, attrs, error=error)


# Ops: name -> (torch function of (tensor), attrs, input range, kind, has in-place).
#   kind "float":   any dtype in, bool/int lifted to float32 (IntToFloat)
#   kind "numeric": ints keep their dtype, bool rejected
#   kind "act":     floating dtypes only
SPEC = {
    "exp": (torch.exp, [], (-5, 5), "float", True),
    "exp2": (torch.exp2, [], (-5, 5), "float", True),
    "expm1": (torch.expm1, [], (-2, 2), "float", True),
    "log": (torch.log, [], (0.01, 10), "float", True),
    "log2": (torch.log2, [], (0.01, 10), "float", True),
    "log10": (torch.log10, [], (0.01, 10), "float", True),
    "log1p": (torch.log1p, [], (-0.9, 5), "float", True),
    "sqrt": (torch.sqrt, [], (0, 10), "float", True),
    "rsqrt": (torch.rsqrt, [], (0.1, 10), "float", True),
    "reciprocal": (torch.reciprocal, [], (0.2, 5), "float", True),
    "sin": (torch.sin, [], (-6, 6), "float", True),
    "cos": (torch.cos, [], (-6, 6), "float", True),
    "tan": (torch.tan, [], (-1.3, 1.3), "float", True),
    "asin": (torch.asin, [], (-1, 1), "float", True),
    "acos": (torch.acos, [], (-1, 1), "float", True),
    "atan": (torch.atan, [], (-5, 5), "float", True),
    "sinh": (torch.sinh, [], (-5, 5), "float", True),
    "cosh": (torch.cosh, [], (-5, 5), "float", True),
    "tanh": (torch.tanh, [], (-4, 4), "float", True),
    "erf": (torch.erf, [], (-3, 3), "float", True),
    "erfc": (torch.erfc, [], (-3, 3), "float", True),
    "sigmoid": (torch.sigmoid, [], (-8, 8), "float", True),
    "logit": (torch.logit, [attr(None)], (0.02, 0.98), "float", True),
    "neg": (torch.neg, [], (-5, 5), "numeric", True),
    "abs": (torch.abs, [], (-5, 5), "numeric", True),
    "relu": (torch.relu, [], (-5, 5), "numeric", True),
    "relu6": (F.relu6, [], (-3, 9), "numeric", True),
    "floor": (torch.floor, [], (-5, 5), "numeric", True),
    "ceil": (torch.ceil, [], (-5, 5), "numeric", True),
    "round": (torch.round, [attr(0)], (-5, 5), "numeric", True),
    "trunc": (torch.trunc, [], (-5, 5), "numeric", True),
    "frac": (torch.frac, [], (-5, 5), "act", True),
    "leaky_relu": (F.leaky_relu, [attr(0.01, "scalar")], (-5, 5), "act", True),
    "elu": (F.elu, [attr(1.0, "scalar"), attr(1.0, "scalar"), attr(1.0, "scalar")], (-5, 5), "act", True),
    "selu": (torch.selu, [], (-5, 5), "act", True),
    "gelu": (F.gelu, [attr("none")], (-5, 5), "act", True),
    "silu": (F.silu, [], (-8, 8), "act", True),
    "mish": (F.mish, [], (-8, 8), "act", True),
    "softplus": (F.softplus, [attr(1, "scalar"), attr(20, "scalar")], (-8, 8), "act", False),
    "hardsigmoid": (F.hardsigmoid, [], (-5, 5), "act", True),
    "hardswish": (F.hardswish, [], (-5, 5), "act", True),
}
SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.0, 3.0, 1e-6, -1e-6, 30.0, -30.0, 100.0, -100.0]

for op, (fn, attrs, (lo, hi), kind, inplace) in SPEC.items():
    f = robust(fn)
    # Floating dtypes, contiguous.
    for dt in FLOATS:
        w.add(f"{op}/{DNAME[dt]}", op, [rnd((2, 3), lo, hi, dt)], attrs, f)
    # Vector loop with remainder; layouts; 0-d; empty.
    w.add(f"{op}/vec37", op, [rnd((37,), lo, hi)], attrs, f)
    w.add(f"{op}/transposed", op, [(rnd((3, 4), lo, hi), "transposed")], attrs, f)
    w.add(f"{op}/strided", op, [(rnd((2, 5), lo, hi), "strided")], attrs, f)
    w.add(f"{op}/expanded", op, [(rnd((1, 4), lo, hi), "expanded", (3, 4))], attrs, f)
    w.add(f"{op}/0d", op, [rnd((), lo, hi)], attrs, f)
    w.add(f"{op}/empty", op, [torch.empty(0, 3)], attrs, f)
    w.add(f"{op}/transposed_float64", op, [(rnd((3, 2), lo, hi, torch.float64), "transposed")], attrs, f)
    # Special values (NaN, inf, signed zero, saturation) in float32 and float64.
    for dt in FLOATS:
        w.add(f"{op}/specials_{DNAME[dt]}", op, [torch.tensor(SPECIALS, dtype=dt)], attrs, f)
    # Integer and bool inputs.
    ints = torch.tensor([0, 1, 2, 3, -1, -4])
    if kind == "float":
        for dt in INTS:
            vals = torch.tensor(INT_EDGES[dt]).to(dt) if dt != torch.int64 else ints
            w.add(f"{op}/{DNAME[dt]}", op, [vals], attrs, f)
        w.add(f"{op}/bool", op, [torch.tensor([True, False, True])], attrs, f)
    elif kind == "numeric":
        for dt in INTS:
            w.add(f"{op}/{DNAME[dt]}_edges", op, [torch.tensor(INT_EDGES[dt]).to(dt)], attrs, f)
        w.add(f"{op}/int32_transposed", op, [(torch.arange(-6, 6, dtype=torch.int32).reshape(3, 4), "transposed")],
              attrs, f)
        error_case(f"{op}/bool", op, [torch.tensor([True, False])], attrs, "TypeError", fn)
    else:
        for dt in (torch.int64, torch.int32, torch.uint8, torch.bool):
            x = torch.tensor([1, 0, 1]).to(dt)
            error_case(f"{op}/{DNAME[dt]}", op, [x], attrs, "TypeError", fn)
    # In-place variant.
    if inplace:
        x = rnd((2, 3), lo, hi)
        w.add(f"{op}_/float32", op + "_", [x], attrs, fn)
        w.add(f"{op}_/transposed", op + "_", [(rnd((3, 4), lo, hi), "transposed")], attrs, fn)
        w.add(f"{op}_/float64_strided", op + "_", [(rnd((2, 5), lo, hi, torch.float64), "strided")], attrs, fn)
        if kind == "float":
            error_case(f"{op}_/int64", op + "_", [torch.tensor([1, 2])], attrs, "TypeError",
                       lambda t: getattr(torch, op + "_")(t) if hasattr(torch, op + "_") else fn(t, out=t))
        elif kind == "numeric":
            iv = torch.tensor(INT_EDGES[torch.int8], dtype=torch.int8)
            w.add(f"{op}_/int8", op + "_", [iv], attrs, fn)

# ---------------------------------------------------------------- parametrised ops
x = rnd((2, 4), -5, 5)
xs = torch.tensor([-3.0, -1.0, -0.0, 0.0, 0.5, 2.0, NAN, INF, -INF])
for slope in (0.2, -0.5, 2.0):
    w.add(f"leaky_relu/slope_{slope}", "leaky_relu", [xs], [attr(slope, "scalar")], lambda t: F.leaky_relu(t, slope))
w.add("leaky_relu/slope_int", "leaky_relu", [xs], [attr(2, "scalar")], lambda t: F.leaky_relu(t, 2))
w.add("leaky_relu/slope_bool", "leaky_relu", [xs], [attr(True, "scalar")], lambda t: F.leaky_relu(t, True))
for a, s, i in ((0.5, 1.0, 1.0), (1.0, 2.0, 3.0), (-1.0, 1.0, 1.0), (2.0, 0.5, 0.25)):
    w.add(f"elu/a{a}_s{s}_i{i}", "elu", [xs], [attr(a, "scalar"), attr(s, "scalar"), attr(i, "scalar")],
          lambda t: torch.ops.aten.elu(t, a, s, i))
w.add("elu/bfloat16_params", "elu", [x.bfloat16()], [attr(1.5, "scalar"), attr(2.0, "scalar"), attr(0.5, "scalar")],
      lambda t: torch.ops.aten.elu(t, 1.5, 2.0, 0.5))
w.add("elu_/params", "elu_", [x.clone()], [attr(0.5, "scalar"), attr(2.0, "scalar"), attr(1.0, "scalar")],
      lambda t: torch.ops.aten.elu(t, 0.5, 2.0, 1.0))
for appr in ("none", "tanh"):
    for dt in FLOATS:
        w.add(f"gelu/{appr}_{DNAME[dt]}", "gelu", [rnd((3, 5), -6, 6, dt)], [attr(appr)],
              robust(lambda t: F.gelu(t, approximate=appr)))
    w.add(f"gelu/{appr}_specials", "gelu", [torch.tensor(SPECIALS)], [attr(appr)], lambda t: F.gelu(t, approximate=appr))
    w.add(f"gelu_/{appr}", "gelu_", [x.clone()], [attr(appr)], lambda t: F.gelu(t, approximate=appr))
error_case("gelu/bad_approximate", "gelu", [x], [attr("fast")], "ValueError", lambda t: F.gelu(t, approximate="fast"))
for beta, th in ((2, 10), (0.5, 1), (-2, 10), (1, 0.5)):
    w.add(f"softplus/b{beta}_t{th}", "softplus", [torch.tensor([-30.0, -3.0, -0.5, 0.0, 0.7, 4.0, 6.0, 30.0, NAN, INF, -INF])],
          [attr(beta, "scalar"), attr(th, "scalar")], lambda t: F.softplus(t, beta=beta, threshold=th))
for eps in (0.0, 0.1, 0.4, 0.6, -0.1):
    w.add(f"logit/eps{eps}", "logit", [torch.tensor([0.0, 0.05, 0.3, 0.5, 0.95, 1.0, 2.0, -1.0, NAN])], [attr(eps)],
          lambda t: torch.logit(t, eps=eps))
w.add("logit/eps_bfloat16", "logit", [torch.tensor([0.0, 0.3, 0.9, 1.0]).bfloat16()], [attr(0.25)],
      lambda t: torch.logit(t, eps=0.25))
w.add("logit/eps_int", "logit", [torch.tensor([0, 1, 2])], [attr(0.1)], lambda t: torch.logit(t, eps=0.1))
w.add("logit_/eps", "logit_", [torch.tensor([0.0, 0.3, 1.0])], [attr(0.2)], lambda t: torch.logit(t, eps=0.2))

# round: half to even, decimals.
halves = torch.tensor([-2.5, -1.5, -0.5, -0.4, 0.5, 1.5, 2.5, 3.5, 0.49999997, 8388609.0, 1e20, NAN, INF])
for dt in (torch.float32, torch.float64, torch.bfloat16):
    w.add(f"round/half_even_{DNAME[dt]}", "round", [halves.to(dt)], [attr(0)], torch.round)
dec = torch.tensor([1.2345, -2.5678, 1234.5, 2.675, 0.125, -0.0, 1e38, NAN, -INF])
for d in (1, 2, 3, -1, -2, -40, 40):
    for dt in (torch.float32, torch.float64):
        w.add(f"round/decimals{d}_{DNAME[dt]}", "round", [dec.to(dt)], [attr(d)], lambda t: torch.round(t, decimals=d))
w.add("round/decimals2_bfloat16", "round", [dec.bfloat16()], [attr(2)], lambda t: torch.round(t, decimals=2))
w.add("round/decimals1_float16", "round", [torch.tensor([1.25, -3.75, 100.5]).half()], [attr(1)],
      robust(lambda t: torch.round(t, decimals=1)))
w.add("round_/decimals1", "round_", [torch.tensor([1.25, -3.75, 0.05])], [attr(1)], lambda t: torch.round(t, decimals=1))
error_case("round/int_decimals", "round", [torch.tensor([1, 2])], [attr(1)], "TypeError",
           lambda t: torch.round(t, decimals=1))

# ---------------------------------------------------------------- sign, square
sv = torch.tensor([-2.0, -0.0, 0.0, 3.0, NAN, INF, -INF, 1e-30])
for dt in FLOATS:
    w.add(f"sign/{DNAME[dt]}", "sign", [sv.to(dt)], [], robust(torch.sign))
    w.add(f"square/{DNAME[dt]}", "square", [sv.to(dt)], [], robust(torch.square))
for dt in INTS:
    w.add(f"sign/{DNAME[dt]}", "sign", [torch.tensor(INT_EDGES[dt]).to(dt)], [], torch.sign)
    w.add(f"square/{DNAME[dt]}", "square", [torch.tensor(INT_EDGES[dt]).to(dt)], [], torch.square)
w.add("sign/bool", "sign", [torch.tensor([True, False])], [], torch.sign)
w.add("sign/transposed", "sign", [(rnd((3, 4), -2, 2), "transposed")], [], torch.sign)
w.add("sign/0d", "sign", [torch.tensor(-3)], [], torch.sign)
w.add("sign_/float32", "sign_", [torch.tensor([-2.0, 0.0, 5.0])], [], torch.sign)
w.add("sign_/bool", "sign_", [torch.tensor([True, False])], [], torch.sign)
w.add("square/bool", "square", [torch.tensor([True, False])], [], torch.square)
w.add("square/strided", "square", [(rnd((2, 5), -3, 3), "strided")], [], torch.square)
w.add("square/empty", "square", [torch.empty(0, dtype=torch.int32)], [], torch.square)
w.add("square_/int16", "square_", [torch.tensor([300, -2], dtype=torch.int16)], [], torch.square)
error_case("square_/bool", "square_", [torch.tensor([True, False])], [], "TypeError", lambda t: t.square_())

# ---------------------------------------------------------------- clamp (scalar bounds)
cx = torch.tensor([-3.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5, NAN, INF, -INF])
ci = torch.tensor([-5, -1, 0, 1, 2, 3, 7])


def clamp_case(name, t, lo, hi, op="clamp"):
    w.add(name, op, [t], [attr(lo, "scalar"), attr(hi, "scalar")],
          robust(lambda u: torch.clamp(u, lo, hi) if op == "clamp" else u.clone().clamp_(lo, hi)))


for dt in FLOATS:
    clamp_case(f"clamp/{DNAME[dt]}", cx.to(dt), -1.0, 1.0)
clamp_case("clamp/min_only", cx, 0.0, None)
clamp_case("clamp/max_only", cx, None, 0.5)
clamp_case("clamp/min_gt_max", cx, 1.0, 0.0)
clamp_case("clamp/nan_min", cx, NAN, 1.0)
clamp_case("clamp/nan_max", cx, 0.0, NAN)
clamp_case("clamp/nan_min_only", cx, NAN, None)
clamp_case("clamp/nan_max_only", cx, None, NAN)
clamp_case("clamp/inf_bounds", cx, -INF, INF)
clamp_case("clamp/int_bounds_on_float", cx, -1, 2)
clamp_case("clamp/float64_quarter", cx.double(), -0.25, 0.75)
clamp_case("clamp/int64", ci, -1, 2)
clamp_case("clamp/int64_float_bound", ci, 0.5, 2.5)
clamp_case("clamp/int8_float_min", torch.tensor([1, 2, 3], dtype=torch.int8), 2.5, None)
clamp_case("clamp/uint8_neg_min_wraps", torch.tensor([0, 5, 255], dtype=torch.uint8), -1, None)
clamp_case("clamp/uint8_float", torch.tensor([0, 5, 255], dtype=torch.uint8), 1.5, -1)
clamp_case("clamp/int8_edges", torch.tensor(INT_EDGES[torch.int8], dtype=torch.int8), -127, 126)
clamp_case("clamp/int8_max127", torch.tensor([5, -3], dtype=torch.int8), None, 127)
clamp_case("clamp/int64_extreme", torch.tensor(INT_EDGES[torch.int64]), -2**63 + 1, 2**63 - 1)
clamp_case("clamp/int32_2d", torch.tensor([[1, 9], [4, -2]], dtype=torch.int32), 0, 5)
clamp_case("clamp/bool_int_bounds", torch.tensor([True, False]), 0, 1)
clamp_case("clamp/bool_float_min", torch.tensor([True, False]), 0.5, None)
clamp_case("clamp/int_bool_min", ci, True, None)
clamp_case("clamp/0d", torch.tensor(7.0), -1.0, 1.0)
clamp_case("clamp/empty", torch.empty(0, 2), -1.0, 1.0)
w.add("clamp/transposed", "clamp", [(rnd((3, 4), -2, 2), "transposed")], [attr(-1.0, "scalar"), attr(1.0, "scalar")],
      lambda t: torch.clamp(t, -1.0, 1.0))
w.add("clamp/strided_int32", "clamp", [(torch.arange(-5, 5, dtype=torch.int32).reshape(2, 5), "strided")],
      [attr(-2, "scalar"), attr(3, "scalar")], lambda t: torch.clamp(t, -2, 3))
w.add("clamp/expanded", "clamp", [(rnd((1, 4), -2, 2), "expanded", (3, 4))], [attr(-1.0, "scalar"), attr(None)],
      lambda t: torch.clamp(t, -1.0))
w.add("clamp/vec37", "clamp", [rnd((37,), -2, 2)], [attr(-0.5, "scalar"), attr(0.5, "scalar")],
      lambda t: torch.clamp(t, -0.5, 0.5))
clamp_case("clamp_/float32", cx, -1.0, 1.0, op="clamp_")
clamp_case("clamp_/int32", torch.tensor([-5, 0, 5], dtype=torch.int32), -1, 2, op="clamp_")
clamp_case("clamp_/nan_bounds", cx, NAN, 1.0, op="clamp_")
w.add("clamp_/transposed", "clamp_", [(rnd((3, 4), -2, 2), "transposed")], [attr(-1.0, "scalar"), attr(1.0, "scalar")],
      lambda t: torch.clamp(t, -1.0, 1.0))
error_case("clamp/no_bounds", "clamp", [cx], [None, None], "ValueError", lambda t: torch.clamp(t))
error_case("clamp/bool_bool", "clamp", [torch.tensor([True])], [attr(False, "scalar"), attr(True, "scalar")],
           "TypeError", lambda t: torch.clamp(t, False, True))
error_case("clamp/uint8_overflow", "clamp", [torch.tensor([1], dtype=torch.uint8)], [attr(-1, "scalar"), attr(300, "scalar")],
           "TypeError", lambda t: torch.clamp(t, -1, 300))
error_case("clamp/uint8_overflow_neg", "clamp", [torch.tensor([1], dtype=torch.uint8)], [attr(-256, "scalar"), None],
           "TypeError", lambda t: torch.clamp(t, -256))
error_case("clamp/int8_overflow", "clamp", [torch.tensor([1], dtype=torch.int8)], [None, attr(128, "scalar")],
           "TypeError", lambda t: torch.clamp(t, max=128))
error_case("clamp/float_overflow", "clamp", [torch.tensor([1.0])], [attr(1e300, "scalar"), None], "TypeError",
           lambda t: torch.clamp(t, 1e300))
error_case("clamp/bfloat16_overflow", "clamp", [torch.tensor([1.0]).bfloat16()], [attr(1e39, "scalar"), None],
           "TypeError", lambda t: torch.clamp(t, 1e39))
error_case("clamp_/int_float_bound", "clamp_", [torch.tensor([1, 2])], [attr(0.5, "scalar"), None], "TypeError",
           lambda t: t.clamp_(0.5))

# ---------------------------------------------------------------- clamp (tensor bounds)
def clampt(name, inputs, fn=None, op="clamp_tensor"):
    w.add(name, op, inputs, [], fn or (lambda a, b, c: torch.clamp(a, b, c)))


t34 = rnd((3, 4), -3, 3)
clampt("clamp_tensor/both", [t34, torch.full((3, 4), -1.0), torch.full((3, 4), 1.0)])
clampt("clamp_tensor/broadcast", [t34, rnd((4,), -2, 0), rnd((3, 1), 0, 2)])
clampt("clamp_tensor/broadcast_up", [torch.tensor(3), torch.tensor([1, 2]), torch.tensor([[2], [5]])])
clampt("clamp_tensor/min_only", [t34, rnd((4,), -1, 1), None])
clampt("clamp_tensor/max_only", [t34, None, rnd((3, 1), -1, 1)])
clampt("clamp_tensor/nan", [torch.tensor([NAN, 1.0, 2.0, 0.0]), torch.tensor([0.0, NAN, 0.0, 0.0]), torch.tensor([1.0, 1.0, NAN, 1.0])])
clampt("clamp_tensor/nan_min_only", [torch.tensor([NAN, 1.0, 2.0]), torch.tensor([0.0, NAN, 3.0]), None])
clampt("clamp_tensor/nan_max_only", [torch.tensor([NAN, 1.0, 2.0]), None, torch.tensor([0.0, NAN, 1.0])])
clampt("clamp_tensor/min_gt_max", [t34, torch.tensor(1.0), torch.tensor(0.0)])
clampt("clamp_tensor/int_float_min", [torch.tensor([1, 2, 3]), torch.tensor([2.5]), None])
clampt("clamp_tensor/int_0d_float_min", [torch.tensor([1, 2, 3]), torch.tensor(2.5), None])
clampt("clamp_tensor/float_double_0d", [torch.tensor([0.1, 0.9]), torch.tensor(0.5, dtype=torch.float64), None])
clampt("clamp_tensor/float_double_1d", [torch.tensor([0.1, 0.9]), torch.tensor([0.5], dtype=torch.float64), None])
clampt("clamp_tensor/int_bool_min", [torch.tensor([0, 2]), torch.tensor([True]), None])
clampt("clamp_tensor/bool_int_min", [torch.tensor([True, False]), torch.tensor([0]), None])
clampt("clamp_tensor/int8", [torch.tensor(INT_EDGES[torch.int8], dtype=torch.int8), torch.tensor([-100], dtype=torch.int8),
                             torch.tensor([100], dtype=torch.int8)])
clampt("clamp_tensor/bfloat16", [rnd((5,), -2, 2, torch.bfloat16), torch.tensor([-1.0]).bfloat16(), torch.tensor([1.0]).bfloat16()])
clampt("clamp_tensor/float16", [rnd((5,), -2, 2, torch.float16), torch.tensor([-1.0]).half(), torch.tensor([1.0]).half()],
       lambda a, b, c: torch.clamp(a.float(), b.float(), c.float()).half())
clampt("clamp_tensor/layouts", [(rnd((3, 4), -3, 3), "transposed"), (rnd((3, 4), -3, 0), "strided"),
                                (rnd((1, 4), 0, 3), "expanded", (3, 4))])
clampt("clamp_tensor/empty", [torch.empty(0, 4), torch.zeros(4), torch.ones(4)])
clampt("clamp_tensor/0d", [torch.tensor(5.0), torch.tensor(0.0), torch.tensor(1.0)])
clampt("clamp_tensor_/both", [t34.clone(), torch.tensor([-1.0]), torch.tensor([[0.5], [1.0], [2.0]])],
       lambda a, b, c: a.clone().clamp_(b, c), op="clamp_tensor_")
clampt("clamp_tensor_/double_bound", [torch.tensor([0.1, 0.9]), torch.tensor([0.5], dtype=torch.float64), None],
       lambda a, b, c: a.clone().clamp_(b), op="clamp_tensor_")
error_case("clamp_tensor/no_bounds", "clamp_tensor", [t34, None, None], [], "ValueError",
           lambda a, b, c: torch.clamp(a, b, c))
error_case("clamp_tensor/bad_broadcast", "clamp_tensor", [t34, torch.zeros(3), None], [], "ShapeError",
           lambda a, b, c: torch.clamp(a, b, c))
error_case("clamp_tensor/bool", "clamp_tensor", [torch.tensor([True]), torch.tensor([False]), torch.tensor([True])], [],
           "TypeError", lambda a, b, c: torch.clamp(a, b, c))
error_case("clamp_tensor_/grows", "clamp_tensor_", [torch.zeros(4), torch.zeros(3, 4), None], [], "ShapeError",
           lambda a, b, c: a.clamp_(b))
error_case("clamp_tensor_/int_float_bound", "clamp_tensor_", [torch.tensor([1, 2]), torch.tensor([1.5]), None], [],
           "TypeError", lambda a, b, c: a.clamp_(b))

# ---------------------------------------------------------------- nan_to_num
nv = torch.tensor([NAN, INF, -INF, 0.0, -2.5, 1e30])
for dt in FLOATS:
    w.add(f"nan_to_num/default_{DNAME[dt]}", "nan_to_num", [nv.to(dt)], [None, None, None], robust(torch.nan_to_num))
    w.add(f"nan_to_num/values_{DNAME[dt]}", "nan_to_num", [nv.to(dt)], [attr(1.5), attr(100.0), attr(-7.0)],
          robust(lambda t: torch.nan_to_num(t, 1.5, 100.0, -7.0)))
w.add("nan_to_num/overflowing_values", "nan_to_num", [nv.half()], [attr(1e6), attr(1e6), attr(-1e6)],
      lambda t: torch.nan_to_num(t, 1e6, 1e6, -1e6))
w.add("nan_to_num/posinf_1e300", "nan_to_num", [nv], [None, attr(1e300), None], lambda t: torch.nan_to_num(t, posinf=1e300))
w.add("nan_to_num/nan_inf", "nan_to_num", [nv], [attr(INF), None, None], lambda t: torch.nan_to_num(t, nan=INF))
w.add("nan_to_num/transposed", "nan_to_num", [(torch.tensor([[NAN, 1.0], [INF, -INF], [2.0, NAN]]), "transposed")],
      [None, None, None], torch.nan_to_num)
w.add("nan_to_num/int", "nan_to_num", [torch.tensor(INT_EDGES[torch.int64])], [attr(0.5), None, None],
      lambda t: torch.nan_to_num(t, 0.5))
w.add("nan_to_num/uint8", "nan_to_num", [torch.tensor([0, 255], dtype=torch.uint8)], [None, None, None], torch.nan_to_num)
w.add("nan_to_num/bool", "nan_to_num", [torch.tensor([True, False])], [attr(2.0), None, None], lambda t: torch.nan_to_num(t, 2.0))
w.add("nan_to_num/0d", "nan_to_num", [torch.tensor(NAN)], [None, None, None], torch.nan_to_num)
w.add("nan_to_num/empty", "nan_to_num", [torch.empty(0)], [None, None, None], torch.nan_to_num)
w.add("nan_to_num_/float32", "nan_to_num_", [nv.clone()], [attr(-1.0), None, None], lambda t: torch.nan_to_num(t, -1.0))
w.add("nan_to_num_/int32", "nan_to_num_", [torch.tensor([3, -4], dtype=torch.int32)], [None, None, None], torch.nan_to_num)

# ---------------------------------------------------------------- predicates, logical, bitwise
pv = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.0, -1e30, 1e-40])
for op, fn in (("isnan", torch.isnan), ("isinf", torch.isinf), ("isfinite", torch.isfinite), ("logical_not", torch.logical_not)):
    for dt in FLOATS:
        w.add(f"{op}/{DNAME[dt]}", op, [pv.to(dt)], [], fn)
    for dt in INTS + [torch.bool]:
        vals = torch.tensor(INT_EDGES[dt]).to(dt) if dt != torch.bool else torch.tensor([True, False])
        w.add(f"{op}/{DNAME[dt]}", op, [vals], [], fn)
    w.add(f"{op}/transposed", op, [(torch.tensor([[NAN, 1.0, 0.0], [INF, -INF, 2.0]]), "transposed")], [], fn)
    w.add(f"{op}/strided", op, [(torch.tensor([[NAN, 1.0, 0.0], [INF, -INF, 2.0]]), "strided")], [], fn)
    w.add(f"{op}/expanded", op, [(torch.tensor([[NAN, 0.0, INF]]), "expanded", (2, 3))], [], fn)
    w.add(f"{op}/0d", op, [torch.tensor(INF)], [], fn)
    w.add(f"{op}/empty", op, [torch.empty(0, 2)], [], fn)
    w.add(f"{op}/vec37", op, [torch.where(torch.rand(37) < 0.3, torch.tensor(NAN), torch.randn(37))], [], fn)
w.add("logical_not_/float32", "logical_not_", [torch.tensor([0.0, 2.0, NAN, -0.0])], [], lambda t: t.clone().logical_not_())
w.add("logical_not_/int64", "logical_not_", [torch.tensor([0, 5, -1])], [], lambda t: t.clone().logical_not_())
w.add("logical_not_/bool", "logical_not_", [torch.tensor([True, False])], [], lambda t: t.clone().logical_not_())
for dt in INTS + [torch.bool]:
    vals = torch.tensor(INT_EDGES[dt]).to(dt) if dt != torch.bool else torch.tensor([True, False])
    w.add(f"bitwise_not/{DNAME[dt]}", "bitwise_not", [vals], [], torch.bitwise_not)
w.add("bitwise_not/transposed", "bitwise_not", [(torch.arange(12, dtype=torch.int32).reshape(3, 4), "transposed")], [],
      torch.bitwise_not)
w.add("bitwise_not/0d", "bitwise_not", [torch.tensor(5)], [], torch.bitwise_not)
w.add("bitwise_not/empty", "bitwise_not", [torch.empty(0, dtype=torch.int8)], [], torch.bitwise_not)
w.add("bitwise_not_/uint8", "bitwise_not_", [torch.tensor([0, 15, 255], dtype=torch.uint8)], [], torch.bitwise_not)
w.add("bitwise_not_/bool", "bitwise_not_", [torch.tensor([True, False])], [], torch.bitwise_not)
for dt in FLOATS:
    error_case(f"bitwise_not/{DNAME[dt]}", "bitwise_not", [torch.tensor([1.0]).to(dt)], [], "TypeError", torch.bitwise_not)

# ---------------------------------------------------------------- specific error paths
error_case("neg_/bool", "neg_", [torch.tensor([True])], [], "TypeError", lambda t: t.neg_())
error_case("relu_/bool", "relu_", [torch.tensor([True])], [], "TypeError", torch.relu_)
error_case("sigmoid_/int32", "sigmoid_", [torch.tensor([1], dtype=torch.int32)], [], "TypeError", torch.sigmoid_)
error_case("leaky_relu_/int64", "leaky_relu_", [torch.tensor([1])], [attr(0.1, "scalar")], "TypeError",
           lambda t: F.leaky_relu_(t, 0.1))
error_case("frac_/int64", "frac_", [torch.tensor([1])], [], "TypeError", torch.frac_)

w.write(OUT)
