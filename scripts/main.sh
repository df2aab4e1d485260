#!/usr/bin/env bash
# The main job: install dependencies, build, list plugins and devices, and run
# the quickstart (load a CPU kernel module, copy data in, launch, copy out,
# verify, print the launch trace).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DAXL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target axl-info axl-quickstart
build/bin/axl-info
build/bin/axl-quickstart
