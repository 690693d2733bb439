"""Neural-network modules (torch.nn): Module subclassable in Python (hooks, to(dtype),
state_dict, ...), Parameter, the built-in layers, containers and losses, nn.functional
and nn.init. Layers compute with tandem's registered ops, so autograd and tandem.compile
see them."""
import collections
import math

from .. import _C
from .._C import Tensor
from . import functional

__all__ = ["Parameter", "Module", "Linear", "Conv2d", "ReLU", "Tanh", "Sigmoid", "Identity", "Flatten", "Dropout",
           "MaxPool2d", "Sequential", "CrossEntropyLoss", "MSELoss", "functional", "init"]


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
        object.__setattr__(self, "_forward_pre_hooks", collections.OrderedDict())
        object.__setattr__(self, "_forward_hooks", collections.OrderedDict())
        object.__setattr__(self, "_backward_hooks", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() is called")
        if name in self._buffers and (value is None or isinstance(value, Tensor)) and not isinstance(value, Parameter):
            self._buffers[name] = value  # a registered buffer stays one (self.running_mean = ...)
            return
        if name in self._parameters and value is None:
            self._parameters[name] = None
            return
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self.__dict__.pop(name, None)
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
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks):
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        bw = None
        if self._backward_hooks and _C.is_grad_enabled():
            bw = _BackwardHookCall(self, list(self._backward_hooks.values()))
            args = bw.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            r = hook(self, args, out)
            if r is not None:
                out = r
        if bw is not None:
            out = bw.wrap_outputs(out)
        return out

    def register_forward_pre_hook(self, hook):
        """Calls hook(module, args) before each forward (args: the positional arguments as
        a tuple). A return value other than None replaces the arguments (a tuple, or one
        value that becomes a 1-tuple). Returns a handle whose remove() unregisters it
        (torch.nn.Module.register_forward_pre_hook). Exceptions propagate from the call."""
        return _RemovableHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """Calls hook(module, args, output) after each forward; a return value other than
        None replaces the output. Returns a handle with remove()
        (torch.nn.Module.register_forward_hook)."""
        return _RemovableHandle(self._forward_hooks, hook)

    def register_full_backward_hook(self, hook):
        """Calls hook(module, grad_input, grad_output) during backward, once the gradients
        with respect to the module's tensor inputs are computed (tuples; None for an
        input that does not require grad). A return value other than None replaces
        grad_input (a tuple of the same length). Set up for calls made with grad mode on
        whose inputs or outputs require grad; calls with keyword tensor arguments or
        non-tensor outputs other than a tuple of tensors are not supported (the hook then
        sees only the positional tensors). Returns a handle with remove()
        (torch.nn.Module.register_full_backward_hook)."""
        return _RemovableHandle(self._backward_hooks, hook)

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a tensor that is state but not a parameter (in state_dict, not in
        parameters()); None reserves the name. persistent=False keeps it out of
        state_dict. KeyError for a name already used by a parameter or submodule."""
        if name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)

    def register_parameter(self, name, param):
        """Adds `param` (a Parameter or None) under `name`. TypeError for anything else."""
        if param is not None and not isinstance(param, Parameter):
            raise _C.TypeError(f"[register_parameter] cannot assign '{type(param).__name__}' object to parameter "
                               f"'{name}' (tandem.nn.Parameter or None required)")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a submodule (a Module or None) under `name`."""
        if module is not None and not isinstance(module, Module):
            raise _C.TypeError(f"[add_module] {type(module).__name__} is not a Module subclass")
        self.__dict__.pop(name, None)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at dotted path `target` ("" is self). AttributeError naming the
        missing part otherwise."""
        m = self
        if target == "":
            return m
        for part in target.split("."):
            sub = m._modules.get(part) if isinstance(m, Module) else None
            if sub is None:
                raise AttributeError(f"{type(m).__name__} has no attribute `{part}`")
            m = sub
        return m

    def get_parameter(self, target):
        """The parameter at dotted path `target` ("fc1.weight"); AttributeError otherwise."""
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod)
        if name not in m._parameters:
            raise AttributeError(f"{type(m).__name__} has no parameter `{name}`")
        return m._parameters[name]

    def get_buffer(self, target):
        """The buffer at dotted path `target`; AttributeError otherwise."""
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod)
        if name not in m._buffers:
            raise AttributeError(f"{type(m).__name__} has no buffer `{name}`")
        return m._buffers[name]

    def named_children(self):
        """(name, module) of the direct submodules."""
        return iter(self._modules.items())

    def children(self):
        """The direct submodules."""
        return iter(self._modules.values())

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(qualified name, module) of this module and every submodule, depth first; a
        module reachable twice is listed once unless remove_duplicate is False."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        """This module and every submodule."""
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix="", recurse=True):
        """(qualified name, Parameter) of the parameters, each once."""
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for n, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield mp + ("." if mp else "") + n, p

    def parameters(self, recurse=True):
        """The parameters (each once), for an optimizer."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        """(qualified name, tensor) of the buffers."""
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for n, b in m._buffers.items():
                if b is not None:
                    yield mp + ("." if mp else "") + n, b

    def buffers(self, recurse=True):
        """The buffers."""
        return (b for _, b in self.named_buffers(recurse=recurse))

    def requires_grad_(self, requires_grad=True):
        """Sets requires_grad on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def to(self, *args, **kwargs):
        """Converts the floating parameters and buffers (and their .grad) to a floating
        dtype in place, keeping each tensor's identity (so optimizers built earlier keep
        updating them), as torch.nn.Module.to(dtype); returns self. Accepts a dtype, a
        tensor (its dtype), dtype=, and the device "cpu" (a no-op: tandem runs on the
        CPU). TypeError for a non-floating dtype; tandem.NotImplementedError for another
        device."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise _C.TypeError(f"[Module.to] unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str) or a is None:
                device = a
            else:
                raise _C.TypeError(f"[Module.to] expected a dtype, a tensor or a device, got {type(a).__name__}")
        if device is not None and str(device).split(":")[0] != "cpu":
            raise _C.NotImplementedError(f"[Module.to] device '{device}': tandem runs on the CPU only")
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise _C.TypeError(f"[Module.to] got {dtype.name}, expected a floating dtype (only floating "
                               "parameters and buffers are converted)")
        with _no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if t.is_floating_point() and t.dtype != dtype:
                    t.data = t.detach().to(dtype)
                    g = t.grad
                    if g is not None and g.dtype != dtype:
                        g.data = g.detach().to(dtype)
        return self

    def float(self):
        """to(tandem.float32)."""
        return self.to(_C.float32)

    def double(self):
        """to(tandem.float64)."""
        return self.to(_C.float64)

    def half(self):
        """to(tandem.float16)."""
        return self.to(_C.float16)

    def bfloat16(self):
        """to(tandem.bfloat16)."""
        return self.to(_C.bfloat16)

    def cpu(self):
        """self (tandem runs on the CPU)."""
        return self

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

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """OrderedDict of qualified name -> tensor: each module's parameters, then its
        persistent buffers, then its submodules' entries (PyTorch's order), detached and
        sharing memory (the tensors themselves with keep_vars)."""
        out = collections.OrderedDict() if destination is None else destination
        for n, p in self._parameters.items():
            if p is not None:
                out[prefix + n] = p if keep_vars else p.detach()
        skip = self.__dict__.get("_non_persistent", ())
        for n, b in self._buffers.items():
            if b is not None and n not in skip:
                out[prefix + n] = b if keep_vars else b.detach()
        for n, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + n + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies tensors into the parameters and buffers with the same names. With strict,
        KeyError for missing or unexpected names; ShapeError for shapes that differ."""
        own = self.state_dict(keep_vars=True)
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
                    if not isinstance(src, Tensor):
                        raise _C.TypeError(f"[load_state_dict] '{k}': expected a Tensor, got {type(src).__name__}")
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


class _no_grad:
    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(False)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False


class _RemovableHandle:
    """Returned by the register_*_hook methods: remove() unregisters the hook (idempotent);
    usable as a context manager that removes it at exit."""
    _next_id = 0

    def __init__(self, hooks, hook):
        self._hooks = hooks
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1
        hooks[self.id] = hook

    def remove(self):
        """Unregisters the hook."""
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


class _BackwardHookCall:
    """One module call with full backward hooks: identity autograd functions around the
    tensor inputs (their backward runs the hooks with the input gradients) and the
    outputs (their backward records the output gradients first)."""

    def __init__(self, module, hooks):
        self.module, self.hooks = module, hooks
        self.grad_outputs = None
        self.inputs_wrapped = False

    def run_hooks(self, grad_input):
        for hook in self.hooks:
            r = hook(self.module, grad_input, self.grad_outputs)
            if r is not None:
                r = _as_tuple(r)
                if len(r) != len(grad_input):
                    raise _C.RuntimeError(f"[backward hook] returned {len(r)} gradients, expected {len(grad_input)}")
                grad_input = r
        return grad_input

    def wrap_inputs(self, args):
        from ..autograd import Function
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not any(args[i].requires_grad for i in idx):
            return args
        call = self

        class _HookIn(Function):
            @staticmethod
            def forward(ctx, *tensors):
                return tuple(t.view_as(t) for t in tensors)

            @staticmethod
            def backward(ctx, *grads):
                return call.run_hooks(grads)
        out = _as_tuple(_HookIn.apply(*[args[i] for i in idx]))
        args = list(args)
        for i, t in zip(idx, out):
            args[i] = t
        self.inputs_wrapped = True
        return tuple(args)

    def wrap_outputs(self, out):
        from ..autograd import Function
        tensors = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, tuple) else []
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            return out
        if not any(t.requires_grad for t in tensors):
            return out
        call = self

        class _HookOut(Function):
            @staticmethod
            def forward(ctx, *ts):
                return tuple(t.view_as(t) for t in ts)

            @staticmethod
            def backward(ctx, *grads):
                call.grad_outputs = grads
                if not call.inputs_wrapped:
                    call.run_hooks(())
                return grads
        wrapped = _as_tuple(_HookOut.apply(*tensors))
        return wrapped[0] if isinstance(out, Tensor) else tuple(wrapped)


def _uniform(shape, bound):
    # U(-bound, bound) from the default generator through the C++ init::uniform_, so a
    # Python layer draws what its C++ counterpart draws for the same seed.
    t = _C._empty(list(shape), None, False)
    _C._init.uniform_(t, -bound, bound)
    return t


def _linear_like(weight_shape, bias_size):
    # PyTorch's default init of Linear and the convolutions, the way the C++ layers make it
    # (nn/layers.cpp reset_linear_like): kaiming_uniform_(a=sqrt(5)) on the weight, then a
    # bias of `bias_size` (None: no bias) U(+-1/sqrt(fan_in)) with fan_in computed from the
    # weight. The same generator calls as the C++ layer, so the same values for the same
    # seed. Returns (weight, bias or None).
    w = _C._empty(list(weight_shape), None, False)
    _C._init.kaiming_uniform_(w, math.sqrt(5), "fan_in", "leaky_relu")
    if bias_size is None:
        return w, None
    fan_in = _C._init.calculate_fan_in_and_fan_out(w)[0]
    return w, _uniform((bias_size,), 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0)


class Linear(Module):
    """y = x @ weight.T + bias (torch.nn.Linear). x: (..., in_features) -> (..., out_features).
    weight (out_features, in_features) and bias (out_features) start uniform in
    ±1/sqrt(in_features), as PyTorch's. ShapeError when x's last dim is not in_features."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        w, b = _linear_like((out_features, in_features), out_features if bias else None)
        self.weight = Parameter(w)
        if bias:
            self.bias = Parameter(b)
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
        w, b = _linear_like((out_channels, in_channels // groups, *self.kernel_size), out_channels if bias else None)
        self.weight = Parameter(w)
        if bias:
            self.bias = Parameter(b)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={tuple(self.kernel_size)}, "
                f"stride={tuple(self.stride)}")


class MaxPool2d(Module):
    """Max over kernel_size windows every stride (default kernel_size) positions
    (torch.nn.MaxPool2d): (N, C, H, W) -> (N, C, H', W'). return_indices: returns
    (values, int64 indices flattened over each H x W plane), for MaxUnpool2d."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = _pair(kernel_size)
        self.stride = self.kernel_size if stride is None else _pair(stride)
        self.padding, self.dilation, self.ceil_mode = _pair(padding), _pair(dilation), ceil_mode
        self.return_indices = return_indices

    def forward(self, input):
        if self.return_indices:
            return functional.max_pool2d_with_indices(input, self.kernel_size, self.stride, self.padding,
                                                      self.dilation, self.ceil_mode)
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


from ._layers import *  # noqa: E402,F401,F403
from ._layers import __all__ as _layers_all  # noqa: E402
from . import init, utils  # noqa: E402
from ._cpp import CppModule  # noqa: E402
from . import models  # noqa: E402

__all__ += _layers_all + ["utils", "CppModule", "models"]
