#!/usr/bin/python3
"""Creation-function oracle: arange, linspace, eye, full values and dtypes.

Run: /usr/bin/python3 tests/oracle/gen_creation.py  (Debian's python with torch 1.13)
Writes tests/data/creation.json, read by tests/core/test_creation.cpp.

A number argument is {"int": v} or {"float": v} (a C++ int64 or double Scalar, as a
Python int or float is to torch); "dtype" null means the default. Results carry the
dtype, the shape and the values (floats exact as JSON doubles; "nan"/"inf" strings).
"""
import json
import math
import os

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "creation.json")
NAME = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
        torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
        torch.float64: "float64"}


def num(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def arg(v):
    return {"int": v} if isinstance(v, int) else {"float": v}


def result(t):
    vals = (t.to(torch.float64) if t.dtype in (torch.float16, torch.bfloat16) else t).flatten().tolist()
    return {"dtype": NAME[t.dtype], "shape": list(t.shape), "values": [num(v) for v in vals]}


doc = {"generator": "tests/oracle/gen_creation.py (PyTorch " + torch.__version__ + ")"}

ARANGE = [
    ((5,), None), ((0,), None), ((0, 10, 3), None), ((10, 0, -3), None), ((-5, 5, 2), None), ((5, 5, -1), None),
    ((0, 1, 0.1), None), ((1, 0, -0.1), None), ((0.5, 3), None), ((0, 2.5, 0.5), None), ((1, 2, 0.3), None),
    ((-1.5, 1.5, 0.25), None), ((0, 1, 1 / 3), None), ((0.0, 1.0, 0.1), torch.float64), ((0, 5), torch.float32),
    ((0, 10, 2.5), None), ((10,), torch.int8), ((0, 7, 2), torch.int32), ((2.5,), None), ((-3, -1), None),
    ((3, 0, -1), torch.float64), ((0, 6, 1.5), torch.int64), ((0, 100, 7), torch.int16), ((0.1, 0.5, 0.1), None),
    ((0, 1e6, 1e5), None), ((1, 4), torch.float16), ((0, 3, 0.5), torch.bfloat16), ((0, 3, 1), torch.uint8),
    # integer dtypes truncate float bounds/step first; the length uses the truncated bounds only for int64
    ((0, 6, 1.5), torch.int32), ((0, 6, 1.5), torch.int16), ((0.5, 3.7), torch.int64), ((0.5, 3.7), torch.int32),
    ((-0.5, 2.5), torch.int64), ((-0.5, 2.5), torch.int32), ((5.9, 0, -2.5), torch.int64), ((5.9, 0, -2.5), torch.int32),
]
doc["arange"] = []
for args, dt in [((0, 3, 0.5), torch.int32), ((0, 3, 0.5), torch.int64)]:  # step truncates to 0
    try:
        torch.arange(*args, dtype=dt)
        raise AssertionError("expected an error")
    except RuntimeError as e:
        assert "step must be nonzero" in str(e)
    doc.setdefault("arange_errors", []).append({"start": arg(args[0]), "end": arg(args[1]), "step": arg(args[2]),
                                                "dtype": NAME[dt], "error": "ValueError"})
for args, dt in ARANGE:
    full = args if len(args) == 3 else ((0,) + args + (1,) if len(args) == 1 else args + (1,))
    t = torch.arange(*args, dtype=dt) if dt is not None else torch.arange(*args)
    doc["arange"].append({"start": arg(full[0]), "end": arg(full[1]), "step": arg(full[2]),
                          "dtype": NAME[dt] if dt else None, "result": result(t)})

LINSPACE = [
    (0, 1, 5, None), (0, 1, 0, None), (3, 7, 1, None), (-1, 1, 2, None), (0, 1, 11, None), (1, 0, 7, None),
    (0, 1, 50, None), (-2.5, 7.25, 9, torch.float64), (0, 1, 10, torch.float64), (0, 10, 4, torch.int64),
    (0, 10, 5, torch.int32), (10, 0, 4, torch.int64), (0, 1, 3, torch.float16), (0.1, 0.9, 5, torch.bfloat16),
    (1e-3, 1e3, 7, None), (5, 5, 3, None),
]
doc["linspace"] = []
for s, e, n, dt in LINSPACE:
    t = torch.linspace(s, e, n, dtype=dt) if dt is not None else torch.linspace(s, e, n)
    doc["linspace"].append({"start": float(s), "end": float(e), "steps": n, "dtype": NAME[dt] if dt else None,
                            "result": result(t)})

EYE = [(3, None, None), (0, None, None), (1, None, None), (3, 5, None), (4, 2, None), (2, 0, None),
       (3, 3, torch.int64), (2, 3, torch.bool), (3, None, torch.float64)]
doc["eye"] = []
for n, m, dt in EYE:
    kw = {"dtype": dt} if dt else {}
    t = torch.eye(n, m, **kw) if m is not None else torch.eye(n, **kw)
    doc["eye"].append({"n": n, "m": m, "dtype": NAME[dt] if dt else None, "result": result(t)})

FULL = [([2, 3], 2.5, None), ([2], 7, None), ([2], True, None), ([], -1.5, None), ([0, 2], 3, None),
        ([3], 200, torch.uint8), ([2, 2], 1.5, torch.int32), ([2], -2.7, torch.int64), ([2], math.nan, None),
        ([2], 0.5, torch.bool), ([2], 2.5, torch.bool), ([1], 2**40, torch.float32), ([2], -1, torch.uint8),
        ([2], -255, torch.uint8), ([2], math.inf, torch.float16), ([2], -math.inf, None), ([2], 3e38, torch.bfloat16),
        ([2], 65504.0, torch.float16), ([1], 9.2e18, torch.int64), ([2], True, torch.uint8), ([2], 1e300, torch.float64),
        ([2], 2**63 - 1, torch.float32),
        # out of the dtype's range: PyTorch raises "value cannot be converted to type ... without overflow"
        ([3], 300, torch.uint8), ([2], -256, torch.uint8), ([2], -1.5, torch.uint8), ([2], -0.5, torch.uint8),
        ([2], 255.5, torch.uint8), ([2], 127.5, torch.int8), ([2], -129, torch.int8), ([2], 65520.0, torch.float16),
        ([2], 65510.0, torch.float16), ([2], 100000, torch.float16), ([2], 1e40, torch.float32),
        ([2], 1e39, torch.bfloat16), ([2], math.nan, torch.int64), ([2], math.inf, torch.int32),
        ([2], 2**40, torch.int32), ([2], 9.3e18, torch.int64), ([2], 40000, torch.int16)]
doc["full"] = []
for size, v, dt in FULL:
    c = {"size": size, "value": {"bool": v} if isinstance(v, bool) else arg(num(v)), "dtype": NAME[dt] if dt else None}
    try:
        t = torch.full(size, v, dtype=dt) if dt else torch.full(size, v)
        c["result"] = result(t)
        # fill_ agrees with full
        z = torch.zeros(size, dtype=t.dtype).fill_(v)
        assert torch.equal(z, t) or (t.is_floating_point() and torch.isnan(t).all())
    except RuntimeError as e:
        assert "without overflow" in str(e), e
        c["error"] = "TypeError"
    doc["full"].append(c)

with open(OUT, "w") as f:
    json.dump(doc, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(doc['arange'])} arange, {len(doc['linspace'])} linspace, {len(doc['eye'])} eye, "
      f"{len(doc['full'])} full cases to {OUT}")
