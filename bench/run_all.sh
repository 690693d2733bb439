#!/usr/bin/env bash
# Runs the benchmarks on the libtorch peer, out of the box and at its best, then on tandem, and
# rewrites their section of bench/RESULTS.md (the other section and "## History" are kept).
#   bench/run_all.sh [BUILD_DIR] [all|core|autograd|train|amp|compile|ops|python]   default build-bench (`./run
#                                                    bench` configures it) and all
#   core:  the Google Benchmark workloads of bench/workloads.h (bench_core, bench_peer_torch)
#   autograd: the tape-overhead workloads of bench/autograd_workloads.h (the same programs,
#          cases autograd/* and autograd_mem/*; core leaves them out)
#   train: the training step of the two reference models (bench_train eager, --mode
#          compiled and --mode step, bench_peer_torch_train; bench/train_harness.h), each
#          model and mode in its own process
#   amp:   issue 16's mixed precision: the same training steps at batch 128 and 256, float32
#          against bfloat16 autocast (`--precision bf16`), tandem eager and whole-step compiled
#          against torch best with and without its CPU bfloat16 autocast
#   compile: CNN inference, tandem eager/compiled vs torch eager/TorchScript (bench_compile,
#          bench_peer_torch_compile; bench/cnn_workload.h)
#   ops:   matrix products and convolution (bench_ops, bench_peer_torch_ops;
#          bench/ops_workloads.h)
#   budget: the cnn and a wide mlp step compiled under falling memory budgets (bench_budget;
#          tables and bench/budget_curve_{cnn,mlp}.svg)
#   python: per-op overhead of the Python modules (bench/bench_python.py: tandem's package
#          from $BUILD_DIR/python against Debian's python3-torch) and the training steps
#          from Python against the same steps from C++ (bench/bench_python_train.py)
#   ddp:   data-parallel training over MPI (bench_ddp): 2 ranks x 1 thread under mpirun vs
#          1 process x 2 threads, mlp and cnn, and the scaling projection (tandem only)
#   onnx:  the ONNX backend test suite's models (bench_onnx): load and first-run time of the
#          largest, eager vs compiled inference per pytorch-converted model (tandem only)
#   ONNX_FLAGS="--seconds 0.5" bench/run_all.sh   flags for bench_onnx
#   BENCH_FLAGS="--benchmark_filter=add" bench/run_all.sh   extra Google Benchmark flags (core)
#   TRAIN_FLAGS="--rounds 3 --seconds 1" bench/run_all.sh   flags for the training programs
#   TRAIN_PASSES=1 bench/run_all.sh train   passes of the training part (default 3, best kept)
#   AMP_PASSES=1 bench/run_all.sh amp   passes of the mixed-precision part (default 3, best kept)
#   COMPILE_FLAGS="--benchmark_filter=b128" bench/run_all.sh   extra flags (compile part)
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

build=${1:-build-bench}
what=${2:-all}
case $what in all | core | autograd | train | amp | compile | ops | python | budget | ddp | onnx) ;; *) echo "run_all.sh: unknown part '$what' (all, core, autograd, train, amp, compile, ops, python, budget, ddp or onnx)" >&2; exit 2 ;; esac
out=$build/bench-out
py=/usr/bin/python3  # Debian's python; the first python3 on PATH may be another one
bins=()
[[ $what == all || $what == core || $what == autograd ]] && bins+=(bench_core bench_peer_torch)
[[ $what == all || $what == train || $what == amp || $what == python ]] && bins+=(bench_train bench_peer_torch_train)
[[ $what == all || $what == compile ]] && bins+=(bench_compile bench_peer_torch_compile)
[[ $what == all || $what == ops ]] && bins+=(bench_ops bench_peer_torch_ops)
[[ $what == all || $what == budget ]] && bins+=(bench_budget)
[[ $what == all || $what == onnx ]] && bins+=(bench_onnx)
for bin in "${bins[@]}"; do
  [[ -x $build/bench/$bin ]] || { echo "run_all.sh: no $build/bench/$bin; build it with ./run bench" >&2; exit 1; }
done
mkdir -p "$out"
command="${BENCH_COMMAND:-bench/run_all.sh${*:+ $*}}"

# Debian's OpenBLAS misdetects recent CPUs; name the best kernel family the CPU supports
# (a SkylakeX kernel on a CPU without AVX-512 would die with SIGILL).
coretype=
if grep -qw avx512f /proc/cpuinfo; then coretype=SkylakeX
elif grep -qw avx2 /proc/cpuinfo; then coretype=Haswell; fi
# "torch best": PyTorch's CPU tuning guides' settings (issue 14, ../shared/FACTS.md). tcmalloc
# preloaded (libtcmalloc-minimal4, in ./run's BENCH_PKGS): with glibc's malloc libtorch
# page-faults its large buffers on every step (jemalloc's default decay made the cnn 3x
# slower here, so not jemalloc); libgomp's threads sleep instead of busy-waiting; OpenBLAS's
# kernel family named. "out of box" sets none of them.
# The package's file list names it (the multiarch directory differs between machines).
tcmalloc=$(dpkg -L libtcmalloc-minimal4 2>/dev/null | grep -m1 '/libtcmalloc_minimal\.so\.4$' || true)
[[ -n $tcmalloc && -e $tcmalloc ]] || {
  echo "run_all.sh: no libtcmalloc_minimal.so.4 (apt-get install libtcmalloc-minimal4; ./run bench does)" >&2
  exit 1
}
best=(LD_PRELOAD="$tcmalloc" OMP_WAIT_POLICY=PASSIVE ${coretype:+OPENBLAS_CORETYPE=$coretype})
# Only the given tuning variables reach a program (the caller's are removed).
clean_env=(env -u LD_PRELOAD -u OPENBLAS_CORETYPE -u OMP_WAIT_POLICY)

# ---------------------------------------------------------------- core (Google Benchmark)
if [[ $what == all || $what == core ]]; then
  : > "$out/commands.txt"
  # Medians of 5 repetitions; a short minimum time keeps the whole run near a minute.
  flags=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2)
  read -r -a extra <<< "${BENCH_FLAGS:-}"

  # run_one LABEL PROGRAM [VAR=VALUE...]: keeps the program's JSON and the TSV form
  # `case<TAB>ns<TAB>unit`.
  run_one() {
    local label=$1 prog=$2
    shift 2
    local cmd=("${clean_env[@]}" "$@" "$build/bench/$prog" "${flags[@]}" --benchmark_filter=-^autograd "${extra[@]}")
    echo "== $label: ${cmd[*]}"
    echo "${cmd[*]}" >> "$out/commands.txt"
    "${cmd[@]}" --benchmark_out="$out/$label.json" --benchmark_out_format=json
    "$py" bench/report.py tsv "$out/$label.json" > "$out/$label.tsv"
  }

  run_one torch_default bench_peer_torch
  run_one torch_best bench_peer_torch "${best[@]}"
  run_one tandem bench_core

  "$py" bench/report.py md --out bench/RESULTS.md --command "$command" --commands "$out/commands.txt" \
    tandem="$out/tandem.tsv" torch_best="$out/torch_best.tsv" torch_default="$out/torch_default.tsv"
  for label in tandem torch_best torch_default; do sed "s/^/$label\t/" "$out/$label.tsv"; done
fi

# ---------------------------------------------------------------- autograd (issue 4)
if [[ $what == all || $what == autograd ]]; then
  : > "$out/autograd_commands.txt"
  read -r -a extra <<< "${BENCH_FLAGS:-}"
  for label in torch_default torch_best tandem; do
    prog=bench_core env=()
    [[ $label != tandem ]] && prog=bench_peer_torch
    [[ $label == torch_best ]] && env=("${best[@]}")
    cmd=("${clean_env[@]}" "${env[@]}" "$build/bench/$prog" --benchmark_repetitions=5
      --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 --benchmark_filter=^autograd "${extra[@]}")
    echo "== autograd $label: ${cmd[*]}"
    echo "${cmd[*]}" >> "$out/autograd_commands.txt"
    "${cmd[@]}" --benchmark_out="$out/autograd_$label.json" --benchmark_out_format=json
  done
  "$py" bench/report.py autograd --out bench/RESULTS.md --command "$command" --commands "$out/autograd_commands.txt" \
    tandem="$out/autograd_tandem.json" torch_best="$out/autograd_torch_best.json" \
    torch_default="$out/autograd_torch_default.json"
fi

# fastest_pass FILE...: the one of a program's per-pass outputs with the highest `train/`
# rate (the training and mixed-precision parts keep that pass's lines).
fastest_pass() {
  local f
  for f in "$@"; do awk -F'\t' -v f="$f" '$1 ~ /^train\// {print $2 "\t" f}' "$f"; done | sort -g -r | head -1 | cut -f2
}

# ---------------------------------------------------------------- training step
if [[ $what == all || $what == train ]]; then
  : > "$out/train_commands.txt"
  read -r -a tflags <<< "${TRAIN_FLAGS:-}"
  for label in tandem tandem_compiled tandem_step torch_best torch_default; do : > "$out/train_$label.tsv"; done
  # train_one LABEL PROGRAM MODEL [ARG...] [-- VAR=VALUE...]: one model in one process (its
  # own peak RSS); ARGs go to the program, VAR=VALUEs to its environment. Each pass's output
  # goes to its own file.
  train_one() {
    local label=$1 prog=$2 model=$3 args=() vars=()
    shift 3
    while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
    (($#)) && shift
    vars=("$@")
    local cmd=("${clean_env[@]}" "${vars[@]}" "$build/bench/$prog" --model "$model" "${args[@]}" "${tflags[@]}")
    echo "== train $label $model (pass $pass): ${cmd[*]}"
    ((pass == 1)) && echo "${cmd[*]}" >> "$out/train_commands.txt"
    "${cmd[@]}" > "$out/train_${label}_${model}_$pass.tsv"
  }
  load=$(cut -d' ' -f1 /proc/loadavg)
  # The five programs alternate per model, so a change in machine load hits all of them, in
  # TRAIN_PASSES passes (default 3); each program keeps its pass with the highest rate (all
  # of that pass's lines): on this VM identical runs minutes apart differ by up to 40%.
  passes=${TRAIN_PASSES:-3}
  for ((pass = 1; pass <= passes; ++pass)); do
    for model in mlp cnn; do
      train_one torch_default bench_peer_torch_train "$model"
      train_one torch_best bench_peer_torch_train "$model" -- "${best[@]}"
      train_one tandem bench_train "$model"
      train_one tandem_compiled bench_train "$model" --mode compiled
      train_one tandem_step bench_train "$model" --mode step
    done
  done
  for label in tandem tandem_compiled tandem_step torch_best torch_default; do
    for model in mlp cnn; do
      cat "$(fastest_pass "$out/train_${label}_${model}"_*.tsv)" >> "$out/train_$label.tsv"
    done
  done
  "$py" bench/report.py train --out bench/RESULTS.md --command "$command" --commands "$out/train_commands.txt" \
    --load "$load" \
    tandem="$out/train_tandem.tsv" tandem_compiled="$out/train_tandem_compiled.tsv" \
    tandem_step="$out/train_tandem_step.tsv" torch_best="$out/train_torch_best.tsv" torch_default="$out/train_torch_default.tsv"
  for label in tandem tandem_compiled tandem_step torch_best torch_default; do sed "s/^/$label\t/" "$out/train_$label.tsv"; done
fi

# ---------------------------------------------------------------- mixed precision (issue 16)
if [[ $what == all || $what == amp ]]; then
  : > "$out/amp_commands.txt"
  read -r -a tflags <<< "${TRAIN_FLAGS:-}"
  labels=(torch_best torch_best_bf16 tandem tandem_bf16 tandem_step tandem_step_bf16)
  for label in "${labels[@]}"; do : > "$out/amp_$label.tsv"; done
  # amp_one LABEL PROGRAM MODEL BATCH [ARG...] [-- VAR=VALUE...]: one run in one process.
  amp_one() {
    local label=$1 prog=$2 model=$3 batch=$4 args=() vars=()
    shift 4
    while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
    (($#)) && shift
    vars=("$@")
    local cmd=("${clean_env[@]}" "${vars[@]}" "$build/bench/$prog" --model "$model" --batch "$batch" "${args[@]}"
      "${tflags[@]}")
    echo "== amp $label $model b$batch (pass $pass): ${cmd[*]}"
    ((pass == 1)) && echo "${cmd[*]}" >> "$out/amp_commands.txt"
    "${cmd[@]}" > "$out/amp_${label}_${model}_${batch}_$pass.tsv"
  }
  load=$(cut -d' ' -f1 /proc/loadavg)
  # Per model and batch the six programs run one after the other, so a change in machine
  # load hits all of them, in AMP_PASSES passes (default 3); each program keeps its pass
  # with the highest rate (all of that pass's lines), as the training part does.
  passes=${AMP_PASSES:-3}
  for ((pass = 1; pass <= passes; ++pass)); do
    for model in mlp cnn; do
      for batch in 128 256; do
        amp_one torch_best bench_peer_torch_train "$model" "$batch" -- "${best[@]}"
        amp_one torch_best_bf16 bench_peer_torch_train "$model" "$batch" --precision bf16 -- "${best[@]}"
        amp_one tandem bench_train "$model" "$batch"
        amp_one tandem_bf16 bench_train "$model" "$batch" --precision bf16
        amp_one tandem_step bench_train "$model" "$batch" --mode step
        amp_one tandem_step_bf16 bench_train "$model" "$batch" --mode step --precision bf16
      done
    done
  done
  for label in "${labels[@]}"; do
    for model in mlp cnn; do
      for batch in 128 256; do
        cat "$(fastest_pass "$out/amp_${label}_${model}_${batch}"_*.tsv)" >> "$out/amp_$label.tsv"
      done
    done
  done
  specs=()
  for label in "${labels[@]}"; do specs+=("$label=$out/amp_$label.tsv"); done
  "$py" bench/report.py amp --out bench/RESULTS.md --command "$command" --commands "$out/amp_commands.txt" \
    --load "$load" "${specs[@]}"
  for label in "${labels[@]}"; do sed "s/^/$label\t/" "$out/amp_$label.tsv"; done
fi

# gbench_one PART LABEL PROGRAM [VAR=VALUE...]: one Google Benchmark program (medians of 5
# repetitions, extra flags from the array gextra), its JSON kept as $out/PART_LABEL.json
# and its command line in $out/PART_commands.txt.
gbench_one() {
  local part=$1 label=$2 prog=$3
  shift 3
  local cmd=("${clean_env[@]}" "$@" "$build/bench/$prog" --benchmark_repetitions=5
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.3 "${gextra[@]}")
  echo "== $part $label: ${cmd[*]}"
  echo "${cmd[*]}" >> "$out/${part}_commands.txt"
  "${cmd[@]}" --benchmark_out="$out/${part}_$label.json" --benchmark_out_format=json
}

# ---------------------------------------------------------------- compiled mode
# torch best only: the target compares tandem compiled with torch's best.
if [[ $what == all || $what == compile ]]; then
  : > "$out/compile_commands.txt"
  read -r -a gextra <<< "${COMPILE_FLAGS:-}"
  gbench_one compile torch_best bench_peer_torch_compile "${best[@]}"
  gbench_one compile tandem bench_compile
  "$py" bench/report.py compile --out bench/RESULTS.md --command "$command" --commands "$out/compile_commands.txt" \
    "$out/compile_tandem.json" "$out/compile_torch_best.json"
fi
# ---------------------------------------------------------------- matrix products, convolution
if [[ $what == all || $what == ops ]]; then
  : > "$out/ops_commands.txt"
  read -r -a gextra <<< "${BENCH_FLAGS:-}"
  for run in "torch_default bench_peer_torch_ops" "torch_best bench_peer_torch_ops" "tandem bench_ops"; do
    read -r label prog <<< "$run"
    env=()
    [[ $label == torch_best ]] && env=("${best[@]}")
    gbench_one ops "$label" "$prog" "${env[@]}"
    "$py" bench/report.py tsv "$out/ops_$label.json" > "$out/ops_$label.tsv"
  done
  "$py" bench/report.py md --ops --out bench/RESULTS.md --command "$command" --commands "$out/ops_commands.txt" \
    tandem="$out/ops_tandem.tsv" torch_best="$out/ops_torch_best.tsv" torch_default="$out/ops_torch_default.tsv"
fi
# ---------------------------------------------------------------- Python per-op overhead
if [[ $what == all || $what == python ]]; then
  [[ -f $build/python/tandem/__init__.py ]] || { echo "run_all.sh: no $build/python/tandem; build it with ./run bench" >&2; exit 1; }
  : > "$out/python_commands.txt"
  # py_one LABEL SCRIPT TSV: SCRIPT under Debian's python3 for LABEL (torch_default,
  # torch_best or tandem), its output into TSV.
  py_one() {
    local label=$1 script=$2 tsv=$3 lib=torch env=()
    [[ $label == torch_best ]] && env=("${best[@]}")
    [[ $label == tandem ]] && lib=tandem env=(PYTHONPATH="$build/python")
    local cmd=("${clean_env[@]}" "${env[@]}" "$py" "$script" "$lib")
    echo "== python $label: ${cmd[*]}"
    echo "${cmd[*]}" >> "$out/python_commands.txt"
    "${cmd[@]}" > "$tsv"
  }
  for label in torch_default torch_best tandem; do py_one "$label" bench/bench_python.py "$out/python_$label.tsv"; done
  # The Fashion-MNIST training steps written in Python (bench/bench_python_train.py) against
  # the same steps from C++ (bench_train, bench_peer_torch_train), tandem and torch best, in
  # PY_TRAIN_PASSES interleaved passes (default 5), each program's best pass kept: on this VM
  # identical runs minutes apart differ by up to 40%, and the targets compare ratios near 1.
  passes=${PY_TRAIN_PASSES:-5}
  for ((pass = 1; pass <= passes; ++pass)); do
    for label in tandem torch_best; do py_one "$label" bench/bench_python_train.py "$out/python_train_${label}_$pass.tsv"; done
    : > "$out/cxx_train_tandem_$pass.tsv"
    : > "$out/cxx_train_torch_best_$pass.tsv"
    for model in mlp cnn; do
      for mode in eager step; do
        cmd=("${clean_env[@]}" "$build/bench/bench_train" --model "$model" --mode "$mode")
        echo "${cmd[*]}" >> "$out/python_commands.txt"
        "${cmd[@]}" | awk -v k="train/${model}_$mode" '$1 ~ /^train\// {print k "\t" $2 "\t" $3}' >> "$out/cxx_train_tandem_$pass.tsv"
      done
      cmd=("${clean_env[@]}" "${best[@]}" "$build/bench/bench_peer_torch_train" --model "$model")
      echo "${cmd[*]}" >> "$out/python_commands.txt"
      "${cmd[@]}" | awk -v k="train/${model}_eager" '$1 ~ /^train\// {print k "\t" $2 "\t" $3}' >> "$out/cxx_train_torch_best_$pass.tsv"
    done
  done
  # Each key's highest rate over the passes (lines: key, rate, unit).
  for f in python_train_tandem python_train_torch_best cxx_train_tandem cxx_train_torch_best; do
    cat "$out/${f}"_*.tsv | awk -F'\t' '$1 ~ /^train\// { if (!($1 in r) || $2 + 0 > r[$1] + 0) { r[$1] = $2; u[$1] = $3 }; if (!($1 in o)) o[$1] = n++ }
      END { for (k in o) print o[k] "\t" k "\t" r[k] "\t" u[k] }' | sort -n | cut -f2- > "$out/$f.tsv"
  done
  "$py" bench/report.py python --out bench/RESULTS.md --command "$command" --commands "$out/python_commands.txt" \
    --load "$(cut -d' ' -f1 /proc/loadavg)" \
    tandem="$out/python_tandem.tsv" torch_best="$out/python_torch_best.tsv" torch_default="$out/python_torch_default.tsv" \
    py_train_tandem="$out/python_train_tandem.tsv" py_train_torch_best="$out/python_train_torch_best.tsv" \
    cxx_train_tandem="$out/cxx_train_tandem.tsv" cxx_train_torch_best="$out/cxx_train_torch_best.tsv"
fi
# ---------------------------------------------------------------- memory budget (tandem only)
if [[ $what == all || $what == budget ]]; then
  load=$(cut -d' ' -f1 /proc/loadavg)
  read -r -a bextra <<< "${BUDGET_FLAGS:-}"
  : > "$out/budget_commands.txt"
  for model in cnn mlp; do
    cmd=("${clean_env[@]}" "$build/bench/bench_budget" --model $model "${bextra[@]}")
    echo "== budget $model: ${cmd[*]}"
    echo "${cmd[*]}" >> "$out/budget_commands.txt"
    "${cmd[@]}" > "$out/budget_$model.tsv"
  done
  "$py" bench/report.py budget --out bench/RESULTS.md --command "$command" --commands "$out/budget_commands.txt" \
    --load "$load" --svg bench/budget_curve.svg cnn="$out/budget_cnn.tsv" mlp="$out/budget_mlp.tsv"
fi
# ---------------------------------------------------------------- data parallel (issue 17)
if [[ $what == all || $what == ddp ]]; then
  [[ -x $build/bench/bench_ddp ]] || { echo "run_all.sh: no $build/bench/bench_ddp; build it with ./run bench" >&2; exit 1; }
  : > "$out/ddp_commands.txt"
  # As root mpirun refuses to start without --allow-run-as-root. Each rank is bound to a
  # core; OMP_NUM_THREADS pins each program's pool as the labels say.
  mpi=(mpirun -np 2 --bind-to core --map-by core)
  ((EUID == 0)) && mpi+=(--allow-run-as-root)
  read -r -a dflags <<< "${DDP_FLAGS:-}"
  ddp_one() {  # ddp_one LABEL [mpirun...] -- ARGS...
    local label=$1 pre=() args=()
    shift
    while (($#)) && [[ $1 != -- ]]; do pre+=("$1"); shift; done
    shift
    args=("$@")
    local cmd=("${clean_env[@]}" "${pre[@]}" "$build/bench/bench_ddp" "${args[@]}" "${dflags[@]}" --json "$out/ddp_$label.json")
    echo "== ddp $label: ${cmd[*]}"
    echo "${cmd[*]}" >> "$out/ddp_commands.txt"
    "${cmd[@]}"
  }
  runs=()
  for model in mlp cnn; do
    ddp_one "${model}_1x2" OMP_NUM_THREADS=2 -- --model "$model" --batch 128 --threads 2
    ddp_one "${model}_2x1_nocomm" "${mpi[@]}" -x OMP_NUM_THREADS=1 -- --model "$model" --batch 64 --threads 1
    ddp_one "${model}_2x1" "${mpi[@]}" -x OMP_NUM_THREADS=1 -- --ddp --model "$model" --batch 64 --threads 1
    ddp_one "${model}_2x1_small" "${mpi[@]}" -x OMP_NUM_THREADS=1 -- --ddp --model "$model" --batch 64 --threads 1 --bucket-kb 256
    runs+=("${model}_1x2=$out/ddp_${model}_1x2.json" "${model}_2x1_nocomm=$out/ddp_${model}_2x1_nocomm.json"
      "${model}_2x1=$out/ddp_${model}_2x1.json"
      "${model}_2x1_small=$out/ddp_${model}_2x1_small.json")
  done
  "$py" bench/report.py ddp --out bench/RESULTS.md --command "$command" --commands "$out/ddp_commands.txt" \
    --load "$(cut -d' ' -f1 /proc/loadavg)" "${runs[@]}"
fi
# ---------------------------------------------------------------- ONNX import (issue 18, tandem only)
if [[ $what == all || $what == onnx ]]; then
  load=$(cut -d' ' -f1 /proc/loadavg)
  read -r -a oextra <<< "${ONNX_FLAGS:-}"
  cmd=("${clean_env[@]}" "$build/bench/bench_onnx" "${oextra[@]}")
  echo "== onnx: ${cmd[*]}"
  echo "${cmd[*]}" > "$out/onnx_commands.txt"
  "${cmd[@]}" > "$out/onnx.tsv"
  "$py" bench/report.py onnx --out bench/RESULTS.md --command "$command" --commands "$out/onnx_commands.txt" \
    --load "$load" "$out/onnx.tsv"
fi
echo "wrote bench/RESULTS.md"
