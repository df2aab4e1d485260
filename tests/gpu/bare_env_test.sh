#!/usr/bin/env bash
# Proves, on a CPU machine, that tests/gpu/run.sh works on a *bare* GPU
# machine: one without spdlog, fmt, Catch2 and Google Benchmark, without make
# and without any package index, given only the source tree, the carried
# build-deps/ (tests/gpu/prepare.sh) and a Python that has what the GPU
# machine's /opt/torch/.venv has (numpy, pytest, pybind11,
# scikit-build-core, psutil, ml_dtypes, hypothesis).
#
# Outside (with network): prepare.sh, and a venv build-bare/pyenv standing in
# for /opt/torch/.venv. Inside `unshare --mount --net` (no network, so no pip
# index; mounts private to the test): the four packages' headers, CMake
# configs, pkg-config files and libraries are hidden under empty bind mounts,
# make is hidden, /etc is a private copy (run.sh's ldconfig registration
# stays inside); a CMake probe and a compile check that they are really
# gone; then three runs of run.sh, each asserted:
#   A. the carried folder (copied, as the GPU machine gets it): deps,
#      configure, build, python_install and python_smoke PASS, every GPU
#      step SKIP with the backend's reason, exit 0, the summary first of at
#      most 8 well-named files, every ELF file of the installed package
#      needing no carried library (spdlog and fmt are compiled into libaxl:
#      tests/wheel/check_elf_deps.py);
#   B. no carried folder: deps FAIL with the one-line fix, nothing built,
#      the summary still there, exit non-zero, in seconds;
#   C. a wrong Python (Debian's /usr/bin/python3: no pybind11 or
#      scikit-build-core) and libnvrtc hidden: the probe names both with a
#      fix, python_install FAILs with its fix, the summary is still there;
#   D. the non-root fallback (AXL_GPU_LDCONFIG=0, the registration of A
#      removed): the installed package imports with no ld.so registration.
#   E. the hard limits: a 45 s budget with a cold build: the build step
#      times out, the rest is not run, the summary says so, in time.
# Also: the Python .deb extractor (no dpkg there) gives dpkg-deb's tree.
# SKIPs (exit 0) when not root or when unshare is refused.
#
#   tests/gpu/bare_env_test.sh     Environment: AXL_BARE_DIR (work folder,
#                                  default build-bare), AXL_BARE_KEEP=1 keeps
#                                  the previous outputs
# Exit status: 0 when every assertion held (or SKIP).
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${AXL_BARE_DIR:-$src/build-bare}"
say() { echo "bare_env_test: $*"; }

if [[ "${1:-}" != --inner ]]; then
  # ------------------------------------------------------------ outside
  if [[ $(id -u) -ne 0 ]]; then
    say "SKIP: needs root (private mounts with unshare --mount); run as root to check the bare GPU run"
    exit 0
  fi
  if ! command -v unshare >/dev/null || ! unshare --mount --net true 2>/dev/null; then
    say "SKIP: unshare --mount --net is not available or refused here (util-linux, CAP_SYS_ADMIN)"
    exit 0
  fi
  mkdir -p "$work" || exit 1
  t0=$SECONDS
  say "prepare.sh (network)"
  bash "$src/tests/gpu/prepare.sh" || { say "FAIL: prepare.sh"; exit 1; }
  t_prepare=$((SECONDS - t0))

  t0=$SECONDS
  # The stand-in for /opt/torch/.venv: the GPU machine's packages that the
  # check uses (KINDS.md), no more. Kept between runs.
  pyenv="$work/pyenv"
  mods="numpy pytest pybind11 scikit_build_core psutil ml_dtypes hypothesis"
  if ! "$pyenv/bin/python" -c "import ${mods// /, }" 2>/dev/null; then
    say "python environment $pyenv (network)"
    rm -rf "$pyenv"
    python3 -m venv "$pyenv" &&
      "$pyenv/bin/python" -m pip install -q --disable-pip-version-check \
        numpy pytest pybind11 scikit-build-core psutil ml_dtypes hypothesis ||
      { say "FAIL: could not make $pyenv"; exit 1; }
  fi
  t_pyenv=$((SECONDS - t0))

  t0=$SECONDS
  unshare --mount --net bash "${BASH_SOURCE[0]}" --inner
  rc=$?
  say "times: prepare ${t_prepare}s, python env ${t_pyenv}s, inside the bare namespace $((SECONDS - t0))s (see above for each run)"
  exit $rc
fi

# -------------------------------------------------------------- inside
# Mount changes must not leak to the machine (shared propagation is the
# default with systemd).
mount --make-rprivate / || { say "FAIL: mount --make-rprivate /"; exit 1; }
fail=0
check() { # check DESCRIPTION COMMAND...: an assertion
  if "${@:2}"; then echo "  ok   $1"; else echo "  FAIL $1"; fail=1; fi
}

empty_dir="$work/empty-dir"
empty_file="$work/empty-file"
mkdir -p "$empty_dir" && : >"$empty_file" && chmod 0644 "$empty_file"
hidden=0
hide() { # hide PATH: an empty folder or file over it (real files only: links then point at nothing usable)
  local p="$1"
  if [[ -d $p && ! -L $p ]]; then
    mount --bind "$empty_dir" "$p" && hidden=$((hidden + 1))
  elif [[ -f $p && ! -L $p ]]; then
    mount --bind "$empty_file" "$p" && hidden=$((hidden + 1))
  fi
}
multi=/usr/lib/x86_64-linux-gnu
for d in /usr/include/{spdlog,fmt,catch2,benchmark} $multi/cmake/{spdlog,fmt,benchmark} /usr/lib/cmake/Catch2 \
  /usr/share/Catch2; do
  hide "$d"
done
for f in $multi/libspdlog.so* $multi/libfmt.so* $multi/libbenchmark*.so* $multi/libbenchmark*.a /usr/lib/libCatch2*.a \
  $multi/pkgconfig/{spdlog,fmt,benchmark,benchmark_main}.pc /usr/share/pkgconfig/catch2*.pc; do
  hide "$f"
done
# No make: run.sh must use Ninja (an empty, non-executable file).
hide /usr/bin/make
# A private /etc: run.sh's /etc/ld.so.conf.d file and ldconfig's new cache
# stay in this namespace (ldconfig renames its new cache into /etc, so a copy
# of the whole folder, not a file mount). Its aux cache likewise.
rm -rf "$work/etc" && cp -a /etc "$work/etc" && mount --bind "$work/etc" /etc || { say "FAIL: private /etc"; exit 1; }
[[ -d /var/cache/ldconfig ]] && mkdir -p "$work/ldcache" && mount --bind "$work/ldcache" /var/cache/ldconfig
ldconfig 2>/dev/null # the cache forgets the hidden libraries
say "hid $hidden system paths (spdlog, fmt, Catch2, benchmark, make)"

echo "-- the bare namespace"
probe="$work/find-probe"
rm -rf "$probe" && mkdir -p "$probe"
cat >"$probe/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.24)
project(probe LANGUAGES CXX)
foreach(p spdlog fmt Catch2 benchmark)
  find_package(${p} QUIET)
  message(STATUS "probe ${p}: ${${p}_FOUND}")
endforeach()
EOF
probe_out="$(cmake -S "$probe" -B "$probe/b" -G Ninja 2>&1)"
check "find_package cannot find spdlog, fmt, Catch2 or benchmark without the carried prefix" \
  bash -c '! grep -E "probe [A-Za-z0-9]+: 1" <<<"$1" && [[ $(grep -c "probe .*: 0" <<<"$1") == 4 ]]' _ "$probe_out"
check "g++ cannot include <spdlog/spdlog.h>" bash -c '! echo "#include <spdlog/spdlog.h>" | g++ -x c++ -fsyntax-only - 2>/dev/null'
check "the loader does not know libspdlog or libfmt" bash -c '! ldconfig -p | grep -E "libspdlog|libfmt\.so"'
check "make cannot run" bash -c '! make --version >/dev/null 2>&1'
check "no network (no pip index)" bash -c '! timeout 20 "$1" -m pip download -q --isolated --no-deps --retries 0 --timeout 3 -d "$2" pytest 2>/dev/null' \
  _ "$work/pyenv/bin/python" "$work/pip-probe"
((fail)) && { say "FAIL: the namespace is not bare; nothing run"; exit 1; }

# The Python extractor (a GPU machine without dpkg) must give dpkg-deb's tree.
for how in dpkg py; do
  rm -rf "$work/unpack-$how"
  AXL_GPU_LDCONFIG=0 AXL_GPU_PY_UNPACK=$([[ $how == py ]] && echo 1 || echo 0) \
    bash "$src/tests/gpu/unpack_deps.sh" "$src/build-deps" "$work/unpack-$how/root" >"$work/unpack-$how.log" 2>&1
done
# tree_of ROOT: every entry's type, mode, path and link target, and each
# file's checksum with ROOT spelt "ROOT" (the relocated .pc files name it).
tree_of() {
  local r f
  r="$(cd "$1" && pwd)"
  (cd "$r" && find . -printf '%y %m %p %l\n' | sort)
  (cd "$r" && find . -type f | sort | while read -r f; do echo "$(sed "s#$r#ROOT#g" "$f" | sha256sum | cut -c1-16) $f"; done)
}
check "the Python .deb extractor gives dpkg-deb's tree (types, modes, links, contents)" \
  diff <(tree_of "$work/unpack-dpkg/root") <(tree_of "$work/unpack-py/root")

# The summary's row for a step: "STEP  TIME  RESULT".
row() { grep -E "^$2 +[0-9]+s +" "$1/0-summary.txt" | sed -E 's/^[a-z_]+ +[0-9]+s +//'; }
files_ok() { # at most 8 files, names of letters/digits/._- only, 0-summary.txt first
  local n names
  names="$(cd "$1" && ls)"
  n="$(wc -l <<<"$names")"
  ((n <= 8)) && ! grep -q -v -E '^[A-Za-z0-9._-]+$' <<<"$names" && [[ $(head -1 <<<"$names") == 0-summary.txt ]]
}
# No OUT (a device run's variable) and no local wheel folder either: this
# machine's pip is configured with PIP_FIND_LINKS, the GPU machine's is not.
common_env=(env -u OUT -u PIP_FIND_LINKS AXL_GPU_TIME_SCALE=4 AXL_GPU_BUDGET_S=2400)

# ---- A. the carried folder, as the GPU machine receives it
echo "-- A. run.sh --quick with the carried folder (copied) and the stand-in Python"
carried="$work/carried"
rm -rf "$carried" && mkdir -p "$carried" && cp -a "$src/build-deps/debs" "$src/build-deps/wheels" "$src/build-deps/MANIFEST.txt" "$carried/"
outA="$work/out-a"
[[ ${AXL_BARE_KEEP:-0} == 1 ]] || rm -rf "$outA" "$work/out-b" "$work/out-c" "$work/out-d" "$work/out-e" "$work/gpu-b"
t0=$SECONDS
"${common_env[@]}" AXL_GPU_BUILD="$work/gpu" AXL_GPU_OUT="$outA" AXL_GPU_DEPS="$carried" PYTHON="$work/pyenv/bin/python" \
  bash "$src/tests/gpu/run.sh" --quick >"$work/run-a.txt" 2>&1
rcA=$?
tA=$((SECONDS - t0))
sed -n '/^STEP/,/^files:/p' "$outA/0-summary.txt" 2>/dev/null
check "exit 0 (rc $rcA, ${tA}s)" test "$rcA" -eq 0
check "the summary is there and says PASS" grep -q '^axl cuda GPU run: PASS' "$outA/0-summary.txt"
check "at most 8 files, well named, 0-summary.txt first" files_ok "$outA"
for s in deps configure build python_install python_smoke; do
  check "$s PASS" test "$(row "$outA" $s)" == PASS
done
for s in cts_cuda cuda_gpu_test pytest_gpu bench_python_launch bench_cuda; do
  check "$s SKIP with the backend's reason" bash -c '[[ $1 == "SKIP (no CUDA device: cuda: "* ]]' _ "$(row "$outA" $s)"
done
check "the probe lists the carried folder and no make" \
  bash -c 'grep -q -E "^  carried +ok" "$1" && grep -q -E "^  make +absent" "$1"' _ "$outA/0-summary.txt"
check "CMake used the carried spdlog (spdlog_DIR under the carried root)" \
  grep -q "^spdlog_DIR:.*=$carried/root/usr/lib/x86_64-linux-gnu/cmake/spdlog" "$work/gpu/CMakeCache.txt"
check "the Ninja generator" grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$work/gpu/CMakeCache.txt"
check "ldconfig registered the carried libraries" grep -q "^ldconfig: registered" "$work/gpu/logs/deps.log"
check "the installed package's ELF files need no carried library (no spdlog/fmt, \$ORIGIN RUNPATHs)" \
  "$work/pyenv/bin/python" "$src/tests/wheel/check_elf_deps.py" --relocatable "$work/gpu/py-site/axl"

# ---- B. nothing carried
echo "-- B. run.sh --quick without the carried folder"
outB="$work/out-b"
t0=$SECONDS
"${common_env[@]}" AXL_GPU_BUILD="$work/gpu-b" AXL_GPU_OUT="$outB" AXL_GPU_DEPS="$work/not-carried" PYTHON="$work/pyenv/bin/python" \
  bash "$src/tests/gpu/run.sh" --quick >"$work/run-b.txt" 2>&1
rcB=$?
tB=$((SECONDS - t0))
sed -n '/^STEP/,/^files:/p' "$outB/0-summary.txt" 2>/dev/null
check "exit non-zero (rc $rcB) within 60 s (${tB}s)" bash -c "[[ $rcB -ne 0 && $tB -lt 60 ]]"
check "the summary is there and says FAIL" grep -q '^axl cuda GPU run: FAIL' "$outB/0-summary.txt"
check "at most 8 files, well named, 0-summary.txt first" files_ok "$outB"
check "deps FAIL naming the folder" bash -c '[[ $1 == "FAIL (no carried folder"* ]]' _ "$(row "$outB" deps)"
check "one fix line: run prepare.sh and carry build-deps" grep -q -E '^  deps: .*tests/gpu/prepare.sh.*carry build-deps' "$outB/0-summary.txt"
check "the probe says the carried folder is missing, with its fix" grep -q -E '^  carried +MISSING .*fix: run tests/gpu/prepare.sh' "$outB/0-summary.txt"
check "configure and build NOT RUN" bash -c '[[ $1 == "NOT RUN"* && $2 == "NOT RUN"* ]]' _ "$(row "$outB" configure)" "$(row "$outB" build)"

# ---- C. a wrong Python and no libnvrtc
echo "-- C. run.sh --quick with Debian's python3 (no pybind11/scikit-build-core) and libnvrtc hidden"
for f in $(ldconfig -p | grep -o -E '/[^ ]*libnvrtc\.so[^ ]*' | xargs -r readlink -f | sort -u); do hide "$f"; done
outC="$work/out-c"
t0=$SECONDS
"${common_env[@]}" AXL_GPU_BUILD="$work/gpu" AXL_GPU_OUT="$outC" AXL_GPU_DEPS="$carried" PYTHON=/usr/bin/python3 \
  bash "$src/tests/gpu/run.sh" --quick >"$work/run-c.txt" 2>&1
rcC=$?
tC=$((SECONDS - t0))
sed -n '/^probe:/,/^files:/p' "$outC/0-summary.txt" 2>/dev/null | grep -E 'MISSING|^STEP|^[a-z_]+ +[0-9]+s|^fix:|^  [a-z_]+: '
check "exit non-zero (rc $rcC, ${tC}s)" test "$rcC" -ne 0
check "the summary is there and says FAIL" grep -q '^axl cuda GPU run: FAIL' "$outC/0-summary.txt"
check "at most 8 files, well named, 0-summary.txt first" files_ok "$outC"
check "the probe: pybind11 and scikit-build-core MISSING, with a fix" \
  bash -c 'grep -q -E "^  pybind11 +MISSING .*fix: " "$1" && grep -q -E "^  scikit-build-core +MISSING .*fix: " "$1"' _ "$outC/0-summary.txt"
check "the probe: libnvrtc MISSING, with a fix (AXL_NVRTC_PATH)" grep -q -E '^  libnvrtc +MISSING .*fix: set AXL_NVRTC_PATH' "$outC/0-summary.txt"
check "the probe: NVML MISSING, with a fix" grep -q -E '^  nvml +MISSING .*fix: ' "$outC/0-summary.txt"
check "build still PASS" test "$(row "$outC" build)" == PASS
check "python_install FAIL" bash -c '[[ $1 == FAIL* ]]' _ "$(row "$outC" python_install)"
check "one fix line for python_install naming pybind11 and PYTHON=" \
  grep -q -E '^  python_install: .*PYTHON=/opt/torch/.venv/bin/python3.*pybind11' "$outC/0-summary.txt"
check "the Python steps after it NOT RUN" bash -c '[[ $1 == "NOT RUN"* ]]' _ "$(row "$outC" pytest_gpu)"

# ---- D. not root's way: no ldconfig registration, LD_LIBRARY_PATH only
echo "-- D. run.sh --quick with AXL_GPU_LDCONFIG=0 (the non-root fallback), the build of A reused"
rm -f /etc/ld.so.conf.d/axl-gpu-deps.conf && ldconfig 2>/dev/null
outD="$work/out-d"
t0=$SECONDS
"${common_env[@]}" AXL_GPU_LDCONFIG=0 AXL_GPU_BUILD="$work/gpu" AXL_GPU_OUT="$outD" AXL_GPU_DEPS="$carried" PYTHON="$work/pyenv/bin/python" \
  bash "$src/tests/gpu/run.sh" --quick >"$work/run-d.txt" 2>&1
rcD=$?
tD=$((SECONDS - t0))
sed -n '/^STEP/,/^files:/p' "$outD/0-summary.txt" 2>/dev/null | grep -E '^(deps|python_install|python_smoke) '
check "exit 0 (rc $rcD, ${tD}s)" test "$rcD" -eq 0
check "deps says LD_LIBRARY_PATH only" grep -q "^ldconfig: not root (or AXL_GPU_LDCONFIG=0): LD_LIBRARY_PATH only" "$work/gpu/logs/deps.log"
check "python_smoke PASS" test "$(row "$outD" python_smoke)" == PASS
check "... with no registration: the ld.so cache lists no carried library" \
  bash -c '! ldconfig -p | grep -q "$1/root/"' _ "$carried"

# ---- E. the hard limits: a cold build in a 45 s budget
echo "-- E. run.sh --quick with AXL_GPU_BUDGET_S=45 and a cold build folder"
outE="$work/out-e"
rm -rf "$work/gpu-e"
t0=$SECONDS
"${common_env[@]}" AXL_GPU_BUDGET_S=45 AXL_GPU_TIME_SCALE=1 AXL_GPU_CCACHE=0 AXL_GPU_BUILD="$work/gpu-e" AXL_GPU_OUT="$outE" \
  AXL_GPU_DEPS="$carried" PYTHON="$work/pyenv/bin/python" bash "$src/tests/gpu/run.sh" --quick >"$work/run-e.txt" 2>&1
rcE=$?
tE=$((SECONDS - t0))
rm -rf "$work/gpu-e"
sed -n '/^STEP/,/^files:/p' "$outE/0-summary.txt" 2>/dev/null | grep -E '^(configure|build|python_install) |^  build:'
check "exit non-zero (rc $rcE) within the budget and the kill grace (${tE}s <= 65s)" bash -c "[[ $rcE -ne 0 && $tE -le 65 ]]"
check "the summary is there and says FAIL" grep -q '^axl cuda GPU run: FAIL' "$outE/0-summary.txt"
check "build FAIL (timeout), with a fix line" \
  bash -c '[[ $1 == "FAIL (timeout"* ]] && grep -q -E "^  build: ran past" "$2"' _ "$(row "$outE" build)" "$outE/0-summary.txt"

if ((fail)); then
  say "FAIL (A ${tA}s, B ${tB}s, C ${tC}s, D ${tD}s, E ${tE}s); outputs: $work/out-{a,b,c,d,e}, full logs $work/run-{a,b,c,d,e}.txt"
  exit 1
fi
say "PASS (A ${tA}s, B ${tB}s, C ${tC}s, D ${tD}s, E ${tE}s)"
exit 0
