#!/usr/bin/python3
"""Oracle cases for slice_scatter, select_scatter, diagonal_scatter and as_strided_scatter.

Run: /usr/bin/python3 tests/oracle/gen_view_scatter.py  ->  tests/data/oracle/view_scatter.json
Op schemas follow src/tandem/ops/shape.cpp: inputs (self, src); attrs are the view op's
  slice_scatter(dim, start, end, step)   select_scatter(dim, index)
  diagonal_scatter(offset, dim1, dim2)   as_strided_scatter(size, stride, storage_offset)

Error classes are tandem's (PyTorch raises RuntimeError for a src of the wrong shape and for
an out-of-bounds as_strided geometry; tandem ShapeError / ValueError). as_strided_scatter on a
self that writes one element twice (stride 0, overlapping windows) is an error in tandem
(PyTorch leaves the order of the writes unspecified); see tests/ops/test_view_scatter.cpp.
"""
import os

import torch
from oracle_lib import DTYPES, CaseWriter, attr, rnd

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "view_scatter.json")
torch.manual_seed(0)
w = CaseWriter()

ALL = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
       torch.float16, torch.bfloat16, torch.float32, torch.float64]


def a(v):
    return attr(v)


def transposed(t):
    """The tensor tandem's "transposed" layout builds (memory holds the transpose)."""
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


# ---------------------------------------------------------------------------- slice_scatter
def slice_attrs(dim=0, start=None, end=None, step=1):
    return [a(dim), a(start), a(end), a(step)]


def slice_fn(dim=0, start=None, end=None, step=1):
    return lambda x, s: torch.slice_scatter(x, s, dim, start, end, step)


for dt in ALL:
    w.add(f"slice_scatter/rows/{DTYPES[dt]}", "slice_scatter", [rnd((4, 3), dt), rnd((2, 3), dt)], slice_attrs(0, 1, 3),
          slice_fn(0, 1, 3))
w.add("slice_scatter/step", "slice_scatter", [rnd((3, 7)), rnd((3, 3))], slice_attrs(1, None, None, 3),
      slice_fn(1, None, None, 3))
w.add("slice_scatter/negative_bounds", "slice_scatter", [rnd((3, 5)), rnd((3, 2))], slice_attrs(-1, -3, -1),
      slice_fn(-1, -3, -1))
w.add("slice_scatter/clamped_end", "slice_scatter", [rnd((5,)), rnd((2,))], slice_attrs(0, 3, 100), slice_fn(0, 3, 100))
w.add("slice_scatter/empty_slice", "slice_scatter", [rnd((4, 2)), rnd((0, 2))], slice_attrs(0, 3, 1), slice_fn(0, 3, 1))
w.add("slice_scatter/3d_middle", "slice_scatter", [rnd((2, 6, 3)), rnd((2, 2, 3))], slice_attrs(1, 1, 5, 2),
      slice_fn(1, 1, 5, 2))
w.add("slice_scatter/src_other_dtype", "slice_scatter", [rnd((4, 3)), rnd((1, 3), torch.float64)], slice_attrs(0, 0, 1),
      slice_fn(0, 0, 1))
w.add("slice_scatter/int_self_float_src", "slice_scatter", [rnd((5,), torch.int64), torch.tensor([2.7, -3.9])],
      slice_attrs(0, 1, 3), slice_fn(0, 1, 3))
w.add("slice_scatter/transposed_self", "slice_scatter", [(rnd((4, 5)), "transposed"), rnd((4, 2))],
      slice_attrs(1, 2, 4), slice_fn(1, 2, 4))
w.add("slice_scatter/strided_src", "slice_scatter", [rnd((3, 4)), (rnd((3, 2)), "strided")], slice_attrs(1, 0, 2),
      slice_fn(1, 0, 2))
w.add("slice_scatter/expanded_src", "slice_scatter", [rnd((3, 4)), (rnd((1, 4)), "expanded", (2, 4))],
      slice_attrs(0, 1, 3), slice_fn(0, 1, 3))
w.add("slice_scatter/err_src_shape", "slice_scatter", [rnd((4, 3)), rnd((3, 3))], slice_attrs(0, 0, 2),
      error="ShapeError")
w.add("slice_scatter/err_src_broadcast", "slice_scatter", [rnd((4, 3)), rnd((1, 3))], slice_attrs(0, 0, 2),
      error="ShapeError")
w.add("slice_scatter/err_step0", "slice_scatter", [rnd((4, 3)), rnd((4, 3))], slice_attrs(1, 0, 3, 0),
      error="ValueError")
w.add("slice_scatter/err_0d", "slice_scatter", [torch.tensor(1.0), torch.tensor(2.0)], slice_attrs(0),
      error="IndexError")
w.add("slice_scatter/err_dim", "slice_scatter", [rnd((4, 3)), rnd((4, 3))], slice_attrs(2), error="IndexError")

# ---------------------------------------------------------------------------- select_scatter
for dt in ALL:
    w.add(f"select_scatter/row/{DTYPES[dt]}", "select_scatter", [rnd((3, 4), dt), rnd((4,), dt)], [a(0), a(1)],
          lambda x, s: torch.select_scatter(x, s, 0, 1))
w.add("select_scatter/negative_index", "select_scatter", [rnd((3, 4)), rnd((3,))], [a(1), a(-1)],
      lambda x, s: torch.select_scatter(x, s, 1, -1))
w.add("select_scatter/3d", "select_scatter", [rnd((2, 3, 4)), rnd((2, 4))], [a(-2), a(2)],
      lambda x, s: torch.select_scatter(x, s, -2, 2))
w.add("select_scatter/1d_to_0d", "select_scatter", [rnd((5,)), torch.tensor(7.0)], [a(0), a(3)],
      lambda x, s: torch.select_scatter(x, s, 0, 3))
w.add("select_scatter/transposed_self", "select_scatter", [(rnd((3, 4)), "transposed"), rnd((3,))], [a(1), a(0)],
      lambda x, s: torch.select_scatter(x, s, 1, 0))
w.add("select_scatter/err_index", "select_scatter", [rnd((3, 4)), rnd((4,))], [a(0), a(3)], error="IndexError")
w.add("select_scatter/err_shape", "select_scatter", [rnd((3, 4)), rnd((3,))], [a(0), a(0)], error="ShapeError")
w.add("select_scatter/err_broadcast", "select_scatter", [rnd((3, 4)), rnd((1,))], [a(0), a(0)], error="ShapeError")

# ---------------------------------------------------------------------------- diagonal_scatter
for dt in ALL:
    w.add(f"diagonal_scatter/main/{DTYPES[dt]}", "diagonal_scatter", [rnd((3, 4), dt), rnd((3,), dt)],
          [a(0), a(0), a(1)], lambda x, s: torch.diagonal_scatter(x, s))
for off, n in [(1, 3), (2, 2), (-1, 2), (-2, 1), (4, 0)]:
    w.add(f"diagonal_scatter/offset{off}", "diagonal_scatter", [rnd((3, 4)), rnd((n,))], [a(off), a(0), a(1)],
          lambda x, s, off=off: torch.diagonal_scatter(x, s, off))
w.add("diagonal_scatter/3d_dims", "diagonal_scatter", [rnd((2, 3, 4)), rnd((3, 2))], [a(0), a(-1), a(0)],
      lambda x, s: torch.diagonal_scatter(x, s, 0, -1, 0))
w.add("diagonal_scatter/transposed_self", "diagonal_scatter", [(rnd((4, 3)), "transposed"), rnd((2,))],
      [a(1), a(0), a(1)], lambda x, s: torch.diagonal_scatter(x, s, 1))
w.add("diagonal_scatter/err_same_dims", "diagonal_scatter", [rnd((3, 3)), rnd((3,))], [a(0), a(1), a(1)],
      error="ValueError")
w.add("diagonal_scatter/err_shape", "diagonal_scatter", [rnd((3, 3)), rnd((2,))], [a(0), a(0), a(1)],
      error="ShapeError")

# ---------------------------------------------------------------------------- as_strided_scatter
def strided_attrs(size, stride, offset=None):
    return [a(size), a(stride), a(offset)]


for dt in ALL:
    w.add(f"as_strided_scatter/block/{DTYPES[dt]}", "as_strided_scatter", [rnd((3, 4), dt), rnd((2, 2), dt)],
          strided_attrs([2, 2], [4, 1], 1), lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (4, 1), 1))
w.add("as_strided_scatter/no_offset", "as_strided_scatter", [rnd((3, 4)), rnd((3,))], strided_attrs([3], [5]),
      lambda x, s: torch.as_strided_scatter(x, s, (3,), (5,)))
w.add("as_strided_scatter/gappy", "as_strided_scatter", [rnd((12,)), rnd((2, 3))], strided_attrs([2, 3], [6, 2], 1),
      lambda x, s: torch.as_strided_scatter(x, s, (2, 3), (6, 2), 1))
w.add("as_strided_scatter/interleaved_strides", "as_strided_scatter", [rnd((8,)), rnd((3, 2))],
      strided_attrs([3, 2], [2, 3]), lambda x, s: torch.as_strided_scatter(x, s, (3, 2), (2, 3)))
x = rnd((4, 3))
w.add("as_strided_scatter/transposed_self", "as_strided_scatter", [(x, "transposed"), -torch.ones(2)],
      strided_attrs([2], [1]), expected=torch.as_strided_scatter(transposed(x), -torch.ones(2), (2,), (1,)))
x = rnd((3, 4))
w.add("as_strided_scatter/strided_self", "as_strided_scatter", [(x, "strided"), -torch.ones(3)],
      strided_attrs([3], [1], 2), lambda x, s: torch.as_strided_scatter(x, s, (3,), (1,), 2))
w.add("as_strided_scatter/expanded_self", "as_strided_scatter", [(rnd((1, 3)), "expanded", (2, 3)), -torch.ones(2)],
      strided_attrs([2], [3]), lambda x, s: torch.as_strided_scatter(x, s, (2,), (3,)))
w.add("as_strided_scatter/empty", "as_strided_scatter", [rnd((2, 2)), rnd((0, 3))], strided_attrs([0, 3], [1, 1], 7),
      lambda x, s: torch.as_strided_scatter(x, s, (0, 3), (1, 1), 7))
w.add("as_strided_scatter/err_out_of_bounds", "as_strided_scatter", [rnd((3, 4)), rnd((2, 2))],
      strided_attrs([2, 2], [4, 1], 11), error="ValueError")
w.add("as_strided_scatter/err_shape", "as_strided_scatter", [rnd((3, 4)), rnd((2, 3))],
      strided_attrs([2, 2], [4, 1]), error="ShapeError")
w.add("as_strided_scatter/err_overlap", "as_strided_scatter", [rnd((3, 4)), rnd((2, 2))],
      strided_attrs([2, 2], [0, 1]), error="ValueError")
w.add("as_strided_scatter/err_overlap_windows", "as_strided_scatter", [rnd((3, 4)), rnd((2, 2))],
      strided_attrs([2, 2], [1, 1]), error="ValueError")
w.add("as_strided_scatter/err_negative_stride", "as_strided_scatter", [rnd((3, 4)), rnd((2,))],
      strided_attrs([2], [-1], 3), error="ValueError")

w.write(OUT)
