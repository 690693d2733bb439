"""Tensor creation functions (torch.tensor, zeros, ones, ... with dtype= and requires_grad=)."""
import builtins
import operator

import numpy as np

from . import _C
from ._C import Tensor


def _sizes(size, fn):
    """Sizes given as ints (zeros(2, 3)) or one sequence (zeros((2, 3))) -> list of ints."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = size[0]
    try:
        return [operator.index(s) for s in size]
    except builtins.TypeError:
        raise builtins.TypeError(f"[{fn}] sizes must be ints or one sequence of ints, got {size!r}") from None


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, *, dtype=None, requires_grad=False):
    """A new tensor holding a copy of `data` (torch.tensor).

    data: a number, nested lists/tuples of numbers (rectangular), a numpy array or a
    Tensor. dtype: bool for bools, int64 for ints, the default float dtype (float32) for
    floats, unless given; a numpy array keeps its dtype. Shape: the nesting of `data`
    (() for a number). Raises ValueError for ragged lists, TypeError for unsupported
    element types (complex, str, objects).
    """
    if isinstance(data, Tensor):
        t = data.detach().clone()
    else:
        if isinstance(data, (np.ndarray, np.generic)):
            arr = np.array(data, copy=True)
        else:
            try:
                arr = np.array(data)
            except builtins.ValueError as e:
                raise _C.ValueError(f"[tensor] expected a rectangular nesting of numbers: {e}") from None
            kind = arr.dtype.kind
            if kind == "b":
                pass
            elif kind in "iu":
                if arr.dtype != np.int64:
                    arr = arr.astype(np.int64)
            elif kind == "f":
                arr = arr.astype(_C.get_default_dtype().name)
            elif kind == "O":
                raise _C.ValueError("[tensor] expected a rectangular nesting of numbers")
            else:
                raise _C.TypeError(f"[tensor] can't make a tensor from elements of numpy kind {arr.dtype}")
        # np.require keeps 0-d arrays 0-d (np.ascontiguousarray makes them 1-d).
        t = _C.from_numpy(np.require(arr, requirements="C")).clone()
    if dtype is not None:
        t = t.to(dtype)
    return _finish(t, requires_grad)


def as_tensor(data, dtype=None):
    """`data` as a tensor without copying when it already is one (or a numpy array of a
    supported dtype, whose memory it then shares); otherwise like tensor(data, dtype=dtype)."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        t = _C.from_numpy(data)
        return t if dtype is None else t.to(dtype)
    return tensor(data, dtype=dtype)


def zeros(*size, dtype=None, requires_grad=False):
    """A tensor of zeros with the given sizes (ints or one sequence); dtype default float32.
    ValueError for a negative size."""
    return _C._zeros(_sizes(size, "zeros"), dtype, requires_grad)


def ones(*size, dtype=None, requires_grad=False):
    """A tensor of ones with the given sizes; dtype default float32. ValueError for a negative size."""
    return _C._ones(_sizes(size, "ones"), dtype, requires_grad)


def empty(*size, dtype=None, requires_grad=False):
    """An uninitialised tensor with the given sizes; dtype default float32."""
    return _C._empty(_sizes(size, "empty"), dtype, requires_grad)


def full(size, fill_value, *, dtype=None, requires_grad=False):
    """A tensor of `size` filled with `fill_value`; dtype from the value (bool, int64 or the
    default float) unless given. ValueError when the value does not fit the dtype."""
    if isinstance(size, builtins.int):
        size = (size,)
    return _C._full(_sizes((size,), "full"), fill_value, dtype, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, requires_grad=False):
    """1-d tensor of start, start+step, ... below end (torch.arange; arange(n) counts 0..n-1).
    dtype: int64 when all bounds are ints, else the default float dtype, unless given.
    ValueError for step 0 or a step of the wrong sign."""
    if end is None:
        start, end = 0, start
    return _C._arange(start, end, step, dtype, requires_grad)


def rand(*size, dtype=None, requires_grad=False):
    """Uniform samples in [0, 1) from the default generator (tandem.manual_seed); floating dtypes."""
    return _C._rand(_sizes(size, "rand"), dtype, requires_grad)


def randn(*size, dtype=None, requires_grad=False):
    """Standard normal samples from the default generator (tandem.manual_seed); floating dtypes."""
    return _C._randn(_sizes(size, "randn"), dtype, requires_grad)


def _like(fn, t, dtype, requires_grad):
    return fn(list(t.shape), dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad)


def zeros_like(input, *, dtype=None, requires_grad=False):
    """zeros with input's shape and (unless given) dtype."""
    return _like(zeros, input, dtype, requires_grad)


def ones_like(input, *, dtype=None, requires_grad=False):
    """ones with input's shape and (unless given) dtype."""
    return _like(ones, input, dtype, requires_grad)


def empty_like(input, *, dtype=None, requires_grad=False):
    """empty with input's shape and (unless given) dtype."""
    return _like(empty, input, dtype, requires_grad)


def rand_like(input, *, dtype=None, requires_grad=False):
    """rand with input's shape and (unless given) dtype."""
    return _like(rand, input, dtype, requires_grad)


def randn_like(input, *, dtype=None, requires_grad=False):
    """randn with input's shape and (unless given) dtype."""
    return _like(randn, input, dtype, requires_grad)


def full_like(input, fill_value, *, dtype=None, requires_grad=False):
    """full with input's shape and (unless given) dtype."""
    return full(list(input.shape), fill_value, dtype=input.dtype if dtype is None else dtype,
                requires_grad=requires_grad)
