#!/usr/bin/python3
"""Oracle cases for the reduction family (ops/reduce*.cpp).

Run: /usr/bin/python3 tests/oracle/gen_reduce.py  ->  tests/data/oracle/reduce.json

Where PyTorch 1.13's CPU backend lacks a kernel that later releases have (prod/cumsum/
cumprod/cummax/cummin/logsumexp for float16/bfloat16), the expected value is computed in
float32 and rounded once, which is what tandem (and later PyTorch) does. Where tandem
accepts more than 1.13 (a dim list for prod/all/any, a float correction), the expected
value is built from equivalent PyTorch calls.
PyTorch RuntimeErrors map to tandem errors as: duplicate dim -> ValueError, dtype not
supported (mean/var/std/norm of integers, argmax of bool) -> TypeError, reduction of an
empty dim without identity -> IndexError, p='nuc' -> NotImplementedError.
"""
import math
import os

import torch
from oracle_lib import CaseWriter, attr

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "reduce.json")
torch.manual_seed(0)
w = CaseWriter()
nan, inf = float("nan"), float("inf")
F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I64, I32, I16, I8, U8, BOOL = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool


def A(*vals):
    return [attr(v) for v in vals]


def dims(d):
    return None if d is None else attr(list(d) if isinstance(d, (list, tuple)) else [d])


def randn(*shape, dtype=F32):
    return torch.randn(*shape).to(dtype)


def ints(*shape, lo=-5, hi=6, dtype=I64):
    return torch.randint(lo, hi, shape).to(dtype)


def small(*shape):
    """Integer-valued float32 (exact sums, short JSON)."""
    return torch.randint(-9, 10, shape).float()


def q(*shape):
    """Multiples of 1/8 in [-4, 4]: short JSON, exact float32 sums for these sizes."""
    return torch.randint(-32, 33, shape).float() / 8


def tdims(d):
    """dims attr value -> torch kwarg (None = all dims)."""
    return d


def via_float(fn, out_dtype):
    """Expected value computed in float32 and rounded once (kernels missing in torch 1.13)."""
    def g(*xs):
        r = fn(*[x.float() if isinstance(x, torch.Tensor) and x.dtype in (F16, BF16) else x for x in xs])
        if isinstance(r, tuple):
            return tuple(t.to(out_dtype) if t.is_floating_point() else t for t in r)
        return r.to(out_dtype)
    return g


# ============================================================== sum / mean / prod
def sum_fn(d, keepdim=False, dtype=None):
    def f(x):
        if d is None:
            return x.sum(dtype=dtype) if not keepdim else x.sum(dim=list(range(x.dim())), keepdim=True, dtype=dtype)
        return x.sum(dim=d, keepdim=keepdim, dtype=dtype)
    return f


def mean_fn(d, keepdim=False, dtype=None):
    def f(x):
        if d is None:
            return x.mean(dtype=dtype)
        return x.mean(dim=d, keepdim=keepdim, dtype=dtype)
    return f


def sd_attrs(d, keepdim=False, dtype=None):
    return [dims(d), attr(keepdim), attr(dtype)]


for op, fn in (("sum", sum_fn), ("mean", mean_fn)):
    x = randn(3, 4)
    w.add(f"{op}/all", op, [x], sd_attrs(None), fn(None))
    w.add(f"{op}/dim1", op, [x], sd_attrs([1]), fn([1]))
    w.add(f"{op}/dim0_keepdim", op, [x], sd_attrs([0], True), fn([0], True))
    w.add(f"{op}/neg_dim", op, [x], sd_attrs([-1]), fn([-1]))
    w.add(f"{op}/empty_list_all", op, [x], sd_attrs([]), fn([]))
    x3 = randn(2, 3, 4)
    w.add(f"{op}/dims_0_2", op, [x3], sd_attrs([0, 2]), fn([0, 2]))
    w.add(f"{op}/dims_neg_keepdim", op, [x3], sd_attrs([-1, -3], True), fn([-1, -3], True))
    w.add(f"{op}/dims_1_2", op, [x3], sd_attrs([2, 1]), fn([2, 1]))
    w.add(f"{op}/all_dims_list", op, [x3], sd_attrs([0, 1, 2]), fn([0, 1, 2]))
    t = randn(4, 5)
    w.add(f"{op}/transposed_dim0", op, [(t, "transposed")], sd_attrs([0]), fn([0]))
    w.add(f"{op}/transposed_dim1", op, [(t, "transposed")], sd_attrs([1]), fn([1]))
    w.add(f"{op}/transposed_all", op, [(t, "transposed")], sd_attrs(None), fn(None))
    w.add(f"{op}/strided_dim1", op, [(randn(3, 6), "strided")], sd_attrs([1]), fn([1]))
    w.add(f"{op}/strided_dim0", op, [(randn(3, 6), "strided")], sd_attrs([0]), fn([0]))
    w.add(f"{op}/expanded_dim0", op, [(randn(1, 4), "expanded", (3, 4))], sd_attrs([0]), fn([0]))
    w.add(f"{op}/expanded_dim1", op, [(randn(3, 1), "expanded", (3, 4))], sd_attrs([1]), fn([1]))
    w.add(f"{op}/expanded_all", op, [(randn(1, 4), "expanded", (3, 4))], sd_attrs(None), fn(None))
    w.add(f"{op}/float64", op, [randn(3, 5, dtype=F64)], sd_attrs([1]), fn([1]))
    w.add(f"{op}/float16", op, [randn(4, 6, dtype=F16)], sd_attrs([1]), fn([1]))
    w.add(f"{op}/bfloat16", op, [randn(4, 6, dtype=BF16)], sd_attrs([0]), fn([0]))
    w.add(f"{op}/float16_all", op, [randn(50, dtype=F16)], sd_attrs(None), fn(None))
    w.add(f"{op}/zero_size_dim0", op, [torch.zeros(0, 3)], sd_attrs([0]), fn([0]))
    w.add(f"{op}/zero_size_keepdim", op, [torch.zeros(0, 3)], sd_attrs([0], True), fn([0], True))
    w.add(f"{op}/zero_size_other_dim", op, [torch.zeros(0, 3)], sd_attrs([1]), fn([1]))
    w.add(f"{op}/zero_size_all", op, [torch.zeros(2, 0)], sd_attrs(None), fn(None))
    z = torch.tensor(2.5)
    w.add(f"{op}/zero_d_none", op, [z], sd_attrs(None), fn(None))
    w.add(f"{op}/zero_d_dim0", op, [z], sd_attrs([0]), fn([0]))
    w.add(f"{op}/zero_d_dim_neg1_keepdim", op, [z], sd_attrs([-1], True), fn([-1], True))
    w.add(f"{op}/nan", op, [torch.tensor([[1., nan, 2.], [3., 4., 5.]])], sd_attrs([1]), fn([1]))
    w.add(f"{op}/inf", op, [torch.tensor([[inf, 1., 2.], [inf, -inf, 5.]])], sd_attrs([1]), fn([1]))
    w.add(f"{op}/bad_dim", op, [x], sd_attrs([2]), error="IndexError")
    w.add(f"{op}/bad_neg_dim", op, [x], sd_attrs([-3]), error="IndexError")
    w.add(f"{op}/dup_dim", op, [x], sd_attrs([0, 0]), error="ValueError")
    w.add(f"{op}/dup_dim_neg", op, [x], sd_attrs([1, -1]), error="ValueError")
    w.add(f"{op}/zero_d_bad_dim", op, [z], sd_attrs([1]), error="IndexError")
    # Larger shapes: pairwise leaves, column tiles, tails (integer-valued: exact).
    if op == "sum":  # mean shares the engine; keep the file small
        w.add(f"{op}/big_dim1", op, [q(6, 700)], sd_attrs([1]), fn([1]))
        w.add(f"{op}/big_dim0", op, [q(600, 7)], sd_attrs([0]), fn([0]))
        w.add(f"{op}/big_all", op, [q(40, 100)], sd_attrs(None), fn(None))
    big3 = small(5, 30, 21)
    w.add(f"{op}/big3_dims_0_2", op, [big3], sd_attrs([0, 2]), fn([0, 2]))
    w.add(f"{op}/big3_dims_0_1", op, [big3], sd_attrs([0, 1]), fn([0, 1]))
    w.add(f"{op}/big_transposed_dim0", op, [(small(70, 40), "transposed")], sd_attrs([0]), fn([0]))

# sum dtype rules
x = ints(3, 4, dtype=I32)
w.add("sum/int32_to_int64", "sum", [x], sd_attrs([1]), sum_fn([1]))
w.add("sum/int32_all", "sum", [x], sd_attrs(None), sum_fn(None))
w.add("sum/bool_to_int64", "sum", [torch.rand(3, 5) > 0.5], sd_attrs([1]), sum_fn([1]))
w.add("sum/bool_all", "sum", [torch.rand(3, 5) > 0.5], sd_attrs(None), sum_fn(None))
w.add("sum/uint8", "sum", [torch.tensor([[200, 100, 255]], dtype=U8)], sd_attrs([1]), sum_fn([1]))
w.add("sum/int8_edges", "sum", [torch.tensor([127, 127, -128], dtype=I8)], sd_attrs(None), sum_fn(None))
w.add("sum/int8_dtype_int8_wraps", "sum", [torch.tensor([127, 127], dtype=I8)], sd_attrs(None, False, I8), sum_fn(None, dtype=I8))
w.add("sum/int64_overflow_wraps", "sum", [torch.tensor([2**62, 2**62, 2**62])], sd_attrs(None), sum_fn(None))
w.add("sum/int16_transposed", "sum", [(ints(4, 3, dtype=I16), "transposed")], sd_attrs([0]), sum_fn([0]))
w.add("sum/int_dtype_int32", "sum", [ints(3, 4)], sd_attrs([1], False, I32), sum_fn([1], dtype=I32))
w.add("sum/int_dtype_float16", "sum", [ints(3, 4, dtype=I32)], sd_attrs(None, False, F16), sum_fn(None, dtype=F16))
w.add("sum/float_dtype_float64", "sum", [randn(3, 4)], sd_attrs([0], False, F64), sum_fn([0], dtype=F64))
w.add("sum/float_dtype_int64_truncates", "sum", [torch.tensor([0.5, 1.7, -2.9])], sd_attrs(None, False, I64), sum_fn(None, dtype=I64))
w.add("sum/float_dtype_int8", "sum", [torch.tensor([0.5, 1.7, 2.9])], sd_attrs(None, False, I8), sum_fn(None, dtype=I8))
w.add("sum/bool_dtype_bool", "sum", [torch.tensor([True, False, True])], sd_attrs(None, False, BOOL), sum_fn(None, dtype=BOOL))
w.add("sum/float_dtype_bool", "sum", [torch.tensor([0.5, 0.])], sd_attrs(None, False, BOOL), sum_fn(None, dtype=BOOL))
w.add("sum/float_dtype_float16", "sum", [randn(3, 4)], sd_attrs(None, False, F16), sum_fn(None, dtype=F16))
w.add("sum/float16_overflow_inf", "sum", [torch.full((100,), 60000., dtype=F16)], sd_attrs(None), sum_fn(None))
w.add("sum/int_zero_size", "sum", [torch.zeros(0, 2, dtype=I32)], sd_attrs([0]), sum_fn([0]))
w.add("sum/int_zero_d", "sum", [torch.tensor(7, dtype=I8)], sd_attrs([0]), sum_fn([0]))

# mean dtype rules
w.add("mean/int_raises", "mean", [ints(3, 4)], sd_attrs(None), error="TypeError")
w.add("mean/int32_dim_raises", "mean", [ints(3, 4, dtype=I32)], sd_attrs([1]), error="TypeError")
w.add("mean/bool_raises", "mean", [torch.tensor([True, False])], sd_attrs(None), error="TypeError")
w.add("mean/dtype_int_raises", "mean", [randn(3)], sd_attrs(None, False, I64), error="TypeError")
w.add("mean/int_dtype_float32", "mean", [ints(3, 4, dtype=I32)], sd_attrs([1], False, F32), mean_fn([1], dtype=F32))
w.add("mean/int_dtype_float16", "mean", [ints(3, 4, dtype=I32)], sd_attrs(None, False, F16), mean_fn(None, dtype=F16))
w.add("mean/float16_dtype_float64", "mean", [randn(5, dtype=F16)], sd_attrs(None, False, F64), mean_fn(None, dtype=F64))
w.add("mean/float_dtype_float64", "mean", [randn(3, 4)], sd_attrs([1], True, F64), mean_fn([1], True, F64))
w.add("mean/float16_sum_overflow_inf", "mean", [torch.full((1000,), 60000., dtype=F16)], sd_attrs(None), mean_fn(None))


# prod (torch 1.13: one int dim; lists are reduced one dim at a time for the expectation)
def prod_fn(d, keepdim=False, dtype=None):
    def f(x):
        if d is None:
            r = x.prod(dtype=dtype)
            return r.reshape([1] * x.dim()) if keepdim else r
        if len(d) == 1:
            return x.prod(d[0], keepdim=keepdim, dtype=dtype)
        r = x.to(dtype) if dtype is not None else x
        for k in sorted([dd % max(x.dim(), 1) for dd in d], reverse=True):
            r = r.prod(k, keepdim=keepdim)
        return r
    return f


x = randn(3, 4)
w.add("prod/all", "prod", [x], sd_attrs(None), prod_fn(None))
w.add("prod/dim1", "prod", [x], sd_attrs([1]), prod_fn([1]))
w.add("prod/dim0_keepdim", "prod", [x], sd_attrs([0], True), prod_fn([0], True))
w.add("prod/neg_dim", "prod", [x], sd_attrs([-2]), prod_fn([-2]))
w.add("prod/dims_list", "prod", [randn(2, 3, 4)], sd_attrs([0, 2]), prod_fn([0, 2]))
w.add("prod/transposed", "prod", [(randn(4, 5), "transposed")], sd_attrs([1]), prod_fn([1]))
w.add("prod/strided", "prod", [(randn(3, 4), "strided")], sd_attrs([0]), prod_fn([0]))
w.add("prod/expanded", "prod", [(randn(1, 4), "expanded", (3, 4))], sd_attrs([0]), prod_fn([0]))
w.add("prod/float64", "prod", [randn(3, 5, dtype=F64)], sd_attrs([1]), prod_fn([1]))
w.add("prod/float16", "prod", [randn(3, 5, dtype=F16)], sd_attrs([1]), via_float(prod_fn([1]), F16))
w.add("prod/bfloat16", "prod", [randn(3, 5, dtype=BF16)], sd_attrs(None), via_float(prod_fn(None), BF16))
w.add("prod/int32_to_int64", "prod", [ints(3, 4, dtype=I32)], sd_attrs([1]), prod_fn([1]))
w.add("prod/bool_to_int64", "prod", [torch.tensor([[True, False], [True, True]])], sd_attrs([1]), prod_fn([1]))
w.add("prod/bool_dtype_bool", "prod", [torch.tensor([True, False, True])], sd_attrs(None, False, BOOL), prod_fn(None, dtype=BOOL))
w.add("prod/uint8", "prod", [torch.tensor([200, 2], dtype=U8)], sd_attrs(None), prod_fn(None))
w.add("prod/uint8_dtype_uint8_wraps", "prod", [torch.tensor([200, 2], dtype=U8)], sd_attrs(None, False, U8), prod_fn(None, dtype=U8))
w.add("prod/int64_overflow_wraps", "prod", [torch.tensor([2**62, 4, 3])], sd_attrs(None), prod_fn(None))
w.add("prod/int_dtype_float32", "prod", [ints(3, 4, dtype=I32)], sd_attrs([1], False, F32), prod_fn([1], dtype=F32))
w.add("prod/empty_is_one", "prod", [torch.zeros(0, 3)], sd_attrs([0]), prod_fn([0]))
w.add("prod/empty_all", "prod", [torch.zeros(0)], sd_attrs(None), prod_fn(None))
w.add("prod/zero_d", "prod", [torch.tensor(-1.5)], sd_attrs([0]), prod_fn([0]))
w.add("prod/nan_and_zero", "prod", [torch.tensor([[0., nan], [0., inf], [2., inf]])], sd_attrs([1]), prod_fn([1]))
w.add("prod/big", "prod", [1 + q(3, 600) / 64], sd_attrs([1]), prod_fn([1]), rtol=1e-5)
w.add("prod/bad_dim", "prod", [x], sd_attrs([5]), error="IndexError")
w.add("prod/dup_dim", "prod", [x], sd_attrs([1, 1]), error="ValueError")

# ============================================================== max / min / amax / amin / argmax / argmin
for op, tfn in (("max", torch.max), ("min", torch.min)):
    w.add(f"{op}/float", op, [randn(3, 4)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/transposed", op, [(randn(3, 4), "transposed")], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/int8_edges", op, [torch.tensor([-128, 127, 0], dtype=I8)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/uint8", op, [torch.tensor([3, 255, 0], dtype=U8)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/int64_edges", op, [torch.tensor([-2**63, 2**63 - 1, 5])], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/bool", op, [torch.tensor([False, True, False])], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/nan_propagates", op, [torch.tensor([1., nan, 3.])], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/inf", op, [torch.tensor([-inf, 2., inf])], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/float16", op, [randn(7, dtype=F16)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/bfloat16", op, [randn(7, dtype=BF16)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/float64", op, [randn(7, dtype=F64)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/zero_d", op, [torch.tensor(4.)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/big", op, [q(3000)], [], lambda x, tfn=tfn: tfn(x))
    w.add(f"{op}/empty_raises", op, [torch.zeros(0, 3)], [], error="IndexError")

    dop = f"{op}_dim"
    def dfn(d, keepdim=False, tfn=tfn):
        return lambda x: tuple(tfn(x, d, keepdim=keepdim))
    x = randn(3, 5)
    w.add(f"{dop}/dim1", dop, [x], A(1, False), dfn(1))
    w.add(f"{dop}/dim0_keepdim", dop, [x], A(0, True), dfn(0, True))
    w.add(f"{dop}/neg_dim", dop, [x], A(-1, False), dfn(-1))
    w.add(f"{dop}/3d_middle", dop, [randn(2, 4, 3)], A(1, False), dfn(1))
    w.add(f"{dop}/transposed", dop, [(randn(4, 5), "transposed")], A(1, False), dfn(1))
    w.add(f"{dop}/transposed_dim0", dop, [(randn(4, 5), "transposed")], A(0, True), dfn(0, True))
    w.add(f"{dop}/strided", dop, [(randn(3, 4), "strided")], A(1, False), dfn(1))
    w.add(f"{dop}/expanded", dop, [(randn(1, 4), "expanded", (3, 4))], A(0, False), dfn(0))
    w.add(f"{dop}/ties_first_index", dop, [torch.tensor([[1., 3., 3., 1.], [0., 0., 0., 0.]])], A(1, False), dfn(1))
    w.add(f"{dop}/ties_dim0", dop, [torch.ones(4, 3)], A(0, False), dfn(0))
    w.add(f"{dop}/ties_long_row", dop, [torch.ones(2, 1000)], A(1, False), dfn(1))
    w.add(f"{dop}/nan_first_nan", dop, [torch.tensor([[1., nan, 3., nan], [nan, 2., nan, 0.]])], A(1, False), dfn(1))
    w.add(f"{dop}/nan_dim0", dop, [torch.tensor([[1., nan], [nan, 2.], [nan, 3.]])], A(0, False), dfn(0))
    w.add(f"{dop}/inf", dop, [torch.tensor([[inf, -inf, 1.]])], A(1, False), dfn(1))
    w.add(f"{dop}/all_neg_inf", dop, [torch.tensor([[-inf, -inf], [inf, inf]])], A(1, False), dfn(1))
    w.add(f"{dop}/int32", dop, [ints(3, 5, dtype=I32)], A(1, False), dfn(1))
    w.add(f"{dop}/uint8", dop, [torch.tensor([[3, 1, 1, 200]], dtype=U8)], A(1, False), dfn(1))
    w.add(f"{dop}/bool", dop, [torch.tensor([[False, True, True], [False, False, False]])], A(1, False), dfn(1))
    w.add(f"{dop}/float16", dop, [randn(3, 6, dtype=F16)], A(1, False), dfn(1))
    w.add(f"{dop}/bfloat16", dop, [randn(3, 6, dtype=BF16)], A(0, False), dfn(0))
    w.add(f"{dop}/float64", dop, [randn(3, 6, dtype=F64)], A(1, True), dfn(1, True))
    w.add(f"{dop}/zero_d", dop, [torch.tensor(2.)], A(0, False), dfn(0))
    w.add(f"{dop}/zero_d_keepdim", dop, [torch.tensor(2.)], A(-1, True), dfn(-1, True))
    w.add(f"{dop}/zero_size_kept_dim", dop, [torch.zeros(0, 3)], A(1, False), dfn(1))
    w.add(f"{dop}/big_dim0", dop, [q(300, 4)], A(0, False), dfn(0))
    w.add(f"{dop}/empty_dim_raises", dop, [torch.zeros(0, 3)], A(0, False), error="IndexError")
    w.add(f"{dop}/empty_both_raises", dop, [torch.zeros(0, 0)], A(1, False), error="IndexError")
    w.add(f"{dop}/bad_dim", dop, [x], A(2, False), error="IndexError")

for op, tfn in (("amax", torch.amax), ("amin", torch.amin)):
    def af(d, keepdim=False, tfn=tfn):
        return lambda x: tfn(x, d, keepdim)
    x = randn(3, 4)
    w.add(f"{op}/all_default", op, [x], [None, attr(False)], af([]))
    w.add(f"{op}/empty_list_all", op, [x], [dims([]), attr(False)], af([]))
    w.add(f"{op}/dim1", op, [x], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/dim0_keepdim", op, [x], [dims([0]), attr(True)], af([0], True))
    w.add(f"{op}/dims_0_2", op, [randn(2, 3, 4)], [dims([0, 2]), attr(False)], af([0, 2]))
    w.add(f"{op}/dims_neg_keepdim", op, [randn(2, 3, 4)], [dims([-1, -2]), attr(True)], af([-1, -2], True))
    w.add(f"{op}/transposed", op, [(randn(4, 5), "transposed")], [dims([0]), attr(False)], af([0]))
    w.add(f"{op}/strided", op, [(randn(3, 4), "strided")], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/expanded", op, [(randn(1, 4), "expanded", (3, 4))], [dims([0, 1]), attr(False)], af([0, 1]))
    w.add(f"{op}/nan", op, [torch.tensor([[nan, 1., 2.], [1., 2., 3.], [1., nan, -inf]])], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/nan_dim0", op, [torch.tensor([[nan, 1.], [1., 2.], [3., nan]])], [dims([0]), attr(False)], af([0]))
    w.add(f"{op}/int16", op, [ints(3, 4, dtype=I16)], [dims([0, 1]), attr(False)], af([0, 1]))
    w.add(f"{op}/int8_edges", op, [torch.tensor([[-128, 127, 0]], dtype=I8)], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/bool", op, [torch.tensor([[True, False], [False, False]])], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/float16", op, [randn(4, 5, dtype=F16)], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/bfloat16", op, [randn(4, 5, dtype=BF16)], [dims([0]), attr(False)], af([0]))
    w.add(f"{op}/float64", op, [randn(4, 5, dtype=F64)], [dims([1]), attr(True)], af([1], True))
    w.add(f"{op}/zero_d", op, [torch.tensor(-3.)], [dims([0]), attr(False)], af([0]))
    w.add(f"{op}/zero_size_kept", op, [torch.zeros(0, 3)], [dims([1]), attr(False)], af([1]))
    w.add(f"{op}/big_dim0", op, [q(300, 4)], [dims([0]), attr(False)], af([0]))
    w.add(f"{op}/big_all", op, [q(20, 60)], [None, attr(False)], af([]))
    w.add(f"{op}/empty_dim_raises", op, [torch.zeros(0, 3)], [dims([0]), attr(False)], error="IndexError")
    w.add(f"{op}/empty_all_raises", op, [torch.zeros(0, 3)], [None, attr(False)], error="IndexError")
    w.add(f"{op}/dup_dim", op, [x], [dims([0, 0]), attr(False)], error="ValueError")
    w.add(f"{op}/bad_dim", op, [x], [dims([3]), attr(False)], error="IndexError")

for op, tfn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
    def gf(d, keepdim=False, tfn=tfn):
        return lambda x: tfn(x, d, keepdim)
    x = randn(3, 5)
    w.add(f"{op}/flat", op, [x], [None, attr(False)], gf(None))
    w.add(f"{op}/flat_keepdim", op, [x], [None, attr(True)], gf(None, True))
    w.add(f"{op}/dim1", op, [x], A(1, False), gf(1))
    w.add(f"{op}/dim0_keepdim", op, [x], A(0, True), gf(0, True))
    w.add(f"{op}/neg_dim", op, [randn(2, 3, 4)], A(-2, False), gf(-2))
    w.add(f"{op}/flat_transposed", op, [(randn(4, 5), "transposed")], [None, attr(False)], gf(None))
    w.add(f"{op}/flat_strided", op, [(randn(3, 4), "strided")], [None, attr(False)], gf(None))
    w.add(f"{op}/transposed_dim0", op, [(randn(4, 5), "transposed")], A(0, False), gf(0))
    w.add(f"{op}/expanded_ties", op, [(randn(1, 4), "expanded", (3, 4))], A(0, False), gf(0))
    w.add(f"{op}/ties_first", op, [torch.tensor([1., 3., 3., 0., 0., 1.])], [None, attr(False)], gf(None))
    w.add(f"{op}/ties_all_equal_long", op, [torch.ones(5000)], [None, attr(False)], gf(None))
    w.add(f"{op}/nan_first", op, [torch.tensor([1., nan, -3., nan, 5.])], [None, attr(False)], gf(None))
    w.add(f"{op}/nan_dim", op, [torch.tensor([[1., nan, nan], [2., 0., -1.]])], A(1, False), gf(1))
    w.add(f"{op}/inf", op, [torch.tensor([inf, -inf, -inf, inf])], [None, attr(False)], gf(None))
    w.add(f"{op}/int64", op, [ints(4, 6)], A(1, False), gf(1))
    w.add(f"{op}/uint8", op, [torch.tensor([[0, 255, 255, 3]], dtype=U8)], A(1, False), gf(1))
    w.add(f"{op}/float16", op, [randn(3, 6, dtype=F16)], A(1, False), gf(1))
    w.add(f"{op}/bfloat16", op, [randn(3, 6, dtype=BF16)], [None, attr(False)], gf(None))
    w.add(f"{op}/float64", op, [randn(3, 6, dtype=F64)], A(0, False), gf(0))
    w.add(f"{op}/zero_d", op, [torch.tensor(3.)], [None, attr(False)], gf(None))
    w.add(f"{op}/zero_d_dim0", op, [torch.tensor(3.)], A(0, True), gf(0, True))
    w.add(f"{op}/zero_size_kept", op, [torch.zeros(0, 3)], A(1, False), gf(1))
    w.add(f"{op}/big_flat", op, [q(40, 100)], [None, attr(False)], gf(None))
    w.add(f"{op}/empty_flat_raises", op, [torch.zeros(0)], [None, attr(False)], error="IndexError")
    w.add(f"{op}/empty_dim_raises", op, [torch.zeros(0, 3)], A(0, False), error="IndexError")
    w.add(f"{op}/bool_raises", op, [torch.tensor([True, False])], [None, attr(False)], error="TypeError")
    w.add(f"{op}/bad_dim", op, [x], A(2, False), error="IndexError")


# ============================================================== var / std / var_mean / std_mean
def var_expect(tfn, d, corr, keepdim):
    def f(x):
        if isinstance(corr, float) and not float(corr).is_integer():
            # torch 1.13 takes an int correction: build the float one from the biased variance.
            dd = list(range(x.dim())) if d is None else d
            n = 1
            for k in dd:
                n *= x.shape[k] if x.dim() else 1
            v = torch.var(x.double(), dim=d, correction=0, keepdim=keepdim) * n / max(0.0, n - corr)
            r = v.to(x.dtype)
            if tfn is torch.std:
                r = v.sqrt().to(x.dtype)
            return r
        c = int(corr)
        if tfn in (torch.var_mean, torch.std_mean):
            return tuple(tfn(x, dim=d, correction=c, keepdim=keepdim))
        return tfn(x, dim=d, correction=c, keepdim=keepdim)
    return f


def vattrs(d, corr=1, keepdim=False):
    return [dims(d), attr(float(corr)), attr(keepdim)]


for op, tfn in (("var", torch.var), ("std", torch.std), ("var_mean", torch.var_mean), ("std_mean", torch.std_mean)):
    x = randn(4, 6)
    w.add(f"{op}/all", op, [x], vattrs(None), var_expect(tfn, None, 1, False))
    w.add(f"{op}/dim1", op, [x], vattrs([1]), var_expect(tfn, [1], 1, False))
    w.add(f"{op}/dim0_corr0_keepdim", op, [x], vattrs([0], 0, True), var_expect(tfn, [0], 0, True))
    w.add(f"{op}/dims_3d", op, [randn(3, 4, 5)], vattrs([0, 2], 2), var_expect(tfn, [0, 2], 2, False))
    w.add(f"{op}/neg_dims", op, [randn(3, 4, 5)], vattrs([-1, -2]), var_expect(tfn, [-1, -2], 1, False))
    w.add(f"{op}/transposed", op, [(randn(5, 4), "transposed")], vattrs([0]), var_expect(tfn, [0], 1, False))
    w.add(f"{op}/strided", op, [(randn(3, 5), "strided")], vattrs([1]), var_expect(tfn, [1], 1, False))
    w.add(f"{op}/expanded_zero_var", op, [(randn(1, 4), "expanded", (3, 4))], vattrs([0]), var_expect(tfn, [0], 1, False))
    w.add(f"{op}/float64", op, [randn(4, 6, dtype=F64)], vattrs([1]), var_expect(tfn, [1], 1, False))
    w.add(f"{op}/float16", op, [randn(4, 6, dtype=F16)], vattrs([1]), var_expect(tfn, [1], 1, False))
    w.add(f"{op}/bfloat16", op, [randn(4, 6, dtype=BF16)], vattrs([0]), var_expect(tfn, [0], 1, False))
    w.add(f"{op}/single_element_nan", op, [torch.tensor([3.])], vattrs(None), var_expect(tfn, None, 1, False))
    w.add(f"{op}/correction_eq_n_inf", op, [torch.arange(3.)], vattrs(None, 3), var_expect(tfn, None, 3, False))
    w.add(f"{op}/correction_gt_n_inf", op, [torch.arange(3.)], vattrs(None, 10), var_expect(tfn, None, 10, False))
    w.add(f"{op}/correction_negative", op, [torch.arange(3.)], vattrs(None, -1), var_expect(tfn, None, -1, False))
    w.add(f"{op}/empty_nan", op, [torch.zeros(0, 3)], vattrs([0]), var_expect(tfn, [0], 1, False))
    w.add(f"{op}/zero_d", op, [torch.tensor(2.)], vattrs(None), var_expect(tfn, None, 1, False))
    w.add(f"{op}/zero_d_corr0", op, [torch.tensor(2.)], vattrs([0], 0), var_expect(tfn, [0], 0, False))
    w.add(f"{op}/nan", op, [torch.tensor([[nan, 1., 2.], [1., 2., 4.]])], vattrs([1]), var_expect(tfn, [1], 1, False))
    w.add(f"{op}/inf", op, [torch.tensor([[inf, 1.], [1., 2.]])], vattrs([1]), var_expect(tfn, [1], 1, False))
    w.add(f"{op}/big_offset", op, [1000 + q(4, 600)], vattrs([1]), var_expect(tfn, [1], 1, False), rtol=2e-5)
    w.add(f"{op}/big_dim0", op, [q(600, 5)], vattrs([0]), var_expect(tfn, [0], 1, False), rtol=1e-5)
    w.add(f"{op}/int_raises", op, [ints(3, 4)], vattrs(None), error="TypeError")
    w.add(f"{op}/bool_raises", op, [torch.tensor([True])], vattrs(None), error="TypeError")
    w.add(f"{op}/bad_dim", op, [x], vattrs([2]), error="IndexError")
    w.add(f"{op}/dup_dim", op, [x], vattrs([1, -1]), error="ValueError")
for op, tfn in (("var", torch.var), ("std", torch.std)):
    w.add(f"{op}/float_correction", op, [randn(4, 6)], vattrs([1], 1.5), var_expect(tfn, [1], 1.5, False), rtol=1e-5)


# ============================================================== logsumexp
def lse(d, keepdim=False):
    return lambda x: torch.logsumexp(x, d, keepdim)


x = randn(3, 5)
w.add("logsumexp/dim1", "logsumexp", [x], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/dim0_keepdim", "logsumexp", [x], [dims([0]), attr(True)], lse([0], True))
w.add("logsumexp/dims", "logsumexp", [randn(2, 3, 4)], [dims([0, 2]), attr(False)], lse([0, 2]))
w.add("logsumexp/all_none", "logsumexp", [x], [None, attr(False)], lse([0, 1]))
w.add("logsumexp/transposed", "logsumexp", [(randn(4, 5), "transposed")], [dims([0]), attr(False)], lse([0]))
w.add("logsumexp/strided", "logsumexp", [(randn(3, 4), "strided")], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/expanded", "logsumexp", [(randn(1, 4), "expanded", (3, 4))], [dims([0]), attr(False)], lse([0]))
w.add("logsumexp/int_to_float", "logsumexp", [ints(2, 3)], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/bool_to_float", "logsumexp", [torch.tensor([[True, False, True]])], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/float64", "logsumexp", [randn(3, 5, dtype=F64)], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/float16", "logsumexp", [randn(3, 5, dtype=F16)], [dims([1]), attr(False)], via_float(lse([1]), F16))
w.add("logsumexp/bfloat16", "logsumexp", [randn(3, 5, dtype=BF16)], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/large_values", "logsumexp", [torch.tensor([[1000., 1000.], [-1000., -1001.]])], [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/inf_cases", "logsumexp",
      [torch.tensor([[inf, 1.], [inf, inf], [inf, -inf], [-inf, -inf], [nan, inf], [1., nan]])],
      [dims([1]), attr(False)], lse([1]))
w.add("logsumexp/empty_neg_inf", "logsumexp", [torch.zeros(0, 2)], [dims([0]), attr(False)], lse([0]))
w.add("logsumexp/zero_d", "logsumexp", [torch.tensor(2.)], [dims([0]), attr(False)], lse([0]))
w.add("logsumexp/big", "logsumexp", [3 * q(4, 600)], [dims([1]), attr(False)], lse([1]), rtol=1e-5)
w.add("logsumexp/big_dim0", "logsumexp", [q(600, 5)], [dims([0]), attr(False)], lse([0]), rtol=1e-5)
w.add("logsumexp/bad_dim", "logsumexp", [x], [dims([4]), attr(False)], error="IndexError")
w.add("logsumexp/dup_dim", "logsumexp", [x], [dims([1, 1]), attr(False)], error="ValueError")


# ============================================================== norm
def nrm(p, d=None, keepdim=False, dtype=None):
    def f(x):
        if d is None:
            return torch.norm(x, p, dtype=dtype) if dtype is not None else torch.norm(x, p)
        if dtype is not None:
            return torch.norm(x, p, d, keepdim, dtype=dtype)
        return torch.norm(x, p, d, keepdim)
    return f


def pattr(p):
    return attr(p) if isinstance(p, str) else attr(p, "scalar")


x = randn(3, 5)
for name, p in (("p2", 2), ("p1", 1), ("pinf", inf), ("pneginf", -inf), ("p0", 0), ("p3", 3), ("p0_5", 0.5),
                ("pneg1", -1), ("pneg2", -2), ("fro", "fro")):
    w.add(f"norm/{name}_all", "norm", [x], [pattr(p), None, attr(False), None], nrm(p))
    w.add(f"norm/{name}_dim1", "norm", [x], [pattr(p), dims([1]), attr(False), None], nrm(p, [1]))
    w.add(f"norm/{name}_dim0_keepdim", "norm", [x], [pattr(p), dims([0]), attr(True), None], nrm(p, [0], True))
    w.add(f"norm/{name}_empty", "norm", [torch.zeros(0, 3)], [pattr(p), dims([0]), attr(False), None], nrm(p, [0]))
w.add("norm/default_attrs", "norm", [x], [], nrm(2))
w.add("norm/p_int_scalar", "norm", [x], [attr(3, "scalar"), None, attr(False), None], nrm(3))
w.add("norm/with_zero_neg_p", "norm", [torch.tensor([1., 2., 0.])], [attr(-1, "scalar"), None, attr(False), None], nrm(-1))
w.add("norm/dims_3d", "norm", [randn(2, 3, 4)], [pattr(2), dims([0, 2]), attr(False), None], nrm(2, [0, 2]))
w.add("norm/three_dims", "norm", [randn(2, 2, 3)], [pattr(2), dims([0, 1, 2]), attr(False), None], nrm(2, [0, 1, 2]))
w.add("norm/transposed", "norm", [(randn(4, 5), "transposed")], [pattr(1), dims([0]), attr(False), None], nrm(1, [0]))
w.add("norm/strided", "norm", [(randn(3, 4), "strided")], [pattr(2), dims([1]), attr(False), None], nrm(2, [1]))
w.add("norm/expanded", "norm", [(randn(1, 4), "expanded", (3, 4))], [pattr(inf), dims([0]), attr(False), None], nrm(inf, [0]))
w.add("norm/float64", "norm", [randn(3, 5, dtype=F64)], [pattr(3), dims([1]), attr(False), None], nrm(3, [1]))
w.add("norm/float16", "norm", [randn(3, 5, dtype=F16)], [pattr(2), dims([1]), attr(False), None], nrm(2, [1]))
w.add("norm/bfloat16", "norm", [randn(3, 5, dtype=BF16)], [pattr(1), None, attr(False), None], nrm(1))
w.add("norm/dtype_float64", "norm", [x], [pattr(2), None, attr(False), attr(F64)], nrm(2, None, False, F64))
w.add("norm/nan_inf", "norm", [torch.tensor([[1., nan], [1., inf]])], [pattr(inf), dims([1]), attr(False), None], nrm(inf, [1]))
w.add("norm/nan_neginf", "norm", [torch.tensor([[1., nan], [1., -2.]])], [pattr(-inf), dims([1]), attr(False), None], nrm(-inf, [1]))
w.add("norm/nan_p2", "norm", [torch.tensor([[1., nan], [3., 4.]])], [pattr(2), dims([1]), attr(False), None], nrm(2, [1]))
w.add("norm/overflow_inf", "norm", [torch.tensor([1e30, 1e30])], [pattr(2), None, attr(False), None], nrm(2))
w.add("norm/zero_d", "norm", [torch.tensor(-2.)], [pattr(2), dims([0]), attr(False), None], nrm(2, [0]))
w.add("norm/big", "norm", [q(4, 600)], [pattr(2), dims([1]), attr(False), None], nrm(2, [1]), rtol=1e-5)
w.add("norm/int_raises", "norm", [ints(3)], [pattr(2), None, attr(False), None], error="TypeError")
w.add("norm/bool_raises", "norm", [torch.tensor([True])], [pattr(2), None, attr(False), None], error="TypeError")
w.add("norm/nuc_not_implemented", "norm", [x], [attr("nuc"), None, attr(False), None], error="NotImplementedError")
w.add("norm/bad_string", "norm", [x], [attr("abc"), None, attr(False), None], error="ValueError")
w.add("norm/bad_dim", "norm", [x], [pattr(2), dims([3]), attr(False), None], error="IndexError")
w.add("norm/dup_dim", "norm", [x], [pattr(2), dims([1, 1]), attr(False), None], error="ValueError")
w.add("norm/dtype_int_raises", "norm", [x], [pattr(2), None, attr(False), attr(I64)], error="TypeError")


# ============================================================== all / any / count_nonzero
def logical(tfn, d, keepdim=False):
    def f(x):
        if d is None or len(d) == 0:
            r = tfn(x)
            return r.reshape([1] * x.dim()) if keepdim else r
        r = x
        for k in sorted([dd % max(x.dim(), 1) for dd in d], reverse=True):
            r = tfn(r, k, keepdim)
        return r
    return f


for op, tfn in (("all", torch.all), ("any", torch.any)):
    b = torch.tensor([[True, False, True], [True, True, True]])
    w.add(f"{op}/bool_all", op, [b], [None, attr(False)], logical(tfn, None))
    w.add(f"{op}/bool_dim1", op, [b], [dims([1]), attr(False)], logical(tfn, [1]))
    w.add(f"{op}/bool_dim0_keepdim", op, [b], [dims([0]), attr(True)], logical(tfn, [0], True))
    w.add(f"{op}/dims_list", op, [torch.rand(2, 3, 4) > 0.3], [dims([0, 2]), attr(False)], logical(tfn, [0, 2]))
    w.add(f"{op}/keepdim_all", op, [b], [dims([]), attr(True)], logical(tfn, [], True))
    w.add(f"{op}/float_nan_nonzero", op, [torch.tensor([[nan, 1.], [0., -0.], [nan, 0.]])], [dims([1]), attr(False)], logical(tfn, [1]))
    w.add(f"{op}/int", op, [ints(3, 4, lo=0, hi=2)], [dims([1]), attr(False)], logical(tfn, [1]))
    w.add(f"{op}/uint8_out_uint8", op, [torch.tensor([[0, 3], [1, 2]], dtype=U8)], [dims([1]), attr(False)], logical(tfn, [1]))
    w.add(f"{op}/uint8_all_out_uint8", op, [torch.tensor([0, 3], dtype=U8)], [None, attr(False)], logical(tfn, None))
    w.add(f"{op}/float16", op, [torch.tensor([[0., 0.5], [0.25, 1.]], dtype=F16)], [dims([0]), attr(False)], logical(tfn, [0]))
    w.add(f"{op}/transposed", op, [(torch.rand(4, 5) > 0.2, "transposed")], [dims([0]), attr(False)], logical(tfn, [0]))
    w.add(f"{op}/strided", op, [(torch.rand(3, 4) > 0.5, "strided")], [dims([1]), attr(False)], logical(tfn, [1]))
    w.add(f"{op}/expanded", op, [(torch.tensor([[True, False]]), "expanded", (3, 2))], [dims([0]), attr(False)], logical(tfn, [0]))
    w.add(f"{op}/empty", op, [torch.zeros(0, 3)], [dims([0]), attr(False)], logical(tfn, [0]))
    w.add(f"{op}/empty_all", op, [torch.zeros(0)], [None, attr(False)], logical(tfn, None))
    w.add(f"{op}/zero_d", op, [torch.tensor(0.)], [dims([0]), attr(False)], logical(tfn, [0]))
    w.add(f"{op}/big", op, [torch.rand(4, 600) > 0.001], [dims([1]), attr(False)], logical(tfn, [1]))
    w.add(f"{op}/bad_dim", op, [b], [dims([2]), attr(False)], error="IndexError")
    w.add(f"{op}/dup_dim", op, [b], [dims([0, -2]), attr(False)], error="ValueError")


def cnz(d):
    return lambda x: torch.count_nonzero(x) if d is None else torch.count_nonzero(x, d)


i = ints(3, 4, lo=0, hi=3)
w.add("count_nonzero/all", "count_nonzero", [i], [None], cnz(None))
w.add("count_nonzero/empty_list_all", "count_nonzero", [i], [dims([])], cnz([]))
w.add("count_nonzero/dim1", "count_nonzero", [i], [dims([1])], cnz([1]))
w.add("count_nonzero/dims", "count_nonzero", [ints(2, 3, 4, lo=0, hi=2)], [dims([0, 2])], cnz([0, 2]))
w.add("count_nonzero/float_nan_negzero", "count_nonzero", [torch.tensor([nan, 0., -0., 2.])], [None], cnz(None))
w.add("count_nonzero/bool", "count_nonzero", [torch.tensor([[True, False, True]])], [dims([1])], cnz([1]))
w.add("count_nonzero/float16", "count_nonzero", [torch.tensor([0., 1., 0.5], dtype=F16)], [None], cnz(None))
w.add("count_nonzero/transposed", "count_nonzero", [(ints(4, 5, lo=0, hi=2), "transposed")], [dims([0])], cnz([0]))
w.add("count_nonzero/empty", "count_nonzero", [torch.zeros(0, 3)], [dims([0])], cnz([0]))
w.add("count_nonzero/zero_d", "count_nonzero", [torch.tensor(3.)], [dims([0])], cnz([0]))
w.add("count_nonzero/bad_dim", "count_nonzero", [i], [dims([2])], error="IndexError")
w.add("count_nonzero/dup_dim", "count_nonzero", [i], [dims([1, 1])], error="ValueError")


# ============================================================== cumsum / cumprod / cummax / cummin
def cum(tfn, d, dtype=None):
    return lambda x: tfn(x, d, dtype=dtype) if dtype is not None else tfn(x, d)


for op, tfn in (("cumsum", torch.cumsum), ("cumprod", torch.cumprod)):
    x = randn(3, 5)
    w.add(f"{op}/dim1", op, [x], [attr(1), None], cum(tfn, 1))
    w.add(f"{op}/dim0", op, [x], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/neg_dim", op, [randn(2, 3, 4)], [attr(-2), None], cum(tfn, -2))
    w.add(f"{op}/transposed", op, [(randn(4, 5), "transposed")], [attr(1), None], cum(tfn, 1))
    w.add(f"{op}/strided", op, [(randn(3, 4), "strided")], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/expanded", op, [(randn(1, 4), "expanded", (3, 4))], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/int32_to_int64", op, [ints(3, 4, dtype=I32)], [attr(1), None], cum(tfn, 1))
    w.add(f"{op}/uint8_to_int64", op, [torch.tensor([200, 100, 3], dtype=U8)], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/bool_to_int64", op, [torch.tensor([[True, False, True]])], [attr(1), None], cum(tfn, 1))
    w.add(f"{op}/dtype_float64", op, [ints(3, 4, dtype=I32)], [attr(1), attr(F64)], cum(tfn, 1, F64))
    w.add(f"{op}/float_dtype_int32", op, [torch.tensor([0.5, 1.7, 2.9])], [attr(0), attr(I32)], cum(tfn, 0, I32))
    w.add(f"{op}/float64", op, [randn(3, 5, dtype=F64)], [attr(1), None], cum(tfn, 1))
    w.add(f"{op}/float16", op, [randn(3, 5, dtype=F16)], [attr(1), None], via_float(cum(tfn, 1), F16))
    w.add(f"{op}/bfloat16", op, [randn(3, 5, dtype=BF16)], [attr(0), None], via_float(cum(tfn, 0), BF16))
    w.add(f"{op}/nan", op, [torch.tensor([1., nan, 2.])], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/zero_d", op, [torch.tensor(3.)], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/zero_d_neg", op, [torch.tensor(3.)], [attr(-1), None], cum(tfn, -1))
    w.add(f"{op}/empty", op, [torch.zeros(0, 3)], [attr(0), None], cum(tfn, 0))
    w.add(f"{op}/big_dim0", op, [q(60, 10) if op == "cumsum" else 1 + q(60, 10) / 512], [attr(0), None],
          cum(tfn, 0), rtol=1e-5)
    w.add(f"{op}/big_dim1", op, [q(2, 700) if op == "cumsum" else 1 + q(2, 300) / 512], [attr(1), None],
          cum(tfn, 1), rtol=1e-5)
    w.add(f"{op}/bad_dim", op, [x], [attr(2), None], error="IndexError")
    w.add(f"{op}/zero_d_bad_dim", op, [torch.tensor(3.)], [attr(1), None], error="IndexError")
w.add("cumsum/int64_overflow_wraps", "cumsum", [torch.tensor([2**62, 2**62, 2**62])], [attr(0), None], cum(torch.cumsum, 0))
w.add("cumprod/zeros_inf", "cumprod", [torch.tensor([2., 0., inf, 3.])], [attr(0), None], cum(torch.cumprod, 0))

for op, tfn in (("cummax", torch.cummax), ("cummin", torch.cummin)):
    def cf(d, tfn=tfn):
        return lambda x: tuple(tfn(x, d))
    w.add(f"{op}/ties_last_index", op, [torch.tensor([1., 3., 3., 2., 5., 5., 0.])], [attr(0)], cf(0))
    w.add(f"{op}/ties_min", op, [torch.tensor([3., 1., 1., 2., 0., 0.])], [attr(0)], cf(0))
    w.add(f"{op}/nan_sticks", op, [torch.tensor([1., nan, 3., nan, 5.])], [attr(0)], cf(0))
    w.add(f"{op}/nan_first", op, [torch.tensor([nan, 1., -1.])], [attr(0)], cf(0))
    w.add(f"{op}/inf", op, [torch.tensor([-inf, inf, 0., -inf])], [attr(0)], cf(0))
    w.add(f"{op}/dim1", op, [randn(3, 6)], [attr(1)], cf(1))
    w.add(f"{op}/dim0", op, [randn(5, 3)], [attr(0)], cf(0))
    w.add(f"{op}/neg_dim", op, [randn(2, 3, 4)], [attr(-2)], cf(-2))
    w.add(f"{op}/transposed", op, [(randn(4, 5), "transposed")], [attr(0)], cf(0))
    w.add(f"{op}/strided", op, [(randn(3, 4), "strided")], [attr(1)], cf(1))
    w.add(f"{op}/int", op, [ints(3, 6)], [attr(1)], cf(1))
    w.add(f"{op}/int8_edges", op, [torch.tensor([0, -128, 127, -128, 127], dtype=I8)], [attr(0)], cf(0))
    w.add(f"{op}/bool", op, [torch.tensor([False, True, False, True])], [attr(0)], cf(0))
    w.add(f"{op}/float64", op, [randn(3, 6, dtype=F64)], [attr(1)], cf(1))
    w.add(f"{op}/float16", op, [randn(3, 6, dtype=F16)], [attr(1)], via_float(cf(1), F16))
    w.add(f"{op}/bfloat16", op, [randn(6, 3, dtype=BF16)], [attr(0)], via_float(cf(0), BF16))
    w.add(f"{op}/zero_d", op, [torch.tensor(2.)], [attr(0)], cf(0))
    w.add(f"{op}/empty", op, [torch.zeros(0, 3)], [attr(0)], cf(0))
    w.add(f"{op}/big_dim0", op, [q(60, 10)], [attr(0)], cf(0))
    w.add(f"{op}/bad_dim", op, [randn(3)], [attr(1)], error="IndexError")

w.write(OUT)
