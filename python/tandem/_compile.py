"""tandem.compile over Python functions of tensors."""
import functools

from . import _C


def compile(fn=None, *, strict=False):
    """Compiles `fn`, a Python function of tensors returning a Tensor or a tuple/list of
    Tensors, with tandem's compiler (torch.compile's role): the first call with a given
    signature (shapes, dtypes, requires_grad of the inputs) runs fn once to capture its
    ops through the dispatcher; later calls with that signature run the optimized
    program without calling fn.

    Python values fn reads (closures, globals, Python numbers computed in fn) are
    constants of the trace: a change the inputs' signature cannot see is not noticed.
    Reading data (x.item(), x.tolist(), x.numpy()) breaks the graph: the call runs
    eagerly instead (strict=True raises tandem.GraphBreak). Arguments must be tensors
    (numbers become 0-d tensors). Usable as a decorator: @tandem.compile or
    @tandem.compile(strict=True).
    """
    if fn is None:
        return lambda f: compile(f, strict=strict)
    compiled = _C._compile(fn, strict)

    @functools.wraps(fn)
    def wrapper(*args):
        return compiled(*args)
    wrapper.compiled = compiled
    return wrapper
