#!/usr/bin/env python3
"""Fails when a file under src/tandem/<layer>/ includes a header of a higher layer.

The order is the one in docs/ARCHITECTURE.md: a layer may include only itself and the
layers before it.
"""
import pathlib
import re
import sys

ORDER = ["core", "kernels", "dispatch", "ops", "autograd", "ir", "passes", "runtime", "jit",
         "distributed", "nn", "optim", "data", "io", "onnx"]
INCLUDE = re.compile(r'#include\s+"tandem/([a-z_]+)/')


def main(root: str) -> int:
    bad = []
    for path in sorted(pathlib.Path(root).rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        rel = path.relative_to(root).parts
        if len(rel) < 2 or rel[0] not in ORDER:
            continue
        mine = ORDER.index(rel[0])
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.search(line)
            if m and m.group(1) in ORDER and ORDER.index(m.group(1)) > mine:
                bad.append(f"{path}:{lineno}: layer '{rel[0]}' includes higher layer '{m.group(1)}'")
    for b in bad:
        print(b)
    print(f"layering_check: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
