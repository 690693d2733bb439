"""Neural-network modules (torch.nn): Module subclassable in Python, Parameter, and the
first layers (Linear, ReLU, Sequential). Layers compute with tandem's registered ops, so
autograd and tandem.compile see them."""
import collections
import math

from .. import _C
from .._C import Tensor
from . import functional

__all__ = ["Parameter", "Module", "Linear", "Conv2d", "ReLU", "Tanh", "Sigmoid", "Identity", "Flatten", "Dropout",
           "MaxPool2d", "Sequential", "CrossEntropyLoss", "MSELoss", "functional"]


class Parameter(Tensor):
    """A tensor that is a module's parameter: a leaf with requires_grad True (unless
    requires_grad=False), found by Module.parameters() when assigned as an attribute.
    Shares memory with `data`."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C._empty([0], None, False)
        Tensor.__init__(self, data.detach())
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


class Module:
    """Base class of modules (torch.nn.Module). Subclass it, assign Parameters, Modules
    and (register_buffer) buffers as attributes in __init__, and write forward().
    Calling the module calls forward."""

    def __init__(self):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() is called")
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def forward(self, *args, **kwargs):
        """The computation; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def register_buffer(self, name, tensor):
        """Adds a tensor that is state but not a parameter (in state_dict, not in parameters())."""
        self._buffers[name] = tensor

    def register_parameter(self, name, param):
        """Adds `param` (a Parameter or None) under `name`."""
        self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a submodule under `name`."""
        self._modules[name] = module

    def named_children(self):
        """(name, module) of the direct submodules."""
        return iter(self._modules.items())

    def children(self):
        """The direct submodules."""
        return iter(self._modules.values())

    def named_modules(self, prefix=""):
        """(qualified name, module) of this module and every submodule, depth first."""
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(prefix + ("." if prefix else "") + name)

    def modules(self):
        """This module and every submodule."""
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix="", recurse=True):
        """(qualified name, Parameter) of the parameters, each once."""
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for n, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield mp + ("." if mp else "") + n, p

    def parameters(self, recurse=True):
        """The parameters (each once), for an optimizer."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix=""):
        """(qualified name, tensor) of the buffers."""
        for mp, m in self.named_modules(prefix):
            for n, b in m._buffers.items():
                if b is not None:
                    yield mp + ("." if mp else "") + n, b

    def buffers(self):
        """The buffers."""
        return (b for _, b in self.named_buffers())

    def train(self, mode=True):
        """Sets training mode on this module and its submodules; returns self."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """train(False)."""
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Clears the parameters' .grad (None, or zeros in place)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def state_dict(self):
        """OrderedDict of qualified name -> tensor (parameters and buffers, detached,
        sharing memory)."""
        out = collections.OrderedDict()
        for n, p in self.named_parameters():
            out[n] = p.detach()
        for n, b in self.named_buffers():
            out[n] = b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies tensors into the parameters and buffers with the same names. With strict,
        KeyError for missing or unexpected names; ShapeError for shapes that differ."""
        own = dict(self.named_parameters())
        own.update(self.named_buffers())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        prev = _C.is_grad_enabled()
        _C.set_grad_enabled(False)
        try:
            for k, t in own.items():
                if k in state_dict:
                    src = state_dict[k]
                    if tuple(src.shape) != tuple(t.shape):
                        raise _C.ShapeError(f"[load_state_dict] '{k}': shape {tuple(src.shape)} in the state dict, "
                                            f"{tuple(t.shape)} in the module")
                    _copy_(t, src)
        finally:
            _C.set_grad_enabled(prev)
        return missing, unexpected

    def apply(self, fn):
        """Calls fn on every submodule, then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def extra_repr(self):
        """The text inside this module's parentheses in repr()."""
        return ""

    def __repr__(self):
        lines = [f"({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items()]
        head = type(self).__name__ + "(" + self.extra_repr()
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


_copy_ = _C.get_op("copy_")


def _uniform(shape, bound):
    # U(-bound, bound) from the default generator, as PyTorch's default Linear init.
    return _C._rand(list(shape), None, False) * (2 * bound) - bound


class Linear(Module):
    """y = x @ weight.T + bias (torch.nn.Linear). x: (..., in_features) -> (..., out_features).
    weight (out_features, in_features) and bias (out_features) start uniform in
    ±1/sqrt(in_features), as PyTorch's. ShapeError when x's last dim is not in_features."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(_uniform((out_features, in_features), bound))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ReLU(Module):
    """max(x, 0) elementwise (torch.nn.ReLU); any shape, floating or integer dtypes."""

    def forward(self, input):
        return functional.relu(input)


class Sequential(Module):
    """Calls its modules in order, each on the previous one's output (torch.nn.Sequential)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __iter__(self):
        return iter(self._modules.values())


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


class Conv2d(Module):
    """2-d convolution (torch.nn.Conv2d): (N, in_channels, H, W) -> (N, out_channels, H', W').
    weight (out_channels, in_channels // groups, kH, kW) and bias start uniform in
    ±1/sqrt(fan_in), as PyTorch's. ShapeError when the input's channels differ."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
        super().__init__()
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        fan_in = (in_channels // groups) * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = Parameter(_uniform((out_channels, in_channels // groups, *self.kernel_size), bound))
        if bias:
            self.bias = Parameter(_uniform((out_channels,), bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={tuple(self.kernel_size)}, "
                f"stride={tuple(self.stride)}")


class MaxPool2d(Module):
    """Max over kernel_size windows every stride (default kernel_size) positions
    (torch.nn.MaxPool2d): (N, C, H, W) -> (N, C, H', W')."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        super().__init__()
        self.kernel_size = _pair(kernel_size)
        self.stride = self.kernel_size if stride is None else _pair(stride)
        self.padding, self.dilation, self.ceil_mode = _pair(padding), _pair(dilation), ceil_mode

    def forward(self, input):
        return functional.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        return f"kernel_size={tuple(self.kernel_size)}, stride={tuple(self.stride)}"


class Tanh(Module):
    """tanh elementwise (torch.nn.Tanh)."""

    def forward(self, input):
        return functional.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise (torch.nn.Sigmoid)."""

    def forward(self, input):
        return functional.sigmoid(input)


class Identity(Module):
    """Returns its input (torch.nn.Identity)."""

    def forward(self, input):
        return input


class Flatten(Module):
    """Dims start_dim..end_dim merged into one (torch.nn.Flatten; default all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Zeroes elements with probability p and scales the rest by 1/(1-p) in training mode;
    the identity in eval mode (torch.nn.Dropout)."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, input):
        return functional.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class CrossEntropyLoss(Module):
    """functional.cross_entropy as a module: logits (N, C) and int64 targets (N) -> loss
    (torch.nn.CrossEntropyLoss)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input, target):
        return functional.cross_entropy(input, target, self.weight, self.reduction, self.ignore_index,
                                        self.label_smoothing)


class MSELoss(Module):
    """Mean (or sum, or none) of squared differences (torch.nn.MSELoss)."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return functional.mse_loss(input, target, self.reduction)
