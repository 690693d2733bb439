"""Autograd from Python (torch.autograd): grad modes and gradient functions."""
import functools

from . import _C

__all__ = ["Function", "grad", "backward", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "autocast", "is_autocast_enabled", "get_autocast_dtype"]


def is_grad_enabled():
    """True while ops record history for autograd (per thread)."""
    return _C.is_grad_enabled()


class _GradMode:
    """Sets grad mode for a `with` block, or for every call of a decorated function."""
    _mode = True

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._mode)
        return None

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C.is_grad_enabled()
            _C.set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _C.set_grad_enabled(prev)
        return wrapper


class no_grad(_GradMode):
    """Context manager and decorator: ops inside record no history (torch.no_grad)."""
    _mode = False


class enable_grad(_GradMode):
    """Context manager and decorator: ops inside record history, even under no_grad."""
    _mode = True


class set_grad_enabled(_GradMode):
    """Sets grad mode to `mode` now (like torch.set_grad_enabled) and, used as a context
    manager, restores the previous mode at exit."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False


class inference_mode:
    """Context manager and decorator: no history and no version-counter updates
    (torch.inference_mode). inference_mode(False) turns it off inside."""

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = (_C.is_grad_enabled(), _C.is_inference_mode())
        if self._mode:
            _C.set_grad_enabled(False)
        _C.set_inference_mode(self._mode)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev[0])
        _C.set_inference_mode(self._prev[1])
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(self._mode):
                return fn(*args, **kwargs)
        return wrapper


class autocast:
    """Context manager and decorator: mixed precision as torch.autocast(device_type="cpu").
    Inside, ops on the autocast lists run in `dtype` (matmul, linear, conv: bfloat16 by
    default, or float16) or in float32 (softmax, losses, norms, exp/log, sums); the casts
    are recorded, so gradients of float32 parameters stay float32. enabled=False switches
    autocast off inside; blocks nest. ValueError for a dtype other than bfloat16/float16
    or a device_type other than "cpu"."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=True):
        if device_type != "cpu":
            raise ValueError(f"[autocast] device_type {device_type!r}: tandem runs on the CPU only")
        self._args = (_C.bfloat16 if dtype is None else dtype, bool(enabled), bool(cache_enabled))
        self._guards = []

    def __enter__(self):
        g = _C._AutocastGuard(*self._args)
        g.enter()
        self._guards.append(g)
        return None

    def __exit__(self, *exc):
        self._guards.pop().exit()
        return False

    def __call__(self, fn):
        args = self._args

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with autocast("cpu", *args):
                return fn(*a, **kw)
        return wrapper


def is_autocast_enabled():
    """True while autocast is on (per thread)."""
    return _C.is_autocast_enabled()


def get_autocast_dtype():
    """The lower-precision dtype of the current autocast state (bfloat16 by default)."""
    return _C.get_autocast_dtype()


def _seq(x):
    return [x] if isinstance(x, _C.Tensor) else list(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """d(outputs)/d(inputs), weighted by grad_outputs (torch.autograd.grad).

    outputs, inputs: a Tensor or a sequence of them. grad_outputs: one per output (None
    for a one-element output, which gets 1). Returns a tuple with one gradient per input
    (None for an input not reached when allow_unused, RuntimeError otherwise). Leaves'
    .grad is not touched. create_graph records the computation for higher-order gradients.
    """
    gos = None if grad_outputs is None else _seq(grad_outputs)
    return _C._autograd_grad(_seq(outputs), _seq(inputs), gos, retain_graph, create_graph, allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """Accumulates the gradients of `tensors` into the leaves' .grad (torch.autograd.backward)."""
    gts = None if grad_tensors is None else _seq(grad_tensors)
    _C._autograd_backward(_seq(tensors), gts, retain_graph, create_graph)


class Function:
    """A differentiable operation written in Python (torch.autograd.Function):

        class Cube(tandem.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 3 * x * x

        y = Cube.apply(x)

    forward(ctx, *args) runs without recording and returns a Tensor or a tuple of them;
    backward(ctx, *grads) gets one gradient per output and returns one per argument of
    forward (None for non-tensors or no gradient). ctx: save_for_backward,
    saved_tensors, needs_input_grad, mark_dirty, mark_non_differentiable,
    set_materialize_grads, and any attribute set in forward. Exceptions raised in
    backward propagate out of backward().
    """

    @staticmethod
    def forward(ctx, *args):
        """The computation (subclasses define it)."""
        raise NotImplementedError("autograd.Function subclasses define forward")

    @staticmethod
    def backward(ctx, *grads):
        """The gradients of forward's arguments (subclasses define it)."""
        raise NotImplementedError("autograd.Function subclasses define backward")

    @classmethod
    def apply(cls, *args):
        """Runs forward and records the call so that backward runs in a backward pass."""
        return _C._function_apply(cls, *args)
