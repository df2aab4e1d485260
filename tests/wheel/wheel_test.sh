#!/usr/bin/env bash
# The wheel installs anywhere (issue 14, item 3): the wheel scripts/wheel.sh
# builds here (Debian 12, with libspdlog-dev and libfmt-dev installed) must
# import and run on a machine without Debian's spdlog and fmt packages.
#   1. scripts/wheel.sh: pip wheel ., then auditwheel repair (the manylinux
#      tag; the build venv and the CMake build are kept in build-wheel/, so a
#      rerun rebuilds only what changed)
#   2. every ELF file in the wheel: tests/wheel/check_elf_deps.py
#      --relocatable (no NEEDED spdlog/fmt, only base libraries or the
#      wheel's own found through $ORIGIN, no absolute RUNPATH)
#   3. the wheel installed with --no-index into a fresh venv (numpy, for the
#      copy check, from the index first)
#   4. in a private mount namespace (unshare --mount, as root) where every
#      libspdlog.so* and libfmt.so* file of the system is an empty file, so
#      that neither can be loaded (checked first: ctypes fails on each), from
#      an empty folder: import axl, scan the devices, a CPU copy and a copy
#      through a virtual accelerator (a plugin dlopen()ed from the wheel),
#      `python -m axl info` (the wheel's axl-info); all under LD_DEBUG=libs,
#      and no object loaded may be spdlog or fmt.
# Without root or unshare, step 4 runs unhidden, LD_DEBUG's list being the
# only check, and the script says "WEAKER" (still exit 0 when that holds).
#
#   tests/wheel/wheel_test.sh      Environment: PYTHON (python3),
#                                  AXL_WHEEL_WORK (build-wheel)
# Exit status: 0 when every check held.
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Absolute, and exported so the --inner run below sees the same folder:
# env -C runs the checks from an empty folder, where a relative path would
# name another place.
work="$(mkdir -p "${AXL_WHEEL_WORK:-$src/build-wheel}" && cd "${AXL_WHEEL_WORK:-$src/build-wheel}" && pwd)" || exit 1
export AXL_WHEEL_WORK="$work"
python="${PYTHON:-python3}"
say() { echo "wheel_test: $*"; }
fail=0
check() { # check DESCRIPTION COMMAND...: an assertion
  if "${@:2}"; then echo "  ok   $1"; else echo "  FAIL $1"; fail=1; fi
}

# The run inside the namespace: check the hiding, then the package.
run_checks() {
  local venv="$1" hidden="$2" trace="$work/ld-debug" empty
  rm -rf "$trace" && mkdir -p "$trace"
  empty="$(mktemp -d "${TMPDIR:-/tmp}/axl-wheel-run.XXXXXX")"
  local f
  for f in $hidden; do
    check "the loader cannot load the hidden $f" \
      bash -c '! "$1" -c "import ctypes, sys; ctypes.CDLL(sys.argv[1])" "$2" 2>/dev/null' _ "$venv/bin/python" "$f"
  done
  # shellcheck disable=SC2016
  check "import axl, scan devices, a CPU copy and a virtual accelerator's copy" \
    env -C "$empty" AXL_VIRTUAL_DEVICES=1 LD_DEBUG=libs LD_DEBUG_OUTPUT="$trace/py" "$venv/bin/python" -c '
import sys
import numpy as np
import axl
from axl import driver
from axl.dtype import DType
assert axl.__file__.startswith(sys.argv[1]), axl.__file__
specs = driver.scan_available_devices()
print("  devices:", specs)
assert driver.accelerator_count() == 1, driver.accelerator_count()
host = np.arange(4096, dtype=np.float32)
for device in (driver.CPU(), driver.Accelerator(0)):
    dst = driver.Buffer(DType.float32, (4096,), device=device)
    dst.inplace_copy_from(driver.Buffer.from_numpy(host))
    back = dst.to(driver.CPU()).to_numpy()
    assert (back == host).all(), device
    print("  copy of 16 KiB through", device, "ok")
' "$venv"
  check "python -m axl info lists the cpu and virtual plugins as loaded" \
    bash -c 'out="$(env -C "$1" AXL_VIRTUAL_DEVICES=1 LD_DEBUG=libs LD_DEBUG_OUTPUT="$2/info" "$3" -m axl info 2>&1)"; echo "$out" | sed "s/^/    /" | head -20
             grep -E -q "cpu.*loaded" <<<"$out" && grep -E -q "virtual.*loaded" <<<"$out"' _ "$empty" "$trace" "$venv/bin/python"
  check "LD_DEBUG saw the wheel's libaxl.so.1 and plugins loaded" \
    bash -c 'grep -h "calling init:" "$1"/* | grep -q "$2/.*/axl/lib/libaxl.so.1" && grep -h "calling init:" "$1"/* | grep -q "libaxl_plugin_virtual.so"' \
    _ "$trace" "$venv"
  check "no process loaded spdlog or fmt (LD_DEBUG=libs)" \
    bash -c '! grep -h -E "calling init: .*lib(spdlog|fmt)" "$1"/*' _ "$trace"
  rm -rf "$empty"
}

if [[ ${1:-} == --inner ]]; then
  venv="$2"
  # Mount changes must not leak to the machine (shared propagation is the
  # default with systemd).
  mount --make-rprivate / || { say "FAIL: mount --make-rprivate /"; exit 1; }
  empty_file="$work/empty-file"
  : >"$empty_file" && chmod 0644 "$empty_file"
  # Every file the loader could take spdlog or fmt from: what its cache knows
  # and what the usual folders hold, links followed to the real files.
  hidden="$( { ldconfig -p | grep -o -E '/[^ ]*lib(spdlog|fmt)[^ /]*\.so[^ ]*'
               ls /usr/lib/*/lib{spdlog,fmt}*.so* /usr/lib/lib{spdlog,fmt}*.so* /usr/local/lib/lib{spdlog,fmt}*.so* 2>/dev/null
             } | xargs -r readlink -f | sort -u)"
  for f in $hidden; do
    mount --bind "$empty_file" "$f" || { say "FAIL: could not hide $f"; exit 1; }
  done
  say "hid $(wc -w <<<"$hidden") files: $(tr '\n' ' ' <<<"$hidden")"
  run_checks "$venv" "$hidden"
  exit $fail
fi

mkdir -p "$work" || exit 1
t0=$SECONDS
say "1. scripts/wheel.sh"
AXL_WHEEL_WORK="$work" PYTHON="$python" bash "$src/scripts/wheel.sh" "$work/dist" 2>&1 | tee "$work/wheel.log"
wheel="$(grep '^wheel: ' "$work/wheel.log" | tail -1 | cut -d' ' -f2-)"
[[ -f $wheel ]] || { say "FAIL: scripts/wheel.sh made no wheel"; exit 1; }
say "built ${wheel##*/} in $((SECONDS - t0))s"
policy="$(grep -o -E 'platform tag: *"[^"]+"' "$work/wheel.log" | head -1 | cut -d'"' -f2)"
check "auditwheel: the built wheel meets a manylinux policy ($policy)" bash -c '[[ $1 == manylinux_* ]]' _ "$policy"
check "the repaired wheel carries that tag" bash -c '[[ $1 == *"$2"* ]]' _ "${wheel##*/}" "$policy"

say "2. the ELF files of the wheel"
unpacked="$work/unpacked"
rm -rf "$unpacked" && mkdir -p "$unpacked"
"$python" -m zipfile -e "$wheel" "$unpacked"
check "check_elf_deps.py --relocatable: base libraries and the wheel's own only" \
  "$python" "$src/tests/wheel/check_elf_deps.py" --relocatable "$unpacked"
check "no library grafted by auditwheel (axl.libs/)" bash -c '! compgen -G "$1/axl.libs/*" >/dev/null' _ "$unpacked"

say "3. a fresh venv"
venv="$work/venv-run"
rm -rf "$venv"
"$python" -m venv "$venv" &&
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check numpy &&
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps "$wheel" ||
  { say "FAIL: could not install $wheel into $venv"; exit 1; }

say "4. import and run with the system's spdlog and fmt hidden"
if [[ $(id -u) -eq 0 ]] && command -v unshare >/dev/null && unshare --mount true 2>/dev/null; then
  unshare --mount bash "${BASH_SOURCE[0]}" --inner "$venv" || fail=1
else
  say "WEAKER: no root or no unshare --mount here: the libraries stay visible, LD_DEBUG's list is the check"
  run_checks "$venv" ""
fi
((fail)) && { say "FAIL ($((SECONDS - t0))s)"; exit 1; }
say "PASS ($((SECONDS - t0))s, ${wheel##*/})"
exit 0
