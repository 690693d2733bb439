#!/usr/bin/python3
"""Oracle cases for the index family (joining, indexing, sorting, selection ops).

Run: /usr/bin/python3 tests/oracle/gen_index.py  ->  tests/data/oracle/index.json
Op schemas (tensor inputs; attrs in order) follow src/tandem/ops/{join,index,indexing,sort}.cpp.
Cases avoid ties where PyTorch leaves the order unspecified (sort with stable=False,
topk, kthvalue) and NaN with unique's inverse/counts (PyTorch 1.13 miscounts there).
"""
import os

import torch
from oracle_lib import DTYPES, CaseWriter, attr, rnd, scalar

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "index.json")
torch.manual_seed(0)
w = CaseWriter()

ALL = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
       torch.float16, torch.bfloat16, torch.float32, torch.float64]
NUMERIC = [d for d in ALL if d != torch.bool]
nan, inf = float("nan"), float("inf")


def distinct(shape, dtype=torch.float32):
    """Values without ties (a permutation), for order-sensitive ops."""
    n = 1
    for s in shape:
        n *= s
    v = torch.randperm(n).to(torch.float64) - n // 2
    return v.reshape(shape).to(dtype)


def L(t):
    return torch.tensor(t, dtype=torch.int64)


def B(t):
    return torch.tensor(t, dtype=torch.bool)


def a(v):
    return attr(v)


def none():
    return None


# ---------------------------------------------------------------------------- cat / stack
for dt in ALL:
    w.add(f"cat/dim0/{DTYPES[dt]}", "cat", [rnd((2, 3), dt), rnd((1, 3), dt)], [a(0)], lambda x, y: torch.cat([x, y], 0))
w.add("cat/dim1_neg", "cat", [rnd((2, 3)), rnd((2, 1)), rnd((2, 2))], [a(-1)], lambda *t: torch.cat(t, -1))
w.add("cat/three_d_mid", "cat", [rnd((2, 1, 3)), rnd((2, 2, 3))], [a(1)], lambda *t: torch.cat(t, 1))
w.add("cat/transposed", "cat", [(rnd((3, 2)), "transposed"), (rnd((3, 4)), "strided")], [a(1)], lambda *t: torch.cat(t, 1))
w.add("cat/expanded", "cat", [(rnd((1, 3)), "expanded", (2, 3)), rnd((1, 3))], [a(0)], lambda *t: torch.cat(t, 0))
w.add("cat/promote_int_bool_half", "cat", [L([1, 2]), B([True]), torch.tensor([1.5], dtype=torch.float16)], [a(0)],
      lambda *t: torch.cat(t))
w.add("cat/promote_u8_i8", "cat", [torch.tensor([1], dtype=torch.uint8), torch.tensor([-1], dtype=torch.int8)], [a(0)],
      lambda *t: torch.cat(t))
w.add("cat/legacy_empty_skipped", "cat", [torch.tensor([]), rnd((2, 2))], [a(1)], lambda *t: torch.cat(t, 1))
w.add("cat/legacy_empty_promotes", "cat", [torch.tensor([], dtype=torch.float64), L([[1, 2]])], [a(0)],
      lambda *t: torch.cat(t))
w.add("cat/all_legacy", "cat", [torch.tensor([]), torch.tensor([])], [a(0)], lambda *t: torch.cat(t))
w.add("cat/zero_size", "cat", [rnd((2, 0)), rnd((2, 3)), rnd((2, 0))], [a(1)], lambda *t: torch.cat(t, 1))
w.add("cat/single", "cat", [rnd((2, 3))], [a(0)], lambda *t: torch.cat(t))
w.add("cat/err_empty", "cat", [], [a(0)], error="ValueError")
w.add("cat/err_0d", "cat", [torch.tensor(1.), rnd((1,))], [a(0)], error="ShapeError")
w.add("cat/err_sizes", "cat", [rnd((2, 3)), rnd((2, 4))], [a(0)], error="ShapeError")
w.add("cat/err_ndim", "cat", [rnd((2, 3)), rnd((3,))], [a(0)], error="ShapeError")
w.add("cat/err_dim", "cat", [rnd((2, 3))], [a(2)], error="IndexError")
w.add("cat/err_zero_rows_other_dim", "cat", [rnd((0, 3)), rnd((2, 3))], [a(1)], error="ShapeError")

w.add("stack/dim0", "stack", [rnd((2, 3)), rnd((2, 3))], [a(0)], lambda *t: torch.stack(t, 0))
w.add("stack/dim_last", "stack", [rnd((2, 3)), (rnd((2, 3)), "transposed")], [a(-1)], lambda *t: torch.stack(t, -1))
w.add("stack/promote", "stack", [B([True]), L([2])], [a(0)], lambda *t: torch.stack(t))
w.add("stack/0d", "stack", [torch.tensor(1), torch.tensor(2.)], [a(0)], lambda *t: torch.stack(t))
w.add("stack/err_shape", "stack", [rnd((2, 3)), rnd((2, 4))], [a(0)], error="ShapeError")
w.add("stack/err_empty", "stack", [], [a(0)], error="ValueError")
w.add("stack/err_dim", "stack", [rnd((2, 3))], [a(3)], error="IndexError")
w.add("hstack/1d_0d", "hstack", [torch.tensor(1), L([2, 3])], [], lambda *t: torch.hstack(t))
w.add("hstack/2d", "hstack", [rnd((2, 1)), rnd((2, 2))], [], lambda *t: torch.hstack(t))
w.add("vstack/1d", "vstack", [L([1, 2]), L([[2, 3]])], [], lambda *t: torch.vstack(t))
w.add("vstack/0d", "vstack", [torch.tensor(1.), torch.tensor(2.)], [], lambda *t: torch.vstack(t))
w.add("vstack/err_empty", "vstack", [], [], error="ValueError")
w.add("hstack/err_empty", "hstack", [], [], error="ValueError")

# ---------------------------------------------------------------------------- gather
x = rnd((3, 4))
for dt in ALL:
    w.add(f"gather/dim1/{DTYPES[dt]}", "gather", [rnd((3, 4), dt), L([[0, 3], [2, 2], [1, 0]])], [a(1), a(False)],
          lambda s, i: torch.gather(s, 1, i))
w.add("gather/dim0_smaller_index", "gather", [x, L([[2, 0, 1]])], [a(0), a(False)], lambda s, i: torch.gather(s, 0, i))
w.add("gather/neg_dim", "gather", [x, L([[3], [0], [1]])], [a(-1), a(False)], lambda s, i: torch.gather(s, -1, i))
w.add("gather/transposed_self", "gather", [(rnd((4, 3)), "transposed"), (L([[0, 1], [2, 2], [1, 1], [0, 2]]), "strided")],
      [a(1), a(False)], lambda s, i: torch.gather(s, 1, i))
w.add("gather/3d", "gather", [rnd((2, 3, 4)), torch.randint(0, 3, (2, 2, 4))], [a(1), a(False)],
      lambda s, i: torch.gather(s, 1, i))
w.add("gather/0d_self", "gather", [torch.tensor(5.), L([0, 0])], [a(0), a(False)], lambda s, i: torch.gather(s, 0, i))
w.add("gather/0d_index", "gather", [torch.tensor([5., 6.]), torch.tensor(1)], [a(0), a(False)],
      lambda s, i: torch.gather(s, 0, i))
w.add("gather/empty_index", "gather", [x, torch.zeros(3, 0, dtype=torch.long)], [a(1), a(False)],
      lambda s, i: torch.gather(s, 1, i))
w.add("gather/empty_index_bigger_dims", "gather", [x, torch.zeros(5, 0, dtype=torch.long)], [a(1), a(False)],
      lambda s, i: torch.gather(s, 1, i))
w.add("gather/err_oob", "gather", [torch.arange(5.), L([1, 7])], [a(0), a(False)], error="IndexError")
w.add("gather/err_negative", "gather", [torch.arange(5.), L([-1])], [a(0), a(False)], error="IndexError")
w.add("gather/err_index_dtype", "gather", [torch.arange(5.), torch.tensor([1], dtype=torch.int32)], [a(0), a(False)],
      error="TypeError")
w.add("gather/err_ndim", "gather", [x, L([1, 2])], [a(1), a(False)], error="ShapeError")
w.add("gather/err_size", "gather", [x, torch.zeros(4, 1, dtype=torch.long)], [a(1), a(False)], error="ShapeError")
w.add("gather/err_dim", "gather", [x, L([[0]])], [a(2), a(False)], error="IndexError")

# ---------------------------------------------------------------------------- scatter family
idx = L([[0, 3], [2, 2], [1, 0]])
for dt in ALL:
    w.add(f"scatter/src/{DTYPES[dt]}", "scatter", [rnd((3, 4), dt), L([[0, 3], [2, 1], [1, 0]]), rnd((3, 2), dt)],
          [a(1), None], lambda s, i, v: s.scatter(1, i, v))
w.add("scatter/value_int_into_float", "scatter", [rnd((3, 4)), idx, None], [a(1), attr(2, "scalar")],
      lambda s, i, v: s.scatter(1, i, 2))
w.add("scatter/value_float_into_int", "scatter", [L([1, 2, 3]), L([1]), None], [a(0), attr(2.7, "scalar")],
      lambda s, i, v: s.scatter(0, i, 2.7))
w.add("scatter/value_bool", "scatter", [B([False, False]), L([1]), None], [a(0), attr(True, "scalar")],
      lambda s, i, v: s.scatter(0, i, True))
w.add("scatter/src_bigger", "scatter", [rnd((2, 3)), L([[0], [2]]), rnd((3, 5))], [a(1), None],
      lambda s, i, v: s.scatter(1, i, v))
w.add("scatter/dim0_noncontig", "scatter", [(rnd((3, 2)), "transposed"), L([[2, 0], [1, 2]]), (rnd((2, 2)), "strided")],
      [a(0), None], lambda s, i, v: s.scatter(0, i, v))
w.add("scatter/empty_index", "scatter", [rnd((2, 3)), torch.zeros(2, 0, dtype=torch.long), rnd((1, 1))], [a(1), None],
      lambda s, i, v: s.scatter(1, i, v))
w.add("scatter/0d", "scatter", [torch.tensor(1.), torch.tensor(0), torch.tensor(7.)], [a(0), None],
      lambda s, i, v: s.scatter(0, i, v))
w.add("scatter_/inplace_transposed", "scatter_", [(rnd((3, 4)), "transposed"), idx, rnd((3, 2))], [a(1), None],
      lambda s, i, v: s.clone().scatter_(1, i, v))
w.add("scatter/err_dtype", "scatter", [rnd((3,)), L([0]), L([1])], [a(0), None], error="TypeError")
w.add("scatter/err_oob", "scatter", [rnd((3,)), L([3]), rnd((1,))], [a(0), None], error="IndexError")
w.add("scatter/err_negative", "scatter", [rnd((3,)), L([-1]), rnd((1,))], [a(0), None], error="IndexError")
w.add("scatter/err_src_small", "scatter", [rnd((2, 3)), L([[0, 1], [0, 1]]), rnd((2, 1))], [a(1), None],
      error="ShapeError")
w.add("scatter/err_value_overflow", "scatter", [torch.zeros(3, dtype=torch.uint8), L([0]), None],
      [a(0), attr(300, "scalar")], error="ValueError")
w.add("scatter/err_no_src", "scatter", [rnd((3,)), L([0]), None], [a(0), None], error="ValueError")
w.add("scatter/err_index_dtype", "scatter", [rnd((3,)), torch.tensor([0], dtype=torch.int32), rnd((1,))], [a(0), None],
      error="TypeError")
w.add("scatter/err_src_ndim", "scatter", [rnd((2, 3)), L([[0]]), rnd((3,))], [a(1), None], error="ShapeError")
w.add("scatter/err_index_exceeds_self", "scatter", [rnd((2, 3)), torch.zeros(3, 1, dtype=torch.long), rnd((3, 3))],
      [a(1), None], error="ShapeError")
w.add("scatter/err_dim", "scatter", [rnd((2, 3)), L([[0]]), rnd((1, 1))], [a(2), None], error="IndexError")

for dt in ALL:
    w.add(f"scatter_add/{DTYPES[dt]}", "scatter_add", [rnd((2, 3), dt), L([[0, 0, 2], [2, 1, 1]]), rnd((2, 3), dt)],
          [a(1)], lambda s, i, v: s.scatter_add(1, i, v))
w.add("scatter_add/src_bigger", "scatter_add", [rnd((2, 3)), L([[0, 0], [2, 1]]), rnd((2, 5))], [a(1)],
      lambda s, i, v: s.scatter_add(1, i, v))
w.add("scatter_add/dim0_expanded_src", "scatter_add", [rnd((3, 2)), L([[0, 1], [0, 2], [0, 0]]),
                                                       (rnd((1, 2)), "expanded", (3, 2))], [a(0)],
      lambda s, i, v: s.scatter_add(0, i, v))
w.add("scatter_add_/inplace_strided", "scatter_add_", [(rnd((2, 3)), "strided"), L([[0, 0, 2], [2, 1, 1]]),
                                                       rnd((2, 3))], [a(1)], lambda s, i, v: s.clone().scatter_add_(1, i, v))
w.add("scatter_add/err_oob", "scatter_add", [rnd((2, 3)), L([[3]]), rnd((1, 1))], [a(1)], error="IndexError")
w.add("scatter_add/err_dtype", "scatter_add", [rnd((2, 3)), L([[1]]), rnd((1, 1), torch.float64)], [a(1)],
      error="TypeError")

sr_self = torch.tensor([2., 3, 4, -1])
sr_idx = L([0, 0, 2, 2, 0])
sr_src = torch.tensor([5., -6, 7, nan, 0.5])
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for inc in [True, False]:
        w.add(f"scatter_reduce/{red}/include_self_{inc}", "scatter_reduce",
              [sr_self, sr_idx, torch.tensor([5., -6, 7, 1.5, 0.5])], [a(0), a(red), a(inc)],
              lambda s, i, v, red=red, inc=inc: s.scatter_reduce(0, i, v, red, include_self=inc))
        w.add(f"scatter_reduce/{red}/int64/include_self_{inc}", "scatter_reduce",
              [L([1, 2, 3, -7]), sr_idx, L([4, -5, 6, 3, -1])], [a(0), a(red), a(inc)],
              lambda s, i, v, red=red, inc=inc: s.scatter_reduce(0, i, v, red, include_self=inc))
        w.add(f"scatter_reduce/{red}/float16/include_self_{inc}", "scatter_reduce",
              [sr_self.half(), sr_idx, torch.tensor([5., -6, 7, 1.5, 0.5]).half()], [a(0), a(red), a(inc)],
              lambda s, i, v, red=red, inc=inc: s.scatter_reduce(0, i, v, red, include_self=inc))
w.add("scatter_reduce/amax_nan", "scatter_reduce", [sr_self, sr_idx, sr_src], [a(0), a("amax"), a(True)],
      lambda s, i, v: s.scatter_reduce(0, i, v, "amax"))
w.add("scatter_reduce/amin_nan", "scatter_reduce", [sr_self, sr_idx, sr_src], [a(0), a("amin"), a(False)],
      lambda s, i, v: s.scatter_reduce(0, i, v, "amin", include_self=False))
w.add("scatter_reduce/2d_dim1", "scatter_reduce", [rnd((2, 3)), L([[0, 0, 2, 2], [1, 1, 1, 0]]), rnd((2, 4))],
      [a(1), a("mean"), a(False)], lambda s, i, v: s.scatter_reduce(1, i, v, "mean", include_self=False))
w.add("scatter_reduce/bool_prod", "scatter_reduce", [B([False, True]), L([0, 0]), B([True, False])],
      [a(0), a("prod"), a(True)], lambda s, i, v: s.scatter_reduce(0, i, v, "prod"))
w.add("scatter_reduce/bool_sum", "scatter_reduce", [B([False, True]), L([0, 1]), B([True, True])],
      [a(0), a("sum"), a(True)], lambda s, i, v: s.scatter_reduce(0, i, v, "sum"))
w.add("scatter_reduce/err_reduce", "scatter_reduce", [sr_self, sr_idx, sr_src], [a(0), a("max"), a(True)],
      error="ValueError")
w.add("scatter_reduce/err_bool_mean", "scatter_reduce", [B([False, True]), L([0, 1]), B([True, True])],
      [a(0), a("mean"), a(True)], error="TypeError")
w.add("scatter_reduce/err_oob", "scatter_reduce", [sr_self, L([4]), sr_src], [a(0), a("sum"), a(True)],
      error="IndexError")

# ---------------------------------------------------------------------------- index_select / index_add
for dt in ALL:
    w.add(f"index_select/dim0/{DTYPES[dt]}", "index_select", [rnd((4, 3), dt), L([3, 0, 0])], [a(0)],
          lambda s, i: s.index_select(0, i))
w.add("index_select/dim1_int32", "index_select", [rnd((2, 4)), torch.tensor([3, 1], dtype=torch.int32)], [a(1)],
      lambda s, i: s.index_select(1, i))
w.add("index_select/dim_last_3d_transposed", "index_select", [(rnd((2, 3, 4)), "transposed"), L([2, 2, 0, 1])], [a(-1)],
      lambda s, i: s.index_select(-1, i))
w.add("index_select/strided_index", "index_select", [rnd((5, 2)), (L([4, 1, 0]), "strided")], [a(0)],
      lambda s, i: s.index_select(0, i))
w.add("index_select/0d_index", "index_select", [rnd((3, 2)), torch.tensor(2)], [a(0)], lambda s, i: s.index_select(0, i))
w.add("index_select/0d_self", "index_select", [torch.tensor(5.), L([0, 0])], [a(0)], lambda s, i: s.index_select(0, i))
w.add("index_select/empty_index", "index_select", [rnd((3, 2)), L([])], [a(0)], lambda s, i: s.index_select(0, i))
w.add("index_select/empty_self", "index_select", [rnd((3, 0)), L([2, 1])], [a(0)], lambda s, i: s.index_select(0, i))
w.add("index_select/err_oob", "index_select", [rnd((5,)), L([7])], [a(0)], error="IndexError")
w.add("index_select/err_negative", "index_select", [rnd((5,)), L([-1])], [a(0)], error="IndexError")
w.add("index_select/err_2d_index", "index_select", [rnd((5,)), L([[1]])], [a(0)], error="IndexError")
w.add("index_select/err_float_index", "index_select", [rnd((5,)), torch.tensor([1.])], [a(0)], error="TypeError")
w.add("index_select/err_dim", "index_select", [rnd((5,)), L([1])], [a(1)], error="IndexError")

for dt in ALL:
    w.add(f"index_add/dim0/{DTYPES[dt]}", "index_add", [rnd((4, 2), dt), L([3, 0, 3]), rnd((3, 2), dt)],
          [a(0), attr(1, "scalar")], lambda s, i, v: s.index_add(0, i, v))
w.add("index_add/alpha_float", "index_add", [rnd((3,)), L([1, 1]), rnd((2,))], [a(0), attr(2.5, "scalar")],
      lambda s, i, v: s.index_add(0, i, v, alpha=2.5))
w.add("index_add/alpha_float_int_self", "index_add", [L([0, 0, 0]), L([1, 1]), L([1, 1])], [a(0), attr(2.5, "scalar")],
      lambda s, i, v: s.index_add(0, i, v, alpha=2.5))
w.add("index_add/dim1_transposed", "index_add", [(rnd((3, 4)), "transposed"), torch.tensor([2, 0], dtype=torch.int32),
                                                 rnd((3, 2))], [a(1), attr(1, "scalar")],
      lambda s, i, v: s.index_add(1, i, v))
w.add("index_add/0d", "index_add", [torch.tensor(1.), L([0]), torch.tensor(2.)], [a(0), attr(1, "scalar")],
      lambda s, i, v: s.index_add(0, i, v))
w.add("index_add_/inplace_strided", "index_add_", [(rnd((2, 4)), "strided"), L([1, 1, 0]), rnd((2, 3))],
      [a(1), attr(-1, "scalar")], lambda s, i, v: s.clone().index_add_(1, i, v, alpha=-1))
w.add("index_add/err_dtype", "index_add", [rnd((3,)), L([0]), L([1])], [a(0), attr(1, "scalar")], error="TypeError")
w.add("index_add/err_oob", "index_add", [rnd((3,)), L([3]), rnd((1,))], [a(0), attr(1, "scalar")], error="IndexError")
w.add("index_add/err_negative", "index_add", [rnd((3,)), L([-1]), rnd((1,))], [a(0), attr(1, "scalar")],
      error="IndexError")
w.add("index_add/err_count", "index_add", [rnd((3, 2)), L([0, 1]), rnd((1, 2))], [a(0), attr(1, "scalar")],
      error="ShapeError")
w.add("index_add/err_slice_shape", "index_add", [rnd((3, 2)), L([0]), rnd((1, 3))], [a(0), attr(1, "scalar")],
      error="ShapeError")
w.add("index_add/err_2d_index", "index_add", [rnd((3, 2)), L([[0]]), rnd((1, 2))], [a(0), attr(1, "scalar")],
      error="IndexError")
w.add("index_add/err_source_ndim", "index_add", [rnd((3, 2)), L([0, 1]), rnd((2,))], [a(0), attr(1, "scalar")],
      error="ShapeError")

# ---------------------------------------------------------------------------- advanced indexing (aten::index)
x3 = rnd((3, 4, 5))
for dt in ALL:
    w.add(f"index/one_index/{DTYPES[dt]}", "index", [rnd((3, 4), dt), L([2, 0, -1])], [], lambda s, i: s[i])
w.add("index/adjacent_keeps_place", "index", [x3, None, L([[0, 3], [1, 1]])], [], lambda s, n, i: s[:, i])
w.add("index/two_adjacent", "index", [x3, None, L([0, 3]), L([4, 1])], [], lambda s, n, i, j: s[:, i, j])
w.add("index/separated_goes_first", "index", [x3, L([0, 2]), None, L([1, 0])], [], lambda s, i, n, j: s[i, :, j])
w.add("index/broadcast", "index", [x3, L([[0], [2]]), L([1, 3, 0])], [], lambda s, i, j: s[i, j])
w.add("index/three", "index", [x3, L([0, 2]), L([1, 3]), L([4, -5])], [], lambda s, i, j, k: s[i, j, k])
w.add("index/0d_index", "index", [x3, None, torch.tensor(2)], [], lambda s, n, i: torch.ops.aten.index(s, [None, i]))
w.add("index/mask_1d", "index", [x3, B([True, False, True])], [], lambda s, m: s[m])
w.add("index/mask_2d", "index", [x3, (torch.rand(3, 4) > 0.5)], [], lambda s, m: s[m])
w.add("index/mask_after_none", "index", [x3, None, B([True, False, False, True])], [], lambda s, n, m: s[:, m])
w.add("index/mask_and_index", "index", [x3, B([True, False, True]), None, L([0, 4])], [], lambda s, m, n, i: s[m, :, i])
w.add("index/uint8_mask", "index", [rnd((3, 2)), torch.tensor([1, 0, 1], dtype=torch.uint8)], [],
      lambda s, m: torch.ops.aten.index(s, [m]))
w.add("index/all_false_mask", "index", [rnd((3, 2)), B([False, False, False])], [], lambda s, m: s[m])
w.add("index/transposed_self", "index", [(rnd((4, 3)), "transposed"), None, (L([2, 0, 1, 1]), "strided")], [],
      lambda s, n, i: s[:, i])
w.add("index/expanded_self", "index", [(rnd((1, 3)), "expanded", (4, 3)), L([3, 1])], [], lambda s, i: s[i])
w.add("index/empty_index", "index", [x3, L([])], [], lambda s, i: s[i])
w.add("index/zero_size_dim", "index", [rnd((0, 3)), None, L([2, 0])], [], lambda s, n, i: s[:, i])
w.add("index/err_oob", "index", [rnd((2, 3)), L([0, 5])], [], error="IndexError")
w.add("index/err_oob_negative", "index", [rnd((2, 3)), L([-3])], [], error="IndexError")
w.add("index/err_int32", "index", [rnd((2, 3)), torch.tensor([0], dtype=torch.int32)], [], error="IndexError")
w.add("index/err_float", "index", [rnd((2, 3)), torch.tensor([0.])], [], error="IndexError")
w.add("index/err_broadcast", "index", [rnd((2, 3)), L([0, 1]), L([0, 1, 2])], [], error="IndexError")
w.add("index/err_mask_shape", "index", [rnd((2, 3)), B([True, False, True])], [], error="IndexError")
w.add("index/err_too_many", "index", [rnd((2, 3)), L([0]), L([0]), L([0])], [], error="IndexError")
w.add("index/err_mask_too_many_dims", "index", [rnd((2, 3)), None, torch.ones(3, 2, dtype=torch.bool)], [],
      error="IndexError")
w.add("_index/direct", "_index", [x3, None, L([1, 0])], [], lambda s, n, i: s[:, i])
w.add("_index/err_mask", "_index", [x3, B([True, False, True])], [], error="IndexError")
w.add("index/err_0d_mask", "index", [rnd((2, 3)), torch.tensor(True)], [], error="IndexError")
w.add("index_put/err_too_many", "index_put", [rnd((3,)), rnd((1,)), L([0]), L([0])], [a(False)], error="IndexError")
w.add("index_put/err_broadcast_indices", "index_put", [rnd((3, 3)), rnd((1,)), L([0, 1]), L([0, 1, 2])], [a(False)],
      error="IndexError")

# ---------------------------------------------------------------------------- index_put
for dt in ALL:
    w.add(f"index_put/one_index/{DTYPES[dt]}", "index_put", [rnd((4, 2), dt), rnd((2, 2), dt), L([3, -4])], [a(False)],
          lambda s, v, i: s.index_put((i,), v))
w.add("index_put/broadcast_values", "index_put", [rnd((4, 3)), rnd((3,)), L([0, 2])], [a(False)],
      lambda s, v, i: s.index_put((i,), v))
w.add("index_put/scalar_value", "index_put", [rnd((4, 3)), torch.tensor(7.), L([1]), L([2])], [a(False)],
      lambda s, v, i, j: s.index_put((i, j), v))
w.add("index_put/none_then_index", "index_put", [rnd((2, 3)), torch.tensor([1., 2.]), None, L([0, 2])], [a(False)],
      lambda s, v, n, i: torch.ops.aten.index_put(s, [None, i], v))
w.add("index_put/separated", "index_put", [rnd((2, 3, 4)), rnd((2, 3)), L([0, 1]), None, L([3, 0])], [a(False)],
      lambda s, v, i, n, j: torch.ops.aten.index_put(s, [i, None, j], v))
w.add("index_put/accumulate_dups", "index_put", [rnd((3,)), torch.tensor([1., 2., 4.]), L([0, 0, -1])], [a(True)],
      lambda s, v, i: s.index_put((i,), v, accumulate=True))
w.add("index_put/accumulate_int", "index_put", [L([1, 2, 3]), L([5, 6, 7]), L([2, 2, 0])], [a(True)],
      lambda s, v, i: s.index_put((i,), v, accumulate=True))
w.add("index_put/accumulate_bool", "index_put", [B([False, False, True]), B([True, False]), L([0, 0])], [a(True)],
      lambda s, v, i: s.index_put((i,), v, accumulate=True))
w.add("index_put/accumulate_half", "index_put", [torch.zeros(3, dtype=torch.float16),
                                                 torch.tensor([1000., 0.1, 2], dtype=torch.float16), L([0, 0, -1])],
      [a(True)], lambda s, v, i: s.index_put((i,), v, accumulate=True))
w.add("index_put/mask", "index_put", [rnd((2, 3)), torch.tensor([1., 2., 3.]), B([[True, False, True], [False, False, True]])],
      [a(False)], lambda s, v, m: s.index_put((m,), v))
w.add("index_put/mask_rows", "index_put", [rnd((3, 2)), torch.tensor([5., 6.]), B([True, False, True])], [a(True)],
      lambda s, v, m: s.index_put((m,), v, accumulate=True))
w.add("index_put/no_indices", "index_put", [rnd((2, 2)), torch.tensor(3.)], [a(False)],
      lambda s, v: torch.full((2, 2), 3.))
w.add("index_put/empty_index", "index_put", [rnd((3,)), torch.tensor(3.), L([])], [a(False)],
      lambda s, v, i: s.index_put((i,), v))
w.add("index_put_/inplace_transposed", "index_put_", [(rnd((3, 4)), "transposed"), rnd((2, 4)), L([2, 0])], [a(False)],
      lambda s, v, i: s.clone().index_put_((i,), v))
w.add("index_put_/inplace_strided_acc", "index_put_", [(rnd((3, 4)), "strided"), rnd((3,)), L([1, 1, 2]), L([0, 0, 3])],
      [a(True)], lambda s, v, i, j: s.clone().index_put_((i, j), v, accumulate=True))
w.add("index_put/err_dtype", "index_put", [rnd((3,)), L([1]), L([0])], [a(False)], error="TypeError")
w.add("index_put/err_oob", "index_put", [rnd((3,)), rnd((2,)), L([0, 5])], [a(False)], error="IndexError")
w.add("index_put/err_oob_accumulate", "index_put", [rnd((3,)), rnd((2,)), L([0, 3])], [a(True)], error="IndexError")
w.add("index_put/err_values_shape", "index_put", [rnd((3, 2)), rnd((3, 2)), L([0, 1])], [a(False)], error="ShapeError")
w.add("index_put/err_values_leading_ones", "index_put", [rnd((3, 2)), rnd((1, 1, 2, 2)), L([0, 1])], [a(False)],
      error="ShapeError")
w.add("index_put/err_mask_count", "index_put", [rnd((2, 3)), rnd((2,)), B([[True, False, True], [False, False, True]])],
      [a(False)], error="ShapeError")
w.add("index_put/err_index_dtype", "index_put", [rnd((3,)), rnd((1,)), torch.tensor([0], dtype=torch.int32)], [a(False)],
      error="IndexError")
w.add("index_put/err_mask_shape", "index_put", [rnd((3,)), rnd((1,)), B([True, False])], [a(False)], error="IndexError")

# ---------------------------------------------------------------------------- masks
mask23 = B([[True, False, True], [False, True, True]])
for dt in ALL:
    w.add(f"masked_fill/scalar/{DTYPES[dt]}", "masked_fill", [rnd((2, 3), dt), mask23, None], [attr(1, "scalar")],
          lambda s, m, v: s.masked_fill(m, 1))
w.add("masked_fill/broadcast_out", "masked_fill", [rnd((3,)), mask23, None], [attr(-2.5, "scalar")],
      lambda s, m, v: s.masked_fill(m, -2.5))
w.add("masked_fill/broadcast_mask", "masked_fill", [rnd((2, 3)), B([True, False, True]), None], [attr(0, "scalar")],
      lambda s, m, v: s.masked_fill(m, 0))
w.add("masked_fill/uint8_mask", "masked_fill", [rnd((3,)), torch.tensor([1, 0, 1], dtype=torch.uint8), None],
      [attr(5, "scalar")], lambda s, m, v: s.masked_fill(m, 5))
w.add("masked_fill/float_into_int", "masked_fill", [torch.zeros(3, dtype=torch.int32), B([True, False, True]), None],
      [attr(1.7, "scalar")], lambda s, m, v: s.masked_fill(m, 1.7))
w.add("masked_fill/neg_into_uint8", "masked_fill", [torch.zeros(3, dtype=torch.uint8), B([True, False, True]), None],
      [attr(-1, "scalar")], lambda s, m, v: s.masked_fill(m, -1))
w.add("masked_fill/inf_into_half", "masked_fill", [torch.zeros(3, dtype=torch.float16), B([True, False, True]), None],
      [attr(inf, "scalar")], lambda s, m, v: s.masked_fill(m, inf))
w.add("masked_fill/nan", "masked_fill", [rnd((3,)), B([True, False, True]), None], [attr(nan, "scalar")],
      lambda s, m, v: s.masked_fill(m, nan))
w.add("masked_fill/tensor_value", "masked_fill", [torch.zeros(3, dtype=torch.int32), B([True, False, True]),
                                                  torch.tensor(2.5, dtype=torch.float64)], [None],
      lambda s, m, v: s.masked_fill(m, v))
w.add("masked_fill/transposed_expanded", "masked_fill", [(rnd((3, 2)), "transposed"), (B([[True, False]]), "expanded", (3, 2)),
                                                         None], [attr(9, "scalar")], lambda s, m, v: s.masked_fill(m, 9))
w.add("masked_fill/0d", "masked_fill", [torch.tensor(1.), torch.tensor(True), None], [attr(3, "scalar")],
      lambda s, m, v: s.masked_fill(m, 3))
w.add("masked_fill/zero_size", "masked_fill", [rnd((0, 3)), B([True, False, True]), None], [attr(3, "scalar")],
      lambda s, m, v: s.masked_fill(m, 3))
w.add("masked_fill_/inplace_strided", "masked_fill_", [(rnd((2, 3)), "strided"), mask23, None], [attr(4, "scalar")],
      lambda s, m, v: s.clone().masked_fill_(m, 4))
w.add("masked_fill_/err_broadcast_self", "masked_fill_", [rnd((3,)), mask23, None], [attr(4, "scalar")],
      error="ShapeError")
w.add("masked_fill/err_overflow_u8", "masked_fill", [torch.zeros(3, dtype=torch.uint8), B([True, False, True]), None],
      [attr(300, "scalar")], error="ValueError")
w.add("masked_fill/err_overflow_int_inf", "masked_fill", [torch.zeros(3, dtype=torch.int32), B([True, False, True]), None],
      [attr(inf, "scalar")], error="ValueError")
w.add("masked_fill/err_overflow_nan_int", "masked_fill", [torch.zeros(3, dtype=torch.int32), B([True, False, True]), None],
      [attr(nan, "scalar")], error="ValueError")
w.add("masked_fill/err_overflow_half", "masked_fill", [torch.zeros(3, dtype=torch.float16), B([True, False, True]), None],
      [attr(1e6, "scalar")], error="ValueError")
w.add("masked_fill/err_overflow_f32", "masked_fill", [torch.zeros(3), B([True, False, True]), None],
      [attr(1e39, "scalar")], error="ValueError")
w.add("masked_fill/err_tensor_value_overflow", "masked_fill", [torch.zeros(3, dtype=torch.uint8), B([True, False, True]),
                                                               torch.tensor(300)], [None], error="ValueError")
w.add("masked_fill/err_value_1d", "masked_fill", [rnd((3,)), B([True, False, True]), rnd((1,))], [None],
      error="ShapeError")
w.add("masked_fill/err_float_mask", "masked_fill", [rnd((3,)), rnd((3,)), None], [attr(1, "scalar")], error="TypeError")
w.add("masked_fill/err_broadcast", "masked_fill", [rnd((3,)), B([True, False]), None], [attr(1, "scalar")],
      error="ShapeError")
w.add("masked_fill/err_no_value", "masked_fill", [rnd((3,)), B([True, False, True]), None], [None], error="ValueError")

for dt in ALL:
    w.add(f"masked_select/{DTYPES[dt]}", "masked_select", [rnd((2, 3), dt), mask23], [], lambda s, m: s.masked_select(m))
w.add("masked_select/broadcast", "masked_select", [torch.arange(3), mask23], [], lambda s, m: s.masked_select(m))
w.add("masked_select/broadcast_mask", "masked_select", [(rnd((3, 2)), "transposed"), B([False, True])], [],
      lambda s, m: s.masked_select(m))
w.add("masked_select/uint8_mask", "masked_select", [torch.arange(3), torch.tensor([1, 0, 1], dtype=torch.uint8)], [],
      lambda s, m: s.masked_select(m))
w.add("masked_select/none", "masked_select", [rnd((2, 3)), torch.zeros(2, 3, dtype=torch.bool)], [],
      lambda s, m: s.masked_select(m))
w.add("masked_select/0d", "masked_select", [torch.tensor(2.), torch.tensor(True)], [], lambda s, m: s.masked_select(m))
w.add("masked_select/err_broadcast", "masked_select", [rnd((3,)), B([True, False])], [], error="ShapeError")
w.add("masked_select/err_mask_dtype", "masked_select", [rnd((3,)), L([1, 0, 1])], [], error="TypeError")

for dt in ALL:
    w.add(f"masked_scatter/{DTYPES[dt]}", "masked_scatter", [rnd((2, 3), dt), mask23, rnd((2, 5), dt)], [],
          lambda s, m, v: s.masked_scatter(m, v))
w.add("masked_scatter/broadcast", "masked_scatter", [rnd((3,)), mask23, rnd((4,))], [], lambda s, m, v: s.masked_scatter(m, v))
w.add("masked_scatter/transposed", "masked_scatter", [(rnd((3, 2)), "transposed"), B([[True, False], [True, True], [False, True]]),
                                                      (rnd((2, 3)), "transposed")], [], lambda s, m, v: s.masked_scatter(m, v))
w.add("masked_scatter_/inplace_strided", "masked_scatter_", [(rnd((2, 3)), "strided"), mask23, rnd((6,))], [],
      lambda s, m, v: s.clone().masked_scatter_(m, v))
w.add("masked_scatter/err_too_few", "masked_scatter", [rnd((3,)), B([True, False, True]), rnd((1,))], [],
      error="ShapeError")
w.add("masked_scatter/err_dtype", "masked_scatter", [rnd((3,)), B([True, False, True]), L([1, 2])], [], error="TypeError")
w.add("masked_scatter/err_mask_dtype", "masked_scatter", [rnd((3,)), L([1, 0, 1]), rnd((3,))], [], error="TypeError")
w.add("masked_scatter/err_broadcast", "masked_scatter", [rnd((3,)), B([True, False]), rnd((3,))], [], error="ShapeError")

for dt in ALL:
    w.add(f"nonzero/{DTYPES[dt]}", "nonzero", [rnd((3, 4), dt) * (torch.rand(3, 4) > 0.5).to(dt)], [],
          lambda s: torch.nonzero(s))
w.add("nonzero/nan_and_negzero", "nonzero", [torch.tensor([nan, 0., -0., 1.])], [], lambda s: torch.nonzero(s))
w.add("nonzero/3d_transposed", "nonzero", [(torch.randint(0, 2, (2, 3, 2)), "transposed")], [], lambda s: torch.nonzero(s))
w.add("nonzero/0d_true", "nonzero", [torch.tensor(3)], [], lambda s: torch.nonzero(s))
w.add("nonzero/0d_false", "nonzero", [torch.tensor(0)], [], lambda s: torch.nonzero(s))
w.add("nonzero/empty", "nonzero", [rnd((0, 3))], [], lambda s: torch.nonzero(s))

# ---------------------------------------------------------------------------- repeat, tile, repeat_interleave
w.add("repeat/2d", "repeat", [rnd((2, 3))], [a([2, 3])], lambda s: s.repeat(2, 3))
w.add("repeat/extra_dims", "repeat", [L([1, 2, 3])], [a([2, 1, 2])], lambda s: s.repeat(2, 1, 2))
w.add("repeat/ones_is_copy", "repeat", [(rnd((2, 3)), "transposed")], [a([1, 1])], lambda s: s.repeat(1, 1))
w.add("repeat/zero", "repeat", [rnd((2, 3))], [a([2, 0])], lambda s: s.repeat(2, 0))
w.add("repeat/0d", "repeat", [torch.tensor(1)], [a([])], lambda s: s.repeat([]))
w.add("repeat/0d_to_2d", "repeat", [torch.tensor(True)], [a([2, 3])], lambda s: s.repeat(2, 3))
w.add("repeat/err_few", "repeat", [rnd((2, 3))], [a([2])], error="ShapeError")
w.add("repeat/err_negative", "repeat", [rnd((2, 3))], [a([2, -1])], error="ValueError")
w.add("tile/pad", "tile", [rnd((2, 3))], [a([2])], lambda s: s.tile((2,)))
w.add("tile/more", "tile", [L([1, 2])], [a([2, 2])], lambda s: s.tile((2, 2)))
w.add("tile/empty", "tile", [rnd((2, 3))], [a([])], lambda s: s.tile(()))

w.add("repeat_interleave/int_flat", "repeat_interleave", [L([[1, 2], [3, 4]]), None], [a(2), None, None],
      lambda s, r: torch.repeat_interleave(s, 2))
w.add("repeat_interleave/int_dim1", "repeat_interleave", [(rnd((3, 2)), "transposed"), None], [a(3), a(1), None],
      lambda s, r: torch.repeat_interleave(s, 3, dim=1))
w.add("repeat_interleave/int_zero", "repeat_interleave", [rnd((2, 3)), None], [a(0), a(0), None],
      lambda s, r: torch.repeat_interleave(s, 0, dim=0))
w.add("repeat_interleave/tensor_dim0", "repeat_interleave", [L([[1, 2], [3, 4]]), L([1, 2])], [None, a(0), None],
      lambda s, r: torch.repeat_interleave(s, r, dim=0))
w.add("repeat_interleave/tensor_flat", "repeat_interleave", [L([[1, 2], [3, 4]]), L([1, 0, 2, 1])], [None, None, None],
      lambda s, r: torch.repeat_interleave(s, r))
w.add("repeat_interleave/tensor_one_elem", "repeat_interleave", [rnd((2, 2)), L([3])], [None, a(1), None],
      lambda s, r: torch.repeat_interleave(s, r, dim=1))
w.add("repeat_interleave/tensor_0d", "repeat_interleave", [rnd((2, 2)), torch.tensor(2)], [None, a(-1), None],
      lambda s, r: torch.repeat_interleave(s, r, dim=-1))
w.add("repeat_interleave/int32_repeats", "repeat_interleave", [B([True, False]), torch.tensor([1, 2], dtype=torch.int32)],
      [None, a(0), None], lambda s, r: torch.repeat_interleave(s, r, dim=0))
w.add("repeat_interleave/output_size", "repeat_interleave", [L([5, 6]), L([1, 2])], [None, a(0), a(3)],
      lambda s, r: torch.repeat_interleave(s, r, dim=0, output_size=3))
w.add("repeat_interleave/0d_self", "repeat_interleave", [torch.tensor(5), None], [a(3), None, None],
      lambda s, r: torch.repeat_interleave(s, 3))
w.add("repeat_interleave/err_len", "repeat_interleave", [rnd((2, 2)), L([1, 2, 3])], [None, a(0), None],
      error="ShapeError")
w.add("repeat_interleave/err_negative", "repeat_interleave", [rnd((2, 2)), L([1, -2])], [None, a(0), None],
      error="ValueError")
w.add("repeat_interleave/err_negative_int", "repeat_interleave", [rnd((2, 2)), None], [a(-1), None, None],
      error="ValueError")
w.add("repeat_interleave/err_float_repeats", "repeat_interleave", [rnd((2,)), torch.tensor([1., 2.])], [None, None, None],
      error="TypeError")
w.add("repeat_interleave/err_2d_repeats", "repeat_interleave", [rnd((2,)), L([[1, 2]])], [None, None, None],
      error="ShapeError")
w.add("repeat_interleave/err_output_size", "repeat_interleave", [L([5, 6]), L([1, 2])], [None, a(0), a(4)],
      error="ValueError")
w.add("_repeat_interleave_indices/basic", "_repeat_interleave_indices", [L([2, 0, 1])], [None],
      lambda r: torch.repeat_interleave(r))
w.add("_repeat_interleave_indices/int32", "_repeat_interleave_indices", [torch.tensor([1, 2], dtype=torch.int32)], [None],
      lambda r: torch.repeat_interleave(r))
w.add("_repeat_interleave_indices/err_float", "_repeat_interleave_indices", [torch.tensor([1.])], [None],
      error="TypeError")
w.add("_repeat_interleave_indices/err_2d", "_repeat_interleave_indices", [L([[1]])], [None], error="ShapeError")
w.add("_repeat_interleave_indices/err_output_size_negative", "_repeat_interleave_indices", [L([1])], [a(-1)],
      error="ValueError")
w.add("_repeat_interleave_indices/err_negative", "_repeat_interleave_indices", [L([1, -1])], [None], error="ValueError")
w.add("repeat_interleave/err_no_repeats", "repeat_interleave", [rnd((2,)), None], [None, None, None], error="ValueError")
w.add("repeat_interleave/err_output_size_int", "repeat_interleave", [rnd((2,)), None], [a(2), None, a(3)],
      error="ValueError")

# ---------------------------------------------------------------------------- flip, roll, tril, triu
for dt in [torch.bool, torch.int16, torch.float16, torch.float64]:
    w.add(f"flip/{DTYPES[dt]}", "flip", [rnd((2, 3), dt)], [a([0, 1])], lambda s: s.flip(0, 1))
w.add("flip/one_dim_transposed", "flip", [(rnd((3, 4)), "transposed")], [a([-1])], lambda s: s.flip(-1))
w.add("flip/3d_mid", "flip", [(rnd((2, 3, 4)), "strided")], [a([1])], lambda s: s.flip(1))
w.add("flip/expanded", "flip", [(rnd((1, 3)), "expanded", (2, 3))], [a([0, 1])], lambda s: s.flip(0, 1))
w.add("flip/no_dims", "flip", [rnd((3,))], [a([])], lambda s: s.flip([]))
w.add("flip/0d", "flip", [torch.tensor(2.)], [a([0])], lambda s: s.flip(0))
w.add("flip/zero_size", "flip", [rnd((0, 3))], [a([1])], lambda s: s.flip(1))
w.add("flip/err_dup", "flip", [rnd((2, 3))], [a([0, 0])], error="ValueError")
w.add("flip/err_dim", "flip", [rnd((2, 3))], [a([2])], error="IndexError")

w.add("roll/flat", "roll", [torch.arange(6).view(2, 3)], [a([1]), a([])], lambda s: s.roll(1))
w.add("roll/dims", "roll", [torch.arange(6).view(2, 3)], [a([1, -1]), a([0, 1])], lambda s: s.roll((1, -1), (0, 1)))
w.add("roll/big_shift", "roll", [(rnd((3, 4)), "transposed")], [a([7]), a([1])], lambda s: s.roll(7, 1))
w.add("roll/dup_dims", "roll", [torch.arange(6).view(2, 3)], [a([1, 1]), a([1, 1])], lambda s: s.roll((1, 1), (1, 1)))
w.add("roll/zero_shift", "roll", [rnd((3,))], [a([0]), a([0])], lambda s: s.roll(0, 0))
w.add("roll/0d", "roll", [torch.tensor(2)], [a([1]), a([])], lambda s: s.roll(1))
w.add("roll/empty", "roll", [rnd((0, 3))], [a([1]), a([0])], lambda s: s.roll(1, 0))
w.add("roll/err_align", "roll", [rnd((2, 3))], [a([1, 2]), a([0])], error="ShapeError")
w.add("roll/err_no_dims_two_shifts", "roll", [rnd((2, 3))], [a([1, 2]), a([])], error="ShapeError")
w.add("roll/err_dim", "roll", [rnd((2, 3))], [a([1]), a([2])], error="IndexError")

for op in ["tril", "triu"]:
    for diag in [-1, 0, 2]:
        w.add(f"{op}/diag{diag}", op, [rnd((3, 4))], [a(diag)], lambda s, op=op, diag=diag: getattr(s, op)(diag))
    w.add(f"{op}/batched_transposed", op, [(rnd((2, 4, 3)), "transposed")], [a(0)], lambda s, op=op: getattr(s, op)())
    w.add(f"{op}/bool", op, [torch.ones(2, 3, dtype=torch.bool)], [a(-1)], lambda s, op=op: getattr(s, op)(-1))
    w.add(f"{op}/bfloat16", op, [rnd((3, 3), torch.bfloat16)], [a(1)], lambda s, op=op: getattr(s, op)(1))
    w.add(f"{op}/far_diag", op, [rnd((2, 3))], [a(-5)], lambda s, op=op: getattr(s, op)(-5))
    w.add(f"{op}/empty", op, [rnd((0, 3))], [a(0)], lambda s, op=op: getattr(s, op)())
    w.add(f"{op}_/inplace_transposed", op + "_", [(rnd((3, 3)), "transposed")], [a(0)],
          lambda s, op=op: getattr(s.clone(), op + "_")())
    w.add(f"{op}/err_1d", op, [rnd((3,))], [a(0)], error="ShapeError")

# ---------------------------------------------------------------------------- sort, argsort, topk, kthvalue
for dt in NUMERIC:
    w.add(f"sort/{DTYPES[dt]}", "sort", [distinct((3, 5), dt)], [a(-1), a(False), a(False)], lambda s: torch.sort(s))
    w.add(f"sort/desc/{DTYPES[dt]}", "sort", [distinct((3, 5), dt)], [a(0), a(True), a(False)],
          lambda s: torch.sort(s, 0, descending=True))
w.add("sort/bool_stable", "sort", [B([True, False, True, False])], [a(0), a(False), a(True)],
      lambda s: torch.sort(s, stable=True))
w.add("sort/nan_inf", "sort", [torch.tensor([3., nan, -inf, 1., nan, inf])], [a(0), a(False), a(True)],
      lambda s: torch.sort(s, stable=True))
w.add("sort/nan_inf_desc", "sort", [torch.tensor([3., nan, -inf, 1., nan, inf])], [a(0), a(True), a(True)],
      lambda s: torch.sort(s, descending=True, stable=True))
w.add("sort/ties_stable", "sort", [L([1, 2, 1, 2, 1])], [a(0), a(False), a(True)], lambda s: torch.sort(s, stable=True))
w.add("sort/ties_stable_desc", "sort", [L([1, 2, 1, 2, 1])], [a(0), a(True), a(True)],
      lambda s: torch.sort(s, descending=True, stable=True))
w.add("sort/transposed", "sort", [(distinct((4, 3)), "transposed")], [a(1), a(False), a(False)], lambda s: torch.sort(s, 1))
w.add("sort/int_edges", "sort", [L([2**63 - 1, -2**63, 0, -1])], [a(0), a(False), a(False)], lambda s: torch.sort(s))
w.add("sort/0d", "sort", [torch.tensor(3.)], [a(0), a(False), a(False)], lambda s: torch.sort(s))
w.add("sort/empty", "sort", [rnd((3, 0))], [a(1), a(False), a(False)], lambda s: torch.sort(s, 1))
w.add("sort/err_dim", "sort", [torch.tensor(3.)], [a(1), a(False), a(False)], error="IndexError")
w.add("argsort/desc", "argsort", [distinct((2, 4))], [a(-1), a(True), a(False)], lambda s: torch.argsort(s, descending=True))
w.add("argsort/stable_ties", "argsort", [L([1, 0, 1, 0])], [a(0), a(False), a(True)],
      lambda s: torch.argsort(s, stable=True))

for dt in [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float32, torch.float64]:
    w.add(f"topk/{DTYPES[dt]}", "topk", [distinct((3, 5), dt)], [a(2), a(-1), a(True), a(True)], lambda s: torch.topk(s, 2))
w.add("topk/smallest_dim0", "topk", [(distinct((4, 3)), "transposed")], [a(3), a(0), a(False), a(True)],
      lambda s: torch.topk(s, 3, 0, largest=False))
w.add("topk/nan_largest", "topk", [torch.tensor([3., nan, 1., 5.])], [a(2), a(0), a(True), a(True)],
      lambda s: torch.topk(s, 2))
w.add("topk/nan_smallest", "topk", [torch.tensor([3., nan, 1., 5.])], [a(4), a(0), a(False), a(True)],
      lambda s: torch.topk(s, 4, largest=False))
w.add("topk/k0", "topk", [rnd((2, 3))], [a(0), a(1), a(True), a(True)], lambda s: torch.topk(s, 0))
w.add("topk/0d", "topk", [torch.tensor(3.)], [a(1), a(0), a(True), a(True)], lambda s: torch.topk(s, 1))
w.add("topk/empty_rows", "topk", [rnd((0, 3))], [a(2), a(1), a(True), a(True)], lambda s: torch.topk(s, 2))
w.add("topk/err_k_big", "topk", [rnd((2,))], [a(3), a(0), a(True), a(True)], error="ValueError")
w.add("topk/err_k_neg", "topk", [rnd((2,))], [a(-1), a(0), a(True), a(True)], error="ValueError")
w.add("topk/err_bool", "topk", [B([True, False])], [a(1), a(0), a(True), a(True)], error="TypeError")

for dt in [torch.uint8, torch.int16, torch.int64, torch.float32, torch.float64]:
    w.add(f"kthvalue/{DTYPES[dt]}", "kthvalue", [distinct((3, 5), dt)], [a(2), a(-1), a(False)],
          lambda s: torch.kthvalue(s, 2))
w.add("kthvalue/keepdim_dim0", "kthvalue", [(distinct((3, 4)), "transposed")], [a(3), a(0), a(True)],
      lambda s: torch.kthvalue(s, 3, 0, True))
w.add("kthvalue/nan_last", "kthvalue", [torch.tensor([3., nan, 1., 5.])], [a(4), a(0), a(False)],
      lambda s: torch.kthvalue(s, 4))
w.add("kthvalue/0d", "kthvalue", [torch.tensor(3.)], [a(1), a(0), a(False)], lambda s: torch.kthvalue(s, 1))
w.add("kthvalue/empty_other", "kthvalue", [rnd((0, 3))], [a(1), a(1), a(False)], lambda s: torch.kthvalue(s, 1, 1))
w.add("kthvalue/err_k0", "kthvalue", [rnd((2,))], [a(0), a(0), a(False)], error="ValueError")
w.add("kthvalue/err_k_big", "kthvalue", [rnd((2,))], [a(3), a(0), a(False)], error="ValueError")
w.add("kthvalue/err_empty_dim", "kthvalue", [rnd((3, 0))], [a(1), a(1), a(False)], error="IndexError")
w.add("kthvalue/err_bool", "kthvalue", [B([True])], [a(1), a(0), a(False)], error="TypeError")


# ---------------------------------------------------------------------------- unique
def uniq(**kw):
    def f(s):
        return torch.unique(s, return_inverse=True, return_counts=True, **kw)
    return f


for dt in [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64]:
    vals = rnd((4, 5), dt) if dt == torch.bool else torch.randint(-3 if dt != torch.uint8 else 0, 3, (4, 5)).to(dt)
    w.add(f"unique/{DTYPES[dt]}", "unique", [vals],
          [a(True), a(True), a(True), None], uniq())
w.add("unique/flags_off", "unique", [L([3, 1, 2, 1, 3])], [a(True), a(False), a(False), None], uniq())
w.add("unique/transposed", "unique", [(torch.randint(0, 4, (3, 4)), "transposed")], [a(True), a(True), a(True), None],
      uniq())
w.add("unique/0d", "unique", [torch.tensor(3)], [a(True), a(True), a(True), None], uniq())
w.add("unique/empty", "unique", [torch.tensor([])], [a(True), a(True), a(True), None], uniq())
w.add("unique/negzero", "unique", [torch.tensor([0., -0., 1.])], [a(True), a(True), a(True), None], uniq())
w.add("unique/nan_values_only", "unique", [torch.tensor([nan, 1., nan, 1.])], [a(True), a(False), a(False), None],
      expected=[torch.tensor([1., nan, nan]), torch.tensor([1, 0, 2, 0]), torch.tensor([2, 1, 1])])
w.add("unique/dim0", "unique", [L([[3, 1], [2, 1], [3, 1]])], [a(True), a(True), a(True), a(0)], uniq(dim=0))
w.add("unique/dim1", "unique", [L([[3, 1, 3], [2, 1, 2]])], [a(True), a(True), a(True), a(1)], uniq(dim=1))
w.add("unique/dim1_3d", "unique", [torch.randint(0, 2, (2, 4, 2))], [a(True), a(True), a(True), a(1)], uniq(dim=1))
w.add("unique/dim_empty", "unique", [rnd((0, 3))], [a(True), a(True), a(True), a(0)], uniq(dim=0))
w.add("unique/err_dim_0d", "unique", [torch.tensor(3)], [a(True), a(True), a(True), a(0)], error="IndexError")
w.add("unique/err_zero_unselected", "unique", [rnd((2, 0))], [a(True), a(True), a(True), a(0)], error="ValueError")

# ---------------------------------------------------------------------------- searchsorted
bd = L([1, 3, 5, 7])
w.add("searchsorted/left", "searchsorted", [bd, L([[0, 3], [6, 9]]), None], [a(False), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/right", "searchsorted", [bd, L([3, 5]), None], [a(False), a(True), None],
      lambda b, v, s: torch.searchsorted(b, v, right=True))
w.add("searchsorted/side_right", "searchsorted", [bd, L([3, 5]), None], [a(False), a(False), a("right")],
      lambda b, v, s: torch.searchsorted(b, v, side="right"))
w.add("searchsorted/int32_out", "searchsorted", [bd, L([4]), None], [a(True), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v, out_int32=True))
w.add("searchsorted/promote", "searchsorted", [bd, torch.tensor([3.5, 5.]), None], [a(False), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/scalar", "searchsorted", [bd, scalar(4.5), None], [a(False), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/nd", "searchsorted", [L([[1, 3], [5, 7]]), L([[2, 4], [6, 8]]), None], [a(False), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/nd_transposed", "searchsorted", [torch.tensor([[1., 3, 4], [5, 7, 9]]), (rnd((2, 4)), "transposed"),
                                                     None], [a(False), a(True), None],
      lambda b, v, s: torch.searchsorted(b, v, right=True))
w.add("searchsorted/sorter", "searchsorted", [L([5, 1, 7, 3]), L([4, 6]), L([1, 3, 0, 2])], [a(False), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v, sorter=s))
w.add("searchsorted/nan", "searchsorted", [torch.tensor([1., 3, nan]), torch.tensor([nan, 2., inf]), None],
      [a(False), a(False), None], lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/half", "searchsorted", [torch.tensor([1., 2.], dtype=torch.float16), torch.tensor([1.5]), None],
      [a(False), a(False), None], lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/empty_values", "searchsorted", [bd, L([]), None], [a(False), a(False), None],
      lambda b, v, s: torch.searchsorted(b, v))
w.add("searchsorted/err_side", "searchsorted", [bd, L([3]), None], [a(False), a(False), a("middle")], error="ValueError")
w.add("searchsorted/err_conflict", "searchsorted", [bd, L([3]), None], [a(False), a(True), a("left")], error="ValueError")
w.add("searchsorted/err_0d_boundaries", "searchsorted", [torch.tensor(1), L([2]), None], [a(False), a(False), None],
      error="ShapeError")
w.add("searchsorted/err_nd_shape", "searchsorted", [L([[1, 3], [5, 7]]), L([[2, 4, 5]]), None], [a(False), a(False), None],
      error="ShapeError")
w.add("searchsorted/err_bool", "searchsorted", [B([False, True]), B([True]), None], [a(False), a(False), None],
      error="TypeError")
w.add("searchsorted/err_sorter_oob", "searchsorted", [L([5, 1, 7, 3]), L([4]), L([1, 3, 0, 9])],
      [a(False), a(False), None], error="IndexError")
w.add("searchsorted/err_sorter_shape", "searchsorted", [L([5, 1, 7, 3]), L([4]), L([1, 3, 0])],
      [a(False), a(False), None], error="ShapeError")
w.add("searchsorted/err_sorter_dtype", "searchsorted", [L([5, 1, 7, 3]), L([4]), torch.tensor([1, 3, 0, 2], dtype=torch.int32)],
      [a(False), a(False), None], error="TypeError")
w.add("searchsorted/err_scalar_nd", "searchsorted", [L([[1, 3], [5, 7]]), scalar(2), None], [a(False), a(False), None],
      error="ShapeError")

# ---------------------------------------------------------------------------- bincount
w.add("bincount/basic", "bincount", [L([1, 3, 1]), None], [a(0)], lambda s, wt: torch.bincount(s))
w.add("bincount/uint8_strided", "bincount", [(torch.tensor([1, 2, 2], dtype=torch.uint8), "strided"), None], [a(0)],
      lambda s, wt: torch.bincount(s))
w.add("bincount/minlength", "bincount", [L([1, 3, 1]), None], [a(6)], lambda s, wt: torch.bincount(s, minlength=6))
w.add("bincount/weights_f32", "bincount", [L([1, 3, 1]), torch.tensor([0.5, 1., 2.])], [a(0)],
      lambda s, wt: torch.bincount(s, wt))
w.add("bincount/weights_f16", "bincount", [L([1, 3, 1]), torch.tensor([0.5, 1., 2.], dtype=torch.float16)], [a(0)],
      lambda s, wt: torch.bincount(s, wt))
w.add("bincount/weights_int", "bincount", [torch.tensor([0, 2], dtype=torch.int32), L([4, 5])], [a(4)],
      lambda s, wt: torch.bincount(s, wt, 4))
w.add("bincount/empty", "bincount", [L([]), None], [a(0)], lambda s, wt: torch.bincount(s))
w.add("bincount/empty_weights", "bincount", [L([]), torch.tensor([])], [a(3)], lambda s, wt: torch.bincount(s, wt, 3))
w.add("bincount/err_negative", "bincount", [L([1, -3]), None], [a(0)], error="ValueError")
w.add("bincount/err_2d", "bincount", [L([[1]]), None], [a(0)], error="ShapeError")
w.add("bincount/err_float", "bincount", [torch.tensor([1.]), None], [a(0)], error="TypeError")
w.add("bincount/err_bool", "bincount", [B([True]), None], [a(0)], error="TypeError")
w.add("bincount/err_weights_len", "bincount", [L([1, 2]), torch.tensor([1.])], [a(0)], error="ShapeError")
w.add("bincount/err_minlength", "bincount", [L([1, 2]), None], [a(-1)], error="ValueError")

w.write(OUT)
