"""PyTorch functions whose overloads are separate ops in tandem's registry
(max(x) / max(x, dim) / max(x, y), clamp with numbers or tensors, ...), and functions
of the C++ API that are compositions of ops (reshape, flatten, split, ...)."""
from . import _C
from ._C import Tensor

_get = _C.get_op


def _reduce_or_dim(full_name, dim_name, pairwise):
    full, by_dim, pair = _get(full_name), _get(dim_name), _get(pairwise) if pairwise else None

    from ._ops import return_type
    rt = return_type(dim_name)

    def fn(input, dim=None, keepdim=False):
        if isinstance(dim, Tensor) and pair is not None:
            return pair(input, dim)
        if dim is None:
            return full(input)
        return rt(*by_dim(input, dim, keepdim))
    fn.__name__ = fn.__qualname__ = full_name
    fn.__doc__ = (f"{full_name}(input): the {full_name} of all elements (0-d). {full_name}(input, dim, keepdim=False): "
                  f"a tuple (values, indices) along dim (IndexError for a dim out of range)."
                  + (f" {full_name}(input, other): the elementwise {pairwise}." if pairwise else ""))
    return fn


max = _reduce_or_dim("max", "max_dim", "maximum")
min = _reduce_or_dim("min", "min_dim", "minimum")
median = _reduce_or_dim("median", "median_dim", None)

_clamp, _clamp_t = _get("clamp"), _get("clamp_tensor")
_clamp_, _clamp_t_ = _get("clamp_"), _get("clamp_tensor_")


def clamp(input, min=None, max=None):
    """Elementwise min(max(input, min), max); min and max are numbers or tensors (broadcast).
    ValueError when both are None."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_t(input, min, max)
    return _clamp(input, min, max)


def clamp_(input, min=None, max=None):
    """clamp in place; returns input."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_t_(input, min, max)
    return _clamp_(input, min, max)


clip, clip_ = clamp, clamp_


_eye = _get("eye")


def eye(n, m=None, *, dtype=None, requires_grad=False):
    """The n x m identity matrix (m defaults to n); dtype default float32.
    ValueError for a negative size."""
    t = _eye(n, n if m is None else m, dtype) if dtype is not None else _eye(n, n if m is None else m)
    if requires_grad:
        t.requires_grad_(True)
    return t


_repeat_interleave = _get("repeat_interleave")


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Repeats each element `repeats` times (an int, or a tensor of counts per element)
    along dim (flattened when dim is None)."""
    if isinstance(repeats, Tensor):
        return _repeat_interleave(input, repeats, None, dim, output_size)
    return _repeat_interleave(input, None, repeats, dim, output_size)


_unique = _get("unique")


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (sorted); with return_inverse/return_counts also the index of
    each input element in them and the count of each, as torch.unique returns them."""
    values, inverse, counts = _unique(input, sorted, return_inverse, return_counts, dim)
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


_einsum = _get("einsum")


def einsum(equation, *operands):
    """Sums products of the operands' elements as the subscripts in `equation` say
    ("ij,jk->ik" is a matrix product). Operands as arguments or one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _einsum(list(operands), equation)


_where, _nonzero = _get("where"), _get("nonzero")


def where(condition, input=None, other=None):
    """where(condition, input, other): input where condition, else other (numbers or
    tensors, broadcast). where(condition): the indices of the true elements, one int64
    tensor per dim (nonzero(condition, as_tuple=True))."""
    if input is None and other is None:
        return tuple(_nonzero(condition).unbind(1))
    return _where(condition, input, other)


def _method(name):
    return lambda input, *args, **kwargs: getattr(input, name)(*args, **kwargs)


def _function(name, doc):
    f = _method(name)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


reshape = _function("reshape", "reshape(input, shape): see Tensor.reshape.")
flatten = _function("flatten", "flatten(input, start_dim=0, end_dim=-1): see Tensor.flatten.")
unflatten = _function("unflatten", "unflatten(input, dim, sizes): see Tensor.unflatten.")
t = _function("t", "t(input): transpose of a tensor of at most 2 dims.")
narrow = _function("narrow", "narrow(input, dim, start, length): see Tensor.narrow.")
split = _function("split", "split(tensor, split_size_or_sections, dim=0): see Tensor.split.")
chunk = _function("chunk", "chunk(input, chunks, dim=0): see Tensor.chunk.")
unbind = _function("unbind", "unbind(input, dim=0): see Tensor.unbind.")
broadcast_to = _function("broadcast_to", "broadcast_to(input, size): see Tensor.broadcast_to.")

FUNCTIONS = {"max": max, "min": min, "median": median, "clamp": clamp, "clamp_": clamp_, "clip": clip,
             "clip_": clip_, "reshape": reshape, "flatten": flatten, "unflatten": unflatten, "t": t,
             "narrow": narrow, "split": split, "chunk": chunk, "unbind": unbind, "broadcast_to": broadcast_to,
             "eye": eye, "repeat_interleave": repeat_interleave, "unique": unique, "einsum": einsum,
             "where": where}
METHODS = {"max": max, "min": min, "median": median, "clamp": clamp, "clamp_": clamp_, "clip": clip, "clip_": clip_,
           "repeat_interleave": repeat_interleave, "unique": unique}


def install(namespace, tensor_class):
    """Puts the overloads in `namespace` and on `tensor_class` (before the generated ops)."""
    namespace.update(FUNCTIONS)
    for name, fn in METHODS.items():
        setattr(tensor_class, name, fn)
