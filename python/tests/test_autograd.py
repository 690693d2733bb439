"""Autograd from Python: gradients against hand-computed values, grad modes."""
import threading

import numpy as np
import pytest

import tandem


def test_requires_grad_kwarg_property_and_method():
    x = tandem.ones(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad is None
    y = tandem.zeros(2)
    assert not y.requires_grad
    assert y.requires_grad_() is y and y.requires_grad
    y.requires_grad = False
    assert not y.requires_grad
    z = x * 2
    assert z.requires_grad and not z.is_leaf and z.grad_fn is not None
    assert x.grad_fn is None


def test_backward_hand_computed():
    # y = sum(x^2 * w + 3x), dy/dx = 2xw + 3, dy/dw = x^2
    xv = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    wv = np.array([3.0, 0.5, -1.0], dtype=np.float32)
    x = tandem.tensor(xv, requires_grad=True)
    w = tandem.tensor(wv, requires_grad=True)
    y = (x ** 2 * w + 3 * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv * wv + 3, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), xv ** 2, rtol=1e-6)


def test_gradients_accumulate_and_reset():
    x = tandem.tensor([2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 4).sum().backward()
    assert x.grad.tolist() == [7.0]
    x.grad = None
    assert x.grad is None
    (x * x).sum().backward()
    assert x.grad.tolist() == [4.0]


def test_backward_with_gradient_argument_and_matmul():
    a = tandem.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = tandem.tensor([[0.5], [-1.0]], requires_grad=True)
    out = a @ b  # (2, 1)
    g = tandem.tensor([[1.0], [2.0]])
    out.backward(g)
    # d(a@b)/da = g @ b^T, d/db = a^T @ g
    np.testing.assert_allclose(a.grad.numpy(), np.array([[1.0], [2.0]]) @ np.array([[0.5, -1.0]]))
    np.testing.assert_allclose(b.grad.numpy(), np.array([[1.0, 3.0], [2.0, 4.0]]) @ np.array([[1.0], [2.0]]))


def test_backward_errors():
    x = tandem.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).backward()  # non-scalar without gradient
    with pytest.raises(RuntimeError):
        tandem.ones(2).sum().backward()  # nothing requires grad
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError):
        y.backward()  # graph freed


def test_detach_shares_memory_without_history():
    x = tandem.ones(3, requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.grad_fn is None
    e = x.detach()
    assert e.data_ptr() == x.data_ptr()


def test_no_grad_and_enable_grad_context_managers():
    x = tandem.ones(2, requires_grad=True)
    with tandem.no_grad():
        assert not tandem.is_grad_enabled()
        y = x * 2
        with tandem.enable_grad():
            z = x * 2
    assert tandem.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad


def test_no_grad_decorator_and_exceptions_restore_mode():
    @tandem.no_grad()
    def f(t):
        return t * 2, tandem.is_grad_enabled()

    x = tandem.ones(1, requires_grad=True)
    y, mode = f(x)
    assert not mode and not y.requires_grad and tandem.is_grad_enabled()
    with pytest.raises(KeyError):
        with tandem.no_grad():
            raise KeyError("x")
    assert tandem.is_grad_enabled()


def test_set_grad_enabled_and_inference_mode():
    x = tandem.ones(1, requires_grad=True)
    with tandem.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tandem.is_grad_enabled()
    with tandem.inference_mode():
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_grad_mode_is_per_thread():
    seen = []
    with tandem.no_grad():
        t = threading.Thread(target=lambda: seen.append(tandem.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_autograd_grad_and_higher_order():
    x = tandem.tensor([1.5, -0.5], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = tandem.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([1.5, -0.5]) ** 2, rtol=1e-6)
    assert x.grad is None  # grad() leaves .grad alone
    (g2,) = tandem.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(g2.numpy(), 6 * np.array([1.5, -0.5]), rtol=1e-6)


def test_autograd_grad_allow_unused():
    x = tandem.ones(2, requires_grad=True)
    u = tandem.ones(2, requires_grad=True)
    y = (x * 2).sum()
    gx, gu = tandem.autograd.grad([y], [x, u], allow_unused=True)
    assert gx.tolist() == [2.0, 2.0] and gu is None
    with pytest.raises(RuntimeError):
        tandem.autograd.grad((x * 2).sum(), [x, u])


def test_autograd_backward_function():
    x = tandem.tensor([1.0, 2.0], requires_grad=True)
    tandem.autograd.backward([(x * x).sum()])
    assert x.grad.tolist() == [2.0, 4.0]


def test_grad_through_indexing_and_registry_ops():
    x = tandem.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = tandem.softmax(x[:, 1:], dim=1)[:, 0].sum() + x.relu().mean()
    y.backward()
    xv = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    s = np.exp(xv[:, 1:]) / np.exp(xv[:, 1:]).sum(1, keepdims=True)
    expected = np.full((2, 3), 1.0 / 6)  # relu'(x) / numel, all x > 0
    expected[:, 1] += s[:, 0] * (1 - s[:, 0])
    expected[:, 2] += -s[:, 0] * s[:, 1]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)


def test_requires_grad_on_integer_tensor_fails():
    with pytest.raises((TypeError, ValueError)):
        tandem.tensor([1, 2], requires_grad=True)


def test_tensor_hooks_observe_replace_and_remove():
    x = tandem.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h1 = x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [3.0, 3.0]
    h1.remove()
    x.grad = None
    y = x * 2
    y.register_hook(lambda g: g * 10)  # on a non-leaf: replaces the gradient flowing back
    y.sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [20.0, 20.0]


def test_hook_exception_propagates_with_its_type():
    x = tandem.ones(2, requires_grad=True)

    def bad(g):
        raise KeyError("from the hook")

    x.register_hook(bad)
    with pytest.raises(KeyError, match="from the hook"):
        (x * 2).sum().backward()
    with pytest.raises(RuntimeError):
        tandem.ones(2).register_hook(lambda g: g)


class Cube(tandem.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class ScaleBoth(tandem.autograd.Function):
    @staticmethod
    def forward(ctx, a, factor, b):
        ctx.factor = factor
        assert ctx.needs_input_grad == (True, False)
        return a * factor, a + b

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * ctx.factor + g2, None, None


def test_python_autograd_function():
    x = tandem.tensor([1.0, -2.0, 0.5], requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn == "CubeBackward"
    np.testing.assert_allclose(y.detach().numpy(), [1.0, -8.0, 0.125])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.0, -2.0, 0.5]) ** 2)
    # higher order through create_graph: backward is written with tandem ops
    x2 = tandem.tensor([2.0], requires_grad=True)
    (g,) = tandem.autograd.grad(Cube.apply(x2), x2, create_graph=True)
    (gg,) = tandem.autograd.grad(g, x2)
    assert g.item() == 12.0 and gg.item() == 12.0


def test_python_function_non_tensor_args_and_two_outputs():
    a = tandem.tensor([1.0, 2.0], requires_grad=True)
    b = tandem.tensor([5.0, 5.0])
    p, s = ScaleBoth.apply(a, 4.0, b)
    (p.sum() + s.sum()).backward()
    assert a.grad.tolist() == [5.0, 5.0] and b.grad is None


def test_python_function_backward_error_propagates():
    class Bad(tandem.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("no gradient today")

    x = tandem.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="no gradient today"):
        Bad.apply(x).sum().backward()


def test_autocast_casts_by_the_op_lists_and_keeps_float32_gradients():
    x = tandem.randn(4, 8)
    w = tandem.randn(8, 3, requires_grad=True)
    assert not tandem.is_autocast_enabled()
    with tandem.autocast("cpu"):
        assert tandem.is_autocast_enabled() and tandem.get_autocast_dtype() == tandem.bfloat16
        y = tandem.mm(x, w)
        assert y.dtype == tandem.bfloat16
        assert tandem.softmax(y, 1).dtype == tandem.float32
        with tandem.autocast("cpu", enabled=False):
            assert tandem.mm(x, w).dtype == tandem.float32
        loss = y.sum()
    assert not tandem.is_autocast_enabled()
    assert loss.dtype == tandem.float32
    loss.backward()
    assert w.grad.dtype == tandem.float32
    # The same as casting by hand.
    w2 = w.detach().requires_grad_()
    tandem.mm(x.to(tandem.bfloat16), w2.to(tandem.bfloat16)).to(tandem.float32).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), w2.grad.numpy())

    @tandem.autocast("cpu", dtype=tandem.float16)
    def half_mm(a, b):
        return tandem.mm(a, b)
    assert half_mm(x, w).dtype == tandem.float16
    with pytest.raises(ValueError, match="autocast"):
        with tandem.autocast("cpu", dtype=tandem.float32):
            pass
    with pytest.raises(ValueError, match="CPU only"):
        tandem.autocast("cuda")
    assert not tandem.is_autocast_enabled()
