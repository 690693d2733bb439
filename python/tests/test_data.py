"""Datasets and the DataLoader from Python."""
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
