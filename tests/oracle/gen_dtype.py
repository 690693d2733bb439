#!/usr/bin/python3
"""DType oracle: names, sizes, promote_types, can_cast, float16/bfloat16 rounding by bit
pattern, and Tensor.to between every dtype pair.

Run: /usr/bin/python3 tests/oracle/gen_dtype.py  (Debian's python with torch 1.13)
Writes tests/data/dtype.json, read by tests/core/test_dtype.cpp.

Sections:
  dtypes:   [{"name", "itemsize", "is_floating_point", "is_signed"}] in tandem's DType order
  promote:  [[a, b, promote_types(a, b)]] for all 100 pairs
  can_cast: [[from, to, bool]] for all 100 pairs
  f32_to_reduced: [{"f32": uint32 bits, "f16": uint16 bits, "bf16": uint16 bits, "why": ...}]
            (each value converted alone: torch.tensor([v]).to(dtype).view(int16))
  f16_to_f32: [[uint16 bits, uint32 bits]] sample of half -> float
  bf16_to_f32: [[uint16 bits, uint32 bits]] sample of bfloat16 -> float
  to:       [{"src", "dst", "in": [...], "out": [...]}]; floats exact (JSON doubles),
            "nan"/"inf"/"-inf" strings, -0.0 kept as -0.0.
"""
import json
import math
import os
import random
import struct

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "dtype.json")

ORDER = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
         torch.bfloat16, torch.float32, torch.float64]
NAME = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
        torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
        torch.float64: "float64"}


def num(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def bits_to_f32_tensor(bits):
    b = bits if bits < 2**31 else bits - 2**32
    return torch.tensor([b], dtype=torch.int32).view(torch.float32)


doc = {"generator": "tests/oracle/gen_dtype.py (PyTorch " + torch.__version__ + ")"}
doc["dtypes"] = [{"name": NAME[t], "itemsize": torch.tensor([], dtype=t).element_size(),
                  "is_floating_point": t.is_floating_point, "is_signed": t.is_signed} for t in ORDER]
doc["promote"] = [[NAME[a], NAME[b], NAME[torch.promote_types(a, b)]] for a in ORDER for b in ORDER]
doc["can_cast"] = [[NAME[a], NAME[b], torch.can_cast(a, b)] for a in ORDER for b in ORDER]

# ---------------------------------------------------------------- float32 -> float16 / bfloat16
H = 2.0 ** -11  # half ulp of 1.0 in float16
B = 2.0 ** -8   # half ulp of 1.0 in bfloat16
edge = [
    (65504.0, "float16 max"), (65505.0, "rounds down to max"), (65519.0, "below the inf threshold"),
    (struct.unpack("<f", struct.pack("<I", f32_bits(65520.0) - 1))[0], "just below 65520: max"),
    (65520.0, "tie at max+half ulp: rounds to inf"), (65536.0, "overflow"), (1e5, "overflow"), (3.4e38, "overflow"),
    (2.0 ** -14, "min normal 6.1035e-05"), (2.0 ** -14 - 2.0 ** -25, "just below min normal (subnormal tie)"),
    (2.0 ** -24, "smallest subnormal 5.96e-08"), (2.0 ** -25, "half the smallest subnormal: tie to even 0"),
    (2.0 ** -25 * (1 + 2.0 ** -23), "above the tie: smallest subnormal"), (3 * 2.0 ** -25, "subnormal tie -> 2"),
    (5 * 2.0 ** -25, "subnormal tie -> 2"), (2.0 ** -26, "underflow to 0"), (1e-8, "underflow"), (2.0 ** -20, "subnormal"),
    (1e-7, "subnormal rounding"), (6e-5, "subnormal near min normal"), (1e-45, "float32 denormal"),
    (1.0 + H, "tie: rounds to even 1.0"), (1.0 + 3 * H, "tie: rounds up to even"), (1.0 + H + 2.0 ** -23, "above tie"),
    (1.0 + H - 2.0 ** -23, "below tie"), (2049.0, "integer tie -> 2048"), (2051.0, "integer tie -> 2052"),
    (1.0 + B, "bfloat16 tie -> 1.0"), (1.0 + 3 * B, "bfloat16 tie -> up"), (1.0 + B + 2.0 ** -23, "bfloat16 above tie"),
    (257.0, "bfloat16 integer tie -> 256"), (259.0, "bfloat16 integer tie -> 260"),
    (3.3895314e38, "bfloat16 max region"), (3.4028235e38, "float32 max: bfloat16 rounds to inf"),
    (0.1, "0.1"), (1.0 / 3.0, "1/3"), (math.pi, "pi"), (0.0, "zero"), (-0.0, "negative zero"),
    (math.inf, "+inf"), (-math.inf, "-inf"), (1.0, "one"), (-2.5, "negative"),
    (1.1754944e-38, "float32 min normal"),
]
rows = []
seen = set()


def add_f32(bits, why):
    if bits in seen:
        return
    seen.add(bits)
    x = bits_to_f32_tensor(bits)
    f16 = x.to(torch.float16).view(torch.int16).item() & 0xFFFF
    bf16 = x.to(torch.bfloat16).view(torch.int16).item() & 0xFFFF
    rows.append({"f32": bits, "f16": f16, "bf16": bf16, "why": why})


for v, why in edge:
    add_f32(f32_bits(v), why)
    if v != 0.0 and not math.isnan(v):
        add_f32(f32_bits(-v), "-(" + why + ")")
for bits, why in [(0x7FC00000, "quiet NaN"), (0xFFC00000, "negative quiet NaN"), (0x7F800001, "signalling NaN"),
                  (0x7FC12345, "NaN with payload"), (0xFFC12345, "negative NaN with payload")]:
    add_f32(bits, why)
rng = random.Random(0)
for _ in range(600):  # random float32 across the half range, including subnormal halves
    e = rng.randint(127 - 27, 127 + 16)
    add_f32((rng.randint(0, 1) << 31) | (e << 23) | rng.getrandbits(23), "random")
for _ in range(200):  # values exactly on a float16 rounding tie (last 13 bits 0x1000)
    e = rng.randint(127 - 14, 127 + 15)
    add_f32((e << 23) | (rng.getrandbits(10) << 13) | 0x1000, "random half tie")
for _ in range(200):  # values exactly on a bfloat16 rounding tie (low 16 bits 0x8000)
    e = rng.randint(1, 254)
    add_f32((e << 23) | (rng.getrandbits(7) << 16) | 0x8000, "random bfloat16 tie")
doc["f32_to_reduced"] = rows

# ---------------------------------------------------------------- float16 / bfloat16 -> float32
samples = sorted(set([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0x7BFF, 0x7C00, 0xFC00,
                      0x7E00, 0xFE00, 0x7C01, 0x3555, 0x0200] + [rng.getrandbits(16) for _ in range(300)]))


def reduced_to_f32(bits, dt):
    b = bits if bits < 2**15 else bits - 2**16
    f = torch.tensor([b], dtype=torch.int16).view(dt).to(torch.float32)
    return f.view(torch.int32).item() & 0xFFFFFFFF


doc["f16_to_f32"] = [[b, reduced_to_f32(b, torch.float16)] for b in samples]
bsamples = sorted(set([0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0,
                       0x7F81] + [rng.getrandbits(16) for _ in range(300)]))
doc["bf16_to_f32"] = [[b, reduced_to_f32(b, torch.bfloat16)] for b in bsamples]

# ---------------------------------------------------------------- Tensor.to between all dtype pairs
FLOATS = [-2.7, -1.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.5, 2.5, 2.7, 100.9, 127.5, 255.5, -100.75, 1e-3,
          65504.0, 65519.0, 65520.0, 1e5, 3e38, 1e-8, 1.0 + 2.0 ** -11, 1.0 + 2.0 ** -11 + 2.0 ** -40, 16777217.0,
          math.nan, math.inf, -math.inf]
VALUES = {
    torch.bool: [False, True],
    torch.uint8: [0, 1, 2, 127, 128, 200, 255],
    torch.int8: [-128, -127, -1, 0, 1, 2, 100, 127],
    torch.int16: [-32768, -300, -129, -1, 0, 1, 255, 256, 300, 2049, 32767],
    torch.int32: [-2**31, -70000, -300, -1, 0, 1, 256, 2049, 65504, 65520, 70000, 16777217, 2**31 - 1],
    torch.int64: [-2**63, -2**53 - 1, -70000, -1, 0, 1, 300, 2**24 + 1, 2**31, 2**53 + 1, 2**62 + 2**38 + 1,
                  2**63 - 1],
    torch.float16: FLOATS, torch.bfloat16: FLOATS, torch.float32: FLOATS, torch.float64: FLOATS,
}
INT_RANGE = {torch.uint8: (0, 255), torch.int8: (-128, 127), torch.int16: (-2**15, 2**15 - 1),
             torch.int32: (-2**31, 2**31 - 1), torch.int64: (-2**63, 2**63 - 1)}


def py(v, dt):
    if dt == torch.bool:
        return bool(v)
    if dt.is_floating_point:
        return float(v)
    return int(v)


to_cases = []
for src in ORDER:
    x_all = torch.tensor(VALUES[src], dtype=torch.float64 if src.is_floating_point else None)
    x_all = torch.tensor(VALUES[src], dtype=src) if not src.is_floating_point else x_all.to(src)
    # The source values as src holds them (float16/bfloat16 round first).
    src_vals = [py(v, src) for v in (x_all.to(torch.float64) if src in (torch.float16, torch.bfloat16) else x_all).tolist()]
    for dst in ORDER:
        keep = []
        for i, v in enumerate(src_vals):
            if src.is_floating_point and dst != torch.bool and not dst.is_floating_point:
                # float -> integer: C++ leaves out-of-range (and NaN/inf) undefined, and so does
                # PyTorch, except uint8, which PyTorch converts through int64 (so -1.5 -> 255).
                if math.isnan(v) or math.isinf(v):
                    continue
                lo, hi = INT_RANGE[dst] if dst != torch.uint8 else (-2**31, 255)
                if not (lo <= math.trunc(v) <= hi):
                    continue
            keep.append(i)
        if not keep:
            continue
        x = x_all[keep]
        y = x.to(dst)
        yv = (y.to(torch.float64) if dst in (torch.float16, torch.bfloat16) else y).tolist()
        to_cases.append({"src": NAME[src], "dst": NAME[dst], "in": [num(src_vals[i]) for i in keep],
                         "out": [num(py(v, dst)) for v in yv]})
doc["to"] = to_cases

with open(OUT, "w") as f:
    json.dump(doc, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(doc['promote'])} promote pairs, {len(rows)} float32->reduced rows, {len(to_cases)} to() pairs to {OUT}")
