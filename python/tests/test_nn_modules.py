"""nn.Module completeness (hooks, to(dtype), traversal), the built-in layers, nn.functional
additions and nn.init, against numpy and (when it imports) PyTorch."""
import math

import numpy as np
import pytest

import tandem
from tandem import nn
from tandem.nn import functional as F


def t2n(t):
    return t.detach().numpy()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.block = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("scale", tandem.tensor([2.0]))

    def forward(self, x):
        return self.block(self.fc1(x)) * self.scale


# ---------------------------------------------------------------- hooks
def test_forward_pre_hook_and_forward_hook_replace_and_remove():
    m = nn.Linear(2, 2)
    x = tandem.ones(1, 2)
    base = t2n(m(x)).copy()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append((mod, t2n(args[0]).copy())) or out + 1)
    y = m(x)
    w, b = t2n(m.weight), t2n(m.bias)
    np.testing.assert_allclose(t2n(y), 2 * np.ones((1, 2)) @ w.T + b + 1, rtol=1e-6)
    assert calls[0][0] is m and calls[0][1].tolist() == [[2.0, 2.0]]  # the forward hook sees the new args
    h1.remove()
    h2.remove()
    h2.remove()  # idempotent
    np.testing.assert_array_equal(t2n(m(x)), base)
    # A pre-hook returning a single value: it becomes the only argument.
    with m.register_forward_pre_hook(lambda mod, args: args[0] * 0):
        np.testing.assert_allclose(t2n(m(x)), b[None, :], rtol=1e-6)
    np.testing.assert_array_equal(t2n(m(x)), base)


def test_full_backward_hook_sees_and_replaces_gradients():
    tandem.manual_seed(0)
    m = nn.Linear(3, 2)
    x = tandem.randn(4, 3, requires_grad=True)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"], seen["go"] = [t2n(g).copy() for g in grad_input], [t2n(g).copy() for g in grad_output]
        return (grad_input[0] * 3,)
    handle = m.register_full_backward_hook(hook)
    out = m(x)
    (out * tandem.tensor([1.0, 2.0])).sum().backward()
    go = np.tile(np.array([1.0, 2.0], dtype=np.float32), (4, 1))
    np.testing.assert_allclose(seen["go"][0], go)
    np.testing.assert_allclose(seen["gi"][0], go @ t2n(m.weight), rtol=1e-6)
    np.testing.assert_allclose(t2n(x.grad), 3 * go @ t2n(m.weight), rtol=1e-6)
    # Parameter gradients are not affected by the hook.
    np.testing.assert_allclose(t2n(m.weight.grad), go.T @ t2n(x), rtol=1e-5)
    handle.remove()
    x.grad = None
    m(x).sum().backward()
    np.testing.assert_allclose(t2n(x.grad), np.ones((4, 2), np.float32) @ t2n(m.weight), rtol=1e-6)


def test_hook_exceptions_propagate_with_traceback():
    m = nn.Linear(2, 2)

    def bad_hook(mod, args):
        raise KeyError("from the hook")
    m.register_forward_pre_hook(bad_hook)
    with pytest.raises(KeyError, match="from the hook") as info:
        m(tandem.ones(1, 2))
    assert any(entry.name == "bad_hook" for entry in info.traceback)

    class Failing(nn.Module):
        def forward(self, x):
            raise ValueError("inside forward")
    with pytest.raises(ValueError, match="inside forward") as info:
        nn.Sequential(nn.ReLU(), Failing())(tandem.ones(2))
    assert any(entry.name == "forward" for entry in info.traceback)

    m2 = nn.Linear(2, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: 1 / 0)
    y = m2(tandem.ones(1, 2, requires_grad=True)).sum()
    with pytest.raises(ZeroDivisionError):
        y.backward()


# ---------------------------------------------------------------- traversal, to(), state
def test_traversal_apply_and_lookup():
    m = Net()
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "block", "block.0", "block.1"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "Sequential"]
    assert len(list(m.modules())) == 5
    shared = nn.Linear(1, 1)
    twice = nn.Sequential(shared, shared)
    assert len(list(twice.modules())) == 2 and len(list(twice.named_modules(remove_duplicate=False))) == 3
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Linear", "Sequential", "Net"]  # children first, as PyTorch
    assert m.get_submodule("block.1") is m.block[1]
    assert m.get_parameter("block.1.bias") is m.block[1].bias
    assert m.get_buffer("scale") is m.scale
    with pytest.raises(AttributeError):
        m.get_submodule("block.7")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    # Assigning a tensor to a buffer's name keeps it a buffer.
    m.scale = tandem.tensor([3.0])
    assert [n for n, _ in m.named_buffers()] == ["scale"] and m.state_dict()["scale"].tolist() == [3.0]
    m.register_buffer("tmp", tandem.zeros(1), persistent=False)
    assert "tmp" not in m.state_dict() and "tmp" in dict(m.named_buffers())
    with pytest.raises(TypeError):
        m.register_parameter("w", tandem.zeros(2))


def test_to_dtype_keeps_identity_and_optimizer_follows():
    tandem.manual_seed(1)
    m = Net()
    opt = tandem.optim.SGD(m.parameters(), lr=0.1)
    w = m.fc1.weight
    before = t2n(w).astype(np.float64)
    m(tandem.ones(2, 3)).sum().backward()
    assert m.double() is m
    assert m.fc1.weight is w and w.dtype is tandem.float64 and m.scale.dtype is tandem.float64
    assert w.grad.dtype is tandem.float64 and isinstance(w, nn.Parameter) and w.requires_grad
    np.testing.assert_array_equal(t2n(w), before)
    g = t2n(w.grad).copy()
    opt.step()  # the optimizer built before .double() updates the converted tensors
    np.testing.assert_allclose(t2n(w), before - 0.1 * g, rtol=1e-12)
    out = m(tandem.ones(2, 3, dtype=tandem.float64))
    assert out.dtype is tandem.float64
    m.to(tandem.float32)
    assert w.dtype is tandem.float32
    assert m.to("cpu") is m
    with pytest.raises(TypeError):
        m.to(tandem.int64)
    with pytest.raises(NotImplementedError):
        m.to("cuda")


def test_zero_grad_modes_and_containers():
    m = nn.Linear(2, 1)
    m(tandem.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert m.weight.grad.tolist() == [[0.0, 0.0]]
    m.zero_grad()
    assert m.weight.grad is None
    ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()])
    ml.append(nn.Tanh())
    assert len(ml) == 3 and isinstance(ml[-1], nn.Tanh) and [n for n, _ in ml.named_children()] == ["0", "1", "2"]
    assert len(list(ml.parameters())) == 2
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(list(md.parameters())) == 2
    pl = nn.ParameterList([tandem.zeros(2), tandem.ones(3)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]


# ---------------------------------------------------------------- layers against numpy
def test_batchnorm_running_stats_match_numpy():
    tandem.manual_seed(2)
    bn = nn.BatchNorm1d(3)
    x = tandem.randn(8, 3)
    y = bn(x)
    a = t2n(x)
    mean, var = a.mean(0), a.var(0)
    np.testing.assert_allclose(t2n(y), (a - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(t2n(bn.running_mean), 0.1 * mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(t2n(bn.running_var), 0.9 + 0.1 * a.var(0, ddof=1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = t2n(bn.running_mean).copy(), t2n(bn.running_var).copy()
    np.testing.assert_allclose(t2n(bn(x)), (a - rm) / np.sqrt(rv + 1e-5), rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    cma = nn.BatchNorm2d(2, momentum=None)
    x1, x2 = tandem.randn(2, 2, 3, 3), tandem.randn(2, 2, 3, 3)
    cma(x1)
    cma(x2)
    m1, m2 = t2n(x1).mean((0, 2, 3)), t2n(x2).mean((0, 2, 3))
    np.testing.assert_allclose(t2n(cma.running_mean), (m1 + m2) / 2, rtol=1e-5, atol=1e-7)
    with pytest.raises(tandem.ShapeError):
        nn.BatchNorm2d(2)(tandem.randn(2, 2))
    with pytest.raises(ValueError):
        nn.BatchNorm1d(0)


def test_pooling_layers_match_numpy():
    x = tandem.arange(24, dtype=tandem.float32).reshape(1, 2, 12)
    v, i = nn.MaxPool1d(3, return_indices=True)(x)
    np.testing.assert_array_equal(t2n(v), t2n(x).reshape(1, 2, 4, 3).max(-1))
    assert i.tolist()[0][0] == [2, 5, 8, 11]
    img = tandem.randn(1, 1, 4, 4)
    pooled, idx = nn.MaxPool2d(2, return_indices=True)(img)
    un = nn.MaxUnpool2d(2)(pooled, idx)
    a, u = t2n(img)[0, 0], t2n(un)[0, 0]
    for r in range(0, 4, 2):
        for c in range(0, 4, 2):
            win = a[r:r + 2, c:c + 2]
            kept = u[r:r + 2, c:c + 2]
            assert kept.max() == win.max() and np.count_nonzero(kept) == 1
    np.testing.assert_allclose(t2n(nn.AvgPool2d(2)(img))[0, 0], a.reshape(2, 2, 2, 2).mean((1, 3)), rtol=1e-6)
    np.testing.assert_allclose(t2n(nn.AdaptiveAvgPool2d(1)(img)).ravel(), [a.mean()], rtol=1e-6)
    with pytest.raises(tandem.ShapeError):
        nn.MaxPool1d(2)(tandem.zeros(2))


def test_norms_embedding_and_activations_match_numpy():
    tandem.manual_seed(3)
    x = tandem.randn(2, 4, 3)
    a = t2n(x)
    ln = nn.LayerNorm(3)
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(t2n(ln(x)), ref, rtol=1e-4, atol=1e-5)
    gn = nn.GroupNorm(2, 4)
    g = a.reshape(2, 2, 6)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(2, 4, 3)
    np.testing.assert_allclose(t2n(gn(x)), ref, rtol=1e-4, atol=1e-5)
    emb = nn.Embedding(5, 3, padding_idx=1)
    assert t2n(emb.weight)[1].tolist() == [0.0, 0.0, 0.0]
    idx = tandem.tensor([[0, 1], [4, 4]])
    np.testing.assert_array_equal(t2n(emb(idx)), t2n(emb.weight)[t2n(idx)])
    emb(idx).sum().backward()
    assert t2n(emb.weight.grad)[1].tolist() == [0.0, 0.0, 0.0] and t2n(emb.weight.grad)[4].tolist() == [2.0] * 3
    capped = nn.Embedding(5, 3, max_norm=0.5)
    capped(tandem.tensor([2]))
    assert np.linalg.norm(t2n(capped.weight)[2]) <= 0.5 + 1e-5
    np.testing.assert_allclose(t2n(nn.LeakyReLU(0.2)(x)), np.where(a > 0, a, 0.2 * a), rtol=1e-6)
    np.testing.assert_allclose(t2n(nn.SiLU()(x)), a / (1 + np.exp(-a)), rtol=1e-5)
    np.testing.assert_allclose(t2n(nn.Softmax(dim=-1)(x)), np.exp(a) / np.exp(a).sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(t2n(nn.LogSigmoid()(x)), -np.log1p(np.exp(-a)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t2n(nn.Hardtanh()(x)), np.clip(a, -1, 1))
    assert nn.Unflatten(1, (2, 2))(x).shape == (2, 2, 2, 3)
    np.testing.assert_allclose(t2n(F.normalize(x, dim=-1)), a / np.linalg.norm(a, axis=-1, keepdims=True), rtol=1e-5)
    up = F.interpolate(tandem.arange(4, dtype=tandem.float32).reshape(1, 1, 2, 2), scale_factor=2)
    assert up.shape == (1, 1, 4, 4) and t2n(up)[0, 0, 3].tolist() == [2.0, 2.0, 3.0, 3.0]


def test_conv1d_bilinear_losses_match_numpy():
    tandem.manual_seed(4)
    conv = nn.Conv1d(2, 3, 3, padding=1)
    x = tandem.randn(1, 2, 5)
    a, w, b = t2n(x), t2n(conv.weight), t2n(conv.bias)
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1)))
    ref = np.stack([sum((w[:, c, k][:, None] * padded[0, c, k:k + 5][None, :]) for c in range(2) for k in range(3))])
    np.testing.assert_allclose(t2n(conv(x)), ref + b[None, :, None], rtol=1e-5, atol=1e-6)
    bound = 1 / math.sqrt(6)
    assert np.all(np.abs(w) <= bound)
    bil = nn.Bilinear(2, 3, 4)
    x1, x2 = tandem.randn(5, 2), tandem.randn(5, 3)
    ref = np.einsum("ni,oij,nj->no", t2n(x1), t2n(bil.weight), t2n(x2)) + t2n(bil.bias)
    np.testing.assert_allclose(t2n(bil(x1, x2)), ref, rtol=1e-5, atol=1e-6)
    p, q = tandem.rand(6), tandem.rand(6)
    pa, qa = t2n(p), t2n(q)
    np.testing.assert_allclose(nn.L1Loss()(p, q).item(), np.abs(pa - qa).mean(), rtol=1e-6)
    np.testing.assert_allclose(nn.BCELoss()(p, q).item(),
                               -(qa * np.log(pa) + (1 - qa) * np.log(1 - pa)).mean(), rtol=1e-5)
    logits = tandem.randn(4, 3)
    target = tandem.tensor([0, 2, 1, 2])
    logp = F.log_softmax(logits, 1)
    np.testing.assert_allclose(nn.NLLLoss()(logp, target).item(),
                               -t2n(logp)[np.arange(4), t2n(target)].mean(), rtol=1e-6)
    d = t2n(p) - t2n(q)
    np.testing.assert_allclose(nn.HuberLoss(delta=0.1)(p, q).item(),
                               np.where(np.abs(d) < 0.1, 0.5 * d * d, 0.1 * (np.abs(d) - 0.05)).mean(), rtol=1e-5)


def test_layers_match_torch(torch):
    tandem.manual_seed(5)

    def same(ours, theirs, *inputs, rtol=1e-5, atol=1e-6):
        with torch.no_grad():
            for (name, p) in ours.named_parameters():
                dict(theirs.named_parameters())[name].copy_(torch.from_numpy(t2n(p).copy()))
        outs = ours(*[tandem.from_numpy(i) for i in inputs])
        ref = theirs(*[torch.from_numpy(i) for i in inputs])
        outs = outs if isinstance(outs, tuple) else (outs,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        for o, r in zip(outs, ref):
            np.testing.assert_allclose(t2n(o), r.detach().numpy(), rtol=rtol, atol=atol)

    rng = np.random.default_rng(0)
    x4 = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    x3 = rng.standard_normal((2, 4, 9)).astype(np.float32)
    same(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), x4, rtol=1e-4, atol=1e-5)
    same(nn.Conv1d(4, 2, 3, stride=2, padding=2, padding_mode="reflect"),
         torch.nn.Conv1d(4, 2, 3, stride=2, padding=2, padding_mode="reflect"), x3, rtol=1e-4, atol=1e-5)
    same(nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), x4, rtol=1e-4, atol=1e-5)
    same(nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4), x4, rtol=1e-4, atol=1e-5)
    same(nn.MaxPool1d(3, 2, padding=1, return_indices=True), torch.nn.MaxPool1d(3, 2, padding=1, return_indices=True), x3)
    same(nn.AvgPool2d(3, 2, padding=1, count_include_pad=False),
         torch.nn.AvgPool2d(3, 2, padding=1, count_include_pad=False), x4)
    for ours, theirs in ((nn.GELU("tanh"), torch.nn.GELU("tanh")), (nn.ELU(0.5), torch.nn.ELU(0.5)),
                         (nn.SELU(), torch.nn.SELU()), (nn.Mish(), torch.nn.Mish()), (nn.Hardswish(), torch.nn.Hardswish()),
                         (nn.Softplus(2.0), torch.nn.Softplus(2.0)), (nn.Softmin(1), torch.nn.Softmin(1)),
                         (nn.LogSoftmax(1), torch.nn.LogSoftmax(1))):
        same(ours, theirs, x3)
    p = rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
    q = rng.uniform(0, 1, (4, 3)).astype(np.float32)
    for ours, theirs in ((nn.BCEWithLogitsLoss(pos_weight=tandem.tensor([1.0, 2.0, 3.0])),
                          torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 2.0, 3.0]))),
                         (nn.SmoothL1Loss(beta=0.3), torch.nn.SmoothL1Loss(beta=0.3)),
                         (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"))):
        same(ours, theirs, np.log(p), q)


# ---------------------------------------------------------------- nn.init
def test_init_functions():
    tandem.manual_seed(6)
    w = nn.Parameter(tandem.empty(64, 32))
    assert nn.init.kaiming_uniform_(w, a=math.sqrt(5)) is w and w.requires_grad and w.grad_fn is None
    bound = math.sqrt(6 / ((1 + 5) * 32))
    a = t2n(w)
    assert np.all(np.abs(a) <= bound) and a.std() > 0.5 * bound / math.sqrt(3)
    nn.init.xavier_normal_(w)
    assert abs(t2n(w).std() - math.sqrt(2 / 96)) < 0.02
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(t2n(w).T @ t2n(w), np.eye(32), atol=1e-4)
    nn.init.constant_(w, 0.25)
    assert np.all(t2n(w) == 0.25)
    nn.init.trunc_normal_(w, std=2.0, a=-1.0, b=1.0)
    assert np.all(np.abs(t2n(w)) <= 1.0)
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert nn.init._calculate_fan_in_and_fan_out(tandem.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError):
        nn.init.xavier_uniform_(tandem.empty(5))
    with pytest.raises(ValueError):
        nn.init.calculate_gain("nonsense")
    tandem.manual_seed(7)
    a1 = t2n(nn.init.normal_(tandem.empty(5))).copy()
    tandem.manual_seed(7)
    assert t2n(nn.init.normal_(tandem.empty(5))).tolist() == a1.tolist()
