"""The quickstart and the overhead benchmark run end to end."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_quickstart():
    p = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK: all 1048576 elements match" in p.stdout
    assert "launch trace:" in p.stdout and "saxpy" in p.stdout


def test_quickstart_usage():
    p = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), "--help"], capture_output=True,
                       text=True)
    assert p.returncode == 2 and "usage" in p.stderr


def test_benchmark_smoke():
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "python_overhead.py"), "--iters", "2000",
                        "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "RATIO python_launch/cpp_launch" in p.stdout
