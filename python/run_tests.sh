#!/usr/bin/env bash
# The Python package's CI entry: builds and installs axl into a fresh virtual
# environment (`pip install .[test]`: the core, the plugins and axl._core in
# one wheel), then runs tests/python against the *installed* package.
#
# pytest runs from an empty temporary folder, so `import axl` can only find
# the installed package, never the source folder python/axl.
#
# Environment:
#   PYTHON         interpreter to make the venv with (default: python3, >= 3.10)
#   AXL_PY_VENV    use (and keep) this venv folder instead of a temporary one
#   PYTEST_ARGS    extra pytest arguments (e.g. "-x -k trace")
# Exit status: pytest's (non-zero on any failure), or the failing step's.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"

if [[ -n "${AXL_PY_VENV:-}" ]]; then
  venv="$AXL_PY_VENV"
else
  venv="$(mktemp -d "${TMPDIR:-/tmp}/axl-venv-test.XXXXXX")"
fi
workdir="$(mktemp -d "${TMPDIR:-/tmp}/axl-pytest.XXXXXX")"
trap 'rm -rf "$workdir"; [[ -z "${AXL_PY_VENV:-}" ]] && rm -rf "$venv"' EXIT

echo "== venv: $venv ($("$python" --version))"
"$python" -m venv "$venv"

echo "== pip install $src[test]"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$src[test]"

echo "== pytest tests/python (from $workdir)"
cd "$workdir"
# -p no:cacheprovider: nothing is written into the source tree.
# shellcheck disable=SC2086
"$venv/bin/python" -m pytest "$src/tests/python" -q -p no:cacheprovider ${PYTEST_ARGS:-}
