"""The quickstart and the overhead benchmark run end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import OPENCL, REPO, skip_unless_available


def test_quickstart():
    p = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK: all 1048576 elements match" in p.stdout
    assert "launch trace:" in p.stdout and "saxpy" in p.stdout


def test_quickstart_on_opencl():
    """The documented command (docs/python.md, README): the quickstart picks
    PoCL's OpenCL device, compiles saxpy from OpenCL C and shows the device
    and the launch trace."""
    skip_unless_available(OPENCL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXL_")}
    p = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py")], capture_output=True,
                       text=True, timeout=300, env={**env, **OPENCL.env})
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"^gpu:\d+ +opencl ", p.stdout, re.M), p.stdout  # the device table
    assert re.search(r"^using Device\(type=gpu,id=\d+\) \(api opencl\): ", p.stdout, re.M), p.stdout
    assert "falling back" not in p.stdout, p.stdout
    assert "OK: all 1048576 elements match" in p.stdout
    trace = p.stdout[p.stdout.index("launch trace:"):]
    assert re.search(r"launch +saxpy", trace) and "HtoD" in trace and "DtoH" in trace, trace


def test_quickstart_usage():
    p = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), "--help"], capture_output=True,
                       text=True)
    assert p.returncode == 2 and "usage" in p.stderr


def test_benchmark_smoke():
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "python_overhead.py"), "--iters", "2000",
                        "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "RATIO python_launch/cpp_launch" in p.stdout
