"""torch.nn.utils' counterparts: gradient clipping (tandem's C++ clip_grad_norm_ /
clip_grad_value_) and flattening parameters to one vector."""
from .. import _C

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _params(parameters):
    return [parameters] if isinstance(parameters, _C.Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients of `parameters` (a tensor or an iterable; those without .grad
    are skipped) in place so that their total norm_type-norm (of all gradients
    concatenated; inf: the max |g|) is at most max_norm: each is multiplied by
    min(max_norm / (total + 1e-6), 1). Returns the total norm before clipping as a 0-d
    tensor of the gradients' dtype (float32 when none has a gradient). RuntimeError when
    error_if_nonfinite and the total is NaN or infinite (gradients left unchanged)."""
    ps = _params(parameters)
    total = _C.clip_grad_norm_(ps, float(max_norm), float(norm_type), error_if_nonfinite)
    grads = [p.grad for p in ps if p.grad is not None]
    dtype = grads[0].dtype if grads else _C.float32
    return _C._full([], total, dtype, False)


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient of `parameters` into [-clip_value, clip_value] in place."""
    _C.clip_grad_value_(_params(parameters), float(clip_value))


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one 1-D tensor (a copy)."""
    import tandem
    return tandem.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of the 1-D `vec` into the parameters (in place, without
    recording). ValueError when vec's length differs from the parameters' total size."""
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != total:
        raise _C.ValueError(f"[vector_to_parameters] expected a 1-D tensor of {total} elements, got shape "
                            f"{tuple(vec.shape)}")
    prev = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        offset = 0
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(tuple(p.shape)))
            offset += n
    finally:
        _C.set_grad_enabled(prev)
