"""Python exceptions raised inside code tandem calls back (custom autograd Functions,
tensor hooks, module forward and hooks, compiled functions) reach the caller unchanged,
with their traceback, and leave no references behind."""
import gc
import sys
import weakref

import pytest

import tandem
from tandem import nn


class Marker:
    """A Python object whose lifetime a weakref can watch."""


def frames(excinfo):
    return [entry.name for entry in excinfo.traceback]


def test_custom_function_forward_and_backward_errors_keep_traceback():
    class BadForward(tandem.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            raise LookupError("bad forward")

        @staticmethod
        def backward(ctx, g):
            return g

    class BadBackward(tandem.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ArithmeticError("bad backward")

    x = tandem.ones(3, requires_grad=True)
    with pytest.raises(LookupError, match="bad forward") as e:
        BadForward.apply(x)
    assert "forward" in frames(e)
    y = BadBackward.apply(x).sum()
    with pytest.raises(ArithmeticError, match="bad backward") as e:
        y.backward()
    assert "backward" in frames(e)
    assert x.grad is None


def test_tensor_hook_error_keeps_traceback():
    x = tandem.ones(2, requires_grad=True)

    def failing_hook(g):
        raise OSError("hook failed")
    x.register_hook(failing_hook)
    with pytest.raises(OSError, match="hook failed") as e:
        (x * 3).sum().backward()
    assert "failing_hook" in frames(e)


def test_failing_calls_leak_nothing():
    x = tandem.ones(4, requires_grad=True)
    module = nn.Linear(4, 2)
    marker = Marker()
    ref = weakref.ref(marker)

    class Bad(tandem.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.keep = marker  # referenced from the failing node's context
            return t * 1

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("no")

    def bad_hook(mod, args):
        raise ValueError(repr(marker))

    def bad_compiled(t):
        raise KeyError(repr(marker))
    compiled = tandem.compile(bad_compiled)
    gc.collect()
    counts = (sys.getrefcount(x), sys.getrefcount(module))
    for _ in range(50):
        with pytest.raises(RuntimeError):
            Bad.apply(x).sum().backward()
        h = module.register_forward_pre_hook(bad_hook)
        with pytest.raises(ValueError):
            module(x)
        h.remove()
        with pytest.raises(KeyError):
            compiled(x)
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(module)) == counts
    del marker, bad_hook, bad_compiled, compiled, Bad
    gc.collect()
    assert ref() is None  # no failing call kept the objects it saw alive
