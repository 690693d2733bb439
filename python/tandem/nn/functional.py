"""torch.nn.functional's counterparts: the registered nn ops under their PyTorch names.

Each is the registered op of that name (see tandem.<name>.__doc__ for its inputs and
attributes), e.g. linear(input, weight, bias=None), relu(input), softmax(input, dim),
cross_entropy(input, target, weight=None, reduction='mean', ignore_index=-100,
label_smoothing=0.0), mse_loss(input, target, reduction='mean').
"""
from .. import _C

_NAMES = ["linear", "relu", "relu6", "elu", "selu", "gelu", "silu", "mish", "leaky_relu", "hardswish",
          "hardsigmoid", "softplus", "sigmoid", "tanh", "softmax", "log_softmax", "dropout", "cross_entropy",
          "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
          "binary_cross_entropy_with_logits", "kl_div", "conv1d", "conv2d", "conv_transpose2d", "max_pool2d",
          "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "layer_norm", "group_norm", "batch_norm",
          "instance_norm", "embedding", "one_hot", "pad", "max_pool2d_with_indices"]


def _install():
    from .._ops import make_function
    g = globals()
    for name in _NAMES:
        try:
            op = _C.get_op(name)
        except _C.ValueError:
            continue  # not registered in this build
        g[name] = make_function(op)


_install()
_dropout_op, _embedding_op = _C.get_op("dropout"), _C.get_op("embedding")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1/(1-p) when
    training (identity otherwise), drawing from the default generator. ValueError for p
    outside [0, 1]; tandem.NotImplementedError for inplace=True."""
    if inplace:
        raise _C.NotImplementedError("[dropout] inplace=True is not supported")
    return _dropout_op(input, p, training)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of weight (num_embeddings, dim) picked by the int indices `input` (any shape)
    -> input.shape + (dim,). padding_idx's row gets no gradient. max_norm: the looked-up
    rows whose norm_type-norm exceeds it are first rescaled to it, in place and without
    gradient (embedding_renorm_), as PyTorch. IndexError for an index out of range;
    tandem.NotImplementedError for sparse."""
    if sparse:
        raise _C.NotImplementedError("[embedding] sparse gradients are not supported")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    return _embedding_op(weight, input, padding_idx, scale_grad_by_freq)


def embedding_renorm_(weight, input, max_norm, norm_type=2.0):
    """Rescales in place, without recording gradients, the rows of weight [V, D] that the
    int indices `input` pick and whose norm_type-norm exceeds max_norm, to max_norm
    (row *= max_norm / (norm + 1e-7)); returns weight. ShapeError unless weight is 2-D;
    TypeError for non-integer indices; IndexError for an index outside [0, V)."""
    return _C._embedding_renorm_(weight, input, max_norm, norm_type)


def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b: input1 [*, in1], input2 [*, in2] (same leading dims), weight
    [out, in1, in2], bias [out] or None -> [*, out]. ShapeError for mismatched sizes;
    TypeError for mixed dtypes (torch.nn.functional.bilinear)."""
    return _C._bilinear(input1, input2, weight, bias)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p along dim, eps): each slice along dim scaled to unit p-norm
    (torch.nn.functional.normalize). Floating input; IndexError for a bad dim."""
    return _C._normalize(input, p, dim, eps)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resizes the spatial dims of input [N, C, spatial...] to `size` or by `scale_factor`
    (exactly one; an int/float or one per spatial dim): mode "nearest" (3-5-D input) or
    "bilinear" (4-D). ValueError for bad arguments (torch.nn.functional.interpolate)."""
    nsp = input.dim() - 2
    if size is not None and isinstance(size, int):
        size = [size] * nsp
    if scale_factor is not None and isinstance(scale_factor, (int, float)):
        scale_factor = [float(scale_factor)] * nsp
    return _C._interpolate(input, None if size is None else list(size),
                           None if scale_factor is None else [float(v) for v in scale_factor], mode, align_corners)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling over [N, C, L] or [C, L] -> [..., L_out] (stride defaults to
    kernel_size): max_pool2d over a height of 1, as PyTorch. return_indices: also the
    int64 indices into L. ShapeError for other ranks."""
    if input.dim() not in (2, 3):
        raise _C.ShapeError(f"[max_pool1d] expected a 2D or 3D input, got {input.dim()}D input of shape "
                            f"{tuple(input.shape)}")
    first = lambda v: v if isinstance(v, int) else v[0]  # noqa: E731
    k = first(kernel_size)
    s = k if stride is None or stride == [] else first(stride)
    values, indices = max_pool2d_with_indices(input.unsqueeze(-2), [1, k], [1, s], [0, first(padding)],
                                              [1, first(dilation)], ceil_mode)
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool2d: each value of input [N, C, H, W] (or [C, H, W]) goes
    to its index (int64, input's shape, flattened over each output plane) of a zero output
    [N, C, OH, OW], OH = (H - 1) stride - 2 padding + kernel (likewise OW) or the last two
    of output_size. Differentiable in input. ShapeError for another rank or indices of
    another shape; TypeError for non-int64 indices; ValueError for an output_size outside
    (default - stride, default + stride)."""
    from .. import _creation
    k = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
    st = k if stride is None else ([stride] * 2 if isinstance(stride, int) else list(stride))
    pd = [padding] * 2 if isinstance(padding, int) else list(padding)
    if input.dim() not in (3, 4):
        raise _C.ShapeError(f"[max_unpool2d] expected a 3D or 4D input, got {input.dim()}D input of shape "
                            f"{tuple(input.shape)}")
    if indices.dtype is not _C.int64:
        raise _C.TypeError(f"[max_unpool2d] got indices of dtype {indices.dtype.name}, expected int64")
    if tuple(indices.shape) != tuple(input.shape):
        raise _C.ShapeError(f"[max_unpool2d] got indices of shape {tuple(indices.shape)}, expected the input's "
                            f"shape {tuple(input.shape)}")
    h, w = input.shape[-2], input.shape[-1]
    out = [(h - 1) * st[0] - 2 * pd[0] + k[0], (w - 1) * st[1] - 2 * pd[1] + k[1]]
    if output_size is not None:
        want = list(output_size)[-2:]
        for d in range(2):
            if not out[d] - st[d] < want[d] < out[d] + st[d]:
                raise _C.ValueError(f"[max_unpool2d] got output_size {tuple(output_size)}, expected sizes between "
                                    f"{out[0] - st[0] + 1}x{out[1] - st[1] + 1} and "
                                    f"{out[0] + st[0] - 1}x{out[1] + st[1] - 1}")
        out = want
    planes = input.numel() // max(h * w, 1)
    flat = _creation.zeros(planes, out[0] * out[1], dtype=input.dtype)
    y = flat.scatter(1, indices.reshape(planes, h * w), input.reshape(planes, h * w))
    return y.reshape(*input.shape[:-2], out[0], out[1])


_nll_loss_op, _adaptive_max_pool2d_op = _C.get_op("nll_loss"), _C.get_op("adaptive_max_pool2d")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of log-probabilities input [N, C] (or [N, C, d...]) at the
    int64 class indices target [N] (or [N, d...]), weighted per class by weight [C];
    reduction "mean" (weighted), "sum" or "none"; targets equal to ignore_index count
    for nothing (torch.nn.functional.nll_loss). size_average / reduce (deprecated) are
    not supported (tandem.NotImplementedError unless None). Errors of the nll_loss op
    (IndexError for a class out of range, ShapeError for mismatched shapes)."""
    if size_average is not None or reduce is not None:
        raise _C.NotImplementedError("[nll_loss] size_average and reduce are deprecated; use reduction")
    return _nll_loss_op(input, target, weight, reduction, ignore_index)[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling of [N, C, H, W] (or [C, H, W]) to output_size (an int or (oH, oW)):
    the values, or (values, int64 indices) with return_indices
    (torch.nn.functional.adaptive_max_pool2d)."""
    size = [output_size] * 2 if isinstance(output_size, int) else list(output_size)
    values, indices = _adaptive_max_pool2d_op(input, size)
    return (values, indices) if return_indices else values


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), elementwise (torch.nn.functional.logsigmoid)."""
    return -softplus(-input)


def softmin(input, dim=None, dtype=None):
    """softmax(-input) along dim (torch.nn.functional.softmin)."""
    return softmax(-input, -1 if dim is None else dim, dtype)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """input clamped to [min_val, max_val] (torch.nn.functional.hardtanh)."""
    return input.clamp(min_val, max_val)


__all__ = [n for n in _NAMES if n in globals()] + [
    "embedding_renorm_", "bilinear", "normalize", "interpolate", "max_pool1d", "max_unpool2d", "softmin", "hardtanh"]
