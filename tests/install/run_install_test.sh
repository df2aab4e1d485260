#!/usr/bin/env bash
# usage: run_install_test.sh BUILD_DIR
#
# Installs BUILD_DIR into a temporary prefix, moves the prefix elsewhere (the
# tree must be relocatable), then builds tests/install/consumer out of tree
# twice, through find_package(axl) and through pkg-config, and runs both with
# only LD_LIBRARY_PATH naming the prefix's lib folder and no AXL_* variables:
# each must print OK, which proves the installed plugins are found next to
# the installed libaxl.so. The installed axl-info is run with no
# LD_LIBRARY_PATH at all, through its $ORIGIN rpath.
#
# Environment: CMAKE_COMMAND (default cmake), CC (default cc).
# Exit status: 0 passed, 1 failed, 77 skipped the pkg-config half because
# pkg-config is not installed (apt-get install pkgconf).
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: $0 BUILD_DIR   (a configured and built axl build folder)" >&2
  exit 1
fi
build_dir=$(cd "$1" && pwd -P)
here=$(cd "$(dirname "$0")" && pwd -P)
cmake_bin=${CMAKE_COMMAND:-cmake}
cc_bin=${CC:-cc}

# Nothing may steer discovery but the install itself.
for v in $(compgen -e | grep '^AXL_' || true); do unset "$v"; done
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/axl-install-test.XXXXXX")
tmp=$(cd "$tmp" && pwd -P)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

step "install $build_dir"
"$cmake_bin" --install "$build_dir" --prefix "$tmp/staged" >"$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
# Relocation: nothing installed may remember the --prefix it was given.
mkdir -p "$tmp/moved"
mv "$tmp/staged" "$tmp/moved/prefix"
prefix="$tmp/moved/prefix"

libaxl=$(find "$prefix" -maxdepth 3 -name libaxl.so -print -quit)
[ -n "$libaxl" ] || fail "no libaxl.so under $prefix"
libdir=$(dirname "$libaxl")
step "layout (libdir ${libdir#"$prefix"/})"
for f in include/axl/axl.h include/axl/axl.hpp include/axl/plugin.h include/axl/status.h \
         include/axl/cpu_kernel.h; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
# AxlPlugin.cmake and its version script: axl_add_plugin for backend
# authors (cts_template builds a plugin with it); axl-cts's cpu module.
for f in axl/plugins/libaxl_plugin_cpu.so cmake/axl/axlConfig.cmake \
         cmake/axl/axlConfigVersion.cmake cmake/axl/axlTargets.cmake pkgconfig/axl.pc \
         cmake/axl/AxlPlugin.cmake cmake/axl/axl_plugin.map axl-cts/libaxl_cts_kernels.so; do
  [ -f "$libdir/$f" ] || fail "${libdir#"$prefix"/}/$f is not installed"
done
if grep -rl "$tmp/staged" "$libdir/cmake" "$libdir/pkgconfig" >/dev/null 2>&1; then
  fail "the package files name the install-time prefix $tmp/staged"
fi

run_consumer() {  # $1: executable, $2: label
  local out
  out=$(LD_LIBRARY_PATH="$libdir" "$1" 2>&1) || { echo "$out" >&2; fail "$2 consumer exited non-zero"; }
  echo "   $out"
  grep -q '^OK' <<<"$out" || fail "$2 consumer did not print OK"
}

step "consumer through find_package(axl)"
"$cmake_bin" -S "$here/consumer" -B "$tmp/cmake-build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc_bin" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release \
  >"$tmp/cmake-configure.log" 2>&1 ||
  { cat "$tmp/cmake-configure.log" >&2; fail "configuring the consumer failed"; }
found=$(sed -n 's/^axl_DIR:PATH=//p' "$tmp/cmake-build/CMakeCache.txt")
[ "$found" = "$libdir/cmake/axl" ] || fail "find_package(axl) found '$found', not the installed package"
"$cmake_bin" --build "$tmp/cmake-build" >"$tmp/cmake-build.log" 2>&1 ||
  { cat "$tmp/cmake-build.log" >&2; fail "building the consumer failed"; }
run_consumer "$tmp/cmake-build/consumer" "find_package"

step "installed axl-info (rpath only)"
info="$prefix/bin/axl-info"
[ -x "$info" ] || fail "bin/axl-info is not installed"
json=$("$info" --json) || fail "installed axl-info exited non-zero"
grep -q "\"path\": \"$libdir/axl/plugins/libaxl_plugin_cpu.so\"" <<<"$json" ||
  { echo "$json" >&2; fail "axl-info did not load the cpu plugin from the installed folder"; }
echo "   cpu plugin loaded from ${libdir#"$prefix"/}/axl/plugins"

step "consumer through pkg-config"
if ! command -v pkg-config >/dev/null; then
  echo "SKIP: pkg-config not found (apt-get install pkgconf)" >&2
  exit 77
fi
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs axl) || fail "pkg-config --cflags --libs axl failed"
echo "   pkg-config: $flags"
plugindir=$(pkg-config --variable=plugindir axl)
if [ ! -d "$plugindir" ] || [ "$(cd "$plugindir" && pwd -P)" != "$libdir/axl/plugins" ]; then
  fail "pkg-config plugindir '$plugindir' is not $libdir/axl/plugins"
fi
# Sources before libraries: linkers that default to --as-needed drop a
# library named before the objects that use it.
# shellcheck disable=SC2086  # $flags is a list of words
"$cc_bin" "$here/consumer/consumer.c" -o "$tmp/pc-consumer" $flags ||
  fail "compiling the consumer with pkg-config's flags failed"
run_consumer "$tmp/pc-consumer" "pkg-config"

echo "PASS"
