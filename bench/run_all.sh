#!/usr/bin/env bash
# Runs the shared workloads (bench/workloads.h) on the libtorch peer, out of the box and
# tuned, then on tandem, and rewrites bench/RESULTS.md (its "## History" section is kept).
#   bench/run_all.sh [BUILD_DIR]     default build-bench, which `./run bench` configures
#   BENCH_FLAGS="--benchmark_filter=add" bench/run_all.sh   extra Google Benchmark flags
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

build=${1:-build-bench}
out=$build/bench-out
py=/usr/bin/python3  # Debian's python; the first python3 on PATH may be another one
for bin in bench_core bench_peer_torch; do
  [[ -x $build/bench/$bin ]] || { echo "run_all.sh: no $build/bench/$bin; build it with ./run bench" >&2; exit 1; }
done
mkdir -p "$out"
: > "$out/commands.txt"

# Medians of 5 repetitions; a short minimum time keeps the whole run near a minute.
flags=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2)
read -r -a extra <<< "${BENCH_FLAGS:-}"

# Debian's OpenBLAS misdetects recent CPUs; name the best kernel family the CPU supports
# (a SkylakeX kernel on a CPU without AVX-512 would die with SIGILL).
coretype=
if grep -qw avx512f /proc/cpuinfo; then coretype=SkylakeX
elif grep -qw avx2 /proc/cpuinfo; then coretype=Haswell; fi
tuned=(OMP_WAIT_POLICY=PASSIVE ${coretype:+OPENBLAS_CORETYPE=$coretype})

# run_one LABEL PROGRAM [VAR=VALUE...]: runs PROGRAM with only the given tuning variables
# (the caller's are removed), keeps its JSON and the TSV form `case<TAB>ns<TAB>unit`.
run_one() {
  local label=$1 prog=$2
  shift 2
  local cmd=(env -u OPENBLAS_CORETYPE -u OMP_WAIT_POLICY "$@" "$build/bench/$prog" "${flags[@]}" "${extra[@]}")
  echo "== $label: ${cmd[*]}"
  echo "${cmd[*]}" >> "$out/commands.txt"
  "${cmd[@]}" --benchmark_out="$out/$label.json" --benchmark_out_format=json
  "$py" bench/report.py tsv "$out/$label.json" > "$out/$label.tsv"
}

run_one torch_default bench_peer_torch
run_one torch_tuned bench_peer_torch "${tuned[@]}"
run_one tandem bench_core

"$py" bench/report.py md --out bench/RESULTS.md --command "${BENCH_COMMAND:-bench/run_all.sh${*:+ $*}}" \
  --commands "$out/commands.txt" \
  tandem="$out/tandem.tsv" torch_tuned="$out/torch_tuned.tsv" torch_default="$out/torch_default.tsv"
for label in tandem torch_tuned torch_default; do sed "s/^/$label\t/" "$out/$label.tsv"; done
echo "wrote bench/RESULTS.md"
