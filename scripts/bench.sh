#!/usr/bin/env bash
# Builds Release and runs every benchmark; each prints its ratio against a
# baseline measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAXL_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)"
cmake -S . -B build-bench-notrace -DCMAKE_BUILD_TYPE=Release -DAXL_BUILD_TESTS=OFF -DAXL_NO_TRACE_HOOK=ON >/dev/null
cmake --build build-bench-notrace -j"$(nproc)"
for b in build-bench/bin/bench_*; do echo "== $b"; "$b"; done
