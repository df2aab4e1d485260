#!/usr/bin/env bash
# scripts/wheel.sh's bookkeeping, without building a wheel (seconds, not the
# minutes of tests/wheel/wheel_test.sh): PYTHON is a stand-in interpreter that
# reports a chosen version and whose venv's pip and auditwheel only write
# files named as the real ones would. Checks that
#   1. the build venv is the interpreter's: another version gets a venv of its
#      own (and a cp312 wheel), a rerun with the same one reuses its venv, and
#      a venv whose interpreter changed (another build of 3.11) is made again;
#   2. OUTDIR keeps every wheel but the one replaced (another interpreter's,
#      an older version's, a file of the user's);
#   3. a relative AXL_WHEEL_WORK and OUTDIR work, taken from the current
#      folder.
#
#   tests/wheel/wheel_script_test.sh      Exit status: 0 when every check held.
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
real="$(command -v python3)" || { echo "wheel_script_test: no python3"; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/axl-wheel-script.XXXXXX")" || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...: an assertion
  if "${@:2}"; then echo "  ok   $1"; else echo "  FAIL $1"; fail=1; fi
}

# fake_python PATH TAG VERSION: an interpreter whose sys.implementation.
# cache_tag and sys.version say TAG and VERSION (the rest is python3's).
# `-m venv DIR` makes DIR/bin/python, the same interpreter with DIR/stubs on
# its path, and logs "venv DIR"; that one's `-m pip install` writes stub
# modules and bin/auditwheel, its `-m pip wheel -w RAW` writes
# RAW/axl-0.1.0-<tag>-<tag>-linux_x86_64.whl holding VERSION and a run count.
fake_python() {
  local path="$1" tag="$2" version="$3" stubs="${4:-}"
  cat >"$path" <<EOF
#!/usr/bin/env bash
tag='$tag' version='$version' stubs='$stubs' log='$tmp/log'
$(declare -f fake_body)
fake_body "\$@"
EOF
  chmod +x "$path"
}
# shellcheck disable=SC2154  # tag, version, stubs, log: set by fake_python's script
fake_body() {
  case "$1 ${2:-}" in
    "-c "*)
      exec "$REAL_PYTHON" -c "
import sys, types
sys.implementation = types.SimpleNamespace(**{**vars(sys.implementation), 'cache_tag': '$tag'})
sys.version = '$version'
sys.path[:0] = ['$stubs'] if '$stubs' else []
code = sys.argv.pop(1)
exec(compile(code, '-c', 'exec'))" "$2" "${@:3}" ;;
    "-m venv")
      mkdir -p "$3/bin" "$3/stubs"
      FAKE_SELF="$3/bin/python" FAKE_STUBS="$3/stubs" "$FAKE_MAKER" "$tag" "$version"
      echo "venv $3" >>"$log" ;;
    "-m pip")
      local bin; bin="$(dirname "$0")"
      if [[ $3 == install ]]; then
        touch "$stubs"/{scikit_build_core,pybind11,auditwheel}.py
        cat >"$bin/auditwheel" <<'AW'
#!/usr/bin/env bash
case "$1" in
  show) echo "  platform tag: \"manylinux_2_35_x86_64\"" ;;
  repair) mkdir -p "$3"; w="$(basename "$4")"; cp "$4" "$3/${w/linux_x86_64/manylinux_2_35_x86_64}" ;;
esac
AW
        chmod +x "$bin/auditwheel"
      elif [[ $3 == wheel ]]; then
        local raw="" prev=""
        for a in "$@"; do [[ $prev == -w ]] && raw="$a"; prev="$a"; done
        mkdir -p "$raw"
        local n; n=$(($(grep -c '^wheel' "$log" 2>/dev/null || true) + 1))
        echo "wheel $n" >>"$log"
        local t="cp${tag#cpython-}"
        echo "$version run $n" >"$raw/axl-0.1.0-$t-$t-linux_x86_64.whl"
      fi ;;
  esac
}
maker="$tmp/make-fake"
cat >"$maker" <<EOF
#!/usr/bin/env bash
tmp='$tmp'
$(declare -f fake_python fake_body)
fake_python "\$FAKE_SELF" "\$1" "\$2" "\$FAKE_STUBS"
EOF
chmod +x "$maker"
export REAL_PYTHON="$real" FAKE_MAKER="$maker"
mkdir -p "$tmp/bin"
fake_python "$tmp/bin/py311" cpython-311 "3.11.2 (main) [GCC 12]"
fake_python "$tmp/bin/py312" cpython-312 "3.12.1 (main) [GCC 12]"
fake_python "$tmp/bin/py311b" cpython-311 "3.11.9 (other build) [GCC 13]"

wheel() { # wheel PYTHON: scripts/wheel.sh from $tmp/cwd with relative paths
  (cd "$tmp/cwd" && AXL_WHEEL_WORK=work PYTHON="$1" bash "$src/scripts/wheel.sh" out >"$tmp/out.log" 2>&1)
}
venvs() { grep -c '^venv' "$tmp/log" 2>/dev/null || true; }
mkdir -p "$tmp/cwd/out"
out="$tmp/cwd/out"
echo "keep me" >"$out/axl-0.0.9-cp311-cp311-manylinux_2_35_x86_64.whl"
echo "mine" >"$out/notes.txt"
w311="$out/axl-0.1.0-cp311-cp311-manylinux_2_35_x86_64.whl"
w312="$out/axl-0.1.0-cp312-cp312-manylinux_2_35_x86_64.whl"

echo "wheel_script_test: 1. PYTHON 3.11, relative AXL_WHEEL_WORK and OUTDIR"
check "wheel.sh succeeds" wheel "$tmp/bin/py311"
check "it prints the wheel's absolute path last" bash -c '[[ $(tail -1 "$1") == "wheel: $2" ]]' _ "$tmp/out.log" "$w311"
check "the cp311 wheel is in OUTDIR, under the current folder" test -f "$w311"
check "the build venv is in AXL_WHEEL_WORK, under the current folder, keyed by version" \
  test -x "$tmp/cwd/work/venv-cpython-311/bin/python"
check "one venv made" test "$(venvs)" = 1

echo "wheel_script_test: 2. PYTHON 3.12 after 3.11"
check "wheel.sh succeeds" wheel "$tmp/bin/py312"
check "a venv of its own is made" test "$(venvs)" = 2
check "the wheel is cp312" test -f "$w312"
check "the cp311 wheel, the older version's and the user's file stay" \
  test -f "$w311" -a -f "$out/axl-0.0.9-cp311-cp311-manylinux_2_35_x86_64.whl" -a -f "$out/notes.txt"

echo "wheel_script_test: 3. PYTHON 3.11 again, then another build of 3.11"
check "wheel.sh succeeds" wheel "$tmp/bin/py311"
check "its venv is reused" test "$(venvs)" = 2
check "only the cp311 wheel is replaced (run 3)" grep -q "run 3" "$w311"
check "the cp312 wheel stays (run 2)" grep -q "run 2" "$w312"
check "wheel.sh succeeds" wheel "$tmp/bin/py311b"
check "a venv of another 3.11 is made again" test "$(venvs)" = 3
check "the wheel is that interpreter's" grep -q "3.11.9 (other build)" "$w311"
check "the other wheels stay" test -f "$w312" -a -f "$out/notes.txt"

((fail)) && { echo "wheel_script_test: FAIL"; sed 's/^/    /' "$tmp/out.log"; exit 1; }
echo "wheel_script_test: PASS"
