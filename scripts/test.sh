#!/usr/bin/env bash
# The whole test suite: a normal build, an ASan+UBSan build and a TSan build
# (threaded parts: queues, loader, tracing, fork), each run by ctest; then the
# Python package installed into a fresh venv and its pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs="$(nproc)"

echo "== build: RelWithDebInfo"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== build: ASan+UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DAXL_SANITIZE=ON -DAXL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE no_asan

echo "== build: TSan"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DAXL_TSAN=ON -DAXL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-tsan -j"$jobs"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -L threads

if command -v clang++ >/dev/null; then
  echo "== fuzz: libFuzzer+ASan+UBSan (clang), 20 s each: max_file, device_spec, cli_count"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DAXL_BUILD_FUZZERS=ON \
    -DAXL_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" --target axl_fuzz_max_file axl_fuzz_device_spec axl_fuzz_cli_count
  # target:seed folder. New inputs go to a scratch folder (the first corpus
  # folder), never into the checked-in seeds. A crash makes libFuzzer exit
  # non-zero and stops CI.
  # The scratch folders go on every way out, a crash (set -e) included.
  fuzz_out="$(mktemp -d "${TMPDIR:-/tmp}/axl-fuzz.XXXXXX")"
  trap 'rm -rf "$fuzz_out"' EXIT
  for pair in max_file:corpus device_spec:corpus_device_spec cli_count:corpus_cli_count; do
    mkdir "$fuzz_out/${pair%%:*}"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      build-fuzz/bin/axl_fuzz_"${pair%%:*}" -max_total_time=20 -max_len=4096 -artifact_prefix=build-fuzz/ \
      "$fuzz_out/${pair%%:*}" tests/fuzz/"${pair#*:}"
  done
  rm -rf "$fuzz_out"
  trap - EXIT
else
  echo "== fuzz: skipped (no clang++; the corpus replay ran in ctest)"
fi

echo "== python: pip install . into a fresh venv, pytest tests/python"
bash python/run_tests.sh

# The wheel installs anywhere (tests/wheel/wheel_test.sh): scripts/wheel.sh
# builds it (pip wheel, auditwheel repair: the manylinux tag), every ELF file
# in it needs only glibc/libstdc++ or the wheel's own, and a fresh venv
# imports it and runs copies in a mount namespace where the system's spdlog
# and fmt libraries are empty files. Its build folder is kept in build-wheel/.
echo "== wheel: scripts/wheel.sh, then imported with the system's spdlog/fmt hidden (tests/wheel/wheel_test.sh)"
wheel_t0=$SECONDS
bash tests/wheel/wheel_test.sh
echo "== wheel: took $((SECONDS - wheel_t0))s"

# The GPU check on a bare machine (tests/gpu/bare_env_test.sh): in a private
# mount and network namespace without spdlog/fmt/Catch2/benchmark, make or a
# pip index, tests/gpu/run.sh must build and install from the carried
# build-deps/ alone and SKIP every GPU step. A full Release build plus the
# wheel (ccache, if installed, makes a rerun fast); SKIPs without root or
# unshare.
echo "== gpu: tests/gpu/run.sh on a bare machine (tests/gpu/bare_env_test.sh)"
bare_t0=$SECONDS
bash tests/gpu/bare_env_test.sh
echo "== gpu: bare-machine check took $((SECONDS - bare_t0))s"
