"""Python operators and indexing against numpy."""
import operator

import numpy as np
import pytest

import tandem

A = np.array([[1.5, -2.0, 3.0], [4.0, 0.5, -6.0]], dtype=np.float32)
B = np.array([[2.0, 4.0, -1.0], [0.5, 3.0, 2.0]], dtype=np.float32)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                                operator.mod, operator.pow])
def test_binary_operators_match_numpy(op):
    a, b = tandem.tensor(A), tandem.tensor(B)
    r = op(a, b)
    assert r.dtype is tandem.float32
    np.testing.assert_allclose(r.numpy(), op(A, B), rtol=1e-6)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.mod])
def test_scalar_and_reflected_operators(op):
    a = tandem.tensor(A)
    np.testing.assert_allclose(op(a, 3).numpy(), op(A, np.float32(3)), rtol=1e-6)
    np.testing.assert_allclose(op(2.5, a).numpy(), op(np.float32(2.5), A), rtol=1e-6)
    assert op(a, 3).dtype is tandem.float32  # a Python number does not widen float32


def test_int_tensor_with_float_scalar_promotes_to_default_float():
    i = tandem.tensor([1, 2, 3])
    assert (i * 2).dtype is tandem.int64
    r = i * 0.5
    assert r.dtype is tandem.float32 and r.tolist() == [0.5, 1.0, 1.5]
    assert (i / 2).dtype is tandem.float32  # true division


def test_int_floordiv_mod_follow_python_signs():
    x = np.array([7, -7, 7, -7])
    y = np.array([2, 2, -2, -2])
    tx, ty = tandem.tensor(x), tandem.tensor(y)
    assert (tx // ty).tolist() == (x // y).tolist()
    assert (tx % ty).tolist() == (x % y).tolist()


def test_matmul_and_unary():
    a, b = tandem.tensor(A), tandem.tensor(B.T.copy())
    np.testing.assert_allclose((a @ b).numpy(), A @ B.T, rtol=1e-5)
    np.testing.assert_array_equal((-a).numpy(), -A)
    np.testing.assert_array_equal(abs(a).numpy(), np.abs(A))
    assert (~tandem.tensor([True, False])).tolist() == [False, True]
    assert (2 ** tandem.tensor([1, 2, 3])).tolist() == [2, 4, 8]


def test_comparisons_give_bool():
    a, b = tandem.tensor(A), tandem.tensor(B)
    for op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
        r = op(a, b)
        assert r.dtype is tandem.bool
        np.testing.assert_array_equal(r.numpy(), op(A, B))
    assert (a > 0).tolist() == (A > 0).tolist()
    assert (tandem.tensor([1, 2]) == None) is False  # noqa: E711  (not a tensor op)


def test_inplace_operators_write_in_place():
    a = tandem.tensor(A.copy())
    ptr, ver = a.data_ptr(), a._version
    ident = a
    a += 1
    a *= tandem.tensor(B)
    a -= 0.5
    a /= 2
    assert a is ident and a.data_ptr() == ptr and a._version > ver
    np.testing.assert_allclose(a.numpy(), ((A + 1) * B - 0.5) / 2, rtol=1e-6)


def test_bitwise_on_bools():
    x, y = tandem.tensor([True, True, False]), tandem.tensor([True, False, False])
    assert (x & y).tolist() == [True, False, False]
    assert (x | y).tolist() == [True, True, False]
    assert (x ^ y).tolist() == [False, True, False]


def test_operator_with_unsupported_type_raises_type_error():
    with pytest.raises(TypeError):
        tandem.ones(2) + "a"


class _Plain(tandem.Tensor):
    """A subclass overriding no operator (it gets Tensor's C++ slots)."""


class _Overrides(tandem.Tensor):
    """A subclass overriding + (both sides) and nothing else."""

    def __add__(self, other):
        return "add"

    def __radd__(self, other):
        return "radd"


_SLOT_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow]


@pytest.mark.parametrize("op", _SLOT_OPS)
def test_subclass_operands_compute_what_tensors_do(op):
    a = tandem.tensor(A)
    p = tandem.nn.Parameter(tandem.tensor(B), requires_grad=False)
    s = _Plain(tandem.tensor(B))
    for x, y, want in ((a, p, op(A, B)), (p, a, op(B, A)), (a, s, op(A, B)), (s, a, op(B, A)), (p, s, op(B, B)),
                       (p, 2.0, op(B, np.float32(2))), (3, s, op(np.float32(3), B))):
        r = op(x, y)
        assert type(r) is tandem.Tensor and r.dtype is tandem.float32
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge])
def test_comparisons_with_numbers_subclasses_and_reflection(op):
    a = tandem.tensor(A)
    p = tandem.nn.Parameter(tandem.tensor(B), requires_grad=False)
    for x, y, want in ((a, p, op(A, B)), (p, a, op(B, A)), (a, 1.5, op(A, 1.5)), (1.5, a, op(1.5, A)),
                       (_Plain(tandem.tensor(B)), 0, op(B, 0))):
        r = op(x, y)
        assert type(r) is tandem.Tensor and r.dtype is tandem.bool
        assert r.tolist() == want.tolist()


def test_unary_operators_and_odd_comparisons():
    a, p = tandem.tensor(A), tandem.nn.Parameter(tandem.tensor(B), requires_grad=False)
    np.testing.assert_array_equal((-p).numpy(), -B)
    np.testing.assert_array_equal(abs(_Plain(tandem.tensor(A))).numpy(), np.abs(A))
    assert (~tandem.tensor([True, False])).tolist() == [False, True]
    np.testing.assert_array_equal((+a).numpy(), A)
    assert (a != "x") is True and (a == "x") is False  # not tensor ops: Python's identity fallback
    with pytest.raises(TypeError):
        a < "x"
    with pytest.raises(tandem.ShapeError, match=r"\[lt\]"):
        a < tandem.ones(4)
    with pytest.raises(TypeError, match="bitwise_not"):
        ~a  # float

    class Eq(tandem.Tensor):
        def __eq__(self, other):
            return "eq"
        __hash__ = tandem.Tensor.__hash__

    e = Eq(tandem.tensor(B))
    assert (a == e) == "eq" and (e == a) == "eq"
    assert (e < a).tolist() == (B < A).tolist()


def test_subclass_overriding_an_operator_keeps_python_rules():
    a, o = tandem.tensor(A), _Overrides(tandem.tensor(B))
    assert o + a == "add"
    assert a + o == "radd"  # a subclass's reflected method goes first
    assert 1 + o == "radd"
    np.testing.assert_allclose((o - a).numpy(), B - A)  # not overridden
    np.testing.assert_allclose((a * o).numpy(), A * B)
    _Overrides.__sub__ = lambda self, other: "sub"  # assigned later: Python's rules again
    try:
        assert o - a == "sub"
    finally:
        del _Overrides.__sub__
    np.testing.assert_allclose((o - a).numpy(), B - A)


def test_operator_methods_called_explicitly():
    a, b = tandem.tensor(A), tandem.tensor(B)
    np.testing.assert_allclose(tandem.Tensor.__add__(a, b).numpy(), A + B)
    np.testing.assert_allclose(a.__rsub__(b).numpy(), B - A)
    np.testing.assert_allclose(a.__rtruediv__(2).numpy(), 2 / A, rtol=1e-6)
    assert a.__add__("x") is NotImplemented and a.__radd__(None) is NotImplemented
    np.testing.assert_allclose((a @ tandem.tensor(B.T)).numpy(), A @ B.T, rtol=1e-6)
    np.testing.assert_allclose(a.__rmatmul__(tandem.tensor(B.T)).numpy(), B.T @ A, rtol=1e-6)


def test_operator_errors_raise_tandem_exceptions():
    with pytest.raises(tandem.ShapeError, match=r"\[add\]"):
        tandem.ones(2) + tandem.ones(3)
    with pytest.raises(tandem.ShapeError, match=r"\[sub\]"):
        3 - tandem.ones(2) - tandem.ones(3)
    x = tandem.ones(2, dtype=tandem.int64)
    with pytest.raises(TypeError, match="can't be cast"):
        x += tandem.ones(2)
    with pytest.raises(TypeError):
        x += "a"
    with pytest.raises(TypeError):
        "a" * 1.5 - x
    with pytest.raises(TypeError):
        None @ x
    with pytest.raises(TypeError):
        pow(x, 2, 3)  # no modular power
    with pytest.raises(TypeError):
        x **= "a"
    assert x.tolist() == [1, 1]


def test_large_operands_give_the_same_numbers():
    # Above the size that runs with the GIL held: the kernel runs without it.
    rng = np.random.default_rng(0)
    big, col, row = (rng.standard_normal(s).astype(np.float32) for s in ((70000,), (300, 1), (1, 300)))
    tb, tc, tr = tandem.tensor(big), tandem.tensor(col), tandem.tensor(row)
    np.testing.assert_allclose((tb * 2 + tb).numpy(), big * 2 + big, rtol=1e-6)
    np.testing.assert_allclose((tc - tr).numpy(), col - row, rtol=1e-6)  # small inputs, large broadcast
    np.testing.assert_allclose((abs(tb) ** 0.5).numpy(), np.abs(big) ** 0.5, rtol=1e-6)
    tb += tb
    np.testing.assert_allclose(tb.numpy(), big + big, rtol=1e-6)


N = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


@pytest.mark.parametrize("key", [
    0, -1, (1, 2), (1, 2, 3), slice(1, None), (slice(None), 1), (Ellipsis, 2), (None, 0), (0, None, slice(1, 4)),
    (slice(None, None, 2), Ellipsis, slice(1, 5, 3)), (Ellipsis,), (1, Ellipsis, None), slice(-2, None),
    ([0, 2],), (slice(None), [3, 1]),
])
def test_getitem_matches_numpy(key):
    t = tandem.tensor(N)
    r = t[key]
    e = N[key]
    assert r.shape == e.shape
    np.testing.assert_array_equal(r.numpy() if r.dim() else np.array(r.item()), e)


def test_basic_getitem_is_a_view():
    t = tandem.tensor(N)
    v = t[1, :, 2:4]
    assert np.shares_memory(v.numpy(), t.numpy())


def test_bool_mask_and_tensor_index():
    t = tandem.tensor(N)
    m = t > 30
    np.testing.assert_array_equal(t[m].numpy(), N[N > 30])
    idx = tandem.tensor([2, 0])
    np.testing.assert_array_equal(t[idx].numpy(), N[[2, 0]])


def test_getitem_out_of_range_is_index_error():
    with pytest.raises(IndexError):
        tandem.tensor(N)[3]
    with pytest.raises(IndexError):
        tandem.tensor(N)[0, 0, 0, 0]
    with pytest.raises(IndexError):
        tandem.tensor(N)["a"]


def test_setitem():
    t = tandem.tensor(N.copy())
    e = N.copy()
    t[0] = 1.0
    e[0] = 1.0
    t[1, :, 2] = tandem.tensor([9.0, 8.0, 7.0, 6.0])
    e[1, :, 2] = [9.0, 8.0, 7.0, 6.0]
    t[t > 50] = -1
    e[e > 50] = -1
    t[..., 0] = [[1, 2, 3, 4]] * 3
    e[..., 0] = [[1, 2, 3, 4]] * 3
    np.testing.assert_array_equal(t.numpy(), e)
