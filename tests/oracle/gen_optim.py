#!/usr/bin/python3
"""Expected values for tandem's optim layer from torch.optim (PyTorch 1.13).

Run: /usr/bin/python3 tests/oracle/gen_optim.py  -> tests/data/optim.json
(tests/optim/test_optim_oracle.cpp replays it.)

Sections:
  optimizers: {name, optimizer, dtype, defaults, groups: [{params: [i..], options}], params: [tensor],
               grads: [[tensor|null per param] per step], expected: [[param tensor] per step],
               state: {"state.<i>.<name>": tensor}}   (options use tandem names: betas -> beta1/beta2)
  schedulers: {name, optimizer: {type, lrs, options}, scheduler: {...}, steps, lrs: [[lr per group]],
               momenta: [[momentum or beta1 per group]] (OneCycleLR), error_after: bool}
  clip_norm:  {name, grads: [tensor], max_norm, norm_type, total, clipped: [tensor]}
  clip_value: {name, grads: [tensor], clip_value, clipped: [tensor]}
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from oracle_lib import tensor as enc  # noqa: E402

import json  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "optim.json")
DT = {"float32": torch.float32, "float64": torch.float64}


def num(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def torch_options(kind, opts):
    """tandem option names -> torch kwargs."""
    o = dict(opts)
    if "beta1" in o or "beta2" in o:
        o["betas"] = (o.pop("beta1", 0.9), o.pop("beta2", 0.999))
    for k in ("nesterov", "amsgrad", "maximize", "centered"):
        if k in o:
            o[k] = bool(o[k])
    return o


def make_optimizer(kind, groups, defaults):
    cls = getattr(torch.optim, kind)
    d = torch_options(kind, defaults)
    return cls(groups, **d)


optimizer_cases = []


def add_opt(name, kind, defaults, shapes=((3, 4), (5,)), steps=5, dtype="float32", groups=None, skip=None, seed=0,
            scale=1.0):
    """groups: list of (param indices, options) (default: one group with all). skip: set of (step, param) without grad."""
    g = torch.Generator().manual_seed(seed)
    dt = DT[dtype]
    init = [torch.randn(s, generator=g, dtype=torch.float64).to(dt) for s in shapes]
    grads = [[(torch.randn(s, generator=g, dtype=torch.float64) * scale).to(dt) for s in shapes] for _ in range(steps)]
    skip = skip or set()
    params = [t.clone().requires_grad_(True) for t in init]
    if groups is None:
        groups = [(list(range(len(shapes))), {})]
    tgroups = [dict(params=[params[i] for i in idx], **torch_options(kind, o)) for idx, o in groups]
    opt = make_optimizer(kind, tgroups, defaults)
    expected = []
    for s in range(steps):
        for i, p in enumerate(params):
            p.grad = None if (s, i) in skip else grads[s][i].clone()
        opt.step()
        expected.append([enc(p.detach().clone()) for p in params])
    sd = opt.state_dict()
    state = {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                state[f"state.{pid}.{k}"] = enc(v.detach().reshape(v.shape) if v.dim() else v.detach())
            elif v is not None:
                state[f"state.{pid}.{k}"] = enc(torch.tensor(float(v)))
    optimizer_cases.append({
        "name": name, "optimizer": kind, "dtype": dtype, "defaults": defaults,
        "groups": [{"params": idx, "options": o} for idx, o in groups],
        "params": [enc(t) for t in init],
        "grads": [[None if (s, i) in skip else enc(grads[s][i]) for i in range(len(shapes))] for s in range(steps)],
        "expected": expected, "state": state,
    })


# ---- SGD
add_opt("SGD/plain", "SGD", {"lr": 0.1})
add_opt("SGD/momentum", "SGD", {"lr": 0.05, "momentum": 0.9})
add_opt("SGD/momentum_dampening_wd", "SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01})
add_opt("SGD/nesterov", "SGD", {"lr": 0.02, "momentum": 0.9, "nesterov": 1, "weight_decay": 1e-3})
add_opt("SGD/maximize", "SGD", {"lr": 0.1, "momentum": 0.5, "maximize": 1})
add_opt("SGD/groups", "SGD", {"lr": 0.1, "momentum": 0.9},
        groups=[([0], {}), ([1], {"lr": 0.01, "momentum": 0.5, "weight_decay": 0.1})])
add_opt("SGD/skip_grads", "SGD", {"lr": 0.1, "momentum": 0.9}, skip={(0, 1), (2, 0), (3, 1)})
add_opt("SGD/float64_nesterov", "SGD", {"lr": 0.03, "momentum": 0.7, "nesterov": 1}, dtype="float64")
# ---- Adam
add_opt("Adam/default", "Adam", {"lr": 1e-3})
add_opt("Adam/lr_betas_eps", "Adam", {"lr": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6}, steps=8)
add_opt("Adam/weight_decay", "Adam", {"lr": 0.01, "weight_decay": 0.1})
add_opt("Adam/amsgrad", "Adam", {"lr": 0.02, "amsgrad": 1}, steps=8, scale=3.0)
add_opt("Adam/amsgrad_wd_maximize", "Adam", {"lr": 0.02, "amsgrad": 1, "weight_decay": 0.05, "maximize": 1}, steps=6)
add_opt("Adam/groups", "Adam", {"lr": 0.01},
        groups=[([0], {"lr": 0.1, "beta1": 0.5}), ([1], {"amsgrad": 1, "weight_decay": 0.2})], steps=6)
add_opt("Adam/skip_grads", "Adam", {"lr": 0.01}, skip={(0, 0), (1, 1), (4, 0)}, steps=6)
add_opt("Adam/float64_amsgrad", "Adam", {"lr": 0.01, "amsgrad": 1}, dtype="float64", steps=6)
# ---- AdamW
add_opt("AdamW/default", "AdamW", {"lr": 1e-3})
add_opt("AdamW/wd_betas", "AdamW", {"lr": 0.05, "weight_decay": 0.1, "beta1": 0.85, "beta2": 0.99}, steps=7)
add_opt("AdamW/amsgrad_maximize", "AdamW", {"lr": 0.02, "amsgrad": 1, "maximize": 1, "weight_decay": 0.0}, steps=6)
add_opt("AdamW/groups", "AdamW", {"lr": 0.01},
        groups=[([0], {"weight_decay": 0.5}), ([1], {"lr": 0.1, "amsgrad": 1})], steps=6)
add_opt("AdamW/float64", "AdamW", {"lr": 0.03, "weight_decay": 0.05}, dtype="float64", steps=6)
# ---- RMSprop
add_opt("RMSprop/default", "RMSprop", {"lr": 1e-2})
add_opt("RMSprop/alpha_eps_wd", "RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-4, "weight_decay": 0.05})
add_opt("RMSprop/momentum", "RMSprop", {"lr": 0.01, "momentum": 0.9})
add_opt("RMSprop/centered", "RMSprop", {"lr": 0.01, "centered": 1}, steps=7)
add_opt("RMSprop/centered_momentum_maximize", "RMSprop",
        {"lr": 0.005, "centered": 1, "momentum": 0.5, "maximize": 1, "weight_decay": 0.01}, steps=6)
add_opt("RMSprop/groups_skip", "RMSprop", {"lr": 0.01},
        groups=[([0], {"momentum": 0.3}), ([1], {"lr": 0.001, "centered": 1})], skip={(1, 0), (2, 1)})
add_opt("RMSprop/float64_centered", "RMSprop", {"lr": 0.01, "centered": 1, "momentum": 0.2}, dtype="float64")
# ---- Adagrad
add_opt("Adagrad/default", "Adagrad", {"lr": 1e-2})
add_opt("Adagrad/lr_decay_wd", "Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.02}, steps=7)
add_opt("Adagrad/init_acc_eps_maximize", "Adagrad",
        {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-3, "maximize": 1})
add_opt("Adagrad/groups_skip", "Adagrad", {"lr": 0.05},
        groups=[([0], {"lr_decay": 0.1}), ([1], {"weight_decay": 0.1, "maximize": 1})], skip={(0, 0), (3, 1)})
# (No per-group initial_accumulator_value: PyTorch 1.13 ignores it and fills every sum
# with the constructor's value; tandem uses the group's, see adagrad.h.)
add_opt("Adagrad/float64", "Adagrad", {"lr": 0.1, "lr_decay": 0.01}, dtype="float64")

# ---- schedulers
sched_cases = []


def build_sched(opt, spec):
    kind = spec["type"]
    a = {k: v for k, v in spec.items() if k != "type"}
    if kind == "SequentialLR":
        subs = [build_sched(opt, s) for s in a["schedulers"]]
        return torch.optim.lr_scheduler.SequentialLR(opt, subs, milestones=a["milestones"])
    if kind == "OneCycleLR":
        a = dict(a)
        for k in ("base_momentum", "max_momentum"):
            if k in a and isinstance(a[k], list) and len(a[k]) == 1:
                a[k] = a[k][0]
        if isinstance(a["max_lr"], list) and len(a["max_lr"]) == 1:
            a["max_lr"] = a["max_lr"][0]
    return getattr(torch.optim.lr_scheduler, kind)(opt, **a)


def add_sched(name, spec, lrs=(0.1,), opt_type="SGD", opt_options=None, steps=20, error_after=False):
    opt_options = opt_options or {}
    ps = [torch.zeros(2, requires_grad=True) for _ in lrs]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(ps, lrs)]
    opt = make_optimizer(opt_type, groups, dict(opt_options, lr=lrs[0]))
    s = build_sched(opt, spec)

    def mom():
        out = []
        for g in opt.param_groups:
            out.append(g["betas"][0] if "betas" in g else g.get("momentum", 0.0))
        return out

    seq = [list(s.get_last_lr())]
    moms = [mom()]
    for _ in range(steps):
        opt.step()
        s.step()
        seq.append(list(s.get_last_lr()))
        moms.append(mom())
    if error_after:
        try:
            opt.step()
            s.step()
            raise RuntimeError("expected an error")
        except ValueError:
            pass
    sched_cases.append({"name": name, "optimizer": {"type": opt_type, "lrs": list(lrs), "options": opt_options},
                        "scheduler": spec, "steps": steps, "lrs": seq, "momenta": moms, "error_after": error_after})


add_sched("StepLR", {"type": "StepLR", "step_size": 3, "gamma": 0.5}, lrs=(0.1, 0.03))
add_sched("StepLR/step1", {"type": "StepLR", "step_size": 1, "gamma": 0.9})
add_sched("MultiStepLR", {"type": "MultiStepLR", "milestones": [3, 6, 6, 10], "gamma": 0.3}, lrs=(0.1, 1.0))
add_sched("ExponentialLR", {"type": "ExponentialLR", "gamma": 0.9}, lrs=(0.1, 0.2))
add_sched("CosineAnnealingLR", {"type": "CosineAnnealingLR", "T_max": 7, "eta_min": 0.001}, lrs=(0.1, 0.05), steps=24)
add_sched("CosineAnnealingLR/T20", {"type": "CosineAnnealingLR", "T_max": 20})
add_sched("LinearLR/default", {"type": "LinearLR"})
add_sched("LinearLR/decay", {"type": "LinearLR", "start_factor": 1.0, "end_factor": 0.25, "total_iters": 8},
          lrs=(0.1, 0.4))
add_sched("OneCycleLR/sgd", {"type": "OneCycleLR", "max_lr": [0.5], "total_steps": 20},
          opt_options={"momentum": 0.9}, error_after=True)
add_sched("OneCycleLR/adam_groups", {"type": "OneCycleLR", "max_lr": [0.01, 0.1], "total_steps": 20, "pct_start": 0.25,
                                     "div_factor": 10.0, "final_div_factor": 100.0},
          lrs=(0.1, 0.2), opt_type="Adam")
add_sched("OneCycleLR/three_phase_linear", {"type": "OneCycleLR", "max_lr": [1.0], "epochs": 4, "steps_per_epoch": 5,
                                            "three_phase": True, "anneal_strategy": "linear",
                                            "base_momentum": [0.8], "max_momentum": [0.9]},
          opt_options={"momentum": 0.9})
add_sched("OneCycleLR/no_momentum", {"type": "OneCycleLR", "max_lr": [0.3], "total_steps": 25, "cycle_momentum": False},
          opt_type="Adagrad", steps=24)
add_sched("SequentialLR/warmup_cosine",
          {"type": "SequentialLR", "milestones": [5],
           "schedulers": [{"type": "LinearLR", "start_factor": 0.1, "total_iters": 5},
                          {"type": "CosineAnnealingLR", "T_max": 15}]}, lrs=(0.1, 0.02))
add_sched("SequentialLR/three",
          {"type": "SequentialLR", "milestones": [4, 9],
           "schedulers": [{"type": "ExponentialLR", "gamma": 0.8},
                          {"type": "StepLR", "step_size": 2, "gamma": 0.5},
                          {"type": "MultiStepLR", "milestones": [3, 5], "gamma": 0.1}]})

# ---- clipping
clip_norm_cases = []
clip_value_cases = []


def grads_for(seed, shapes, dtype=torch.float32, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(s, generator=g, dtype=torch.float64) * scale).to(dtype) for s in shapes]


def add_clip_norm(name, grads, max_norm, norm_type):
    ps = [torch.zeros_like(x, requires_grad=True) for x in grads]
    for p, x in zip(ps, grads):
        p.grad = x.clone()
    total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    clip_norm_cases.append({"name": name, "grads": [enc(x) for x in grads], "max_norm": max_norm,
                            "norm_type": num(float(norm_type)), "total": num(total.item()),
                            "total_dtype": str(total.dtype).replace("torch.", ""),
                            "clipped": [enc(p.grad) for p in ps]})


shapes = [(3, 4), (5,), (2, 2, 2)]
add_clip_norm("l2/clipped", grads_for(1, shapes), 1.0, 2)
add_clip_norm("l2/unclipped", grads_for(2, shapes), 100.0, 2)
add_clip_norm("l1", grads_for(3, shapes), 2.0, 1)
add_clip_norm("inf", grads_for(4, shapes), 0.5, float("inf"))
add_clip_norm("-inf", grads_for(5, shapes), 0.01, float("-inf"))
add_clip_norm("p3", grads_for(6, shapes), 1.5, 3.0)
add_clip_norm("p0", grads_for(7, shapes), 4.0, 0)
add_clip_norm("single", grads_for(8, [(7,)]), 0.3, 2)
add_clip_norm("float64", grads_for(9, shapes, torch.float64), 1.0, 2)
add_clip_norm("mixed_dtypes", grads_for(10, [(4,)]) + grads_for(11, [(3,)], torch.float64), 0.5, 2)
add_clip_norm("large", grads_for(12, [(40, 50)], scale=0.01), 1.0, 2)
add_clip_norm("nan", [torch.tensor([1.0, float("nan"), 2.0])], 1.0, 2)
add_clip_norm("inf_grad", [torch.tensor([1.0, float("inf"), 2.0]), torch.tensor([3.0])], 1.0, 2)


def add_clip_value(name, grads, clip_value):
    ps = [torch.zeros_like(x, requires_grad=True) for x in grads]
    for p, x in zip(ps, grads):
        p.grad = x.clone()
    torch.nn.utils.clip_grad_value_(ps, clip_value)
    clip_value_cases.append({"name": name, "grads": [enc(x) for x in grads], "clip_value": clip_value,
                             "clipped": [enc(p.grad) for p in ps]})


add_clip_value("basic", grads_for(20, shapes), 0.5)
add_clip_value("float64", grads_for(21, shapes, torch.float64), 1.0)
add_clip_value("negative", grads_for(22, [(4,)]), -0.25)
add_clip_value("nan", [torch.tensor([float("nan"), -3.0, 3.0, 0.1])], 1.0)

with open(OUT, "w") as f:
    json.dump({"generator": "tests/oracle/gen_optim.py (PyTorch " + torch.__version__ + ")",
               "optimizers": optimizer_cases, "schedulers": sched_cases,
               "clip_norm": clip_norm_cases, "clip_value": clip_value_cases}, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(optimizer_cases)} optimizer, {len(sched_cases)} scheduler, "
      f"{len(clip_norm_cases)} clip_norm and {len(clip_value_cases)} clip_value cases to {OUT}")
