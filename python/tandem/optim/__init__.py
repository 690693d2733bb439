"""Optimizers (torch.optim): tandem's C++ optimizers over Python-held parameters, so a
Python training loop updates its parameters bit for bit as the C++ API does.

    opt = tandem.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.zero_grad(); loss.backward(); opt.step()

params: an iterable of tensors, or of dicts (parameter groups with their own
hyper-parameters: [{"params": a, "lr": 0.1}, {"params": b}]). optimizer.param_groups are
live dict-like views (group["lr"] = 0.01 takes effect at the next step);
optimizer.state[p] is the state of parameter p; state_dict() / load_state_dict() use
PyTorch's layout. Learning-rate schedulers: tandem.optim.lr_scheduler.
"""
from .._C import Optimizer, SGD, Adam, AdamW, Adagrad, RMSprop
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "lr_scheduler"]


class _StateView:
    """optimizer.state: state[p] is a dict of parameter p's state tensors (empty before
    its first step). ValueError for a tensor that is not one of the optimizer's."""

    def __init__(self, opt):
        self._opt = opt

    def __getitem__(self, param):
        return self._opt._state_of(param)

    def __contains__(self, param):
        try:
            return bool(self._opt._state_of(param))
        except ValueError:
            return False

    def __len__(self):
        return sum(1 for g in self._opt.param_groups for p in g["params"] if self._opt._state_of(p))


Optimizer.state = property(lambda self: _StateView(self), doc=_StateView.__doc__)
