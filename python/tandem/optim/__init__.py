"""Optimizers (torch.optim): tandem's C++ optimizers over Python-held parameters, so a
Python training loop updates its parameters bit for bit as the C++ API does.

    opt = tandem.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.zero_grad(); loss.backward(); opt.step()
"""
from ._C import Optimizer, SGD, Adam

__all__ = ["Optimizer", "SGD", "Adam"]
