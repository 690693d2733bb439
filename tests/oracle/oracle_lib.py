"""Writes op test cases with PyTorch results for tandem's registry-driven oracle test.

PyTorch (Debian's python3-torch, run with /usr/bin/python3) is only the oracle: the
generated JSON files under tests/data/oracle/ are committed, and the C++ runner
(tests/ops/test_oracle.cpp) replays every case through tandem's dispatcher by op name.

Case format (one JSON file per op family):
  {"cases": [{
     "name": "add/broadcast/float32",          unique test name
     "op": "add",                                registered tandem op name
     "inputs": [tensor | {"scalar": v, "kind": "float"|"int"|"bool"} | null ...],
     "attrs": [attr ...],                        positional, schema order
     "expected": [tensor ...]                    or "error": "ShapeError" (etc.)
     "rtol": 1e-5, "atol": 1e-6                  optional tolerances
  }]}
  tensor = {"dtype": "float32", "shape": [2, 3], "data": [...row-major logical values...],
            "layout": "contiguous" | "transposed" | "strided" | "expanded",
            "expand_from": [1, 3]   (layout expanded: data holds the small tensor)}
  Non-finite floats are the strings "nan", "inf", "-inf".
  attr = null | {"int": 3} | {"float": 0.5} | {"bool": true} | {"scalar": 2, "kind": "int"}
       | {"ints": [1, 2]} | {"str": "mean"} | {"dtype": "float32"}
"""
import json
import math

import torch

DTYPES = {
    torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
    torch.int32: "int32", torch.int64: "int64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
}


def rnd(shape, dtype=torch.float32):
    """Random tensor of any dtype: standard normal floats, uint8 in [0, 200), other integers
    in [-100, 100), bools half true (the generators that cover every dtype share it, so their
    RNG streams and files stay as they were)."""
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 200, shape, dtype=dtype)
    return torch.randint(-100, 100, shape).to(dtype)


def _num(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def tensor(t, layout="contiguous", expand_from=None):
    """Serialises a torch tensor's logical values. With layout 'expanded', pass the small
    tensor as `t` and the full shape via expand_from=(full_shape)."""
    t = t.detach()
    vals = t.to(torch.float64).flatten().tolist() if t.dtype in (torch.float16, torch.bfloat16) else t.flatten().tolist()
    out = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data": [_num(v) for v in vals], "layout": layout}
    if layout == "expanded":
        out["expand_from"] = list(t.shape)
        out["shape"] = list(expand_from)
    if layout == "transposed":
        assert t.dim() >= 2, "transposed layout needs >= 2 dims"
    if layout == "strided":
        assert t.dim() >= 1, "strided layout needs >= 1 dim"
    return out


def scalar(v):
    kind = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"
    return {"scalar": _num(float(v)) if kind == "float" else v, "kind": kind}


def attr(v=None, kind=None):
    """Encodes an attribute: ints/float/bool/str/list/dtype; kind='scalar' wraps numbers as Scalar."""
    if v is None:
        return None
    if kind == "scalar":
        return scalar(v)
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, float):
        return {"float": _num(v)}
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, torch.dtype):
        return {"dtype": DTYPES[v]}
    if isinstance(v, (list, tuple)):
        return {"ints": list(v)}
    raise TypeError(f"cannot encode attribute {v!r}")


class CaseWriter:
    def __init__(self):
        self.cases = []
        self.names = set()

    def add(self, name, op, inputs, attrs, fn=None, expected=None, error=None, rtol=None, atol=None):
        """Adds a case. `inputs` are (torch tensor, layout) pairs, encoded dicts, or None.
        Either `fn` (called with the torch tensors, returns a tensor or tuple) or
        `expected`/`error` gives the oracle result."""
        assert name not in self.names, name
        self.names.add(name)
        enc, raw = [], []
        for x in inputs:
            if isinstance(x, tuple):
                t, layout = x[0], x[1]
                if layout == "expanded":
                    full = x[2]
                    enc.append(tensor(t, "expanded", full))
                    raw.append(t.expand(*full))
                else:
                    enc.append(tensor(t, layout))
                    raw.append(t)
            elif isinstance(x, torch.Tensor):
                enc.append(tensor(x))
                raw.append(x)
            elif isinstance(x, dict) and "scalar" in x:
                enc.append(x)
                v = x["scalar"]
                raw.append(float(v) if x["kind"] == "float" else v)  # a Python number, as torch sees it
            else:
                enc.append(x)
                raw.append(x)
        case = {"name": name, "op": op, "inputs": enc, "attrs": attrs}
        if error is None and expected is None:
            try:
                expected = fn(*raw)
            except Exception as e:  # noqa: BLE001 - the oracle's own error decides the case
                raise RuntimeError(f"oracle failed for {name}: {e}")
        if error is not None:
            case["error"] = error
        else:
            if isinstance(expected, torch.Tensor):
                expected = [expected]
            case["expected"] = [tensor(e) for e in expected]
        if rtol is not None:
            case["rtol"] = rtol
        if atol is not None:
            case["atol"] = atol
        self.cases.append(case)

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"generator": "tests/oracle (PyTorch " + torch.__version__ + ")", "cases": self.cases}, f,
                      separators=(",", ":"))
            f.write("\n")
        print(f"wrote {len(self.cases)} cases to {path}")
