"""Parameter initialisation (torch.nn.init): tandem's C++ nn::init, so a model initialised
from Python draws exactly what the C++ API draws for the same seed.

Every function fills `tensor` in place without recording autograd, draws from the default
generator (tandem.manual_seed) and returns the same object. Fans follow PyTorch: for a
weight [out, in, *kernel], fan_in = in * prod(kernel) and fan_out = out * prod(kernel).
ValueError for a tensor with fewer than 2 dims where a fan is needed, an unknown mode or
nonlinearity.
"""
from .._C import _init

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "xavier_uniform_", "xavier_normal_",
           "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "trunc_normal_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity: "linear", "conv*", "sigmoid" 1; "tanh" 5/3;
    "relu" sqrt(2); "leaky_relu" sqrt(2 / (1 + slope^2)) (slope `param`, default 0.01);
    "selu" 3/4. ValueError for other names."""
    return _init.calculate_gain(nonlinearity, 0.01 if param is None else param)


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight tensor (ValueError below 2 dims)."""
    return _init.calculate_fan_in_and_fan_out(tensor)


def uniform_(tensor, a=0.0, b=1.0):
    """Fills with U(a, b)."""
    return _init.uniform_(tensor, a, b)


def normal_(tensor, mean=0.0, std=1.0):
    """Fills with N(mean, std^2)."""
    return _init.normal_(tensor, mean, std)


def constant_(tensor, val):
    """Fills with `val`."""
    return _init.constant_(tensor, val)


def zeros_(tensor):
    """Fills with 0."""
    return _init.zeros_(tensor)


def ones_(tensor):
    """Fills with 1."""
    return _init.ones_(tensor)


def xavier_uniform_(tensor, gain=1.0):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010)."""
    return _init.xavier_uniform_(tensor, gain)


def xavier_normal_(tensor, gain=1.0):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    return _init.xavier_normal_(tensor, gain)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a) and
    fan the fan_in or fan_out per `mode` (He et al. 2015)."""
    return _init.kaiming_uniform_(tensor, a, mode, nonlinearity)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """N(0, std^2) with std = gain / sqrt(fan) (He et al. 2015)."""
    return _init.kaiming_normal_(tensor, a, mode, nonlinearity)


def orthogonal_(tensor, gain=1.0):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal one, scaled by
    gain (Saxe et al. 2013); more than 2 dims are flattened to [size(0), rest]."""
    return _init.orthogonal_(tensor, gain)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """N(mean, std^2) truncated to [a, b] (by rejection)."""
    return _init.trunc_normal_(tensor, mean, std, a, b)
