#!/usr/bin/env bash
# The main job: install dependencies, install the axl Python package (core,
# plugins and extension in one wheel) into a venv, list plugins and devices,
# and run the quickstart: pick the best device, upload a numpy array, run a
# kernel, time it with events, show the launch trace, verify the result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
venv="${AXL_VENV:-.venv}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check ".[numpy]"
"$venv/bin/python" -m axl info
"$venv/bin/python" examples/quickstart.py
