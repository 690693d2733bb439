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


# ONNX (protobuf wire format, written field by field: ModelProto, GraphProto, NodeProto,
# TensorProto, AttributeProto field numbers from onnx/onnx.proto).
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((num << 3) | 2) + varint(len(data)) + data


def field_float(num, value):
    return varint((num << 3) | 5) + struct.pack("<f", value)


def tensor(name, dims, dtype, raw=None, floats=None, ints=None):
    t = b"".join(field_varint(1, d) for d in dims) + field_varint(2, dtype)
    if floats is not None:
        t += field_bytes(4, struct.pack("<%df" % len(floats), *floats))
    if ints is not None:
        t += field_bytes(7, b"".join(varint(i) for i in ints))
    t += field_bytes(8, name)
    if raw is not None:
        t += field_bytes(9, raw)
    return t


def attr_int(name, value):
    return field_bytes(1, name) + field_varint(3, value) + field_varint(20, 2)


def attr_ints(name, values):
    return field_bytes(1, name) + b"".join(field_varint(8, v) for v in values) + field_varint(20, 7)


def attr_tensor(name, t):
    return field_bytes(1, name) + field_bytes(5, t) + field_varint(20, 4)


def node(op, inputs, outputs, attrs=(), name=""):
    n = b"".join(field_bytes(1, i) for i in inputs) + b"".join(field_bytes(2, o) for o in outputs)
    if name:
        n += field_bytes(3, name)
    return n + field_bytes(4, op) + b"".join(field_bytes(5, a) for a in attrs)


def value_info(name, elem=1):
    return field_bytes(1, name) + field_bytes(2, field_bytes(1, field_varint(1, elem)))


def model(nodes, inits, inputs, outputs, opset=13):
    g = b"".join(field_bytes(1, n) for n in nodes) + field_bytes(2, "g")
    g += b"".join(field_bytes(5, t) for t in inits)
    g += b"".join(field_bytes(11, value_info(i)) for i in inputs)
    g += b"".join(field_bytes(12, value_info(o)) for o in outputs)
    return field_varint(1, 8) + field_bytes(7, g) + field_bytes(8, field_bytes(1, "") + field_varint(2, opset))


FLOAT, INT64 = 1, 7
write("onnx", "mlp", model(
    [node("Gemm", ["x", "w", "b"], ["h"], [attr_int("transB", 1)], "fc"), node("Relu", ["h"], ["r"]),
     node("Constant", [], ["half"], [attr_tensor("value", tensor("", [], FLOAT, floats=[0.5]))]),
     node("Mul", ["r", "half"], ["s"]), node("Reshape", ["s", "shape"], ["y"])],
    [tensor("w", [2, 3], FLOAT, raw=struct.pack("<6f", 1, 2, 3, 4, 5, 6)),
     tensor("b", [2], FLOAT, floats=[0.5, -1]), tensor("shape", [1], INT64, ints=[-1])],
    ["x"], ["y"]))
write("onnx", "conv_pool", model(
    [node("Conv", ["x", "k"], ["c"], [attr_ints("pads", [1, 1, 1, 1])]),
     node("MaxPool", ["c"], ["p"], [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])]),
     node("Slice", ["p"], ["y"], [attr_ints("starts", [0]), attr_ints("ends", [1]), attr_ints("axes", [1])])],
    [tensor("k", [1, 1, 3, 3], FLOAT, floats=[0.1] * 9)], ["x"], ["y"], opset=9))
write("onnx", "tensor", tensor("t", [2, 2], INT64, ints=[1, -2, 3, 1 << 40]))
