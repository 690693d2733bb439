"""nn modules written in Python, the C++ optimizers, and tandem.compile over Python functions."""
import collections
import gc
import threading

import numpy as np
import pytest

import tandem
from tandem import nn


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("scale", tandem.tensor([2.0]))
        self.note = "not a parameter"

    def forward(self, x):
        return self.fc2(self.fc1(x).relu()) * self.scale


def test_module_registers_by_attribute():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf for p in m.parameters())
    assert [n for n, _ in m.named_buffers()] == ["scale"]
    # PyTorch's (and the C++ Module's) order: a module's own parameters and buffers, then its children's.
    assert list(m.state_dict()) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert m.fc1.weight.shape == (4, 3) and m.fc2.bias is None
    assert m.note == "not a parameter"
    assert "fc1): Linear(in_features=3, out_features=4, bias=True)" in repr(m)


def test_linear_forward_matches_numpy_and_init_bounds():
    tandem.manual_seed(1)
    lin = nn.Linear(5, 3)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    bound = 1 / np.sqrt(5)
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound) and w.std() > 0.1 * bound
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_allclose(lin(tandem.tensor(x)).detach().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)


def test_train_eval_zero_grad_and_state_dict_round_trip():
    m = TwoLayer()
    assert m.training and m.fc1.training
    m.eval()
    assert not m.training and not m.fc1.training
    m.train()
    out = m(tandem.ones(2, 3)).sum()
    out.backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad()
    assert m.fc1.weight.grad is None
    other = TwoLayer()
    other.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(other.fc1.weight.detach().numpy(), m.fc1.weight.detach().numpy())
    with pytest.raises(KeyError):
        other.load_state_dict({"fc1.weight": m.fc1.weight})
    bad = collections.OrderedDict(m.state_dict())
    bad["fc1.bias"] = tandem.zeros(7)
    with pytest.raises(RuntimeError):
        other.load_state_dict(bad)


def test_sequential():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[1], nn.ReLU)
    assert [n for n, _ in s.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert s(tandem.ones(4, 2)).shape == (4, 1)


def test_sgd_step_matches_formula():
    p = nn.Parameter(tandem.tensor([1.0, -2.0]))
    opt = tandem.optim.SGD([p], lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    # step 1: g = 2p = [2, -4], b = g, p = [0.8, -1.6]; step 2: g = [1.6, -3.2],
    # b = 0.9 * [2, -4] + g = [3.4, -6.8], p = [0.8 - 0.34, -1.6 + 0.68]
    np.testing.assert_allclose(p.detach().numpy(), [0.46, -0.92], rtol=1e-6)


def test_adam_step_matches_formula():
    p = nn.Parameter(tandem.tensor([0.5, -1.0], dtype=tandem.float64))
    opt = tandem.optim.Adam([p], lr=0.01)
    (p * p).sum().backward()
    opt.step()
    g = np.array([1.0, -2.0])
    m, v = 0.1 * g, 0.001 * g * g
    expected = np.array([0.5, -1.0]) - 0.01 / 0.1 * m / (np.sqrt(v) / np.sqrt(0.001) + 1e-8)
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-12)


def test_optimizer_rejects_bad_arguments():
    with pytest.raises(ValueError):
        tandem.optim.SGD([nn.Parameter(tandem.ones(1))], lr=-1.0)
    with pytest.raises(TypeError):
        tandem.optim.SGD([1.0], lr=0.1)


def test_training_loop_reduces_loss():
    tandem.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = tandem.optim.Adam(model.parameters(), lr=0.01)
    x = tandem.randn(64, 4)
    y = (x * tandem.tensor([1.0, -2.0, 0.5, 3.0])).sum(1, keepdim=True)
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_compile_matches_eager_and_caches():
    def f(a, b):
        return (a @ b).relu() * 2 + a.sum()

    cf = tandem.compile(f)
    a, b = tandem.randn(3, 4), tandem.randn(4, 5)
    np.testing.assert_array_equal(cf(a, b).numpy(), f(a, b).numpy())
    np.testing.assert_array_equal(cf(a, b).numpy(), f(a, b).numpy())
    assert cf.compiled.num_programs == 1 and cf.compiled.compiled_calls >= 1
    a2, b2 = tandem.randn(2, 4), tandem.randn(4, 1)
    np.testing.assert_array_equal(cf(a2, b2).numpy(), f(a2, b2).numpy())
    assert cf.compiled.num_programs == 2


def test_compile_multiple_outputs_and_decorator():
    @tandem.compile
    def f(x):
        return x + 1, x * 3

    x = tandem.arange(4, dtype=tandem.float32)
    for _ in range(2):
        r = f(x)
        assert isinstance(r, tuple) and r[0].tolist() == [1, 2, 3, 4] and r[1].tolist() == [0, 3, 6, 9]


def test_compile_graph_break_runs_eagerly_or_raises_when_strict():
    def f(x):
        return x * x.sum().item()

    x = tandem.tensor([1.0, 2.0])
    cf = tandem.compile(f)
    assert cf(x).tolist() == [3.0, 6.0]
    assert cf.compiled.eager_calls >= 1
    strict = tandem.compile(f, strict=True)
    with pytest.raises(tandem.GraphBreak):
        strict(x)


def test_compile_propagates_python_errors():
    def f(x):
        raise KeyError("inside")

    with pytest.raises(KeyError):
        tandem.compile(f)(tandem.ones(1))
    with pytest.raises(TypeError):
        tandem.compile(lambda x: 3)(tandem.ones(1))


def test_compile_gradients_match_eager():
    w = tandem.tensor([0.5, -1.5, 2.0], requires_grad=True)
    cf = tandem.compile(lambda x, w: (x * w).tanh().sum())
    x = tandem.tensor([1.0, 0.25, -0.5])
    cf(x, w).backward()
    g_compiled = w.grad.numpy().copy()
    w.grad = None
    (x * w).tanh().sum().backward()
    np.testing.assert_allclose(g_compiled, w.grad.numpy(), rtol=1e-6)


def test_numpy_backed_tensor_freed_during_backward_without_gil():
    arr = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    x = tandem.from_numpy(arr)
    w = tandem.ones(3, requires_grad=True)
    y = (x * w).sum()
    del x, arr
    gc.collect()
    y.backward()  # frees the graph (and the numpy-backed input) with the GIL released
    assert w.grad.tolist() == [1.0, 2.0, 3.0]


def test_ops_from_threads():
    results = []

    def work(seed):
        a = tandem.full((64, 64), float(seed))
        results.append((a @ a).sum().item())

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(float(s * s * 64 * 64 * 64) for s in range(4))


def test_compile_module_matches_eager_with_parameter_gradients():
    tandem.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    cm = tandem.compile(model)
    x = tandem.randn(4, 3)
    for _ in range(2):
        model.zero_grad()
        out_c = cm(x)
        out_c.sum().backward()
        grads_c = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        out_e = model(x)
        out_e.sum().backward()
        np.testing.assert_allclose(out_c.detach().numpy(), out_e.detach().numpy(), rtol=1e-6)
        for gc_, p in zip(grads_c, model.parameters()):
            np.testing.assert_allclose(gc_, p.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())  # restored after capture
    assert cm.compiled_by_mode[True].compiled_calls >= 1


def test_compiled_module_sees_parameter_updates():
    lin = nn.Linear(2, 1)
    cm = tandem.compile(lin)
    x = tandem.ones(1, 2)
    first = cm(x).item()
    with tandem.no_grad():
        lin.bias += 1.0
    assert cm(x).item() == pytest.approx(first + 1.0)


def test_interpreter_exits_cleanly_with_live_objects():
    import subprocess
    import sys
    script = """
import numpy as np, tandem
from tandem import nn
keep = {}
keep['np'] = tandem.from_numpy(np.ones(3, dtype=np.float32))
keep['f'] = tandem.compile(lambda a: a * 2)
keep['f'](tandem.ones(2))
x = tandem.ones(2, requires_grad=True)
x.register_hook(lambda g: g)
keep['graph'] = (x * keep['np'][:2]).sum()
class Sq(tandem.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a
    @staticmethod
    def backward(ctx, g):
        return 2 * g * ctx.saved_tensors[0]
keep['fn'] = Sq.apply(x)
keep['m'] = tandem.compile(nn.Linear(2, 2))
keep['m'](tandem.ones(1, 2))
print("ok")
"""
    site = ["-S"] if sys.flags.no_site else []  # as this interpreter runs (ctest: no site)
    r = subprocess.run([sys.executable, *site, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_functional_pytorch_signatures():
    F = nn.functional
    w = tandem.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    idx = tandem.tensor([[2, 0]])
    e = F.embedding(idx, w)
    assert e.shape == (1, 2, 2) and e.tolist() == [[[4.0, 5.0], [0.0, 1.0]]]
    x = tandem.ones(1000)
    assert F.dropout(x, 0.5, training=False).tolist() == x.tolist()
    y = F.dropout(x, p=0.5)
    kept = y.numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 300 < (kept == 0).sum() < 700
    img = tandem.arange(16, dtype=tandem.float32).reshape(1, 1, 4, 4)
    p = F.max_pool2d(img, 2, stride=None)  # None: the default (stride = kernel)
    assert p.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]


def _conv2d_ref(x, w, b, stride, padding):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b[None, :, None, None]


def test_cnn_layers_against_numpy():
    tandem.manual_seed(0)
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 5)).astype(np.float32)
    y = conv(tandem.tensor(x))
    ref = _conv2d_ref(x, conv.weight.detach().numpy(), conv.bias.detach().numpy(), 2, 1)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    bound = 1 / np.sqrt(2 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    pool = nn.MaxPool2d(2)
    p = pool(tandem.tensor(x)).numpy()
    np.testing.assert_array_equal(p, x[:, :, :4, :4].reshape(2, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.5),
                          nn.Linear(4 * 2 * 2, 3))
    model.eval()
    logits = model(tandem.tensor(x))
    assert logits.shape == (2, 3)
    target = tandem.tensor([0, 2])
    loss = nn.CrossEntropyLoss()(logits, target)
    np.testing.assert_allclose(loss.item(), nn.functional.cross_entropy(logits, target).item())
    loss.backward()
    assert model[0].weight.grad.shape == (4, 2, 3, 3)
    assert nn.MSELoss(reduction="sum")(tandem.ones(2), tandem.zeros(2)).item() == 2.0
