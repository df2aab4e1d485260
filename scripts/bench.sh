#!/usr/bin/env bash
# Builds Release and runs every benchmark; each prints its ratio against a
# baseline measured in the same run. The trace-hook comparison needs a second
# build without the hook (-DAXL_NO_TRACE_HOOK=ON); trace_hook_compare.sh runs
# bench_trace_hook from both. bench_vs_pocl compares axl.h on the opencl and
# cpu backends with raw OpenCL on PoCL (deps.sh installs PoCL and the ICD
# loader; without them it says it skipped). The RATIO lines are repeated at
# the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAXL_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)"
cmake -S . -B build-bench-notrace -DCMAKE_BUILD_TYPE=Release -DAXL_BUILD_TESTS=OFF -DAXL_NO_TRACE_HOOK=ON >/dev/null
cmake --build build-bench-notrace -j"$(nproc)" --target bench_trace_hook

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for b in build-bench/bin/bench_*; do
  # bench_trace_hook only prints raw figures; the comparison below runs it.
  [ "$(basename "$b")" = bench_trace_hook ] && continue
  echo "== $b"
  "$b" | tee -a "$log"
done
echo "== benchmarks/trace_hook_compare.sh build-bench build-bench-notrace"
bash benchmarks/trace_hook_compare.sh build-bench build-bench-notrace | tee -a "$log"

# The Python profiler benchmark needs an interpreter that imports axl:
# AXL_BENCH_PYTHON, else scripts/main.sh's .venv, else python3.
py="${AXL_BENCH_PYTHON:-}"
[ -z "$py" ] && { [ -x .venv/bin/python ] && py=.venv/bin/python || py=python3; }
if "$py" -c "import axl.profiler, numpy" 2>/dev/null; then
  for script in profiler_overhead.py bench_buffers.py python_overhead.py; do
    echo "== benchmarks/$script ($py)"
    "$py" "benchmarks/$script" | tee -a "$log"
  done
else
  echo "== Python benchmarks skipped: $py cannot import axl and numpy (set AXL_BENCH_PYTHON)"
fi

echo
echo "== summary"
grep '^RATIO ' "$log"
