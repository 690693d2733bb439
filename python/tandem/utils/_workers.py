"""DataLoader worker processes (DataLoader(num_workers=N > 0)): the loop each worker runs,
the main process's iterator over their batches, and how batches cross processes.

Protocol. Worker w has its own task queue (a multiprocessing.Queue the main process
writes) and its own result pipe (a one-way multiprocessing.Pipe the worker writes). Task
t of an epoch (a list of indices, or one index without automatic batching) goes to worker
t % N, so which worker computes which batch does not depend on timing; the main process
keeps prefetch_factor tasks in flight per worker and hands out batches in task order,
holding early arrivals in a reorder buffer. A worker pickles each result itself (tensors
as numpy arrays: dtype, values and requires_grad; bfloat16 through float32, which is
exact) and sends the bytes; the main process unpickles them into tandem tensors that own
the received memory (no further copy). Pickling in the worker also means that a result
which cannot be pickled is reported as that batch's error, with the worker's traceback.

Failures. An exception raised in the worker (dataset, collate_fn, worker_init_fn) is sent
back with its traceback text and re-raised in the main process when its batch is due, as
the same exception type when that type can be rebuilt from a message (RuntimeError
otherwise), with a message naming the worker. A worker that dies (os._exit, a signal)
closes its pipe: the main process sees end-of-file at once and raises RuntimeError naming
the worker, its pid and exit code or signal. Workers started by fork hold no write end of
another worker's pipe, so a dead worker's pipe really ends.

Clean-up. Workers are daemon processes. The iterator's weakref.finalize (run when the
iterator is collected, when an epoch ends without persistent workers, after an error, and
at interpreter exit) sends each worker a stop message, reads and drops whatever they are
still sending (a worker blocked writing a large batch then finishes), joins them for up to
_SHUTDOWN_GRACE_S seconds, then terminates (and if need be kills) the rest and joins them:
no zombies. A worker whose parent disappears (the main process was killed) notices within
_WATCHDOG_S seconds while idle and exits.

OpenMP. tandem's kernels run on OpenMP (libgomp) threads. A child forked after the parent
ran a parallel region inherits libgomp's state but not its threads, and its first parallel
region waits forever for them. Each worker therefore sets tandem's thread count to 1
before anything else (tandem's loops and oneDNN then never start a team), as PyTorch's
workers run with one thread. Calling tandem.set_num_threads(n > 1) inside a forked worker
brings the hazard back; use multiprocessing_context="forkserver" or "spawn" for workers
that need several threads.
"""
import copyreg
import io
import os
import pickle
import queue
import random
import signal
import sys
import time
import traceback
import weakref

import numpy as np

from .. import _C

# Seconds an idle worker waits for a task before checking that its parent still lives.
_WATCHDOG_S = 2.0
# Seconds shutdown waits for workers to exit on their own before terminating them.
_SHUTDOWN_GRACE_S = 1.0

_MASK64 = (1 << 64) - 1
_worker_info = None  # a WorkerInfo inside a worker process, None elsewhere


class WorkerInfo:
    """What tandem.utils.data.get_worker_info() returns inside a DataLoader worker
    process (torch.utils.data.get_worker_info): id (0 .. num_workers - 1), num_workers,
    seed (this worker's seed: tandem's default generator, Python's `random` and numpy's
    global generator were seeded from it before worker_init_fn ran) and dataset (this
    process's copy of the dataset). Read-only: AttributeError on assignment."""
    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id, num_workers, seed, dataset):
        for name, value in (("id", id), ("num_workers", num_workers), ("seed", seed), ("dataset", dataset)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"WorkerInfo.{name} is read-only")

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def mix_seed(*values):
    """A 63-bit seed derived from integers (splitmix64 over each in turn): the per-epoch
    base seed from (loader seed, epoch) and the per-worker seed from (base, worker id)."""
    h = 0
    for v in values:
        z = (h ^ (int(v) & _MASK64)) + 0x9E3779B97F4A7C15 & _MASK64
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK64
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK64
        h = z ^ (z >> 31)
    return h >> 1


# ---- tensors across processes -----------------------------------------------------------

def _rebuild_tensor(array, dtype_name, requires_grad):
    """A tensor owning `array`'s memory (a freshly unpickled array: no copy), converted to
    the dtype named when the array holds it in another dtype (bfloat16 as float32)."""
    t = _C.from_numpy(array)
    dtype = _C.dtype_from_name(dtype_name)
    if t.dtype != dtype:
        t = t.to(dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    d = t.detach()
    if d.dtype == _C.bfloat16:
        d = d.to(_C.float32)  # exact: every bfloat16 is a float32
    return (_rebuild_tensor, (d.numpy(), t.dtype.name, t.requires_grad))


_dispatch_table = copyreg.dispatch_table.copy()
_dispatch_table[_C.Tensor] = _reduce_tensor


def dumps(obj):
    """Pickles obj with tandem tensors (of the exact class Tensor; subclasses use their
    own __reduce__) sent as numpy arrays."""
    buf = io.BytesIO()
    p = pickle.Pickler(buf, pickle.HIGHEST_PROTOCOL)
    p.dispatch_table = _dispatch_table
    p.dump(obj)
    return buf.getvalue()


# ---- errors -----------------------------------------------------------------------------

class _Message(str):
    """A message whose repr is itself, so KeyError (which shows repr(arg)) prints the
    traceback's lines instead of one escaped string."""

    def __repr__(self):
        return str(self)


class ExceptionInfo:
    """The exception being handled in a worker, in a picklable form: its type (when
    pickle can name it), the type's name and the formatted traceback."""

    def __init__(self, worker_id, where):
        exc_type, exc, tb = sys.exc_info()
        self.worker_id, self.where = worker_id, where
        self.type_name = exc_type.__qualname__
        self.text = "".join(traceback.format_exception(exc_type, exc, tb))
        try:
            pickle.loads(pickle.dumps(exc_type))
            self.exc_type = exc_type
        except Exception:  # a local class, or one pickle cannot find again
            self.exc_type = None

    def exception(self):
        """The exception to raise in the main process: the worker's type built from a
        message that names the worker and holds the original traceback (RuntimeError when
        the type cannot be built from one message)."""
        msg = (f"Caught {self.type_name} in DataLoader worker process {self.worker_id} {self.where}.\n"
               f"Original {self.text.rstrip()}")
        if self.exc_type is not None:
            try:
                return self.exc_type(_Message(msg) if issubclass(self.exc_type, KeyError) else msg)
            except Exception:
                pass
        return RuntimeError(msg)


# ---- the worker process -----------------------------------------------------------------

def _seed_all(seed):
    """Seeds tandem's default generator and Python's `random` with `seed`, numpy's global
    generator with the two 32-bit halves of mix_seed(seed, 1) (a different stream: Python
    and numpy would otherwise draw the same Mersenne Twister numbers)."""
    _C.manual_seed(seed)
    random.seed(seed)
    np_seed = mix_seed(seed, 1)
    np.random.seed([np_seed & 0xFFFFFFFF, np_seed >> 32])


def worker_loop(worker_id, num_workers, fetcher, tasks, conn, seed, init_fn, parent_pid, inherited):
    """The body of worker process `worker_id`: seeds, runs init_fn(worker_id), then fetches
    the tasks (generation, task id, indices) from `tasks` until None arrives, sending
    dumps((generation, task id, "ok" | "err", batch | ExceptionInfo)) through `conn`
    (task id -1: set-up failed)."""
    global _worker_info
    # First, before any tandem op: one thread, so no OpenMP team is ever started (see the
    # module docstring: a forked child must not start one after the parent did).
    _C.set_num_threads(1)
    try:
        for c in inherited:  # other workers' pipe ends a fork copied into this process
            c.close()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
        _seed_all(seed)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, fetcher.dataset)
        if init_fn is not None:
            init_fn(worker_id)
    except Exception:
        try:
            conn.send_bytes(dumps((None, -1, "err", ExceptionInfo(worker_id, "while starting (worker_init_fn)"))))
        except Exception:
            pass
        return
    while True:
        try:
            task = tasks.get(timeout=_WATCHDOG_S)
        except queue.Empty:
            if os.getppid() != parent_pid:
                return  # the main process is gone
            continue
        if task is None:
            return
        generation, task_id, indices = task
        try:
            payload = dumps((generation, task_id, "ok", fetcher(indices)))
        except Exception:
            payload = dumps((generation, task_id, "err", ExceptionInfo(worker_id, f"while fetching batch {task_id}")))
        try:
            conn.send_bytes(payload)
        except OSError:  # the main process closed its end: shutting down
            return


# ---- the main process -------------------------------------------------------------------

def _drain_and_stop(workers, queues, conns):
    """Stops workers: a stop message each, their output read and dropped while waiting up
    to _SHUTDOWN_GRACE_S seconds, then terminate / kill for the rest; every one is joined."""
    from multiprocessing.connection import wait
    for q in queues:
        try:
            q.put(None)
        except Exception:
            pass
    open_conns = [c for c in conns if not c.closed]
    deadline = time.monotonic() + _SHUTDOWN_GRACE_S
    alive = [p for p in workers if p.exitcode is None]
    while alive:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready = wait(open_conns + [p.sentinel for p in alive], timeout=left)
        for r in ready:
            if not isinstance(r, int):
                try:
                    r.recv_bytes()
                except (EOFError, OSError):
                    r.close()
                    open_conns.remove(r)
        alive = [p for p in alive if p.exitcode is None]
    for p in alive:
        p.terminate()
    for p in alive:
        p.join(1.0)
        if p.exitcode is None:
            p.kill()
    for p in workers:
        p.join()
    for c in conns:
        c.close()
    for q in queues:
        q.cancel_join_thread()  # a stop message to a dead worker may never be read
        q.close()


def _shutdown(owner_pid, state):
    # A forked child holding a copy of the iterator must leave the workers alone: they are
    # its siblings, not its children.
    if os.getpid() != owner_pid or state["done"]:
        return
    state["done"] = True
    _drain_and_stop(state["workers"], state["queues"], state["conns"])


def _exit_text(p):
    code = p.exitcode
    if code is None:
        return "closed its pipe but is still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class MultiProcessIter:
    """One epoch (or, with persistent workers, every epoch) of a DataLoader through worker
    processes. Made by DataLoader.__iter__; yields the batches in the sampler's order."""

    def __init__(self, loader, epoch):
        self._n = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._generation = 0
        ctx = loader._mp_context()
        base_seed = loader._worker_base_seed(epoch)
        fetcher = loader._fetcher()
        fork = ctx.get_start_method() == "fork"
        self._workers, self._queues, self._conns = [], [], []
        self._state = {"workers": self._workers, "queues": self._queues, "conns": self._conns, "done": False}
        self._finalizer = weakref.finalize(self, _shutdown, os.getpid(), self._state)
        try:
            for w in range(self._n):
                q = ctx.Queue()
                reader, writer = ctx.Pipe(duplex=False)
                inherited = list(self._conns) if fork else []
                p = ctx.Process(target=worker_loop, name=f"tandem DataLoader worker {w}", daemon=True,
                                args=(w, self._n, fetcher, q, writer, mix_seed(base_seed, w), loader.worker_init_fn,
                                      os.getpid(), inherited))
                p.start()
                writer.close()  # the worker holds the only write end: its exit ends the pipe
                self._workers.append(p)
                self._queues.append(q)
                self._conns.append(reader)
        except BaseException:
            self._finalizer()
            raise
        self.reset(loader, epoch)

    @property
    def pids(self):
        """The worker processes' ids."""
        return [p.pid for p in self._workers]

    def reset(self, loader, epoch):
        """Starts epoch `epoch` (the workers keep running; results of an unfinished earlier
        epoch are dropped as they arrive)."""
        self._generation += 1
        self._tasks = iter(loader._tasks(epoch))
        self._sent = self._received = 0
        self._buffer = {}
        for _ in range(self._prefetch * self._n):
            if not self._put_task():
                break

    def _put_task(self):
        try:
            indices = next(self._tasks)
        except StopIteration:
            return False
        self._queues[self._sent % self._n].put((self._generation, self._sent, indices))
        self._sent += 1
        return True

    def __iter__(self):
        return self

    def __next__(self):
        if self._state["done"]:
            raise StopIteration
        if self._received == self._sent:
            if not self._persistent:
                self.shutdown()
            raise StopIteration
        task_id = self._received
        try:
            kind, value = self._take(task_id)
        except BaseException:
            self.shutdown()
            raise
        self._received += 1
        self._put_task()
        if kind == "err":
            raise value.exception()
        return value

    def _take(self, task_id):
        from multiprocessing.connection import wait
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while task_id not in self._buffer:
            left = None if deadline is None else deadline - time.monotonic()
            ready = wait(self._conns, timeout=left) if left is None or left > 0 else []
            if not ready:
                raise RuntimeError(f"[DataLoader] timed out after {self._timeout} seconds waiting for batch "
                                   f"{task_id} from worker {task_id % self._n} "
                                   f"(pid {self._workers[task_id % self._n].pid})")
            for conn in ready:
                w = self._conns.index(conn)
                try:
                    data = conn.recv_bytes()
                except (EOFError, OSError):
                    p = self._workers[w]
                    p.join(1.0)
                    raise RuntimeError(f"[DataLoader] worker {w} (pid {p.pid}) died unexpectedly ({_exit_text(p)}); "
                                       f"its batches are lost") from None
                generation, tid, kind, value = pickle.loads(data)
                if tid == -1:
                    raise value.exception()
                if generation == self._generation:
                    self._buffer[tid] = (kind, value)
        return self._buffer.pop(task_id)

    def shutdown(self):
        """Stops and joins the workers (idempotent)."""
        self._finalizer()
