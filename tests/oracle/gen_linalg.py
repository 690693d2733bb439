#!/usr/bin/python3
"""Oracle cases for the linear-algebra family (mm, bmm, addmm, baddbmm, dot, mv, matmul,
outer, linear, einsum). Run: /usr/bin/python3 tests/oracle/gen_linalg.py"""
import os

import torch
import torch.nn.functional as F
from oracle_lib import CaseWriter, attr

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "linalg.json")
torch.manual_seed(0)
w = CaseWriter()
S = lambda v: attr(v, "scalar")  # noqa: E731
LOOSE = dict(rtol=1e-4, atol=1e-4)  # float32 with larger inner dims: summation order differs


def rnd(*shape, dtype=torch.float32):
    if dtype.is_floating_point:
        # Multiples of 1/32: exact in every float dtype and short in the JSON.
        return (torch.randn(shape, dtype=torch.float64) * 32).round().div(32).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 10, shape, dtype=dtype)
    return torch.randint(-5, 6, shape, dtype=dtype)


# ---------------------------------------------------------------- mm
mm = lambda a, b: torch.mm(a, b)  # noqa: E731
for dt in [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]:
    name = str(dt).replace("torch.", "")
    w.add(f"mm/{name}", "mm", [rnd(3, 4, dtype=dt), rnd(4, 5, dtype=dt)], [], mm)
w.add("mm/float32_onednn", "mm", [rnd(20, 25), rnd(25, 30)], [], mm, **LOOSE)
w.add("mm/float32_tiny", "mm", [rnd(2, 2), rnd(2, 2)], [], mm)
w.add("mm/float32_row_vector", "mm", [rnd(1, 64), rnd(64, 48)], [], mm, **LOOSE)
w.add("mm/float32_column_result", "mm", [rnd(48, 64), rnd(64, 1)], [], mm, **LOOSE)
for la in ["contiguous", "transposed", "strided"]:
    for lb in ["contiguous", "transposed", "strided"]:
        w.add(f"mm/layout_{la}_{lb}", "mm", [(rnd(18, 20), la), (rnd(20, 14), lb)], [], mm, **LOOSE)
w.add("mm/float64_transposed", "mm", [(rnd(7, 9, dtype=torch.float64), "transposed"), (rnd(9, 5, dtype=torch.float64), "strided")], [], mm)
w.add("mm/int64_transposed", "mm", [(rnd(6, 5, dtype=torch.int64), "transposed"), rnd(5, 7, dtype=torch.int64)], [], mm)
w.add("mm/int8_wraps", "mm", [torch.full((2, 8), 100, dtype=torch.int8), torch.full((8, 3), 77, dtype=torch.int8)], [], mm)
w.add("mm/int64_wraps", "mm", [torch.full((1, 2), 2**62, dtype=torch.int64), torch.full((2, 1), 3, dtype=torch.int64)], [], mm)
w.add("mm/nan_inf", "mm", [torch.tensor([[float("nan"), 1.0], [float("inf"), 1.0], [1.0, 2.0]]), torch.tensor([[1.0, 0.0], [2.0, 3.0]])], [], mm)
w.add("mm/zero_rows", "mm", [rnd(0, 3), rnd(3, 4)], [], mm)
w.add("mm/zero_inner", "mm", [rnd(3, 0), rnd(0, 4)], [], mm)
w.add("mm/zero_inner_int", "mm", [rnd(3, 0, dtype=torch.int64), rnd(0, 4, dtype=torch.int64)], [], mm)
w.add("mm/zero_cols", "mm", [rnd(3, 4), rnd(4, 0)], [], mm)
w.add("mm/err_shapes", "mm", [rnd(2, 3), rnd(4, 5)], [], error="ShapeError")
w.add("mm/err_1d", "mm", [rnd(3), rnd(3, 2)], [], error="ShapeError")
w.add("mm/err_3d", "mm", [rnd(2, 3, 3), rnd(3, 2)], [], error="ShapeError")
w.add("mm/err_dtype_mix", "mm", [rnd(2, 3), rnd(3, 2, dtype=torch.float64)], [], error="TypeError")
w.add("mm/err_int_float", "mm", [rnd(2, 3, dtype=torch.int64), rnd(3, 2)], [], error="TypeError")
w.add("mm/err_bool", "mm", [torch.ones(2, 3, dtype=torch.bool), torch.ones(3, 2, dtype=torch.bool)], [], error="TypeError")
# No "float16 raises" case: PyTorch 1.13's CPU mm has no float16 kernel, tandem's has one
# (float16 autocast needs it; tests/dispatch/test_autocast.cpp checks its values).

# ---------------------------------------------------------------- bmm
bmm = lambda a, b: torch.bmm(a, b)  # noqa: E731
for dt in [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32]:
    name = str(dt).replace("torch.", "")
    w.add(f"bmm/{name}", "bmm", [rnd(3, 4, 5, dtype=dt), rnd(3, 5, 6, dtype=dt)], [], bmm)
w.add("bmm/onednn", "bmm", [rnd(3, 16, 20), rnd(3, 20, 17)], [], bmm, **LOOSE)
w.add("bmm/transposed", "bmm", [(rnd(2, 16, 20), "transposed"), (rnd(2, 20, 17), "transposed")], [], bmm, **LOOSE)
w.add("bmm/strided", "bmm", [(rnd(2, 16, 20), "strided"), rnd(2, 20, 17)], [], bmm, **LOOSE)
w.add("bmm/expanded_batch_a", "bmm", [(rnd(1, 16, 20), "expanded", (2, 16, 20)), rnd(2, 20, 17)], [], bmm, **LOOSE)
w.add("bmm/expanded_batch_b", "bmm", [rnd(2, 16, 20), (rnd(1, 20, 17), "expanded", (2, 20, 17))], [], bmm, **LOOSE)
w.add("bmm/expanded_both", "bmm", [(rnd(1, 6, 7), "expanded", (3, 6, 7)), (rnd(1, 7, 5), "expanded", (3, 7, 5))], [], bmm)
w.add("bmm/float64_expanded", "bmm", [(rnd(1, 4, 3, dtype=torch.float64), "expanded", (2, 4, 3)), rnd(2, 3, 5, dtype=torch.float64)], [], bmm)
w.add("bmm/zero_batch", "bmm", [rnd(0, 3, 4), rnd(0, 4, 5)], [], bmm)
w.add("bmm/zero_inner", "bmm", [rnd(2, 3, 0), rnd(2, 0, 5)], [], bmm)
w.add("bmm/err_batch", "bmm", [rnd(2, 2, 3), rnd(3, 3, 2)], [], error="ShapeError")
w.add("bmm/err_inner", "bmm", [rnd(2, 2, 3), rnd(2, 4, 2)], [], error="ShapeError")
w.add("bmm/err_2d", "bmm", [rnd(3, 3), rnd(3, 2)], [], error="ShapeError")
w.add("bmm/err_dtype", "bmm", [rnd(2, 2, 3), rnd(2, 3, 2, dtype=torch.float64)], [], error="TypeError")

# ---------------------------------------------------------------- addmm / baddbmm
addmm = lambda beta, alpha: (lambda s, a, b: torch.addmm(s, a, b, beta=beta, alpha=alpha))  # noqa: E731
w.add("addmm/basic", "addmm", [rnd(3, 5), rnd(3, 4), rnd(4, 5)], [S(1), S(1)], addmm(1, 1))
w.add("addmm/beta_alpha", "addmm", [rnd(3, 5), rnd(3, 4), rnd(4, 5)], [S(0.5), S(2.0)], addmm(0.5, 2.0))
w.add("addmm/bias_row", "addmm", [rnd(5), rnd(3, 4), rnd(4, 5)], [S(1), S(1)], addmm(1, 1))
w.add("addmm/bias_1xp", "addmm", [rnd(1, 5), rnd(3, 4), rnd(4, 5)], [S(1), S(1)], addmm(1, 1))
w.add("addmm/bias_nx1", "addmm", [rnd(3, 1), rnd(3, 4), rnd(4, 5)], [S(1), S(1)], addmm(1, 1))
w.add("addmm/bias_0d", "addmm", [rnd(), rnd(3, 4), rnd(4, 5)], [S(1), S(-1.5)], addmm(1, -1.5))
w.add("addmm/onednn_beta_alpha", "addmm", [rnd(20), rnd(16, 24), (rnd(24, 20), "transposed")], [S(0.25), S(3.0)], addmm(0.25, 3.0), **LOOSE)
w.add("addmm/beta0_nan_ignored", "addmm", [torch.full((2, 2), float("nan")), rnd(2, 3), rnd(3, 2)], [S(0.0), S(1.0)], addmm(0.0, 1.0))
w.add("addmm/beta0_nan_ignored_onednn", "addmm", [torch.full((16, 20), float("nan")), rnd(16, 24), rnd(24, 20)], [S(0.0), S(1.0)], addmm(0.0, 1.0), **LOOSE)
w.add("addmm/float64", "addmm", [rnd(4, dtype=torch.float64), rnd(3, 5, dtype=torch.float64), rnd(5, 4, dtype=torch.float64)], [S(2.0), S(0.5)], addmm(2.0, 0.5))
w.add("addmm/int64", "addmm", [rnd(2, 2, dtype=torch.int64), rnd(2, 3, dtype=torch.int64), rnd(3, 2, dtype=torch.int64)], [S(3), S(2)], addmm(3, 2))
w.add("addmm/int64_float_beta_truncates", "addmm", [torch.ones(2, 2, dtype=torch.int64), rnd(2, 3, dtype=torch.int64), rnd(3, 2, dtype=torch.int64)], [S(0.5), S(1)], addmm(0.5, 1))
w.add("addmm/zero_inner", "addmm", [rnd(3, 4), rnd(3, 0), rnd(0, 4)], [S(2.0), S(1.0)], addmm(2.0, 1.0))
w.add("addmm/err_bias_shape", "addmm", [rnd(3, 3), rnd(2, 3), rnd(3, 2)], [S(1), S(1)], error="ShapeError")
w.add("addmm/err_dtype", "addmm", [rnd(2, dtype=torch.float64), rnd(2, 3), rnd(3, 2)], [S(1), S(1)], error="TypeError")
w.add("addmm/err_1d_mat", "addmm", [rnd(2), rnd(3), rnd(3, 2)], [S(1), S(1)], error="ShapeError")
baddbmm = lambda beta, alpha: (lambda s, a, b: torch.baddbmm(s, a, b, beta=beta, alpha=alpha))  # noqa: E731
w.add("baddbmm/basic", "baddbmm", [rnd(2, 3, 5), rnd(2, 3, 4), rnd(2, 4, 5)], [S(1), S(1)], baddbmm(1, 1))
w.add("baddbmm/broadcast_self", "baddbmm", [rnd(5), rnd(2, 3, 4), rnd(2, 4, 5)], [S(0.5), S(-2.0)], baddbmm(0.5, -2.0))
w.add("baddbmm/onednn", "baddbmm", [rnd(1, 1, 17), rnd(2, 16, 20), rnd(2, 20, 17)], [S(1.5), S(0.5)], baddbmm(1.5, 0.5), **LOOSE)
w.add("baddbmm/beta0", "baddbmm", [torch.full((2, 2, 2), float("inf")), rnd(2, 2, 3), rnd(2, 3, 2)], [S(0), S(1)], baddbmm(0, 1))
w.add("baddbmm/int32", "baddbmm", [rnd(2, 2, 2, dtype=torch.int32), rnd(2, 2, 3, dtype=torch.int32), rnd(2, 3, 2, dtype=torch.int32)], [S(2), S(3)], baddbmm(2, 3))
w.add("baddbmm/err_self", "baddbmm", [rnd(3, 2, 2), rnd(2, 2, 3), rnd(2, 3, 2)], [S(1), S(1)], error="ShapeError")

# ---------------------------------------------------------------- dot / mv / outer
dot = lambda a, b: torch.dot(a, b)  # noqa: E731
for dt in [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bfloat16]:
    name = str(dt).replace("torch.", "")
    w.add(f"dot/{name}", "dot", [rnd(7, dtype=dt), rnd(7, dtype=dt)], [], dot)
w.add("dot/long_float32", "dot", [rnd(100), rnd(100)], [], dot, **LOOSE)
w.add("dot/strided", "dot", [(rnd(37), "strided"), rnd(37)], [], dot, **LOOSE)
w.add("dot/expanded", "dot", [(rnd(1), "expanded", (5,)), rnd(5)], [], dot)
w.add("dot/empty", "dot", [rnd(0), rnd(0)], [], dot)
w.add("dot/nan", "dot", [torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0])], [], dot)
w.add("dot/err_2d", "dot", [rnd(2, 2), rnd(2, 2)], [], error="ShapeError")
w.add("dot/err_len", "dot", [rnd(2), rnd(3)], [], error="ShapeError")
w.add("dot/err_dtype", "dot", [rnd(2), rnd(2, dtype=torch.float64)], [], error="TypeError")
w.add("dot/err_bool", "dot", [torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=torch.bool)], [], error="TypeError")
mv = lambda a, b: torch.mv(a, b)  # noqa: E731
w.add("mv/float32", "mv", [rnd(3, 4), rnd(4)], [], mv)
w.add("mv/transposed", "mv", [(rnd(64, 80), "transposed"), rnd(80)], [], mv, **LOOSE)
w.add("mv/int64", "mv", [rnd(3, 4, dtype=torch.int64), rnd(4, dtype=torch.int64)], [], mv)
w.add("mv/err_shape", "mv", [rnd(3, 4), rnd(5)], [], error="ShapeError")
w.add("mv/err_rank", "mv", [rnd(3, 4), rnd(4, 1)], [], error="ShapeError")
outer = lambda a, b: torch.outer(a, b)  # noqa: E731
w.add("outer/float32", "outer", [rnd(3), rnd(4)], [], outer)
w.add("outer/int_float", "outer", [rnd(3, dtype=torch.int64), rnd(4)], [], outer)
w.add("outer/bool", "outer", [torch.tensor([True, False]), torch.tensor([True, True, False])], [], outer)
w.add("outer/half", "outer", [rnd(3, dtype=torch.float16), rnd(2, dtype=torch.float16)], [], outer)
w.add("outer/strided", "outer", [(rnd(3), "strided"), rnd(2)], [], outer)
w.add("outer/empty", "outer", [rnd(0), rnd(2)], [], outer)
w.add("outer/err_2d", "outer", [rnd(2, 2), rnd(3)], [], error="ShapeError")

# ---------------------------------------------------------------- matmul
mt = lambda a, b: torch.matmul(a, b)  # noqa: E731
w.add("matmul/1d_1d", "matmul", [rnd(5), rnd(5)], [], mt)
w.add("matmul/2d_1d", "matmul", [rnd(3, 5), rnd(5)], [], mt)
w.add("matmul/1d_2d", "matmul", [rnd(5), rnd(5, 4)], [], mt)
w.add("matmul/2d_2d", "matmul", [rnd(3, 5), rnd(5, 4)], [], mt)
w.add("matmul/3d_1d", "matmul", [rnd(2, 3, 5), rnd(5)], [], mt)
w.add("matmul/1d_3d", "matmul", [rnd(5), rnd(2, 5, 4)], [], mt)
w.add("matmul/3d_2d_fold", "matmul", [rnd(2, 3, 5), rnd(5, 4)], [], mt)
w.add("matmul/4d_2d_fold", "matmul", [rnd(2, 2, 3, 5), rnd(5, 4)], [], mt)
w.add("matmul/3d_transposed_2d", "matmul", [(rnd(2, 3, 5), "transposed"), rnd(5, 4)], [], mt)
w.add("matmul/3d_strided_2d", "matmul", [(rnd(2, 3, 5), "strided"), rnd(5, 4)], [], mt)
w.add("matmul/2d_3d", "matmul", [rnd(3, 5), rnd(2, 5, 4)], [], mt)
w.add("matmul/2d_3d_transposed", "matmul", [rnd(3, 5), (rnd(2, 5, 4), "transposed")], [], mt)
w.add("matmul/3d_3d", "matmul", [rnd(2, 3, 5), rnd(2, 5, 4)], [], mt)
w.add("matmul/batch_broadcast", "matmul", [rnd(2, 1, 3, 4), rnd(5, 4, 2)], [], mt)
w.add("matmul/batch_broadcast_1", "matmul", [rnd(1, 3, 4), rnd(6, 4, 5)], [], mt)
w.add("matmul/batch_broadcast_both", "matmul", [rnd(3, 1, 2, 4), rnd(1, 5, 4, 2)], [], mt)
w.add("matmul/4d_1d", "matmul", [rnd(2, 3, 2, 4), rnd(4)], [], mt)
w.add("matmul/1d_4d", "matmul", [rnd(4), rnd(2, 3, 4, 2)], [], mt)
w.add("matmul/onednn_batched", "matmul", [rnd(2, 3, 8, 16), (rnd(3, 16, 12), "transposed")], [], mt, **LOOSE)
w.add("matmul/float64", "matmul", [rnd(2, 3, 4, dtype=torch.float64), rnd(4, 2, dtype=torch.float64)], [], mt)
w.add("matmul/int64", "matmul", [rnd(2, 3, 4, dtype=torch.int64), rnd(2, 4, 2, dtype=torch.int64)], [], mt)
w.add("matmul/bfloat16", "matmul", [rnd(2, 3, 4, dtype=torch.bfloat16), rnd(4, 2, dtype=torch.bfloat16)], [], mt)
w.add("matmul/zero_batch", "matmul", [rnd(0, 3, 4), rnd(4, 2)], [], mt)
w.add("matmul/zero_batch_3d", "matmul", [rnd(0, 3, 4), rnd(1, 4, 2)], [], mt)
w.add("matmul/zero_inner", "matmul", [rnd(2, 3, 0), rnd(2, 0, 2)], [], mt)
w.add("matmul/expanded", "matmul", [(rnd(1, 4), "expanded", (3, 4)), rnd(4, 2)], [], mt)
w.add("matmul/err_0d", "matmul", [rnd(), rnd(3)], [], error="ShapeError")
w.add("matmul/err_inner", "matmul", [rnd(2, 3), rnd(4, 5)], [], error="ShapeError")
w.add("matmul/err_1d", "matmul", [rnd(3), rnd(4)], [], error="ShapeError")
w.add("matmul/err_batch", "matmul", [rnd(2, 2, 3), rnd(3, 3, 2)], [], error="ShapeError")
w.add("matmul/err_batched_inner", "matmul", [rnd(2, 2, 3), rnd(2, 4, 2)], [], error="ShapeError")
w.add("matmul/err_dtype", "matmul", [rnd(2, 3), rnd(3, 2, dtype=torch.float64)], [], error="TypeError")

# ---------------------------------------------------------------- linear
lin = lambda x, wt, b: F.linear(x, wt, b)  # noqa: E731
w.add("linear/2d_bias", "linear", [rnd(4, 3), rnd(5, 3), rnd(5)], [], lin)
w.add("linear/2d_nobias", "linear", [rnd(4, 3), rnd(5, 3), None], [], lambda x, wt, b: F.linear(x, wt))
w.add("linear/3d_bias_fold", "linear", [rnd(2, 4, 3), rnd(5, 3), rnd(5)], [], lin)
w.add("linear/3d_transposed_bias", "linear", [(rnd(2, 4, 3), "transposed"), rnd(5, 3), rnd(5)], [], lin)
w.add("linear/4d_nobias", "linear", [rnd(2, 2, 4, 3), rnd(5, 3), None], [], lambda x, wt, b: F.linear(x, wt))
w.add("linear/1d_input", "linear", [rnd(3), rnd(5, 3), rnd(5)], [], lin)
w.add("linear/1d_weight", "linear", [rnd(4, 3), rnd(3), None], [], lambda x, wt, b: F.linear(x, wt))
w.add("linear/weight_transposed", "linear", [rnd(4, 30), (rnd(20, 30), "transposed"), rnd(20)], [], lin, **LOOSE)
w.add("linear/onednn", "linear", [rnd(16, 24), rnd(20, 24), rnd(20)], [], lin, **LOOSE)
w.add("linear/float64", "linear", [rnd(2, 3, dtype=torch.float64), rnd(4, 3, dtype=torch.float64), rnd(4, dtype=torch.float64)], [], lin)
w.add("linear/int64", "linear", [rnd(2, 3, dtype=torch.int64), rnd(4, 3, dtype=torch.int64), rnd(4, dtype=torch.int64)], [], lin)
w.add("linear/zero_batch", "linear", [rnd(0, 3), rnd(4, 3), rnd(4)], [], lin)
w.add("linear/err_shape", "linear", [rnd(2, 3), rnd(4, 5), None], [], error="ShapeError")
w.add("linear/err_shape_3d", "linear", [rnd(2, 2, 3), rnd(4, 5), rnd(4)], [], error="ShapeError")
w.add("linear/err_bias_dtype", "linear", [rnd(2, 3), rnd(4, 3), rnd(4, dtype=torch.float64)], [], error="TypeError")
w.add("linear/err_0d", "linear", [rnd(), rnd(4, 5), None], [], error="ShapeError")

# ---------------------------------------------------------------- einsum
def es(name, eq, tensors, error=None, **tol):
    w.add(f"einsum/{name}", "einsum", tensors, [attr(eq)],
          None if error else (lambda *xs: torch.einsum(eq, *xs)), error=error, **tol)


es("mm", "ij,jk->ik", [rnd(3, 4), rnd(4, 5)])
es("bmm", "bij,bjk->bik", [rnd(2, 3, 4), rnd(2, 4, 5)])
es("dot", "i,i->", [rnd(6), rnd(6)])
es("transpose", "ij->ji", [rnd(3, 4)])
es("diag", "ii->i", [rnd(4, 4)])
es("diag_transposed", "ii->i", [(rnd(4, 4), "transposed")])
es("trace", "ii", [rnd(4, 4)])
es("trace_int", "ii", [torch.arange(4).view(2, 2)])
es("attention", "bhqd,bhkd->bhqk", [rnd(2, 3, 4, 5), rnd(2, 3, 6, 5)])
es("attention_out", "bhqk,bhkd->bhqd", [rnd(2, 3, 4, 6), rnd(2, 3, 6, 5)])
es("outer", "i,j->ij", [rnd(3), rnd(4)])
es("hadamard", "ij,ij->ij", [rnd(3, 4), rnd(3, 4)])
es("frobenius", "ij,ij->", [rnd(3, 4), rnd(3, 4)])
es("row_sum", "ij->i", [rnd(3, 4)])
es("col_sum", "ij->j", [rnd(3, 4)])
es("total_sum", "ij->", [rnd(3, 4)])
es("permute3", "ijk->kji", [rnd(2, 3, 4)])
es("mv", "ij,j->i", [rnd(3, 4), rnd(4)])
es("vm", "i,ij->j", [rnd(3), rnd(3, 4)])
es("bilinear", "bn,anm,bm->ba", [rnd(2, 3), rnd(4, 3, 5), rnd(2, 5)])
es("chain3", "ij,jk,kl->il", [rnd(2, 3), rnd(3, 4), rnd(4, 5)])
es("three_way_batch", "i,i,i->i", [rnd(4), rnd(4), rnd(4)])
es("three_way_sum", "i,i,i->", [rnd(4), rnd(4), rnd(4)])
es("first_and_third", "ij,jk,il->kl", [rnd(2, 3), rnd(3, 4), rnd(2, 5)])
es("sum_one_operand_then_outer", "ij,k->k", [rnd(2, 3), rnd(4)])
es("ellipsis_matmul", "...ij,...jk->...ik", [rnd(2, 3, 4), rnd(2, 4, 5)])
es("ellipsis_broadcast", "...ij,...jk->...ik", [rnd(2, 1, 2, 3), rnd(5, 3, 4)])
es("ellipsis_sum", "...ij->j", [rnd(5, 2, 3)])
es("ellipsis_implicit", "i...j", [rnd(5, 2, 3)])
es("ellipsis_middle", "b...d,bd->b...", [rnd(2, 3, 4, 5), rnd(2, 5)])
es("implicit_mm", "ij,jk", [rnd(2, 3), rnd(3, 4)])
es("implicit_order", "Ba,aA", [rnd(2, 3), rnd(3, 4)])
es("uppercase", "iJ->Ji", [rnd(2, 3)])
es("spaces", " i j , j k -> i k ", [rnd(2, 3), rnd(3, 4)])
es("label_broadcast", "ij,jk->ik", [rnd(2, 1), rnd(3, 4)])
es("label_broadcast_batch", "ij,ij->ij", [rnd(2, 1), rnd(2, 4)])
es("sum_then_contract", "ijk,jl->il", [rnd(2, 3, 4), rnd(3, 5)])
es("diag_contract", "iij,jk->ik", [rnd(3, 3, 4), rnd(4, 2)])
es("batch_outer", "bi,bj->bij", [rnd(2, 3), rnd(2, 4)])
es("transposed_input", "ij,jk->ik", [(rnd(3, 4), "transposed"), (rnd(4, 5), "strided")])
es("float64", "bij,bjk->bik", [rnd(2, 3, 4, dtype=torch.float64), rnd(2, 4, 5, dtype=torch.float64)])
es("int64", "ij,jk->ik", [rnd(2, 3, dtype=torch.int64), rnd(3, 4, dtype=torch.int64)])
es("int64_sum", "ij->i", [rnd(2, 3, dtype=torch.int64)])
es("zero_size", "ij,jk->ik", [rnd(2, 0), rnd(0, 4)])
es("zero_size_batch", "bij,bjk->bik", [rnd(0, 2, 3), rnd(0, 3, 4)])
es("large", "ik,kj->ij", [rnd(16, 32), rnd(32, 12)], **LOOSE)
es("err_fewer_operands", "ij,jk->ik", [rnd(2, 3)], error="ValueError")
es("err_more_operands", "ij->ij", [rnd(2, 3), rnd(2, 3)], error="ValueError")
es("err_bad_char", "i1", [rnd(5, 2)], error="ValueError")
es("err_dots", "i..", [rnd(5, 2)], error="ValueError")
es("err_dims", "ijk,jk->ik", [rnd(2, 3), rnd(3, 4)], error="ShapeError")
es("err_size", "ij,jk->ik", [rnd(2, 3), rnd(4, 4)], error="ShapeError")
es("err_output_unknown", "ij,jk->il", [rnd(2, 3), rnd(3, 4)], error="ValueError")
es("err_output_repeated", "ij->ii", [rnd(2, 2)], error="ValueError")
es("err_diag_size", "ii->i", [rnd(2, 3)], error="ShapeError")
es("err_dtype", "ij,jk->ik", [rnd(2, 3), rnd(3, 2, dtype=torch.float64)], error="TypeError")

w.write(OUT)
