"""axl in an MPI job: examples/mpi_allreduce.py run by ``mpirun -n 2`` (CPU
Buffers straight into mpi4py, a staged Allreduce of virtual-device
Buffers), each rank writing its own profiler timeline through
``AXL_PROFILE_OUTPUT=...{rank}...``.

Skipped, with the reason, where ``mpirun`` (Open MPI: ``scripts/deps.sh``)
or a working mpi4py (the ``test`` extra) is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, needs_virtual

EXAMPLE = REPO / "examples" / "mpi_allreduce.py"


def _mpi4py_problem() -> str | None:
    """Why mpi4py cannot run here (None when it can). Checked in a child:
    importing mpi4py.MPI loads libmpi, which may be absent even when the
    wheel is installed."""
    p = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; print(MPI.Get_library_version())"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 0:
        return None
    last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
    return f"mpi4py cannot load MPI here: {last}"


def _mpirun() -> list[str]:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not found on PATH (install Open MPI: scripts/deps.sh)")
    problem = _mpi4py_problem()
    if problem:
        pytest.skip(problem)
    # --oversubscribe: two ranks even on a machine with fewer cores.
    return [mpirun, "-n", "2", "--oversubscribe"]


def _mpi_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXL_")}
    # Open MPI refuses to start as root (CI containers) without both.
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra)
    return env


@needs_virtual
def test_mpi_allreduce_example_two_ranks(tmp_path):
    cmd = _mpirun() + [sys.executable, str(EXAMPLE)]
    env = _mpi_env(AXL_VIRTUAL_DEVICES="1", AXL_ENABLE_PROFILING="on",
                   AXL_PROFILE_OUTPUT=str(tmp_path / "trace.{rank}.json"))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    # Matched in the whole stdout, not per line: mpirun forwards each rank's
    # output in chunks and may join two ranks' lines (seen in CI:
    # "...(api virtual)rank 0/2: OK: ...").
    ok = sorted(re.findall(r"rank (\d+)/2: OK: .*?\(api (\w+)\)", p.stdout))
    assert ok == [("0", "virtual"), ("1", "virtual")], p.stdout + p.stderr  # step 2 on the virtual accelerator
    # One timeline per rank (no overwrite), each valid JSON with its rank's
    # copies: the upload, the staging round trip and the final download.
    assert sorted(f.name for f in tmp_path.iterdir()) == ["trace.0.json", "trace.1.json"]
    for rank in (0, 1):
        events = json.loads((tmp_path / f"trace.{rank}.json").read_text())["traceEvents"]
        assert any("HtoD" in e.get("name", "") for e in events), events
        assert any("DtoH" in e.get("name", "") for e in events), events


# Runs the example with rank 1 contributing other values than every rank
# expects of it.
WRONG_RANK_1 = """
import importlib.util, sys
from mpi4py import MPI
spec = importlib.util.spec_from_file_location("mpi_allreduce", sys.argv[1])
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
right = example.values
if MPI.COMM_WORLD.Get_rank() == 1:
    example.values = lambda rank: right(rank) + 1
sys.exit(example.main())
"""


def test_mpi_allreduce_example_detects_a_wrong_result(tmp_path):
    """The example's checks can fail: when rank 1 sends other values than
    the others expect, a rank reports FAIL and the job exits non-zero."""
    script = tmp_path / "wrong_rank_1.py"
    script.write_text(WRONG_RANK_1)
    cmd = _mpirun() + [sys.executable, str(script), str(EXAMPLE)]
    p = subprocess.run(cmd, env=_mpi_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "FAIL Sendrecv of CPU Buffers" in p.stdout, p.stdout + p.stderr
    assert ": OK: " not in p.stdout, p.stdout
