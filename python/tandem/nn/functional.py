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
          "instance_norm", "embedding", "one_hot", "pad", "logsigmoid"]


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
    """Rows of weight (num_embeddings, dim) picked by the int64 indices `input` (any
    shape) -> input.shape + (dim,). padding_idx's row gets no gradient. IndexError for an
    index out of range; tandem.NotImplementedError for max_norm or sparse."""
    if max_norm is not None or sparse:
        raise _C.NotImplementedError("[embedding] max_norm and sparse are not supported")
    return _embedding_op(weight, input, padding_idx, scale_grad_by_freq)


__all__ = [n for n in _NAMES if n in globals()]
