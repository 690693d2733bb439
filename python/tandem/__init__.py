"""tandem: a deep-learning engine with PyTorch's habits (Python front end).

    import tandem
    x = tandem.randn(3, 4, requires_grad=True)
    y = (x * 2).relu().sum()
    y.backward()
    x.grad  # d(y)/d(x)

Tensors, creation functions and every op of tandem's registry (tandem.add, tandem.sum,
x.relu(), ...) with PyTorch's names; autograd (requires_grad, backward, tandem.no_grad,
tandem.autograd.grad); numpy interop without copies (x.numpy(), tandem.from_numpy).
Errors are tandem.Error subclasses that also derive from the matching built-in
(tandem.TypeError is a TypeError, tandem.ShapeError a RuntimeError, ...).
"""
from . import _C
from ._C import Tensor, dtype, from_numpy, from_dlpack, get_op, all_ops, manual_seed, get_default_dtype, set_default_dtype, Error
from ._C import set_num_threads, get_num_threads
from ._creation import (tensor, as_tensor, zeros, ones, full, empty, arange, rand, randn, zeros_like, ones_like,
                        full_like, empty_like, rand_like, randn_like)
from . import _tensor  # noqa: F401  (adds Python-level Tensor methods)
from . import autograd
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled
from .autograd import autocast, is_autocast_enabled, get_autocast_dtype
from . import _ops, _overloads
from . import optim, nn, utils, datasets
from ._compile import compile, explain
from .serialization import save, load, save_checkpoint, load_checkpoint
from ._C import GraphBreak

# dtypes under their names and PyTorch's aliases (tandem.float is tandem.float32, ...).
# Assigned last: they shadow the built-ins float, int, bool in this module's namespace.
bool = _C.bool
uint8, int8, int16, int32, int64 = _C.uint8, _C.int8, _C.int16, _C.int32, _C.int64
float16, bfloat16, float32, float64 = _C.float16, _C.bfloat16, _C.float32, _C.float64
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64

# The error classes (also shadow built-ins here; each subclasses the built-in of its name).
TypeError, ValueError, ShapeError, IndexError = _C.TypeError, _C.ValueError, _C.ShapeError, _C.IndexError
NotImplementedError, RuntimeError = _C.NotImplementedError, _C.RuntimeError
OutOfMemoryError = _C.OutOfMemoryError


def _dtype_from_name(name):
    """The dtype called `name` (for pickling dtypes)."""
    return _C.dtype_from_name(name)


# Every registered op becomes tandem.<name> and, when its first input is the tensor,
# Tensor.<name>, unless defined above by hand.
_overloads.install(globals(), Tensor)
_ops.install(globals(), Tensor)
