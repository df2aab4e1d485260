#!/usr/bin/env bash
# usage: cts_template_test.sh BUILD_DIR
#
# docs/plugin-guide.md, tried as a new backend author would: install
# BUILD_DIR into a temporary prefix, copy plugins/metal_stub to a folder
# outside the source tree, rename it to a backend called "acme" (file names,
# target, info.name, api), build it with CMake against the installed axl
# only, and run the installed axl-cts on it with --plugin. The stub cannot
# run anywhere, so the report must say "unavailable" with the stub's reason,
# skip every device case, fail nothing, and parse as JSON. Beside the plugin
# it builds a C kernel module (tools/axl-cts/kernels) through the installed
# package, which must provide axl_add_plugin, and certifies the module with
# the installed axl-cts on the cpu backend (--module cpu=FILE).
#
# Environment: CMAKE_COMMAND (default cmake), CXX (default c++).
# Exit status: 0 passed, 1 failed, 77 skipped (no cmake or no C++ compiler).
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: $0 BUILD_DIR   (a configured and built axl build folder)" >&2
  exit 1
fi
build_dir=$(cd "$1" && pwd -P)
here=$(cd "$(dirname "$0")" && pwd -P)
source_dir=$(cd "$here/../.." && pwd -P)
cmake_bin=${CMAKE_COMMAND:-cmake}
cxx_bin=${CXX:-c++}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

command -v "$cmake_bin" >/dev/null || skip "cmake not found ($cmake_bin)"
command -v "$cxx_bin" >/dev/null || skip "no C++ compiler ($cxx_bin)"

# A new user's shell: nothing steers discovery or the build but the install.
for v in $(compgen -e | grep '^AXL_' || true); do unset "$v"; done
unset LD_LIBRARY_PATH CMAKE_PREFIX_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/axl-cts-template.XXXXXX")
tmp=$(cd "$tmp" && pwd -P)
trap 'rm -rf "$tmp"' EXIT

step "install $build_dir"
prefix="$tmp/prefix"
"$cmake_bin" --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
cts="$prefix/bin/axl-cts"
[ -x "$cts" ] || fail "bin/axl-cts is not installed"

step "copy plugins/metal_stub out of the tree and rename it to acme"
src="$tmp/work/acme"
mkdir -p "$tmp/work"
cp -r "$source_dir/plugins/metal_stub" "$src"
case "$src" in "$source_dir"/*) fail "the copy is inside the source tree" ;; esac
mv "$src/metal_stub.cpp" "$src/acme.cpp"
sed -i 's/metal_stub/acme/g' "$src/CMakeLists.txt"
# The guide's edits to the source: the name (must match the file name) and
# the device API. The unavailable message still mentions Metal: the guide
# tells the author to rewrite it along with backend_init.
sed -i -e 's/^constexpr const char\* kName = "metal_stub";/constexpr const char* kName = "acme";/' \
       -e 's/^constexpr const char\* kApi = "metal";/constexpr const char* kApi = "acme";/' "$src/acme.cpp"
grep -q 'kName = "acme"' "$src/acme.cpp" && grep -q 'kApi = "acme"' "$src/acme.cpp" ||
  fail "acme.cpp: the kName/kApi lines the guide names were not found; update the guide and this test"
if grep -q metal_stub "$src/CMakeLists.txt"; then fail "CMakeLists.txt still names metal_stub"; fi

step "add a C kernel module beside the plugin (tools/axl-cts/kernels, as the guide shows)"
cp -r "$source_dir/tools/axl-cts/kernels" "$src/kernels"
sed -i 's/^if(COMMAND axl_add_plugin)$/add_subdirectory(kernels)\n&/' "$src/CMakeLists.txt"
grep -q '^add_subdirectory(kernels)$' "$src/CMakeLists.txt" ||
  fail "CMakeLists.txt: no 'if(COMMAND axl_add_plugin)' line to add the kernels before; update the guide and this test"

step "build acme against the installed axl"
"$cmake_bin" -S "$src" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx_bin" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log" >&2; fail "configuring acme failed"; }
found=$(sed -n 's/^axl_DIR:PATH=//p' "$tmp/build/CMakeCache.txt")
case "$found" in "$prefix"/*) ;; *) fail "find_package(axl) found '$found', not the installed package" ;; esac
"$cmake_bin" --build "$tmp/build" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "building acme failed"; }
plugin="$tmp/build/libaxl_plugin_acme.so"
[ -f "$plugin" ] || fail "the build made no libaxl_plugin_acme.so"
# The stub writes its own version script only when the package has no
# axl_add_plugin; the installed package must export the helper.
[ ! -e "$tmp/build/axl_plugin.map" ] ||
  fail "the installed package did not provide axl_add_plugin (the stub fell back to its own rules)"
module="$tmp/build/kernels/libaxl_cts_kernels.so"
[ -f "$module" ] || fail "the build made no kernels/libaxl_cts_kernels.so beside the plugin"
if command -v nm >/dev/null; then
  exports=$(nm -D --defined-only "$plugin" | awk '{print $NF}' | grep -v -e '^AXL_PLUGIN_1$' \
            -e '^_init$' -e '^_fini$' -e '^__bss_start$' -e '^_edata$' -e '^_end$' | sort -u)
  [ "$exports" = "axl_plugin_negotiate@@AXL_PLUGIN_1" ] ||
    fail "libaxl_plugin_acme.so exports more than axl_plugin_negotiate: $exports"
fi

step "installed axl-cts --plugin libaxl_plugin_acme.so"
report="$tmp/r.json"
set +e
"$cts" --plugin "$plugin" --report "$report" >"$tmp/cts.log" 2>&1
rc=$?
set -e
cat "$tmp/cts.log"
[ $rc -lt 128 ] || fail "axl-cts died with signal $((rc - 128))"
[ $rc -eq 0 ] || fail "axl-cts exited $rc (a case failed)"
[ -f "$report" ] || fail "axl-cts wrote no report"

step "installed axl-cts --backend cpu --module cpu=<the module built beside acme>"
module_report="$tmp/module.json"
set +e
"$cts" --backend cpu --module "cpu=$module" --report "$module_report" "cts.module.*" >"$tmp/cts-module.log" 2>&1
rc=$?
set -e
cat "$tmp/cts-module.log"
[ $rc -eq 0 ] || fail "axl-cts on the module built beside acme exited $rc"
for c in cts.module.load/0 cts.module.get_kernel/0 cts.module.unload_while_queued/0; do
  grep -q "\"$c\"" "$module_report" || fail "$c did not pass with the module built beside acme"
done

step "the report"
if command -v python3 >/dev/null; then
  python3 -m json.tool "$report" >/dev/null || fail "the report is not valid JSON"
  python3 - "$report" <<'EOF' || fail "the report does not say what it should"
import json, sys
r = json.load(open(sys.argv[1]))
names = [b["name"] for b in r["backends"]]
assert names == ["acme"], f"backends under test: {names}, expected only acme"
b = r["backends"][0]
assert b["api"] == "acme", f"api {b['api']!r}"
assert b["state"] == "unavailable", f"state {b['state']!r}, expected unavailable"
assert "Metal needs an Apple platform" in b["reason"], f"reason {b['reason']!r}"
c = b["counts"]
assert c["fail"] == 0 and r["totals"]["fail"] == 0, f"failures: {b['failed']}"
assert c["skip"] > 0, "nothing was skipped"
for s in b["skipped"]:
    assert "unavailable" in s["reason"], f"{s['case']} skipped for another reason: {s['reason']}"
for p in b["passed"]:
    assert p.startswith("cts.negotiate."), f"{p} passed on a backend that cannot run"
print(f"   acme: {b['state']} ({b['reason']}); pass {c['pass']}, skip {c['skip']}, "
      f"unsupported {c['unsupported']}, fail {c['fail']}; core {r['core']['version']}")
EOF
else
  # No python3: the same checks, more coarsely, through CMake's JSON parser.
  cat >"$tmp/check.cmake" <<'EOF'
file(READ "${REPORT}" j)
string(JSON name GET "${j}" backends 0 name)
string(JSON state GET "${j}" backends 0 state)
string(JSON fails GET "${j}" totals fail)
string(JSON skips GET "${j}" backends 0 counts skip)
if(NOT name STREQUAL "acme" OR NOT state STREQUAL "unavailable" OR NOT fails EQUAL 0 OR NOT skips GREATER 0)
  message(FATAL_ERROR "report: ${name} ${state}, ${fails} failed, ${skips} skipped")
endif()
EOF
  "$cmake_bin" -DREPORT="$report" -P "$tmp/check.cmake" || fail "the report does not say what it should"
fi

echo "PASS"
