"""C++ modules inside Python ones: CppModule, and the reference models of `tandem train`
(tandem.nn.models)."""
from .. import _C
from .._C import Tensor
from . import Module, Parameter


def _share(t, param):
    """A Python object for the C++ module's tensor `t` that is the same tensor (the same
    storage, autograd leaf and .grad): a Parameter for parameters, `t` for buffers."""
    if t is None or not param:
        return t
    p = Parameter.__new__(Parameter)
    Tensor.__init__(p, t)  # copies the handle: the same tensor, not a detached alias
    return p


class CppModule(Module):
    """A C++ tandem::nn::Module (a model of tandem.nn.models, or a module a C++ extension
    returns) as a Python nn.Module: usable alone or as a submodule of a Python model,
    trained by tandem.optim and compiled by tandem.compile with the rest of the model.

    The C++ module's parameters, buffers and children appear as this module's (children
    as CppModules), under their C++ names: parameters(), named_parameters(),
    state_dict() / load_state_dict() (in place), zero_grad(), requires_grad_() and
    to(dtype) (in place, Tensor.data) act on the C++ module's own tensors, so the C++
    forward computes with what Python optimizers update. `training` is the C++ module's
    flag: train() / eval() on any Python ancestor reach the C++ tree. Calling it runs the
    Python hooks registered on it, then the C++ module (its own C++ hooks included)
    without the GIL; outputs: one Tensor, or a tuple for several. Inputs must be Tensors
    (TypeError otherwise); the C++ module raises its own errors (ShapeError, ValueError).

    The wrapper lists the C++ module's tensors and children when it is made: C++ code
    that later replaces one (rather than updating it in place) is not seen; wrap again.
    Its tensors and children are the C++ module's and cannot be replaced from Python
    (TypeError on assigning to their names: update them in place, e.g. with
    load_state_dict or `param.data = ...`); other attributes are free. copy.deepcopy
    raises tandem.NotImplementedError (a C++ module has no generic copy: build another
    and load_state_dict). Under tandem.compile the C++ forward is captured like Python
    code (through the dispatcher); its parameters are program inputs as a Python
    module's are."""

    def __init__(self, module):
        if not isinstance(module, _C._CppModule):
            raise _C.TypeError(f"[CppModule] expected a C++ module (tandem._C._CppModule), got {type(module).__name__}")
        object.__setattr__(self, "_cpp", module)
        super().__init__()
        for name, t in module.local_parameters():
            self._parameters[name] = _share(t, True)
        for name, t in module.local_buffers():
            self._buffers[name] = t
        for name, child in module.local_children():
            self._modules[name] = CppModule(child)
        object.__setattr__(self, "_ready", True)

    @property
    def cpp_module(self):
        """The wrapped C++ module (tandem._C._CppModule)."""
        return self._cpp

    @property
    def training(self):
        """The C++ module's training flag; setting it sets the C++ module's and its C++
        descendants' (train() / eval() of any Python ancestor do)."""
        return self._cpp.training

    @training.setter
    def training(self, mode):
        if self.__dict__.get("_ready"):  # Module.__init__'s default must not reset the C++ flag
            self._cpp.train(bool(mode))

    def __setattr__(self, name, value):
        if self.__dict__.get("_ready") and (name in self._parameters or name in self._buffers or
                                            name in self._modules):
            raise _C.TypeError(f"[CppModule] '{name}' belongs to the C++ module {self._cpp.name} and cannot be "
                               "replaced from Python; update it in place (load_state_dict, copy_, .data = ...)")
        super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters or name in self._buffers or name in self._modules:
            raise _C.TypeError(f"[CppModule] '{name}' belongs to the C++ module {self._cpp.name} and cannot be "
                               "deleted from Python")
        super().__delattr__(name)

    def register_parameter(self, name, param):
        """Not available: a C++ module's parameters are fixed by its C++ class (TypeError)."""
        raise _C.TypeError(f"[CppModule] cannot add parameter '{name}' to the C++ module {self._cpp.name}")

    def register_buffer(self, name, tensor, persistent=True):
        """Not available: a C++ module's buffers are fixed by its C++ class (TypeError)."""
        raise _C.TypeError(f"[CppModule] cannot add buffer '{name}' to the C++ module {self._cpp.name}")

    def add_module(self, name, module):
        """Not available: a C++ module's children are fixed by its C++ class (TypeError)."""
        raise _C.TypeError(f"[CppModule] cannot add submodule '{name}' to the C++ module {self._cpp.name}")

    register_module = add_module

    def forward(self, *inputs):
        """The C++ module's call on the tensors `inputs` (see the class docstring)."""
        for i, x in enumerate(inputs):
            if not isinstance(x, Tensor):
                raise _C.TypeError(f"[CppModule] {self._cpp.name}: input {i} must be a Tensor, got {type(x).__name__}")
        out = self._cpp.forward(list(inputs))
        return out[0] if len(out) == 1 else tuple(out)

    def __deepcopy__(self, memo):
        raise _C.NotImplementedError(f"[CppModule] the C++ module {self._cpp.name} cannot be deep-copied; build "
                                     "another and copy the values with load_state_dict")

    def __reduce_ex__(self, protocol):
        raise _C.NotImplementedError(f"[CppModule] the C++ module {self._cpp.name} cannot be pickled; save its "
                                     "state_dict (tandem.save) instead")

    def extra_repr(self):
        return self._cpp.extra_repr()

    def __repr__(self):
        return self._cpp.to_string()
