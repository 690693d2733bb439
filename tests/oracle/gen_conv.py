#!/usr/bin/python3
"""Oracle cases for convolution and pooling (conv1d, conv2d, conv_transpose2d, max_pool2d,
max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d).
Run: /usr/bin/python3 tests/oracle/gen_conv.py"""
import os
import warnings

import torch
import torch.nn.functional as F
from oracle_lib import CaseWriter, attr

warnings.filterwarnings("ignore")  # 'same' padding with an even kernel warns about a copy
OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "conv.json")
torch.manual_seed(0)
w = CaseWriter()
LOOSE = dict(rtol=1e-4, atol=1e-4)
A = attr


def rnd(*shape, dtype=torch.float32):
    if dtype.is_floating_point:
        # Multiples of 1/32: exact in every float dtype and short in the JSON.
        return (torch.randn(shape, dtype=torch.float64) * 32).round().div(32).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 4, shape, dtype=dtype)
    return torch.randint(-3, 4, shape, dtype=dtype)


def dn(dt):
    return str(dt).replace("torch.", "")


# ---------------------------------------------------------------- conv2d
def conv2d(name, x, wt, b, stride=1, padding=0, dilation=1, groups=1, error=None, **tol):
    pad_attr = A(padding) if isinstance(padding, str) else A([padding] if isinstance(padding, int) else list(padding))
    attrs = [A([stride] if isinstance(stride, int) else list(stride)), pad_attr,
             A([dilation] if isinstance(dilation, int) else list(dilation)), A(groups)]
    fn = None if error else (lambda x_, w_, b_: F.conv2d(x_, w_, b_, stride, padding, dilation, groups))
    w.add(f"conv2d/{name}", "conv2d", [x, wt, b], attrs, fn, error=error, **tol)


for dt in [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]:
    conv2d(f"basic_{dn(dt)}", rnd(2, 3, 6, 6, dtype=dt), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt))
for dt in [torch.float32, torch.float64]:
    n = dn(dt)
    conv2d(f"no_bias_{n}", rnd(2, 3, 6, 5, dtype=dt), rnd(4, 3, 3, 2, dtype=dt), None)
    conv2d(f"stride2_{n}", rnd(2, 3, 7, 7, dtype=dt), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt), stride=2)
    conv2d(f"stride_rect_{n}", rnd(1, 2, 7, 8, dtype=dt), rnd(3, 2, 2, 3, dtype=dt), rnd(3, dtype=dt), stride=(2, 3))
    conv2d(f"padding1_{n}", rnd(2, 3, 5, 5, dtype=dt), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt), padding=1)
    conv2d(f"padding_rect_{n}", rnd(1, 2, 5, 4, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(3, dtype=dt), padding=(2, 1))
    conv2d(f"dilation2_{n}", rnd(1, 2, 9, 9, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(3, dtype=dt), dilation=2, padding=1)
    conv2d(f"dilation_rect_{n}", rnd(1, 2, 9, 8, dtype=dt), rnd(3, 2, 2, 3, dtype=dt), None, dilation=(3, 2))
    conv2d(f"groups2_{n}", rnd(2, 4, 5, 5, dtype=dt), rnd(6, 2, 3, 3, dtype=dt), rnd(6, dtype=dt), groups=2)
    conv2d(f"depthwise_{n}", rnd(2, 3, 5, 5, dtype=dt), rnd(6, 1, 3, 3, dtype=dt), rnd(6, dtype=dt), groups=3, padding=1)
    conv2d(f"same_odd_{n}", rnd(1, 2, 5, 6, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(3, dtype=dt), padding="same")
    conv2d(f"same_even_{n}", rnd(1, 2, 5, 6, dtype=dt), rnd(3, 2, 2, 4, dtype=dt), rnd(3, dtype=dt), padding="same")
    conv2d(f"same_dilated_{n}", rnd(1, 2, 7, 7, dtype=dt), rnd(3, 2, 2, 3, dtype=dt), None, padding="same", dilation=(3, 2))
    conv2d(f"valid_{n}", rnd(1, 2, 5, 6, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(3, dtype=dt), padding="valid")
    conv2d(f"unbatched_{n}", rnd(3, 6, 6, dtype=dt), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt), padding=1)
    conv2d(f"one_by_one_{n}", rnd(2, 3, 4, 5, dtype=dt), rnd(5, 3, 1, 1, dtype=dt), rnd(5, dtype=dt))
    conv2d(f"transposed_input_{n}", (rnd(2, 3, 6, 7, dtype=dt), "transposed"), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt))
    conv2d(f"strided_input_{n}", (rnd(2, 3, 6, 7, dtype=dt), "strided"), (rnd(4, 3, 3, 3, dtype=dt), "transposed"), rnd(4, dtype=dt))
    conv2d(f"expanded_input_{n}", (rnd(1, 3, 5, 5, dtype=dt), "expanded", (2, 3, 5, 5)), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt))
    conv2d(f"zero_batch_{n}", rnd(0, 3, 6, 6, dtype=dt), rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt))
    conv2d(f"zero_channels_{n}", rnd(1, 0, 4, 4, dtype=dt), rnd(2, 0, 2, 2, dtype=dt), rnd(2, dtype=dt))
    conv2d(f"zero_channels_nobias_{n}", rnd(1, 0, 4, 4, dtype=dt), rnd(2, 0, 2, 2, dtype=dt), None)
    conv2d(f"zero_batch_and_channels_{n}", rnd(0, 0, 4, 4, dtype=dt), rnd(2, 0, 2, 2, dtype=dt), None)
conv2d("larger_float32", rnd(2, 8, 10, 10), rnd(16, 8, 3, 3), rnd(16), padding=1, **LOOSE)
conv2d("larger_groups_float32", rnd(2, 8, 9, 9), rnd(8, 2, 3, 3), rnd(8), padding=1, groups=4, **LOOSE)
conv2d("int64_groups_stride", rnd(1, 4, 6, 6, dtype=torch.int64), rnd(4, 2, 2, 2, dtype=torch.int64), rnd(4, dtype=torch.int64),
       stride=2, padding=1, groups=2)
conv2d("nan", torch.tensor([[[[1.0, float("nan")], [2.0, 3.0]]]]), torch.ones(1, 1, 1, 1), None)
conv2d("err_channels", rnd(1, 2, 5, 5), rnd(3, 3, 3, 3), None, error="ShapeError")
conv2d("err_groups_divide", rnd(1, 4, 5, 5), rnd(4, 2, 2, 2), None, groups=3, error="ShapeError")
conv2d("err_groups_channels", rnd(1, 4, 5, 5), rnd(4, 1, 2, 2), None, groups=2, error="ShapeError")
conv2d("err_bias_shape", rnd(1, 2, 5, 5), rnd(3, 2, 3, 3), rnd(4), error="ShapeError")
conv2d("err_bias_2d", rnd(1, 2, 5, 5), rnd(3, 2, 3, 3), rnd(3, 1), error="ShapeError")
conv2d("err_kernel_too_big", rnd(1, 1, 3, 3), rnd(1, 1, 4, 4), None, error="ShapeError")
conv2d("err_zero_out_channels", rnd(1, 1, 3, 3), rnd(0, 1, 2, 2), None, error="ShapeError")
conv2d("err_stride0", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, stride=0, error="ValueError")
conv2d("err_negative_padding", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, padding=-1, error="ValueError")
conv2d("err_dilation0", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, dilation=0, error="ValueError")
conv2d("err_groups0", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, groups=0, error="ValueError")
conv2d("err_stride_list3", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, stride=(1, 1, 1), error="ValueError")
conv2d("err_same_strided", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, stride=2, padding="same", error="ValueError")
conv2d("err_bad_padding_string", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), None, padding="full", error="ValueError")
conv2d("err_dtype_mix", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2, dtype=torch.float64), None, error="TypeError")
conv2d("err_bias_dtype", rnd(1, 1, 4, 4), rnd(1, 1, 2, 2), rnd(1, dtype=torch.float64), error="TypeError")
# No "float16 raises" case: PyTorch 1.13's CPU conv2d has no float16 kernel, tandem's has
# one (float16 autocast needs it; tests/dispatch/test_autocast.cpp checks it).
conv2d("err_bool", torch.ones(1, 1, 4, 4, dtype=torch.bool), torch.ones(1, 1, 2, 2, dtype=torch.bool), None, error="TypeError")
conv2d("err_2d_input", rnd(4, 4), rnd(1, 1, 2, 2), None, error="ShapeError")
conv2d("err_3d_weight", rnd(1, 1, 4, 4), rnd(1, 1, 2), None, error="ShapeError")
conv2d("err_empty_height", rnd(1, 3, 0, 4), rnd(2, 3, 1, 1), None, error="ShapeError")


# ---------------------------------------------------------------- conv1d
def conv1d(name, x, wt, b, stride=1, padding=0, dilation=1, groups=1, error=None, **tol):
    pad_attr = A(padding) if isinstance(padding, str) else A([padding] if isinstance(padding, int) else list(padding))
    attrs = [A([stride] if isinstance(stride, int) else list(stride)), pad_attr,
             A([dilation] if isinstance(dilation, int) else list(dilation)), A(groups)]
    fn = None if error else (lambda x_, w_, b_: F.conv1d(x_, w_, b_, stride, padding, dilation, groups))
    w.add(f"conv1d/{name}", "conv1d", [x, wt, b], attrs, fn, error=error, **tol)


for dt in [torch.float32, torch.float64]:
    n = dn(dt)
    conv1d(f"basic_{n}", rnd(2, 3, 8, dtype=dt), rnd(4, 3, 3, dtype=dt), rnd(4, dtype=dt))
    conv1d(f"stride_pad_dil_{n}", rnd(2, 3, 11, dtype=dt), rnd(4, 3, 3, dtype=dt), None, stride=2, padding=2, dilation=2)
    conv1d(f"groups_{n}", rnd(2, 4, 8, dtype=dt), rnd(6, 2, 3, dtype=dt), rnd(6, dtype=dt), groups=2)
    conv1d(f"same_even_{n}", rnd(1, 2, 7, dtype=dt), rnd(3, 2, 4, dtype=dt), rnd(3, dtype=dt), padding="same")
    conv1d(f"valid_{n}", rnd(1, 2, 7, dtype=dt), rnd(3, 2, 4, dtype=dt), None, padding="valid")
    conv1d(f"unbatched_{n}", rnd(3, 8, dtype=dt), rnd(4, 3, 3, dtype=dt), rnd(4, dtype=dt), padding=1)
    conv1d(f"strided_input_{n}", (rnd(2, 3, 8, dtype=dt), "strided"), rnd(4, 3, 3, dtype=dt), rnd(4, dtype=dt))
conv1d("int64", rnd(1, 2, 6, dtype=torch.int64), rnd(3, 2, 2, dtype=torch.int64), rnd(3, dtype=torch.int64))
conv1d("err_4d_input", rnd(1, 1, 4, 4), rnd(2, 1, 2), None, error="ShapeError")
conv1d("err_2d_weight", rnd(1, 1, 4), rnd(2, 1), None, error="ShapeError")
conv1d("err_stride_list2", rnd(1, 1, 4), rnd(2, 1, 2), None, stride=(1, 1), error="ValueError")
conv1d("err_channels", rnd(1, 2, 4), rnd(2, 1, 2), None, error="ShapeError")


# ---------------------------------------------------------------- conv_transpose2d
def convt(name, x, wt, b, stride=1, padding=0, output_padding=0, groups=1, dilation=1, error=None, **tol):
    L = lambda v: A([v] if isinstance(v, int) else list(v))  # noqa: E731
    attrs = [L(stride), L(padding), L(output_padding), A(groups), L(dilation)]
    fn = None if error else (lambda x_, w_, b_: F.conv_transpose2d(x_, w_, b_, stride, padding, output_padding, groups, dilation))
    w.add(f"conv_transpose2d/{name}", "conv_transpose2d", [x, wt, b], attrs, fn, error=error, **tol)


# bfloat16 is left out: PyTorch 1.13's bfloat16 conv_transpose2d (oneDNN path) rejects
# valid shapes; tandem's bfloat16 result is checked against float32 in test_conv.cpp.
for dt in [torch.float32, torch.float64, torch.int64]:
    convt(f"basic_{dn(dt)}", rnd(2, 3, 4, 4, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(2, dtype=dt))
for dt in [torch.float32, torch.float64]:
    n = dn(dt)
    convt(f"no_bias_{n}", rnd(1, 3, 4, 5, dtype=dt), rnd(3, 2, 2, 3, dtype=dt), None)
    convt(f"stride2_{n}", rnd(2, 3, 4, 4, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(2, dtype=dt), stride=2)
    convt(f"stride_pad_{n}", rnd(1, 2, 4, 5, dtype=dt), rnd(2, 3, 3, 3, dtype=dt), rnd(3, dtype=dt), stride=(2, 3), padding=(1, 2))
    convt(f"output_padding_{n}", rnd(1, 2, 4, 4, dtype=dt), rnd(2, 3, 3, 3, dtype=dt), rnd(3, dtype=dt), stride=2, padding=1,
          output_padding=1)
    convt(f"output_padding_gt_padding_{n}", rnd(1, 2, 3, 3, dtype=dt), rnd(2, 2, 2, 2, dtype=dt), rnd(2, dtype=dt), stride=3,
          padding=0, output_padding=2)
    convt(f"dilation_{n}", rnd(1, 2, 4, 4, dtype=dt), rnd(2, 3, 3, 3, dtype=dt), rnd(3, dtype=dt), dilation=2, padding=1)
    convt(f"dilation_output_padding_{n}", rnd(1, 2, 4, 4, dtype=dt), rnd(2, 3, 2, 2, dtype=dt), None, dilation=3,
          output_padding=2)
    convt(f"groups_{n}", rnd(2, 4, 3, 3, dtype=dt), rnd(4, 3, 2, 2, dtype=dt), rnd(6, dtype=dt), groups=2, stride=2)
    convt(f"unbatched_{n}", rnd(3, 4, 4, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(2, dtype=dt))
    convt(f"transposed_input_{n}", (rnd(1, 3, 4, 5, dtype=dt), "transposed"), rnd(3, 2, 3, 3, dtype=dt), rnd(2, dtype=dt))
    convt(f"zero_batch_{n}", rnd(0, 3, 4, 4, dtype=dt), rnd(3, 2, 3, 3, dtype=dt), rnd(2, dtype=dt))
convt("larger_float32", rnd(2, 8, 6, 6), rnd(8, 8, 3, 3), rnd(8), stride=2, padding=1, output_padding=1, **LOOSE)
convt("err_channels", rnd(1, 3, 4, 4), rnd(4, 2, 2, 2), None, error="ShapeError")
convt("err_output_padding", rnd(1, 4, 4, 4), rnd(4, 2, 2, 2), None, stride=2, output_padding=2, error="ValueError")
convt("err_output_too_small", rnd(1, 4, 1, 1), rnd(4, 2, 1, 1), None, padding=1, error="ShapeError")
convt("err_groups", rnd(1, 3, 4, 4), rnd(3, 2, 2, 2), None, groups=2, error="ShapeError")
convt("err_bias", rnd(1, 3, 4, 4), rnd(3, 2, 2, 2), rnd(3), error="ShapeError")
convt("err_zero_channels", rnd(1, 0, 4, 4), rnd(0, 2, 2, 2), None, error="ShapeError")
convt("err_empty_height", rnd(1, 3, 0, 4), rnd(3, 2, 2, 2), None, error="ShapeError")
convt("err_int32", rnd(1, 1, 3, 3, dtype=torch.int32), rnd(1, 1, 2, 2, dtype=torch.int32), None, error="TypeError")


# ---------------------------------------------------------------- max pooling
def maxpool(name, x, k, stride=None, padding=0, dilation=1, ceil_mode=False, error=None):
    L = lambda v: A([v] if isinstance(v, int) else list(v))  # noqa: E731
    attrs = [L(k), A([] if stride is None else ([stride] if isinstance(stride, int) else list(stride))), L(padding),
             L(dilation), A(ceil_mode)]
    for op, ri in [("max_pool2d", False), ("max_pool2d_with_indices", True)]:
        fn = None if error else (lambda x_, ri=ri: F.max_pool2d(x_, k, stride, padding, dilation, ceil_mode, return_indices=ri))
        w.add(f"{op}/{name}", op, [x], attrs, fn, error=error)


for dt in [torch.float32, torch.float64, torch.bfloat16]:
    n = dn(dt)
    maxpool(f"k2_{n}", rnd(2, 3, 6, 6, dtype=dt), 2)
    maxpool(f"k3s2p1_{n}", rnd(2, 3, 7, 7, dtype=dt), 3, 2, 1)
    maxpool(f"ceil_{n}", rnd(1, 2, 7, 8, dtype=dt), 2, ceil_mode=True)
    maxpool(f"ceil_pad_{n}", rnd(1, 2, 6, 6, dtype=dt), 3, 2, 1, ceil_mode=True)
    maxpool(f"dilation_{n}", rnd(1, 2, 9, 9, dtype=dt), 2, 1, 1, 3)
    maxpool(f"dilation_ceil_{n}", rnd(1, 2, 9, 8, dtype=dt), 3, 2, 1, 2, True)
    maxpool(f"rect_{n}", rnd(1, 2, 7, 9, dtype=dt), (2, 3), (1, 2), (1, 1))
    maxpool(f"unbatched_{n}", rnd(3, 6, 6, dtype=dt), 2)
maxpool("transposed_input", (rnd(2, 3, 6, 7), "transposed"), 2)
maxpool("strided_input", (rnd(2, 3, 6, 7), "strided"), 3, 1)
maxpool("zero_batch", rnd(0, 3, 4, 4), 2)
maxpool("nan", torch.tensor([[[[1.0, float("nan"), 2.0, 3.0], [4.0, 0.0, float("nan"), -1.0]]]]), 2)
maxpool("all_neg_inf", torch.full((1, 1, 2, 2), float("-inf")), 2)
maxpool("pad_window_minus_inf", torch.tensor([[[[-5.0, -6.0], [-7.0, -8.0]]]]), 2, 1, 1)
maxpool("larger", rnd(2, 4, 16, 16), 2)
maxpool("err_pad", rnd(1, 1, 4, 4), 2, padding=2, error="ValueError")
maxpool("err_kernel0", rnd(1, 1, 4, 4), 0, error="ValueError")
maxpool("err_stride0", rnd(1, 1, 4, 4), 2, stride=0, error="ValueError")
maxpool("err_dilation0", rnd(1, 1, 4, 4), 2, dilation=0, error="ValueError")
maxpool("err_negative_pad", rnd(1, 1, 4, 4), 2, padding=-1, error="ValueError")
maxpool("err_too_small", rnd(1, 1, 1, 1), 2, error="ShapeError")
maxpool("err_2d", rnd(4, 4), 2, error="ShapeError")
maxpool("err_zero_channels", rnd(1, 0, 4, 4), 2, error="ShapeError")
maxpool("err_kernel_list3", rnd(1, 1, 4, 4), (2, 2, 2), error="ValueError")
maxpool("err_int64", rnd(1, 1, 4, 4, dtype=torch.int64), 2, error="TypeError")


# ---------------------------------------------------------------- avg pooling
def avgpool(name, x, k, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None, error=None,
            **tol):
    L = lambda v: A([v] if isinstance(v, int) else list(v))  # noqa: E731
    attrs = [L(k), A([] if stride is None else ([stride] if isinstance(stride, int) else list(stride))), L(padding),
             A(ceil_mode), A(count_include_pad), A(divisor_override)]
    fn = None if error else (lambda x_: F.avg_pool2d(x_, k, stride, padding, ceil_mode, count_include_pad, divisor_override))
    w.add(f"avg_pool2d/{name}", "avg_pool2d", [x], attrs, fn, error=error, **tol)


for dt in [torch.float32, torch.float64, torch.bfloat16]:
    n = dn(dt)
    avgpool(f"k2_{n}", rnd(2, 3, 6, 6, dtype=dt), 2)
    avgpool(f"pad_include_{n}", rnd(1, 2, 5, 5, dtype=dt), 3, 2, 1)
    avgpool(f"pad_exclude_{n}", rnd(1, 2, 5, 5, dtype=dt), 3, 2, 1, count_include_pad=False)
    avgpool(f"ceil_include_{n}", rnd(1, 2, 6, 6, dtype=dt), 3, 2, 1, ceil_mode=True)
    avgpool(f"ceil_overhang_include_{n}", rnd(1, 2, 5, 5, dtype=dt), 2, 2, 0, ceil_mode=True)
    avgpool(f"ceil_exclude_{n}", rnd(1, 2, 6, 6, dtype=dt), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    avgpool(f"divisor_override_{n}", rnd(1, 2, 5, 5, dtype=dt), 3, 2, 1, divisor_override=5)
    avgpool(f"rect_{n}", rnd(1, 2, 7, 9, dtype=dt), (2, 3), (1, 2), (1, 1))
    avgpool(f"unbatched_{n}", rnd(3, 6, 6, dtype=dt), 2)
avgpool("int64", torch.arange(-20, 16, dtype=torch.int64).view(1, 1, 6, 6), 2)
avgpool("int64_pad_exclude", torch.arange(-20, 16, dtype=torch.int64).view(1, 1, 6, 6), 3, 2, 1, count_include_pad=False)
avgpool("int64_divisor", torch.arange(-20, 16, dtype=torch.int64).view(1, 1, 6, 6), 2, divisor_override=3)
avgpool("transposed_input", (rnd(2, 3, 6, 7), "transposed"), 2)
avgpool("zero_batch", rnd(0, 3, 4, 4), 2)
avgpool("nan_inf", torch.tensor([[[[1.0, float("nan"), float("inf"), 3.0], [4.0, 0.0, 1.0, -1.0]]]]), 2)
avgpool("larger", rnd(2, 4, 16, 16), 2)
avgpool("err_divisor0", rnd(1, 1, 4, 4), 2, divisor_override=0, error="ValueError")
avgpool("err_pad", rnd(1, 1, 4, 4), 2, padding=2, error="ValueError")
avgpool("err_too_small", rnd(1, 1, 1, 1), 2, error="ShapeError")
avgpool("err_int32", rnd(1, 1, 4, 4, dtype=torch.int32), 2, error="TypeError")


# ---------------------------------------------------------------- adaptive pooling
def adaptive(name, x, size, error=None):
    L = A([size] if isinstance(size, int) else list(size))
    for op, f in [("adaptive_avg_pool2d", F.adaptive_avg_pool2d),
                  ("adaptive_max_pool2d", lambda x_, s: F.adaptive_max_pool2d(x_, s, return_indices=True))]:
        fn = None if error else (lambda x_, f=f: f(x_, size))
        w.add(f"{op}/{name}", op, [x], [L], fn, error=error)


for dt in [torch.float32, torch.float64, torch.bfloat16]:
    n = dn(dt)
    adaptive(f"uneven_{n}", rnd(2, 3, 5, 7, dtype=dt), (3, 4))
    adaptive(f"exact_{n}", rnd(1, 2, 6, 6, dtype=dt), (2, 3))
    adaptive(f"global_{n}", rnd(2, 3, 5, 5, dtype=dt), 1)
    adaptive(f"upsample_{n}", rnd(1, 2, 3, 3, dtype=dt), (5, 4))
    adaptive(f"unbatched_{n}", rnd(3, 6, 5, dtype=dt), (2, 2))
adaptive("transposed_input", (rnd(1, 2, 6, 7), "transposed"), (3, 3))
adaptive("zero_batch", rnd(0, 2, 4, 4), (2, 2))
adaptive("zero_output", rnd(1, 1, 3, 3), (0, 2))
adaptive("nan", torch.tensor([[[[1.0, float("nan")], [2.0, 3.0]]]]), 1)
adaptive("err_empty_input", rnd(1, 1, 0, 3), (1, 2), error="ShapeError")
adaptive("err_negative_size", rnd(1, 1, 3, 3), (-1, 2), error="ValueError")
adaptive("err_2d", rnd(3, 3), (1, 2), error="ShapeError")
adaptive("err_int64", rnd(1, 1, 3, 3, dtype=torch.int64), (1, 1), error="TypeError")

w.write(OUT)
