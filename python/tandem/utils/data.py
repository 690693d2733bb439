"""Datasets and the DataLoader (torch.utils.data).

    loader = DataLoader(tandem.datasets.FashionMNIST(train=True), batch_size=64, shuffle=True, seed=1)
    for images, labels in loader:   # one epoch: float32 [64, 1, 28, 28], int64 [64]
        ...

A dataset is tandem's C++ datasets (TensorDataset, tandem.datasets.*) or any Python
object with __len__ and __getitem__ (subclass Dataset for the + operator) whose examples
are Tensors, numpy arrays, Python numbers, strings, or tuples / lists / dicts of those.

Order. With shuffle, epoch e visits the examples in the permutation
tandem._C.shuffled_indices(len(dataset), seed, e), the C++ DataLoader's (and so
`tandem train`'s): a Python dataset and a C++ dataset holding the same examples give the
same batches for the same seed. Each iteration uses `epoch` and then advances it by one
(set_epoch chooses the next one).

Batches of a C++ dataset with the default collate, no sampler and automatic batching are
gathered by the C++ loader on one background thread without the GIL (the prefetch thread
of `tandem train`); num_workers is accepted there and starts no processes, since the C++
loader already reads the next batches while the model trains and worker processes would
only add copies between processes. Every other loader reads its examples in the calling
thread (num_workers=0) or in worker processes (num_workers > 0).

Worker processes (torch.utils.data's multi-process loading). With num_workers=N > 0 each
iteration starts N processes (multiprocessing_context: a start method name, a context, or
None for multiprocessing's default, fork on Linux); they run until the epoch ends, or for
the loader's lifetime with persistent_workers=True. Batch i of the epoch is computed by
worker i % N with the same dataset, sampler and collate_fn as in the main process, and
the batches come back in the sampler's order, prefetch_factor of them in flight per
worker: the same batches, in the same order, with the same values and dtypes as
num_workers=0. Tensors cross as numpy arrays and arrive as tandem tensors (requires_grad
kept, no autograd history); other values are pickled. Under "spawn" and "forkserver" the
dataset, collate_fn and worker_init_fn must be picklable (module-level, not lambdas).

In a worker, get_worker_info() returns its id, num_workers, seed and dataset copy.
Before worker_init_fn(worker_id) runs, tandem's default generator, Python's `random` and
numpy's global generator are seeded with the worker's seed, derived from the loader's
seed, the epoch (the first epoch with persistent workers) and the worker id: random
transforms are reproducible from run to run (a loader with workers and no seed draws one
from the default generator at construction, as a shuffling loader does). Workers run
tandem with one thread (tandem.set_num_threads(1)): see tandem.utils._workers for the
OpenMP-after-fork hazard this avoids, and keep it that way in forked workers.

Errors: an exception in a worker (dataset, collate_fn, worker_init_fn) is raised in the
main process when its batch is due, as the same type where it can be rebuilt from a
message (else RuntimeError), with a message naming the worker and holding the worker's
traceback. A worker that dies raises RuntimeError naming it (id, pid, exit code or
signal); `timeout` > 0 raises RuntimeError when a batch takes longer than that many
seconds. Workers stop (and are joined) when the epoch ends, after an error, when the
iterator (persistent: the loader) is garbage collected, and at interpreter exit.
"""
import collections
import collections.abc
import math
import numbers

import numpy as np

from .. import _C
from .._C import Dataset as _CDataset, TensorDataset

__all__ = ["Dataset", "TensorDataset", "Subset", "ConcatDataset", "DataLoader", "default_collate", "random_split",
           "get_worker_info"]


def get_worker_info():
    """Inside a DataLoader worker process: a WorkerInfo with id (0 .. num_workers - 1),
    num_workers, seed (the worker's seed) and dataset (the worker's copy); None in the
    main process (torch.utils.data.get_worker_info). A dataset can use it to split its
    work, and worker_init_fn to configure each copy."""
    from . import _workers
    return _workers._worker_info


class Dataset:
    """Base class of Python map-style datasets (torch.utils.data.Dataset): define
    __getitem__(index) and __len__(). `a + b` concatenates two datasets. Any object with
    those two methods works with DataLoader; subclassing is optional."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__()")

    def __add__(self, other):
        return ConcatDataset([self, other])


class Subset(Dataset):
    """The examples of `dataset` at `indices`, in that order (torch.utils.data.Subset)."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The examples of several datasets one after the other (torch.utils.data.ConcatDataset).
    ValueError for no datasets; IndexError for an index outside [-len, len)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise _C.ValueError("[ConcatDataset] datasets should not be an empty iterable")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise _C.IndexError(f"[ConcatDataset] index {index} is out of range for {n} examples")
        start = 0
        for d, end in zip(self.datasets, self.cumulative_sizes):
            if index < end:
                return d[index - start]
            start = end
        raise AssertionError("unreachable")


def random_split(dataset, lengths, seed=None, generator=None):
    """Splits `dataset` into Subsets of the given lengths (ints summing to len(dataset), or
    fractions summing to 1, rounded as PyTorch 1.13 does) over a random permutation
    (shuffled_indices(n, seed, 0); seed as DataLoader's). ValueError when the lengths do
    not add up."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and not all(isinstance(x, int) for x in lengths):
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise _C.ValueError(f"[random_split] sum of input lengths {sum(lengths)} does not equal the length of the "
                            f"input dataset {n}")
    order = _C.shuffled_indices(n, _resolve_seed(seed, generator), 0)
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def default_collate(batch):
    """Combines a list of examples into a batch (torch.utils.data.default_collate):
    Tensors are stacked along a new dim 0 (same shape and dtype required: ShapeError /
    TypeError otherwise); numpy arrays become tensors (sharing memory) and are stacked;
    Python floats become a float64 tensor, ints an int64 tensor, bools a bool tensor;
    strings and bytes stay a list; a dict is collated per key; a named tuple field by field
    into the same named tuple; other sequences position by position into a list (every
    example must have the same length: RuntimeError otherwise). TypeError for anything
    else (naming its type)."""
    import tandem
    elem = batch[0]
    if _is_tensor(elem):
        return tandem.stack(list(batch), 0)
    elem_type = type(elem)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if elem.dtype.kind in "OSU":
                raise _C.TypeError(f"[default_collate] numpy arrays of dtype {elem.dtype} can't be collated")
            return default_collate([tandem.as_tensor(b) for b in batch])
        if elem.shape == ():  # numpy scalars
            return tandem.as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return tandem.tensor(list(batch), dtype=tandem.bool)
    if isinstance(elem, float):
        return tandem.tensor(list(batch), dtype=tandem.float64)
    if isinstance(elem, int):
        return tandem.tensor(list(batch), dtype=tandem.int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise _C.RuntimeError("[default_collate] each element in list of batch should be of equal size")
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise _C.TypeError(f"[default_collate] batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                       f"found {elem_type.__name__}")


def _resolve_seed(seed, generator):
    if seed is not None:
        return int(seed)
    if generator is not None:
        # A tandem or torch generator: its seed (torch.Generator().manual_seed(s) -> s).
        return int(generator.initial_seed())
    # Like PyTorch's RandomSampler without a generator: a seed drawn from the default
    # generator, so tandem.manual_seed makes the order reproducible.
    return _C._draw_seed()


class _Fetcher:
    """Reads one task of a loader: a list of indices -> collate_fn([dataset[i] ...]) with
    automatic batching, one index -> collate_fn(dataset[i]) (identity without a
    collate_fn) without. The same object runs in the calling thread (num_workers=0) and
    in the worker processes, so both compute the same batches."""

    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def __call__(self, task):
        if self.auto_collation:
            collate = self.collate_fn if self.collate_fn is not None else default_collate
            return collate([self.dataset[i] for i in task])
        example = self.dataset[task]
        return example if self.collate_fn is None else self.collate_fn(example)


class DataLoader:
    """Batches of a dataset (torch.utils.data.DataLoader; see the module docstring for the
    order, the datasets, the threading and the worker processes). Iterating the loader
    runs one epoch.

    batch_size: examples per batch (None: no batching, the examples one by one, tensors
    as they are). shuffle: a new permutation per epoch from (seed, epoch); seed: an int,
    else generator.initial_seed() (a tandem or torch generator), else drawn from the
    default generator at construction. sampler: an iterable of indices to visit instead
    (not with shuffle); batch_sampler: an iterable of index lists (not with batch_size,
    shuffle, sampler or drop_last). collate_fn: combines a list of examples (default
    default_collate). drop_last: drop the last, smaller batch. pin_memory: ignored (CPU).
    prefetch: the C++ loader's background thread (C++ datasets).

    Worker processes (num_workers > 0, Python datasets): num_workers processes;
    prefetch_factor (>= 1) batches in flight per worker; persistent_workers keeps them
    across epochs; worker_init_fn(worker_id) runs in each worker after seeding;
    multiprocessing_context: "fork", "spawn", "forkserver", a multiprocessing context, or
    None (multiprocessing's default); timeout: seconds to wait for one batch (0: no
    limit).

    ValueError for batch_size < 1, num_workers < 0, timeout < 0, prefetch_factor < 1,
    sampler/batch_sampler combined with the options they exclude, or prefetch_factor
    (other than 2), persistent_workers or multiprocessing_context without workers (as
    PyTorch). Errors raised by the dataset or collate_fn propagate (from a worker: see the
    module docstring); RuntimeError for a worker that dies or a batch that times out."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False,
                 seed=None, prefetch=True):
        if not isinstance(num_workers, numbers.Integral) or num_workers < 0:
            raise _C.ValueError(f"[DataLoader] num_workers should be a non-negative integer, got {num_workers!r}")
        if timeout < 0:
            raise _C.ValueError(f"[DataLoader] timeout should be non-negative, got {timeout!r}")
        if num_workers == 0 and prefetch_factor != 2:
            raise _C.ValueError("[DataLoader] prefetch_factor applies to worker processes only: "
                                "set num_workers > 0 to use it")
        if not isinstance(prefetch_factor, numbers.Integral) or prefetch_factor < 1:
            raise _C.ValueError(f"[DataLoader] prefetch_factor should be a positive integer, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise _C.ValueError("[DataLoader] persistent_workers needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise _C.ValueError("[DataLoader] multiprocessing_context applies to worker processes only: "
                                "set num_workers > 0 to use it")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise _C.ValueError("[DataLoader] sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise _C.ValueError("[DataLoader] batch_sampler option is mutually exclusive with batch_size, "
                                    "shuffle, sampler, and drop_last")
            batch_size = None
        elif batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise _C.ValueError(f"[DataLoader] batch_size should be a positive integer, got {batch_size!r}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        self.num_workers = int(num_workers)
        self.prefetch_factor = int(prefetch_factor)
        self.persistent_workers = bool(persistent_workers)
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory = pin_memory
        explicit = seed is not None or generator is not None
        self.seed = (_resolve_seed(seed, generator) if shuffle or num_workers > 0 or explicit else 0)
        self._epoch = 0
        self._workers = None  # the persistent workers' iterator
        # The C++ loader: a C++ dataset, automatic batching by index ranges, default collate.
        self._native = None
        if (isinstance(dataset, _CDataset) and collate_fn is None and sampler is None and batch_sampler is None
                and batch_size is not None):
            self._native = _C.DataLoader(dataset, batch_size, shuffle, self.seed, self.drop_last, prefetch)

    @property
    def epoch(self):
        """The epoch the next iteration uses (settable, >= 0)."""
        return self._native.epoch if self._native is not None else self._epoch

    @epoch.setter
    def epoch(self, value):
        self.set_epoch(value)

    def set_epoch(self, epoch):
        """Makes the next iteration use epoch `epoch` (>= 0; ValueError otherwise)."""
        if epoch < 0:
            raise _C.ValueError(f"[DataLoader] epoch must be >= 0, got {epoch}")
        if self._native is not None:
            self._native.epoch = epoch
        else:
            self._epoch = int(epoch)

    def _indices(self, epoch):
        n = len(self.dataset)
        if self.sampler is not None:
            return self.sampler
        if self.shuffle:
            return _C.shuffled_indices(n, self.seed, epoch)
        return range(n)

    def _tasks(self, epoch):
        """The epoch's tasks in order: index lists (automatic batching) or single indices."""
        if self.batch_sampler is not None:
            for idx in self.batch_sampler:
                yield list(idx)
            return
        if self.batch_size is None:
            yield from self._indices(epoch)
            return
        batch = []
        for i in self._indices(epoch):
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def _fetcher(self):
        return _Fetcher(self.dataset, self.batch_size is not None or self.batch_sampler is not None, self.collate_fn)

    def _mp_context(self):
        import multiprocessing
        ctx = self.multiprocessing_context
        if ctx is None:
            return multiprocessing.get_context()
        if isinstance(ctx, str):
            return multiprocessing.get_context(ctx)
        return ctx

    def _worker_base_seed(self, epoch):
        from . import _workers
        return _workers.mix_seed(self.seed, epoch)

    def __len__(self):
        """Batches per epoch (examples when batch_size is None)."""
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        if self._native is not None:
            return iter(self._native)
        epoch = self._epoch
        self._epoch += 1
        if self.num_workers == 0:
            return self._python_epoch(epoch)
        from . import _workers
        if not self.persistent_workers:
            return _workers.MultiProcessIter(self, epoch)
        if self._workers is None or self._workers._state["done"]:
            self._workers = _workers.MultiProcessIter(self, epoch)
        else:
            self._workers.reset(self, epoch)
        return self._workers

    def _python_epoch(self, epoch):
        fetch = self._fetcher()
        for task in self._tasks(epoch):
            yield fetch(task)
