"""tandem.save / tandem.load: state dicts (and nested containers of tensors) as safetensors
files, written atomically by the C++ writer (io/safetensors.h).

    tandem.save(model.state_dict(), "model.safetensors")
    model.load_state_dict(tandem.load("model.safetensors"))
    tandem.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, "ckpt.safetensors")

A flat dict of str -> Tensor is stored as exactly those tensors under those names, so any
safetensors reader (the Hugging Face library, tandem's C++ load_safetensors) sees the
state dict as it is. Anything else (nested dicts, lists, tuples, int dict keys, Python
numbers, strings, bools and None as leaves) is stored as its tensors plus a JSON
description of the structure in the file's metadata under "tandem.pytree"; load rebuilds
it. Unlike torch.save, no pickle is involved: only data is read back, never code.

tandem.save_checkpoint / tandem.load_checkpoint write and read the training checkpoints
of the C++ API and `tandem train --checkpoint` (io/checkpoint.h): a model, an optimizer's
state and metadata in one file, so a run can move between the C++ program and Python.
"""
import collections
import json
import os

from . import _C

__all__ = ["save", "load", "save_checkpoint", "load_checkpoint"]

_STRUCTURE_KEY = "tandem.pytree"


def _path(f, op):
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(f))
    raise _C.TypeError(f"[{op}] expected a file path (str or os.PathLike), got {type(f).__name__}; "
                       "file objects are not supported")


def _is_flat_state_dict(obj):
    return (isinstance(obj, dict) and
            all(isinstance(k, str) and isinstance(v, _C.Tensor) for k, v in obj.items()))


def _encode(obj, path, tensors, names):
    if isinstance(obj, _C.Tensor):
        name = "/".join(path) or "tensor"
        if name in names or name == "__metadata__":
            i = 1
            while f"{name}#{i}" in names:
                i += 1
            name = f"{name}#{i}"
        names.add(name)
        tensors.append((name, obj.detach()))
        return {"t": name}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"v": obj}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not (k is None or isinstance(k, (bool, int, float, str))):
                raise _C.TypeError(f"[save] dict keys must be str, int, float, bool or None, got {type(k).__name__} "
                                   f"at {'/'.join(path) or 'the top level'}")
            items.append([k, _encode(v, path + [str(k)], tensors, names)])
        return {"d": items, "o": isinstance(obj, collections.OrderedDict)}
    if isinstance(obj, (list, tuple)):
        enc = [_encode(v, path + [str(i)], tensors, names) for i, v in enumerate(obj)]
        return {"u" if isinstance(obj, tuple) else "l": enc}
    raise _C.TypeError(f"[save] can't save a {type(obj).__name__} (at {'/'.join(path) or 'the top level'}): "
                       "only tensors, dicts, lists, tuples, numbers, strings, bools and None")


def _decode(node, tensors, where):
    if not isinstance(node, dict):
        raise _C.RuntimeError(f"[load] {where}: malformed '{_STRUCTURE_KEY}' metadata")
    if "t" in node:
        if node["t"] not in tensors:
            raise _C.RuntimeError(f"[load] {where}: '{_STRUCTURE_KEY}' names tensor '{node['t']}', which the file "
                                  "does not hold")
        return tensors[node["t"]]
    if "v" in node:
        return node["v"]
    if "d" in node:
        out = collections.OrderedDict() if node.get("o") else {}
        for pair in node["d"]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise _C.RuntimeError(f"[load] {where}: malformed '{_STRUCTURE_KEY}' metadata")
            out[pair[0]] = _decode(pair[1], tensors, where)
        return out
    if "l" in node:
        return [_decode(v, tensors, where) for v in node["l"]]
    if "u" in node:
        return tuple(_decode(v, tensors, where) for v in node["u"])
    raise _C.RuntimeError(f"[load] {where}: malformed '{_STRUCTURE_KEY}' metadata")


def save(obj, f, metadata=None):
    """Writes `obj` (a state dict, or a nested container of tensors and plain values; see
    the module docstring) to the path `f` in the safetensors format, atomically: the file
    holds its old contents until the new one is complete (temporary file, fsync, rename).
    Tensors are stored contiguous with their dtype and shape (a view as its elements;
    tensors shared between entries are stored once per entry). metadata: extra str -> str
    entries for the file's header. TypeError for an object or key that can't be stored, or
    a file object; ValueError for a metadata key starting with "tandem."; RuntimeError
    naming the file when writing fails."""
    path = _path(f, "save")
    meta = {}
    for k, v in (metadata or {}).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise _C.TypeError("[save] metadata must map str to str")
        if k.startswith("tandem."):
            raise _C.ValueError(f"[save] metadata key '{k}': keys starting with 'tandem.' are reserved")
        meta[k] = v
    if _is_flat_state_dict(obj) and "__metadata__" not in obj:
        tensors = [(k, v.detach()) for k, v in obj.items()]
    else:
        tensors = []
        structure = _encode(obj, [], tensors, set())
        meta[_STRUCTURE_KEY] = json.dumps(structure, separators=(",", ":"))
    _C._save_safetensors(path, tensors, meta)


def load(f, map_location=None, weights_only=None, *, with_metadata=False):
    """Reads a file written by save (or any safetensors file: an OrderedDict of its tensors
    in file order). Every tensor owns its memory. map_location may be None or "cpu"
    (tandem runs on the CPU; tandem.NotImplementedError otherwise); weights_only is
    accepted for torch.load compatibility (only data is ever loaded). with_metadata: also
    return the file's metadata (without tandem's own entries) as a second value.
    RuntimeError naming the file for a missing, truncated or corrupt file."""
    path = _path(f, "load")
    if map_location is not None and str(map_location).split(":")[0] != "cpu":
        raise _C.NotImplementedError(f"[load] map_location={map_location!r}: tandem runs on the CPU only")
    pairs, meta = _C._load_safetensors(path)
    structure = meta.pop(_STRUCTURE_KEY, None)
    if structure is None:
        out = collections.OrderedDict(pairs)
    else:
        try:
            node = json.loads(structure)
        except ValueError as e:
            raise _C.RuntimeError(f"[load] {path}: '{_STRUCTURE_KEY}' metadata is not valid JSON ({e})") from None
        out = _decode(node, dict(pairs), path)
    return (out, meta) if with_metadata else out


def _cpp_state_module(module, memo):
    """A C++ module tree holding `module`'s tensors themselves (not copies) under the
    names Module.state_dict uses: a CppModule's own C++ module, else a container per
    Python module with its parameters, persistent buffers and children. A module reached
    twice maps to one C++ module."""
    from .nn import CppModule, Module
    if not isinstance(module, Module):
        raise _C.TypeError(f"[checkpoint] expected a tandem.nn.Module, got {type(module).__name__}")
    if id(module) in memo:
        return memo[id(module)]
    if isinstance(module, CppModule):
        out = module.cpp_module
    else:
        out = _C._CppModule(type(module).__name__)
        for name, p in module._parameters.items():
            if p is not None:
                out.register_parameter(name, p)
        skip = module.__dict__.get("_non_persistent", ())
        for name, b in module._buffers.items():
            if b is not None and name not in skip:
                out.register_buffer(name, b)
        for name, child in module._modules.items():
            if child is not None:
                out.register_module(name, _cpp_state_module(child, memo))
    memo[id(module)] = out
    return out


def save_checkpoint(f, model, optimizer=None, metadata=None):
    """Writes a training checkpoint to the path `f` in the format of the C++ API's
    io::save_checkpoint and `tandem train --checkpoint` (one safetensors file, written
    atomically): model.<key> for each entry of model.state_dict(), the optimizer's
    per-parameter state (optimizer.state.<index>.<name>) and parameter groups when an
    optimizer is given, and the str -> str `metadata`. `model` is any tandem.nn.Module:
    Python layers, C++ ones (CppModule, tandem.nn.models) or both; the C++ writer reads its
    tensors in place. TypeError for a model that is not a Module or metadata that is not
    str -> str; ValueError for a metadata key starting with "tandem."; RuntimeError
    naming the file when writing fails."""
    path = _path(f, "save_checkpoint")
    meta = dict(metadata or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise _C.TypeError("[save_checkpoint] metadata must map str to str")
    _C._save_checkpoint(path, _cpp_state_module(model, {}), optimizer, meta)


def load_checkpoint(f, model, optimizer=None):
    """Reads a checkpoint written by save_checkpoint, by the C++ API or by `tandem train
    --checkpoint` into `model` (strict: every state_dict key and no other; values copied
    into the model's tensors in place) and, when given, `optimizer` (its state and
    parameter groups: hyper-parameters included), and returns the caller's metadata
    (dict). A model loads a `tandem train` checkpoint when its state_dict keys are the C++
    model's: tandem.nn.models.fashion_cnn() for `--model cnn`. Errors name the file:
    RuntimeError for a missing or malformed file, or an optimizer asked for but not saved;
    ValueError for missing or unexpected keys, ShapeError / TypeError for a tensor of the
    wrong shape / dtype, and the optimizer's load_state_dict errors."""
    path = _path(f, "load_checkpoint")
    return dict(_C._load_checkpoint(path, _cpp_state_module(model, {}), optimizer))
