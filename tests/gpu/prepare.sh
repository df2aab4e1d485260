#!/usr/bin/env bash
# Gathers, on this (networked, Debian 12) machine, what the bare GPU machine
# lacks for tests/gpu/run.sh, into one ignored folder that travels with the
# source tree (docs/backends.md, "First run on a GPU machine"):
#   build-deps/debs/    the Debian packages of spdlog, fmt, Catch2 and Google
#                       Benchmark (headers, CMake configs, shared libraries):
#                       the GPU machine has no apt-get and no network, and its
#                       image carries none of them
#   build-deps/wheels/  Python wheels for test or build requirements that the
#                       GPU machine's python3 lacks (empty today: its image
#                       has every one, see KNOWN_THERE below)
#   build-deps/MANIFEST.txt  package, version, file, sha256 (run.sh checks it)
# Prints the folder's size and the folders to carry. Idempotent: a second run
# downloads nothing it already has.
#
#   tests/gpu/prepare.sh            Environment: AXL_GPU_DEPS (folder,
#                                   default build-deps in the source root)
# Exit status: 0 when every package is in the folder.
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="${AXL_GPU_DEPS:-$src/build-deps}"
# Debian 12 names (apt-cache depends libspdlog-dev: libspdlog1.10, libfmt-dev;
# libfmt-dev: libfmt9; libbenchmark-dev: libbenchmark1debian). catch2 is
# Debian's Catch2 v2 (header-only + a static main), what tests/CMakeLists.txt
# is written for. Runtime libraries are listed because the -dev packages hold
# only the unversioned .so links, and the CMake configs of spdlog and fmt
# refuse to load when the files they name are missing. Nothing run.sh builds
# loads libspdlog or libfmt at run time (they are compiled into libaxl, issue
# 14); libbenchmark is loaded only by benchmarks run.sh does not build.
DEBS=(libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 catch2 libbenchmark-dev libbenchmark1debian)
# Python distributions the GPU machine's /opt/torch/.venv is known to hold
# (the package list of /work/.library/device/KINDS.md, names normalised as
# pip does). Anything pyproject's [test] extras or build requirements name
# that is not here is downloaded as a wheel for Python 3.12 / manylinux.
KNOWN_THERE=" pytest numpy psutil ml-dtypes hypothesis pybind11 scikit-build-core cmake ninja
  packaging pathspec pluggy iniconfig sortedcontainers attrs torch cupy-cuda13x jax nvidia-ml-py mpi4py "

mkdir -p "$deps/debs" "$deps/wheels" || { echo "prepare: cannot create $deps"; exit 1; }
# run.sh unpacks into $deps/root on the machine it runs on: a local unpack is
# of no use there and would only make the carried folder bigger.
rm -rf "$deps/root" "$deps/root.tmp"
rc=0

# 1. Debian packages. Only a deb that is not there yet is downloaded, so the
# step is idempotent and offline once done.
have_lists=1
for p in "${DEBS[@]}"; do
  if compgen -G "$deps/debs/${p}_*.deb" >/dev/null; then
    continue
  fi
  if ! apt-cache show "$p" >/dev/null 2>&1 && ((have_lists)); then
    # A fresh container often has empty package lists: fetch them once.
    echo "prepare: apt-cache knows no $p: apt-get update"
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get update -qq || echo "prepare: apt-get update failed (network?)"
    have_lists=0
  fi
  # apt downloads as the unprivileged _apt user when it can; the target
  # folder is ours, so as root let it write there directly (no warning).
  sandbox=()
  [[ $(id -u) -eq 0 ]] && sandbox=(-o APT::Sandbox::User=root)
  if ! (cd "$deps/debs" && apt-get download -qq "${sandbox[@]}" "$p"); then
    echo "prepare: FAILED to download $p: check the name with apt-cache policy $p (Debian 12) and the network"
    rc=1
  fi
done
# apt names files with an epoch as "1%3a..." and versions with '+': keep
# names to letters, digits and ._- so every copy tool carries them as is.
for deb in "$deps"/debs/*.deb; do
  [[ -e "$deb" ]] || continue
  safe="$(basename "$deb" | sed -e 's/%3a/-/g' -e 's/[^A-Za-z0-9._-]/-/g')"
  [[ "$safe" != "$(basename "$deb")" ]] && mv -f "$deb" "$deps/debs/$safe"
done

# 2. Python wheels for requirements the GPU machine lacks.
reqs="$(python3 - "$src/pyproject.toml" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
names = set()
# build-system requires and the [test] extra, without a TOML parser (this
# machine may run Python 3.10, which has no tomllib).
for key in ("requires", "test"):
    m = re.search(r'^%s\s*=\s*\[(.*?)\]' % key, text, re.M | re.S)
    if m:
        for item in re.findall(r'"([^"]+)"', m.group(1)):
            names.add(item)
for spec in sorted(names):
    print(spec)
EOF
)"
while read -r spec; do
  [[ -z "$spec" ]] && continue
  name="$(sed -E 's/[<>=!~ ;\[].*//' <<<"$spec" | tr 'A-Z_.' 'a-z--')"
  [[ "$KNOWN_THERE" == *" $name "* ]] && continue
  if compgen -G "$deps/wheels/$(tr '-' '_' <<<"$name")-*.whl" >/dev/null; then
    continue
  fi
  echo "prepare: $spec is not known on the GPU machine: downloading a wheel"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d "$deps/wheels" "$spec" || { echo "prepare: FAILED to download a wheel of $spec"; rc=1; }
done <<<"$reqs"

# 3. The manifest run.sh checks (a truncated copy fails there with its name).
{
  for deb in "$deps"/debs/*.deb; do
    [[ -e "$deb" ]] || continue
    printf '%s %s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
      "debs/$(basename "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)"
  done
  for whl in "$deps"/wheels/*.whl; do
    [[ -e "$whl" ]] || continue
    printf 'wheel - %s %s\n' "wheels/$(basename "$whl")" "$(sha256sum "$whl" | cut -d' ' -f1)"
  done
} >"$deps/MANIFEST.txt"

for p in "${DEBS[@]}"; do
  grep -q "^$p " "$deps/MANIFEST.txt" || { echo "prepare: $p is missing from $deps"; rc=1; }
done
# Two versions of one package would unpack over each other: keep the newest.
dups="$(cut -d' ' -f1 "$deps/MANIFEST.txt" | grep -v '^wheel$' | sort | uniq -d)"
[[ -n "$dups" ]] && { echo "prepare: several versions of: $dups (delete the old .deb files)"; rc=1; }

size_kib="$(du -sk "$deps" | cut -f1)"
echo "prepare: $(grep -c . "$deps/MANIFEST.txt") files in $deps, $((size_kib / 1024)) MiB ($size_kib KiB; the limit is 64 MiB with the source tree)"
cat "$deps/MANIFEST.txt" | awk '{ print "  " $1 " " $2 }'
rel="${deps#"$src"/}"
echo "carry: $rel"
exit $rc
