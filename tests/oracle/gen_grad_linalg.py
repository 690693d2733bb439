"""Writes tests/data/grad_linalg.json: PyTorch float32 gradients of conv2d + max_pool2d
(and conv_transpose2d / avg_pool2d) for inputs given by a formula both sides compute:
x.flat[i] = sin(0.37 * i + seed). Run with /usr/bin/python3 (torch)."""
import json, math, os
import numpy as np
import torch
import torch.nn.functional as F


def fx(shape, seed):
    n = int(np.prod(shape))
    return torch.tensor(np.sin(0.37 * np.arange(n) + seed).reshape(shape), dtype=torch.float32)


cases = []


def add(name, shapes, fn, kw):
    ins = [fx(s, i + 1).requires_grad_() for i, s in enumerate(shapes)]
    y = fn(*ins)
    r = fx(tuple(y.shape), 0.5)
    (y * r).sum().backward()
    cases.append({"name": name, "shapes": [list(s) for s in shapes], "kw": kw,
                  "grads": [i.grad.flatten().tolist() for i in ins]})


add("conv_pool", [(2, 4, 7, 7), (6, 2, 3, 3), (6,)],
    lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b, stride=1, padding=1, dilation=1, groups=2), 3, 2, 1, ceil_mode=True),
    {})
add("conv_strided", [(2, 3, 9, 8), (4, 3, 3, 2), (4,)],
    lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b, stride=2, padding=(2, 1), dilation=2), 2), {})
add("convT_avg", [(2, 4, 5, 5), (4, 3, 3, 3), (6,)],
    lambda x, w, b: F.avg_pool2d(F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
                                 3, 2, 1, ceil_mode=True, count_include_pad=False), {})
out = os.path.join(os.path.dirname(__file__), "..", "data", "grad_linalg.json")
with open(out, "w") as f:
    json.dump(cases, f)
print("wrote", out, len(cases))
