"""Expected gradients for tests/autograd/test_grad_pointwise.cpp (PyTorch as the oracle).

Run with /usr/bin/python3 (Debian's python with torch 1.13). Prints a C++ block, pasted
into the test as kExpected: one entry per program, each a list of gradient tensors
(flattened, row-major). Every program here has a twin in the C++ test (same name).
"""
import math

import torch

f64 = torch.float64


def T(v, grad=True):
    return torch.tensor(v, dtype=f64, requires_grad=grad)


def C(v):
    return torch.tensor(v, dtype=f64)


def grads(out, inputs, gout=None, create_graph=False):
    return list(torch.autograd.grad(out, inputs, gout, create_graph=create_graph, allow_unused=False))


P = {}


def prog(fn):
    P[fn.__name__] = fn
    return fn


@prog
def maximum_ties():
    a, b = T([1., 2., 3., 4., -1.]), T([1., 0., 3., 5., -1.])
    return grads(torch.maximum(a, b), [a, b], C([1., 2., 3., 4., 5.]))


@prog
def minimum_ties():
    a, b = T([1., 2., 3., 4., -1.]), T([1., 0., 3., 5., -1.])
    return grads(torch.minimum(a, b), [a, b], C([1., 2., 3., 4., 5.]))


@prog
def maximum_broadcast_ties():
    a, b = T([[1.], [2.]]), T([1., 2., 3.])
    return grads(torch.maximum(a, b), [a, b], C([[1., 2., 3.], [4., 5., 6.]]))


@prog
def maximum_nan():
    a, b = T([1., math.nan, 2., math.nan]), T([0., 1., math.nan, math.nan])
    return grads(torch.maximum(a, b), [a, b], C([1., 2., 3., 4.]))


@prog
def fmax_nan_ties():
    a, b = T([1., math.nan, 2., math.nan, 3.]), T([1., 1., math.nan, math.nan, 0.])
    return grads(torch.fmax(a, b), [a, b], C([1., 2., 3., 4., 5.]))


@prog
def fmin_nan_ties():
    a, b = T([1., math.nan, 2., math.nan, 3.]), T([1., 1., math.nan, math.nan, 0.])
    return grads(torch.fmin(a, b), [a, b], C([1., 2., 3., 4., 5.]))


@prog
def pow_at_zero_self():
    x, e = T([0., 0., 2., 3., 0., -2., 0.]), C([0., 2., 0., 1.5, 0.5, 3., -1.])
    return grads(torch.pow(x, e), [x], C([1., 2., 3., 4., 5., 6., 7.]))


@prog
def pow_at_zero_both():
    x, e = T([0., 0., 2., 3., 0., -2., 0.]), T([0., 2., 0., 1.5, 0.5, 3., -1.])
    return grads(torch.pow(x, e), [x, e], C([1., 2., 3., 4., 5., 6., 7.]))


@prog
def pow_scalar_exponents():
    x, z = T([0., 1., -2., 0.5]), T([0.25, 1., 2., 0.5])
    return grads(x.pow(0) + x.pow(3) + x.pow(2) + z.pow(-1.5) + z.pow(0.5), [x, z], C([1., 2., 3., 4.]))


@prog
def pow_scalar_base():
    x = T([0., 1., -1., 2.5])
    return grads(torch.pow(2.0, x), [x], C([1., 2., 3., 4.])) + grads(torch.pow(0.0, x), [x], C([1., 2., 3., 4.]))


@prog
def div_modes():
    a, b = T([1.5, -2.5, 3.0]), T([0.7, 0.9, -1.3])
    g = C([1., 2., 3.])
    return (grads(torch.div(a, b), [a, b], g) + grads(torch.div(a, b, rounding_mode='floor'), [a, b], g) +
            grads(torch.div(a, b, rounding_mode='trunc'), [a, b], g))


@prog
def div_broadcast_scalar():
    a, b = T([[1.5], [-2.5]]), T([0.7, 0.9, -1.3])
    return grads(a / b + b / 4.0 + 2.0 / b, [a, b], C([[1., 2., 3.], [4., 5., 6.]]))


@prog
def remainder_fmod():
    a, b = T([5.5, -5.5, 5.5, -5.5]), T([2., 2., -2., -2.])
    g = C([1., 2., 3., 4.])
    return (grads(torch.remainder(a, b), [a, b], g) + grads(torch.fmod(a, b), [a, b], g) +
            # PyTorch 1.13 has no derivative for remainder(Scalar, Tensor); tandem's wraps the
            # number as a 0-d tensor, whose rule matches remainder(Tensor, Tensor):
            grads(torch.remainder(C(7.0), b), [b], g) + grads(torch.remainder(a, 1.5) + torch.fmod(a, -1.5), [a], g))


@prog
def atan2_hypot():
    y, x = T([[0.5], [-1.5]]), T([1.0, -2.0, 0.25])
    g = C([[1., 2., 3.], [4., 5., 6.]])
    return grads(torch.atan2(y, x), [y, x], g) + grads(torch.hypot(y, x), [y, x], g)


@prog
def where_broadcast():
    cond = torch.tensor([[True, False, True], [False, False, True]])
    a, b = T([[1.], [2.]]), T([3., 4., 5.])
    return grads(torch.where(cond, a, b), [a, b], C([[1., 2., 3.], [4., 5., 6.]]))


@prog
def lerp_weights():
    s, e = T([1., 2., 3.]), T([4., -1., 0.5])
    w = T([0.2, 0.6, 1.5])
    g = C([1., 2., 3.])
    return (grads(torch.lerp(s, e, 0.3), [s, e], g) + grads(torch.lerp(s, e, 0.7), [s, e], g) +
            grads(torch.lerp(s, e, w), [s, e, w], g))


@prog
def addcmul_addcdiv():
    s, t1, t2 = T([1., 2., 3.]), T([[0.5], [-1.5]]), T([2., -0.5, 1.25])
    g = C([[1., 2., 3.], [4., 5., 6.]])
    return (grads(torch.addcmul(s, t1, t2, value=0.5), [s, t1, t2], g) +
            grads(torch.addcdiv(s, t1, t2, value=-2.0), [s, t1, t2], g) + grads(torch.addcdiv(s, t1, t2), [t2], g))


@prog
def double_backward():
    x, y = T([0.5, 1.5, 2.0]), T([1.2, -0.7, 2.2])
    f = (torch.pow(x, 3) * y + torch.atan2(x, y) + x / y + torch.hypot(x, y) + torch.maximum(x * x, y) +
         torch.remainder(x * y, 0.75) + torch.lerp(x, y, 0.25) + torch.addcdiv(x, y, x + 2.0, value=0.5))
    gx, gy = grads(f, [x, y], C([1., 2., 3.]), create_graph=True)
    h = gx * gx * C([1., -1., 0.5]) + gy * x
    return grads(h, [x, y], C([1., 1., 1.]))


@prog
def inplace_chain():
    x, b = T([0.5, 1.5, 2.5]), T([2., -1., 0.5])
    y = x * 1
    y.div_(b)
    y.pow_(2)
    y.lerp_(b, 0.25)
    y.addcmul_(x, b, value=0.5)
    y.atan2_(b)
    y.addcdiv_(x, b)
    y.remainder_(b)
    y.fmod_(b * 3)
    y.hypot_(b)  # last: hypot saves its result, a later in-place op would invalidate it
    return grads(y, [x, b], C([1., 2., 3.]))


@prog
def inplace_where_view():
    x, b = T([[0.5, 1.5, 2.5], [1.0, -2.0, 3.0]]), T([2., -1., 0.5])
    y = x * 1
    y[1].mul_(b)
    y[0].div_(b)
    y.select(1, 2).pow_(3)
    z = torch.where(y > 0, y, b)
    return grads(z, [x, b], C([[1., 2., 3.], [4., 5., 6.]]))


def fmt(v):
    if math.isnan(v):
        return "kNaN"
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    return repr(v)


print("// clang-format off  (generated by tests/oracle/gen_grad_pointwise.py)")
print("const std::map<std::string, std::vector<std::vector<double>>> kExpected = {")
for name, fn in P.items():
    gs = fn()
    body = ", ".join("{" + ", ".join(fmt(v) for v in g.detach().flatten().tolist()) + "}" for g in gs)
    print(f'    {{"{name}", {{{body}}}}},')
print("};")
print("// clang-format on")
