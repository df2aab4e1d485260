#!/usr/bin/env bash
# The GPU check of the cuda backend, in one go (docs/backends.md, "CUDA"):
#   1. a Release build with every core (build-gpu/)
#   2. axl-cts on the cuda backend (the C++ conformance suite)
#   3. tests/gpu/cuda_gpu_test (C++: compile, fills, flags, host callbacks,
#      two queues, launch-trace names, event timing, peer copies)
#   4. the package into a venv (system site packages, so torch/CuPy are
#      seen), then pytest tests/gpu (accelerator cases) and tests/python
#      (the generic suite, with the GPU hidden: it counts devices exactly)
#   5. benchmarks: bench_cuda (C++ vs raw driver) and python_cuda_launch.py
# and prints one summary table: each step's result and time, then every
# RATIO and METRIC the benchmarks reported. Budget: under 8 minutes on one
# H200 (each step has its own timeout). Without a CUDA device every GPU step
# reports SKIP with the backend's reason and the script exits 0.
#
#   tests/gpu/run.sh [--quick]      --quick: fewer benchmark repetitions
# Environment: AXL_GPU_BUILD (build folder, default build-gpu), AXL_GPU_OUT
# (logs and reports, default $AXL_GPU_BUILD/gpu-results), AXL_GPU_BUILD_TYPE
# (default Release), AXL_GPU_JOBS (default: every core), PYTHON.
# Exit status: 0 when no step failed.
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${AXL_GPU_BUILD:-$src/build-gpu}"
out="${AXL_GPU_OUT:-$build/gpu-results}"
python="${PYTHON:-python3}"
build_type="${AXL_GPU_BUILD_TYPE:-Release}"
jobs="${AXL_GPU_JOBS:-$(nproc)}"
quick=""
[[ "${1:-}" == "--quick" ]] && quick="--quick"
mkdir -p "$out"
start_all=$SECONDS

declare -a rows=()
failed=0
# step NAME TIMEOUT_S COMMAND...: runs it with its output in $out/NAME.log and
# records PASS/FAIL (a step that prints "nothing tested"/"nothing measured"
# or was told there is no device counts as SKIP).
step() {
  local name="$1" limit="$2"
  shift 2
  local t0=$SECONDS rc
  echo "== $name"
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  local result=PASS
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    result="FAIL (timeout ${limit}s)"
  elif [[ $rc -ne 0 ]]; then
    result="FAIL (exit $rc)"
  elif grep -q -E "nothing tested|nothing measured|no CUDA device" "$out/$name.log"; then
    result=SKIP
  fi
  [[ $result == FAIL* ]] && failed=1 && tail -n 30 "$out/$name.log"
  rows+=("$name|$result|$((SECONDS - t0))s")
}
skip() { rows+=("$1|SKIP ($2)|0s"); }

# 1. build
step build 360 bash -c "cmake -S '$src' -B '$build' -DCMAKE_BUILD_TYPE=$build_type -DAXL_BUILD_BENCHMARKS=ON >/dev/null \
  && cmake --build '$build' -j$jobs --target axl-cts axl-info axl_cuda_gpu_test bench_cuda \
     axl_plugin_cpu axl_plugin_virtual axl_plugin_cuda"
if [[ ${rows[0]} != build\|PASS* ]]; then
  printf '%s\n' "${rows[@]}"
  exit 1
fi

# Is there a CUDA device? The cuda plugin's record says, with its reason.
cuda_state="$("$build/bin/axl-info" --json 2>/dev/null | "$python" -c '
import json, sys
d = json.load(sys.stdin)
for p in d.get("plugins", []):
    if p.get("name") == "cuda":
        print(p.get("state"), p.get("device_count"), "|", p.get("reason", ""))
        break
else:
    print("absent 0 | the cuda plugin was not built (no CUDA headers?)")
' 2>&1)"
echo "cuda plugin: $cuda_state"
have_gpu=0
[[ "$cuda_state" == loaded\ [1-9]* ]] && have_gpu=1
reason="${cuda_state#*| }"

# 2-3. C++ on the device
if [[ $have_gpu == 1 ]]; then
  step cts_cuda 180 "$build/bin/axl-cts" --backend cuda --report "$out/cts_cuda.json"
else
  skip cts_cuda "no CUDA device: $reason"
fi
# Runs either way: without a device it must say so and exit 0.
step cuda_gpu_test 180 "$build/bin/axl_cuda_gpu_test"

# 4. Python
if [[ $have_gpu == 1 ]]; then
  venv="$build/gpu-venv"
  step python_install 300 bash -c "'$python' -m venv --system-site-packages '$venv' \
    && '$venv/bin/python' -m pip install --quiet --disable-pip-version-check \
       --config-settings=build-dir='$build/wheel-build' '$src[test]'"
  if [[ ${rows[-1]} == python_install\|PASS* ]]; then
    workdir="$(mktemp -d)"
    step pytest_gpu 240 bash -c "cd '$workdir' && '$venv/bin/python' -m pytest '$src/tests/gpu' -q -p no:cacheprovider -rs"
    # The generic suite counts accelerators exactly (virtual devices only), so
    # it runs with the GPU hidden: the real driver then answers
    # CUDA_ERROR_NO_DEVICE, and the suite checks the rest as in CI.
    step pytest_python 240 bash -c "cd '$workdir' && CUDA_VISIBLE_DEVICES= '$venv/bin/python' -m pytest '$src/tests/python' -q -p no:cacheprovider"
    step bench_python_launch 120 "$venv/bin/python" "$src/benchmarks/python_cuda_launch.py" $quick
    rm -rf "$workdir"
  fi
else
  skip python "no CUDA device"
fi

# 5. C++ benchmarks (without a device: must exit 0 saying so)
step bench_cuda 180 "$build/bin/bench_cuda" $quick

echo
echo "================ axl cuda GPU run: summary ($(date -u +%FT%TZ), $((SECONDS - start_all))s) ================"
echo "cuda plugin: $cuda_state"
printf '%-22s %-50s %s\n' STEP RESULT TIME
for r in "${rows[@]}"; do
  IFS='|' read -r a b c <<<"$r"
  printf '%-22s %-50s %s\n' "$a" "${b:0:50}" "$c"
done
metrics="$(cat "$out"/bench_*.log 2>/dev/null | grep -E '^(RATIO|METRIC) ' || true)"
if [[ -n "$metrics" ]]; then
  echo
  printf '%-8s %-28s %-10s %s\n' KIND NAME VALUE "TARGET/UNIT"
  while read -r kind name value extra; do
    verdict=""
    if [[ $kind == RATIO && $extra == "<="* ]]; then
      awk -v v="$value" -v t="${extra#<=}" 'BEGIN { exit !(v <= t) }' && verdict=" ok" || verdict=" MISSED"
    elif [[ $kind == RATIO && $extra == ">="* ]]; then
      awk -v v="$value" -v t="${extra#>=}" 'BEGIN { exit !(v >= t) }' && verdict=" ok" || verdict=" MISSED"
    fi
    printf '%-8s %-28s %-10s %s%s\n' "$kind" "$name" "$value" "$extra" "$verdict"
  done <<<"$metrics"
fi
echo "logs: $out"
exit $failed
