"""Optimizers (parameter groups, state, state dicts, closures), learning-rate schedulers and
gradient clipping, against numpy formulas and (when it imports) PyTorch 1.13."""
import math

import numpy as np
import pytest

import tandem
from tandem import nn, optim
from tandem.optim import lr_scheduler


def t2n(t):
    return t.detach().numpy()


def quadratic_grads(params, step):
    # A deterministic "gradient" per step so tandem and torch see the same ones.
    for i, p in enumerate(params):
        g = np.sin(np.arange(p.numel(), dtype=np.float64) * (i + 1) + step).reshape(tuple(p.shape))
        yield g.astype(np.float32)


def test_sgd_momentum_matches_numpy_and_groups():
    w = nn.Parameter(tandem.tensor([1.0, -2.0]))
    b = nn.Parameter(tandem.tensor([0.5]))
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1, momentum=0.9, weight_decay=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert opt.param_groups[0]["momentum"] == 0.9 and opt.param_groups[0]["nesterov"] is False
    assert opt.param_groups[1]["params"][0] is not None and len(opt.param_groups[1]["params"]) == 1
    ref_w, buf = np.array([1.0, -2.0], np.float32), None
    for step in range(3):
        g = np.array([0.3, -0.1], np.float32) * (step + 1)
        w.grad = tandem.tensor(g)
        b.grad = tandem.tensor([1.0])
        opt.step()
        d = g + np.float32(0.01) * ref_w
        buf = d if buf is None else np.float32(0.9) * buf + d
        ref_w = ref_w - np.float32(0.1) * buf
    np.testing.assert_allclose(t2n(w), ref_w, rtol=1e-6)
    np.testing.assert_allclose(t2n(opt.state[w]["momentum_buffer"]), buf, rtol=1e-6)
    opt.param_groups[0]["lr"] = 0.0  # takes effect at the next step
    before = t2n(w).copy()
    w.grad = tandem.tensor([1.0, 1.0])
    opt.step()
    np.testing.assert_array_equal(t2n(w), before)
    assert opt.param_groups[0]["lr"] == 0.0 and "lr" in opt.param_groups[0]
    with pytest.raises(KeyError):
        opt.param_groups[0]["nonexistent"]
    with pytest.raises(ValueError):
        optim.SGD([w], lr=-1.0)
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [w]})  # already in a group
    c = nn.Parameter(tandem.zeros(1))
    opt.add_param_group({"params": [c], "lr": 0.5})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["momentum"] == 0.9


def test_step_with_closure_and_zero_grad():
    w = nn.Parameter(tandem.tensor([3.0]))
    opt = optim.SGD([w], lr=0.25)
    calls = []

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        calls.append(tandem.is_grad_enabled())
        return loss
    with tandem.no_grad():
        loss = opt.step(closure)
    assert calls == [True] and loss.item() == 9.0 and w.item() == 3.0 - 0.25 * 6.0
    assert opt.step() is None
    opt.zero_grad()
    assert w.grad is None


def test_state_dict_round_trip_continues_identically():
    def make():
        tandem.manual_seed(0)
        model = nn.Linear(3, 2)
        return model, optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9), amsgrad=True)

    def train(model, opt, steps, start):
        for s in range(start, start + steps):
            for p, g in zip(model.parameters(), quadratic_grads(list(model.parameters()), s)):
                p.grad = tandem.tensor(g)
            opt.step()
    m1, o1 = make()
    train(m1, o1, 5, 0)
    m2, o2 = make()
    train(m2, o2, 2, 0)
    sd = o2.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                                                                         "step"]
    assert sd["param_groups"][0]["betas"] == (0.8, 0.9) and sd["param_groups"][0]["params"] == [0, 1]
    assert sd["param_groups"][0]["amsgrad"] is True
    m3, o3 = make()
    m3.load_state_dict(m2.state_dict())
    o3.load_state_dict(sd)
    train(m3, o3, 3, 2)
    for p1, p3 in zip(m1.parameters(), m3.parameters()):
        np.testing.assert_array_equal(t2n(p1), t2n(p3))
    with pytest.raises(ValueError):
        optim.SGD(m3.parameters(), lr=0.1).load_state_dict(sd)  # another kind


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("RMSprop", dict(lr=0.01, weight_decay=0.1)),
])
def test_optimizers_match_torch(name, kwargs, torch):
    rng = np.random.default_rng(1)
    init = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    ours = [nn.Parameter(tandem.tensor(a)) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    o = getattr(optim, name)(ours, **kwargs)
    t = getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(6):
        for p, q, g in zip(ours, theirs, quadratic_grads(ours, step)):
            p.grad = tandem.tensor(g)
            q.grad = torch.tensor(g)
        o.step()
        t.step()
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(t2n(p), q.detach().numpy(), rtol=2e-6, atol=2e-7)


def lrs(sched, opt, n, metric=None):
    out = []
    for i in range(n):
        out.append([g["lr"] for g in opt.param_groups])
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(i))
    return out


def test_schedulers_closed_forms():
    w = nn.Parameter(tandem.zeros(1))
    opt = optim.SGD([w], lr=1.0)
    got = lrs(lr_scheduler.StepLR(opt, step_size=2, gamma=0.5), opt, 6)
    assert [x[0] for x in got] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    opt = optim.SGD([w], lr=2.0)
    got = lrs(lr_scheduler.LambdaLR(opt, lambda e: 1 / (e + 1)), opt, 4)
    assert [x[0] for x in got] == [2.0, 1.0, 2 / 3, 0.5]
    assert opt.param_groups[0]["initial_lr"] == 2.0
    opt = optim.SGD([w], lr=1.0)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.0)
    got = [x[0] for x in lrs(sched, opt, 5)]
    np.testing.assert_allclose(got, [(1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)], atol=1e-12)
    assert sched.last_epoch == 5 and sched.get_last_lr() == [opt.param_groups[0]["lr"]]
    with pytest.raises(ValueError):
        lr_scheduler.StepLR(optim.SGD([w], lr=1.0), step_size=0)
    with pytest.raises(TypeError):
        opt = optim.SGD([w], lr=1.0)
        lr_scheduler.SequentialLR(opt, [lr_scheduler.LambdaLR(opt, lambda e: 1.0)], milestones=[])


def test_scheduler_state_dict_round_trip():
    w = nn.Parameter(tandem.zeros(1))
    opt = optim.SGD([w], lr=1.0)
    s = lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
    lrs(s, opt, 3)
    sd = s.state_dict()
    opt2 = optim.SGD([nn.Parameter(tandem.zeros(1))], lr=1.0)
    s2 = lr_scheduler.MultiStepLR(opt2, milestones=[9], gamma=0.5)
    s2.load_state_dict(sd)
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    assert lrs(s, opt, 3) == lrs(s2, opt2, 3)
    with pytest.raises(ValueError):
        lr_scheduler.StepLR(opt2, step_size=1).load_state_dict(sd)


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's SequentialLR calls its own deprecated step(epoch)
def test_schedulers_match_torch(torch):
    TL = torch.optim.lr_scheduler

    def pair(lr=0.5, momentum=0.9, groups=1):
        ours = optim.SGD([{"params": [nn.Parameter(tandem.zeros(1))], "lr": lr * (i + 1)} for i in range(groups)],
                         lr=lr, momentum=momentum)
        theirs = torch.optim.SGD([{"params": [torch.nn.Parameter(torch.zeros(1))], "lr": lr * (i + 1)}
                                  for i in range(groups)], lr=lr, momentum=momentum)
        return ours, theirs

    def check(make, n=12, metric=None):
        o, t = pair(groups=2)
        a = lrs(make(lr_scheduler, o), o, n, metric)
        b = lrs(make(TL, t), t, n, metric)
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-12, atol=1e-15)

    check(lambda m, o: m.StepLR(o, 3, 0.5))
    check(lambda m, o: m.MultiStepLR(o, [2, 5, 5, 9], 0.3))
    check(lambda m, o: m.ExponentialLR(o, 0.8))
    check(lambda m, o: m.CosineAnnealingLR(o, 5, 0.01), n=20)
    check(lambda m, o: m.LinearLR(o, 0.25, 1.0, 4))
    check(lambda m, o: m.ConstantLR(o, 0.5, 3))
    check(lambda m, o: m.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (1 + e)]))
    check(lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95))
    check(lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=13), n=13)
    check(lambda m, o: m.OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=5, anneal_strategy="linear",
                                    three_phase=True), n=10)
    check(lambda m, o: m.SequentialLR(o, [m.LinearLR(o, 0.1, 1.0, 3), m.ExponentialLR(o, 0.9)], milestones=[3]))
    losses = [1.0, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
    check(lambda m, o: m.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1), metric=lambda i: losses[i])
    check(lambda m, o: m.ReduceLROnPlateau(o, mode="max", threshold_mode="abs", patience=0, min_lr=[0.3, 0.4]),
          metric=lambda i: -losses[i])


def test_clip_grad_norm_and_value():
    a = nn.Parameter(tandem.zeros(2))
    b = nn.Parameter(tandem.zeros(2))
    a.grad = tandem.tensor([3.0, 0.0])
    b.grad = tandem.tensor([0.0, 4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.dim() == 0 and total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(t2n(a.grad), [3 / (5 + 1e-6), 0.0], rtol=1e-6)
    assert nn.utils.clip_grad_norm_(a, 10.0, norm_type=math.inf).item() == pytest.approx(3 / 5, rel=1e-5)
    nn.utils.clip_grad_value_([a, b], 0.1)
    assert t2n(b.grad).tolist() == pytest.approx([0.0, 0.1])
    b.grad = tandem.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError):
        nn.utils.clip_grad_norm_([b], 1.0, error_if_nonfinite=True)
    v = nn.utils.parameters_to_vector([a, b])
    assert v.shape == (4,)
    nn.utils.vector_to_parameters(tandem.arange(4, dtype=tandem.float32), [a, b])
    assert a.tolist() == [0.0, 1.0] and b.tolist() == [2.0, 3.0]
