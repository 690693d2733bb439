"""C++ modules in Python models (tandem.nn.CppModule, tandem.nn.models) and Python models
where the C++ side takes a module (tandem.save_checkpoint / load_checkpoint, the format of
`tandem train`). Oracles: the same computation written with Python layers and
nn.functional on the same tensors (bitwise), eager vs compiled, uninterrupted training vs
a checkpoint round trip, and the `tandem` program itself."""
import copy
import os
import re
import subprocess

import numpy as np
import pytest

import tandem
from tandem import nn
from tandem.nn import functional as F


def t2n(t):
    return t.detach().numpy()


class Hybrid(nn.Module):
    """A Python model with a C++ child: C++ mlp 8-16-4 (Linear, ReLU, Linear), then a
    Python Linear(4, 3) and a buffer."""

    def __init__(self):
        super().__init__()
        self.body = nn.models.mlp([8, 16, 4])
        self.head = nn.Linear(4, 3)
        self.register_buffer("scale", tandem.tensor([1.0, 2.0, 0.5]))

    def forward(self, x):
        return self.head(self.body(x).relu()) * self.scale


class PurePython(nn.Module):
    """Hybrid with the C++ mlp written as Python layers under the same names."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        self.head = nn.Linear(4, 3)
        self.register_buffer("scale", tandem.tensor([1.0, 2.0, 0.5]))

    def forward(self, x):
        return self.head(self.body(x).relu()) * self.scale


def make_step(model, opt, loss_fn=F.mse_loss):
    """One training step: zero_grad, loss_fn(model(x), y), backward, opt.step(); returns the loss."""
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def twins(seed=0):
    tandem.manual_seed(seed)
    h = Hybrid()
    p = PurePython()
    p.load_state_dict(h.state_dict())
    return h, p


def test_models_are_the_cpp_reference_models():
    cnn = nn.models.fashion_cnn()
    assert isinstance(cnn, nn.CppModule) and cnn.cpp_module.name == "Sequential"
    assert [(n, tuple(p.shape)) for n, p in cnn.named_parameters()] == [
        ("0.weight", (32, 1, 3, 3)), ("0.bias", (32,)), ("3.weight", (64, 32, 3, 3)), ("3.bias", (64,)),
        ("7.weight", (128, 3136)), ("7.bias", (128,)), ("9.weight", (10, 128)), ("9.bias", (10,))]
    assert [type(m).__name__ for m in cnn.children()] == ["CppModule"] * 10
    assert "Conv2d(1, 32" in repr(cnn) and "Linear(in_features=128, out_features=10" in repr(cnn)
    # Its forward is nn.functional on its own parameters.
    x = tandem.randn(3, 1, 28, 28)
    sd = cnn.state_dict()
    h = F.max_pool2d(F.relu(F.conv2d(x, sd["0.weight"], sd["0.bias"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, sd["3.weight"], sd["3.bias"], padding=1)), 2)
    want = F.linear(F.relu(F.linear(h.flatten(1), sd["7.weight"], sd["7.bias"])), sd["9.weight"], sd["9.bias"])
    got = cnn(x)
    assert got.dtype is tandem.float32 and tuple(got.shape) == (3, 10)
    np.testing.assert_array_equal(t2n(got), t2n(want))
    mlp = nn.models.fashion_mlp()
    assert [n for n, _ in mlp.named_parameters()] == ["1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"]
    assert tuple(mlp(x).shape) == (3, 10)
    tandem.manual_seed(4)
    a = nn.models.mlp([3, 2])
    tandem.manual_seed(4)
    b = nn.models.mlp((3, 2))
    assert all(np.array_equal(t2n(u), t2n(v)) for u, v in zip(a.parameters(), b.parameters()))
    for bad in ([3], [3, 0]):
        with pytest.raises(ValueError):
            nn.models.mlp(bad)


def test_cpp_child_parameters_are_the_cpp_tensors():
    h, _ = twins()
    names = [n for n, _ in h.named_parameters()]
    assert names == ["body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias", "head.weight", "head.bias"]
    assert list(h.state_dict()) == ["scale"] + names
    w = h.body.get_parameter("0.weight")
    assert isinstance(w, nn.Parameter) and w.requires_grad and w.is_leaf
    assert w is next(h.body.parameters())  # stable objects: optimizers and hooks key on them
    # In-place writes from Python reach the C++ forward, and the reverse.
    x = tandem.randn(2, 8)
    with tandem.no_grad():
        w.mul_(0)
        h.body.get_parameter("0.bias").fill_(1.0)
    want = F.linear(F.relu(F.linear(tandem.ones(2, 16), h.body.get_parameter("2.weight"),
                                    h.body.get_parameter("2.bias"))), h.head.weight, h.head.bias) * h.scale
    np.testing.assert_array_equal(t2n(h(x)), t2n(want))
    cpp_w = dict(h.body.cpp_module.local_children())["0"].local_parameters()[0][1]
    assert t2n(cpp_w).tobytes() == t2n(w).tobytes()


def test_hybrid_trains_as_the_pure_python_model():
    h, p = twins(1)
    x, y = tandem.randn(6, 8), tandem.randn(6, 3)
    opt_h = tandem.optim.Adam(h.parameters(), lr=0.01)
    opt_p = tandem.optim.Adam(p.parameters(), lr=0.01)
    for _ in range(4):
        losses = []
        for m, opt in ((h, opt_h), (p, opt_p)):
            opt.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[0] == losses[1]
    for (n1, a), (n2, b) in zip(h.named_parameters(), p.named_parameters()):
        assert n1 == n2 and t2n(a).tobytes() == t2n(b).tobytes() and t2n(a.grad).tobytes() == t2n(b.grad).tobytes()


def test_train_eval_to_and_zero_grad_reach_the_cpp_tree():
    h, _ = twins()
    cpp = h.body.cpp_module
    assert h.body.training and cpp.training
    h.eval()
    assert not cpp.training and all(not c.training for _, c in cpp.local_children())
    assert not h.body.training and not h.head.training
    h.train()
    assert cpp.training and all(c.training for _, c in cpp.local_children())
    # Wrapping keeps the C++ flags as they are.
    inner = nn.models.mlp([2, 2])
    inner.cpp_module.train(False)
    assert not nn.CppModule(inner.cpp_module).training
    # to(dtype) converts the C++ module's tensors in place: the C++ forward follows.
    params = list(h.parameters())
    h.to(tandem.float64)
    assert [p.dtype for p in h.parameters()] == [tandem.float64] * 6
    assert all(a is b for a, b in zip(params, h.parameters()))
    out = h(tandem.randn(2, 8, dtype=tandem.float64))
    assert out.dtype is tandem.float64
    out.sum().backward()
    assert all(p.grad is not None for p in h.parameters())
    h.zero_grad()
    assert all(p.grad is None for p in h.parameters())


def test_load_state_dict_save_load_and_hooks(tmp_path):
    a, _ = twins(2)
    b, _ = twins(3)
    x = tandem.randn(4, 8)
    assert not np.array_equal(t2n(a(x)), t2n(b(x)))
    tandem.save(a.state_dict(), str(tmp_path / "a.safetensors"))
    b.load_state_dict(tandem.load(str(tmp_path / "a.safetensors")))
    np.testing.assert_array_equal(t2n(a(x)), t2n(b(x)))
    with pytest.raises(tandem.ShapeError):
        b.load_state_dict({**a.state_dict(), "body.0.bias": tandem.zeros(3)})
    # Python hooks on the C++ child run around the C++ call.
    seen = []
    handle = b.body.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    b.body.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    zero_in = b.head(b.body(tandem.zeros(4, 8)).relu()) * b.scale
    np.testing.assert_array_equal(t2n(b(x)), t2n(zero_in))
    assert seen[-1] == (4, 4)
    handle.remove()
    np.testing.assert_array_equal(t2n(b(x)), t2n(a(x)))


def test_compile_with_a_cpp_child():
    h, p = twins(5)
    x = tandem.randn(5, 8)
    f = tandem.compile(h)
    for mode in (True, False, True):
        h.train(mode)
        h.zero_grad()
        got = f(x)
        got.sum().backward()
        grads = [t2n(q.grad).copy() for q in h.parameters()]
        h.zero_grad()
        want = h(x)
        want.sum().backward()
        np.testing.assert_array_equal(t2n(got), t2n(want))
        for g, q in zip(grads, h.parameters()):
            np.testing.assert_array_equal(g, t2n(q.grad))
    cf = f.compiled_by_mode[True]
    assert cf.compiled_calls >= 1 and not cf.warnings
    report = tandem.explain(h, x)
    assert report.compiled and "addmm" in report.captured_ops and "state of module 'Sequential'" in str(report)
    # A whole training step with the C++ child compiles and matches the pure-Python model.
    opt_h = tandem.optim.SGD(h.parameters(), lr=0.1, momentum=0.9)
    opt_p = tandem.optim.SGD(p.parameters(), lr=0.1, momentum=0.9)
    p.load_state_dict(h.state_dict())
    y = tandem.randn(5, 3)

    step_h = tandem.compile(make_step(h, opt_h))
    step_p = make_step(p, opt_p)
    for _ in range(4):
        assert step_h(x, y).item() == step_p(x, y).item()
    assert all(t2n(a).tobytes() == t2n(b).tobytes() for a, b in zip(h.parameters(), p.parameters()))


def test_cpp_module_errors():
    m = nn.models.mlp([4, 2])
    with pytest.raises(TypeError, match="cannot be replaced"):
        m.get_submodule("0").weight = nn.Parameter(tandem.zeros(2, 4))
    with pytest.raises(TypeError, match="cannot be replaced"):
        m.get_submodule("0").bias = None
    with pytest.raises(TypeError, match="cannot be deleted"):
        del m.get_submodule("0").weight
    with pytest.raises(TypeError):
        m.get_submodule("0").register_parameter("extra", nn.Parameter(tandem.zeros(1)))
    with pytest.raises(TypeError):
        m.add_module("extra", nn.ReLU())
    m.note = "free attributes are fine"
    assert m.note == "free attributes are fine"
    with pytest.raises(TypeError, match="input 0 must be a Tensor"):
        m(np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(tandem.ShapeError):
        m(tandem.zeros(2, 5))
    with pytest.raises(ValueError):
        m(tandem.zeros(2, 4), tandem.zeros(2, 4))
    with pytest.raises(tandem.NotImplementedError):
        copy.deepcopy(m)
    with pytest.raises(TypeError):
        nn.CppModule(nn.Linear(2, 2))


# ---- checkpoints: Python models where the C++ side takes a module ------------------------

def adam_steps(model, opt, x, y, n):
    out = []
    for _ in range(n):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def test_checkpoint_resumes_training_exactly(tmp_path):
    path = str(tmp_path / "ck.safetensors")
    h, _ = twins(6)
    x, y = tandem.randn(6, 8), tandem.randn(6, 3)
    opt = tandem.optim.Adam(h.parameters(), lr=0.01, weight_decay=0.001)
    adam_steps(h, opt, x, y, 3)
    tandem.save_checkpoint(path, h, opt, {"epoch": "3"})
    want = adam_steps(h, opt, x, y, 3)  # uninterrupted
    r, _ = twins(7)
    opt_r = tandem.optim.Adam(r.parameters(), lr=0.5)
    assert tandem.load_checkpoint(path, r, opt_r) == {"epoch": "3"}
    assert opt_r.param_groups[0]["lr"] == 0.01 and opt_r.param_groups[0]["weight_decay"] == 0.001
    assert adam_steps(r, opt_r, x, y, 3) == want
    # The file: tandem train's layout, the model's tensors as state_dict names them.
    pairs, meta = tandem._C._load_safetensors(path)
    names = [n for n, _ in pairs]
    assert [n[len("model."):] for n in names if n.startswith("model.")] == list(r.state_dict())
    assert "optimizer.state.0.exp_avg" in names and "optimizer.state.5.step" in names
    assert meta["tandem.format"] == "checkpoint-1" and meta["tandem.optimizer"] == "Adam"
    # Model only, then errors naming the file.
    tandem.save_checkpoint(path, r)
    with pytest.raises(RuntimeError, match="ck.safetensors"):
        tandem.load_checkpoint(path, r, opt_r)
    with pytest.raises(ValueError, match=r"(?s)ck.safetensors.*head"):
        tandem.load_checkpoint(path, nn.models.mlp([8, 16, 4]))
    with pytest.raises(ValueError):
        tandem.save_checkpoint(path, r, metadata={"tandem.x": "1"})
    with pytest.raises(TypeError):
        tandem.save_checkpoint(path, object())


def test_shared_submodules_and_non_persistent_buffers(tmp_path):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = self.a
            self.register_buffer("tmp", tandem.zeros(1), persistent=False)
            self.register_buffer("keep", tandem.ones(1))
    path = str(tmp_path / "t.safetensors")
    m = Tied()
    tandem.save_checkpoint(path, m)
    names = [n for n, _ in tandem._C._load_safetensors(path)[0]]
    assert names == ["model." + k for k in m.state_dict()] and "model.tmp" not in names
    other = Tied()
    tandem.load_checkpoint(path, other)
    assert t2n(other.a.weight).tobytes() == t2n(m.a.weight).tobytes()


def tandem_program():
    exe = os.path.join(os.path.dirname(tandem.__file__), os.pardir, os.pardir, "tools", "tandem")
    if not os.path.exists(exe):
        pytest.skip("build/tools/tandem is not built")
    return os.path.normpath(exe)


def test_checkpoints_cross_between_tandem_train_and_python(tmp_path):
    exe = tandem_program()
    out = tmp_path / "run"
    r = subprocess.run([exe, "train", "--model", "mlp", "--optimizer", "adam", "--epochs", "1", "--batch-size", "64",
                        "--train-limit", "512", "--test-limit", "500", "--seed", "3", "--progress", "none",
                        "--threads", "1", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # C++ -> Python: the checkpoint loads into tandem.nn.models.fashion_mlp and an Adam.
    model = nn.models.fashion_mlp()
    opt = tandem.optim.Adam(model.parameters(), lr=0.5)
    meta = tandem.load_checkpoint(str(out / "checkpoint.safetensors"), model, opt)
    assert meta["train.epoch"] == "1" and opt.param_groups[0]["lr"] == 0.001
    assert opt.state[next(model.parameters())]["step"].item() == 8  # 512 / 64 steps
    test = tandem.utils.data.Subset(tandem.datasets.FashionMNIST(train=False), range(500))

    def correct(m):
        m.eval()
        n = 0
        with tandem.no_grad():
            for x, y in tandem.utils.data.DataLoader(test, batch_size=250):
                n += int((m((x - 0.2860) / 0.3530).argmax(1) == y).sum())
        return n
    header, row = (out / "metrics.csv").read_text().splitlines()[:2]
    cpp_accuracy = float(row.split(",")[header.split(",").index("test_accuracy")])  # a fraction
    assert 0.3 < cpp_accuracy < 1 and correct(model) == round(cpp_accuracy * 500)
    # Python -> C++: train on in Python, save, and `tandem eval` agrees on the accuracy.
    model.train()
    x, y = next(iter(tandem.utils.data.DataLoader(tandem.datasets.FashionMNIST(train=True), batch_size=128)))
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model((x - 0.2860) / 0.3530), y).backward()
        opt.step()
    path = str(tmp_path / "py.safetensors")
    tandem.save_checkpoint(path, model, opt)
    r = subprocess.run([exe, "eval", "--checkpoint", path, "--model", "mlp", "--dataset", "fashion-mnist",
                        "--test-limit", "500", "--threads", "1", "--svg", str(tmp_path / "c.svg")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"test accuracy [0-9.]+% \((\d+)/500\)", r.stdout)
    assert m, r.stdout
    assert int(m.group(1)) == correct(model)


def _example_cnn():
    """The Python nn.Module of examples/train_fashion_mnist.py (the cnn of `tandem train`
    written with tandem.nn's layers, created in the C++ model's order)."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_fashion_mnist.py")
    spec = importlib.util.spec_from_file_location("train_fashion_mnist", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CNN


PythonCNN = _example_cnn()


def test_python_layers_draw_what_the_cpp_layers_draw():
    # Each layer type against its C++ counterpart, same seed: the same init calls, so the
    # same values bit for bit (they once drew through rand(), which gave other values).
    for seed in (0, 7):
        tandem.manual_seed(seed)
        py = PythonCNN()
        tandem.manual_seed(seed)
        cpp = nn.models.fashion_cnn()
        got = [t2n(p) for p in py.parameters()]
        want = [t2n(p) for p in cpp.parameters()]
        assert len(got) == len(want) == 8
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.tobytes() == w.tobytes()
    tandem.manual_seed(3)
    a = nn.Linear(5, 4, bias=False)
    tandem.manual_seed(3)
    b = nn.models.mlp([5, 4])
    assert t2n(a.weight).tobytes() == t2n(list(b.parameters())[0]).tobytes()


@pytest.mark.parametrize("compiled", [False, True])
def test_python_cnn_trains_with_the_cpp_models_losses(compiled):
    # The example's acceptance: the model written in Python, same seed, same batches, same
    # optimizer: bitwise the losses of the C++ reference model (eager and compiled step).
    def run(make):
        tandem.manual_seed(11)
        model = make()
        opt = tandem.optim.Adam(model.parameters(), lr=1e-3)
        tandem.manual_seed(12)
        batches = [(tandem.randn([16, 1, 28, 28]), tandem.randint(0, 10, [16])) for _ in range(4)]

        step = make_step(model, opt, F.cross_entropy)
        if compiled:
            step = tandem.compile(step)
        return [step(x, y).item() for x, y in batches]
    py = run(PythonCNN)
    cpp = run(nn.models.fashion_cnn)
    assert py == cpp
    assert py[-1] != py[0]
