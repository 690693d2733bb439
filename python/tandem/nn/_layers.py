"""The built-in layers beyond the first few (torch.nn's names, defaults and initialisation;
each the Python counterpart of the C++ layer of the same name in src/tandem/nn/layers.h),
the containers ModuleList / ModuleDict / ParameterList, and the loss modules."""
import collections
import math

from .. import _C
from . import functional as F
from . import Module, Parameter, _linear_like, _no_grad, _pair, _uniform


def _ones(*shape):
    return _C._ones(list(shape), None, False)


def _zeros(*shape):
    return _C._zeros(list(shape), None, False)


# ---------------------------------------------------------------- containers
class ModuleList(Module):
    """Submodules in a list, registered as "0", "1", ... (torch.nn.ModuleList); no forward.
    Indexing, len, iteration, append, extend, insert."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ModuleList(list(self._modules.values())[i])
        return self._modules[self._index(i)]

    def __setitem__(self, i, module):
        self.add_module(self._index(i), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Adds `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Appends each of `modules`; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Inserts `module` before position `index`."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """Submodules by name in insertion order (torch.nn.ModuleDict); no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules):
        """Adds the (name, module) pairs of a mapping or an iterable of pairs."""
        items = modules.items() if isinstance(modules, collections.abc.Mapping) else modules
        for k, m in items:
            self[k] = m


class ParameterList(Module):
    """Parameters in a list, registered as "0", "1", ... (torch.nn.ParameterList)."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value):
        """Adds a Parameter (a plain tensor becomes one); returns self."""
        if not isinstance(value, Parameter):
            value = Parameter(value)
        self.register_parameter(str(len(self)), value)
        return self

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())


# ---------------------------------------------------------------- linear and convolution
class Bilinear(Module):
    """y = x1^T A x2 + b (torch.nn.Bilinear): x1 [*, in1], x2 [*, in2] -> [*, out]; weight
    [out, in1, in2] and bias [out] start uniform in ±1/sqrt(in1). Errors as
    functional.bilinear."""

    def __init__(self, in1_features, in2_features, out_features, bias=True):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        bound = 1.0 / math.sqrt(in1_features) if in1_features > 0 else 0.0
        self.weight = Parameter(_uniform((out_features, in1_features, in2_features), bound))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


def _check_groups(name, in_channels, out_channels, groups):
    if groups <= 0:
        raise _C.ValueError(f"[{name}] groups must be a positive integer, got {groups}")
    if in_channels % groups or out_channels % groups:
        raise _C.ValueError(f"[{name}] in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                            f"divisible by groups ({groups})")


class Conv1d(Module):
    """1-D convolution (torch.nn.Conv1d): [N, C_in, L] or [C_in, L] -> [N, C_out, L_out];
    weight [C_out, C_in / groups, k] and bias [C_out] start uniform in ±1/sqrt(fan_in).
    padding: an int or "same" / "valid". padding_mode "zeros" (others pad with
    functional.pad first, as PyTorch). ValueError at construction for bad groups or
    padding_mode."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros"):
        super().__init__()
        _check_groups("Conv1d", in_channels, out_channels, groups)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise _C.ValueError(f"[Conv1d] padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                                f"got '{padding_mode}'")
        k = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, (k,)
        self.stride = stride if isinstance(stride, int) else stride[0]
        self.padding = padding if isinstance(padding, (int, str)) else padding[0]
        self.dilation = dilation if isinstance(dilation, int) else dilation[0]
        self.groups, self.padding_mode = groups, padding_mode
        w, b = _linear_like((out_channels, in_channels // groups, k), out_channels if bias else None)
        self.weight = Parameter(w)
        if bias:
            self.bias = Parameter(b)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        if self.padding_mode != "zeros" and not isinstance(self.padding, str) and self.padding > 0:
            input = F.pad(input, [self.padding, self.padding], self.padding_mode)
            return F.conv1d(input, self.weight, self.bias, [self.stride], [0], [self.dilation], self.groups)
        padding = self.padding if isinstance(self.padding, str) else [self.padding]
        return F.conv1d(input, self.weight, self.bias, [self.stride], padding, [self.dilation], self.groups)

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride=({self.stride},)"


class ConvTranspose2d(Module):
    """Transposed 2-D convolution (torch.nn.ConvTranspose2d): weight [C_in, C_out / groups,
    kH, kW] and bias [C_out] start uniform in ±1/sqrt(fan_in) with fan_in = C_out / groups
    * kH * kW, as PyTorch's. ValueError for bad groups or a padding_mode other than
    "zeros"."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros"):
        super().__init__()
        _check_groups("ConvTranspose2d", in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise _C.ValueError('[ConvTranspose2d] only "zeros" padding mode is supported')
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.padding = _pair(kernel_size), _pair(stride), _pair(padding)
        self.output_padding, self.dilation = _pair(output_padding), _pair(dilation)
        w, b = _linear_like((in_channels, out_channels // groups, *self.kernel_size), out_channels if bias else None)
        self.weight = Parameter(w)
        if bias:
            self.bias = Parameter(b)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={tuple(self.kernel_size)}, "
                f"stride={tuple(self.stride)}")


# ---------------------------------------------------------------- pooling
class MaxPool1d(Module):
    """Max pooling over [N, C, L] or [C, L] (torch.nn.MaxPool1d); stride defaults to
    kernel_size. return_indices: returns (values, int64 indices into L)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Average pooling over [N, C, H, W] or [C, H, W] (torch.nn.AvgPool2d); stride defaults
    to kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = _pair(kernel_size)
        self.stride = self.kernel_size if stride is None else _pair(stride)
        self.padding, self.ceil_mode = _pair(padding), ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={tuple(self.kernel_size)}, stride={tuple(self.stride)}, padding={tuple(self.padding)}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to output_size (an int or (oH, oW)) (torch.nn.AdaptiveAvgPool2d)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = _pair(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={tuple(self.output_size)}"


class AdaptiveMaxPool2d(Module):
    """Max pooling to output_size (torch.nn.AdaptiveMaxPool2d; values only)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = _pair(output_size)

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={tuple(self.output_size)}"


class MaxUnpool2d(Module):
    """Partial inverse of MaxPool2d (torch.nn.MaxUnpool2d): forward(input, indices,
    output_size=None) puts each value at its index (MaxPool2d(return_indices=True)'s) of a
    zero output; see functional.max_unpool2d."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _pair(kernel_size)
        self.stride = self.kernel_size if stride is None else _pair(stride)
        self.padding = _pair(padding)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={tuple(self.kernel_size)}, stride={tuple(self.stride)}, padding={tuple(self.padding)}"


# ---------------------------------------------------------------- normalisation
class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__()
        if num_features <= 0:
            raise _C.ValueError(f"[{type(self).__name__}] num_features must be positive, got {num_features}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_ones(num_features))
            self.bias = Parameter(_zeros(num_features))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _zeros(num_features))
            self.register_buffer("running_var", _ones(num_features))
            self.register_buffer("num_batches_tracked", _C._zeros([], _C.int64, False))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input):
        if input.dim() not in self._dims:
            raise _C.ShapeError(f"[{type(self).__name__}] expected {' or '.join(f'{d}D' for d in self._dims)} "
                                f"input (got {input.dim()}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with _no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of [N, C] or [N, C, L] over dim 1 (torch.nn.BatchNorm1d): batch
    statistics in training (running_mean / running_var move towards them by `momentum`,
    or by 1 / num_batches_tracked with momentum=None), the running ones in eval. weight
    ones, bias zeros. ValueError for num_features <= 0; ShapeError for another rank."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of [N, C, H, W] over dim 1 (torch.nn.BatchNorm2d); as
    BatchNorm1d otherwise."""
    _dims = (4,)




class LayerNorm(Module):
    """Normalisation over the trailing normalized_shape dims (torch.nn.LayerNorm); weight
    ones and bias zeros of normalized_shape when elementwise_affine."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        self.normalized_shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_ones(*self.normalized_shape))
            self.bias = Parameter(_zeros(*self.normalized_shape))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{tuple(self.normalized_shape)}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalisation of [N, C, *] in num_groups groups of channels (torch.nn.GroupNorm);
    per-channel weight ones and bias zeros when affine. ValueError when num_channels is
    not divisible by num_groups."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise _C.ValueError(f"[GroupNorm] num_channels ({num_channels}) must be divisible by num_groups "
                                f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(_ones(num_channels))
            self.bias = Parameter(_zeros(num_channels))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class Embedding(Module):
    """Lookup table (torch.nn.Embedding): int indices [*] -> [*, embedding_dim]; weight
    [num_embeddings, embedding_dim] ~ N(0, 1), the padding_idx row zero (and without
    gradient). max_norm renormalises looked-up rows in place first (as PyTorch).
    ValueError for non-positive sizes; IndexError for padding_idx out of range."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None):
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise _C.ValueError(f"[Embedding] sizes must be positive, got ({num_embeddings}, {embedding_dim})")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise _C.IndexError(f"[Embedding] padding_idx {padding_idx} must be within num_embeddings")
            padding_idx %= num_embeddings
        if sparse:
            raise _C.NotImplementedError("[Embedding] sparse gradients are not supported")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        if _weight is None:
            w = _C._randn([num_embeddings, embedding_dim], None, False)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = _weight
        self.weight = Parameter(w)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


# ---------------------------------------------------------------- activations and shapes
def _activation(name, doc, fn, params=()):
    """A parameter-free module class calling fn(input, *attributes)."""

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(zip([p for p, _ in params], args))
        for p, default in params[len(args):]:
            values[p] = kwargs.pop(p, default)
        if kwargs:
            raise _C.TypeError(f"[{name}] unexpected arguments {sorted(kwargs)}")
        for p, _ in params:
            object.__setattr__(self, p, values[p])

    def forward(self, input):
        return fn(input, *[getattr(self, p) for p, _ in params])

    def extra_repr(self):
        return ", ".join(f"{p}={getattr(self, p)}" for p, _ in params)
    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc, "__module__": "tandem.nn"})


LeakyReLU = _activation("LeakyReLU", "max(0, x) + negative_slope * min(0, x) (torch.nn.LeakyReLU).",
                        lambda x, s, inplace: F.leaky_relu(x, s), (("negative_slope", 0.01), ("inplace", False)))
GELU = _activation("GELU", "x * Phi(x); approximate 'none' or 'tanh' (torch.nn.GELU).",
                   lambda x, a: F.gelu(x, a), (("approximate", "none"),))
SiLU = _activation("SiLU", "x * sigmoid(x) (torch.nn.SiLU).", lambda x, inplace: F.silu(x), (("inplace", False),))
ELU = _activation("ELU", "x if x > 0 else alpha * (exp(x) - 1) (torch.nn.ELU).",
                  lambda x, a, inplace: F.elu(x, a), (("alpha", 1.0), ("inplace", False)))
SELU = _activation("SELU", "scale * elu(x, alpha) with PyTorch's constants (torch.nn.SELU).",
                   lambda x, inplace: F.selu(x), (("inplace", False),))
ReLU6 = _activation("ReLU6", "min(max(x, 0), 6) (torch.nn.ReLU6).", lambda x, inplace: F.relu6(x),
                    (("inplace", False),))
Mish = _activation("Mish", "x * tanh(softplus(x)) (torch.nn.Mish).", lambda x, inplace: F.mish(x),
                   (("inplace", False),))
Hardswish = _activation("Hardswish", "x * relu6(x + 3) / 6 (torch.nn.Hardswish).",
                        lambda x, inplace: F.hardswish(x), (("inplace", False),))
Hardsigmoid = _activation("Hardsigmoid", "relu6(x + 3) / 6 (torch.nn.Hardsigmoid).",
                          lambda x, inplace: F.hardsigmoid(x), (("inplace", False),))
Softplus = _activation("Softplus", "log(1 + exp(beta x)) / beta, linear above threshold (torch.nn.Softplus).",
                       lambda x, b, t: F.softplus(x, b, t), (("beta", 1.0), ("threshold", 20.0)))
LogSigmoid = _activation("LogSigmoid", "log(sigmoid(x)) (torch.nn.LogSigmoid).", lambda x: F.logsigmoid(x))
Hardtanh = _activation("Hardtanh", "x clamped to [min_val, max_val] (torch.nn.Hardtanh).",
                       lambda x, lo, hi, inplace: F.hardtanh(x, lo, hi),
                       (("min_val", -1.0), ("max_val", 1.0), ("inplace", False)))
Softmax = _activation("Softmax", "exp(x) / sum(exp(x)) along dim (torch.nn.Softmax).",
                      lambda x, d: F.softmax(x, -1 if d is None else d), (("dim", None),))
LogSoftmax = _activation("LogSoftmax", "log(softmax(x)) along dim (torch.nn.LogSoftmax).",
                         lambda x, d: F.log_softmax(x, -1 if d is None else d), (("dim", None),))
Softmin = _activation("Softmin", "softmax(-x) along dim (torch.nn.Softmin).",
                      lambda x, d: F.softmin(x, -1 if d is None else d), (("dim", None),))
Unflatten = _activation("Unflatten", "Dim `dim` split into `unflattened_size` (torch.nn.Unflatten).",
                        lambda x, d, s: x.unflatten(d, list(s)), (("dim", 0), ("unflattened_size", ())))
Upsample = _activation("Upsample", "functional.interpolate as a module (torch.nn.Upsample).",
                       lambda x, size, scale, mode, ac: F.interpolate(x, size, scale, mode, ac),
                       (("size", None), ("scale_factor", None), ("mode", "nearest"), ("align_corners", None)))


# ---------------------------------------------------------------- losses
class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction


class NLLLoss(_Loss):
    """functional.nll_loss as a module (torch.nn.NLLLoss)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, reduction=self.reduction, ignore_index=self.ignore_index)


class L1Loss(_Loss):
    """Mean (or sum, or none) of absolute differences (torch.nn.L1Loss)."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """functional.smooth_l1_loss as a module (torch.nn.SmoothL1Loss)."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """functional.huber_loss as a module (torch.nn.HuberLoss)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities (torch.nn.BCELoss)."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, with optional pos_weight (torch.nn.BCEWithLogitsLoss)."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """functional.kl_div as a module (torch.nn.KLDivLoss; input log-probabilities)."""

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


__all__ = ["ModuleList", "ModuleDict", "ParameterList", "Bilinear", "Conv1d", "ConvTranspose2d", "MaxPool1d",
           "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "MaxUnpool2d", "BatchNorm1d", "BatchNorm2d",
           "LayerNorm", "GroupNorm", "Embedding", "LeakyReLU", "GELU", "SiLU", "ELU", "SELU", "ReLU6", "Mish",
           "Hardswish", "Hardsigmoid", "Softplus", "LogSigmoid", "Hardtanh", "Softmax", "LogSoftmax", "Softmin",
           "Unflatten", "Upsample", "NLLLoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss"]
