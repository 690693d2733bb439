"""Learning-rate schedulers (torch.optim.lr_scheduler, PyTorch 1.13 semantics).

    opt = tandem.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = tandem.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...)          # opt.step() per batch
        sched.step()

StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR, OneCycleLR and
SequentialLR are tandem's C++ schedulers (the numbers of the C++ API). LambdaLR,
MultiplicativeLR, ConstantLR and ReduceLROnPlateau are written here in Python over the
optimizer's param_groups, as is the base class _LRScheduler for schedulers of your own
(override get_lr()). Constructing a scheduler records each group's "initial_lr" and takes
the initial step; call step() after optimizer.step().
"""
from .. import _C
from .._C import LRScheduler, StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR, OneCycleLR, SequentialLR

__all__ = ["LRScheduler", "_LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
           "OneCycleLR", "SequentialLR", "LambdaLR", "MultiplicativeLR", "ConstantLR", "ReduceLROnPlateau"]


class _LRScheduler:
    """Base of the Python schedulers (torch.optim.lr_scheduler._LRScheduler): subclasses
    define get_lr() (the recursive formula at self.last_epoch, from the groups' current
    lr) and may define _get_closed_form_lr() for step(epoch). last_epoch -1 starts fresh;
    another value resumes and needs "initial_lr" in every group (KeyError otherwise)."""

    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        if not isinstance(optimizer, _C.Optimizer):
            raise _C.TypeError(f"[{type(self).__name__}] {type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an "
                                   "optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._step_count = 0
        self.step()

    def get_lr(self):
        """The lrs for self.last_epoch (subclasses define it)."""
        raise NotImplementedError

    def get_last_lr(self):
        """The lrs set by the last step, one per group."""
        return self._last_lr

    def step(self, epoch=None):
        """Advances one epoch (or jumps to `epoch`) and sets every group's lr."""
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    _skip = ("optimizer",)

    def state_dict(self):
        """The scheduler's attributes except the optimizer (and functions that are not
        callable objects' state), as PyTorch."""
        return {k: v for k, v in self.__dict__.items() if k not in self._skip}

    def load_state_dict(self, state_dict):
        """Restores a state_dict()."""
        self.__dict__.update(state_dict)


def _lambdas(name, optimizer, fn):
    n = len(optimizer.param_groups)
    if isinstance(fn, (list, tuple)):
        if len(fn) != n:
            raise _C.ValueError(f"[{name}] expected {n} lr_lambdas, but got {len(fn)}")
        return list(fn)
    return [fn] * n


class LambdaLR(_LRScheduler):
    """lr = initial_lr * lr_lambda(epoch) (torch.optim.lr_scheduler.LambdaLR); lr_lambda a
    function of the epoch or one per group (ValueError for another count). The functions
    are not part of state_dict (unless they are callable objects, whose __dict__ is)."""
    _skip = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        self.lr_lambdas = _lambdas("LambdaLR", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        d = super().state_dict()
        d["lr_lambdas"] = [None if isinstance(f, type(lambda: 0)) else dict(f.__dict__) for f in self.lr_lambdas]
        return d

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas", [])
        super().load_state_dict(state_dict)
        for f, s in zip(self.lr_lambdas, lambdas):
            if s is not None:
                f.__dict__.update(s)


class MultiplicativeLR(LambdaLR):
    """lr *= lr_lambda(epoch) each epoch after the first
    (torch.optim.lr_scheduler.MultiplicativeLR)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        self.lr_lambdas = _lambdas("MultiplicativeLR", optimizer, lr_lambda)
        _LRScheduler.__init__(self, optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch > 0:
            return [g["lr"] * lmbda(self.last_epoch) for lmbda, g in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return [g["lr"] for g in self.optimizer.param_groups]


class ConstantLR(_LRScheduler):
    """lr = initial_lr * factor until epoch total_iters, then initial_lr
    (torch.optim.lr_scheduler.ConstantLR). ValueError for factor outside [0, 1]."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1, verbose=False):
        if factor > 1.0 or factor < 0:
            raise _C.ValueError("[ConstantLR] constant multiplicative factor expected to be between 0 and 1")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch > self.total_iters or self.last_epoch != self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class ReduceLROnPlateau:
    """Multiplies the lr by `factor` when the metric passed to step(metric) has not
    improved for `patience` epochs (torch.optim.lr_scheduler.ReduceLROnPlateau): mode
    "min" or "max"; threshold_mode "rel" (better than best * (1 -/+ threshold)) or "abs";
    cooldown epochs after a reduction; lrs never below min_lr (a number or one per group);
    changes smaller than eps are skipped. ValueError for factor >= 1, an unknown mode or
    threshold_mode, or a min_lr list of the wrong length."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8, verbose=False):
        if factor >= 1.0:
            raise _C.ValueError("[ReduceLROnPlateau] factor should be < 1.0")
        if mode not in ("min", "max"):
            raise _C.ValueError(f"[ReduceLROnPlateau] mode {mode} is unknown")
        if threshold_mode not in ("rel", "abs"):
            raise _C.ValueError(f"[ReduceLROnPlateau] threshold mode {threshold_mode} is unknown")
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise _C.ValueError(f"[ReduceLROnPlateau] expected {n} min_lrs, got {len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * n
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps, self.verbose = cooldown, eps, verbose
        self.mode_worse = float("inf") if mode == "min" else -float("inf")
        self.best = self.mode_worse
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def is_better(self, a, best):
        """Whether metric value a improves on best (per mode and threshold)."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None):
        """Records the epoch's metric (a number or a one-element tensor) and reduces the lr
        when it has not improved for more than `patience` epochs."""
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for i, g in enumerate(self.optimizer.param_groups):
                old = float(g["lr"])
                new = max(old * self.factor, self.min_lrs[i])
                if old - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self):
        """The groups' lrs after the last step."""
        return self._last_lr

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def state_dict(self):
        """The scheduler's attributes except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restores a state_dict()."""
        self.__dict__.update(state_dict)
