#!/usr/bin/env bash
# The main job: install dependencies, build, list plugins and devices, and run
# the quickstart (load a CPU kernel module, copy data in, launch, copy out,
# verify, print the launch trace).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# A separate folder from the test build, so the two commands never fight.
cmake -S . -B build-main -DCMAKE_BUILD_TYPE=Release -DAXL_BUILD_TESTS=OFF -DAXL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-main -j"$(nproc)"
build-main/bin/axl-info
build-main/bin/axl-quickstart
