"""Built-in datasets (torchvision.datasets' role), read from Debian's packages:
FashionMNIST (dataset-fashion-mnist) and MNIST from IDX files."""
from ._C import FashionMNIST, MNIST

__all__ = ["FashionMNIST", "MNIST"]
