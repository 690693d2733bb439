#!/usr/bin/python3
"""Example oracle generator (add/sub/mul basics). Run: /usr/bin/python3 tests/oracle/gen_example.py"""
import os
import torch
from oracle_lib import CaseWriter, attr, scalar

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "oracle", "example.json")
torch.manual_seed(0)
w = CaseWriter()
a = torch.randn(2, 3)
b = torch.randn(3)
w.add("add/broadcast", "add", [a, b], [attr(1, "scalar")], lambda x, y: x + y)
w.add("add/alpha", "add", [a, b], [attr(2.5, "scalar")], lambda x, y: torch.add(x, y, alpha=2.5))
w.add("add/transposed", "add", [(torch.randn(3, 4), "transposed"), (torch.randn(3, 4), "strided")], [attr(1, "scalar")], lambda x, y: x + y)
w.add("add/expanded", "add", [(torch.randn(1, 4), "expanded", (3, 4)), torch.randn(3, 4)], [attr(1, "scalar")], lambda x, y: x + y)
w.add("add/int_plus_float_scalar", "add", [torch.arange(4), scalar(0.5)], [attr(1, "scalar")], lambda x, y: x + y)
w.add("add/uint8_int8", "add", [torch.arange(4, dtype=torch.uint8), torch.arange(4, dtype=torch.int8)], [attr(1, "scalar")], lambda x, y: x + y)
w.add("add/bad_broadcast", "add", [torch.randn(2, 3), torch.randn(4)], [attr(1, "scalar")], error="ShapeError")
w.add("sub/bool", "sub", [torch.tensor([True]), torch.tensor([False])], [attr(1, "scalar")], error="TypeError")
w.add("mul/half", "mul", [torch.randn(5).half(), torch.randn(5).half()], [], lambda x, y: x * y)
w.add("mul/zero_size", "mul", [torch.randn(0, 3), torch.randn(3)], [], lambda x, y: x * y)
w.write(OUT)
