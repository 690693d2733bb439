"""The reference models of `tandem train` and bench/ (C++ nn::models), as CppModules.

    tandem.manual_seed(0)
    model = tandem.nn.models.fashion_cnn()   # what `tandem train --model cnn` trains
    model.load_state_dict(tandem.load("model.safetensors"))

They are built by the C++ library, so they hold the same initial values as the C++
programs' models for the same tandem.manual_seed (as does the same model written with
tandem.nn's Python layers in the same order: their init calls the C++ init functions), and
their state_dict keys are the C++ ones ("0.weight", "0.bias", ...: Sequential children named by
position), so `tandem train` checkpoints load into them (tandem.load_checkpoint)."""
from .. import _C
from ._cpp import CppModule

__all__ = ["fashion_mlp", "fashion_cnn", "mlp"]


def fashion_mlp():
    """Flatten, Linear(784, 256), ReLU, Linear(256, 128), ReLU, Linear(128, 10):
    float32 [N, 1, 28, 28] (or [N, 784]) -> logits [N, 10] (`tandem train --model mlp`)."""
    return CppModule(_C._models.fashion_mlp())


def fashion_cnn():
    """Conv2d(1, 32, 3, padding=1), ReLU, MaxPool2d(2), Conv2d(32, 64, 3, padding=1), ReLU,
    MaxPool2d(2), Flatten, Linear(3136, 128), ReLU, Linear(128, 10): float32
    [N, 1, 28, 28] -> logits [N, 10] (`tandem train --model cnn`)."""
    return CppModule(_C._models.fashion_cnn())


def mlp(sizes):
    """Linear(sizes[0], sizes[1]), ReLU, ..., Linear(sizes[-2], sizes[-1]) (no ReLU after
    the last): float32 [N, sizes[0]] -> [N, sizes[-1]]. ValueError for fewer than 2 sizes
    or a size < 1."""
    return CppModule(_C._models.mlp(list(sizes)))
