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

echo "== python: pip install . into a fresh venv, pytest tests/python"
bash python/run_tests.sh
