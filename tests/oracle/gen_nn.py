#!/usr/bin/python3
"""Oracle cases for the nn family (softmax, norms, losses, dropout, embedding, one_hot, pad,
upsampling). Run: /usr/bin/python3 tests/oracle/gen_nn.py

Writes tests/data/oracle/nn.json (forward values and errors, replayed by
tests/ops/test_oracle.cpp) and tests/data/nn_grad.json (gradients and running-stat updates
from torch autograd, replayed by tests/autograd/test_grad_nn.cpp)."""
import json
import os

import torch
import torch.nn.functional as F
from oracle_lib import CaseWriter, attr, tensor

HERE = os.path.dirname(__file__)
OUT = os.path.join(HERE, "..", "data", "oracle", "nn.json")
GRAD_OUT = os.path.join(HERE, "..", "data", "nn_grad.json")
torch.manual_seed(0)
w = CaseWriter()
RED = {"none": 0, "mean": 1, "sum": 2}


def rn(*s, dtype=torch.float32):
    return torch.randn(*s, dtype=dtype)


# ---------------------------------------------------------------- softmax family
for name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
    x = rn(3, 5)
    w.add(f"{name}/2d_last", name, [x], [attr(-1), None], lambda a: fn(a, -1))
    w.add(f"{name}/2d_dim0", name, [x], [attr(0), None], lambda a: fn(a, 0))
    x3 = rn(2, 4, 3)
    w.add(f"{name}/3d_middle", name, [x3], [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/3d_first", name, [x3], [attr(-3), None], lambda a: fn(a, 0))
    w.add(f"{name}/transposed", name, [(rn(4, 3), "transposed")], [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/strided", name, [(rn(2, 6), "strided")], [attr(-1), None], lambda a: fn(a, -1))
    w.add(f"{name}/expanded", name, [(rn(1, 4), "expanded", (3, 4))], [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/large_values", name, [torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0]])],
          [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/neg_inf", name, [torch.tensor([[float("-inf"), 1.0, 2.0], [float("-inf")] * 3])], [attr(1), None],
          lambda a: fn(a, 1))
    w.add(f"{name}/inf_nan", name, [torch.tensor([[float("inf"), 1.0], [float("nan"), 1.0]])], [attr(1), None],
          lambda a: fn(a, 1))
    w.add(f"{name}/zero_dim", name, [torch.tensor(2.5)], [attr(0), None], lambda a: fn(a, 0))
    w.add(f"{name}/zero_size", name, [rn(0, 3)], [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/float64", name, [rn(2, 3, dtype=torch.float64)], [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/bfloat16", name, [rn(2, 5).bfloat16()], [attr(1), None], lambda a: fn(a, 1))
    w.add(f"{name}/dtype_arg_int", name, [torch.arange(6).view(2, 3)], [attr(1), attr(torch.float64)],
          lambda a: fn(a, 1, dtype=torch.float64))
    w.add(f"{name}/dtype_arg_float", name, [rn(2, 3)], [attr(0), attr(torch.float64)],
          lambda a: fn(a, 0, dtype=torch.float64))
    w.add(f"{name}/int_input", name, [torch.arange(3)], [attr(0), None], error="TypeError")
    w.add(f"{name}/bad_dim", name, [rn(2, 3)], [attr(2), None], error="IndexError")

for name, fwd, bwd in (("_softmax_backward_data", torch.softmax, torch._softmax_backward_data),
                       ("_log_softmax_backward_data", torch.log_softmax, torch._log_softmax_backward_data)):
    y = fwd(rn(3, 4, dtype=torch.float64), 1)
    g = rn(3, 4, dtype=torch.float64)
    w.add(f"{name}/basic", name, [g, y], [attr(1), attr(torch.float64)], lambda a, b: bwd(a, b, 1, torch.float64))
    y0 = fwd(rn(4, 2), 0)
    g0 = rn(4, 2)
    w.add(f"{name}/dim0", name, [g0, y0], [attr(0), attr(torch.float32)], lambda a, b: bwd(a, b, 0, torch.float32))
    w.add(f"{name}/shape_mismatch", name, [rn(3, 4), rn(4, 3)], [attr(1), attr(torch.float32)], error="ShapeError")

# ---------------------------------------------------------------- nll_loss / cross_entropy
logp = torch.log_softmax(rn(5, 4), 1)
tgt = torch.tensor([0, 3, -100, 1, 2])
cw = torch.tensor([1.0, 2.0, 0.5, 3.0])


def nll_attrs(red="mean", ii=-100):
    return [attr(red), attr(ii)]


for red in ("none", "mean", "sum"):
    w.add(f"nll_loss/{red}", "nll_loss", [logp, tgt, None], nll_attrs(red),
          lambda a, b, c: F.nll_loss(a, b, reduction=red))
    w.add(f"nll_loss/{red}_weight", "nll_loss", [logp, tgt, cw], nll_attrs(red),
          lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=red))
w.add("nll_loss/ignore_index_1", "nll_loss", [logp, torch.tensor([0, 1, 1, 3, 2]), cw], nll_attrs("mean", 1),
      lambda a, b, c: F.nll_loss(a, b, weight=c, ignore_index=1))
w.add("nll_loss/one_d", "nll_loss", [logp[0], torch.tensor(2), None], nll_attrs(),
      lambda a, b, c: F.nll_loss(a, b))
lp4 = torch.log_softmax(rn(2, 3, 2, 2), 1)
t4 = torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]])
for red in ("none", "mean"):
    w.add(f"nll_loss/4d_{red}", "nll_loss", [lp4, t4, cw[:3]], nll_attrs(red),
          lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=red))
w.add("nll_loss/all_ignored", "nll_loss", [logp, torch.full((5,), -100), None], nll_attrs(),
      lambda a, b, c: F.nll_loss(a, b))
w.add("nll_loss/uint8_target", "nll_loss", [logp, torch.tensor([0, 3, 2, 1, 2], dtype=torch.uint8), None],
      nll_attrs("sum"), lambda a, b, c: F.nll_loss(a, b, reduction="sum"))
w.add("nll_loss/transposed", "nll_loss", [(rn(4, 5), "transposed"), torch.tensor([1, 0, 3, 2]), None], nll_attrs(),
      lambda a, b, c: F.nll_loss(a, b))
w.add("nll_loss/float64", "nll_loss", [logp.double(), tgt, cw.double()], nll_attrs(),
      lambda a, b, c: F.nll_loss(a, b, weight=c))
w.add("nll_loss/target_out_of_bounds", "nll_loss", [logp, torch.tensor([0, 1, 4, 1, 0]), None], nll_attrs(),
      error="IndexError")
w.add("nll_loss/negative_target", "nll_loss", [logp, torch.tensor([0, 1, -1, 1, 0]), None], nll_attrs(),
      error="IndexError")
w.add("nll_loss/int32_target", "nll_loss", [logp, tgt.int(), None], nll_attrs(), error="TypeError")
w.add("nll_loss/batch_mismatch", "nll_loss", [logp, tgt[:3], None], nll_attrs(), error="ShapeError")
w.add("nll_loss/bad_weight", "nll_loss", [logp, tgt, cw[:3]], nll_attrs(), error="ShapeError")
w.add("nll_loss/bad_reduction", "nll_loss", [logp, tgt, None], nll_attrs("avg"), error="ValueError")
w.add("nll_loss/int_input", "nll_loss", [torch.arange(20).view(5, 4), tgt, None], nll_attrs(), error="TypeError")
w.add("nll_loss/zero_d_input", "nll_loss", [torch.tensor(1.0), torch.tensor(0), None], nll_attrs(), error="ShapeError")

# nll_loss_backward(grad_output, self, target, weight, total_weight; reduction, ignore_index)
for red in ("none", "mean", "sum"):
    out, tw = torch.ops.aten.nll_loss_forward(logp, tgt, cw, RED[red], -100)
    go = rn(5) if red == "none" else torch.tensor(1.5)
    w.add(f"nll_loss_backward/{red}", "nll_loss_backward", [go, logp, tgt, cw, tw], nll_attrs(red),
          lambda g, s, t, c, tw_: torch.ops.aten.nll_loss_backward(g, s, t, c, RED[red], -100, tw_))


def ce_attrs(red="mean", ii=-100, ls=0.0):
    return [attr(red), attr(ii), attr(float(ls))]


logits = rn(5, 4)
for red in ("none", "mean", "sum"):
    for ls in (0.0, 0.2):
        for wt in (None, cw):
            tag = f"{red}_ls{ls}_{'w' if wt is not None else 'nw'}"
            w.add(f"cross_entropy/{tag}", "cross_entropy", [logits, tgt, wt], ce_attrs(red, -100, ls),
                  lambda a, b, c, red=red, ls=ls: F.cross_entropy(a, b, weight=c, reduction=red, label_smoothing=ls))
probs = torch.softmax(rn(5, 4), 1)
for red in ("none", "mean", "sum"):
    w.add(f"cross_entropy/probs_{red}", "cross_entropy", [logits, probs, cw], ce_attrs(red, -100, 0.1),
          lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=red, label_smoothing=0.1))
w.add("cross_entropy/probs_nw", "cross_entropy", [logits, probs, None], ce_attrs(),
      lambda a, b, c: F.cross_entropy(a, b))
lg3 = rn(2, 4, 3)
t3 = torch.tensor([[0, 3, -100], [2, 1, 1]])
w.add("cross_entropy/3d_ls", "cross_entropy", [lg3, t3, cw], ce_attrs("mean", -100, 0.3),
      lambda a, b, c: F.cross_entropy(a, b, weight=c, label_smoothing=0.3))
w.add("cross_entropy/3d_probs", "cross_entropy", [lg3, torch.softmax(rn(2, 4, 3), 1), None], ce_attrs(),
      lambda a, b, c: F.cross_entropy(a, b))
w.add("cross_entropy/one_d", "cross_entropy", [logits[0], torch.tensor(3), None], ce_attrs("mean", -100, 0.1),
      lambda a, b, c: F.cross_entropy(a, b, label_smoothing=0.1))
w.add("cross_entropy/ignore_1", "cross_entropy", [logits, torch.tensor([1, 1, 0, 2, 3]), cw], ce_attrs("mean", 1, 0.25),
      lambda a, b, c: F.cross_entropy(a, b, weight=c, ignore_index=1, label_smoothing=0.25))
w.add("cross_entropy/large_logits", "cross_entropy", [torch.tensor([[1000.0, -1000.0, 0.0]]), torch.tensor([0]), None],
      ce_attrs(), lambda a, b, c: F.cross_entropy(a, b))
w.add("cross_entropy/bad_smoothing", "cross_entropy", [logits, tgt, None], ce_attrs("mean", -100, 1.5),
      error="ValueError")
w.add("cross_entropy/probs_shape", "cross_entropy", [logits, probs[:, :3], None], ce_attrs(), error="ShapeError")
w.add("cross_entropy/target_oob", "cross_entropy", [logits, torch.tensor([0, 1, 7, 1, 0]), None], ce_attrs(),
      error="IndexError")

# ---------------------------------------------------------------- elementwise losses
a, b = rn(3, 4), rn(3, 4)
for name, fn, extra, eattrs in (
        ("mse_loss", F.mse_loss, {}, []),
        ("l1_loss", F.l1_loss, {}, []),
        ("smooth_l1_loss", F.smooth_l1_loss, {"beta": 0.7}, [attr(0.7)]),
        ("huber_loss", F.huber_loss, {"delta": 0.6}, [attr(0.6)])):
    for red in ("none", "mean", "sum"):
        w.add(f"{name}/{red}", name, [a, b], [attr(red)] + eattrs, lambda x, y: fn(x, y, reduction=red, **extra))
    w.add(f"{name}/broadcast", name, [rn(3, 4), rn(4)], [attr("none")] + eattrs,
          lambda x, y: fn(x, y.expand(3, 4), reduction="none", **extra))
    w.add(f"{name}/float64_transposed", name, [(rn(3, 4, dtype=torch.float64), "transposed"),
                                                 rn(3, 4, dtype=torch.float64)], [attr("mean")] + eattrs,
          lambda x, y: fn(x, y, **extra))
    w.add(f"{name}/zero_size", name, [rn(0, 3), rn(0, 3)], [attr("sum")] + eattrs,
          lambda x, y: fn(x, y, reduction="sum", **extra))
    w.add(f"{name}/bad_reduction", name, [a, b], [attr("avg")] + eattrs, error="ValueError")
    w.add(f"{name}/int_inputs", name, [torch.arange(3), torch.arange(3)], [attr("mean")] + eattrs, error="TypeError")
w.add("smooth_l1_loss/beta0", "smooth_l1_loss", [a, b], [attr("none"), attr(0.0)],
      lambda x, y: F.smooth_l1_loss(x, y, reduction="none", beta=0.0))
w.add("smooth_l1_loss/negative_beta", "smooth_l1_loss", [a, b], [attr("mean"), attr(-1.0)], error="ValueError")
w.add("huber_loss/zero_delta", "huber_loss", [a, b], [attr("mean"), attr(0.0)], error="ValueError")
w.add("mse_loss/bad_broadcast", "mse_loss", [rn(3, 4), rn(3)], [attr("mean")], error="ShapeError")

p_in = torch.rand(3, 4) * 0.9 + 0.05
p_t = torch.rand(3, 4)
bw = torch.rand(4) + 0.5
for red in ("none", "mean", "sum"):
    w.add(f"binary_cross_entropy/{red}", "binary_cross_entropy", [p_in, p_t, None], [attr(red)],
          lambda x, y, z: F.binary_cross_entropy(x, y, reduction=red))
    w.add(f"binary_cross_entropy/{red}_weight", "binary_cross_entropy", [p_in, p_t, bw], [attr(red)],
          lambda x, y, z: F.binary_cross_entropy(x, y, weight=z.expand(3, 4), reduction=red))
w.add("binary_cross_entropy/edges", "binary_cross_entropy",
      [torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5]), torch.tensor([0.0, 1.0, 1.0, 0.0, 0.5]), None], [attr("none")],
      lambda x, y, z: F.binary_cross_entropy(x, y, reduction="none"))
w.add("binary_cross_entropy/float64", "binary_cross_entropy", [p_in.double(), p_t.double(), None], [attr("mean")],
      lambda x, y, z: F.binary_cross_entropy(x, y))
w.add("binary_cross_entropy/out_of_range", "binary_cross_entropy", [torch.tensor([0.5, 1.5]), torch.tensor([0.0, 1.0]),
                                                                    None], [attr("mean")], error="ValueError")
w.add("binary_cross_entropy/shape_mismatch", "binary_cross_entropy", [p_in, p_t[0], None], [attr("mean")],
      error="ShapeError")
lg = rn(3, 4) * 3
lg[0, 0], lg[1, 1] = 60.0, -60.0
pw = torch.rand(4) * 2 + 0.5
for red in ("none", "mean", "sum"):
    w.add(f"binary_cross_entropy_with_logits/{red}", "binary_cross_entropy_with_logits", [lg, p_t, None, None],
          [attr(red)], lambda x, y, z, q: F.binary_cross_entropy_with_logits(x, y, reduction=red))
    w.add(f"binary_cross_entropy_with_logits/{red}_weights", "binary_cross_entropy_with_logits", [lg, p_t, bw, pw],
          [attr(red)], lambda x, y, z, q: F.binary_cross_entropy_with_logits(x, y, weight=z, pos_weight=q, reduction=red))
w.add("binary_cross_entropy_with_logits/shape_mismatch", "binary_cross_entropy_with_logits", [lg, p_t[0], None, None],
      [attr("mean")], error="ShapeError")
kl_in = torch.log_softmax(rn(3, 4), 1)
kl_t = torch.softmax(rn(3, 4), 1)
kl_t[0, 1] = 0.0
for red in ("none", "mean", "sum", "batchmean"):
    w.add(f"kl_div/{red}", "kl_div", [kl_in, kl_t], [attr(red), attr(False)],
          lambda x, y: F.kl_div(x, y, reduction=red))
    w.add(f"kl_div/{red}_log_target", "kl_div", [kl_in, torch.log_softmax(rn(3, 4), 1)], [attr(red), attr(True)],
          lambda x, y: F.kl_div(x, y, reduction=red, log_target=True))
w.add("kl_div/broadcast", "kl_div", [kl_in, kl_t[0]], [attr("sum"), attr(False)],
      lambda x, y: F.kl_div(x, y, reduction="sum"))
w.add("kl_div/bad_reduction", "kl_div", [kl_in, kl_t], [attr("avg"), attr(False)], error="ValueError")

# Loss backward ops: (grad_self, grad_target) from torch autograd.
def loss_grads(fn, x, y, g, **kw):
    x = x.clone().requires_grad_()
    y = y.clone().requires_grad_()
    out = fn(x, y, **kw)
    return torch.autograd.grad(out, [x, y], g)


ga = rn(3, 4)
w.add("mse_loss_backward/none", "mse_loss_backward", [ga, a, b], [attr("none")],
      lambda g, x, y: loss_grads(F.mse_loss, x, y, g, reduction="none"))
w.add("mse_loss_backward/mean", "mse_loss_backward", [torch.tensor(0.5), a, b], [attr("mean")],
      lambda g, x, y: loss_grads(F.mse_loss, x, y, g))
w.add("smooth_l1_loss_backward/sum", "smooth_l1_loss_backward", [torch.tensor(2.0), a, b], [attr("sum"), attr(0.7)],
      lambda g, x, y: loss_grads(F.smooth_l1_loss, x, y, g, reduction="sum", beta=0.7))
w.add("huber_loss_backward/none", "huber_loss_backward", [ga, a, b], [attr("none"), attr(0.6)],
      lambda g, x, y: loss_grads(F.huber_loss, x, y, g, reduction="none", delta=0.6))
w.add("l1_loss_backward/mean", "l1_loss_backward", [torch.tensor(1.0), a, b], [attr("mean")],
      lambda g, x, y: loss_grads(F.l1_loss, x, y, g))
w.add("binary_cross_entropy_backward/mean", "binary_cross_entropy_backward", [torch.tensor(1.0), p_in, p_t, None],
      [attr("mean")], lambda g, x, y, z: loss_grads(F.binary_cross_entropy, x, y, g))
w.add("kl_div_backward/batchmean", "kl_div_backward", [torch.tensor(1.0), kl_in, kl_t + 0.01],
      [attr("batchmean"), attr(False)], lambda g, x, y: loss_grads(F.kl_div, x, y, g, reduction="batchmean"))

# ---------------------------------------------------------------- normalisation
x4 = rn(3, 2, 4, 5) * 2 + 1
C2w, C2b = rn(2), rn(2)
rm, rv = rn(2), torch.rand(2) + 0.5


def bn_attrs(training, momentum=0.1, eps=1e-5):
    return [attr(training), attr(momentum), attr(eps)]


w.add("native_batch_norm/train", "native_batch_norm", [x4, C2w, C2b, rm.clone(), rv.clone()], bn_attrs(True),
      lambda x, ww, bb, m, v: torch.native_batch_norm(x, ww, bb, m, v, True, 0.1, 1e-5))
w.add("native_batch_norm/train_no_stats", "native_batch_norm", [x4, None, None, None, None], bn_attrs(True, 0.1, 1e-3),
      lambda x, ww, bb, m, v: torch.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-3))
w.add("native_batch_norm/eval", "native_batch_norm", [x4, C2w, C2b, rm, rv], bn_attrs(False),
      lambda x, ww, bb, m, v: torch.native_batch_norm(x, ww, bb, m, v, False, 0.1, 1e-5)[0])
w.add("batch_norm/train_2d", "batch_norm", [rn(6, 3), None, None, rn(3), None], bn_attrs(True),
      lambda x, m, v, ww, bb: F.batch_norm(x, None, None, ww, None, training=True))
w.add("batch_norm/eval_4d", "batch_norm", [x4, rm, rv, C2w, C2b], bn_attrs(False),
      lambda x, m, v, ww, bb: F.batch_norm(x, m, v, ww, bb))
w.add("batch_norm/train_transposed", "batch_norm", [(rn(3, 4), "transposed"), rn(4), torch.rand(4) + 1, None, None],
      bn_attrs(True, 0.3), lambda x, m, v, ww, bb: F.batch_norm(x, m.clone(), v.clone(), training=True, momentum=0.3))
w.add("batch_norm/float64", "batch_norm", [rn(4, 3, 2, dtype=torch.float64), None, None, None, None], bn_attrs(True),
      lambda x, m, v, ww, bb: F.batch_norm(x, None, None, training=True))
w.add("batch_norm/bfloat16_eval", "batch_norm", [rn(4, 2).bfloat16(), rm, rv, None, None], bn_attrs(False),
      lambda x, m, v, ww, bb: F.batch_norm(x.float(), m, v).bfloat16())
w.add("batch_norm/one_value_per_channel", "batch_norm", [rn(1, 3), None, None, None, None], bn_attrs(True),
      error="ValueError")
w.add("batch_norm/eval_without_stats", "batch_norm", [rn(4, 3), None, None, None, None], bn_attrs(False),
      error="ValueError")
w.add("batch_norm/bad_weight", "batch_norm", [rn(4, 3), None, None, rn(2), None], bn_attrs(True), error="ShapeError")
w.add("batch_norm/one_d_input", "batch_norm", [rn(4), None, None, None, None], bn_attrs(True), error="ShapeError")
w.add("batch_norm/int_input", "batch_norm", [torch.arange(12).view(4, 3), None, None, None, None], bn_attrs(True),
      error="TypeError")

xl = rn(2, 3, 4)
for ns in ([4], [3, 4]):
    tag = "x".join(map(str, ns))
    ww, bb = rn(*ns), rn(*ns)
    w.add(f"layer_norm/{tag}", "layer_norm", [xl, ww, bb], [attr(ns), attr(1e-5)],
          lambda x, p, q: F.layer_norm(x, ns, p, q))
    w.add(f"native_layer_norm/{tag}", "native_layer_norm", [xl, None, None], [attr(ns), attr(1e-5)],
          lambda x, p, q: torch.native_layer_norm(x, ns, None, None, 1e-5))
w.add("layer_norm/transposed_float64", "layer_norm", [(rn(5, 3, dtype=torch.float64), "transposed"), None, None],
      [attr([3]), attr(1e-3)], lambda x, p, q: F.layer_norm(x, [3], eps=1e-3))
w.add("layer_norm/bfloat16", "layer_norm", [rn(2, 8).bfloat16(), None, None], [attr([8]), attr(1e-5)],
      lambda x, p, q: F.layer_norm(x, [8]))
w.add("layer_norm/shape_mismatch", "layer_norm", [xl, None, None], [attr([3]), attr(1e-5)], error="ShapeError")
w.add("layer_norm/bad_weight", "layer_norm", [xl, rn(3), None], [attr([4]), attr(1e-5)], error="ShapeError")

xg = rn(2, 6, 3, 2)
gw, gb = rn(6), rn(6)
for G in (1, 2, 3, 6):
    w.add(f"group_norm/g{G}", "group_norm", [xg, gw, gb], [attr(G), attr(1e-5)],
          lambda x, p, q: F.group_norm(x, G, p, q))
w.add("native_group_norm/g3", "native_group_norm", [xg, None, None], [attr(3), attr(1e-5)],
      lambda x, p, q: torch.native_group_norm(x, None, None, 2, 6, 6, 3, 1e-5))
w.add("group_norm/3d", "group_norm", [rn(3, 4, 5), None, None], [attr(2), attr(1e-5)],
      lambda x, p, q: F.group_norm(x, 2))
w.add("group_norm/indivisible", "group_norm", [xg, None, None], [attr(4), attr(1e-5)], error="ValueError")
w.add("group_norm/bad_weight", "group_norm", [xg, rn(3), None], [attr(3), attr(1e-5)], error="ShapeError")

xi = rn(2, 3, 4, 3)
irm, irv = rn(3), torch.rand(3) + 0.5
w.add("instance_norm/basic", "instance_norm", [xi, None, None, None, None], bn_attrs(True),
      lambda x, m, v, p, q: F.instance_norm(x))
w.add("instance_norm/affine_stats", "instance_norm", [xi, irm.clone(), irv.clone(), rn(3), rn(3)], bn_attrs(True),
      lambda x, m, v, p, q: F.instance_norm(x, m, v, p, q, use_input_stats=True))
w.add("instance_norm/eval", "instance_norm", [xi, irm, irv, None, None], bn_attrs(False),
      lambda x, m, v, p, q: F.instance_norm(x, m, v, use_input_stats=False))
w.add("instance_norm/one_spatial", "instance_norm", [rn(2, 3, 1), None, None, None, None], bn_attrs(True),
      error="ValueError")

# ---------------------------------------------------------------- dropout
xd = rn(3, 4)
w.add("dropout/eval", "dropout", [xd], [attr(0.5), attr(False)], lambda x: x)
w.add("dropout/p0", "dropout", [xd], [attr(0.0), attr(True)], lambda x: x)
w.add("dropout/p1", "dropout", [xd], [attr(1.0), attr(True)], lambda x: torch.zeros_like(x))
w.add("dropout/bad_p", "dropout", [xd], [attr(1.5), attr(True)], error="ValueError")
w.add("dropout/negative_p", "dropout", [xd], [attr(-0.1), attr(False)], error="ValueError")
w.add("dropout/int_input", "dropout", [torch.arange(3)], [attr(0.5), attr(True)], error="TypeError")
w.add("native_dropout/eval", "native_dropout", [xd], [attr(0.3), attr(False)],
      lambda x: torch.native_dropout(x, 0.3, False))

# ---------------------------------------------------------------- embedding, one_hot
ew = rn(5, 3)
idx = torch.tensor([[0, 4, 2], [2, 2, 1]])
w.add("embedding/basic", "embedding", [ew, idx], [None, attr(False)], lambda a, b: F.embedding(b, a))
w.add("embedding/int32_0d", "embedding", [ew, torch.tensor(3, dtype=torch.int32)], [None, attr(False)],
      lambda a, b: F.embedding(b.long(), a))
w.add("embedding/padding_idx", "embedding", [ew, idx], [attr(-1), attr(False)],
      lambda a, b: F.embedding(b, a, padding_idx=-1))
w.add("embedding/int_weight", "embedding", [torch.arange(10).view(5, 2), idx], [None, attr(False)],
      lambda a, b: F.embedding(b, a))
w.add("embedding/transposed_weight", "embedding", [(rn(5, 3), "transposed"), idx], [None, attr(False)],
      lambda a, b: F.embedding(b, a))
w.add("embedding/empty_indices", "embedding", [ew, torch.zeros(0, dtype=torch.long)], [None, attr(False)],
      lambda a, b: F.embedding(b, a))
w.add("embedding/index_out_of_range", "embedding", [ew, torch.tensor([0, 5])], [None, attr(False)], error="IndexError")
w.add("embedding/negative_index", "embedding", [ew, torch.tensor([-1])], [None, attr(False)], error="IndexError")
w.add("embedding/weight_1d", "embedding", [rn(5), idx], [None, attr(False)], error="ShapeError")
w.add("embedding/float_indices", "embedding", [ew, torch.tensor([0.0])], [None, attr(False)], error="TypeError")
w.add("embedding/padding_out_of_range", "embedding", [ew, idx], [attr(5), attr(False)], error="ValueError")
eg = rn(2, 3, 3)
for pad_idx, freq in ((None, False), (2, False), (None, True), (2, True)):
    tag = f"pad{pad_idx}_freq{int(freq)}"
    w.add(f"embedding_dense_backward/{tag}", "embedding_dense_backward", [eg, idx],
          [attr(5), attr(pad_idx), attr(freq)],
          lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, 5, -1 if pad_idx is None else pad_idx, freq))

oh = torch.tensor([[0, 2], [3, 1]])
w.add("one_hot/infer", "one_hot", [oh], [attr(-1)], lambda i: F.one_hot(i))
w.add("one_hot/explicit", "one_hot", [oh], [attr(6)], lambda i: F.one_hot(i, 6))
w.add("one_hot/zero_d", "one_hot", [torch.tensor(1)], [attr(3)], lambda i: F.one_hot(i, 3))
w.add("one_hot/empty", "one_hot", [torch.zeros(0, dtype=torch.long)], [attr(3)], lambda i: F.one_hot(i, 3))
w.add("one_hot/too_large", "one_hot", [oh], [attr(3)], error="ValueError")
w.add("one_hot/negative", "one_hot", [torch.tensor([0, -1])], [attr(-1)], error="ValueError")
w.add("one_hot/empty_infer", "one_hot", [torch.zeros(0, dtype=torch.long)], [attr(-1)], error="ValueError")
w.add("one_hot/int32", "one_hot", [oh.int()], [attr(4)], error="TypeError")
w.add("_one_hot/explicit", "_one_hot", [oh], [attr(4)], lambda i: F.one_hot(i, 4))

# ---------------------------------------------------------------- pad
xp = torch.arange(24.0).view(2, 3, 4)


def pad_attrs(p, mode="constant", value=None):
    return [attr(list(p)), attr(mode), None if value is None else attr(float(value))]


for p, v in (((1, 2), None), ((-1, 2), 7.0), ((2, 1, 0, 1), 1.5), ((1, 1, 1, 1, 1, 1), None), ((-2, -2), None),
             ((0, 0, -1, 1), -3.0)):
    w.add(f"pad/constant_{'_'.join(map(str, p))}", "pad", [xp], pad_attrs(p, "constant", v),
          lambda x: F.pad(x, p, value=0.0 if v is None else v))
w.add("pad/constant_int", "pad", [torch.arange(6).view(2, 3)], pad_attrs((1, 1), "constant", 5),
      lambda x: F.pad(x, (1, 1), value=5))
w.add("pad/constant_transposed", "pad", [(rn(4, 3), "transposed")], pad_attrs((1, 0, 0, 2)),
      lambda x: F.pad(x, (1, 0, 0, 2)))
w.add("pad/constant_0d", "pad", [torch.tensor(2.0)], pad_attrs(()), lambda x: F.pad(x, ()))
for mode in ("reflect", "replicate", "circular"):
    w.add(f"pad/{mode}_1d", "pad", [xp], pad_attrs((2, 3), mode), lambda x: F.pad(x, (2, 3), mode=mode))
    w.add(f"pad/{mode}_neg", "pad", [xp], pad_attrs((-1, 2), mode), lambda x: F.pad(x, (-1, 2), mode=mode))
    w.add(f"pad/{mode}_2d", "pad", [xp[None]], pad_attrs((1, 2, 2, 1), mode), lambda x: F.pad(x, (1, 2, 2, 1), mode=mode))
    w.add(f"pad/{mode}_3d", "pad", [rn(1, 1, 2, 3, 3)], pad_attrs((1, 1, 2, 0, 1, 1), mode),
          lambda x: F.pad(x, (1, 1, 2, 0, 1, 1), mode=mode))
    w.add(f"pad/{mode}_with_value", "pad", [xp], pad_attrs((1, 1), mode, 2.0), error="ValueError")
    w.add(f"pad/{mode}_1d_input", "pad", [xp[0, 0]], pad_attrs((1, 1), mode), error="NotImplementedError")
w.add("pad/reflect_unbatched", "pad", [xp[0]], pad_attrs((3, 1), "reflect"), lambda x: F.pad(x, (3, 1), mode="reflect"))
w.add("pad/replicate_unbatched_2d", "pad", [xp], pad_attrs((2, 2, 1, 3), "replicate"),
      lambda x: F.pad(x, (2, 2, 1, 3), mode="replicate"))
w.add("pad/circular_full", "pad", [xp], pad_attrs((4, 0), "circular"), lambda x: F.pad(x, (4, 0), mode="circular"))
w.add("pad/reflect_too_large", "pad", [xp], pad_attrs((4, 0), "reflect"), error="ValueError")
w.add("pad/circular_too_large", "pad", [xp], pad_attrs((5, 0), "circular"), error="ValueError")
w.add("pad/circular_unbatched", "pad", [xp[0]], pad_attrs((1, 1), "circular"), error="NotImplementedError")
w.add("pad/odd_length", "pad", [xp], pad_attrs((1,)), error="ValueError")
w.add("pad/too_long", "pad", [xp], pad_attrs((1,) * 8), error="ValueError")
w.add("pad/negative_size", "pad", [xp], pad_attrs((-3, -2)), error="ShapeError")
w.add("pad/bad_mode", "pad", [xp], pad_attrs((1, 1), "wrap"), error="NotImplementedError")
w.add("pad/replicate_empty_dim", "pad", [rn(1, 3, 0)], pad_attrs((1, 1), "replicate"), error="ShapeError")


def pad_grad(x, p, mode, g):
    x = x.clone().requires_grad_()
    return torch.autograd.grad(F.pad(x, p, mode=mode), [x], g)[0]


for mode, p in (("reflect", (2, 3)), ("replicate", (1, 2, 2, 1)), ("circular", (-1, 2))):
    src = xp if len(p) == 2 else xp[None]
    gout = rn(*F.pad(src, p, mode=mode).shape)
    w.add(f"pad_backward/{mode}", "pad_backward", [gout], [attr(list(src.shape)), attr(list(p)), attr(mode)],
          lambda g: pad_grad(src, p, mode, g))
w.add("pad_backward/shape_mismatch", "pad_backward", [rn(2, 3, 4)], [attr([2, 3, 4]), attr([1, 1]), attr("reflect")],
      error="ShapeError")

# ---------------------------------------------------------------- upsampling
u3, u4, u5 = rn(2, 2, 5), rn(1, 2, 3, 4), rn(1, 1, 2, 3, 2)
w.add("upsample_nearest1d/size", "upsample_nearest1d", [u3], [attr([8]), None],
      lambda x: F.interpolate(x, size=8, mode="nearest"))
w.add("upsample_nearest1d/down", "upsample_nearest1d", [u3], [attr([3]), None],
      lambda x: F.interpolate(x, size=3, mode="nearest"))
w.add("upsample_nearest1d/scale", "upsample_nearest1d", [u3], [attr([8]), attr(1.7)],
      lambda x: F.interpolate(x, scale_factor=1.7, mode="nearest"))
w.add("upsample_nearest2d/size", "upsample_nearest2d", [u4], [attr([7, 5]), None, None],
      lambda x: F.interpolate(x, size=(7, 5), mode="nearest"))
w.add("upsample_nearest2d/double", "upsample_nearest2d", [u4], [attr([6, 8]), attr(2.0), attr(2.0)],
      lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"))
w.add("upsample_nearest2d/scale", "upsample_nearest2d", [u4], [attr([4, 10]), attr(1.5), attr(2.5)],
      lambda x: F.interpolate(x, scale_factor=(1.5, 2.5), mode="nearest"))
w.add("upsample_nearest2d/uint8", "upsample_nearest2d", [torch.arange(12, dtype=torch.uint8).view(1, 1, 3, 4)],
      [attr([5, 5]), None, None], lambda x: F.interpolate(x, size=(5, 5), mode="nearest"))
w.add("upsample_nearest3d/size", "upsample_nearest3d", [u5], [attr([3, 4, 5]), None, None, None],
      lambda x: F.interpolate(x, size=(3, 4, 5), mode="nearest"))
w.add("upsample_nearest2d/bad_rank", "upsample_nearest2d", [u3], [attr([4, 4]), None, None], error="ShapeError")
w.add("upsample_nearest2d/zero_output", "upsample_nearest2d", [u4], [attr([0, 4]), None, None], error="ValueError")
for align in (False, True):
    tag = "ac" if align else "noac"
    w.add(f"upsample_bilinear2d/up_{tag}", "upsample_bilinear2d", [u4], [attr([5, 7]), attr(align), None, None],
          lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=align))
    w.add(f"upsample_bilinear2d/down_{tag}", "upsample_bilinear2d", [rn(2, 1, 6, 5)], [attr([4, 2]), attr(align), None,
                                                                                        None],
          lambda x: F.interpolate(x, size=(4, 2), mode="bilinear", align_corners=align))
    w.add(f"upsample_bilinear2d/to_one_{tag}", "upsample_bilinear2d", [u4], [attr([1, 1]), attr(align), None, None],
          lambda x: F.interpolate(x, size=(1, 1), mode="bilinear", align_corners=align))
w.add("upsample_bilinear2d/scale", "upsample_bilinear2d", [u4], [attr([5, 6]), attr(False), attr(1.7), attr(1.5)],
      lambda x: F.interpolate(x, scale_factor=(1.7, 1.5), mode="bilinear"))
w.add("upsample_bilinear2d/float64_transposed", "upsample_bilinear2d",
      [(rn(1, 1, 4, 3, dtype=torch.float64), "transposed")], [attr([6, 6]), attr(False), None, None],
      lambda x: F.interpolate(x, size=(6, 6), mode="bilinear"))
w.add("upsample_bilinear2d/int_input", "upsample_bilinear2d", [torch.arange(4).view(1, 1, 2, 2)],
      [attr([3, 3]), attr(False), None, None], error="TypeError")


def interp_grad(x, g, **kw):
    x = x.clone().requires_grad_()
    return torch.autograd.grad(F.interpolate(x, **kw), [x], g)[0]


g2 = rn(1, 2, 7, 5)
w.add("upsample_nearest2d_backward/size", "upsample_nearest2d_backward", [g2],
      [attr([7, 5]), attr([1, 2, 3, 4]), None, None], lambda g: interp_grad(u4, g, size=(7, 5), mode="nearest"))
for align in (False, True):
    gb2 = rn(1, 2, 5, 7)
    w.add(f"upsample_bilinear2d_backward/{int(align)}", "upsample_bilinear2d_backward", [gb2],
          [attr([5, 7]), attr([1, 2, 3, 4]), attr(align), None, None],
          lambda g: interp_grad(u4, g, size=(5, 7), mode="bilinear", align_corners=align))

# ---------------------------------------------------------------- more dtypes, NaN, empty, backward-op errors
w.add("mse_loss/float32_float64", "mse_loss", [rn(3), rn(3, dtype=torch.float64)], [attr("mean")],
      lambda x, y: F.mse_loss(x, y))
w.add("mse_loss/float32_int64", "mse_loss", [rn(3), torch.arange(3)], [attr("sum")],
      lambda x, y: F.mse_loss(x, y, reduction="sum"))
w.add("mse_loss/zero_d", "mse_loss", [torch.tensor(1.5), torch.tensor(-0.5)], [attr("mean")],
      lambda x, y: F.mse_loss(x, y))
w.add("mse_loss/bfloat16", "mse_loss", [rn(6).bfloat16(), rn(6).bfloat16()], [attr("none")],
      lambda x, y: F.mse_loss(x.float(), y.float(), reduction="none").bfloat16())
w.add("l1_loss/nan_inf", "l1_loss", [torch.tensor([float("nan"), 1.0, float("inf")]), torch.tensor([0.0, float("inf"), 1.0])],
      [attr("none")], lambda x, y: F.l1_loss(x, y, reduction="none"))
w.add("huber_loss/mean_empty", "huber_loss", [rn(0), rn(0)], [attr("mean"), attr(1.0)],
      lambda x, y: F.huber_loss(x, y))
w.add("cross_entropy/nan_logit", "cross_entropy", [torch.tensor([[float("nan"), 0.0], [1.0, 2.0]]), torch.tensor([1, 0]),
                                                   None], ce_attrs("none"), lambda a, b, c: F.cross_entropy(a, b, reduction="none"))
w.add("cross_entropy/float64_weight_mixed", "cross_entropy", [logits.double(), tgt, cw.double()], ce_attrs("sum", -100, 0.05),
      lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction="sum", label_smoothing=0.05))
w.add("layer_norm/empty_batch", "layer_norm", [rn(0, 4), None, None], [attr([4]), attr(1e-5)],
      lambda x, p, q: F.layer_norm(x, [4]))
w.add("group_norm/bfloat16", "group_norm", [rn(2, 4, 3).bfloat16(), None, None], [attr(2), attr(1e-5)],
      lambda x, p, q: F.group_norm(x.float(), 2).bfloat16())
w.add("softmax/dim_size_one", "softmax", [rn(3, 1)], [attr(1), None], lambda a: torch.softmax(a, 1))
w.add("log_softmax/empty_reduced_dim", "log_softmax", [rn(2, 0)], [attr(1), None], lambda a: torch.log_softmax(a, 1))
w.add("nll_loss_backward/grad_shape", "nll_loss_backward", [rn(5), logp, tgt, None, torch.tensor(4.0)], nll_attrs("mean"),
      error="ShapeError")
w.add("mse_loss_backward/grad_shape", "mse_loss_backward", [rn(2), a, b], [attr("none")], error="ShapeError")
w.add("native_batch_norm_backward/shape", "native_batch_norm_backward", [rn(4, 3), rn(4, 2), None, rn(2), rn(2)],
      [attr(True)], error="ShapeError")
w.add("native_layer_norm_backward/shape", "native_layer_norm_backward", [rn(2, 4), rn(2, 4), rn(2, 1), rn(2, 1), None],
      [attr([3])], error="ShapeError")
w.add("native_group_norm_backward/groups", "native_group_norm_backward", [rn(2, 4, 3), rn(2, 4, 3), rn(2, 3), rn(2, 3),
                                                                          None], [attr(3)], error="ValueError")
w.add("embedding_dense_backward/shape", "embedding_dense_backward", [rn(2, 3), idx], [attr(5), None, attr(False)],
      error="ShapeError")
w.add("upsample_bilinear2d_backward/shape", "upsample_bilinear2d_backward", [rn(1, 2, 5, 6)],
      [attr([5, 7]), attr([1, 2, 3, 4]), attr(False), None, None], error="ShapeError")
w.add("upsample_nearest1d_backward/int_grad", "upsample_nearest1d_backward", [torch.arange(8).view(1, 1, 8)],
      [attr([8]), attr([1, 1, 4]), None], error="TypeError")
w.add("_softmax_backward_data/int_output", "_softmax_backward_data", [rn(3), torch.arange(3)],
      [attr(0), attr(torch.float32)], error="TypeError")
w.add("_one_hot/negative_classes", "_one_hot", [oh], [attr(-2)], error="ValueError")

w.write(OUT)

# ---------------------------------------------------------------- gradient values (nn_grad.json)
grad_cases = []


def enc(t):
    return None if t is None else tensor(t)


def add_grad(name, fn, inputs, grad_of, out_grad=None, extra=None):
    """Records fn's output and the gradients of (output * out_grad).sum() w.r.t. inputs[i] for i in grad_of."""
    encoded = [enc(t) for t in inputs]  # before fn runs: it may update running stats in place
    ins = [t.clone().requires_grad_() if (t is not None and i in grad_of) else t for i, t in enumerate(inputs)]
    out = fn(*ins)
    g = torch.ones_like(out) if out_grad is None else out_grad
    grads = torch.autograd.grad(out, [ins[i] for i in grad_of], g)
    case = {"name": name, "inputs": encoded, "output": tensor(out.detach()), "out_grad": tensor(g),
            "grads": {str(i): tensor(gr) for i, gr in zip(grad_of, grads)}}
    if extra:
        case.update(extra)
    grad_cases.append(case)


lg64 = rn(6, 4, dtype=torch.float64)
t6 = torch.tensor([0, 3, -100, 1, 2, 3])
w64 = torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=torch.float64)
for red in ("mean", "sum", "none"):
    for ls in (0.0, 0.15):
        og = rn(6, dtype=torch.float64) if red == "none" else None
        add_grad(f"cross_entropy/{red}_ls{ls}", lambda x, t, ww, red=red, ls=ls:
                 F.cross_entropy(x, t, weight=ww, ignore_index=-100, reduction=red, label_smoothing=ls),
                 [lg64, t6, w64], [0], og, {"reduction": red, "label_smoothing": ls, "ignore_index": -100})
add_grad("cross_entropy/ignore_2", lambda x, t, ww: F.cross_entropy(x, t, weight=ww, ignore_index=2, label_smoothing=0.1),
         [lg64, torch.tensor([0, 2, 2, 1, 2, 3]), w64], [0], None,
         {"reduction": "mean", "label_smoothing": 0.1, "ignore_index": 2})
add_grad("cross_entropy/probs", lambda x, t, ww: F.cross_entropy(x, t, weight=ww, label_smoothing=0.2),
         [lg64, torch.softmax(rn(6, 4, dtype=torch.float64), 1), w64], [0], None,
         {"reduction": "mean", "label_smoothing": 0.2, "ignore_index": -100})
xb = rn(4, 3, 2, dtype=torch.float64) * 2 + 0.5
wb, bb = rn(3, dtype=torch.float64), rn(3, dtype=torch.float64)
rmb, rvb = rn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
rm_after, rv_after = rmb.clone(), rvb.clone()
with torch.no_grad():
    F.batch_norm(xb, rm_after, rv_after, wb, bb, training=True, momentum=0.2)
add_grad("batch_norm/train", lambda x, ww, bb_, m, v: F.batch_norm(x, m, v, ww, bb_, training=True, momentum=0.2),
         [xb, wb, bb, rmb.clone(), rvb.clone()], [0, 1, 2], rn(4, 3, 2, dtype=torch.float64),
         {"momentum": 0.2, "running_mean_after": tensor(rm_after), "running_var_after": tensor(rv_after)})
add_grad("batch_norm/eval", lambda x, ww, bb_, m, v: F.batch_norm(x, m, v, ww, bb_, training=False),
         [xb, wb, bb, rmb, rvb], [0, 1, 2], rn(4, 3, 2, dtype=torch.float64))
xi2 = rn(2, 3, 5, dtype=torch.float64)
irm2, irv2 = rn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
im_after, iv_after = irm2.clone(), irv2.clone()
with torch.no_grad():
    F.instance_norm(xi2, im_after, iv_after, momentum=0.3)
add_grad("instance_norm/train", lambda x, m, v: F.instance_norm(x, m, v, momentum=0.3), [xi2, irm2.clone(), irv2.clone()],
         [0], rn(2, 3, 5, dtype=torch.float64),
         {"momentum": 0.3, "running_mean_after": tensor(im_after), "running_var_after": tensor(iv_after)})
with open(GRAD_OUT, "w") as f:
    json.dump({"generator": "tests/oracle/gen_nn.py (PyTorch " + torch.__version__ + ")", "cases": grad_cases}, f,
              separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(grad_cases)} gradient cases to {GRAD_OUT}")
