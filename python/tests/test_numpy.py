"""Zero-copy exchange with numpy both ways."""
import gc
import hashlib

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


@pytest.mark.parametrize("dt,fmt", [(tandem.float32, "f"), (tandem.float64, "d"), (tandem.int64, "q"),
                                    (tandem.int32, "i"), (tandem.int16, "h"), (tandem.int8, "b"),
                                    (tandem.uint8, "B"), (tandem.bool, "?"), (tandem.float16, "e")])
def test_buffer_protocol_memoryview(dt, fmt):
    t = tandem.arange(6).reshape(2, 3).to(dt)
    m = memoryview(t)
    assert m.format == fmt and m.shape == (2, 3) and m.itemsize == dt.itemsize and not m.readonly
    assert m.strides == (3 * dt.itemsize, dt.itemsize) and m.nbytes == 6 * dt.itemsize
    a = np.asarray(m)
    assert a.tolist() == t.tolist() and a.dtype.itemsize == dt.itemsize
    a[0, 0] = 1  # writes through: the memory is the tensor's
    assert t[0, 0].item() == 1
    m.release()


def test_buffer_protocol_views_lifetime_and_refusals():
    base = tandem.arange(12, dtype=tandem.float32).reshape(3, 4)
    view = base[:, 1::2]
    m = memoryview(view)
    assert m.strides == (16, 8) and not m.c_contiguous and m.tolist() == view.tolist()
    a = np.frombuffer(memoryview(base), dtype=np.float32)  # needs a contiguous buffer: base is
    assert np.shares_memory(a, base.numpy())
    assert bytes(view) == view.numpy().tobytes()  # bytes() gathers a strided buffer itself
    with pytest.raises(BufferError, match="contiguous"):
        hashlib.sha256(view)  # a consumer that takes no strides needs contiguous memory
    assert hashlib.sha256(base[1]).digest() == hashlib.sha256(np.arange(4, 8, dtype=np.float32).tobytes()).digest()
    # The exported view holds the data: it outlives the tensor object.
    t = tandem.full((4,), 2.5)
    m = memoryview(t)
    del t
    gc.collect()
    assert m.tolist() == [2.5] * 4
    g = tandem.ones(2, requires_grad=True)
    with pytest.raises(BufferError):
        memoryview(g)
    with pytest.raises(RuntimeError):
        np.asarray(g)  # numpy falls back to __array__, which says why
    with pytest.raises(BufferError):
        memoryview(tandem.ones(2).bfloat16())
    assert memoryview(tandem.zeros(0, 3)).shape == (0, 3)
    assert memoryview(tandem.tensor(3.0)).shape == () and memoryview(tandem.tensor(3.0)).tolist() == 3.0
    p = tandem.nn.Parameter(tandem.ones(2), requires_grad=False)
    assert memoryview(p).tolist() == [1.0, 1.0]  # subclasses export too


def test_numpy_asarray_does_not_copy():
    t = tandem.arange(8, dtype=tandem.float64)
    a = np.asarray(t)
    a[3] = -1.0
    assert t[3].item() == -1.0
    v = t[::2]
    b = np.asarray(v)
    assert b.strides == (16,) and np.shares_memory(b, a)


def test_buffer_exports_do_not_leak():
    import sys
    t = tandem.ones(3)
    base = sys.getrefcount(t)
    for _ in range(100):
        with memoryview(t) as m:
            m[0]
        np.asarray(t).sum()
        try:
            memoryview(t.requires_grad_(True))
        except BufferError:
            pass
        t.requires_grad_(False)
    assert sys.getrefcount(t) == base
