"""Zero-copy exchange with numpy both ways."""
import numpy as np
import pytest

import tandem


def test_numpy_shares_memory():
    t = tandem.arange(12, dtype=tandem.float32).reshape(3, 4)
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (3, 4)
    assert a.ctypes.data == t.data_ptr()
    a[1, 2] = -5.0
    assert t[1, 2].item() == -5.0


def test_numpy_of_a_strided_view_is_zero_copy():
    base = tandem.arange(24, dtype=tandem.float64).reshape(4, 6)
    v = base.t()[1:, ::2]
    assert not v.is_contiguous()
    a = v.numpy()
    b = base.numpy()
    assert np.shares_memory(a, b)
    np.testing.assert_array_equal(a, np.arange(24, dtype=np.float64).reshape(4, 6).T[1:, ::2])


def test_numpy_keeps_tensor_storage_alive():
    a = tandem.arange(5).numpy()
    import gc
    gc.collect()
    assert a.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("np_dtype,dt", [(np.float32, tandem.float32), (np.float64, tandem.float64),
                                         (np.int64, tandem.int64), (np.int32, tandem.int32), (np.int16, tandem.int16),
                                         (np.int8, tandem.int8), (np.uint8, tandem.uint8), (np.bool_, tandem.bool),
                                         (np.float16, tandem.float16)])
def test_from_numpy_dtypes_and_sharing(np_dtype, dt):
    a = np.ones((2, 3), dtype=np_dtype)
    t = tandem.from_numpy(a)
    assert t.dtype is dt and t.shape == (2, 3)
    assert t.data_ptr() == a.ctypes.data
    assert np.shares_memory(t.numpy(), a)
    t.zero_()
    assert not a.any()


def test_from_numpy_strided_and_lifetime():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)[:, 1::2]
    t = tandem.from_numpy(a)
    assert t.stride() == (5, 2)
    np.testing.assert_array_equal(t.numpy(), a)
    del a
    import gc
    gc.collect()
    assert t.tolist()[3] == [16.0, 18.0]


def test_from_numpy_rejects():
    with pytest.raises(TypeError):
        tandem.from_numpy(np.zeros(3, dtype=np.complex64))
    with pytest.raises(TypeError):
        tandem.from_numpy([1, 2])
    with pytest.raises(ValueError):
        tandem.from_numpy(np.arange(5.0)[::-1])


def test_numpy_refuses_requires_grad_and_bfloat16():
    x = tandem.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        tandem.ones(2, dtype=tandem.bfloat16).numpy()


def test_array_protocol_and_numpy_scalars():
    t = tandem.tensor([1, 2, 3])
    assert np.asarray(t).tolist() == [1, 2, 3]
    r = np.float64(2.0) * tandem.tensor([1.0, 2.0])
    assert isinstance(r, tandem.Tensor) and r.tolist() == [2.0, 4.0]


def test_no_reference_leaks():
    import sys
    a = np.ones(4, dtype=np.float32)
    base = sys.getrefcount(a)
    for _ in range(100):
        t = tandem.from_numpy(a)
        (t + 1).sum()
        del t
    assert sys.getrefcount(a) == base
    t = tandem.ones(3)
    base_t = sys.getrefcount(t)
    for _ in range(100):
        t.numpy()
        t[0]
        t.shape
    assert sys.getrefcount(t) == base_t


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int64, np.int32, np.int8, np.uint8, np.float16])
def test_dlpack_round_trips_with_numpy(np_dtype):
    a = np.arange(12).astype(np_dtype).reshape(3, 4)[:, 1:]
    t = tandem.from_dlpack(a)
    assert t.shape == (3, 3) and t.stride() == (4, 1)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    b = np.from_dlpack(t)
    assert np.shares_memory(a, b) and b.dtype == np_dtype
    t[0, 0] = 7
    assert a[0, 0] == 7 and b[0, 0] == 7


def test_dlpack_keeps_producer_alive_and_refuses_grad():
    import gc
    t = tandem.from_dlpack(np.arange(4, dtype=np.float64))
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    b = np.from_dlpack(tandem.arange(3))
    gc.collect()
    assert b.tolist() == [0, 1, 2]
    assert tandem.ones(1).__dlpack_device__() == (1, 0)
    with pytest.raises(RuntimeError):
        tandem.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError):
        tandem.from_dlpack(np.zeros(2, dtype=np.complex64))
    cap = tandem.arange(3).__dlpack__()
    assert tandem.from_dlpack(cap).tolist() == [0, 1, 2]
    with pytest.raises(TypeError):
        tandem.from_dlpack(cap)  # a capsule is consumed once
