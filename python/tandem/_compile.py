"""tandem.compile over Python functions of tensors and over nn.Modules."""
import functools

from . import _C


def compile(fn=None, *, strict=False, memory_budget=None):
    """Compiles `fn`, a Python function of tensors returning a Tensor or a tuple/list of
    Tensors, or an nn.Module, with tandem's compiler (torch.compile's role): the first
    call with a given signature (shapes, dtypes, requires_grad of the inputs) runs fn once
    to capture its ops through the dispatcher; later calls with that signature run the
    optimized program without calling fn. Gradients flow through compiled calls.

    Python values fn reads (closures, globals, Python numbers computed in fn) are
    constants of the trace: a change the inputs' signature cannot see is not noticed.
    Tensors fn reads without receiving them are read by reference. Reading data
    (x.item(), x.tolist(), x.numpy()) breaks the graph: the call runs eagerly instead
    (strict=True raises tandem.GraphBreak). Arguments must be tensors (numbers become
    0-d tensors). A module's parameters are passed to the program as inputs (so their
    gradients are computed), and its training flag selects one program per mode; the
    set of parameters is fixed when compile is called. Usable as a decorator:
    @tandem.compile or @tandem.compile(strict=True).

    A whole training step compiles too: a function that calls optimizer.zero_grad() (or
    model.zero_grad()), the forward, the loss, loss.backward() and optimizer.step() and
    returns loss.detach() becomes one program that updates the parameters, their .grad
    and the optimizer state in place, with the same numbers as eager, step after step.
    The first call (an optimizer creating its state) and the capture run eagerly;
    learning-rate changes (group["lr"], schedulers) are read at each call.

    memory_budget (int, bytes; None: no limit) caps a program's peak memory beyond its
    inputs (parameters, optimizer state, the batch): values alive across the peak are
    recomputed or offloaded to a spill file until the plan fits, with the same numbers.
    It applies to programs that run whole (a whole training step, inference); a call that
    needs gradients of a compiled module's outputs raises NotImplementedError, and a
    budget below the smallest reachable peak raises tandem.OutOfMemoryError naming it.
    """
    budget = 0 if memory_budget is None else int(memory_budget)
    if memory_budget is not None and budget <= 0:
        raise _C.ValueError(f"[compile] memory_budget got {memory_budget!r}, expected a positive number of bytes")
    if fn is None:
        return lambda f: compile(f, strict=strict, memory_budget=memory_budget)
    from .nn import Module
    if isinstance(fn, Module):
        return _compile_module(fn, strict, budget)
    compiled = _C._compile(fn, strict, budget)

    @functools.wraps(fn)
    def wrapper(*args):
        return compiled(*args)
    wrapper.compiled = compiled
    return wrapper


def _module_runner(module):
    """fn(*inputs, *parameters): the module called with the given tensors in place of its
    parameters (so a captured program takes them as inputs)."""
    named = list(module.named_parameters())
    owners = []
    for name, _ in named:
        owner = module
        *path, attr = name.split(".")
        for part in path:
            owner = owner._modules[part]
        owners.append((owner, attr))
    n_params = len(named)

    def run(*args):
        # Capture: the module computes with the program's parameter inputs in place of
        # its own parameters, so the program takes them as inputs.
        inputs, params = args[:len(args) - n_params], args[len(args) - n_params:]
        saved = [owner._parameters[attr] for owner, attr in owners]
        for (owner, attr), p in zip(owners, params):
            owner._parameters[attr] = p
        try:
            return module(*inputs)
        finally:
            for (owner, attr), p in zip(owners, saved):
                owner._parameters[attr] = p
    return run


def _compile_module(module, strict, budget=0):
    named = list(module.named_parameters())
    run = _module_runner(module)
    by_mode = {}

    def wrapper(*inputs):
        mode = module.training
        compiled = by_mode.get(mode)
        if compiled is None:
            compiled = by_mode[mode] = _C._compile(run, strict, budget)
        return compiled(*inputs, *[p for _, p in named])
    wrapper.compiled_by_mode = by_mode
    wrapper.module = module
    return wrapper


def explain(fn, *inputs):
    """Captures fn(*inputs) once, as tandem.compile would on a first call, and reports what
    it saw (a tandem.Explanation: compiled, break_reason, captured_ops, guards,
    graph_text, arena_bytes, lower_bound_bytes; print() it for the report). Nothing is
    cached. fn runs once, eagerly, for the capture: a training step's updates happen.
    Arguments must be tensors (numbers become 0-d tensors). fn may be an nn.Module: its
    parameters are then inputs of the program, as in compile."""
    from .nn import Module
    if isinstance(fn, Module):
        params = [p for _, p in fn.named_parameters()]
        run = _module_runner(fn)
        return _C._explain(run, *inputs, *params)
    return _C._explain(fn, *inputs)
