"""tandem.save / tandem.load: safetensors files, read back by tandem and by a hand-written
reader of the format (numpy + json) as the oracle; atomic writes; corrupt files."""
import collections
import json
import os
import struct

import numpy as np
import pytest

import tandem
from tandem import nn


def read_safetensors(path):
    """A minimal independent reader: {name: numpy array}, metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    kinds = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
             "U8": "u1", "BOOL": "?"}
    out = {}
    for name, e in header.items():
        a, b = e["data_offsets"]
        buf = raw[8 + n + a:8 + n + b]
        if e["dtype"] == "BF16":
            u = np.frombuffer(buf, "<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(buf, kinds[e["dtype"]])
        out[name] = arr.reshape(e["shape"])
    return out, meta


def test_state_dict_round_trip_and_format(tmp_path):
    tandem.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    model(tandem.randn(5, 3))  # moves the running stats
    path = tmp_path / "model.safetensors"
    sd = model.state_dict()
    tandem.save(sd, path, metadata={"note": "hello"})
    arrays, meta = read_safetensors(path)
    assert meta == {"note": "hello"}  # a flat state dict: no structure entry
    assert sorted(arrays) == sorted(sd)
    for k, v in sd.items():
        np.testing.assert_array_equal(arrays[k], v.numpy())
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
    assert (8 + n) % 8 == 0  # the buffer starts aligned, as the reference writer does
    loaded, meta2 = tandem.load(str(path), with_metadata=True)
    assert isinstance(loaded, collections.OrderedDict) and list(loaded) == list(sd) and meta2 == {"note": "hello"}
    assert loaded["1.num_batches_tracked"].dtype is tandem.int64
    other = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    other.load_state_dict(loaded)
    for (k, a), b in zip(sd.items(), other.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # The loaded tensors own their memory.
    loaded["0.weight"].zero_()
    assert model[0].weight.detach().abs().sum().item() > 0


def test_nested_checkpoint_round_trip(tmp_path):
    w = nn.Parameter(tandem.randn(3, 2))
    opt = tandem.optim.Adam([w], lr=0.01, betas=(0.8, 0.95))
    w.grad = tandem.ones(3, 2)
    opt.step()
    view = tandem.arange(12, dtype=tandem.float64).reshape(3, 4)[:, 1::2]  # non-contiguous
    ckpt = {"model": {"w": w}, "optimizer": opt.state_dict(), "epoch": 3, "loss": 0.25, "name": "run",
            "flags": [True, None], "pair": (1, 2.5), "view": view, "bf": tandem.tensor([1.5, -2.0]).bfloat16(),
            "scalar": tandem.tensor(7), "empty": tandem.zeros(0, 3), "a/b": tandem.ones(1), "a": {"b": tandem.zeros(1)}}
    path = tmp_path / "ckpt.safetensors"
    tandem.save(ckpt, path)
    back = tandem.load(path)
    assert back["epoch"] == 3 and back["loss"] == 0.25 and back["name"] == "run"
    assert back["flags"] == [True, None] and back["pair"] == (1, 2.5)
    np.testing.assert_array_equal(back["model"]["w"].numpy(), w.detach().numpy())
    np.testing.assert_array_equal(back["view"].numpy(), view.numpy())
    assert back["view"].is_contiguous()
    assert back["bf"].dtype is tandem.bfloat16 and back["bf"].float().tolist() == [1.5, -2.0]
    assert back["scalar"].dim() == 0 and back["scalar"].item() == 7 and back["empty"].shape == (0, 3)
    assert back["a/b"].tolist() == [1.0] and back["a"]["b"].tolist() == [0.0]
    sd = back["optimizer"]
    assert sorted(sd["state"]) == [0] and sd["param_groups"][0]["betas"] == (0.8, 0.95)
    opt2 = tandem.optim.Adam([nn.Parameter(tandem.zeros(3, 2))], lr=0.01)
    opt2.load_state_dict(sd)
    np.testing.assert_array_equal(opt2.state_dict()["state"][0]["exp_avg"].numpy(),
                                  opt.state_dict()["state"][0]["exp_avg"].numpy())
    arrays, meta = read_safetensors(path)
    assert "tandem.pytree" in meta and "model/w" in arrays


def test_save_is_atomic_and_rejects_what_it_cannot_store(tmp_path):
    path = tmp_path / "x.safetensors"
    tandem.save({"a": tandem.ones(2)}, path)
    original = path.read_bytes()
    with pytest.raises(TypeError):
        tandem.save({"a": object()}, path)
    with pytest.raises(TypeError):
        tandem.save({("tuple", "key"): tandem.ones(1)}, path)
    with pytest.raises(ValueError):
        tandem.save({"a": tandem.ones(1)}, path, metadata={"tandem.pytree": "x"})
    with pytest.raises(TypeError):
        with open(path, "rb") as fh:
            tandem.save({"a": tandem.ones(1)}, fh)
    with pytest.raises(RuntimeError, match="nonexistent"):
        tandem.save({"a": tandem.ones(1)}, tmp_path / "nonexistent" / "y.safetensors")
    assert path.read_bytes() == original
    assert sorted(os.listdir(tmp_path)) == ["x.safetensors"]  # no temporary files left behind
    tandem.save({"b": tandem.zeros(3)}, path)
    assert list(tandem.load(path)) == ["b"]
    assert sorted(os.listdir(tmp_path)) == ["x.safetensors"]


def test_corrupt_files_raise_clear_errors(tmp_path):
    good = tmp_path / "good.safetensors"
    tandem.save({"w": tandem.arange(10, dtype=tandem.float32)}, good)
    raw = good.read_bytes()
    cases = {
        "truncated": raw[:-4],
        "short": raw[:5],
        "huge_header": struct.pack("<Q", 1 << 40) + raw[8:],
        "not_json": raw[:8] + b"{" + b"x" * (len(raw) - 9),
    }
    for name, data in cases.items():
        p = tmp_path / f"{name}.safetensors"
        p.write_bytes(data)
        with pytest.raises(RuntimeError) as info:
            tandem.load(p)
        assert str(p) in str(info.value), name
        assert isinstance(info.value, tandem.Error)
    with pytest.raises(RuntimeError, match="missing"):
        tandem.load(tmp_path / "missing.safetensors")
    # A structure entry that names a tensor the file lacks.
    tandem.save({"x": [tandem.ones(1)]}, tmp_path / "s.safetensors")
    pairs = tandem.load(tmp_path / "s.safetensors")
    tandem._C._save_safetensors(str(tmp_path / "bad.safetensors"), [("other", tandem.ones(1))],
                                {"tandem.pytree": json.dumps({"t": "x/0"})})
    with pytest.raises(RuntimeError, match="does not hold"):
        tandem.load(tmp_path / "bad.safetensors")
    assert pairs["x"][0].tolist() == [1.0]
    with pytest.raises(NotImplementedError):
        tandem.load(good, map_location="cuda:0")
    assert tandem.load(good, map_location="cpu")["w"].tolist() == list(range(10))
