"""Datasets and the DataLoader (torch.utils.data), over tandem's C++ data layer.

    loader = DataLoader(tandem.datasets.FashionMNIST(train=True), batch_size=64, shuffle=True, seed=1)
    for images, labels in loader:   # one epoch: float32 [64, 1, 28, 28], int64 [64]
        ...

The loader shuffles per (seed, epoch) exactly as the C++ DataLoader (and so as
`tandem train`), and builds batches on a background thread without the GIL. Datasets
are the C++ ones (TensorDataset, tandem.datasets.*); Python-defined datasets are not
supported yet.
"""
from .._C import Dataset, TensorDataset, DataLoader

__all__ = ["Dataset", "TensorDataset", "DataLoader"]
