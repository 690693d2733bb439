"""DataLoader(num_workers > 0): worker processes. The oracle is the same loader with
num_workers=0 (same batches, order, values and dtypes), and the processes themselves
(/proc) for the clean-up checks."""
import collections
import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tandem
from tandem.utils.data import DataLoader, Dataset, get_worker_info

Point = collections.namedtuple("Point", "x y")


class Rich(Dataset):
    """Example i: a dict of a float32 numpy row, a float64 tensor, a bfloat16 tensor, a
    float16 tensor, an int, a float, a bool, a string and a named tuple."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        row = np.array([i, i * i, -0.1 * i], dtype=np.float32)
        return {"row": row,
                "t64": tandem.tensor([i / 7.0, 1.0 / (i + 1)], dtype=tandem.float64),
                "bf16": tandem.tensor([i * 1.01, -i * 3.3], dtype=tandem.bfloat16),
                "f16": tandem.tensor([i * 0.3], dtype=tandem.float16),
                "label": i % 4, "w": i * 0.25, "odd": bool(i % 2), "name": f"ex{i}",
                "p": Point(i, np.int16(-i))}


class Squares(Dataset):
    """Example i: (float32 numpy [2] = (i, i*i), int label i % 3)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i, i * i], dtype=np.float32), i % 3


def assert_same(a, b, where="batch"):
    """Bitwise equality of two batches: the same structure, classes, dtypes and values."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, tandem.Tensor):
        assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape), where
        assert a.requires_grad == b.requires_grad, where
        if a.dtype is tandem.bfloat16:
            a, b = a.float(), b.float()
        x, y = a.detach().numpy(), b.detach().numpy()
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def epochs(loader, n=2):
    return [list(loader) for _ in range(n)]


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=4, shuffle=True, seed=5),
    dict(batch_size=3, shuffle=True, seed=9, drop_last=True, prefetch_factor=1),
    dict(batch_size=5, prefetch_factor=3),
    dict(batch_size=None, shuffle=True, seed=2),
    dict(batch_sampler=[[3, 1, 4], [1, 5], [9, 2, 6, 0], [8]]),
    dict(batch_size=2, sampler=[7, 3, 3, 10, 0]),
])
@pytest.mark.parametrize("workers,persistent", [(1, False), (3, False), (2, True)])
def test_workers_give_the_batches_of_num_workers_0(kwargs, workers, persistent):
    want = epochs(DataLoader(Rich(11), **{k: v for k, v in kwargs.items() if k != "prefetch_factor"}))
    got = epochs(DataLoader(Rich(11), num_workers=workers, persistent_workers=persistent, **kwargs))
    assert len(got[0]) == len(want[0]) and len(got[1]) == len(want[1])
    assert_same(got, want)


def test_tensor_details_survive_the_trip():
    class Grad(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            x = tandem.arange(6, dtype=tandem.float32).reshape(2, 3).t() * (i + 1)  # not contiguous
            return x.requires_grad_(i == 1), tandem.tensor([True, i == 2]), tandem.tensor([i], dtype=tandem.uint8)
    want = list(DataLoader(Grad(), batch_size=None))
    got = list(DataLoader(Grad(), batch_size=None, num_workers=2))
    assert_same(got, want)
    assert got[1][0].requires_grad and got[1][0].is_leaf


class WhoAmI(Dataset):
    """Example i: (i, the computing worker's id, num_workers, seed, pid, a draw from each
    generator, and whether its dataset is this one)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return (i, info.id, info.num_workers, info.seed, os.getpid(), tandem.rand(1).item(), random.random(),
                float(np.random.rand()), info.dataset is self, getattr(self, "offset", 0))


def rows(loader):
    return [tuple(r) for batch in loader for r in batch]


def no_collate(batch):
    return batch


def test_worker_info_and_task_assignment():
    assert get_worker_info() is None
    got = rows(DataLoader(WhoAmI(), batch_size=2, num_workers=3, collate_fn=no_collate))
    assert [r[0] for r in got] == list(range(12))
    for r in got:
        batch = r[0] // 2
        assert r[1] == batch % 3 and r[2] == 3 and r[8] is True  # batch b on worker b % 3
    seeds = {r[1]: r[3] for r in got}
    assert len(set(seeds.values())) == 3
    pids = {r[1]: r[4] for r in got}
    assert len(set(pids.values())) == 3 and os.getpid() not in pids.values()
    info = tandem.utils._workers.WorkerInfo(0, 1, 2, None)
    with pytest.raises(AttributeError):
        info.id = 3


def test_worker_seeds_drive_the_generators_reproducibly():
    a0 = rows(DataLoader(WhoAmI(), batch_size=3, num_workers=2, seed=4, collate_fn=no_collate))
    loader = DataLoader(WhoAmI(), batch_size=3, num_workers=2, seed=4, collate_fn=no_collate)
    b0, b1 = rows(loader), rows(loader)
    draws = [r[5:8] for r in a0]
    assert draws == [r[5:8] for r in b0]  # same seed: the same random values
    assert draws != [r[5:8] for r in b1]  # the next epoch: new seeds
    assert [r[3] for r in b0] != [r[3] for r in b1]
    # The oracle for the first draw of each worker: the generators seeded with info.seed.
    for w in (0, 1):
        first = next(r for r in a0 if r[1] == w)
        tandem.manual_seed(first[3])
        assert first[5] == tandem.rand(1).item()
        assert first[6] == random.Random(first[3]).random()
        np_seed = tandem.utils._workers.mix_seed(first[3], 1)
        np.random.seed([np_seed & 0xFFFFFFFF, np_seed >> 32])
        assert first[7] == float(np.random.rand())
    # No seed: drawn from the default generator at construction (tandem.manual_seed rules).
    tandem.manual_seed(17)
    c = rows(DataLoader(WhoAmI(), batch_size=3, num_workers=2, collate_fn=no_collate))
    tandem.manual_seed(17)
    d = rows(DataLoader(WhoAmI(), batch_size=3, num_workers=2, collate_fn=no_collate))
    assert [r[3:4] + r[5:8] for r in c] == [r[3:4] + r[5:8] for r in d]


def set_offset(worker_id):
    get_worker_info().dataset.offset = 100 * (worker_id + 1)


def test_worker_init_fn_runs_in_each_worker():
    got = rows(DataLoader(WhoAmI(), batch_size=4, num_workers=2, worker_init_fn=set_offset, collate_fn=no_collate))
    assert all(r[9] == 100 * (r[1] + 1) for r in got)
    assert {r[1] for r in got} == {0, 1}


def test_persistent_workers_keep_their_processes():
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, persistent_workers=True, collate_fn=no_collate)
    e0 = rows(loader)
    it = iter(loader)
    next(it)  # leave epoch 1 early: its outstanding batches must not leak into epoch 2
    e2 = rows(loader)
    assert {r[4] for r in e0} == {r[4] for r in e2} and len({r[4] for r in e0}) == 2
    assert [r[0] for r in e2] == list(range(12))
    assert all(os.path.exists(f"/proc/{p}") for p in {r[4] for r in e0})
    pids = loader._workers.pids
    del loader, it
    gc.collect()
    assert all(not os.path.exists(f"/proc/{p}") for p in pids)
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, collate_fn=no_collate)
    assert not {r[4] for r in rows(loader)} & {r[4] for r in rows(loader)}  # new workers per epoch


class Counting(Dataset):
    """Counts fetched examples in shared memory."""

    def __init__(self, n, counter):
        self.n, self.counter = n, counter

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.counter.get_lock():
            self.counter.value += 1
        return i


def wait_for(pred, seconds=10.0):
    end = time.monotonic() + seconds
    while not pred() and time.monotonic() < end:
        time.sleep(0.02)
    return pred()


@pytest.mark.parametrize("prefetch_factor", [1, 3])
def test_prefetch_factor_batches_in_flight_per_worker(prefetch_factor):
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(Counting(100, counter), batch_size=2, num_workers=2, prefetch_factor=prefetch_factor,
                        multiprocessing_context="fork")
    it = iter(loader)
    in_flight = 2 * prefetch_factor * 2  # workers x prefetch_factor x batch_size examples
    assert wait_for(lambda: counter.value == in_flight)
    time.sleep(0.3)
    assert counter.value == in_flight  # no more than that before the main process takes one
    assert next(it).tolist() == [0, 1]
    assert wait_for(lambda: counter.value == in_flight + 2)
    time.sleep(0.3)
    assert counter.value == in_flight + 2
    assert [b.tolist() for b in it][-1] == [98, 99]
    assert counter.value == 100


class Failing(Dataset):
    def __init__(self, fail_at, how):
        self.fail_at, self.how = fail_at, how

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.fail_at:
            if self.how == "key":
                raise KeyError(f"bad example {i}")
            if self.how == "shape":
                return tandem.zeros(2) + tandem.zeros(3)
            if self.how == "two-args":
                raise TwoArgs(i, "x")
            if self.how == "exit":
                os._exit(3)
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "sleep":
                time.sleep(30)
            if self.how == "unpicklable":
                return lambda: i
        return tandem.tensor([float(i)])


class TwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def dead_pids(pids):
    return all(not os.path.exists(f"/proc/{p}") for p in pids)


def test_worker_exceptions_reraise_with_worker_id_and_traceback():
    it = iter(DataLoader(Failing(5, "key"), batch_size=1, num_workers=2))
    assert [next(it).item() for _ in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]  # the batches before it arrive
    with pytest.raises(KeyError) as e:
        next(it)
    text = str(e.value)
    assert "worker process 1" in text and "Traceback (most recent call last)" in text
    assert "bad example 5" in text and "__getitem__" in text and "\\n" not in text
    pids = it.pids
    del it, e  # the traceback holds the iterator
    gc.collect()
    assert dead_pids(pids)

    with pytest.raises(tandem.ShapeError, match=r"(?s)worker process 1.*Traceback.*\[add\]"):
        list(DataLoader(Failing(2, "shape"), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match=r"(?s)Caught TwoArgs in DataLoader worker process 0.*TwoArgs: \(4, 'x'\)"):
        list(DataLoader(Failing(4, "two-args"), batch_size=1, num_workers=2))
    with pytest.raises(Exception, match=r"(?s)worker process 1.*(pickle|lambda)"):
        list(DataLoader(Failing(1, "unpicklable"), batch_size=None, num_workers=2))

    def bad_init(worker_id):
        if worker_id == 1:
            raise ValueError("no init for 1")
    with pytest.raises(ValueError, match=r"(?s)worker process 1 while starting.*no init for 1"):
        list(DataLoader(Squares(4), num_workers=2, worker_init_fn=bad_init))


@pytest.mark.parametrize("how,expect", [("exit", "exit code 3"), ("kill", "killed by signal SIGKILL")])
def test_a_dead_worker_raises_instead_of_hanging(how, expect):
    start = time.monotonic()
    it = iter(DataLoader(Failing(3, how), batch_size=1, num_workers=2))
    pids = it.pids
    with pytest.raises(RuntimeError, match=rf"worker 1 \(pid {pids[1]}\) died unexpectedly \({expect}\)"):
        list(it)
    assert time.monotonic() - start < 10
    assert dead_pids(pids)


def test_timeout():
    start = time.monotonic()
    it = iter(DataLoader(Failing(0, "sleep"), batch_size=1, num_workers=2, timeout=0.5))
    pids = it.pids
    with pytest.raises(RuntimeError, match=r"timed out after 0.5 seconds waiting for batch 0 from worker 0"):
        next(it)
    assert time.monotonic() - start < 8  # 0.5 s, then the busy worker is terminated
    assert dead_pids(pids)


def test_early_exit_stops_the_workers():
    counter = multiprocessing.get_context("fork").Value("i", 0)
    it = iter(DataLoader(Counting(10000, counter), batch_size=50, num_workers=2, prefetch_factor=4))
    next(it)
    pids = it.pids
    assert len(pids) == 2 and all(os.path.exists(f"/proc/{p}") for p in pids)
    start = time.monotonic()
    del it
    gc.collect()
    assert dead_pids(pids) and time.monotonic() - start < 5
    for batch in DataLoader(Counting(100, counter), batch_size=10, num_workers=2):
        break  # a for loop left early: the iterator is dropped with it


class BigOps(Dataset):
    """Examples computed with tandem ops large enough for parallel loops and oneDNN."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = tandem.arange(1 << 20, dtype=tandem.float32).reshape(1024, 1024) * (1.0 / (i + 1))
        return (x.sum(), (x[:256, :256] @ x[:256, :256]).sum(), tandem.get_num_threads())


def test_workers_run_tandem_ops_after_the_parent_used_openmp_threads():
    prev = tandem.get_num_threads()
    tandem.set_num_threads(2)
    try:
        ds = BigOps()
        want = [ds[i][:2] for i in range(4)]  # multi-threaded regions in the parent first
        for ctx in (None, "fork"):
            got = list(DataLoader(ds, batch_size=None, num_workers=2, timeout=60, multiprocessing_context=ctx))
            for (s, m, threads), (ws, wm) in zip(got, want):
                assert threads == 1
                assert s.item() == ws.item() and m.item() == wm.item()
    finally:
        tandem.set_num_threads(prev)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods(method):
    want = epochs(DataLoader(Rich(9), batch_size=4, shuffle=True, seed=1))
    got = epochs(DataLoader(Rich(9), batch_size=4, shuffle=True, seed=1, num_workers=2, timeout=120,
                            multiprocessing_context=method, persistent_workers=True))
    assert_same(got, want)
    ctx = multiprocessing.get_context(method)
    got = epochs(DataLoader(Rich(9), batch_size=4, shuffle=True, seed=1, num_workers=1, timeout=120,
                            multiprocessing_context=ctx), 1)
    assert_same(got, want[:1])


def test_interpreter_exit_with_live_workers():
    script = textwrap.dedent("""
        import sys, numpy as np
        from tandem.utils.data import DataLoader
        class DS:
            def __len__(self): return 1000
            def __getitem__(self, i): return np.full(20000, i, dtype=np.float32)
        a = iter(DataLoader(DS(), batch_size=10, num_workers=2))
        next(a)
        b = DataLoader(DS(), batch_size=10, num_workers=2, persistent_workers=True)
        next(iter(b))
        print(*a.pids, *b._workers.pids, flush=True)
    """)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-S", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) == 4 and wait_for(lambda: dead_pids(pids), 5)
    assert "Traceback" not in r.stderr, r.stderr


def test_cpp_datasets_and_option_checks():
    x = tandem.arange(20, dtype=tandem.float32).reshape(10, 2)
    ds = tandem.utils.data.TensorDataset(x, tandem.arange(10))
    native = DataLoader(ds, batch_size=3, shuffle=True, seed=3, num_workers=2)
    assert native._native is not None and native.num_workers == 2  # the C++ loader's thread
    assert_same(epochs(native), epochs(DataLoader(ds, batch_size=3, shuffle=True, seed=3)))
    # A C++ dataset with a collate_fn is read by Python code: the workers do it.
    want = epochs(DataLoader(ds, batch_size=3, shuffle=True, seed=3, collate_fn=tandem.utils.data.default_collate))
    got = epochs(DataLoader(ds, batch_size=3, shuffle=True, seed=3, num_workers=2,
                            collate_fn=tandem.utils.data.default_collate))
    assert_same(got, want)
    for bad in (dict(num_workers=-1), dict(num_workers=1.5), dict(timeout=-1), dict(prefetch_factor=3),
                dict(num_workers=1, prefetch_factor=0), dict(persistent_workers=True),
                dict(multiprocessing_context="fork")):
        with pytest.raises(ValueError):
            DataLoader(Squares(4), **bad)
    with pytest.raises(ValueError):
        iter(DataLoader(Squares(4), num_workers=1, multiprocessing_context="no-such-method"))
