"""Datasets and the DataLoader from Python."""
import collections

import numpy as np
import pytest

import tandem
from tandem.utils.data import DataLoader, TensorDataset


def test_tensor_dataset_and_loader_batches():
    x = tandem.arange(10, dtype=tandem.float32).reshape(10, 1)
    y = tandem.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    d, t = ds[3]
    assert d.tolist() == [3.0] and t.item() == 3
    assert ds[-1][1].item() == 9
    loader = DataLoader(ds, batch_size=4)
    assert len(loader) == 3
    batches = [(b.tolist(), t.tolist()) for b, t in loader]
    assert [len(t) for _, t in batches] == [4, 4, 2]
    assert batches[0] == ([[0.0], [1.0], [2.0], [3.0]], [0, 1, 2, 3])
    with pytest.raises(IndexError):
        ds[10]
    with pytest.raises(ValueError):
        DataLoader(ds, batch_size=0)


def test_shuffle_is_a_permutation_per_epoch_and_reproducible():
    ds = TensorDataset(tandem.arange(20).reshape(20, 1), tandem.arange(20))
    loader = DataLoader(ds, batch_size=5, shuffle=True, seed=7, drop_last=True)
    e0 = [t.tolist() for _, t in loader]
    e1 = [t.tolist() for _, t in loader]
    assert sorted(sum(e0, [])) == list(range(20)) and sorted(sum(e1, [])) == list(range(20))
    assert e0 != e1 and loader.epoch == 2
    again = DataLoader(ds, batch_size=5, shuffle=True, seed=7, drop_last=True)
    assert [t.tolist() for _, t in again] == e0


def test_fashion_mnist():
    ds = tandem.datasets.FashionMNIST(train=False)
    assert len(ds) == 10000
    img, label = ds[0]
    assert img.shape == (1, 28, 28) and img.dtype is tandem.float32 and label.dtype is tandem.int64
    a = img.numpy()
    assert 0.0 <= a.min() and a.max() <= 1.0 and a.max() > 0.5
    assert tandem.datasets.FashionMNIST.classes[9] == "Ankle boot"
    images, labels = next(iter(DataLoader(ds, batch_size=32)))
    assert images.shape == (32, 1, 28, 28) and labels.shape == (32,)
    np.testing.assert_array_equal(images[0].numpy(), a)
    with pytest.raises(RuntimeError):
        tandem.datasets.FashionMNIST(root="/nonexistent")


class Squares(tandem.utils.data.Dataset):
    """A Python dataset: example i is (float32 numpy [2] = (i, i*i), int label i % 3)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.array([i, i * i], dtype=np.float32), i % 3


def test_python_dataset_batches_stack_numpy_and_ints():
    loader = DataLoader(Squares(7), batch_size=3)
    assert len(loader) == 3
    batches = list(loader)
    assert [len(b[1]) for b in batches] == [3, 3, 1]
    x, y = batches[1]
    assert x.dtype is tandem.float32 and x.shape == (3, 2) and y.dtype is tandem.int64
    np.testing.assert_array_equal(x.numpy(), np.array([[3, 9], [4, 16], [5, 25]], dtype=np.float32))
    assert y.tolist() == [0, 1, 2]
    assert len(DataLoader(Squares(7), batch_size=3, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(Squares(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [0, 1, 2]]


def test_python_dataset_shuffles_as_the_cpp_loader():
    # The same examples as a Python dataset and as a C++ TensorDataset: same batches.
    n = 23
    data = np.stack([Squares(n)[i][0] for i in range(n)])
    labels = tandem.tensor([i % 3 for i in range(n)])
    native = DataLoader(TensorDataset(tandem.from_numpy(data), labels), batch_size=4, shuffle=True, seed=11)
    python = DataLoader(Squares(n), batch_size=4, shuffle=True, seed=11)
    for _ in range(2):  # two epochs: each its own permutation
        a = [(x.numpy().copy(), y.tolist()) for x, y in native]
        b = [(x.numpy().copy(), y.tolist()) for x, y in python]
        assert len(a) == len(b) == 6
        for (xa, ya), (xb, yb) in zip(a, b):
            np.testing.assert_array_equal(xa, xb)
            assert ya == yb
    assert native.epoch == python.epoch == 2
    order = tandem._C.shuffled_indices(n, 11, 0)
    assert sorted(order) == list(range(n)) and order != list(range(n))
    python.set_epoch(0)
    first = next(iter(python))[0].numpy()
    np.testing.assert_array_equal(first[:, 0], np.array(order[:4], dtype=np.float32))


def test_default_seed_follows_manual_seed_and_generator():
    tandem.manual_seed(5)
    a = [y.tolist() for _, y in DataLoader(Squares(10), batch_size=10, shuffle=True)]
    tandem.manual_seed(5)
    b = [y.tolist() for _, y in DataLoader(Squares(10), batch_size=10, shuffle=True)]
    assert a == b

    class Gen:
        def initial_seed(self):
            return 11
    c = [x.numpy()[:, 0].tolist() for x, _ in DataLoader(Squares(10), batch_size=10, shuffle=True, generator=Gen())]
    assert c == [[float(i) for i in tandem._C.shuffled_indices(10, 11, 0)]]


def test_batch_size_none_sampler_batch_sampler_and_collate_fn():
    items = list(DataLoader(Squares(3), batch_size=None))
    assert len(items) == 3 and items[2][1] == 2 and isinstance(items[2][0], np.ndarray)
    assert [y.tolist() for _, y in DataLoader(Squares(6), batch_size=2, sampler=[5, 4, 3])] == [[2, 1], [0]]
    loader = DataLoader(Squares(6), batch_sampler=[[0, 5], [1]])
    assert len(loader) == 2 and [y.tolist() for _, y in loader] == [[0, 2], [1]]
    seen = []

    def collate(batch):
        seen.append(len(batch))
        return sum(label for _, label in batch)
    assert list(DataLoader(Squares(5), batch_size=2, collate_fn=collate)) == [1, 2, 1] and seen == [2, 2, 1]
    with pytest.raises(ValueError):
        DataLoader(Squares(5), sampler=[0], shuffle=True)
    with pytest.raises(ValueError):
        DataLoader(Squares(5), batch_sampler=[[0]], batch_size=2)
    # num_workers > 0 is tested in test_data_workers.py.


def test_default_collate_structures():
    from tandem.utils.data import default_collate
    Point = collections.namedtuple("Point", "x y")
    batch = [{"a": tandem.tensor([1.0, 2.0]), "b": (1.5, "s", True), "p": Point(1, np.float64(2.5))},
             {"a": tandem.tensor([3.0, 4.0]), "b": (2.5, "t", False), "p": Point(2, np.float64(3.5))}]
    out = default_collate(batch)
    assert out["a"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    b0, b1, b2 = out["b"]
    assert b0.dtype is tandem.float64 and b0.tolist() == [1.5, 2.5]
    assert b1 == ["s", "t"] and b2.dtype is tandem.bool and b2.tolist() == [True, False]
    assert isinstance(out["p"], Point) and out["p"].x.dtype is tandem.int64 and out["p"].y.tolist() == [2.5, 3.5]
    with pytest.raises(RuntimeError):
        default_collate([[1, 2], [3]])
    with pytest.raises(tandem.ShapeError):
        default_collate([tandem.zeros(2), tandem.zeros(3)])
    with pytest.raises(TypeError):
        default_collate([object(), object()])


def test_default_collate_matches_torch(torch):
    from torch.utils.data import default_collate as torch_collate
    batch = [(np.arange(4, dtype=np.float32).reshape(2, 2) + i, i, float(i) / 2, [i, i + 1]) for i in range(3)]
    ours = tandem.utils.data.default_collate(batch)
    theirs = torch_collate(batch)
    assert len(ours) == len(theirs)

    def check(a, b):
        if isinstance(b, list):
            assert isinstance(a, list) and len(a) == len(b)
            for x, y in zip(a, b):
                check(x, y)
        else:
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    check(ours, theirs)


def test_dataset_errors_propagate_and_subsets():
    class Broken(tandem.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("bad example 2")
            return tandem.tensor([float(i)])
    with pytest.raises(KeyError, match="bad example 2"):
        list(DataLoader(Broken(), batch_size=1))
    both = Squares(3) + Squares(2)
    assert len(both) == 5 and both[3][1] == 0 and both[-1][1] == 1
    with pytest.raises(IndexError):
        both[5]
    parts = tandem.utils.data.random_split(Squares(10), [7, 3], seed=1)
    idx = sorted(int(parts[0][i][0][0]) for i in range(7)) + sorted(int(parts[1][i][0][0]) for i in range(3))
    assert sorted(idx) == list(range(10)) and len(parts[1]) == 3
    with pytest.raises(ValueError):
        tandem.utils.data.random_split(Squares(10), [7, 4])


def test_fashion_mnist_through_a_python_subset_equals_the_native_path():
    ds = tandem.datasets.FashionMNIST(train=False)
    sub = tandem.utils.data.Subset(ds, range(64))
    x_py, y_py = next(iter(DataLoader(sub, batch_size=64)))
    x_c, y_c = next(iter(DataLoader(ds, batch_size=64)))
    np.testing.assert_array_equal(x_py.numpy(), x_c.numpy())
    assert y_py.tolist() == y_c.tolist()
