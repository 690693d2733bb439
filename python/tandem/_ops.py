"""Generates tandem.<op> functions and Tensor.<op> methods from the C++ op registry.

Each registered op (tandem._C.all_ops()) becomes a function taking the op's tensor inputs
and then its attributes, by position or by name (the registry's names, which are
PyTorch's: tandem.sum(x, dim=1, keepdim=True)). Numbers are accepted where a tensor input
is expected (tandem.add(x, 2)). Ops whose first input is the tensor itself also become
Tensor methods (x.sum(1)). Names defined by hand (tandem.tensor, Tensor.to, ...) win.
"""
import collections
import inspect

from . import _C

_EMPTY = inspect.Parameter.empty
_POS = inspect.Parameter.POSITIONAL_OR_KEYWORD
# A method whose first attribute is one of these int lists also takes the ints unpacked:
# x.view(2, 3), x.permute(1, 0), x.expand(4, 3), x.repeat(2, 2).
_VARARG_LISTS = {"size", "sizes", "shape", "dims", "repeats"}


# Ops whose PyTorch positional order puts an attribute before a tensor input (tandem's
# schemas list tensor inputs first): positional arguments are matched by these names.
# In-place variants ("<name>_") follow their op.
_TORCH_ORDER = {
    "gather": ("self", "dim", "index", "sparse_grad"),
    "scatter": ("self", "dim", "index", "src", "value"),
    "scatter_add": ("self", "dim", "index", "src"),
    "scatter_reduce": ("self", "dim", "index", "src", "reduce", "include_self"),
    "index_select": ("self", "dim", "index"),
    "index_add": ("self", "dim", "index", "source", "alpha"),
    "index_copy": ("self", "dim", "index", "source"),
    "index_fill": ("self", "dim", "index", "value"),
    "index_put": ("self", "indices", "values", "accumulate"),
    "layer_norm": ("input", "normalized_shape", "weight", "bias", "eps"),
    "group_norm": ("input", "num_groups", "weight", "bias", "eps"),
}


# Ops returning (values, indices) as PyTorch's named tuples (x.max(1).values).
_RETURN_FIELDS = {name: ("values", "indices") for name in
                  ("max_dim", "min_dim", "median_dim", "sort", "topk", "kthvalue", "mode", "cummax", "cummin")}
_RETURN_TYPES = {}


def return_type(op_name):
    """The named-tuple class of op_name's outputs (tandem.return_types.<name>), or None."""
    base = op_name[:-1] if op_name.endswith("_") else op_name
    fields = _RETURN_FIELDS.get(base)
    if fields is None:
        return None
    cls = _RETURN_TYPES.get(base)
    if cls is None:
        cls = _RETURN_TYPES[base] = collections.namedtuple(base, fields)
        cls.__module__ = "tandem.return_types"
    return cls


def torch_order(op):
    """PyTorch's positional parameter names for `op` when they differ from its schema's
    order, else None."""
    return _TORCH_ORDER.get(op.name[:-1] if op.is_inplace else op.name)


def _reordered(op, order):
    n = len(order)

    def call(*args, **kwargs):
        if len(args) > n:
            raise _C.TypeError(f"[{op.name}] takes at most {n} positional arguments ({len(args)} given)")
        for name, a in zip(order, args):
            if name in kwargs:
                raise _C.TypeError(f"[{op.name}] got multiple values for argument '{name}'")
            kwargs[name] = a
        return op(**kwargs)
    return call


def _signature(op, method):
    order = torch_order(op)
    if order is not None:
        names = list(order)
        if not method and names[0] == "self":
            names[0] = "input"
        defaults = {n: d for n, d, _ in op.attrs}
        params = []
        for name in names:
            d = defaults.get(name, _EMPTY)
            if d is _EMPTY and params and params[-1].default is not _EMPTY:
                d = None
            params.append(inspect.Parameter(name, _POS, default=d))
        return inspect.Signature(params)

    params = []
    seen_default = False
    for i, (name, optional) in enumerate(op.inputs):
        pname = name
        if i == 0 and name == "self":
            pname = "self" if method else "input"
        if op.variadic and i == len(op.inputs) - 1:
            default = _EMPTY
        else:
            default = None if optional else _EMPTY
        if default is _EMPTY and seen_default:
            default = None  # display only: Python signatures need defaults to the end
        seen_default = seen_default or default is not _EMPTY
        params.append(inspect.Parameter(pname, _POS, default=default))
    for name, default, _kind in op.attrs:
        params.append(inspect.Parameter(name, _POS, default=default))
    try:
        return inspect.Signature(params)
    except ValueError:  # a duplicate name in an odd schema: no signature then
        return None


def _doc(op):
    ins = ", ".join(("list of tensors " if op.variadic and i == len(op.inputs) - 1 else "") + n +
                    (" (optional)" if opt else "") for i, (n, opt) in enumerate(op.inputs))
    attrs = ", ".join(f"{n}: {k} = {d!r}" for n, d, k in op.attrs) or "none"
    outs = "a Tensor" if op.num_outputs == 1 else f"a tuple of {op.num_outputs} Tensors"
    kind = " In place: writes into its first input and returns it." if op.is_inplace else ""
    rnd = " Draws from the default generator (tandem.manual_seed)." if op.random else ""
    return (f"The registered op `{op.name}` (PyTorch's {op.name}).{kind}{rnd}\n\n"
            f"Tensor inputs: {ins}. Numbers are accepted for tensor inputs.\n"
            f"Attributes: {attrs}.\nReturns {outs}.\n"
            "Errors: tandem.TypeError for a wrong dtype or argument kind, tandem.ShapeError for "
            "shapes that do not fit, tandem.IndexError for a dim out of range, tandem.ValueError "
            "for values out of their domain (each also derives from the Python built-in).")


def make_function(op, name=None):
    """A Python function calling `op` (a tandem._C.Op), with its signature and docstring."""
    order = torch_order(op)
    if order is not None:
        call = _reordered(op, order)

        def fn(*args, **kwargs):
            return call(*args, **kwargs)
    else:
        def fn(*args, **kwargs):
            return op(*args, **kwargs)
    rt = return_type(op.name)
    if rt is not None:
        plain = fn

        def fn(*args, **kwargs):
            return rt(*plain(*args, **kwargs))
    fn.__name__ = fn.__qualname__ = name or op.name
    fn.__module__ = "tandem"
    fn.__doc__ = _doc(op)
    sig = _signature(op, False)
    if sig is not None:
        fn.__signature__ = sig
    return fn


def make_method(op, name=None):
    """A Tensor method calling `op` with self as its first input."""
    attrs = op.attrs
    n_tensor_args = len(op.inputs) - 1
    order = torch_order(op)
    if order is not None:
        call = _reordered(op, order)

        def method(self, *args, **kwargs):
            return call(self, *args, **kwargs)
    elif attrs and attrs[0][2] == "list[int]" and attrs[0][0] in _VARARG_LISTS and n_tensor_args == 0:
        def method(self, *args, **kwargs):
            if len(args) > 1 and all(type(a) is int for a in args):
                args = (list(args),)
            return op(self, *args, **kwargs)
    else:
        def method(self, *args, **kwargs):
            return op(self, *args, **kwargs)
    rt = return_type(op.name)
    if rt is not None:
        plain_method = method

        def method(self, *args, **kwargs):
            return rt(*plain_method(self, *args, **kwargs))
    method.__name__ = method.__qualname__ = name or op.name
    method.__doc__ = _doc(op)
    sig = _signature(op, True)
    if sig is not None:
        method.__signature__ = sig
    return method


def install(namespace, tensor_class):
    """Adds a function per registered op to `namespace` and a method per op taking a
    tensor first to `tensor_class`, skipping names already defined."""
    ops = {}
    for op in _C.all_ops():
        ops[op.name] = op
        if op.name not in namespace:
            namespace[op.name] = make_function(op)
        if op.inputs and op.inputs[0][0] in ("self", "input") and not op.variadic or (
                op.variadic and len(op.inputs) > 1 and op.inputs[0][0] == "self"):
            if not hasattr(tensor_class, op.name):
                setattr(tensor_class, op.name, make_method(op))
    namespace["_registry"] = ops
