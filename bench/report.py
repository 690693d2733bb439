#!/usr/bin/python3
"""Reporting half of bench/run_all.sh (Debian's /usr/bin/python3, standard library only).

  report.py tsv RUN.json
      Google Benchmark JSON -> one line per case: `name<TAB>value<TAB>unit`, the value
      being the median wall time per iteration in ns (unit "ns", or "error: why").
  report.py md --out RESULTS.md --command CMD --commands FILE LABEL=RUN.tsv ...
      Rewrites the core section of RESULTS.md (Google Benchmark times per operation).
  report.py autograd --out RESULTS.md --command CMD --commands FILE LABEL=RUN.json ...
      Rewrites the autograd section (issue 4's tape overhead: autograd/* times and the
      autograd_mem/* byte counters of bench/autograd_workloads.h, from the JSON).
  report.py train --out RESULTS.md --command CMD --commands FILE --load L LABEL=RUN.tsv ...
      Rewrites the training section (bench_train / bench_peer_torch_train lines
      `train/<case><TAB>samples/s` and `train_rss/<case><TAB>MiB`; bench_train's memory
      lines `train_peak/`, `train_saved/`, `train_arena/`, `train_arena_forward/`,
      `train_arena_plan/`, `train_arena_bound/`, `train_saved_program/` in bytes, `train_compile/<case><TAB>ms`
      `train_loss9/<case><TAB>loss`, and the eager run's `train_update/` and
      `train_update_compiled/<case><TAB>us`: the optimizer update alone). Labels: tandem, tandem_compiled, tandem_step,
      torch_best, torch_default.
  report.py budget --out RESULTS.md --command CMD --commands FILE --load L --svg DIR/x.svg LABEL=RUN.tsv ...
      Rewrites the memory-budget section (bench_budget's tables per model: budget, measured
      peak, step time, what the plan recomputed and offloaded) and draws
      DIR/budget_curve_LABEL.svg for each.
  report.py amp --out RESULTS.md --command CMD --commands FILE --load L LABEL=RUN.tsv ...
      Rewrites the mixed-precision section (issue 16): bench_train / bench_peer_torch_train
      lines of float32 and `--precision bf16` runs at batch 128 and 256 (cases
      `<model>_<opt>[_b<B>][_bf16]`). Labels: tandem, tandem_bf16, tandem_step,
      tandem_step_bf16, torch_best, torch_best_bf16.
  report.py onnx --out RESULTS.md --command CMD --commands FILE --load L RUN.tsv
      Rewrites the ONNX section (issue 18; bench_onnx's TSV: the suite's largest model's
      load and first-run times, then eager vs compiled inference per pytorch-converted model).
  report.py compile --out RESULTS.md --command CMD --commands FILE TANDEM.json TORCH.json
      Rewrites the compiled-mode section (bench_compile / bench_peer_torch_compile JSON:
      CNN inference, tandem eager/compiled vs torch eager/TorchScript), after checking that
      every program computed the same logits.
  Each section sits between <!-- begin:NAME --> and <!-- end:NAME --> markers; rewriting
  one keeps the other as it was, and the hand-kept "## History" section of the old file
  stays unchanged. Labels: tandem, tandem_compiled and tandem_step (train), torch_best,
  torch_default.
"""
import argparse
import json
import os
import re
import subprocess
import sys

TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# Case names are "group/case" (bench/workloads.h); one table per group.
GROUP_TITLES = {
    "view": "Tensor creation + view chain (64x64 float32 zeros; view, transpose, slice, unsqueeze)",
    "eltwise": "Elementwise add of 1-element float32 tensors, no grad",
    "kernel": "Kernel loops on an in-cache [128, 256] float32 tensor, no grad",
    "linalg": "Matrix products (n x n x n; GFLOP/s = 2 n^3 / time)",
    "conv": "Convolution and pooling forward, float32, no grad",
}
# Issue 5's targets for the training step: tandem (no special environment) at least as
# fast as PyTorch at its best, and peak RSS no higher; issue 12's: tandem compiled (the
# model's programs, and the whole step as one program) at least as fast as tandem eager, its
# allocator peak no higher, the cnn's capture + compile <= 100 ms.
# PyTorch at its best on a quiet machine of this kind (../shared/FACTS.md, 2026-12-01):
# samples/s. Busy-waiting OpenMP threads and a loaded machine hit the peer much harder than
# tandem, so the table also gives tandem's ratio to these figures.
TRAIN_REFERENCE = {"mlp_sgd": 160000.0, "cnn_adam": 3500.0}
# Issue 13's (fusion, recomputation): the whole compiled step at least this much faster than
# tandem eager (and, cnn, than torch best), and the compiled cnn's saved bytes at most 0.7x
# eager's tape.
STEP_TARGETS = {"mlp_sgd": (1.15, None), "cnn_adam": (1.3, 2.6)}
SAVED_TARGET = {"cnn_adam": 0.7}
COMPILE_TIME_TARGET_MS = 100.0
TRAIN_TITLES = {
    "mlp_sgd": "mlp (784-256-128-10), SGD momentum 0.9",
    "cnn_adam": "cnn (conv32-pool-conv64-pool-fc128-fc10), Adam",
}
HISTORY = "## History"
HISTORY_DEFAULT = (HISTORY + "\n\nKept by hand: run_all.sh rewrites everything above this heading"
                   " and keeps this section as it is. Copy a \"Latest run\" section here when it"
                   " marks a milestone.\n")


def tsv(path):
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    have_median = any(r.get("aggregate_name") == "median" for r in runs)
    for r in runs:
        name = r.get("run_name", r["name"]).removesuffix("/real_time")
        if r.get("error_occurred"):
            print(f"{name}\tnan\terror: {r.get('error_message', '?')}")
        elif (r.get("aggregate_name") == "median") if have_median else (r.get("run_type") == "iteration"):
            print(f"{name}\t{r['real_time'] * TO_NS[r.get('time_unit', 'ns')]:.1f}\tns")


def read_tsv(path):
    rows = {}
    with open(path) as f:
        for line in f:
            name, value, unit = line.rstrip("\n").split("\t")
            rows[name] = float(value) if unit in ("ns", "us", "samples/s", "MiB", "bytes", "ms", "loss") else unit
    return rows


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if v < 1e3:
        return f"{v:.0f} ns"
    return f"{v / 1e3:.2f} us" if v < 1e6 else f"{v / 1e6:.2f} ms"


def machine():
    model = "?"
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    mem_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return f"{model}, {os.cpu_count()} CPUs (nproc), {mem_kib / 2**20:.1f} GiB memory"


def read_runs(specs):
    """LABEL=RUN.tsv arguments -> {label: {case: value}}."""
    runs = {}
    for spec in specs:
        label, path = spec.split("=", 1)
        runs[label] = read_tsv(path)
    return runs


def header_lines():
    return ["# Benchmark results", "",
            "Regenerated by `./run bench` (bench/run_all.sh; `./run bench core|autograd|train|amp|compile|ops|python|budget|ddp|onnx`",
            "reruns one section and keeps the others). tandem runs with no special environment; the",
            "peer is PyTorch's C++ library (libtorch 1.13). \"torch best\" runs it as PyTorch's CPU",
            "tuning guides advise: `LD_PRELOAD` of tcmalloc (Debian's libtcmalloc-minimal4; with glibc's",
            "malloc libtorch page-faults its large buffers on every step), `OMP_WAIT_POLICY=PASSIVE`",
            "(PyTorch's OpenMP threads otherwise busy-wait) and `OPENBLAS_CORETYPE` (Debian's OpenBLAS",
            "misdetects recent CPUs); \"out of box\" sets none of them. Ratios and targets use torch",
            "best. All programs use 2 threads.", ""]


def read_commands(path):
    """The program command lines run_all.sh wrote, one per line."""
    with open(path) as f:
        return f.read().strip().splitlines()


def run_lines(date, command, load_line, commands):
    out = [f"- Date: {date}",
           f"- Machine: {machine()}",
           f"- Command: `{command}`",
           load_line,
           "- Programs run:"]
    return out + [f"  - `{c}`" for c in commands]


def core_section(args):
    runs, loads = read_runs(args.runs), []
    for spec in args.runs:
        label, path = spec.split("=", 1)
        # Google Benchmark records the load average in the JSON next to the TSV: on 2
        # cores, anything else running (a build) makes the numbers noise.
        try:
            with open(path.removesuffix(".tsv") + ".json") as f:
                loads.append(f"{label} {json.load(f)['context']['load_avg'][0]:.2f}")
        except (OSError, KeyError, IndexError, ValueError):
            pass
    tandem, best, default = (runs.get(k, {}) for k in ("tandem", "torch_best", "torch_default"))
    names = list(dict.fromkeys([*tandem, *best, *default]))  # first-seen order
    commands = read_commands(args.commands)
    if getattr(args, "ops", False):
        out = ["## Latest run: matrix products and convolution", "",
               "Issue 14's workloads (bench/ops_workloads.h: bench_ops and bench_peer_torch_ops;",
               "`./run bench ops` reruns this section alone). Times are medians of the wall time per",
               "operation, so **lower is better**; the ratio column is tandem / torch best (< 1: tandem",
               "is faster). Targets: large GEMMs and convolutions at >= 90% of the machine's limit",
               "(about 390 GFLOP/s: oneDNN sgemm 256^3 on 2 threads, ../shared/FACTS.md) and not",
               "slower than torch best.", ""]
    else:
        out = ["## Latest run: operations", "",
               "Both programs run the same workloads, defined once in bench/workloads.h. Times are",
               "medians of the wall time per operation, so **lower is better**; the ratio column is",
               "tandem / torch best (< 1: tandem is faster). (The \"Library was built as DEBUG\" line",
               "the programs print is about Debian's libbenchmark.)", ""]
    out += run_lines(now(), args.command,
                     f"- 1-minute load average as each program started: {', '.join(loads) or '?'}"
                     " (well above 0 means something else was running and the times are noisy)", commands)
    groups = list(dict.fromkeys(n.split("/", 1)[0] for n in names))
    for g in groups:
        out += ["", f"### {GROUP_TITLES.get(g, g)}", "",
                "| case | tandem | torch best | torch out of box | tandem / torch best |",
                "|---|---:|---:|---:|---:|"]
        for n in (n for n in names if n.split("/", 1)[0] == g):
            t, p = tandem.get(n), best.get(n)
            ratio = f"{t / p:.2f}" if isinstance(t, float) and isinstance(p, float) and p > 0 else "-"
            out.append(f"| {n.split('/', 1)[-1]} | {fmt(t)} | {fmt(p)} | {fmt(default.get(n))} | {ratio} |")
    return out


def ratio(a, b):
    return f"{a / b:.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else "-"


def num(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:,.{digits}f}"


def met(ok):
    return "met" if ok else "NOT met"


def size(v):
    """Bytes as KiB below 1 MiB, else MiB ("-" for none)."""
    if not isinstance(v, float):
        return "-" if v is None else str(v)
    return f"{v / 2**10:,.1f} KiB" if abs(v) < 2**20 else f"{v / 2**20:,.2f} MiB"


def train_section(args):
    runs = read_runs(args.runs)
    tandem, compiled, whole, best, default = (runs.get(k, {}) for k in ("tandem", "tandem_compiled", "tandem_step",
                                                                         "torch_best", "torch_default"))
    cases = [n.split("/", 1)[1] for n in dict.fromkeys([*tandem, *compiled, *whole, *best, *default])
             if n.startswith("train/")]
    commands = read_commands(args.commands)
    out = ["## Latest run: training step", "",
           "One full training step of the reference models of issue 5 (src/tandem/nn/models.h;",
           "the peer builds the same layers with torch's default initialisation) on random data of",
           "Fashion-MNIST shape, batch 128: zero_grad, forward, cross_entropy, backward, optimizer",
           "step, each library with its defaults (tandem's zero_grad sets gradients to none,",
           "libtorch 1.13's zeroes them). mlp trains with SGD (lr 0.05, momentum 0.9), cnn with",
           "Adam (lr 1e-3). \"tandem compiled\" (`bench_train --mode compiled`, issue 12) runs the",
           "model through `tandem::compile(model)`: a forward program, one node on the tape whose",
           "backward runs the backward program; the loss, the rest of backward and the optimizer",
           "step stay eager. \"tandem compiled step\" (`bench_train --mode step`) compiles the whole",
           "step function with `tandem::compile(fn)`: zero_grad, forward, loss, backward and the",
           "optimizer's fused update replay as one program (its first call runs eagerly and creates",
           "the optimizer state, the second captures; `loss.item()` stays outside). Throughput is the",
           "median of timed rounds after a warm-up, so **higher is better**; ratios >= 1 mean the",
           "first is at least as fast. Every program runs in TRAIN_PASSES interleaved passes (default 3; the",
           "programs alternate within a pass) and keeps the figures of its fastest pass: on this VM",
           "identical runs minutes apart differ by up to 40%. Peak RSS is getrusage's ru_maxrss of the process, which runs",
           "one model in one mode only (it includes the libraries loaded, not a data set). Programs:",
           "bench/bench_train.cpp and bench/peer/torch_train.cpp over bench/train_harness.h.",
           "Targets: tandem >= 1.0x torch best and peak RSS <= torch's (issue 5); compiled and",
           "compiled step >= 1.0x eager (issue 12); compiled step >= 1.3x eager and >= 2.6x torch best",
           "for the cnn, >= 1.15x eager for the mlp, and the compiled cnn's saved bytes <= 0.7x eager's",
           "tape (issue 13: fusion and what the forward saves).", ""]
    out += run_lines(now(), args.command,
                     f"- 1-minute load average before the first program: {args.load} (well above 0 means"
                     " something else was running and the figures are noisy)", commands)
    out += ["", "| model | tandem eager samples/s | tandem compiled | tandem compiled step | torch best"
            " | torch out of box | compiled / eager | step / eager | eager / torch best | compiled / torch best"
            " | step / torch best | eager / torch out of box | eager / torch best on a quiet machine |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        t, tc, ts, p, d = (r.get("train/" + c) for r in (tandem, compiled, whole, best, default))
        out.append(f"| {TRAIN_TITLES.get(c, c)} | {num(t)} | {num(tc)} | {num(ts)} | {num(p)} | {num(d)}"
                   f" | **{ratio(tc, t)}** | **{ratio(ts, t)}** | **{ratio(t, p)}** | {ratio(tc, p)} | {ratio(ts, p)}"
                   f" | {ratio(t, d)} | {ratio(t, TRAIN_REFERENCE.get(c))} |")
    out += ["", "\"torch best on a quiet machine\": mlp 160,000 and cnn 3,500 samples/s (../shared/FACTS.md,"
            " 2026-12-01, the same programs); the peer loses much more than tandem when other processes load"
            " the cores, so with a high load average this column is the fairer one.", ""]
    targets = []
    for c in cases:
        t, tc, ts, p = (r.get("train/" + c) for r in (tandem, compiled, whole, best))
        if isinstance(t, float) and isinstance(p, float):
            targets.append(f"- {c}: tandem eager >= 1.0x torch best: {met(t >= p)} ({ratio(t, p)}x)")
        if isinstance(t, float) and isinstance(tc, float):
            targets.append(f"- {c}: compiled >= 1.0x eager: {met(tc >= t)} ({ratio(tc, t)}x)")
        if isinstance(t, float) and isinstance(ts, float):
            targets.append(f"- {c}: compiled step >= 1.0x eager: {met(ts >= t)} ({ratio(ts, t)}x)")
        eager_goal, peer_goal = STEP_TARGETS.get(c, (None, None))
        if eager_goal and isinstance(t, float) and isinstance(ts, float):
            targets.append(f"- {c}: compiled step >= {eager_goal}x eager (issue 13): {met(ts >= eager_goal * t)}"
                           f" ({ratio(ts, t)}x)")
        if peer_goal and isinstance(p, float) and isinstance(ts, float):
            targets.append(f"- {c}: compiled step >= {peer_goal}x torch best (issue 13): {met(ts >= peer_goal * p)}"
                           f" ({ratio(ts, p)}x)")
        se, sc = tandem.get("train_saved/" + c), compiled.get("train_saved/" + c)
        if c in SAVED_TARGET and isinstance(se, float) and isinstance(sc, float):
            targets.append(f"- {c}: compiled saved bytes <= {SAVED_TARGET[c]}x eager's tape (issue 13):"
                           f" {met(sc <= SAVED_TARGET[c] * se)} ({ratio(sc, se)}x)")
    out += ["Targets in this run:", "", *targets, ""]
    # The same seed and batches in every mode: the 9th step's loss must be the same.
    agree = []
    for c in cases:
        losses = [(k, r.get("train_loss9/" + c)) for k, r in (("eager", tandem), ("compiled", compiled),
                                                               ("compiled step", whole))]
        losses = [(k, v) for k, v in losses if isinstance(v, float)]
        if len(losses) > 1:
            same = all(v == losses[0][1] for _, v in losses)
            agree.append(f"- {c}: " + ", ".join(f"{k} {v:.9g}" for k, v in losses)
                         + (": equal" if same else ": **DIFFER**"))
    if agree:
        out += ["Loss of the 9th step (the same seed and batches in each mode; equal means the programs trained",
                "as eager did):", "", *agree, ""]
    out += ["Peak RSS of the process:", "",
            "| model | tandem eager | tandem compiled | tandem compiled step | torch best | torch out of box |",
            "|---|---:|---:|---:|---:|---:|"]
    for c in cases:
        vals = [r.get("train_rss/" + c) for r in (tandem, compiled, whole, best, default)]
        out.append(f"| {TRAIN_TITLES.get(c, c)} | " + " | ".join(f"{num(v)} MiB" if v is not None else "-" for v in vals)
                   + " |")
    out += ["", "Memory of one training step in tandem (issue 12), from tandem's allocator after the timed rounds",
            "(oneDNN's scratchpads and libtorch are not counted). *Peak*: the allocator's peak during one step",
            "above the bytes in use before it, the forward and backward programs' arenas included (each taken",
            "from the caching allocator for one run). *Saved for backward*: allocator bytes the model's",
            "forward left alive (in use after the forward minus before it, minus the logits): eager's tape, or",
            "the compiled node's saved values; *program's saved bytes*: `TrainingProgram::saved_bytes`, the",
            "saved values as the split counted them at capture (inputs and parameters kept by reference count",
            "0). Target: compiled peak <= eager's.", "",
            "| model | peak, eager | peak, compiled | compiled / eager | of which arenas (forward + backward) | saved for backward,"
            " eager tape | saved, compiled | compiled / eager | program's saved bytes | target |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        pe, pc = tandem.get("train_peak/" + c), compiled.get("train_peak/" + c)
        se, sc = tandem.get("train_saved/" + c), compiled.get("train_saved/" + c)
        arena, sp = compiled.get("train_arena/" + c), compiled.get("train_saved_program/" + c)
        fwd = compiled.get("train_arena_forward/" + c)
        arenas = (f"{size(arena)} ({size(fwd)} + {size(arena - fwd)})"
                  if isinstance(arena, float) and isinstance(fwd, float) else size(arena))
        target = (f"peak <= eager's: {met(pc <= pe)}" if isinstance(pe, float) and isinstance(pc, float) else "-")
        out.append(f"| {TRAIN_TITLES.get(c, c)} | {size(pe)} | {size(pc)} | {ratio(pc, pe)} | {arenas}"
                   f" | {size(se)} | {size(sc)} | {ratio(sc, se)} | {size(sp)} | {target} |")
    if whole:
        out += ["", "The whole step as one program (`--mode step`): peak as above. *Arena taken per run*: 0 when the",
                "program allocates each value when it is made and frees it after its last read (as eager mode",
                "does) instead of using its planned arena; the planned arena and the plan's lower bound (the most",
                "planned bytes live at once) are for reference. Target: peak <= eager's.", "",
                "| model | peak, eager | peak, compiled step | step / eager | arena taken per run"
                " | planned arena / lower bound | target |", "|---|---:|---:|---:|---:|---:|---|"]
        for c in cases:
            pe, ps = tandem.get("train_peak/" + c), whole.get("train_peak/" + c)
            target = (f"peak <= eager's: {met(ps <= pe)}" if isinstance(pe, float) and isinstance(ps, float) else "-")
            out.append(f"| {TRAIN_TITLES.get(c, c)} | {size(pe)} | {size(ps)} | {ratio(ps, pe)}"
                       f" | {size(whole.get('train_arena/' + c))} | {size(whole.get('train_arena_plan/' + c))}"
                       f" / {size(whole.get('train_arena_bound/' + c))}"
                       f" | {target} |")
    times = []
    for label, r in (("compiled", compiled), ("compiled step", whole)):
        for c in cases:
            ms = r.get("train_compile/" + c)
            if isinstance(ms, float):
                goal = (f" (target <= {COMPILE_TIME_TARGET_MS:.0f} ms: {met(ms <= COMPILE_TIME_TARGET_MS)})"
                        if c.startswith("cnn") else "")
                times.append(f"- {c}, {label}: {ms:.1f} ms{goal}")
    if times:
        out += ["", "Capture + compile time of the training step: the capturing step minus the median of the next"
                " 7 steady compiled steps. `--mode compiled`: after one eager step has warmed oneDNN's primitives"
                " and the allocator, the first compiled step, which captures the forward and its backward by"
                " running them eagerly, differentiates, splits, optimises and plans both programs. `--mode step`:"
                " the second call of the compiled step (the first ran eagerly and created the optimizer state),"
                " which captures the whole step, forward, backward and update, and compiles it into one"
                " program:", "", *times]
    updates = []
    for c in cases:
        ue, uc = tandem.get("train_update/" + c), tandem.get("train_update_compiled/" + c)
        if isinstance(ue, float) and isinstance(uc, float):
            goal = f" (target >= 2x, issue 13: {met(ue / uc >= 2.0)})" if c.startswith("cnn") else ""
            updates.append(f"- {c}: eager {ue:.1f} us, compiled {uc:.1f} us, eager / compiled {ue / uc:.2f}x{goal}")
    if updates:
        out += ["", "The optimizer update alone over all of the model's parameters, on the gradients of the last"
                " step (`bench_train` eager run; interleaved rounds of 200 updates, median per update): tandem's"
                " eager `opt.step()`, which already runs one fused kernel per parameter (one pass over each"
                " parameter, gradient and state tensor), against the update compiled as one program (the same"
                " fused node per parameter, run by the executor). The update is bound by memory traffic: the"
                " cnn's fc1 weight (401,408 values; 7 passes of 1.6 MB) takes most of it:", "", *updates]
    return out


def json_cases(path):
    """Google Benchmark JSON -> ({case: {"ns": median wall ns, "counters": {...}} or
    {"error": why}}, context)."""
    with open(path) as f:
        data = json.load(f)
    meta = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads", "iterations",
            "real_time", "cpu_time", "time_unit", "aggregate_name", "aggregate_unit", "family_index",
            "per_family_instance_index", "items_per_second", "bytes_per_second", "error_occurred", "error_message"}
    have_median = any(r.get("aggregate_name") == "median" for r in data["benchmarks"])
    cases = {}
    for r in data["benchmarks"]:
        name = r.get("run_name", r["name"]).removesuffix("/real_time")
        if r.get("error_occurred"):
            cases[name] = {"error": "error: " + r.get("error_message", "?")}
        elif (r.get("aggregate_name") == "median") if have_median else (r.get("run_type") == "iteration"):
            cases[name] = {"ns": r["real_time"] * TO_NS[r.get("time_unit", "ns")],
                           "counters": {k: v for k, v in r.items() if k not in meta and isinstance(v, (int, float))}}
    return cases, data.get("context", {})


def mib(v):
    return "-" if v is None else f"{v / 2**20:.1f} MiB"


COMPILE_IMPLS = [("tandem_eager", "tandem eager"), ("tandem_compiled", "tandem compiled"),
                 ("torch_eager", "torch eager"), ("torch_script", "TorchScript frozen"),
                 ("torch_script_opt", "TorchScript frozen + optimize_for_inference")]


def compile_section(args):
    tandem, tctx = json_cases(args.tandem)
    torch, pctx = json_cases(args.torch)
    runs = {**tandem, **torch}
    batches = sorted({int(n.split("/")[1][1:]) for n in runs if n.startswith("cnn/b")})
    # Every program must have computed the same logits before any time means anything.
    sums = {k: v["counters"]["checksum"] for k, v in runs.items()
            if k.startswith("cnn/") and "checksum" in v.get("counters", {})}
    ref = next(iter(sums.values()), None)
    agree = ref is not None and all(abs(v - ref) <= 1e-4 * max(1.0, abs(ref)) for v in sums.values())
    commands = read_commands(args.commands)
    loads = ", ".join(f"{label} {ctx['load_avg'][0]:.2f}" for label, ctx in (("tandem", tctx), ("torch", pctx))
                      if ctx.get("load_avg"))
    out = ["## Latest run: compiled mode (CNN inference)", "",
           "`tandem::compile(model)` (captured, optimised, memory-planned program) against tandem eager,",
           "libtorch eager and TorchScript of the same model: nn::models::fashion_cnn in eval mode,",
           "float32, no gradients (tandem: NoGradGuard; torch: InferenceMode), the same weights and",
           "inputs in every program (bench/cnn_workload.h). The TorchScript module is scripted from",
           "source (`torch::jit::Module::define`; `torch.jit.trace` has no C++ API in 1.13) and frozen",
           "(`torch::jit::freeze`), optionally then `torch::jit::optimize_for_inference`. torch runs",
           "as torch best (tcmalloc preloaded, PASSIVE). Medians of the wall time per forward call,",
           "**lower is better**; the last column is torch's best / tandem compiled (issue 6's target:",
           ">= 1.3). Programs: bench/bench_compile.cpp, bench/peer/torch_compile.cpp.", ""]
    out += run_lines(now(), args.command,
                     f"- 1-minute load average as each program started: {loads or '?'}"
                     " (well above 0 means something else was running and the times are noisy)", commands)
    out += ["", (f"Results agree: the logits of the check batch have the same checksum ({ref:.5f}) in every case."
                 if agree else f"**RESULTS DISAGREE** (checksums {sums}): the times are not comparable."), ""]
    out += ["| batch | " + " | ".join(t for _, t in COMPILE_IMPLS) + " | torch's best / tandem compiled |",
            "|---:|" + "---:|" * (len(COMPILE_IMPLS) + 1)]
    for b in batches:
        cells, best = [], None
        for key, _ in COMPILE_IMPLS:
            r = runs.get(f"cnn/b{b}/{key}", {})
            v = r.get("ns", r.get("error"))
            cells.append(fmt(v))
            if key.startswith("torch") and isinstance(v, float):
                best = v if best is None else min(best, v)
        c = runs.get(f"cnn/b{b}/tandem_compiled", {}).get("ns")
        out.append(f"| {b} | " + " | ".join(cells) + f" | {'**' + ratio(best, c) + '**' if best and c else '-'} |")
    # Issue 13's elementwise fusion: one chain of nine ops.
    pw = {k: runs.get(f"pointwise/gelu/{k}", {}) for k in ("tandem_eager", "tandem_compiled", "torch_eager",
                                                             "torch_script")}
    if any(pw.values()):
        sums = [v["counters"]["checksum"] for v in pw.values() if "checksum" in v.get("counters", {})]
        same = sums and all(abs(s - sums[0]) <= 1e-5 * max(1.0, abs(sums[0])) for s in sums)
        te, tc = pw["tandem_eager"].get("ns"), pw["tandem_compiled"].get("ns")
        tbest = [v.get("ns") for k, v in pw.items() if k.startswith("torch") and isinstance(v.get("ns"), float)]
        best = min(tbest) if tbest else None
        out += ["", "Elementwise fusion (issue 13): GELU's tanh form written out as nine elementwise ops on a",
                "[4096, 1024] float32 tensor (bench/cnn_workload.h), no gradients. tandem compiled fuses the chain",
                "into one `_fused_pointwise` node (each op's own kernel per block of 8192 elements, in cache);",
                "eager and torch eager make nine passes over 16 MiB; TorchScript (1.13) does not fuse on CPU.",
                ("The four programs' results agree (checksums of the sums)." if same else
                 f"**RESULTS DISAGREE** (checksums {sums})."), "",
                "| tandem eager | tandem compiled | torch eager | TorchScript | tandem eager / compiled"
                " | torch's best / tandem compiled |", "|---:|---:|---:|---:|---:|---:|",
                f"| {fmt(te)} | {fmt(tc)} | {fmt(pw['torch_eager'].get('ns'))} | {fmt(pw['torch_script'].get('ns'))}"
                f" | **{ratio(te, tc)}** | **{ratio(best, tc)}** |"]
    out += ["", "Memory of one call, from tandem's allocator (oneDNN's scratchpads are not counted): eager =",
            "peak bytes in use during the call; compiled = the same, the program's arena included (taken per",
            "call). The planner's lower bound is the most bytes live at any step.", "",
            "| batch | eager peak | compiled peak | compiled arena | lower bound | arena / bound |",
            "|---:|---:|---:|---:|---:|---:|"]
    for b in batches:
        e = runs.get(f"cnn/b{b}/tandem_eager", {}).get("counters", {})
        c = runs.get(f"cnn/b{b}/tandem_compiled", {}).get("counters", {})
        arena, bound = c.get("arena_bytes"), c.get("lower_bound_bytes")
        out.append(f"| {b} | {mib(e.get('peak_bytes'))} | {mib(c.get('peak_bytes'))} | {mib(arena)} | {mib(bound)}"
                   f" | {ratio(arena, bound) if arena and bound else '-'} |")
    cap = runs.get("cnn_compile/b128/capture", {})
    out += ["", "Capture and compile time of the CNN (a fresh `compile(model)` and its first call at batch",
            "128: one eager forward while capturing, the passes, memory planning, executor set-up): "
            f"{fmt(cap.get('ns', cap.get('error')))}."]
    return out


# Issue 16's targets for the bfloat16 cnn step: >= 1.4x tandem's float32 step (same mode),
# tandem bf16 / torch bf16 >= tandem fp32 / torch fp32 (ahead of PyTorch's autocast by at
# least the float32 ratio), and tandem's allocator peak of the step below float32's.
AMP_SPEEDUP_TARGET = {"cnn_adam": 1.4}


def amp_section(args):
    runs = read_runs(args.runs)
    labels = ("tandem", "tandem_bf16", "tandem_step", "tandem_step_bf16", "torch_best", "torch_best_bf16")
    r = {k: runs.get(k, {}) for k in labels}

    def get(label, key, case):
        return r[label].get(key + case + ("_bf16" if label.endswith("_bf16") else ""))

    cases = []
    for c in r["tandem"]:
        if c.startswith("train/"):
            cases.append(c[len("train/"):])
    commands = read_commands(args.commands)
    out = ["## Latest run: mixed precision (bfloat16 autocast)", "",
           "Issue 16's benchmark (`./run bench amp` reruns this section alone): the training step of",
           "the train section (zero_grad, forward, cross_entropy, backward, optimizer step; random data",
           "of Fashion-MNIST shape) at batch 128 and 256, float32 against `--precision bf16` (forward",
           "and loss under bfloat16 autocast, backward and optimizer step outside it; parameters,",
           "gradients and optimizer state float32). tandem eager, and the whole step compiled into one",
           "program (`--mode step`, what `tandem train --mode compiled` runs); the peer is libtorch 1.13",
           "at its best, with its CPU bfloat16 autocast switched on through the C++ API",
           "(`at::autocast::set_cpu_enabled`, `set_autocast_cpu_dtype(kBFloat16)`: what",
           "`torch.autocast(\"cpu\", dtype=torch.bfloat16)` sets). samples/s, median of the rounds,",
           "each program's fastest of AMP_PASSES interleaved passes (default 3; this VM's speed drifts by",
           "tens of percent over minutes); higher is better. Targets (cnn): bf16 >= 1.4x tandem float32 (same mode); tandem bf16 /",
           "torch bf16 >= tandem fp32 / torch fp32; peak memory of the bf16 step below float32's.", ""]
    out += run_lines(now(), args.command,
                     f"- 1-minute load average before the programs: {args.load} (well above 2 means something"
                     " else was running)", commands)
    out += ["", "| case | tandem fp32 | tandem bf16 | bf16 / fp32 | tandem step fp32 | tandem step bf16 |"
            " bf16 / fp32 | torch best fp32 | torch best bf16 | bf16 / fp32 | target (cnn: bf16 step >= 1.4x) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        te, tb = get("tandem", "train/", c), get("tandem_bf16", "train/", c)
        se, sb = get("tandem_step", "train/", c), get("tandem_step_bf16", "train/", c)
        pe, pb = get("torch_best", "train/", c), get("torch_best_bf16", "train/", c)
        base = c.split("_b")[0] if "_b" in c[4:] else c
        goal = AMP_SPEEDUP_TARGET.get(base)
        target = "-"
        if goal and isinstance(sb, float) and isinstance(se, float):
            target = f"{met(sb >= goal * se)} (eager {ratio(tb, te)}x, step {ratio(sb, se)}x)"
        out.append(f"| {c} | {num(te)} | {num(tb)} | {ratio(tb, te)} | {num(se)} | {num(sb)} | {ratio(sb, se)} |"
                   f" {num(pe)} | {num(pb)} | {ratio(pb, pe)} | {target} |")
    out += ["", "Against PyTorch's autocast: tandem / torch best, float32 and bfloat16 (target: the bfloat16",
            "ratio at least the float32 one).", "",
            "| case | eager fp32 | eager bf16 | step fp32 | step bf16 | target (step) |",
            "|---|---:|---:|---:|---:|---|"]
    for c in cases:
        te, tb = get("tandem", "train/", c), get("tandem_bf16", "train/", c)
        se, sb = get("tandem_step", "train/", c), get("tandem_step_bf16", "train/", c)
        pe, pb = get("torch_best", "train/", c), get("torch_best_bf16", "train/", c)
        rf, rb = (sb / pb if isinstance(sb, float) and isinstance(pb, float) and pb > 0 else None,
                  se / pe if isinstance(se, float) and isinstance(pe, float) and pe > 0 else None)
        target = met(rf >= rb) if rf is not None and rb is not None else "-"
        out.append(f"| {c} | {ratio(te, pe)} | {ratio(tb, pb)} | {ratio(se, pe)} | {ratio(sb, pb)} | {target} |")
    out += ["", "Memory of one step: tandem's allocator peak during the step above the level before it",
            "(`train_peak`; the step program's arena included), and the peak RSS of each process (MiB; torch",
            "best's only as a reference: its caching allocator and tcmalloc differ).", "",
            "| case | tandem peak fp32 | tandem peak bf16 | step peak fp32 | step peak bf16 | target (step) |"
            " RSS tandem fp32 / bf16 | RSS step fp32 / bf16 | RSS torch best fp32 / bf16 |",
            "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for c in cases:
        pe, pb = get("tandem", "train_peak/", c), get("tandem_bf16", "train_peak/", c)
        qe, qb = get("tandem_step", "train_peak/", c), get("tandem_step_bf16", "train_peak/", c)
        target = met(qb < qe) if isinstance(qb, float) and isinstance(qe, float) else "-"
        rss = [num(get(k, "train_rss/", c), 1) for k in labels]
        out.append(f"| {c} | {size(pe)} | {size(pb)} | {size(qe)} | {size(qb)} | {target} | {rss[0]} / {rss[1]} |"
                   f" {rss[2]} / {rss[3]} | {rss[4]} / {rss[5]} |")
    return out


def amp_cmd(args):
    write_section(args.out, "amp", amp_section(args))


def now():
    return subprocess.run(["date", "-u"], capture_output=True, text=True).stdout.strip()


SECTIONS = ("core", "autograd", "train", "amp", "compile", "ops", "python", "budget", "ddp", "onnx")


# Issue 4's targets: (case, rule, limit); "abs" limits tandem's time in ns, "ratio" tandem /
# torch best.
# "tandem" limits tandem's time / tandem's time of another case (issue 12: compiled vs eager).
AUTOGRAD_TARGETS = {"add_1elem_requires_grad": ("abs", 600.0), "mlp16_step": ("ratio", 0.5),
                    "mlp16_step_zero_fill": ("ratio", 0.5), "mlp16_step_compiled": ("tandem", 0.5, "mlp16_step"),
                    "mlp16_step_compiled_whole": ("tandem", 0.5, "mlp16_step")}
AUTOGRAD_TITLES = {
    "add_1elem_requires_grad": "`a + b`, 1-element float32 leaves with requires_grad (records the tape)",
    "mlp16_forward": "tiny MLP 16-16-16-1, batch 1: forward + MSE loss only (tape recorded, then dropped)",
    "mlp16_step": "tiny MLP: zero_grad(set_to_none) + forward + MSE + backward",
    "mlp16_step_zero_fill": "tiny MLP: zero_grad (zero fill, libtorch 1.13's C++ default) + forward + MSE + backward",
    "mlp16_step_compiled": "tiny MLP: zero_grad(set_to_none) + compiled forward and MSE + backward (tandem only)",
    "mlp16_step_compiled_whole": ("tiny MLP: the whole step compiled, zero_grad(set_to_none) + forward + MSE +"
                                  " backward in one program (tandem only)"),
}
MEM_TITLES = {
    "mem_tensor_first_step": "allocator bytes left by the first step, minus the new .grad tensors",
    "mem_tensor_retained": "allocator bytes left by 100 more steps (zero_grad zero-fills)",
    "mem_tensor_peak_step": "allocator peak during one step, above the level before it",
    "mem_heap_retained": "glibc heap bytes left by those 100 steps (tape nodes, caches)",
}


def gbench_medians(path):
    """Google Benchmark JSON -> {case: {"ns": median wall ns, counter: median value}}."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    have_median = any(r.get("aggregate_name") == "median" for r in runs)
    out = {}
    for r in runs:
        name = r.get("run_name", r["name"]).removesuffix("/real_time").split("/iterations:")[0]
        if r.get("error_occurred"):
            out[name] = {"ns": "error: " + r.get("error_message", "?")}
        elif (r.get("aggregate_name") == "median") if have_median else (r.get("run_type") == "iteration"):
            row = {"ns": r["real_time"] * TO_NS[r.get("time_unit", "ns")]}
            row.update({k: v for k, v in r.items() if k.startswith("mem_")})
            out[name] = row
    return out


def autograd_section(args):
    runs, loads = {}, []
    for spec in args.runs:
        label, path = spec.split("=", 1)
        runs[label] = gbench_medians(path)
        try:
            with open(path) as f:
                loads.append(f"{label} {json.load(f)['context']['load_avg'][0]:.2f}")
        except (OSError, KeyError, IndexError, ValueError):
            pass
    tandem, best, default = (runs.get(k, {}) for k in ("tandem", "torch_best", "torch_default"))
    commands = read_commands(args.commands)
    out = ["## Latest run: autograd overhead", "",
           "Issue 4's benchmarks of recording the autograd tape (bench/autograd_workloads.h, in",
           "bench_core and bench_peer_torch; `./run bench autograd` reruns this section alone).",
           "Times are medians of the wall time per operation or step: **lower is better**. Targets:",
           "`a + b` with requires_grad <= 0.6 us; the MLP step <= 0.5x torch best (issue 4); the",
           "compiled MLP step (`tandem::compile` of a function returning the loss, the layers'",
           "parameters read by reference; its backward runs the backward program) and the whole",
           "compiled step (`tandem::compile` of a function doing zero_grad, forward, loss and",
           "backward itself: one program) <= 0.5x tandem's eager step (issue 12).", ""]
    out += run_lines(now(), args.command,
                     f"- 1-minute load average as each program started: {', '.join(loads) or '?'}"
                     " (well above 0 means something else was running and the times are noisy)", commands)
    out += ["", "| case | tandem | torch best | torch out of box | tandem / torch best | target |",
            "|---|---:|---:|---:|---:|---|"]
    names = [n for n in dict.fromkeys([*tandem, *best, *default]) if n.startswith("autograd/")]
    for n in names:
        c = n.split("/", 1)[1]
        t, p, d = ((r.get(n) or {}).get("ns") for r in (tandem, best, default))
        target = "-"
        if c in AUTOGRAD_TARGETS and isinstance(t, float):
            rule, limit = AUTOGRAD_TARGETS[c][:2]
            if rule == "tandem":
                other = AUTOGRAD_TARGETS[c][2]
                e = (tandem.get("autograd/" + other) or {}).get("ns")
                if isinstance(e, float) and e > 0:
                    target = f"<= {limit}x tandem's {other} ({t / e:.2f}x): {'met' if t / e <= limit else 'NOT met'}"
            elif rule == "abs":
                target = f"<= {fmt(limit)}: {'met' if t <= limit else 'NOT met'}"
            elif isinstance(p, float) and p > 0:
                target = f"<= {limit}x: {'met' if t / p <= limit else 'NOT met'}"
        out.append(f"| {AUTOGRAD_TITLES.get(c, c)} | {fmt(t)} | {fmt(p)} | {fmt(d)} | {ratio(t, p)} | {target} |")
    mem = [n for n in dict.fromkeys([*tandem, *best, *default]) if n.startswith("autograd_mem/")]
    for n in mem:
        out += ["", f"Memory of the tiny MLP step ({n.split('/', 1)[1]}), bytes (median of the repetitions; n/a: libtorch's",
                "CPU allocator keeps no statistics outside its profiler). Backward without retain_graph",
                "frees the whole tape, so the retained figures should be 0.", "",
                "| figure | tandem | torch best | torch out of box |", "|---|---:|---:|---:|"]
        for k, title in MEM_TITLES.items():
            vals = []
            for r in (tandem, best, default):
                v = (r.get(n) or {}).get(k)
                vals.append("-" if v is None else "n/a" if v < 0 else f"{v:,.0f}")
            out.append(f"| {title} | {' | '.join(vals)} |")
    return out


def write_section(path, name, lines):
    """Replaces section `name` of RESULTS.md (or adds it), keeping the other sections and
    the History section. An old file without markers keeps only its History."""
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    blocks = {}
    for sec in SECTIONS:
        b, e = f"<!-- begin:{sec} -->", f"<!-- end:{sec} -->"
        i, j = old.find(b), old.find(e)
        if i >= 0 and j > i:
            blocks[sec] = old[i:j + len(e)]
    blocks[name] = "\n".join([f"<!-- begin:{name} -->", *lines, f"<!-- end:{name} -->"])
    history = HISTORY_DEFAULT
    at = old.find("\n" + HISTORY + "\n")
    if at >= 0:
        history = old[at + 1:]
    body = "\n".join(header_lines()) + "\n" + "\n\n".join(blocks[s] for s in SECTIONS if s in blocks)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(body + "\n\n" + history)
    os.replace(tmp, path)  # atomic: an interrupted run never leaves half a file


PYTHON_TITLES = {
    "add_1elem": "`a + b`, 1-element float32 tensors, no grad",
    "add_1elem_requires_grad": "`a + b`, 1-element float32 leaves with requires_grad",
    "mlp16_step": "tiny MLP 16-16-16-1, batch 1: zero_grad(set_to_none) + forward + MSE + backward + SGD step",
}


def python_section(args):
    runs = read_runs(args.runs)
    tandem, best, default = (runs.get(k, {}) for k in ("tandem", "torch_best", "torch_default"))
    commands = read_commands(args.commands)
    out = ["## Latest run: Python per-op overhead", "",
           "Issue 15's benchmark (bench/bench_python.py; `./run bench python` reruns this section alone):",
           "tandem's Python package (Release build) against Debian's PyTorch 1.13 Python package, 2 threads,",
           "each library in its own process; the median over 7 repetitions of the mean time per call, so",
           "**lower is better**. Target: tandem <= 0.6x torch best for each case.", ""]
    out += run_lines(now(), args.command,
                     f"- 1-minute load average after the programs: {args.load} (well above 2 means something else"
                     " was running)", commands)
    out += ["", "| case | tandem | torch best | torch out of box | tandem / torch best | target |",
            "|---|---:|---:|---:|---:|---|"]
    for c in dict.fromkeys([*tandem, *best]):
        t, p = tandem.get(c), best.get(c)
        goal = f"<= 0.6x: {met(t <= 0.6 * p)}" if isinstance(t, float) and isinstance(p, float) else "-"
        out.append(f"| {PYTHON_TITLES.get(c, c)} | {fmt(t)} | {fmt(p)} | {fmt(default.get(c))} | {ratio(t, p)} | {goal} |")
    py_t, py_p, cx_t, cx_p = (runs.get(k, {}) for k in ("py_train_tandem", "py_train_torch_best", "cxx_train_tandem",
                                                         "cxx_train_torch_best"))
    if py_t:
        out += ["", "The Fashion-MNIST training steps written in Python (bench/bench_python_train.py: the models as",
                "nn.Sequential of the built-in layers, random batches of Fashion-MNIST shape, batch 128, mlp with",
                "SGD momentum, cnn with Adam; 'step' is the whole step compiled with tandem.compile) against the",
                "same steps from C++ in the same run (bench_train, and bench_peer_torch_train at its best), samples/s,",
                "the best of PY_TRAIN_PASSES interleaved passes of every program (default 5), **higher is better**. Targets: Python within 5% of tandem's C++ figure (Python / C++ >= 0.95), and",
                "ahead of PyTorch's Python figure by at least the ratio the C++ figures show.", "",
                "| model | mode | tandem Python | tandem C++ | Python / C++ | torch best Python | torch best C++ |"
                " tandem / torch, Python | tandem / torch, C++ | targets |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for model in ("mlp", "cnn"):
            for mode in ("eager", "step"):
                k = f"train/{model}_{mode}"
                t, c = py_t.get(k), cx_t.get(k)
                tp, cp = py_p.get(f"train/{model}_eager"), cx_p.get(f"train/{model}_eager")
                goals = "-"
                if all(isinstance(v, float) for v in (t, c, tp, cp)):
                    goals = (f"within 5%: {met(t >= 0.95 * c)}; ahead of torch by the C++ ratio: "
                             f"{met(t / tp >= c / cp)}")
                out.append(f"| {model} | {mode} | {num(t)} | {num(c)} | {ratio(t, c)} | {num(tp)} | {num(cp)} |"
                           f" {ratio(t, tp)} | {ratio(c, cp)} | {goals} |")
    return out


# Issue 13's budget target: at 50% of the unconstrained step's peak, the step at most this
# much slower than the unconstrained compiled step.
BUDGET_SLOWDOWN_TARGET = 1.25


def read_budget(path):
    """bench_budget's TSV -> list of row dicts (pct, budget, peak, ms, recomputed,
    offloaded, extra_ms, loss); '-' fields stay strings."""
    rows = []
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            vals = line.rstrip("\n").split("\t")
            row = dict(zip(head, vals))
            for k in ("budget", "peak", "offloaded", "recomputed", "split"):
                if row.get(k, "-") != "-":
                    row[k] = int(row[k])
            for k in ("ms", "extra_ms"):
                if row.get(k, "-") != "-":
                    row[k] = float(row[k])
            rows.append(row)
    return rows


def budget_svg(rows, path, title):
    """Two curves over the budget (MiB, falling to the right): measured peak (MiB) and step
    time (ms), as a small standalone SVG."""
    pts = [r for r in rows if r["pct"] not in ("eager", "none") and isinstance(r.get("peak"), int)]
    if not pts:
        return
    w, h, m = 640, 360, 60
    bmax = max(r["budget"] for r in pts) / 2**20
    bmin = min(r["budget"] for r in pts) / 2**20
    pmax = max(max(r["peak"] for r in pts) / 2**20, bmax)
    tmax = max(r["ms"] for r in pts) * 1.1

    def x(b):
        return m + (bmax - b) / max(bmax - bmin, 1e-9) * (w - 2 * m)

    def y(v, top):
        return h - m + 0 - v / top * (h - 2 * m)
    peak_line = " ".join(f"{x(r['budget'] / 2**20):.1f},{y(r['peak'] / 2**20, pmax):.1f}" for r in pts)
    budget_line = " ".join(f"{x(r['budget'] / 2**20):.1f},{y(r['budget'] / 2**20, pmax):.1f}" for r in pts)
    time_line = " ".join(f"{x(r['budget'] / 2**20):.1f},{y(r['ms'], tmax):.1f}" for r in pts)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="20" text-anchor="middle">{title} training step under a memory budget</text>',
             f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
             f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
             f'<line x1="{w - m}" y1="{m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle">budget (MiB): {bmax:.1f} to {bmin:.1f}</text>',
             f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle" fill="#1f77b4">'
             f'memory (MiB, 0 to {pmax:.1f})</text>',
             f'<text x="{w - 15}" y="{h / 2}" transform="rotate(90 {w - 15} {h / 2})" text-anchor="middle" '
             f'fill="#d62728">step time (ms, 0 to {tmax:.1f})</text>',
             f'<polyline points="{budget_line}" fill="none" stroke="#999" stroke-dasharray="4 3"/>',
             f'<polyline points="{peak_line}" fill="none" stroke="#1f77b4" stroke-width="2"/>',
             f'<polyline points="{time_line}" fill="none" stroke="#d62728" stroke-width="2"/>',
             f'<text x="{m + 10}" y="{m - 10}" fill="#1f77b4">measured peak</text>',
             f'<text x="{m + 120}" y="{m - 10}" fill="#999">budget</text>',
             f'<text x="{m + 190}" y="{m - 10}" fill="#d62728">step time</text>', "</svg>"]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(parts) + "\n")
    os.replace(tmp, path)


BUDGET_TITLES = {"cnn": "cnn (the reference model), Adam, batch 256",
                 "mlp": "mlp 784-512-512-512-10, Adam, batch 2048"}


def budget_section(args):
    commands = read_commands(args.commands)
    out = ["## Latest run: training under a memory budget", "",
           "Issue 13's budget sweep (bench/bench_budget.cpp; `./run bench budget` reruns this section alone): a",
           "whole training step (2 threads) compiled with `CompileOptions::memory_budget` at falling fractions",
           "of the unconstrained step's peak as the planner counts it (the program's values and new .grad",
           "tensors, plus each kernel's own allocations, measured by the first run), down to the smallest",
           "budget the planner reaches (\"min\", the figure its OutOfMemoryError names). Measured peak:",
           "allocator bytes above the level before one step (lower than the planner's figure by the old .grad",
           "tensors the step frees first). Time: median ms per step; every configuration is built and warmed up",
           "first, then timed in interleaved rounds (one round of each in turn), so the ratios compare steps run",
           "under the same machine conditions (this VM's speed drifts by tens of percent over minutes).",
           f"Target (cnn, batch 256): at 50% the step at most {BUDGET_SLOWDOWN_TARGET}x slower than unconstrained;",
           "the peak never above the budget nor rising as it falls; losses equal to eager's.", ""]
    out += run_lines(now(), args.command, f"- 1-minute load average before: {args.load}", commands)
    for spec in args.runs:
        label, path = spec.split("=", 1)
        svg = os.path.join(os.path.dirname(args.svg), f"budget_curve_{label}.svg")
        out += ["", f"### {BUDGET_TITLES.get(label, label)}", "", f"Plot: bench/{os.path.basename(svg)}.", ""]
        out += budget_table(read_budget(path), svg, label)
    return out


def budget_table(rows, svg, label):
    budget_svg(rows, svg, label)
    by = {r["pct"]: r for r in rows}
    full = by.get("none", {})
    out = ["| budget | bytes | measured peak | peak <= budget | ms / step | vs unconstrained | recomputed values |"
           " split by batch | offloaded | est. extra ms | loss after 6 steps |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    last_peak = None
    monotone = True
    for r in rows:
        if r["pct"] in ("eager", "none"):
            name = "eager (no program)" if r["pct"] == "eager" else "compiled, no budget"
            out.append(f"| {name} | - | {mib(r['peak'])} | - | {r['ms']:.2f} | "
                       f"{ratio(r['ms'], full.get('ms')) if full else '-'} | - | - | - | - | {r['loss']} (vs eager) |")
            continue
        if not isinstance(r.get("peak"), int):
            continue
        ok = r["peak"] <= r["budget"]
        if last_peak is not None and r["peak"] > last_peak:
            monotone = False
        last_peak = r["peak"]
        name = "min" if r["pct"] == "min" else f"{r['pct']}%"
        out.append(f"| {name} | {mib(r['budget'])} | {mib(r['peak'])} | {met(ok)} | {r['ms']:.2f} | "
                   f"{ratio(r['ms'], full.get('ms'))} | {r['recomputed']} | {r.get('split', '-')} | {mib(r['offloaded'])} | "
                   f"{r['extra_ms']:.2f} | {r['loss']} |")
    half = by.get("50") if label == "cnn" else None  # the target is the cnn's
    out.append("")
    if label != "cnn":
        pass
    elif half and full:
        slow = half["ms"] / full["ms"]
        out.append(f"- At 50%: {slow:.2f}x the unconstrained step's time (target <= {BUDGET_SLOWDOWN_TARGET}x: "
                   f"{met(slow <= BUDGET_SLOWDOWN_TARGET)}).")
    elif full and "min" in by:
        out.append(f"- 50% is below the smallest reachable peak ({mib(by['min']['budget'])} = "
                   f"{100 * by['min']['budget'] / full['budget']:.0f}% of the unconstrained estimate): target NOT met.")
    out.append(f"- Peak never rises as the budget falls: {met(monotone)}.")
    return out


def budget_cmd(args):
    write_section(args.out, "budget", budget_section(args))
# Networks of the scaling projection: (label, bandwidth in bytes/s, per-message latency in s).
DDP_NETS = (("10 Gbit/s (TCP, 30 us)", 10e9 / 8, 30e-6), ("100 Gbit/s (RDMA, 3 us)", 100e9 / 8, 3e-6))
DDP_RANKS = (8, 64, 512)


def ddp_projection(run, p, bandwidth, latency):
    """Projected efficiency at p ranks (see the section's formula): ring all-reduce per
    bucket, buckets started in order when ready and run one after another, overlapping the
    rest of backward; returns (efficiency, exposed ms)."""
    f, o = run["forward_ms"], run["optimizer_ms"]
    b = max(run["backward_ms"] - run["wait_ms"], 1e-9)  # backward's own computation
    end = 0.0
    for bk in run["buckets"]:
        c = 1e3 * (2 * (p - 1) * latency + 2 * (p - 1) / p * bk["bytes"] / bandwidth)
        end = max(bk["ready_ms"], end) + c
    exposed = max(0.0, end - b)
    return (f + b + o) / (f + b + o + exposed), exposed


def ddp_section(args):
    runs = {}
    for spec in args.runs:
        label, path = spec.split("=", 1)
        with open(path) as fh:
            runs[label] = json.load(fh)
    commands = read_commands(args.commands)
    out = ["## Latest run: data-parallel training over MPI", "",
           "Issue 17's benchmark (bench/bench_ddp.cpp; `./run bench ddp` reruns this section alone): the",
           "training step (zero_grad, forward, cross-entropy, backward, SGD step) of the reference models on",
           "synthetic Fashion-MNIST-shaped batches, medians over the timed steps. **2 ranks x 1 thread**:",
           "`mpirun -np 2`, each rank bound to a core, batch 64 per rank (global 128), gradients averaged by",
           "DistributedDataParallel (OpenMPI over shared memory); **1 rank x 2 threads**: one process, batch",
           "128, no DDP. Higher samples/s is better.", ""]
    out += run_lines(args.date or now(), args.command,
                     f"- 1-minute load average after the programs: {args.load} (well above 2 means something else"
                     " was running)", commands)
    out += ["", "| model | setup | samples/s | step ms | forward ms | backward ms | of it: end-of-backward wait ms |"
            " optimizer ms | buckets | sync cost ms | all-reduces alone ms | hidden |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for model in ("mlp", "cnn"):
        base = runs.get(f"{model}_2x1_nocomm")
        for key, setup in ((f"{model}_1x2", "1 rank x 2 threads"),
                           (f"{model}_2x1_nocomm", "2 independent ranks x 1 thread (no communication)"),
                           (f"{model}_2x1", "2 ranks x 1 thread, DDP, 25 MiB bucket cap"),
                           (f"{model}_2x1_small", "2 ranks x 1 thread, DDP, 256 KiB bucket cap")):
            r = runs.get(key)
            if not r:
                continue
            head = (f"| {model} | {setup} | {r['samples_per_s'] * (2 if key.endswith('nocomm') else 1):.0f} |"
                    f" {r['step_ms']:.2f} | {r['forward_ms']:.2f} | {r['backward_ms']:.2f} |")
            if not r["ddp"]:
                out.append(head + f" - | {r['optimizer_ms']:.2f} | - | - | - | - |")
                continue
            sync, hidden = "-", "-"
            if base:
                d = r["step_ms"] - base["step_ms"]
                sync = f"{d:.2f}"
                if r["comm_serial_ms"] > 0:
                    hidden = f"{100 * min(1.0, max(0.0, 1 - d / r['comm_serial_ms'])):.0f}%"
            out.append(head + f" {r['wait_ms']:.2f} | {r['optimizer_ms']:.2f} | {len(r['buckets'])} | {sync} |"
                       f" {r['comm_serial_ms']:.2f} | {hidden} |")
    if any(f"{m}_2x1" in runs and f"{m}_2x1_nocomm" not in runs for m in ("mlp", "cnn")):
        out += ["", "This run has no no-communication baseline (it predates it), so sync cost and hidden share are",
                "not given; `./run bench ddp` measures them."]
    out += ["", "samples/s counts both ranks (the no-communication row: twice one rank's rate). **Sync cost** = DDP",
            "step - the step of two independent ranks on the same cores: communication, the bucket copies and",
            "the ranks waiting for each other (skew) together. **All-reduces alone** = each bucket's",
            "all-reduce timed by itself, summed. **Hidden** = 1 - sync cost / all-reduces alone (0% when the",
            "sync cost is at least the communication's own time). The end-of-backward wait is the exposed",
            "part as one rank sees it; it includes waiting for the slower rank.", "",
            "Per-bucket timeline of the 256 KiB runs (ms after backward's start; \"done\" is when a progress",
            "check saw it finish; all-reduce alone):", ""]
    for model in ("mlp", "cnn"):
        r = runs.get(f"{model}_2x1_small")
        if not r:
            continue
        cells = [f"{bk['bytes'] / 1024:.0f} KiB: ready {bk['ready_ms']:.2f}, start {bk['launch_ms']:.2f},"
                 f" done {bk['done_ms']:.2f}, alone {bk['allreduce_ms']:.3f}" for bk in r["buckets"]]
        out.append(f"- {model}: backward {r['backward_ms']:.2f} ms; " + "; ".join(cells))
    out += ["", "OpenMPI advances a non-blocking all-reduce only inside MPI calls on the rank's thread; DDP",
            "makes them at every gradient hook. In the CNN the first buckets start ~1 ms into backward, but",
            "no hook runs during the convolutions' backward (tens of ms, a few engine nodes), so they finish",
            "only when the conv gradients arrive: the overlap is real in the timeline (started before",
            "backward ends) but little communication actually moves meanwhile. A progress thread",
            "(MPI_THREAD_MULTIPLE) or polling between engine nodes would fix that; not done yet.", ""]
    out += ["", "### Scaling projection beyond one machine", "",
            "Weak scaling (batch 64 per rank), from the 2 x 1 runs' measured forward F, backward computation B",
            "(backward minus the end-of-backward wait), optimizer O, and each bucket's size n_i and ready time r_i",
            "(ms after backward's start). Ring all-reduce of n bytes over p ranks on links of bandwidth bw",
            "and per-message latency a: `c(n, p) = 2 (p - 1) a + 2 (p - 1) / p * n / bw`. Buckets start in",
            "order when ready and run one at a time: `s_i = max(r_i, e_(i-1))`, `e_i = s_i + c(n_i, p)`;",
            "exposed = `max(0, e_last - B)`; efficiency = `(F + B + O) / (F + B + O + exposed)`. Compute per",
            "rank stays as measured here (1 core per rank); no hierarchy, no compression, no gradient",
            "bucketing beyond what DDP did.", "",
            "| model | buckets | network | 8 ranks | 64 ranks | 512 ranks |", "|---|---|---|---:|---:|---:|"]
    for model in ("mlp", "cnn"):
        for key, label in ((f"{model}_2x1", "cap 25 MiB"), (f"{model}_2x1_small", "cap 256 KiB")):
            r = runs.get(key)
            if not r:
                continue
            for net, bw, lat in DDP_NETS:
                cells = []
                for p in DDP_RANKS:
                    e, x = ddp_projection(r, p, bw, lat)
                    cells.append(f"{100 * e:.0f}% ({x:.1f} ms exposed)")
                out.append(f"| {model} | {len(r['buckets'])} ({label}) | {net} | " + " | ".join(cells) + " |")
    out += ["", "Anchor: PyTorch's DDP paper (Li et al., \"PyTorch Distributed: Experiences on Accelerating Data",
            "Parallel Training\", VLDB 2020) reports near-linear scaling to 256 GPUs for ResNet50 and BERT",
            "with NCCL, whose steps are hundreds of ms of GPU compute against tens of MB of gradients. These",
            "models are the opposite case: a few ms of compute per step and 1-2 MB of gradients, so",
            "per-message latency, not bandwidth, dominates at many ranks (the ring's 2 (p - 1) steps), and",
            "the projection says so. (The paper's abstract, arXiv 2006.15704: near-linear scalability on",
            "256 GPUs with PyTorch 1.5's bucketing, overlap and skipped synchronisation; its per-figure",
            "numbers were not available offline to quote.)"]
    return out


def onnx_section(args):
    commands = read_commands(args.commands)
    with open(args.run) as f:
        head = f.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    out = ["## Latest run: ONNX import", "",
           "Issue 18's benchmark (bench/bench_onnx.cpp; `./run bench onnx` reruns this section alone): the models",
           "of Debian's ONNX backend test suite (libonnx-testdata 1.12) through tandem's importer, 2 threads,",
           "inference under no_grad (tandem only: libtorch has no ONNX importer). Per pytorch-converted model:",
           "the time to load it and run it once, then the median time per call eagerly and through",
           "`tandem::compile(model)` after its first (capturing) call, whose time is \"compile\"; \"compiled\" means",
           "the program ran and its outputs equal eager's bitwise, \"eager fallback\" that the call ran eagerly.", ""]
    out += run_lines(now(), args.command, f"- 1-minute load average before: {args.load}", commands)
    for r in rows:
        if r["case"].startswith("largest:"):
            name = r["case"].split(":", 1)[1]
            if r["status"].startswith("unsupported"):
                out += ["", f"Largest model of the suite: {name} ({int(r['bytes']):,} bytes): {r['status']}."]
            else:
                out += ["", f"Largest model of the suite: {name} ({int(r['bytes']):,} bytes of model and inputs):",
                        f"cold (the process's first load) {r['load_ms']} ms to load and {r['first_ms']} ms to run once;",
                        f"warm, load + first run {float(r['eager_us']) / 1e3:.3f} ms (median of 5)."]
    out += ["", "| model | bytes | load ms | first run ms | eager us | compile ms | compiled us | compiled / eager | compiled |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    ratios = []
    for r in rows:
        if r["case"].startswith("largest:"):
            continue
        q = "-"
        try:
            e, c = float(r["eager_us"]), float(r["compiled_us"])
            q = f"{c / e:.2f}"
            if r["status"] == "compiled":
                ratios.append(c / e)
        except ValueError:
            pass
        status = re.sub(r"\[onnx\] \S*model\.onnx: ", "", r["status"])
        out.append(f"| {r['case']} | {r['bytes']} | {r['load_ms']} | {r['first_ms']} | {r['eager_us']} | "
                   f"{r['compile_ms']} | {r['compiled_us']} | {q} | {status} |")
    counts = {}
    for r in rows:
        if not r["case"].startswith("largest:"):
            k = "unsupported" if r["status"].startswith("unsupported") else r["status"]
            counts[k] = counts.get(k, 0) + 1
    out += ["", "- Models: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + "."]
    if ratios:
        ratios.sort()
        geo = 1.0
        for x in ratios:
            geo *= x
        geo **= 1.0 / len(ratios)
        out.append(f"- Compiled / eager time over the {len(ratios)} compiled models: geometric mean {geo:.2f}, "
                   f"median {ratios[len(ratios) // 2]:.2f}, range {ratios[0]:.2f} to {ratios[-1]:.2f}.")
    if counts.get("DIFFERENT"):
        out.append(f"- **{counts['DIFFERENT']} model(s) gave compiled outputs different from eager.**")
    return out


def onnx_cmd(args):
    write_section(args.out, "onnx", onnx_section(args))


def ddp_cmd(args):
    write_section(args.out, "ddp", ddp_section(args))


def python_cmd(args):
    write_section(args.out, "python", python_section(args))


def md(args):
    write_section(args.out, "ops" if args.ops else "core", core_section(args))


def autograd(args):
    write_section(args.out, "autograd", autograd_section(args))


def train(args):
    write_section(args.out, "train", train_section(args))


def compile_cmd(args):
    write_section(args.out, "compile", compile_section(args))


def section_parser(sub, name):
    """A subcommand that rewrites one section: --out RESULTS.md, --command (what the user ran),
    --commands (the file of program command lines)."""
    p = sub.add_parser(name)
    p.add_argument("--out", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--commands", required=True, help="file with one program command line per line")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tsv")
    t.add_argument("json")
    m = section_parser(sub, "md")
    m.add_argument("--ops", action="store_true", help="the ops section (bench_ops) instead of core")
    m.add_argument("runs", nargs="+", help="LABEL=RUN.tsv")
    ag = section_parser(sub, "autograd")
    ag.add_argument("runs", nargs="+", help="LABEL=RUN.json")
    tr = section_parser(sub, "train")
    tr.add_argument("--load", default="?", help="1-minute load average before the run")
    tr.add_argument("runs", nargs="+", help="LABEL=RUN.tsv")
    am = section_parser(sub, "amp")
    am.add_argument("--load", default="?", help="1-minute load average before the run")
    am.add_argument("runs", nargs="+", help="LABEL=RUN.tsv")
    py = section_parser(sub, "python")
    py.add_argument("--load", default="?", help="1-minute load average after the run")
    py.add_argument("runs", nargs="+", help="LABEL=RUN.tsv")
    b = section_parser(sub, "budget")
    b.add_argument("--load", default="?", help="1-minute load average before the run")
    b.add_argument("--svg", required=True, help="a path in the plots' directory (bench/budget_curve_LABEL.svg)")
    b.add_argument("runs", nargs="+", help="LABEL=bench_budget output (cnn, mlp)")
    dd = section_parser(sub, "ddp")
    dd.add_argument("--load", default="?", help="1-minute load average after the run")
    dd.add_argument("--date", default="", help="when the programs ran (default: now)")
    dd.add_argument("runs", nargs="+", help="LABEL=RUN.json (bench_ddp --json)")
    ox = section_parser(sub, "onnx")
    ox.add_argument("--load", default="?", help="1-minute load average before the run")
    ox.add_argument("run", help="bench_onnx output (TSV)")
    c = section_parser(sub, "compile")
    c.add_argument("tandem", help="bench_compile JSON")
    c.add_argument("torch", help="bench_peer_torch_compile JSON")
    args = ap.parse_args()
    if args.cmd == "tsv":
        tsv(args.json)
    elif args.cmd == "md":
        md(args)
    elif args.cmd == "compile":
        compile_cmd(args)
    elif args.cmd == "autograd":
        autograd(args)
    elif args.cmd == "python":
        python_cmd(args)
    elif args.cmd == "budget":
        budget_cmd(args)
    elif args.cmd == "ddp":
        ddp_cmd(args)
    elif args.cmd == "onnx":
        onnx_cmd(args)
    elif args.cmd == "amp":
        amp_cmd(args)
    else:
        train(args)


if __name__ == "__main__":
    sys.exit(main())
