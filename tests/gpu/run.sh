#!/usr/bin/env bash
# The GPU check of the cuda backend, in one command, on a bare GPU machine
# (docs/backends.md, "First run on a GPU machine"):
#   0. a ~5 s environment probe (driver, NVML, NVRTC, CUDA headers, compilers,
#      the Python and its packages), each item one line, with a fix if missing
#   1. deps: the carried build-deps/ (tests/gpu/prepare.sh) unpacked into
#      build-deps/root and registered with the loader (tests/gpu/unpack_deps.sh)
#   2. configure + build: Release, every core, Ninja where there is ninja
#   3. axl-cts on the cuda backend, tests/gpu/cuda_gpu_test (C++)
#   4. the package installed with pip --no-build-isolation --no-index into a
#      folder on PYTHONPATH (so the machine's own torch/CuPy/numpy are seen),
#      an import smoke test, pytest tests/gpu (accelerator cases) and
#      tests/python (the generic suite, with the GPU hidden: it counts devices
#      exactly)
#   5. benchmarks: bench_cuda (C++ vs raw driver) and python_cuda_launch.py
# Output: at most 8 files in one folder, 0-summary.txt first (probe, each
# step's result and time, a one-line fix for each failure, every RATIO and
# METRIC the benchmarks reported); the summary is rewritten after each step
# and on exit, so it comes back even when a step fails or the run is killed.
# Budget: 8 minutes (--quick: 5) on the GPU machine; each step has its own
# timeout, capped by what is left of the whole. Without a CUDA device every
# GPU step reports SKIP with the backend's reason and the script exits 0.
#
#   tests/gpu/run.sh [--quick]      --quick: fewer benchmark repetitions
# Environment:
#   OUT / AXL_GPU_OUT   output folder (OUT wins; default $AXL_GPU_BUILD/gpu-results)
#   AXL_GPU_BUILD       build folder (default build-gpu)
#   AXL_GPU_DEPS        the carried folder (default build-deps)
#   PYTHON              interpreter (default /opt/torch/.venv/bin/python3 if
#                       there, else python3)
#   AXL_GPU_BUILD_TYPE  (Release), AXL_GPU_JOBS (every core)
#   AXL_GPU_BUDGET_S    overall limit in seconds (480; --quick 300)
#   AXL_GPU_TIME_SCALE  multiplies every step's limit (1; slow machines: 4)
#   AXL_GPU_GENERIC     1: run tests/python without a GPU too (default: only
#                       with one; CI runs it anyway, python/run_tests.sh)
#   AXL_GPU_LDCONFIG    0: never write /etc/ld.so.conf.d (LD_LIBRARY_PATH only)
#   AXL_GPU_CCACHE      0: no ccache even where it is installed
# Exit status: 0 when no step failed.
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${AXL_GPU_BUILD:-$src/build-gpu}"
out="${OUT:-${AXL_GPU_OUT:-$build/gpu-results}}"
deps="${AXL_GPU_DEPS:-$src/build-deps}"
if [[ -n "${PYTHON:-}" ]]; then
  python="$PYTHON"
elif [[ -x /opt/torch/.venv/bin/python3 ]]; then
  python=/opt/torch/.venv/bin/python3
else
  python=python3
fi
build_type="${AXL_GPU_BUILD_TYPE:-Release}"
jobs="${AXL_GPU_JOBS:-$(nproc)}"
quick=""
[[ "${1:-}" == "--quick" ]] && quick="--quick"
budget="${AXL_GPU_BUDGET_S:-$([[ -n $quick ]] && echo 300 || echo 480)}"
scale="${AXL_GPU_TIME_SCALE:-1}"
start_all=$SECONDS

mkdir -p "$out" "$build/logs" || { echo "run.sh: cannot create $out or $build"; exit 1; }
out="$(cd "$out" && pwd)"
# Only our own files: $out may be a folder with other things in it.
rm -f "$out"/0-summary.txt "$out"/[1-6]-*.log "$out"/1-probe.txt "$out"/7-cts_cuda.json "$build"/logs/*.log
summary="$out/0-summary.txt"

# The pip-installed cmake/ninja live next to the interpreter; a bare shell
# may not have that folder on PATH.
pybin="$(dirname "$(command -v "$python" 2>/dev/null || echo "$python")")"
[[ -x "$pybin/cmake" || -x "$pybin/ninja" ]] && [[ ":$PATH:" != *":$pybin:"* ]] && PATH="$pybin:$PATH"

# have TOOL: on PATH and executable (bash's `command -v` also reports a
# non-executable file when nothing better is found).
have() { local p; p="$(command -v "$1" 2>/dev/null)" && [[ -x $p ]]; }

declare -a rows=() probe=() fixes=()
failed=0
state=RUNNING
cuda_state="(not probed yet)"

# ---------------------------------------------------------------- summary
write_summary() {
  local tmp="$summary.tmp" r a b c verdict metrics
  {
    echo "axl cuda GPU run: $state ($(date -u +%FT%TZ), $((SECONDS - start_all))s of ${budget}s${quick:+, --quick})"
    echo "host: $(hostname 2>/dev/null) $(uname -srm), $(nproc) cores; source $src; build $build"
    echo
    echo "probe:"
    for r in "${probe[@]}"; do
      IFS='|' read -r a b c <<<"$r"
      printf '  %-18s %-8s %s\n' "$a" "$b" "$c"
    done
    echo
    echo "cuda plugin: $cuda_state"
    printf '%-22s %5s  %s\n' STEP TIME RESULT
    for r in "${rows[@]}"; do
      IFS='|' read -r a b c <<<"$r"
      printf '%-22s %5s  %s\n' "$a" "$c" "$b"
    done
    if ((${#fixes[@]})); then
      echo
      echo "fix:"
      for r in "${fixes[@]}"; do echo "  $r"; done
    fi
    metrics="$(cat "$build"/logs/bench_*.log 2>/dev/null | grep -E '^(RATIO|METRIC) ' || true)"
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
    echo
    echo "files: $(cd "$out" && ls | grep -v '\.tmp$' | tr '\n' ' ')"
  } >"$tmp" 2>/dev/null
  mv -f "$tmp" "$summary" 2>/dev/null
}
finish() {
  [[ -n ${workdir:-} ]] && rm -rf "$workdir"  # pytest's folder, when a step stopped the run
  if [[ $state == RUNNING ]]; then
    state="INTERRUPTED"
    failed=1
  fi
  write_summary
}
trap finish EXIT
trap 'state="INTERRUPTED (signal)"; failed=1; exit 1' INT TERM

# ---------------------------------------------------------------- steps
# Which combined log each step's output goes to (at most 8 files come back).
group_of() {
  case "$1" in
    deps | configure | build) echo 2-build.log ;;
    cts_cuda | cuda_gpu_test) echo 3-cpp.log ;;
    python_*| pytest_*) echo 4-python.log ;;
    bench_*) echo 5-bench.log ;;
    *) echo 6-other.log ;;
  esac
}
# step NAME LIMIT_S COMMAND...: runs it under a hard timeout (its own limit
# times AXL_GPU_TIME_SCALE, capped by what is left of the overall budget),
# output in $build/logs/NAME.log, appended to its group log in $out. Result:
# PASS, FAIL (exit or timeout), or SKIP when the program printed "nothing
# tested"/"nothing measured"/"no CUDA device". A failing step's first
# "FIX: ..." line (or a pointer to its log) goes to the summary's fixes.
step() {
  local name="$1" limit=$(($2 * scale))
  shift 2
  local left=$((budget - (SECONDS - start_all) - 5)) t0=$SECONDS rc result log="$build/logs/$name.log"
  if ((left < 10)); then
    rows+=("$name|FAIL (not run: the ${budget}s budget is spent)|0s")
    fixes+=("$name: not run, the overall budget was spent: AXL_GPU_BUDGET_S=$((budget * 2)) or --quick")
    failed=1
    write_summary
    return 1
  fi
  local capped=0
  ((limit > left)) && limit=$left && capped=1
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  result=PASS
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    result="FAIL (timeout ${limit}s)"
  elif [[ $rc -ne 0 ]]; then
    result="FAIL (exit $rc)"
  elif grep -q -E "nothing tested|nothing measured|no CUDA device" "$log"; then
    result="SKIP (no CUDA device${reason:+: $reason})"
  fi
  {
    # The command on one line (an inline script would fill the log header).
    echo "===== $name: $result, $((SECONDS - t0))s: $(tr '\n' ' ' <<<"$*" | tr -s ' ' | cut -c1-400)"
    cat "$log"
    echo
  } >>"$out/$(group_of "$name")"
  if [[ $result == FAIL* ]]; then
    failed=1
    tail -n 30 "$log"
    local fix
    fix="$(grep -m1 '^FIX: ' "$log" | cut -c6-)"
    # CMake's own words for a package it cannot find, made into the fix.
    local pkg
    pkg="$(grep -m1 -o -E 'provided by "[A-Za-z0-9_]+"' "$log" | cut -d'"' -f2)"
    [[ -z $fix && -n $pkg ]] && fix="CMake cannot find $pkg: carry build-deps (tests/gpu/prepare.sh) or install its -dev package"
    if [[ $result == *timeout* && -z $fix ]]; then
      if ((capped)); then
        fix="ran past ${limit}s, what was left of the ${budget}s budget: AXL_GPU_BUDGET_S=$((budget * 2)) raises it"
      else
        fix="ran past ${limit}s: see $(group_of "$name"), section $name (AXL_GPU_TIME_SCALE=2 doubles every limit)"
      fi
    fi
    fixes+=("$name: ${fix:-see $(group_of "$name"), section $name (last lines of its output)}")
  fi
  rows+=("$name|$result|$((SECONDS - t0))s")
  write_summary
  [[ $result != FAIL* ]]
}
skip() { rows+=("$1|SKIP ($2)|0s"); write_summary; }
not_run() { rows+=("$1|NOT RUN ($2)|0s"); write_summary; }
# add_probe NAME STATUS DETAIL [FIX]
add_probe() {
  probe+=("$1|$2|$3${4:+ -- fix: $4}")
  printf '  %-18s %-8s %s\n' "$1" "$2" "$3${4:+ -- fix: $4}"
}

# ---------------------------------------------------------------- 0. probe
# Fast (each tool under a 5 s timeout); writes nothing but variables, and the
# raw outputs into 1-probe.txt. It also points the backend at libraries that
# exist but that the loader would not find (AXL_CUDA_DRIVER_PATH,
# AXL_NVRTC_PATH) and CMake at CUDA headers outside /usr/local/cuda.
echo "== probe"
probe_raw="$out/1-probe.txt"
: >"$probe_raw"
t_probe=$SECONDS
py_site="$(timeout 10 "$python" -c 'import site, sys; print(" ".join(site.getsitepackages()))' 2>/dev/null)"

add_probe os ok "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"), $(uname -r), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"

# Driver: nvidia-smi answers for the GPU; else is libcuda.so.1 there at all?
have_driver=0
smi_gpu=0
if have nvidia-smi; then
  smi="$(timeout 5 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
  smi_rc=$?
  { echo "--- nvidia-smi"; timeout 5 nvidia-smi 2>&1; } >>"$probe_raw"
  if [[ $smi_rc -eq 0 && -n "$smi" ]]; then
    add_probe driver ok "$(head -3 <<<"$smi" | tr '\n' ';' | sed 's/;$//')"
    smi_gpu=1
  else
    add_probe driver MISSING "nvidia-smi: $(head -1 <<<"$smi")" "run on the GPU machine; check that /dev/nvidia* and the driver mount exist"
  fi
fi
# Libraries are probed by loading them (Python's ctypes, as the backend's
# dlopen would: by soname through the loader, then by path), so a listed but
# broken or empty file counts as missing. A library found only by path is
# handed to the backend with its variable.
# find_lib SONAMES... -- PATHS...: prints "by-name PATH" or "by-path PATH" or
# "missing ERROR".
find_lib() {
  local py=python3
  command -v python3 >/dev/null || py="$python"
  timeout 5 "$py" - "$@" <<'PYEOF' 2>/dev/null || echo "missing (could not probe)"
import ctypes, os, sys
args = sys.argv[1:]
split = args.index("--")
names, paths = args[:split], args[split + 1:]
def loaded(stem):
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) >= 6 and os.path.basename(parts[-1]).startswith(stem):
            return parts[-1]
    return ""
err = "none of " + ", ".join(names) + " is known to the loader"
for how, cands in (("by-name", names), ("by-path", [p for p in paths if os.path.exists(p)])):
    for c in cands:
        try:
            ctypes.CDLL(c)
        except OSError as e:
            err = str(e)
            continue
        print(how, loaded(os.path.basename(c).split(".so")[0] + ".so") or c)
        sys.exit(0)
print("missing", err)
PYEOF
}
read -r how libcuda <<<"$(find_lib libcuda.so.1 -- ${AXL_CUDA_DRIVER_PATH:-} /usr/local/nvidia/lib64/libcuda.so.1 \
  /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/local/cuda/compat/libcuda.so.1)"
if [[ $how == by-* ]]; then
  [[ $how == by-path && -z ${AXL_CUDA_DRIVER_PATH:-} ]] && export AXL_CUDA_DRIVER_PATH="$libcuda"
  add_probe libcuda ok "$libcuda${AXL_CUDA_DRIVER_PATH:+ (AXL_CUDA_DRIVER_PATH=$AXL_CUDA_DRIVER_PATH)}"
  have_driver=1
else
  add_probe libcuda MISSING "no loadable libcuda.so.1 (the NVIDIA driver): GPU steps will SKIP" "on a GPU machine set AXL_CUDA_DRIVER_PATH=/path/to/libcuda.so.1"
fi
have nvidia-smi || add_probe nvidia-smi MISSING "not on PATH" "it comes with the driver (/usr/local/nvidia/bin); only informational here"

# NVML: nvidia-smi's library; the cuda backend counts GPUs with it where it
# can (AXL_NVML_PATH, else libnvidia-ml.so.1), without starting the driver.
read -r how libnvml <<<"$(find_lib libnvidia-ml.so.1 -- ${AXL_NVML_PATH:-} /usr/local/nvidia/lib64/libnvidia-ml.so.1 \
  /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/lib64/libnvidia-ml.so.1)"
if [[ $how == by-* ]]; then
  [[ $how == by-path && -z ${AXL_NVML_PATH:-} ]] && export AXL_NVML_PATH="$libnvml"
  add_probe nvml ok "$libnvml${AXL_NVML_PATH:+ (AXL_NVML_PATH=$AXL_NVML_PATH)}"
else
  add_probe nvml MISSING "no loadable libnvidia-ml.so.1" "it ships with the driver (/usr/local/nvidia/lib64): set AXL_NVML_PATH=/path/to/libnvidia-ml.so.1; without it devices are counted another way and nvidia-smi's figures are missing"
fi

# NVRTC: what Program.compile and the GPU tests' kernels need: the toolkit's
# lib64 or pip's nvidia wheels are often outside the loader's paths.
cands=()
for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  cands+=("$d/libnvrtc.so.13" "$d/libnvrtc.so.12")
done
for s in $py_site; do
  cands+=("$s/nvidia/cu13/lib/libnvrtc.so.13" "$s/nvidia/cuda_nvrtc/lib/libnvrtc.so.13" "$s/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
done
read -r how nvrtc <<<"$(find_lib libnvrtc.so.13 libnvrtc.so.12 -- ${AXL_NVRTC_PATH:-} "${cands[@]}")"
if [[ $how == by-* ]]; then
  [[ $how == by-path && -z ${AXL_NVRTC_PATH:-} ]] && export AXL_NVRTC_PATH="$nvrtc"
  add_probe libnvrtc ok "$nvrtc${AXL_NVRTC_PATH:+ (AXL_NVRTC_PATH=$AXL_NVRTC_PATH)}"
else
  add_probe libnvrtc MISSING "no loadable libnvrtc.so.13/.12: run-time compilation (Program.compile, GPU kernels) will fail" "set AXL_NVRTC_PATH=/path/to/libnvrtc.so.13 (CUDA toolkit lib64 or pip's nvidia/cu13/lib)"
fi

# CUDA headers: without cuda.h, cudaTypedefs.h and nvrtc.h CMake skips the
# cuda plugin, and the whole check would test nothing.
cuda_inc=""
for d in ${CUDA_HOME:+"$CUDA_HOME/include"} /usr/local/cuda/include /opt/cuda/include $(for s in $py_site; do echo "$s/nvidia/cu13/include"; done); do
  if [[ -f $d/cuda.h && -f $d/cudaTypedefs.h && -f $d/nvrtc.h ]]; then cuda_inc="$d"; break; fi
done
if [[ -n $cuda_inc ]]; then
  [[ $cuda_inc != /usr/local/cuda/include && $cuda_inc != /opt/cuda/include && -z ${CUDA_HOME:-} ]] && export CUDA_HOME="$(dirname "$cuda_inc")"
  add_probe cuda.h ok "$cuda_inc ($(grep -m1 -o -E 'define CUDA_VERSION [0-9]+' "$cuda_inc/cuda.h" | awk '{ print $3 }'))"
else
  add_probe cuda.h MISSING "no cuda.h+cudaTypedefs.h+nvrtc.h: the cuda plugin will not be built" "set CUDA_HOME to the CUDA toolkit (its include/ has them)"
fi

# Compilers and build tools.
version_of() { timeout 5 "$@" 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+' | cut -c1-70; }
for tool in g++ nvcc cmake ninja make ccache; do
  if have $tool; then
    case $tool in
      nvcc) v="$(timeout 5 nvcc --version 2>&1 | grep -m1 release | sed 's/.*release/release/')" ;;
      *) v="$(version_of $tool --version)" ;;
    esac
    [[ $tool == ccache && ${AXL_GPU_CCACHE:-1} == 0 ]] && v+=" (not used: AXL_GPU_CCACHE=0)"
    add_probe $tool ok "$(command -v $tool): $v"
  else
    case $tool in
      g++) add_probe g++ MISSING "no C++ compiler" "install g++ (the CUDA toolkit's host compiler) or put it on PATH" ;;
      cmake) add_probe cmake MISSING "no cmake" "put CMake >= 3.24 on PATH (pip's cmake is in the Python's bin folder)" ;;
      ninja) add_probe ninja MISSING "no ninja: make is used" "put ninja on PATH (pip's ninja is in the Python's bin folder)" ;;
      make) add_probe make absent "no make: Ninja is used" ;;
      nvcc) add_probe nvcc absent "not needed (NVRTC compiles the kernels)" ;;
      ccache) add_probe ccache absent "not needed (only speeds up rebuilds)" ;;
    esac
  fi
done

# The Python: its headers (the extension) and its packages, read from their
# metadata (importing torch or jax would take seconds).
pyinfo="$(timeout 15 "$python" - <<'EOF' 2>&1
import os, sys, sysconfig
from importlib import metadata
inc = sysconfig.get_paths()["include"]
print("python|ok|%s %s" % (sys.executable, sys.version.split()[0]))
if os.path.exists(os.path.join(inc, "Python.h")):
    print("Python.h|ok|%s" % inc)
else:
    print("Python.h|MISSING|no Python.h in %s: the extension cannot build|use a Python with its headers (PYTHON=/opt/torch/.venv/bin/python3, or python3-dev)" % inc)
names = {d.metadata["Name"].lower().replace("_", "-"): d.version for d in metadata.distributions() if d.metadata["Name"]}
need = {"numpy": "tests", "pytest": "tests", "pybind11": "build", "scikit-build-core": "build",
        "psutil": "tests", "ml-dtypes": "tests", "hypothesis": "tests"}
for want in ("torch", "cupy", "jax", "numpy", "pytest", "pybind11", "scikit-build-core", "psutil", "ml-dtypes", "hypothesis", "nvidia-ml-py"):
    hits = sorted(n for n in names if n == want or (want == "cupy" and n.startswith("cupy")))
    if hits:
        print("%s|ok|%s" % (want, ", ".join("%s %s" % (h, names[h]) for h in hits)))
    elif want in need:
        print("%s|MISSING|needed for the %s|add its wheel: tests/gpu/prepare.sh (wheels/), or PYTHON=/opt/torch/.venv/bin/python3" % (want, need[want]))
    else:
        print("%s|absent|optional (its comparison is skipped)" % want)
EOF
)"
if grep -q '^python|ok|' <<<"$pyinfo"; then
  while IFS='|' read -r a b c d; do
    [[ -n $a ]] && add_probe "$a" "$b" "$c" "$d"
  done <<<"$(grep -E '^[A-Za-z0-9.-]+\|' <<<"$pyinfo")"
else
  add_probe python MISSING "$python does not run: $(head -1 <<<"$pyinfo")" "set PYTHON to a Python >= 3.10 (on the GPU machine /opt/torch/.venv/bin/python3)"
fi

# The carried folder.
if [[ -s $deps/MANIFEST.txt ]]; then
  add_probe carried ok "$deps: $(grep -vc '^wheel ' "$deps/MANIFEST.txt") debs, $(grep -c '^wheel ' "$deps/MANIFEST.txt") wheels, $(du -sh "$deps/debs" 2>/dev/null | cut -f1)"
else
  add_probe carried MISSING "no $deps/MANIFEST.txt" "run tests/gpu/prepare.sh on a networked Debian 12 machine and carry build-deps with the source tree"
fi
# The raw material behind the lines above, for whoever reads the results.
{
  echo "--- environment"
  env | grep -E '^(PATH|LD_LIBRARY_PATH|PYTHONPATH|CUDA_HOME|CUDA_PATH|CUDA_VISIBLE_DEVICES|CMAKE_[A-Z_]+|AXL_[A-Z_]+|OUT)=' | sort
  echo "--- python probe ($python)"
  echo "$pyinfo"
  echo "--- ld.so cache: cuda, nvrtc, nvidia, spdlog, fmt, benchmark"
  ldconfig -p 2>/dev/null | grep -E 'libcuda|nvrtc|nvidia|spdlog|libfmt|benchmark'
  echo "--- /dev/nvidia*"
  ls -l /dev/nvidia* 2>&1
} >>"$probe_raw"
add_probe probe-time ok "$((SECONDS - t_probe))s"
write_summary

# ---------------------------------------------------------------- 1. deps
root="$deps/root"
have_system_deps() {
  [[ -f /usr/include/spdlog/spdlog.h && -f /usr/include/fmt/core.h && -f /usr/include/catch2/catch.hpp && -f /usr/include/benchmark/benchmark.h ]]
}
cmake_deps=()
deps_ok=1
if [[ -d $deps ]]; then
  if step deps 60 bash "$src/tests/gpu/unpack_deps.sh" "$deps" "$root"; then
    while read -r _ pkg dir; do cmake_deps+=("-D${pkg}_DIR=$dir"); done < <(grep '^cmake-dir ' "$build/logs/deps.log")
    libdirs="$(grep -m1 '^libdirs ' "$build/logs/deps.log" | cut -d' ' -f2-)"
    # The fallback when ldconfig could not (not root): every child that keeps
    # the environment finds the libraries; CMAKE_PREFIX_PATH for any
    # find_package the _DIR variables do not cover.
    export LD_LIBRARY_PATH="${libdirs// /:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export PKG_CONFIG_PATH="$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  else
    deps_ok=0
  fi
elif have_system_deps; then
  skip deps "nothing carried: the system's spdlog/fmt/Catch2/benchmark are used"
else
  rows+=("deps|FAIL (no carried folder $deps)|0s")
  fixes+=("deps: $deps is missing and the system has no spdlog/fmt/Catch2/benchmark: run tests/gpu/prepare.sh on a networked Debian 12 machine and carry build-deps")
  failed=1
  deps_ok=0
  write_summary
fi

# ---------------------------------------------------------------- 2. build
gen=()
if have ninja; then
  gen=(-G Ninja)
elif ! have make; then
  gen=()
fi
launcher=()
if have ccache && [[ ${AXL_GPU_CCACHE:-1} != 0 ]]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # Paths relative to the source: the pip build (another build folder) hits
  # the cache of this one.
  export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
fi
# A cache made with another generator cannot be reused.
if [[ -f $build/CMakeCache.txt ]] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=${gen[1]:-Unix Makefiles}\$" "$build/CMakeCache.txt"; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
build_ok=0
if ((!deps_ok)); then
  not_run configure "deps failed"
  not_run build "deps failed"
elif ! have cmake || { ((${#gen[@]} == 0)) && ! have make; }; then
  rows+=("configure|FAIL (no cmake, or neither ninja nor make)|0s")
  fixes+=("configure: put cmake >= 3.24 and ninja on PATH (pip's are in $pybin)")
  failed=1
  not_run build "configure failed"
elif step configure 120 cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE="$build_type" -DAXL_BUILD_BENCHMARKS=ON \
       "${launcher[@]}" "${cmake_deps[@]}"; then
  step build 300 cmake --build "$build" -j"$jobs" --target axl-cts axl-info axl_cuda_gpu_test bench_cuda \
    axl_plugin_cpu axl_plugin_virtual axl_plugin_cuda && build_ok=1
else
  not_run build "configure failed"
fi

# Is there a CUDA device? The cuda plugin's record says, with its reason.
have_gpu=0
reason="the build failed"
if ((build_ok)); then
  cuda_state="$("$build/bin/axl-info" --json 2>/dev/null | "$python" -c '
import json, sys
d = json.load(sys.stdin)
for p in d.get("plugins", []):
    if p.get("name") == "cuda":
        print(p.get("state"), p.get("device_count"), "|", p.get("reason", ""))
        break
else:
    print("absent 0 | the cuda plugin was not built (no CUDA headers: set CUDA_HOME)")
' 2>&1)"
  echo "cuda plugin: $cuda_state"
  [[ "$cuda_state" == loaded\ [1-9]* ]] && have_gpu=1
  reason="${cuda_state#*| }"
  # nvidia-smi sees a GPU the backend cannot use: a failure, not a SKIP.
  if ((smi_gpu && !have_gpu)); then
    rows+=("cuda_plugin|FAIL (a driver is there, but: ${reason:0:40})|0s")
    fixes+=("cuda_plugin: the driver is present but the cuda backend reports: $reason")
    failed=1
  fi
else
  cuda_state="not known (the build did not finish)"
fi
write_summary

# ---------------------------------------------------------------- 3. C++
if ((build_ok)); then
  if ((have_gpu)); then
    step cts_cuda 180 "$build/bin/axl-cts" --backend cuda --report "$out/7-cts_cuda.json"
  else
    skip cts_cuda "no CUDA device: $reason"
  fi
  # Runs either way: without a device it must say so and exit 0.
  step cuda_gpu_test 180 "$build/bin/axl_cuda_gpu_test"
else
  not_run cts_cuda "build failed"
  not_run cuda_gpu_test "build failed"
fi

# ---------------------------------------------------------------- 4. Python
# pip install --target: the package lands in one folder put first on
# PYTHONPATH, so the interpreter keeps every package of its own environment
# (torch, CuPy, numpy) without a venv. --no-build-isolation --no-index: no
# network there; the build uses the interpreter's scikit-build-core and
# pybind11 and CMake finds the carried packages through the same _DIR
# variables.
pysite="$build/py-site"
pydeps="$build/py-deps"
py_ok=0
if ((!deps_ok)); then
  not_run python_install "deps failed"
else
  defines=()
  for d in "${cmake_deps[@]}"; do defines+=("--config-settings=cmake.define.${d#-D}"); done
  if ((${#launcher[@]})); then
    defines+=("--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache" "--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache")
  fi
  ((${#gen[@]})) && export CMAKE_GENERATOR=Ninja
  export CMAKE_BUILD_PARALLEL_LEVEL="$jobs"
  wheels=("$deps"/wheels/*.whl)
  [[ -e ${wheels[0]} ]] || wheels=()
  # shellcheck disable=SC2016
  step python_install 300 bash -c '
    python="$1"; src="$2"; pysite="$3"; pydeps="$4"; wb="$5"; shift 5
    missing=$("$python" -c "
import importlib.util as u
print(\" \".join(m for m in (\"pip\", \"pybind11\", \"scikit_build_core\") if u.find_spec(m) is None))" 2>&1) || missing="(the interpreter does not run)"
    if [[ -n $missing ]]; then
      echo "$python lacks: $missing"
      echo "FIX: use the GPU machine'"'"'s Python (PYTHON=/opt/torch/.venv/bin/python3) or carry wheels of: $missing (tests/gpu/prepare.sh)"
      exit 1
    fi
    rm -rf "$pysite" "$pydeps"
    wheels=(); defines=()
    for a in "$@"; do [[ $a == *.whl ]] && wheels+=("$a") || defines+=("$a"); done
    if ((${#wheels[@]})); then
      echo "== carried wheels: ${wheels[*]}"
      "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check \
        --target "$pydeps" "${wheels[@]}" || { echo "FIX: a carried wheel does not fit this Python: rerun tests/gpu/prepare.sh"; exit 1; }
    fi
    echo "== pip install --no-build-isolation --no-index --target $pysite $src"
    "$python" -m pip install --no-build-isolation --no-index --no-deps --no-cache-dir --disable-pip-version-check \
      --target "$pysite" --config-settings=build-dir="$wb" "${defines[@]}" "$src" \
      || { echo "FIX: the wheel build failed: see 4-python.log (python_install), CMake'"'"'s error is above pip'"'"'s"; exit 1; }
  ' _ "$python" "$src" "$pysite" "$pydeps" "$build/wheel-build" "${defines[@]}" "${wheels[@]}" && py_ok=1
fi
export PYTHONPATH="$pysite:$pydeps${PYTHONPATH:+:$PYTHONPATH}"
workdir="$(mktemp -d "${TMPDIR:-/tmp}/axl-gpu.XXXXXX")"
if ((py_ok)); then
  # The installed package imports from the folder (never from the source
  # tree: pytest runs from an empty folder); it needs no carried library
  # (spdlog and fmt are compiled into libaxl), so ldd finds everything.
  # shellcheck disable=SC2016
  step python_smoke 60 bash -c '
    cd "$3" && "$1" -c "
import sys, axl, axl.driver as drv
assert axl.__file__.startswith(sys.argv[1]), axl.__file__
print(axl.__file__, \"accelerators:\", drv.accelerator_count())
" "$2" || { echo "FIX: the installed package does not import: see 4-python.log (python_smoke)"; exit 1; }
    unresolved=$(ldd "$2"/axl/lib/libaxl.so* 2>/dev/null | grep "not found")
    [[ -z $unresolved ]] || { echo "$unresolved"; echo "FIX: libaxl.so needs a library this machine lacks: check with tests/wheel/check_elf_deps.py (only glibc and libstdc++ are allowed)"; exit 1; }
    "$1" -m axl info
  ' _ "$python" "$pysite" "$workdir"
  step pytest_gpu 240 bash -c "cd '$workdir' && '$python' -m pytest '$src/tests/gpu' -q -p no:cacheprovider -rs"
  # The generic suite counts accelerators exactly (virtual devices only), so
  # it runs with the GPU hidden: the real driver then answers
  # CUDA_ERROR_NO_DEVICE, and the suite checks the rest as in CI.
  if ((have_gpu)) || [[ ${AXL_GPU_GENERIC:-0} == 1 ]]; then
    step pytest_python 240 bash -c "cd '$workdir' && CUDA_VISIBLE_DEVICES= '$python' -m pytest '$src/tests/python' -q -p no:cacheprovider"
  else
    skip pytest_python "no CUDA device: CI runs it (python/run_tests.sh)"
  fi
  step bench_python_launch 120 "$python" "$src/benchmarks/python_cuda_launch.py" $quick
else
  for s in python_smoke pytest_gpu pytest_python bench_python_launch; do not_run $s "python_install failed"; done
fi
rm -rf "$workdir"

# ---------------------------------------------------------------- 5. C++ benchmarks
# Without a device it must exit 0 saying so.
if ((build_ok)); then
  step bench_cuda 180 "$build/bin/bench_cuda" $quick
else
  not_run bench_cuda "build failed"
fi

((failed)) && state="FAIL" || state="PASS"
write_summary
echo
cat "$summary"
echo "logs: $out"
exit $failed
