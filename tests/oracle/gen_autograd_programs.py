#!/usr/bin/env python3
"""Gradients of small autograd programs in PyTorch 1.13 (float64), replayed by
tests/autograd/test_programs.cpp, which writes the same programs with tandem.

Each program gets named float64 inputs (values from a fixed seed) and returns named
gradients; the JSON holds both. Run with Debian's python3 (it has torch):
  /usr/bin/python3 tests/oracle/gen_autograd_programs.py
"""
import json
import pathlib

import torch
import torch.nn.functional as F

torch.manual_seed(0)
OUT = pathlib.Path(__file__).resolve().parent.parent / "data" / "autograd_programs.json"  # not oracle/: that folder holds op cases only


def leaf(*shape):
    return (torch.randn(*shape, dtype=torch.float64)).requires_grad_()


def enc(t):
    t = t.detach()
    return {"shape": list(t.shape), "values": t.reshape(-1).tolist()}


PROGRAMS = {}


def program(fn):
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def broadcast_mul_add(x):
    a, b = x["a"], x["b"]
    ((a * b + a).pow(2).sum()).backward()
    return {"a": a.grad, "b": b.grad}
broadcast_mul_add.inputs = {"a": (3, 1), "b": (1, 4)}


@program
def inplace_on_view(x):
    w = x["w"]
    y = w * 1.5
    y[:, 1].mul_(3)          # in-place on a view: the base's history is updated
    y.t()[0].add_(w[:, 2])   # a view of a transposed view
    (y * y).sum().backward()
    return {"w": w.grad}
inplace_on_view.inputs = {"w": (3, 4)}


@program
def accumulate_two_backwards(x):
    w = x["w"]
    (w * w).sum().backward()
    (w.sin() * 3).sum().backward()
    return {"w": w.grad}
accumulate_two_backwards.inputs = {"w": (5,)}


@program
def retain_graph_twice(x):
    w = x["w"]
    y = (w.exp() * w).sum()
    y.backward(retain_graph=True)
    y.backward()
    return {"w": w.grad}
retain_graph_twice.inputs = {"w": (4,)}


@program
def hook_changes_gradient(x):
    w = x["w"]
    y = w * w
    y.register_hook(lambda g: g * 2 + 1)
    (y.tanh()).sum().backward()
    return {"w": w.grad}
hook_changes_gradient.inputs = {"w": (2, 3)}


@program
def detach_stops_gradient(x):
    w = x["w"]
    ((w * w.detach()).sum() + (w.detach() ** 3).sum()).backward()
    return {"w": w.grad}
detach_stops_gradient.inputs = {"w": (6,)}


@program
def allow_unused(x):
    a, b = x["a"], x["b"]
    ga, gb = torch.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert gb is None
    return {"a": ga}
allow_unused.inputs = {"a": (3,), "b": (3,)}


@program
def second_derivative_of_cube(x):
    w = x["w"]
    (g,) = torch.autograd.grad((w ** 3).sum(), [w], create_graph=True)
    (g2,) = torch.autograd.grad(g.sum(), [w])
    return {"d2": g2}
second_derivative_of_cube.inputs = {"w": (5,)}


@program
def gradient_penalty_mlp(x):
    inp, w1, b1, w2, b2 = x["x"], x["w1"], x["b1"], x["w2"], x["b2"]
    out = F.linear(torch.tanh(F.linear(inp, w1, b1)), w2, b2).sum()
    (g,) = torch.autograd.grad(out, [inp], create_graph=True)
    penalty = (g * g).sum(dim=1).sum()
    penalty.backward()
    return {"w1": w1.grad, "b1": b1.grad, "w2": w2.grad}
gradient_penalty_mlp.inputs = {"x": (5, 4), "w1": (8, 4), "b1": (8,), "w2": (1, 8), "b2": (1,)}


@program
def mlp_relu_cross_entropy(x):
    inp, w1, b1, w2 = x["x"], x["w1"], x["b1"], x["w2"]
    h = F.linear(inp, w1, b1).relu_()
    logits = h @ w2.t()
    target = torch.tensor([0, 2, 1, 2])
    F.cross_entropy(logits, target).backward()
    return {"x": inp.grad, "w1": w1.grad, "b1": b1.grad, "w2": w2.grad}
mlp_relu_cross_entropy.inputs = {"x": (4, 5), "w1": (6, 5), "b1": (6,), "w2": (3, 6)}


@program
def conv_pool_chain(x):
    inp, w = x["x"], x["w"]
    y = F.max_pool2d(F.conv2d(inp, w, padding=1).relu(), 2)
    (y * y).sum().backward()
    return {"x": inp.grad, "w": w.grad}
conv_pool_chain.inputs = {"x": (2, 2, 6, 6), "w": (3, 2, 3, 3)}


@program
def softmax_layer_norm_mse(x):
    inp, t = x["x"], x["t"]
    y = F.layer_norm(torch.softmax(inp, dim=-1) * 4, (5,))
    F.mse_loss(y, t.detach()).backward()
    return {"x": inp.grad}
softmax_layer_norm_mse.inputs = {"x": (3, 5), "t": (3, 5)}


@program
def shared_input_diamond(x):
    w = x["w"]
    a = w.sigmoid()
    b = a * w
    c = a.exp() + b.view(2, 3).sum(0).repeat(2)
    c.sum().backward()
    return {"w": w.grad}
shared_input_diamond.inputs = {"w": (6,)}


def main():
    cases = {}
    for name, fn in PROGRAMS.items():
        inputs = {k: leaf(*shape) for k, shape in fn.inputs.items()}
        saved = {k: enc(v) for k, v in inputs.items()}
        grads = fn(inputs)
        cases[name] = {"inputs": saved, "grads": {k: enc(v) for k, v in grads.items()}}
    OUT.write_text(json.dumps({"torch": torch.__version__, "programs": cases}, indent=None) + "\n")
    print(f"wrote {len(cases)} programs to {OUT}")


if __name__ == "__main__":
    main()
