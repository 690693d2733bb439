"""Creation functions and Tensor basics against numpy."""
import numpy as np
import pytest

import tandem


def test_tensor_from_nested_lists_infers_dtype_and_shape():
    t = tandem.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.dtype is tandem.int64
    assert t.shape == (2, 3)
    assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-2) == 2
    assert t.dim() == 2 and t.ndim == 2 and t.numel() == 6 and len(t) == 2
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
    f = tandem.tensor([1.5, 2.0])
    assert f.dtype is tandem.float32 and f.tolist() == [1.5, 2.0]
    b = tandem.tensor([True, False])
    assert b.dtype is tandem.bool and b.tolist() == [True, False]


def test_tensor_scalar_and_dtype_argument():
    s = tandem.tensor(3.25)
    assert s.shape == () and s.dim() == 0 and s.item() == 3.25 and isinstance(s.item(), float)
    i = tandem.tensor(7)
    assert isinstance(i.item(), int) and i.item() == 7
    d = tandem.tensor([1, 2], dtype=tandem.float64)
    assert d.dtype is tandem.float64 and d.tolist() == [1.0, 2.0]
    h = tandem.tensor([0.1], dtype=tandem.float16)
    assert h.dtype == tandem.half and h.item() == pytest.approx(float(np.float16(0.1)))


def test_tensor_copies_numpy_and_keeps_its_dtype():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = tandem.tensor(a)
    assert t.dtype is tandem.int32
    a[0, 0] = 100
    assert t[0, 0].item() == 0  # a copy, unlike from_numpy


def test_tensor_rejects_ragged_and_strings():
    with pytest.raises(ValueError):
        tandem.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        tandem.tensor(["a", "b"])


@pytest.mark.parametrize("fn,np_fn", [(tandem.zeros, np.zeros), (tandem.ones, np.ones)])
def test_zeros_ones(fn, np_fn):
    t = fn(2, 3)
    assert t.dtype is tandem.float32 and t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), np_fn((2, 3), dtype=np.float32))
    t2 = fn((4,), dtype=tandem.int64)
    assert t2.dtype is tandem.int64 and t2.tolist() == np_fn(4, dtype=np.int64).tolist()
    assert fn([2, 0]).numel() == 0


def test_full_empty_arange():
    f = tandem.full((2, 2), 7)
    assert f.dtype is tandem.int64 and f.tolist() == [[7, 7], [7, 7]]
    f2 = tandem.full((3,), 0.5, dtype=tandem.float64)
    np.testing.assert_array_equal(f2.numpy(), np.full(3, 0.5))
    e = tandem.empty(3, 4)
    assert e.shape == (3, 4) and e.dtype is tandem.float32
    a = tandem.arange(5)
    assert a.dtype is tandem.int64 and a.tolist() == list(range(5))
    np.testing.assert_allclose(tandem.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25, dtype=np.float32))
    assert tandem.arange(10, 0, -3).tolist() == [10, 7, 4, 1]


def test_negative_size_is_value_error():
    with pytest.raises(ValueError):
        tandem.zeros(-1)


def test_rand_randn_seeded():
    tandem.manual_seed(0)
    a = tandem.randn(1000)
    tandem.manual_seed(0)
    b = tandem.randn(1000)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert abs(float(a.mean())) < 0.15 and 0.85 < float(a.std()) < 1.15
    u = tandem.rand(1000, dtype=tandem.float64)
    assert u.dtype is tandem.float64
    un = u.numpy()
    assert un.min() >= 0.0 and un.max() < 1.0


def test_like_functions():
    x = tandem.ones(2, 3, dtype=tandem.int32)
    assert tandem.zeros_like(x).dtype is tandem.int32 and tandem.zeros_like(x).tolist() == [[0] * 3] * 2
    assert tandem.full_like(x, 4).tolist() == [[4] * 3] * 2
    assert tandem.ones_like(x, dtype=tandem.float64).dtype is tandem.float64


def test_repr_uses_cpp_printer():
    assert repr(tandem.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert "dtype=float64" in repr(tandem.tensor([1.0], dtype=tandem.float64))
    assert repr(tandem.float32) == "tandem.float32"


def test_dtype_objects():
    assert tandem.float is tandem.float32 and tandem.long is tandem.int64 and tandem.double is tandem.float64
    assert tandem.float32.is_floating_point and not tandem.int64.is_floating_point
    assert tandem.float64.itemsize == 8
    assert len({tandem.float32, tandem.float32, tandem.int64}) == 2
    import pickle
    assert pickle.loads(pickle.dumps(tandem.int16)) is tandem.int16


def test_iteration_and_len():
    t = tandem.tensor([[1, 2], [3, 4], [5, 6]])
    rows = [r.tolist() for r in t]
    assert rows == [[1, 2], [3, 4], [5, 6]]
    assert len(t) == 3
    with pytest.raises(TypeError):
        len(tandem.tensor(1.0))
    with pytest.raises(TypeError):
        iter(tandem.tensor(1.0))


def test_python_number_conversions():
    assert float(tandem.tensor(2.5)) == 2.5 and int(tandem.tensor(3)) == 3
    assert bool(tandem.tensor([1])) is True
    assert [10, 20, 30][tandem.tensor(1)] == 20  # __index__
    with pytest.raises(RuntimeError):
        bool(tandem.tensor([1, 2]))


def test_conversion_methods():
    t = tandem.tensor([1.7, -2.2])
    assert t.long().dtype is tandem.int64 and t.long().tolist() == [1, -2]
    assert t.double().dtype is tandem.float64
    assert t.to(tandem.int32).dtype is tandem.int32
    assert t.bool().tolist() == [True, True]


def test_pickle_and_deepcopy():
    import copy
    import pickle
    for dt in (tandem.float32, tandem.int16, tandem.bool, tandem.bfloat16):
        t = tandem.tensor([[1, 0], [3, 4]], dtype=dt)
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype is dt and u.tolist() == t.tolist() and u.data_ptr() != t.data_ptr()
    x = tandem.ones(2, requires_grad=True)
    y = copy.deepcopy(x)
    assert y.requires_grad and y.is_leaf and y.data_ptr() != x.data_ptr()
    assert type(x).__module__ == "tandem" and repr(type(x)) == "<class 'tandem.Tensor'>"


def test_num_threads_round_trip_and_bad_values():
    before = tandem.get_num_threads()
    try:
        tandem.set_num_threads(1)
        assert tandem.get_num_threads() == 1
        with pytest.raises(ValueError):
            tandem.set_num_threads(0)
    finally:
        tandem.set_num_threads(before)
    assert tandem.get_num_threads() == before
