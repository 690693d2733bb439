#!/usr/bin/env python3
"""Writes the seed corpora of the IDX and safetensors fuzz targets (corpus/idx,
corpus/safetensors): small valid files of each kind, so the fuzzer starts from inputs
that reach deep into the loaders. The checkpoint seed comes from the library itself:
TANDEM_FUZZ_WRITE_SEED=corpus/checkpoint/valid build-fuzz/tests/fuzz/fuzz_checkpoint
"""
import gzip
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(sub, name, data):
    os.makedirs(os.path.join(HERE, "corpus", sub), exist_ok=True)
    with open(os.path.join(HERE, "corpus", sub, name), "wb") as f:
        f.write(data)


def idx(code, dims, payload):
    return bytes([0, 0, code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


images = idx(0x08, [2, 3, 4], bytes(range(24)))
write("idx", "u8_images", images)
write("idx", "u8_images.gz", gzip.compress(images, mtime=0))
write("idx", "u8_labels.gz", gzip.compress(idx(0x08, [5], bytes([0, 1, 2, 9, 3])), mtime=0))
write("idx", "f32", idx(0x0D, [2, 2], struct.pack(">4f", 0.5, -1.0, 2.0, 3.25)))
write("idx", "i32.gz", gzip.compress(idx(0x0C, [3], struct.pack(">3i", 1, -2, 70000)), mtime=0))
write("idx", "f64_4d", idx(0x0E, [1, 1, 1, 2], struct.pack(">2d", 1.5, -0.25)))


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


write("safetensors", "mixed", safetensors([
    ("w", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
    ("idx", "I64", [3], struct.pack("<3q", 0, -1, 5)),
    ("mask", "BOOL", [2], b"\x01\x00"),
    ("scalar", "F64", [], struct.pack("<d", 2.5)),
    ("empty", "F16", [0, 3], b""),
], {"format": "pt", "note": "seed"}))
write("safetensors", "empty", safetensors([]))
write("safetensors", "bf16_u8", safetensors([
    ("h", "BF16", [2], b"\x80\x3f\x00\x40"),
    ("b", "U8", [1, 3], b"\x01\x02\x03"),
]))
