#!/usr/bin/python3
"""Oracle cases for isclose/allclose/equal, diag/diag_embed, take, index_copy(_)/index_fill(_),
logcumsumexp, median/median_dim/mode and Tensor.unfold.

Run: /usr/bin/python3 tests/oracle/gen_more_ops.py  ->  tests/data/oracle/more_ops.json
Op schemas (tensor inputs; attrs in order) follow src/tandem/ops/{pointwise_close,index_copy_fill,
reduce_scan,median_mode,shape}.cpp.

Where PyTorch's returned index is not determined (median along a dim with tied values;
mode on lines longer than 16 elements, whose index depends on std::sort's introsort, or
with NaN, whose order under `<` is undefined) the cases compare the values output only.
index_copy with repeated indices is left to tests/ops/test_more_ops.cpp (PyTorch documents
the result as nondeterministic).
"""
import os

import torch
from oracle_lib import DTYPES, CaseWriter, attr, rnd

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "more_ops.json")
torch.manual_seed(0)
w = CaseWriter()

ALL = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
       torch.float16, torch.bfloat16, torch.float32, torch.float64]
NUMERIC = [d for d in ALL if d != torch.bool]
nan, inf = float("nan"), float("inf")


def small_ints(shape, dtype, hi=4):
    """Values in [0, hi): many repeats (for mode)."""
    t = torch.randint(0, hi, shape)
    return (t > 1) if dtype == torch.bool else t.to(dtype)


def distinct(shape, dtype=torch.float32):
    n = 1
    for s in shape:
        n *= s
    v = torch.randperm(n).to(torch.float64) - n // 2
    return v.reshape(shape).to(dtype)


def L(t):
    return torch.tensor(t, dtype=torch.int64)


def B(t):
    return torch.tensor(t, dtype=torch.bool)


def F(t, dtype=torch.float32):
    return torch.tensor(t, dtype=dtype)


def a(v):
    return attr(v)


def s(v):
    return attr(v, "scalar")


def near(x):
    """x with about half the elements nudged by ~1e-6 relative and some by 1e-3."""
    if not x.dtype.is_floating_point:
        y = x.clone()
        y.view(-1)[::3] = y.view(-1)[::3] ^ 1 if x.dtype == torch.bool else y.view(-1)[::3] + 1
        return y
    noise = torch.randn(x.shape) * torch.where(torch.rand(x.shape) > 0.5, 1e-6, 1e-3)
    return (x.to(torch.float64) * (1 + noise)).to(x.dtype)


# ---------------------------------------------------------------------------- isclose
def isclose(rtol=1e-5, atol=1e-8, equal_nan=False):
    return lambda x, y: torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)


def close_attrs(rtol=1e-5, atol=1e-8, equal_nan=False):
    return [a(float(rtol)), a(float(atol)), a(equal_nan)]


for dt in ALL:
    x = rnd((3, 4), dt)
    w.add(f"isclose/default/{DTYPES[dt]}", "isclose", [x, near(x)], close_attrs(), isclose())
    w.add(f"isclose/loose/{DTYPES[dt]}", "isclose", [x, near(x)], close_attrs(1e-2, 0.5), isclose(1e-2, 0.5))
w.add("isclose/broadcast", "isclose", [rnd((2, 3)), rnd((3,))], close_attrs(0.5, 0.5), isclose(0.5, 0.5))
x = rnd((3, 4))
w.add("isclose/transposed_expanded", "isclose", [(x, "transposed"), (near(x)[:1], "expanded", (3, 4))],
      close_attrs(1e-3, 1e-3), isclose(1e-3, 1e-3))
x = rnd((3, 6))
w.add("isclose/strided", "isclose", [(x, "strided"), near(x)], close_attrs(1e-4), isclose(1e-4))
special = F([inf, -inf, inf, nan, nan, 1.0, -0.0, 1e30, 0.0])
other = F([inf, -inf, -inf, nan, 1.0, nan, 0.0, 1.0000001e30, 1e-9])
w.add("isclose/special", "isclose", [special, other], close_attrs(), isclose())
w.add("isclose/special_equal_nan", "isclose", [special, other], close_attrs(equal_nan=True), isclose(equal_nan=True))
w.add("isclose/special_f64_equal_nan", "isclose", [special.double(), other.double()], close_attrs(0, 0, True),
      isclose(0, 0, True))
w.add("isclose/zero_tol", "isclose", [F([1.0, 1.0 + 1e-7, 2.0]), F([1.0, 1.0, 2.0])], close_attrs(0, 0), isclose(0, 0))
w.add("isclose/int_zero_tol", "isclose", [L([1, 2, 3]), L([1, 3, 3])], close_attrs(0, 0), isclose(0, 0))
w.add("isclose/int8_no_wrap", "isclose", [torch.tensor([100, 5], dtype=torch.int8), torch.tensor([-100, 6], dtype=torch.int8)],
      close_attrs(atol=100), isclose(atol=100))
w.add("isclose/int64_rounds_in_float32", "isclose", [L([2**40 + 1, 2**40 + 1]), L([2**40, 2**40 - 1000000])],
      close_attrs(0, 0.5), isclose(0, 0.5))
w.add("isclose/half_rounding", "isclose", [F([1.0, 2.0, 100.0], torch.float16), F([1.001, 2.01, 100.1], torch.float16)],
      close_attrs(1e-3), isclose(1e-3))
w.add("isclose/bool", "isclose", [B([True, False, True]), B([True, True, False])], close_attrs(), isclose())
w.add("isclose/bool_atol1", "isclose", [B([True, False]), B([False, True])], close_attrs(0, 1), isclose(0, 1))
w.add("isclose/0d", "isclose", [torch.tensor(1.0), torch.tensor(1.0 + 1e-6)], close_attrs(), isclose())
w.add("isclose/zero_size", "isclose", [rnd((0, 3)), rnd((1, 3))], close_attrs(), isclose())
w.add("isclose/err_dtype", "isclose", [L([1, 2]), F([1.0, 2.0])], close_attrs(), error="TypeError")
w.add("isclose/err_dtype_f32_f64", "isclose", [F([1.0]), F([1.0], torch.float64)], close_attrs(), error="TypeError")
w.add("isclose/err_rtol", "isclose", [F([1.0]), F([1.0])], close_attrs(-1.0), error="ValueError")
w.add("isclose/err_atol", "isclose", [F([1.0]), F([1.0])], close_attrs(atol=-1.0), error="ValueError")
w.add("isclose/err_shape", "isclose", [rnd((2, 3)), rnd((4,))], close_attrs(), error="ShapeError")

# ---------------------------------------------------------------------------- allclose
def allclose(rtol=1e-5, atol=1e-8, equal_nan=False):
    return lambda x, y: torch.tensor(torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan))


x = rnd((3, 4))
w.add("allclose/true", "allclose", [x, x + 1e-9], close_attrs(), allclose())
w.add("allclose/false", "allclose", [x, x + 1e-3], close_attrs(), allclose())
w.add("allclose/broadcast", "allclose", [torch.ones(2, 3), torch.ones(3)], close_attrs(), allclose())
w.add("allclose/nan", "allclose", [F([1.0, nan]), F([1.0, nan])], close_attrs(), allclose())
w.add("allclose/nan_equal", "allclose", [F([1.0, nan]), F([1.0, nan])], close_attrs(equal_nan=True), allclose(equal_nan=True))
w.add("allclose/int", "allclose", [L([1, 2]), L([1, 2])], close_attrs(), allclose())
w.add("allclose/empty", "allclose", [rnd((0,)), rnd((0,))], close_attrs(), allclose())
w.add("allclose/transposed", "allclose", [(x.clone(), "transposed"), x], close_attrs(), allclose())
w.add("allclose/err_dtype", "allclose", [torch.ones(3), torch.ones(3, dtype=torch.float64)], close_attrs(),
      error="TypeError")
w.add("allclose/err_shape", "allclose", [torch.ones(3), torch.ones(2)], close_attrs(), error="ShapeError")
w.add("allclose/err_rtol", "allclose", [torch.ones(3), torch.ones(3)], close_attrs(-0.5), error="ValueError")

# ---------------------------------------------------------------------------- equal
def equal(x, y):
    return torch.tensor(torch.equal(x, y))


x = rnd((3, 4))
w.add("equal/same", "equal", [x, x.clone()], [], equal)
w.add("equal/one_differs", "equal", [x, torch.where(torch.arange(12).view(3, 4) == 7, x + 1, x)], [], equal)
w.add("equal/sizes_differ_broadcastable", "equal", [torch.ones(2, 3), torch.ones(3)], [], equal)
w.add("equal/sizes_differ", "equal", [torch.ones(2, 3), torch.ones(3, 2)], [], equal)
w.add("equal/1_vs_0d", "equal", [torch.ones(1), torch.ones(())], [], equal)
w.add("equal/promote_float_double", "equal", [torch.ones(3), torch.ones(3, dtype=torch.float64)], [], equal)
w.add("equal/promote_float_int", "equal", [F([1.0, 2.0]), L([1, 2])], [], equal)
w.add("equal/promote_float_int_differs", "equal", [F([1.0, 2.5]), L([1, 2])], [], equal)
w.add("equal/nan", "equal", [F([nan]), F([nan])], [], equal)
w.add("equal/empty", "equal", [torch.ones(0, 2), torch.ones(0, 2)], [], equal)
w.add("equal/bool", "equal", [B([True, False]), B([True, False])], [], equal)
w.add("equal/transposed", "equal", [(x.clone(), "transposed"), x], [], equal)
w.add("equal/0d", "equal", [torch.tensor(3), torch.tensor(3)], [], equal)

# ---------------------------------------------------------------------------- diag, diag_embed
for dt in ALL:
    # PyTorch 1.13 has no CPU float16 diag; tandem has (a copy either way): float32 oracle.
    w.add(f"diag/vector/{DTYPES[dt]}", "diag", [rnd((3,), dt)], [a(0)],
          lambda t: torch.diag(t.float()).to(t.dtype) if t.dtype == torch.float16 else torch.diag(t))
for k in (2, -1):
    w.add(f"diag/vector_offset_{k}", "diag", [rnd((3,))], [a(k)], lambda t, k=k: torch.diag(t, k))
    w.add(f"diag/matrix_offset_{k}", "diag", [rnd((3, 4))], [a(k)], lambda t, k=k: torch.diag(t, k))
w.add("diag/matrix", "diag", [rnd((3, 4), torch.int64)], [a(0)], lambda t: torch.diag(t))
w.add("diag/matrix_transposed", "diag", [(rnd((4, 3)), "transposed")], [a(1)], lambda t: torch.diag(t, 1))
w.add("diag/matrix_offset_past_end", "diag", [rnd((2, 3))], [a(3)], lambda t: torch.diag(t, 3))
w.add("diag/matrix_offset_neg_edge", "diag", [rnd((2, 3))], [a(-2)], lambda t: torch.diag(t, -2))
w.add("diag/empty_vector_offset", "diag", [rnd((0,))], [a(1)], lambda t: torch.diag(t, 1))
w.add("diag/strided_vector", "diag", [(rnd((4,)), "strided")], [a(0)], lambda t: torch.diag(t))
w.add("diag/err_3d", "diag", [rnd((2, 2, 2))], [a(0)], error="ShapeError")
w.add("diag/err_0d", "diag", [torch.tensor(1.0)], [a(0)], error="ShapeError")

for dt in ALL:
    w.add(f"diag_embed/default/{DTYPES[dt]}", "diag_embed", [rnd((2, 3), dt)], [a(0), a(-2), a(-1)],
          lambda t: torch.diag_embed(t))
w.add("diag_embed/1d", "diag_embed", [rnd((3,))], [a(0), a(-2), a(-1)], lambda t: torch.diag_embed(t))
w.add("diag_embed/offset1_dims02", "diag_embed", [rnd((2, 3))], [a(1), a(0), a(2)], lambda t: torch.diag_embed(t, 1, 0, 2))
w.add("diag_embed/offset_neg2_dims20", "diag_embed", [rnd((2, 3))], [a(-2), a(2), a(0)],
      lambda t: torch.diag_embed(t, -2, 2, 0))
w.add("diag_embed/3d_middle", "diag_embed", [rnd((2, 3, 2))], [a(0), a(1), a(2)], lambda t: torch.diag_embed(t, 0, 1, 2))
w.add("diag_embed/dims30", "diag_embed", [rnd((2, 3, 2))], [a(1), a(3), a(0)], lambda t: torch.diag_embed(t, 1, 3, 0))
w.add("diag_embed/transposed", "diag_embed", [(rnd((3, 2)), "transposed")], [a(0), a(-2), a(-1)],
      lambda t: torch.diag_embed(t))
w.add("diag_embed/zero_size", "diag_embed", [rnd((0, 2))], [a(-1), a(-2), a(-1)], lambda t: torch.diag_embed(t, -1))
w.add("diag_embed/empty_last", "diag_embed", [rnd((2, 0))], [a(1), a(-2), a(-1)], lambda t: torch.diag_embed(t, 1))
w.add("diag_embed/err_0d", "diag_embed", [torch.tensor(1.0)], [a(0), a(-2), a(-1)], error="IndexError")
w.add("diag_embed/err_same_dims", "diag_embed", [rnd((2,))], [a(0), a(0), a(0)], error="ValueError")
w.add("diag_embed/err_dim_range", "diag_embed", [rnd((2, 3))], [a(0), a(3), a(0)], error="IndexError")

# ---------------------------------------------------------------------------- take
for dt in ALL:
    w.add(f"take/{DTYPES[dt]}", "take", [rnd((3, 4), dt), L([[0, 11], [5, 5], [-1, -12]])], [],
          lambda t, i: torch.take(t, i))
w.add("take/transposed_self", "take", [(rnd((4, 3)), "transposed"), L([0, 1, 2, 3, 4, 11])], [], lambda t, i: torch.take(t, i))
w.add("take/strided_index", "take", [rnd((2, 3)), (L([5, 0, 4, 1, 3, 2]), "strided")], [], lambda t, i: torch.take(t, i))
w.add("take/expanded_self", "take", [(rnd((1, 3)), "expanded", (2, 3)), L([0, 4, 5])], [], lambda t, i: torch.take(t, i))
w.add("take/0d_self", "take", [torch.tensor(5.0), L([0, -1, 0])], [], lambda t, i: torch.take(t, i))
w.add("take/0d_index", "take", [rnd((2, 3)), torch.tensor(4)], [], lambda t, i: torch.take(t, i))
w.add("take/empty_index", "take", [rnd((2, 3)), torch.zeros(2, 0, dtype=torch.long)], [], lambda t, i: torch.take(t, i))
w.add("take/empty_self_empty_index", "take", [rnd((0,)), torch.zeros(0, dtype=torch.long)], [], lambda t, i: torch.take(t, i))
w.add("take/err_oob", "take", [rnd((2, 3)), L([6])], [], error="IndexError")
w.add("take/err_oob_negative", "take", [rnd((2, 3)), L([-7])], [], error="IndexError")
w.add("take/err_empty_self", "take", [rnd((0,)), L([0])], [], error="IndexError")
w.add("take/err_int32_index", "take", [rnd((2, 3)), torch.tensor([1], dtype=torch.int32)], [], error="TypeError")
w.add("take/err_float_index", "take", [rnd((2, 3)), F([1.0])], [], error="TypeError")

# ---------------------------------------------------------------------------- index_copy
for dt in ALL:
    w.add(f"index_copy/dim0/{DTYPES[dt]}", "index_copy", [rnd((4, 3), dt), L([3, 0]), rnd((2, 3), dt)], [a(0)],
          lambda t, i, v: t.index_copy(0, i, v))
w.add("index_copy/dim1", "index_copy", [rnd((2, 5)), L([4, 1, 2]), rnd((2, 3))], [a(1)], lambda t, i, v: t.index_copy(1, i, v))
w.add("index_copy/neg_dim_3d", "index_copy", [rnd((2, 3, 4)), L([1, 3]), rnd((2, 3, 2))], [a(-1)],
      lambda t, i, v: t.index_copy(-1, i, v))
w.add("index_copy/noncontig", "index_copy", [(rnd((4, 3)), "transposed"), L([2]), (rnd((4, 1)), "strided")], [a(1)],
      lambda t, i, v: t.index_copy(1, i, v))
w.add("index_copy/0d_index", "index_copy", [rnd((3,)), torch.tensor(1), torch.tensor(7.0)], [a(0)],
      lambda t, i, v: t.index_copy(0, i, v))
w.add("index_copy/0d_self", "index_copy", [torch.tensor(0.0), L([0]), torch.tensor(3.0)], [a(0)],
      lambda t, i, v: t.index_copy(0, i, v))
w.add("index_copy/empty_index", "index_copy", [rnd((2, 3)), torch.zeros(0, dtype=torch.long), rnd((0, 3))], [a(0)],
      lambda t, i, v: t.index_copy(0, i, v))
w.add("index_copy_/inplace", "index_copy_", [rnd((4, 3)), L([1, 2]), rnd((2, 3))], [a(0)],
      lambda t, i, v: t.clone().index_copy_(0, i, v))
w.add("index_copy_/inplace_transposed", "index_copy_", [(rnd((3, 4)), "transposed"), L([0]), rnd((3, 1))], [a(1)],
      lambda t, i, v: t.clone().index_copy_(1, i, v))
w.add("index_copy/err_oob", "index_copy", [rnd((3, 2)), L([3, 0]), rnd((2, 2))], [a(0)], error="IndexError")
w.add("index_copy/err_negative", "index_copy", [rnd((3, 2)), L([-1, 0]), rnd((2, 2))], [a(0)], error="IndexError")
w.add("index_copy/err_int32", "index_copy", [rnd((3, 2)), torch.tensor([1], dtype=torch.int32), rnd((1, 2))], [a(0)],
      error="TypeError")
w.add("index_copy/err_dtype", "index_copy", [rnd((3, 2)), L([1]), rnd((1, 2), torch.float64)], [a(0)], error="TypeError")
w.add("index_copy/err_count", "index_copy", [rnd((3, 2)), L([2, 0]), rnd((3, 2))], [a(0)], error="IndexError")
w.add("index_copy/err_slice_shape", "index_copy", [rnd((3, 2)), L([2, 0]), rnd((2, 3))], [a(0)], error="ShapeError")
w.add("index_copy/err_ndim", "index_copy", [rnd((3, 2)), L([2]), rnd((1, 2, 1))], [a(0)], error="ShapeError")
w.add("index_copy/err_index_2d", "index_copy", [rnd((3, 2)), L([[2, 0]]), rnd((2, 2))], [a(0)], error="IndexError")
w.add("index_copy/err_dim", "index_copy", [rnd((3, 2)), L([0]), rnd((1, 2))], [a(2)], error="IndexError")

# ---------------------------------------------------------------------------- index_fill
for dt in ALL:
    v = True if dt == torch.bool else 3
    w.add(f"index_fill/dim0/{DTYPES[dt]}", "index_fill", [rnd((4, 3), dt), L([3, 0])], [a(0), s(v)],
          lambda t, i, v=v: t.index_fill(0, i, v))
w.add("index_fill/dim1_negative_index", "index_fill", [rnd((2, 5)), L([-1, 1, -5])], [a(1), s(-2.5)],
      lambda t, i: t.index_fill(1, i, -2.5))
w.add("index_fill/repeated", "index_fill", [rnd((3, 3)), L([1, 1, 1])], [a(0), s(0.0)], lambda t, i: t.index_fill(0, i, 0.0))
w.add("index_fill/float_into_int", "index_fill", [L([[1, 2], [3, 4]]), L([1])], [a(0), s(2.5)],
      lambda t, i: t.index_fill(0, i, 2.5))
w.add("index_fill/int_into_bool", "index_fill", [B([False, False, True]), L([0])], [a(0), s(2)],
      lambda t, i: t.index_fill(0, i, 2))
w.add("index_fill/nan_inf", "index_fill", [rnd((2, 3)), L([0, 2])], [a(-1), s(nan)], lambda t, i: t.index_fill(-1, i, nan))
w.add("index_fill/transposed_3d", "index_fill", [(rnd((2, 4, 3)), "transposed"), L([1])], [a(1), s(inf)],
      lambda t, i: t.index_fill(1, i, inf))
w.add("index_fill/0d_index", "index_fill", [rnd((3,)), torch.tensor(2)], [a(0), s(1)], lambda t, i: t.index_fill(0, i, 1))
w.add("index_fill/0d_self", "index_fill", [torch.tensor(0.0), L([0])], [a(0), s(2)], lambda t, i: t.index_fill(0, i, 2))
w.add("index_fill/empty_index", "index_fill", [rnd((2, 3)), torch.zeros(0, dtype=torch.long)], [a(0), s(1)],
      lambda t, i: t.index_fill(0, i, 1))
w.add("index_fill_/inplace", "index_fill_", [rnd((4, 3)), L([1, 2])], [a(0), s(-1)], lambda t, i: t.clone().index_fill_(0, i, -1))
w.add("index_fill/err_oob", "index_fill", [rnd((3, 2)), L([3])], [a(0), s(5)], error="IndexError")
w.add("index_fill/err_oob_negative", "index_fill", [rnd((3, 2)), L([-4])], [a(0), s(5)], error="IndexError")
w.add("index_fill/err_int32", "index_fill", [rnd((3, 2)), torch.tensor([1], dtype=torch.int32)], [a(0), s(5)],
      error="TypeError")
w.add("index_fill/err_index_2d", "index_fill", [rnd((3, 2)), L([[1]])], [a(0), s(5)], error="IndexError")
w.add("index_fill/err_overflow", "index_fill", [rnd((3, 2), torch.uint8), L([1])], [a(0), s(300)], error="ValueError")
w.add("index_fill/err_0d_oob", "index_fill", [torch.tensor(0.0), L([1])], [a(0), s(2)], error="IndexError")
w.add("index_fill/err_dim", "index_fill", [rnd((3, 2)), L([1])], [a(-3), s(2)], error="IndexError")

# ---------------------------------------------------------------------------- logcumsumexp
for dt in (torch.float32, torch.float64, torch.bfloat16):
    w.add(f"logcumsumexp/dim1/{DTYPES[dt]}", "logcumsumexp", [rnd((3, 5), dt)], [a(1)], lambda t: torch.logcumsumexp(t, 1))
w.add("logcumsumexp/dim0_3d", "logcumsumexp", [rnd((4, 2, 3))], [a(0)], lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/neg_dim_transposed", "logcumsumexp", [(rnd((5, 3)), "transposed")], [a(-1)],
      lambda t: torch.logcumsumexp(t, -1))
w.add("logcumsumexp/strided", "logcumsumexp", [(rnd((3, 8)), "strided")], [a(0)], lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/large", "logcumsumexp", [F([1000.0, 1000.0, -1000.0, 999.0, 1e4], torch.float64)], [a(0)],
      lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/large_f32", "logcumsumexp", [F([88.0, 89.0, 100.0, -200.0])], [a(0)], lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/special", "logcumsumexp", [F([-inf, -inf, 1.0, inf, 2.0, nan, 3.0])], [a(0)],
      lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/neg_inf_rows", "logcumsumexp", [F([[-inf, -inf], [0.5, -inf], [-inf, 2.0]], torch.float64)], [a(0)],
      lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/0d", "logcumsumexp", [torch.tensor(2.0)], [a(0)], lambda t: torch.logcumsumexp(t, 0))
w.add("logcumsumexp/empty", "logcumsumexp", [rnd((0, 3))], [a(1)], lambda t: torch.logcumsumexp(t, 1))
w.add("logcumsumexp/err_int", "logcumsumexp", [L([1, 2])], [a(0)], error="TypeError")
w.add("logcumsumexp/err_bool", "logcumsumexp", [B([True])], [a(0)], error="TypeError")
w.add("logcumsumexp/err_half", "logcumsumexp", [F([1.0], torch.float16)], [a(0)], error="TypeError")
w.add("logcumsumexp/err_dim", "logcumsumexp", [rnd((2, 2))], [a(2)], error="IndexError")

# ---------------------------------------------------------------------------- median
for dt in [d for d in NUMERIC if d != torch.float16]:
    w.add(f"median/odd/{DTYPES[dt]}", "median", [rnd((3, 5), dt)], [], lambda t: torch.median(t))
    w.add(f"median/even/{DTYPES[dt]}", "median", [rnd((2, 4), dt)], [], lambda t: torch.median(t))
w.add("median/ties", "median", [F([2.0, 1.0, 2.0, 2.0, 3.0, 1.0])], [], lambda t: torch.median(t))
w.add("median/nan", "median", [F([3.0, nan, 2.0, 4.0])], [], lambda t: torch.median(t))
w.add("median/inf", "median", [F([inf, -inf, 2.0, inf])], [], lambda t: torch.median(t))
w.add("median/transposed", "median", [(rnd((4, 3)), "transposed")], [], lambda t: torch.median(t))
w.add("median/expanded", "median", [(F([[1.0, 5.0, 3.0]]), "expanded", (4, 3))], [], lambda t: torch.median(t))
w.add("median/0d", "median", [torch.tensor(3.0)], [], lambda t: torch.median(t))
w.add("median/empty_float_is_nan", "median", [rnd((0, 2))], [], lambda t: torch.median(t))
w.add("median/err_bool", "median", [B([True, False])], [], error="TypeError")
w.add("median/err_half", "median", [F([1.0], torch.float16)], [], error="TypeError")
w.add("median/err_empty_int", "median", [torch.zeros(0, dtype=torch.long)], [], error="IndexError")

for dt in [d for d in NUMERIC if d != torch.float16]:
    w.add(f"median_dim/distinct/{DTYPES[dt]}", "median_dim", [distinct((3, 5), dt)], [a(1), a(False)],
          lambda t: torch.median(t, 1))
w.add("median_dim/even_keepdim_dim0", "median_dim", [distinct((4, 3))], [a(0), a(True)], lambda t: torch.median(t, 0, True))
w.add("median_dim/transposed", "median_dim", [(distinct((5, 3)), "transposed")], [a(-1), a(False)],
      lambda t: torch.median(t, -1))
w.add("median_dim/nan_first_index", "median_dim", [F([[3.0, nan, 2.0, nan], [1.0, 2.0, 3.0, 4.0]])], [a(1), a(False)],
      lambda t: torch.median(t, 1))
w.add("median_dim/ties_values_only", "median_dim", [small_ints((4, 7), torch.float32)], [a(1), a(False)],
      lambda t: torch.median(t, 1)[0])
w.add("median_dim/ties_int_values_only", "median_dim", [small_ints((3, 6), torch.int32)], [a(0), a(True)],
      lambda t: torch.median(t, 0, True)[0])
w.add("median_dim/0d", "median_dim", [torch.tensor(5.0)], [a(0), a(False)], lambda t: torch.median(t, 0))
w.add("median_dim/0d_keepdim", "median_dim", [torch.tensor(5.0)], [a(-1), a(True)], lambda t: torch.median(t, -1, True))
w.add("median_dim/empty_other_dim", "median_dim", [rnd((0, 3))], [a(1), a(False)], lambda t: torch.median(t, 1))
w.add("median_dim/err_empty_dim", "median_dim", [rnd((2, 0))], [a(1), a(False)], error="IndexError")
w.add("median_dim/err_bool", "median_dim", [B([True])], [a(0), a(False)], error="TypeError")
w.add("median_dim/err_half", "median_dim", [F([[1.0, 2.0]], torch.float16)], [a(1), a(False)], error="TypeError")
w.add("median_dim/err_dim", "median_dim", [rnd((2, 2))], [a(2), a(False)], error="IndexError")

# ---------------------------------------------------------------------------- mode
# Lines of at most 16 elements: PyTorch's std::sort is an insertion sort there, so its
# index is the highest position of the mode value, which tandem returns.
for dt in ALL:
    w.add(f"mode/{DTYPES[dt]}", "mode", [small_ints((3, 8), dt)], [a(-1), a(False)], lambda t: torch.mode(t, -1))
w.add("mode/freq_tie_smallest_value", "mode", [L([1, 2, 2, 3, 3, 1, 1, 3])], [a(0), a(False)], lambda t: torch.mode(t, 0))
w.add("mode/all_distinct", "mode", [F([5.0, 4.0, 6.0])], [a(0), a(False)], lambda t: torch.mode(t, 0))
w.add("mode/keepdim_dim0", "mode", [F([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0], [1.0, 3.0, 1.0]])], [a(0), a(True)],
      lambda t: torch.mode(t, 0, True))
w.add("mode/transposed", "mode", [(small_ints((6, 4), torch.float32), "transposed")], [a(1), a(False)],
      lambda t: torch.mode(t, 1))
w.add("mode/inf", "mode", [F([inf, -inf, inf, 1.0, -inf, inf])], [a(0), a(False)], lambda t: torch.mode(t, 0))
w.add("mode/negative_zero", "mode", [F([-0.0, 0.0, 1.0])], [a(0), a(False)], lambda t: torch.mode(t, 0))
w.add("mode/long_line_values_only", "mode", [small_ints((2, 40), torch.int64, 6)], [a(1), a(False)],
      lambda t: torch.mode(t, 1)[0])
w.add("mode/0d", "mode", [torch.tensor(3.0)], [a(0), a(False)], lambda t: torch.mode(t, 0))
w.add("mode/empty_other_dim", "mode", [rnd((0, 3))], [a(1), a(False)], lambda t: torch.mode(t, 1))
w.add("mode/err_empty_dim", "mode", [rnd((2, 0))], [a(-1), a(False)], error="IndexError")
w.add("mode/err_dim", "mode", [rnd((2, 2))], [a(-3), a(False)], error="IndexError")

# ---------------------------------------------------------------------------- unfold
x7 = torch.arange(7.0)
w.add("unfold/overlap", "unfold", [x7], [a(0), a(3), a(2)], lambda t: t.unfold(0, 3, 2))
w.add("unfold/gaps", "unfold", [x7], [a(0), a(2), a(3)], lambda t: t.unfold(0, 2, 3))
w.add("unfold/full", "unfold", [x7], [a(0), a(7), a(1)], lambda t: t.unfold(0, 7, 1))
w.add("unfold/size0", "unfold", [x7], [a(0), a(0), a(2)], lambda t: t.unfold(0, 0, 2))
for dt in ALL:
    w.add(f"unfold/2d_dim1/{DTYPES[dt]}", "unfold", [rnd((3, 5), dt)], [a(1), a(2), a(1)], lambda t: t.unfold(1, 2, 1))
w.add("unfold/2d_dim0", "unfold", [rnd((5, 2))], [a(0), a(3), a(2)], lambda t: t.unfold(0, 3, 2))
w.add("unfold/3d_neg_dim", "unfold", [rnd((2, 3, 6))], [a(-2), a(2), a(1)], lambda t: t.unfold(-2, 2, 1))
w.add("unfold/transposed", "unfold", [(rnd((5, 3)), "transposed")], [a(1), a(2), a(2)], lambda t: t.unfold(1, 2, 2))
w.add("unfold/strided", "unfold", [(rnd((10,)), "strided")], [a(0), a(2), a(1)], lambda t: t.unfold(0, 2, 1))
w.add("unfold/expanded", "unfold", [(rnd((1, 4)), "expanded", (3, 4))], [a(0), a(2), a(1)], lambda t: t.unfold(0, 2, 1))
w.add("unfold/0d", "unfold", [torch.tensor(3.0)], [a(0), a(1), a(1)], lambda t: t.unfold(0, 1, 1))
w.add("unfold/0d_size0", "unfold", [torch.tensor(3.0)], [a(-1), a(0), a(5)], lambda t: t.unfold(-1, 0, 5))
w.add("unfold/zero_size_other", "unfold", [rnd((0, 4))], [a(1), a(2), a(1)], lambda t: t.unfold(1, 2, 1))
w.add("unfold/zero_size_dim", "unfold", [rnd((2, 0))], [a(1), a(0), a(1)], lambda t: t.unfold(1, 0, 1))
w.add("unfold/err_too_big", "unfold", [x7], [a(0), a(8), a(1)], error="ValueError")
w.add("unfold/err_step0", "unfold", [x7], [a(0), a(3), a(0)], error="ValueError")
w.add("unfold/err_negative_size", "unfold", [x7], [a(0), a(-1), a(1)], error="ValueError")
w.add("unfold/err_0d_size2", "unfold", [torch.tensor(3.0)], [a(0), a(2), a(1)], error="ValueError")
w.add("unfold/err_dim", "unfold", [rnd((2, 3))], [a(2), a(1), a(1)], error="IndexError")

w.write(OUT)
