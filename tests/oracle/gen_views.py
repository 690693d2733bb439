#!/usr/bin/python3
"""View geometry oracle: sizes, strides, storage offsets and values of view chains.

Run: /usr/bin/python3 tests/oracle/gen_views.py  (Debian's python with torch 1.13)
Writes tests/data/views.json, replayed by tests/core/test_views.cpp.

Every case starts from `base = torch.arange(numel(base_shape)).reshape(base_shape)`
(int64, contiguous, storage offset 0, so storage element k holds k) and applies a
chain of view calls. A step is {"op": name, "args": [...]} ; multi-output ops
(split, chunk, unbind, split_with_sizes) take "pick": k in the middle of a chain and
give all pieces when last. Step ops and argument order (as in tandem's free functions):
  view(sizes) reshape(sizes) permute(dims) transpose(d0, d1) t() movedim(src, dst)
  slice(dim, start|null, end|null, step) narrow(dim, start, length) select(dim, index)
  squeeze() squeeze_dim(dim) unsqueeze(dim) expand(sizes) broadcast_to(sizes)
  flatten(start, end) unflatten(dim, sizes) split(size, dim) split_with_sizes(sizes, dim)
  chunk(n, dim) unbind(dim) diagonal(offset, d1, d2) as_strided(sizes, strides, offset)

JSON sections:
  cases:   {"name", "base", "chain", "outputs": [{"sizes", "strides", "offset", "contiguous",
                                                "values", "alias"}]}
           or "error": tandem error class (torch raises there too; checked here)
  reshape: {"name", "base", "chain", "target", "view_ok", "view": geometry|absent,
            "reshape_alias": bool, "reshape": geometry}
  writes:  {"name", "base", "chain", "write": "fill"|"copy", "value", "base_after": [...]}
           copy writes src = -1 - arange(numel).reshape(view shape).
"""
import json
import os

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "views.json")


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def make_base(shape):
    return torch.arange(numel(shape)).reshape(shape)


def slice_(x, dim, start, end, step):
    return torch.ops.aten.slice(x, dim, start, end, step)


def apply_step(x, st):
    op, a = st["op"], st.get("args", [])
    fns = {
        "view": lambda: x.view(a[0]),
        "reshape": lambda: x.reshape(a[0]),
        "permute": lambda: x.permute(a[0]),
        "transpose": lambda: x.transpose(a[0], a[1]),
        "t": lambda: x.t(),
        "movedim": lambda: torch.movedim(x, a[0], a[1]),
        "slice": lambda: slice_(x, *a),
        "narrow": lambda: x.narrow(*a),
        "select": lambda: x.select(*a),
        "squeeze": lambda: x.squeeze(),
        "squeeze_dim": lambda: x.squeeze(a[0]),
        "unsqueeze": lambda: x.unsqueeze(a[0]),
        "expand": lambda: x.expand(a[0]),
        "broadcast_to": lambda: torch.broadcast_to(x, a[0]),
        "flatten": lambda: x.flatten(a[0], a[1]),
        "unflatten": lambda: x.unflatten(a[0], a[1]),
        "split": lambda: list(x.split(a[0], a[1])),
        "split_with_sizes": lambda: list(x.split_with_sizes(a[0], a[1])),
        "chunk": lambda: list(x.chunk(a[0], a[1])),
        "unbind": lambda: list(x.unbind(a[0])),
        "diagonal": lambda: x.diagonal(a[0], a[1], a[2]),
        "as_strided": lambda: x.as_strided(a[0], a[1], a[2]) if len(a) > 2 else x.as_strided(a[0], a[1]),
    }
    r = fns[op]()
    if isinstance(r, list) and "pick" in st:
        r = r[st["pick"]]
    return r


def run_chain(base_shape, chain, with_base=False):
    b = x = make_base(base_shape)
    for st in chain:
        x = apply_step(x, st)
    return (x, b) if with_base else x


def geom(t, base=None):
    g = {"sizes": list(t.shape), "strides": list(t.stride()), "offset": t.storage_offset(),
         "contiguous": t.is_contiguous(), "values": t.flatten().tolist()}
    if base is not None:
        # Shares the base's storage (reshape/flatten may copy). A zero-size base has no
        # memory to compare; nothing in a chain copies it (reshape of 0 elements views).
        g["alias"] = base.numel() == 0 or t.storage().data_ptr() == base.storage().data_ptr()
    return g


def S(op, *args, pick=None):
    st = {"op": op, "args": [list(v) if isinstance(v, tuple) else v for v in args]}
    if pick is not None:
        st["pick"] = pick
    return st


# ---------------------------------------------------------------- starting layouts
# (name, base shape, prefix chain): contiguous, transposed, sliced with step, expanded,
# 0-d, zero-size dims, and chains of views.
LAYOUTS = [
    ("contig3d", [2, 3, 4], []),
    ("contig2d", [3, 4], []),
    ("contig1d", [6], []),
    ("with_ones", [2, 1, 3, 1], []),
    ("transposed", [3, 4], [S("t")]),
    ("transposed3d", [2, 3, 4], [S("transpose", 0, 2)]),
    ("permuted", [2, 3, 4], [S("permute", (1, 2, 0))]),
    ("sliced_step", [4, 6], [S("slice", 1, 1, None, 2)]),
    ("sliced_rows", [6, 4], [S("slice", 0, 1, 5, 2)]),
    ("expanded", [1, 3], [S("expand", (4, 3))]),
    ("expanded_new", [3], [S("expand", (2, 2, 3))]),
    ("scalar0d", [], []),
    ("zero_size", [0, 3], []),
    ("zero_mid", [2, 0, 4], []),
    ("chain_t_slice_unsq", [4, 5], [S("t"), S("slice", 1, None, None, 2), S("unsqueeze", 0)]),
    ("chain_select_expand", [3, 1, 4], [S("select", 0, 1), S("expand", (3, 4))]),
    ("chain_diag_perm", [3, 3, 2], [S("permute", (2, 0, 1)), S("diagonal", 0, 1, 2)]),
    ("chain_narrow_t", [5, 6], [S("narrow", 0, 1, 3), S("narrow", 1, 2, 4), S("t")]),
]


def templates(x):
    """Candidate view steps for tensor x (invalid ones are dropped after asking torch)."""
    nd, sh, n = x.dim(), list(x.shape), x.numel()
    out = []
    # view / reshape
    for tgt in ([-1], [n], list(reversed(sh)), [1] + sh, sh + [1], sh[:-2] + [sh[-2] * sh[-1]] if nd >= 2 else None,
                [2, -1] if n % 2 == 0 and n > 0 else None, []):
        if tgt is None:
            continue
        out.append(S("view", tgt))
        out.append(S("reshape", tgt))
    # permute / transpose / t / movedim
    if nd >= 1:
        out.append(S("permute", list(reversed(range(nd)))))
        out.append(S("permute", list(range(1, nd)) + [0]))
        out.append(S("transpose", 0, -1))
        out.append(S("transpose", 0, 0))
        out.append(S("movedim", 0, -1))
        out.append(S("movedim", -1, 0))
    else:
        out.append(S("permute", []))
        out.append(S("transpose", 0, -1))
        out.append(S("movedim", 0, 0))
    if nd <= 2:
        out.append(S("t"))
    # slice / narrow / select
    for d in range(nd):
        size = sh[d]
        out += [S("slice", d, 1, None, 2), S("slice", d, None, -1, 1), S("slice", d, -2, None, 3),
                S("slice", d, 5, 100, 1), S("slice", d, 3, 1, 1), S("slice", -1 - d if d == nd - 1 else d, None, None, 1)]
        if size >= 2:
            out.append(S("narrow", d, 1, size - 1))
            out.append(S("narrow", d, -2, 1))
        out.append(S("narrow", d, 0, 0))
        out += [S("select", d, 0), S("select", d, -1)]
    # squeeze / unsqueeze
    out.append(S("squeeze"))
    for d in range(-nd, nd):
        out.append(S("squeeze_dim", d))
    if nd == 0:
        out.append(S("squeeze_dim", 0))
    for d in (0, nd, -1, -nd - 1):
        out.append(S("unsqueeze", d))
    # expand / broadcast_to
    out.append(S("expand", [2] + sh))
    out.append(S("expand", [-1] * nd))
    out.append(S("broadcast_to", [3, 1] + sh))
    ones = [i for i, s in enumerate(sh) if s == 1]
    if ones:
        tgt = list(sh)
        for i in ones:
            tgt[i] = 3
        out.append(S("expand", tgt))
        out.append(S("expand", [2] + [-1 if s != 1 else 4 for s in sh]))
    # flatten / unflatten
    out.append(S("flatten", 0, -1))
    if nd >= 2:
        out.append(S("flatten", 1, -1))
        out.append(S("flatten", 0, -2))
    if nd >= 1:
        out.append(S("flatten", -1, -1))
        for d in range(nd):
            out.append(S("unflatten", d, [1, sh[d]]))
            out.append(S("unflatten", d, [sh[d], -1] if sh[d] > 0 else [0, 2]))
            if sh[d] % 2 == 0 and sh[d] > 0:
                out.append(S("unflatten", d, [-1, 2]))
    # split family
    for d in range(nd):
        size = sh[d]
        out += [S("split", 2, d), S("split", 1, d), S("split", size + 1, d), S("chunk", 2, d), S("chunk", 3, d),
                S("chunk", size + 2, d), S("unbind", d)]
        if size >= 1:
            out.append(S("split_with_sizes", [size - 1, 1], d))
            out.append(S("split_with_sizes", [0, size], d))
    # diagonal
    if nd >= 2:
        for off in (0, 1, -1, 2, -2, 7):
            out.append(S("diagonal", off, 0, 1))
        out.append(S("diagonal", 0, -1, -2))
        out.append(S("diagonal", 1, -1, 0))
        if nd >= 3:
            out.append(S("diagonal", -1, 0, 2))
    # as_strided (absolute storage offset); only within the base's storage
    out.append(S("as_strided", sh, list(x.stride())))
    out.append(S("as_strided", [2, 2], [1, 2], 1))
    out.append(S("as_strided", [2, 2], [0, 1]))
    out.append(S("as_strided", [0, 3], [1, 1], 4))
    out.append(S("as_strided", [], [], 2))
    return out


cases = []
names = set()


def add_case(name, base, chain, error=None):
    assert name not in names, name
    names.add(name)
    c = {"name": name, "base": base, "chain": chain}
    try:
        r, b = run_chain(base, chain, with_base=True)
    except Exception as e:  # noqa: BLE001
        if error is None:
            raise RuntimeError(f"{name}: torch raised {e}")
        # torch's IndexError (a dim or index out of range) must be tandem's IndexError too;
        # torch's RuntimeError maps to ShapeError, ValueError or (narrow past the end) IndexError.
        assert type(e) is not IndexError or error == "IndexError", f"{name}: torch raised {type(e).__name__}: {e}"
        c["error"] = error
        c["torch_error"] = str(e).split("\n")[0][:200]
        cases.append(c)
        return True
    if error is not None:
        raise RuntimeError(f"{name}: expected torch to raise {error}")
    outs = r if isinstance(r, list) else [r]
    c["outputs"] = [geom(o, b) for o in outs]
    c["multi"] = isinstance(r, list)
    cases.append(c)
    return True


def storage_numel(base):
    return max(numel(base), 0)


for lname, base, prefix in LAYOUTS:
    x = run_chain(base, prefix)
    counts = {}
    for st in templates(x):
        try:
            r = apply_step(x, st)
            # as_strided must stay inside the base storage (torch does not check that here)
            if st["op"] == "as_strided":
                outs = r if isinstance(r, list) else [r]
                for o in outs:
                    if o.numel() > 0:
                        hi = o.storage_offset() + sum((s - 1) * t for s, t in zip(o.shape, o.stride()))
                        if hi >= storage_numel(base):
                            raise ValueError("outside storage")
        except Exception:  # noqa: BLE001 - torch rejects this combination: not a sweep case
            continue
        k = counts.get(st["op"], 0)
        counts[st["op"]] = k + 1
        add_case(f"{lname}/{st['op']}/{k}", base, prefix + [st])
    # the prefix itself
    add_case(f"{lname}/prefix", base, prefix) if prefix else None

# multi-output ops in the middle of chains
add_case("mid/split_pick_t", [6, 4], [S("split", 4, 0, pick=1), S("t")])
add_case("mid/chunk_pick_view", [4, 6], [S("chunk", 3, 1, pick=2), S("reshape", (-1,))])
add_case("mid/unbind_pick_diag", [2, 3, 3], [S("unbind", 0, pick=1), S("diagonal", 1, 0, 1)])
add_case("mid/swsizes_pick_expand", [1, 5], [S("split_with_sizes", (2, 3), 1, pick=0), S("expand", (3, 2))])
add_case("mid/deep_chain", [2, 3, 4, 5], [S("permute", (3, 1, 0, 2)), S("slice", 0, 1, None, 2), S("select", 2, 1),
                                         S("unsqueeze", 1), S("expand", (2, 3, 3, 4)), S("transpose", 0, 3),
                                         S("narrow", 1, 1, 2)])
add_case("mid/as_strided_of_view", [4, 4], [S("t"), S("as_strided", (2, 3), (4, 1))])
add_case("mid/as_strided_keeps_offset", [4, 4], [S("select", 0, 2), S("as_strided", (2,), (1,))])

# ---------------------------------------------------------------- error cases
E = [
    ("view_numel", [4, 4], [S("view", (3, 5))], "ShapeError"),
    ("view_two_infer", [4, 4], [S("view", (-1, -1))], "ValueError"),
    ("view_infer_zero", [0, 3], [S("view", (-1, 0))], "ShapeError"),
    ("view_neg", [4, 4], [S("view", (-2, 8))], "ValueError"),
    ("view_noncontig", [3, 4], [S("t"), S("view", (12,))], "ShapeError"),
    ("view_sliced", [4, 6], [S("slice", 1, 1, 5, 2), S("view", (8,))], "ShapeError"),
    ("view_expanded", [1, 3], [S("expand", (4, 3)), S("view", (12,))], "ShapeError"),
    ("permute_dup", [2, 3], [S("permute", (0, 0))], "ValueError"),
    ("permute_len", [2, 3], [S("permute", (0,))], "ValueError"),
    ("permute_range", [2, 3], [S("permute", (0, 2))], "IndexError"),
    ("transpose_range", [2, 3], [S("transpose", 0, 2)], "IndexError"),
    ("t_3d", [2, 3, 4], [S("t")], "ValueError"),
    ("slice_step0", [4], [S("slice", 0, None, None, 0)], "ValueError"),
    ("slice_dim", [4], [S("slice", 1, None, None, 1)], "IndexError"),
    ("narrow_len", [4], [S("narrow", 0, 2, 3)], "IndexError"),
    ("narrow_start", [4], [S("narrow", 0, 5, 0)], "IndexError"),
    ("select_index", [2, 3], [S("select", 1, 3)], "IndexError"),
    ("select_neg_index", [2, 3], [S("select", 1, -4)], "IndexError"),
    ("select_0d", [], [S("select", 0, 0)], "IndexError"),
    ("squeeze_dim_range", [2, 1], [S("squeeze_dim", 2)], "IndexError"),
    ("unsqueeze_range", [2, 3], [S("unsqueeze", 3 + 1)], "IndexError"),
    ("expand_nonsingleton", [2, 3], [S("expand", (4, 3))], "ShapeError"),
    ("expand_fewer", [2, 3], [S("expand", (3,))], "ShapeError"),
    ("expand_leading_minus1", [3], [S("expand", (-1, 3))], "ShapeError"),
    ("flatten_order", [2, 3, 4], [S("flatten", 2, 1)], "ValueError"),
    ("unflatten_sizes", [2, 6], [S("unflatten", 1, (4, 2))], "ShapeError"),
    ("unflatten_dim", [2, 6], [S("unflatten", 2, (3, 2))], "IndexError"),
    ("split_swsizes_sum", [5], [S("split_with_sizes", (2, 2), 0)], "ShapeError"),
    ("chunk_zero", [5], [S("chunk", 0, 0)], "ValueError"),
    ("unbind_dim", [2, 3], [S("unbind", 2)], "IndexError"),
    ("diagonal_same_dims", [3, 3], [S("diagonal", 0, 1, 1)], "ValueError"),
    ("diagonal_1d", [3], [S("diagonal", 0, 0, 1)], "IndexError"),
    ("movedim_range", [2, 3], [S("movedim", 0, 2)], "IndexError"),
]
for name, base, chain, err in E:
    add_case("error/" + name, base, chain, error=err)

# ---------------------------------------------------------------- reshape: view or copy
reshape_cases = []
R = [
    ("contig", [2, 3, 4], [], [[24], [4, 6], [2, 12], [-1, 4], [1, 24, 1], [2, 3, 4]]),
    ("transposed", [3, 4], [S("t")], [[12], [4, 3], [2, 2, 3], [4, 3, 1], [1, 4, 3], [2, 6]]),
    ("transposed3d", [2, 3, 4], [S("transpose", 1, 2)], [[2, 12], [8, 3], [2, 4, 3], [2, 2, 2, 3], [24]]),
    ("sliced_cols", [4, 6], [S("slice", 1, None, None, 2)], [[12], [4, 3], [2, 2, 3], [2, 6], [4, 3, 1]]),
    ("sliced_rows", [6, 4], [S("slice", 0, None, None, 2)], [[12], [3, 2, 2], [3, 4], [6, 2]]),
    ("narrow_cols", [4, 6], [S("narrow", 1, 1, 4)], [[16], [4, 2, 2], [8, 2], [2, 8]]),
    ("narrow_rows", [6, 4], [S("narrow", 0, 1, 3)], [[12], [3, 2, 2], [6, 2], [3, 4]]),
    ("expanded", [1, 3], [S("expand", (4, 3))], [[12], [4, 3, 1], [2, 2, 3], [4, 1, 3], [2, 6]]),
    ("expanded_inner", [3, 1], [S("expand", (3, 4))], [[12], [3, 2, 2], [3, 4, 1], [6, 2]]),
    ("with_ones_perm", [2, 1, 3], [S("permute", (1, 0, 2))], [[6], [2, 3], [3, 2]]),
    ("permuted", [2, 3, 4], [S("permute", (2, 0, 1))], [[4, 6], [24], [8, 3], [4, 2, 3]]),
    ("select_col", [3, 4], [S("select", 1, 1)], [[3], [3, 1], [1, 3]]),
    ("scalar0d", [], [], [[1], [], [1, 1]]),
    ("zero_size", [0, 3], [], [[3, 0], [0], [0, 1, 3]]),
    ("zero_size_t", [0, 3], [S("t")], [[0], [3, 0], [1, 0, 3]]),
    ("diag", [3, 3], [S("diagonal", 0, 0, 1)], [[3], [3, 1], [1, 3]]),
]
for lname, base, prefix, targets in R:
    x = run_chain(base, prefix)
    for tgt in targets:
        c = {"name": f"{lname}/{'x'.join(map(str, tgt)) or 'scalar'}", "base": base, "chain": prefix, "target": tgt}
        try:
            v = x.view(tgt)
            c["view_ok"] = True
            c["view"] = geom(v)
        except RuntimeError:
            c["view_ok"] = False
        r = x.reshape(tgt)
        c["reshape"] = geom(r)
        # Shares storage: a view of x's storage. For zero-size tensors torch's reshape is
        # always a view (there is nothing to copy).
        alias = r._is_view() and (r.numel() == 0 or r.storage().data_ptr() == x.storage().data_ptr())
        c["reshape_alias"] = bool(alias)
        assert alias == c["view_ok"], c["name"]  # torch copies exactly when view is impossible
        reshape_cases.append(c)

# ---------------------------------------------------------------- writes through views
writes = []
W = [
    ("slice_step", [4, 6], [S("slice", 1, 1, None, 2)]),
    ("slice_rows", [4, 6], [S("slice", 0, 1, 3, 1)]),
    ("select_row", [3, 4], [S("select", 0, 1)]),
    ("select_col", [3, 4], [S("select", 1, -1)]),
    ("diagonal", [4, 4], [S("diagonal", 0, 0, 1)]),
    ("diagonal_pos", [3, 4], [S("diagonal", 1, 0, 1)]),
    ("diagonal_neg", [4, 3], [S("diagonal", -2, 0, 1)]),
    ("transposed", [3, 4], [S("t")]),
    ("permuted", [2, 3, 4], [S("permute", (2, 0, 1))]),
    ("narrow_t", [5, 6], [S("narrow", 0, 1, 3), S("t"), S("narrow", 0, 2, 2)]),
    ("unbind_piece", [3, 4], [S("unbind", 1, pick=2)]),
    ("split_piece", [5, 2], [S("split", 2, 0, pick=1)]),
    ("as_strided", [4, 4], [S("as_strided", (2, 2), (5, 1), 2)]),
    ("view_of_slice", [4, 6], [S("narrow", 0, 1, 2), S("view", (2, 2, 3))]),
    ("unsqueeze_select", [3, 4], [S("unsqueeze", 1), S("select", 2, 0)]),
    ("zero_size", [3, 4], [S("slice", 0, 2, 2, 1)]),
    ("scalar0d", [3, 4], [S("select", 0, 2), S("select", 0, 1)]),
]
for lname, base, chain in W:
    for kind in ("fill", "copy"):
        b = make_base(base)
        v = b
        for st in chain:
            v = apply_step(v, st)
        if kind == "fill":
            v.fill_(-7)
        else:
            v.copy_(-1 - torch.arange(v.numel()).reshape(v.shape))
        writes.append({"name": f"{lname}/{kind}", "base": base, "chain": chain, "write": kind, "value": -7,
                       "base_after": b.flatten().tolist()})

with open(OUT, "w") as f:
    json.dump({"generator": "tests/oracle/gen_views.py (PyTorch " + torch.__version__ + ")", "cases": cases,
               "reshape": reshape_cases, "writes": writes}, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(cases)} view cases, {len(reshape_cases)} reshape cases, {len(writes)} write cases to {OUT}")
