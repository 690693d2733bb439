#!/usr/bin/env python3
"""Writes tests/data/io/reference.safetensors, an independent safetensors file for the
interoperability test (tests/io/test_safetensors.cpp).

Debian has no safetensors Python package, so this follows the published format with the
standard library only (struct + json), laid out the way the reference writer lays files
out: "__metadata__" first, tensors ordered by element size (largest first) then name,
compact JSON ("," and ":" without spaces), the header padded with spaces to a multiple
of 8 bytes, then the little-endian data. Each tensor's values follow a formula that the
C++ test recomputes.

Run: /usr/bin/python3 tests/io/gen_safetensors_reference.py
"""
import json
import pathlib
import struct

OUT = pathlib.Path(__file__).resolve().parent.parent / "data" / "io" / "reference.safetensors"


def bf16_bits(x: float) -> int:
    # Values below are exactly representable in bfloat16: the top half of the float32 bits.
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    assert bits & 0xFFFF == 0, x
    return bits >> 16


def tensors():
    # name -> (dtype, shape, little-endian bytes)
    t = {}
    f64 = [i * 0.5 - 1.25 for i in range(6)]
    t["a_f64"] = ("F64", [2, 3], struct.pack("<6d", *f64))
    t["b_i64"] = ("I64", [3], struct.pack("<3q", -(2 ** 40), 0, 2 ** 62 + 5))
    t["c_f32"] = ("F32", [2, 2], struct.pack("<4f", *[i * 0.25 - 0.5 for i in range(4)]))
    t["d_i32"] = ("I32", [4], struct.pack("<4i", -7, 0, 2 ** 31 - 1, -(2 ** 31)))
    t["k_empty"] = ("F32", [0, 3], b"")
    t["l_scalar"] = ("F32", [], struct.pack("<f", 3.5))
    t["e_f16"] = ("F16", [3], struct.pack("<3e", 1.0, -2.5, 65504.0))
    t["f_bf16"] = ("BF16", [2], struct.pack("<2H", bf16_bits(1.5), bf16_bits(-3.0)))
    t["g_i16"] = ("I16", [2, 1], struct.pack("<2h", -300, 300))
    t["h_i8"] = ("I8", [3], struct.pack("<3b", -128, 0, 127))
    t["i_u8"] = ("U8", [2, 2], bytes([0, 1, 200, 255]))
    t["j_bool"] = ("BOOL", [3], bytes([1, 0, 1]))
    return t


SIZE = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def main():
    t = tensors()
    order = sorted(t, key=lambda n: (-SIZE[t[n][0]], n))
    header = {"__metadata__": {"format": "pt", "note": "hand-written reference"}}
    data = b""
    for name in order:
        dtype, shape, raw = t[name]
        n = 1
        for s in shape:
            n *= s
        assert len(raw) == n * SIZE[dtype], name
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(struct.pack("<Q", len(text)) + text + data)
    print(f"wrote {OUT} ({8 + len(text) + len(data)} bytes)")


if __name__ == "__main__":
    main()
