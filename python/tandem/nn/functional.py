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
__all__ = [n for n in _NAMES if n in globals()]
