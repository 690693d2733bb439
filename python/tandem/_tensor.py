"""Tensor methods written in Python: dtype conversions and small conveniences."""
from . import _C
from ._C import Tensor


def _converter(dt, name):
    def convert(self):
        return self.to(dt)
    convert.__name__ = name
    convert.__doc__ = f"self.to(tandem.{dt.name}): a copy in {dt.name}, or self when it already is."
    return convert


for _name, _dt in (("float", _C.float32), ("double", _C.float64), ("half", _C.float16),
                   ("bfloat16", _C.bfloat16), ("long", _C.int64), ("int", _C.int32), ("short", _C.int16),
                   ("char", _C.int8), ("byte", _C.uint8), ("bool", _C.bool)):
    setattr(Tensor, _name, _converter(_dt, _name))


def _type_as(self, other):
    """self converted to other's dtype."""
    return self.to(other.dtype)


def _T(self):
    """The dims reversed (a view): for a matrix, its transpose."""
    return self.permute(list(range(self.dim() - 1, -1, -1)))


def _mT(self):
    """The last two dims swapped (a view); RuntimeError below 2 dims."""
    return self.transpose(-2, -1)


Tensor.type_as = _type_as
Tensor.T = property(_T)
Tensor.mT = property(_mT)
# numpy defers to Tensor's reflected operators (np.float64(2) * t is a Tensor).
Tensor.__array_priority__ = 1000


def _contains(self, element):
    """`element in tensor`: whether any element equals it (a number or a tensor)."""
    return bool((self == element).any())


def _format(self, spec):
    """format() of a one-element tensor formats its value (f"{loss:.3f}"); others use repr."""
    if self.dim() == 0:
        return format(self.item(), spec)
    return format(repr(self), spec)


Tensor.__contains__ = _contains
Tensor.__format__ = _format


def _init_subclass(cls, **kwargs):
    """A Python subclass (nn.Parameter, a user's) gets Tensor's C++ operator slots for
    the operators it does not override, so `x + p` costs what `x + y` does."""
    super(Tensor, cls).__init_subclass__(**kwargs)
    _C._inherit_operator_slots(cls)


Tensor.__init_subclass__ = classmethod(_init_subclass)


def _rebuild(array, dtype_name, requires_grad):
    """Unpickles a tensor: a copy of `array` converted to the dtype named."""
    t = _C.from_numpy(array).clone().to(_C.dtype_from_name(dtype_name))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce(self):
    """Pickles the values, dtype and requires_grad (not the autograd history)."""
    d = self.detach()
    if d.dtype is _C.bfloat16:
        d = d.to(_C.float32)  # exact: every bfloat16 is a float32
    return (_rebuild, (d.numpy().copy(), self.dtype.name, self.requires_grad))


def _deepcopy(self, memo):
    """A copy with its own memory, the same requires_grad and no history (as a leaf)."""
    t = self.detach().clone()
    if self.requires_grad:
        t.requires_grad_(True)
    memo[id(self)] = t
    return t


Tensor.__reduce__ = _reduce
Tensor.__deepcopy__ = _deepcopy
# As PyTorch shows torch.Tensor: the class lives in the package's namespace.
Tensor.__module__ = "tandem"
_C.dtype.__module__ = "tandem"


def _new(fill):
    def new(self, *size, dtype=None, requires_grad=False):
        from . import _creation
        dt = self.dtype if dtype is None else dtype
        return getattr(_creation, fill)(*size, dtype=dt, requires_grad=requires_grad)
    new.__name__ = "new_" + fill
    new.__doc__ = f"tandem.{fill}(*size) with self's dtype unless dtype is given."
    return new


def _new_full(self, size, fill_value, *, dtype=None, requires_grad=False):
    """tandem.full(size, fill_value) with self's dtype unless dtype is given."""
    from . import _creation
    return _creation.full(size, fill_value, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, requires_grad=False):
    """tandem.tensor(data) with self's dtype unless dtype is given."""
    from . import _creation
    return _creation.tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


Tensor.new_zeros, Tensor.new_ones, Tensor.new_empty = _new("zeros"), _new("ones"), _new("empty")
Tensor.new_full, Tensor.new_tensor = _new_full, _new_tensor
