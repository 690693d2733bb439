#!/usr/bin/python3
"""Expected results of tandem's nn layers from torch.nn (PyTorch 1.13).

Run: /usr/bin/python3 tests/oracle/gen_nn_modules.py  -> tests/data/nn_modules.json
(tests/nn/test_nn_oracle.cpp replays it). The file lives next to optim.json rather than in
tests/data/oracle/, whose files are op-registry cases that tests/ops/test_oracle.cpp replays.

Each module case:
  name       unique test name
  type       layer class name (torch.nn.<type>; tandem::nn::<type>)
  args       constructor keyword arguments, with torch's names (kernel_size, padding='same', ...);
             containers (Sequential, ModuleList, ModuleDict) have "children": [{key, type, args}]
  dtype      "float32" or "float64": tandem builds the layer (float32), converts it with
             to(dtype) when float64, then loads `state`
  train      training mode of the forward
  state      the state_dict as torch created it (fixed seed): [[torch's key, tensor], ...] in
             torch's order (a list: JSON objects do not keep their order);
             normalisation layers get random affine parameters / running stats so that a
             wrong use of them shows
  inputs     the forward's inputs (Bilinear: two)
  output     forward result (the first one of a tuple)
  extra_outputs the tuple's other results, compared exactly (MaxPool return_indices: indices)
  out_weight R: the gradients are those of (output * R).sum()
  grads      {"input.<i>": d/d input i (floating inputs), "<param name>": d/d param}
  state_after the state_dict after the forward (layers with buffers: running stats; Embedding
             with max_norm: the renormalised weight)
  eval_output (BatchNorm) the output of a second forward in eval mode, after the first
  rtol, atol tolerances (see TOLERANCES below)
"models": {"fashion_mlp" | "fashion_cnn": [[parameter name, shape], ...]} in torch's order.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from oracle_lib import tensor as enc  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "nn_modules.json")

# Tolerances. float32 layers are computed by different kernels than PyTorch's (oneDNN vs
# MKL-DNN/THNN, other summation orders), so results differ by a few ulps of the largest
# partial sums: rtol 1e-4 with atol 1e-5 covers that for the O(1) values used here (the
# inputs and R are standard normal). float64: 1e-10.
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10)}
DTYPES = {"float32": torch.float32, "float64": torch.float64}

cases = []
names = set()


def build(type_name, args):
    """torch module from (type, args); containers build their children recursively."""
    if type_name in ("Sequential", "ModuleList", "ModuleDict"):
        kids = [(c["key"], build(c["type"], c["args"])) for c in args["children"]]
        if type_name == "Sequential":
            return nn.Sequential(*[m for _, m in kids])
        if type_name == "ModuleList":
            return nn.ModuleList([m for _, m in kids])
        return nn.ModuleDict(dict(kids))
    a = dict(args)
    if type_name == "Unflatten":
        a["unflattened_size"] = tuple(a["unflattened_size"])
    return getattr(nn, type_name)(**a)


def run(m, type_name, inputs):
    """Forward; ModuleList / ModuleDict apply their children in order (they have no forward)."""
    if type_name == "ModuleList":
        y = inputs[0]
        for c in m:
            y = c(y)
        return y
    if type_name == "ModuleDict":
        y = inputs[0]
        for c in m.values():
            y = c(y)
        return y
    return m(*inputs)


def randomise_norm_state(m, gen):
    """Random affine parameters and running stats for normalisation layers (their defaults are
    ones / zeros, which would hide a swapped or ignored tensor)."""
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)):
                if getattr(mod, "weight", None) is not None:
                    mod.weight.copy_(1 + 0.5 * torch.randn(mod.weight.shape, generator=gen))
                    mod.bias.copy_(0.5 * torch.randn(mod.bias.shape, generator=gen))
                if getattr(mod, "running_mean", None) is not None:
                    mod.running_mean.copy_(0.3 * torch.randn(mod.running_mean.shape, generator=gen))
                    mod.running_var.copy_(0.5 + torch.rand(mod.running_var.shape, generator=gen))
                    mod.num_batches_tracked.fill_(3)


def add(name, type_name, args, inputs, dtype="float32", train=True, seed=0, eval_after=False, tol=None,
        state_after=False):
    """inputs: list of torch tensors (float inputs are converted to dtype and get gradients)."""
    assert name not in names, name
    names.add(name)
    dt = DTYPES[dtype]
    torch.manual_seed(seed)
    m = build(type_name, args).to(dt)
    gen = torch.Generator().manual_seed(seed + 1000)
    randomise_norm_state(m, gen)
    state = [[k, enc(v.clone())] for k, v in m.state_dict().items()]
    m.train(train)
    xs = []
    for x in inputs:
        if x.is_floating_point():
            x = x.detach().to(dt).clone().requires_grad_(True)
        xs.append(x)
    y = run(m, type_name, xs)
    extra = []
    if isinstance(y, tuple):  # (values, indices) of return_indices: gradients of the values
        y, extra = y[0], list(y[1:])
    r = torch.randn(y.shape, generator=gen, dtype=dt)
    (y * r).sum().backward()
    grads = {}
    for i, x in enumerate(xs):
        if x.is_floating_point():
            grads[f"input.{i}"] = enc(x.grad)
    for k, p in m.named_parameters():
        grads[k] = enc(p.grad if p.grad is not None else torch.zeros_like(p))
    rtol, atol = tol or TOLERANCES[dtype]
    case = {"name": name, "type": type_name, "args": args, "dtype": dtype, "train": train, "state": state,
            "inputs": [enc(x) for x in xs], "output": enc(y), "out_weight": enc(r), "grads": grads,
            "rtol": rtol, "atol": atol}
    if extra:
        case["extra_outputs"] = [enc(e) for e in extra]
    if len(list(m.buffers())) > 0 or state_after:
        case["state_after"] = [[k, enc(v)] for k, v in m.state_dict().items()]
    if eval_after:
        m.eval()
        with torch.no_grad():
            case["eval_output"] = enc(run(m, type_name, xs))
    cases.append(case)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- Linear, Bilinear
add("Linear/basic", "Linear", {"in_features": 5, "out_features": 3}, [randn(4, 5)])
add("Linear/no_bias", "Linear", {"in_features": 5, "out_features": 3, "bias": False}, [randn(4, 5)])
add("Linear/batch3d", "Linear", {"in_features": 4, "out_features": 6}, [randn(2, 3, 4)])
add("Linear/vector", "Linear", {"in_features": 4, "out_features": 2}, [randn(4)])
add("Linear/float64", "Linear", {"in_features": 5, "out_features": 3}, [randn(4, 5)], dtype="float64")
add("Bilinear/basic", "Bilinear", {"in1_features": 3, "in2_features": 4, "out_features": 2},
    [randn(5, 3, seed=1), randn(5, 4, seed=2)])
add("Bilinear/no_bias_batch3d", "Bilinear", {"in1_features": 3, "in2_features": 2, "out_features": 4, "bias": False},
    [randn(2, 3, 3, seed=1), randn(2, 3, 2, seed=2)])
add("Bilinear/float64", "Bilinear", {"in1_features": 3, "in2_features": 4, "out_features": 2},
    [randn(5, 3, seed=1), randn(5, 4, seed=2)], dtype="float64")

# ---------------------------------------------------------------- convolutions
add("Conv1d/basic", "Conv1d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3}, [randn(2, 3, 9)])
add("Conv1d/stride_pad_dil", "Conv1d",
    {"in_channels": 2, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 2, "dilation": 2},
    [randn(2, 2, 10)])
add("Conv1d/groups_no_bias", "Conv1d",
    {"in_channels": 4, "out_channels": 6, "kernel_size": 2, "groups": 2, "bias": False}, [randn(2, 4, 7)])
add("Conv1d/same", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 4, "padding": "same"},
    [randn(2, 2, 8)])
add("Conv1d/valid", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": "valid"},
    [randn(1, 2, 6)])
add("Conv1d/unbatched", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1},
    [randn(2, 6)])
add("Conv2d/basic", "Conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3}, [randn(2, 3, 6, 6)])
add("Conv2d/stride_padding", "Conv2d",
    {"in_channels": 2, "out_channels": 3, "kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 2]},
    [randn(2, 2, 7, 5)])
add("Conv2d/dilation", "Conv2d", {"in_channels": 2, "out_channels": 2, "kernel_size": 3, "dilation": 2, "padding": 1},
    [randn(1, 2, 8, 8)])
add("Conv2d/groups", "Conv2d", {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "groups": 2, "padding": 1},
    [randn(2, 4, 5, 5)])
add("Conv2d/depthwise_no_bias", "Conv2d",
    {"in_channels": 3, "out_channels": 3, "kernel_size": 3, "groups": 3, "bias": False}, [randn(2, 3, 5, 5)])
add("Conv2d/same_even_kernel", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": [4, 3], "padding": "same"},
    [randn(2, 2, 6, 5)])
add("Conv2d/same_dilation", "Conv2d",
    {"in_channels": 2, "out_channels": 2, "kernel_size": 3, "padding": "same", "dilation": 2}, [randn(1, 2, 7, 7)])
add("Conv2d/unbatched", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3}, [randn(2, 5, 5)])
add("Conv2d/float64", "Conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1},
    [randn(2, 3, 7, 7)], dtype="float64")
# padding_mode: F.pad(mode) then a convolution with padding 0 (numeric, tuple and "same" paddings)
for mode in ("reflect", "replicate", "circular"):
    add(f"Conv1d/{mode}", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 2,
                                      "padding_mode": mode}, [randn(2, 2, 7)])
    add(f"Conv1d/{mode}_same_stride1_dil", "Conv1d",
        {"in_channels": 2, "out_channels": 2, "kernel_size": 4, "padding": "same", "dilation": 2,
         "padding_mode": mode}, [randn(1, 2, 9)])
    add(f"Conv2d/{mode}", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": [3, 2], "stride": [2, 1],
                                      "padding": [1, 2], "padding_mode": mode}, [randn(2, 2, 6, 5)])
    add(f"Conv2d/{mode}_same_even", "Conv2d",
        {"in_channels": 2, "out_channels": 2, "kernel_size": [4, 3], "padding": "same", "padding_mode": mode},
        [randn(1, 2, 6, 5)])
    add(f"Conv2d/{mode}_groups_float64", "Conv2d",
        {"in_channels": 4, "out_channels": 2, "kernel_size": 3, "padding": 1, "groups": 2, "dilation": 2,
         "padding_mode": mode}, [randn(2, 4, 6, 6)], dtype="float64")
for mode in ("reflect", "replicate"):  # torch 1.13's circular F.pad rejects unbatched input
    add(f"Conv1d/{mode}_unbatched", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1,
                                                "padding_mode": mode}, [randn(2, 6)])
    add(f"Conv2d/{mode}_unbatched", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1,
                                                "padding_mode": mode}, [randn(2, 5, 4)])
add("Conv2d/zeros_explicit", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1,
                                        "padding_mode": "zeros"}, [randn(2, 2, 5, 5)])
add("Conv2d/reflect_valid", "Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": "valid",
                                       "padding_mode": "reflect"}, [randn(1, 2, 5, 5)])
add("ConvTranspose2d/basic", "ConvTranspose2d", {"in_channels": 3, "out_channels": 2, "kernel_size": 3},
    [randn(2, 3, 4, 4)])
add("ConvTranspose2d/stride_pad_outpad", "ConvTranspose2d",
    {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1},
    [randn(2, 2, 4, 5)])
add("ConvTranspose2d/groups_dilation_no_bias", "ConvTranspose2d",
    {"in_channels": 4, "out_channels": 2, "kernel_size": [2, 3], "groups": 2, "dilation": 2, "bias": False},
    [randn(1, 4, 3, 4)])
add("ConvTranspose2d/float64", "ConvTranspose2d",
    {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "stride": 2, "padding": 1},
    [randn(2, 2, 4, 4)], dtype="float64")

# ---------------------------------------------------------------- pooling
add("MaxPool2d/basic", "MaxPool2d", {"kernel_size": 2}, [randn(2, 3, 6, 6)])
add("MaxPool2d/stride_padding", "MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, [randn(2, 2, 7, 6)])
add("MaxPool2d/dilation_ceil", "MaxPool2d", {"kernel_size": [2, 3], "stride": [2, 1], "dilation": 2, "ceil_mode": True},
    [randn(1, 2, 9, 8)])
add("MaxPool2d/float64", "MaxPool2d", {"kernel_size": 2, "stride": 1}, [randn(2, 2, 4, 5)], dtype="float64")
add("MaxPool2d/return_indices", "MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True},
    [randn(2, 2, 7, 6)])
add("MaxPool2d/return_indices_dil_ceil_unbatched", "MaxPool2d",
    {"kernel_size": [2, 3], "stride": [2, 1], "dilation": 2, "ceil_mode": True, "return_indices": True},
    [randn(2, 9, 8)], dtype="float64")
add("MaxPool2d/return_indices_false", "MaxPool2d", {"kernel_size": 2, "return_indices": False}, [randn(1, 2, 4, 4)])
add("MaxPool1d/basic", "MaxPool1d", {"kernel_size": 2}, [randn(2, 3, 8)])
add("MaxPool1d/stride_padding", "MaxPool1d", {"kernel_size": 3, "stride": 2, "padding": 1}, [randn(2, 2, 9)])
add("MaxPool1d/dilation_ceil", "MaxPool1d", {"kernel_size": 2, "stride": 2, "dilation": 2, "ceil_mode": True},
    [randn(1, 2, 10)])
add("MaxPool1d/unbatched_float64", "MaxPool1d", {"kernel_size": 3, "stride": 1}, [randn(3, 7)], dtype="float64")
add("MaxPool1d/return_indices", "MaxPool1d", {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True},
    [randn(2, 3, 9)])
add("MaxPool1d/return_indices_dil_ceil_unbatched", "MaxPool1d",
    {"kernel_size": 2, "stride": 3, "dilation": 2, "ceil_mode": True, "return_indices": True}, [randn(2, 11)],
    dtype="float64")
# MaxUnpool2d: inputs (values, indices) of a max pool over a random input (overlapping windows
# repeat indices: every writer gets the gradient at its position, as PyTorch)
def pooled(shape, seed=0, **kw):
    v, i = torch.nn.functional.max_pool2d(randn(*shape, seed=seed), return_indices=True, **kw)
    return [v, i]


add("MaxUnpool2d/basic", "MaxUnpool2d", {"kernel_size": 2}, pooled((2, 3, 6, 6), kernel_size=2))
add("MaxUnpool2d/stride_padding_overlap", "MaxUnpool2d", {"kernel_size": 3, "stride": 2, "padding": 1},
    pooled((2, 2, 7, 5), kernel_size=3, stride=2, padding=1))
add("MaxUnpool2d/rect_unbatched_float64", "MaxUnpool2d", {"kernel_size": [2, 3], "stride": [2, 1]},
    pooled((2, 6, 7), kernel_size=(2, 3), stride=(2, 1)), dtype="float64")
add("AvgPool2d/basic", "AvgPool2d", {"kernel_size": 2}, [randn(2, 3, 6, 6)])
add("AvgPool2d/pad_exclude", "AvgPool2d",
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}, [randn(2, 2, 7, 6)])
add("AvgPool2d/pad_include_ceil", "AvgPool2d",
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}, [randn(1, 2, 6, 6)])
add("AvgPool2d/divisor_override", "AvgPool2d", {"kernel_size": 2, "divisor_override": 3}, [randn(1, 2, 4, 4)])
add("AdaptiveAvgPool2d/basic", "AdaptiveAvgPool2d", {"output_size": [3, 2]}, [randn(2, 3, 7, 5)])
add("AdaptiveAvgPool2d/global", "AdaptiveAvgPool2d", {"output_size": 1}, [randn(2, 4, 5, 5)])
add("AdaptiveAvgPool2d/upsample", "AdaptiveAvgPool2d", {"output_size": [4, 4]}, [randn(1, 2, 3, 3)], dtype="float64")

# ---------------------------------------------------------------- normalisation
for dims, x in ((1, randn(6, 4)), (1, randn(4, 3, 5)), (2, randn(3, 4, 3, 3))):
    bn = f"BatchNorm{dims}d"
    c = x.shape[1]
    tag = f"{x.dim()}d"
    add(f"{bn}/train_{tag}", bn, {"num_features": c}, [x], eval_after=True)
    add(f"{bn}/eval_{tag}", bn, {"num_features": c}, [x], train=False)
    add(f"{bn}/momentum_{tag}", bn, {"num_features": c, "momentum": 0.3, "eps": 1e-3}, [x], eval_after=True)
    add(f"{bn}/no_affine_{tag}", bn, {"num_features": c, "affine": False}, [x], eval_after=True)
    add(f"{bn}/no_running_stats_{tag}", bn, {"num_features": c, "track_running_stats": False}, [x], eval_after=True)
    add(f"{bn}/momentum_none_{tag}", bn, {"num_features": c, "momentum": None}, [x], eval_after=True)
    add(f"{bn}/momentum_none_eval_{tag}", bn, {"num_features": c, "momentum": None}, [x], train=False)
    add(f"{bn}/momentum_none_no_stats_{tag}", bn, {"num_features": c, "momentum": None, "track_running_stats": False},
        [x], eval_after=True)
    add(f"{bn}/no_affine_no_stats_eval_{tag}", bn, {"num_features": c, "affine": False, "track_running_stats": False},
        [x], train=False)
add("BatchNorm2d/float64", "BatchNorm2d", {"num_features": 3, "momentum": 0.2}, [randn(2, 3, 4, 3)], dtype="float64",
    eval_after=True)
add("BatchNorm2d/momentum_none_float64", "BatchNorm2d", {"num_features": 3, "momentum": None, "affine": False},
    [randn(2, 3, 4, 3)], dtype="float64", eval_after=True)
add("LayerNorm/last_dim", "LayerNorm", {"normalized_shape": [5]}, [randn(3, 5)])
add("LayerNorm/two_dims", "LayerNorm", {"normalized_shape": [3, 4], "eps": 1e-3}, [randn(2, 2, 3, 4)])
add("LayerNorm/no_affine", "LayerNorm", {"normalized_shape": [6], "elementwise_affine": False}, [randn(4, 6)])
add("LayerNorm/float64", "LayerNorm", {"normalized_shape": [4]}, [randn(3, 2, 4)], dtype="float64")
add("GroupNorm/basic", "GroupNorm", {"num_groups": 2, "num_channels": 4}, [randn(3, 4, 3, 2)])
add("GroupNorm/one_group_3d", "GroupNorm", {"num_groups": 1, "num_channels": 3, "eps": 1e-3}, [randn(2, 3, 5)])
add("GroupNorm/instance_no_affine", "GroupNorm", {"num_groups": 4, "num_channels": 4, "affine": False},
    [randn(2, 4, 3, 3)])
add("GroupNorm/float64", "GroupNorm", {"num_groups": 3, "num_channels": 6}, [randn(2, 6, 2, 2)], dtype="float64")

# ---------------------------------------------------------------- dropout (deterministic cases; the random
# case's statistics are checked in tests/nn/test_layers.cpp)
add("Dropout/eval", "Dropout", {"p": 0.5}, [randn(4, 5)], train=False)
add("Dropout/train_p0", "Dropout", {"p": 0.0}, [randn(4, 5)])
add("Dropout/train_p1", "Dropout", {"p": 1.0}, [randn(4, 5)])

# ---------------------------------------------------------------- embedding
idx = torch.tensor([[0, 2, 1, 4], [4, 3, 2, 2]])
add("Embedding/basic", "Embedding", {"num_embeddings": 5, "embedding_dim": 3}, [idx])
add("Embedding/padding_idx", "Embedding", {"num_embeddings": 5, "embedding_dim": 3, "padding_idx": 2}, [idx])
add("Embedding/negative_padding_idx", "Embedding", {"num_embeddings": 5, "embedding_dim": 3, "padding_idx": -1},
    [idx])
# max_norm: the looked-up rows are renormalised in place (torch.embedding_renorm_) before the lookup
# (N(0, 1) rows of dim 4 have norms around 2: some rows are over the bound, some not, row 5 not looked up)
idx2 = torch.tensor([[0, 2, 1, 4], [4, 3, 2, 2]])
add("Embedding/max_norm", "Embedding", {"num_embeddings": 6, "embedding_dim": 4, "max_norm": 1.8}, [idx2],
    state_after=True)
add("Embedding/max_norm_p1_padding", "Embedding",
    {"num_embeddings": 6, "embedding_dim": 4, "max_norm": 2.5, "norm_type": 1.0, "padding_idx": 2}, [idx2],
    state_after=True)
add("Embedding/max_norm_p3_float64", "Embedding",
    {"num_embeddings": 6, "embedding_dim": 4, "max_norm": 1.2, "norm_type": 3.0}, [idx2], dtype="float64",
    state_after=True)
add("Embedding/max_norm_scale_grad_by_freq", "Embedding",
    {"num_embeddings": 6, "embedding_dim": 4, "max_norm": 1.5, "scale_grad_by_freq": True}, [idx2], state_after=True)
add("Embedding/scale_grad_by_freq", "Embedding", {"num_embeddings": 5, "embedding_dim": 3, "scale_grad_by_freq": True},
    [idx])
add("Embedding/max_norm_scalar_index", "Embedding", {"num_embeddings": 4, "embedding_dim": 3, "max_norm": 0.5},
    [torch.tensor(3)], state_after=True)
add("Embedding/scalar_index", "Embedding", {"num_embeddings": 4, "embedding_dim": 2}, [torch.tensor(3)])

# ---------------------------------------------------------------- activations
act = randn(3, 7) * 2
act[0, :3] = torch.tensor([0.0, -0.0, 1e-3])
add("ReLU/basic", "ReLU", {}, [act])
add("LeakyReLU/default", "LeakyReLU", {}, [act])
add("LeakyReLU/slope", "LeakyReLU", {"negative_slope": 0.2}, [act])
add("GELU/none", "GELU", {}, [act])
add("GELU/tanh", "GELU", {"approximate": "tanh"}, [act])
add("GELU/float64", "GELU", {"approximate": "tanh"}, [act], dtype="float64")
add("SiLU/basic", "SiLU", {}, [act])
add("Tanh/basic", "Tanh", {}, [act])
add("Sigmoid/basic", "Sigmoid", {}, [act])
add("Softmax/dim1", "Softmax", {"dim": 1}, [act])
add("Softmax/dim0_3d", "Softmax", {"dim": 0}, [randn(3, 2, 4)])
add("Softmax/neg_dim", "Softmax", {"dim": -1}, [randn(2, 3, 4)], dtype="float64")
add("LogSoftmax/dim1", "LogSoftmax", {"dim": 1}, [act])
add("LogSoftmax/neg_dim", "LogSoftmax", {"dim": -2}, [randn(2, 3, 4)])

# ---------------------------------------------------------------- shape layers
add("Flatten/default", "Flatten", {}, [randn(2, 3, 4)])
add("Flatten/range", "Flatten", {"start_dim": 0, "end_dim": 1}, [randn(2, 3, 4)])
add("Flatten/end_dim", "Flatten", {"start_dim": 1, "end_dim": 2}, [randn(2, 3, 2, 2)])
add("Unflatten/basic", "Unflatten", {"dim": 1, "unflattened_size": [2, 3]}, [randn(4, 6)])
add("Unflatten/neg_dim_infer", "Unflatten", {"dim": -1, "unflattened_size": [-1, 2]}, [randn(2, 3, 8)])
add("Identity/basic", "Identity", {}, [randn(3, 4)])

# ---------------------------------------------------------------- containers
add("Sequential/mlp", "Sequential", {"children": [
    {"key": "0", "type": "Linear", "args": {"in_features": 6, "out_features": 5}},
    {"key": "1", "type": "ReLU", "args": {}},
    {"key": "2", "type": "Linear", "args": {"in_features": 5, "out_features": 3}},
    {"key": "3", "type": "LogSoftmax", "args": {"dim": 1}}]}, [randn(4, 6)])
add("Sequential/cnn_bn", "Sequential", {"children": [
    {"key": "0", "type": "Conv2d", "args": {"in_channels": 1, "out_channels": 4, "kernel_size": 3, "padding": 1}},
    {"key": "1", "type": "BatchNorm2d", "args": {"num_features": 4}},
    {"key": "2", "type": "ReLU", "args": {}},
    {"key": "3", "type": "MaxPool2d", "args": {"kernel_size": 2}},
    {"key": "4", "type": "Flatten", "args": {}},
    {"key": "5", "type": "Linear", "args": {"in_features": 36, "out_features": 3}}]}, [randn(2, 1, 6, 6)],
    eval_after=True)
add("Sequential/nested", "Sequential", {"children": [
    {"key": "0", "type": "Sequential", "args": {"children": [
        {"key": "0", "type": "Linear", "args": {"in_features": 4, "out_features": 4}},
        {"key": "1", "type": "LayerNorm", "args": {"normalized_shape": [4]}}]}},
    {"key": "1", "type": "GELU", "args": {}},
    {"key": "2", "type": "Linear", "args": {"in_features": 4, "out_features": 2}}]}, [randn(3, 4)])
add("ModuleList/basic", "ModuleList", {"children": [
    {"key": "0", "type": "Linear", "args": {"in_features": 4, "out_features": 3}},
    {"key": "1", "type": "Tanh", "args": {}},
    {"key": "2", "type": "Linear", "args": {"in_features": 3, "out_features": 2, "bias": False}}]}, [randn(5, 4)])
add("ModuleDict/basic", "ModuleDict", {"children": [
    {"key": "embed", "type": "Embedding", "args": {"num_embeddings": 6, "embedding_dim": 4, "padding_idx": 0}},
    {"key": "norm", "type": "LayerNorm", "args": {"normalized_shape": [4]}},
    {"key": "proj", "type": "Linear", "args": {"in_features": 4, "out_features": 2}}]},
    [torch.tensor([[0, 1, 5], [2, 0, 3]])])


# ---------------------------------------------------------------- reference models (src/tandem/nn/models.h):
# named_parameters() of torch's nn.Sequential of the same layers: names and shapes, in order.
def named_shapes(m):
    return [[k, list(p.shape)] for k, p in m.named_parameters()]


models = {
    "fashion_mlp": named_shapes(nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                                              nn.ReLU(), nn.Linear(128, 10))),
    "fashion_cnn": named_shapes(nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                              nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))),
}

if __name__ == "__main__":
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/oracle/gen_nn_modules.py (PyTorch " + torch.__version__ + ")",
                   "cases": cases, "models": models}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT} ({os.path.getsize(OUT)} bytes)")
