"""axl.profiler.oneshot: backend detection, the nsys re-exec with a fake
`nsys` script on PATH, the nsys stats kernel table, the cProfile table, and
what a user without nsys gets (CPU table, launch table, axl timeline)."""

from __future__ import annotations

import io
import json
import os
import pstats
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from axl.profiler import oneshot
from axl.profiler.oneshot import (
    OneShotCapture,
    ProfileBackend,
    default_profile_output,
    detect_backend,
    inject_trace_flags,
    maybe_reexec_under_nsys,
    profiled_region,
    render_nsys_kernel_summary,
)

from conftest import run_py

# `nsys profile ... --output OUT ... python args`: runs the program with the
# environment it got and writes OUT (unless FAKE_NSYS_NO_REPORT is set);
# `nsys stats ... REP`: prints $FAKE_NSYS_CSV. Every call is logged.
FAKE_NSYS = """#!/bin/sh
echo "$@" >> "$FAKE_NSYS_LOG"
if [ "$1" = "profile" ]; then
  shift
  out=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --output) out="$2"; shift 2 ;;
      --*) shift ;;
      *) break ;;
    esac
  done
  env | grep -E '^(_AXL_PROFILE|AXL_ENABLE_PROFILING)' | sort >> "$FAKE_NSYS_LOG"
  "$@"
  rc=$?
  [ -z "$FAKE_NSYS_NO_REPORT" ] && echo report > "$out"
  exit $rc
fi
if [ "$1" = "stats" ]; then
  cat "$FAKE_NSYS_CSV"
  exit "${FAKE_NSYS_STATS_RC:-0}"
fi
exit 2
"""

CSV = """\
** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):

Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
60.0,"6,000,000",3,2000000,2000000,1000000,3000000,0,gemm_kernel
30.0,3000000,10,300000,300000,1,1,0,softmax
bad,row
10.0,1000000,1,1000000,1000000,1,1,0,
"""


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(FAKE_NSYS)
    nsys.chmod(nsys.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "kern.csv").write_text(CSV)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_NSYS_LOG": str(tmp_path / "nsys.log"),
           "FAKE_NSYS_CSV": str(tmp_path / "kern.csv")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def test_profile_backend_and_detection(tmp_path, monkeypatch, fake_nsys):
    assert ProfileBackend(True, True, True).can_capture_gpu
    for flags in ((False, True, True), (True, False, True), (True, True, False)):
        assert not ProfileBackend(*flags).can_capture_gpu
    with pytest.raises(Exception):
        ProfileBackend(True, True, True).nsys_available = False  # frozen
    assert detect_backend().nsys_available  # the fake on PATH
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    b = detect_backend()
    assert not b.nsys_available and not b.nvidia_gpu_present


def test_default_profile_output(tmp_path, monkeypatch):
    monkeypatch.delenv("BUILD_WORKSPACE_DIRECTORY", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_profile_output() == str(tmp_path / "axl-profile.nsys-rep")
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", "/ws")
    assert default_profile_output() == "/ws/axl-profile.nsys-rep"


def test_inject_trace_flags():
    assert inject_trace_flags(["a", "--trace-file", "x", "--trace-file=y", "b"], "out.json") == [
        "a", "b", "--trace", "--trace-file", "out.json"]
    assert inject_trace_flags(["--trace", "c"], "o") == ["--trace", "c", "--trace-file", "o"]


def test_render_nsys_kernel_summary(fake_nsys, tmp_path):
    out = io.StringIO()
    assert render_nsys_kernel_summary(str(tmp_path / "r.nsys-rep"), 1, out)
    lines = out.getvalue().splitlines()
    assert lines[1] == "=== Top 1 GPU kernels (66.7% of GPU time, 9.00 ms total) ==="
    assert lines[2].split() == ["%", "total", "calls", "kernel"]
    assert lines[3].split() == ["66.7", "6.00", "ms", "3", "gemm_kernel"]
    assert len(lines) == 4
    log = Path(fake_nsys["FAKE_NSYS_LOG"]).read_text()
    assert "stats --force-export=true --report cuda_gpu_kern_sum --format csv" in log
    out = io.StringIO()
    assert render_nsys_kernel_summary("r", 15, out)
    assert "softmax" in out.getvalue() and "Top 2 GPU kernels (100.0%" in out.getvalue()


def test_render_nsys_kernel_summary_failures(fake_nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_STATS_RC", "1")
    assert not render_nsys_kernel_summary("r", 5, io.StringIO())
    monkeypatch.setenv("FAKE_NSYS_STATS_RC", "0")
    (tmp_path / "kern.csv").write_text("Time (%),Total Time (ns),Instances,Name\n")
    assert not render_nsys_kernel_summary("r", 5, io.StringIO())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not render_nsys_kernel_summary("r", 5, io.StringIO())


def hot_function():
    return sum(i * i for i in range(200_000))


def test_profiled_region_prints_cpu_and_launch_tables(cpu, queue):
    import numpy as np
    from axl.driver import Buffer
    from axl.dtype import DType

    out = io.StringIO()
    with profiled_region(top_n=5, out=out):
        hot_function()
        Buffer(DType.float32, (32,), cpu).inplace_copy_from(Buffer.from_numpy(np.zeros(32, dtype=np.float32)))
        queue.synchronize()
    text = out.getvalue()
    assert "=== Top 5 Python/CPU functions (" in text
    assert "test_profiler_oneshot.py" in text and "<genexpr>" in text
    assert "=== Top 1 axl launches (1 total) ===" in text
    row = text.splitlines()[-1].split()
    assert row[:3] == ["1", "128", "memcpy"]


def test_profiled_region_on_exception_still_reports():
    out = io.StringIO()
    with pytest.raises(ZeroDivisionError):
        with profiled_region(out=out):
            hot_function()
            1 / 0
    assert "Python/CPU functions" in out.getvalue()


def test_profiled_region_dumps_for_the_parent(tmp_path, monkeypatch):
    dump = tmp_path / "d.cprofile"
    monkeypatch.setenv(oneshot.CPROFILE_DUMP_ENV, str(dump))
    out = io.StringIO()
    with profiled_region(out=out):
        hot_function()
    assert out.getvalue() == ""
    assert any(func == "hot_function" for (_, _, func) in pstats.Stats(str(dump)).stats)


def test_cprofile_table_without_samples():
    out = io.StringIO()
    oneshot.render_cprofile_table(pstats.Stats(), 5, out)
    assert out.getvalue() == "=== Python/CPU functions: no samples captured ===\n"


def test_oneshot_capture_is_idempotent():
    out = io.StringIO()
    c = OneShotCapture(top_n=3, out=out)
    c.end_and_finalize()  # never started: nothing
    assert out.getvalue() == ""
    c2 = OneShotCapture(top_n=3, out=out)
    c2.start()
    c2.start()
    hot_function()
    c2.end_and_finalize()
    c2.end_and_finalize()
    assert out.getvalue().count("Python/CPU functions") == 1


def test_under_nsys_child_returns_at_once(monkeypatch):
    monkeypatch.setenv(oneshot.UNDER_NSYS_ENV, "1")
    out = io.StringIO()
    maybe_reexec_under_nsys("x", backend=ProfileBackend(True, True, True), out=out)
    assert out.getvalue() == ""


PROGRAM = """
import sys
import numpy as np
from axl.profiler import oneshot
from axl.profiler.oneshot import ProfileBackend, maybe_reexec_under_nsys, profiled_region

class FakeCudart:  # the test host has no libcudart
    def cudaProfilerStart(self):
        print("cudaProfilerStart", flush=True); return 0
    def cudaProfilerStop(self):
        print("cudaProfilerStop", flush=True); return 0
oneshot._load_cudart = lambda: FakeCudart()

def busy():
    return sum(i * i for i in range(100_000))

backend = ProfileBackend({nsys}, True, True)
maybe_reexec_under_nsys({output!r}, top_n=5, backend=backend)
from axl.driver import Buffer, CPU
from axl.dtype import DType
from axl.profiler import Tracer
with profiled_region(top_n=5):
    with Tracer("work"):
        busy()
        Buffer(DType.float32, (8,), CPU()).inplace_copy_from(Buffer.from_numpy(np.ones(8, dtype=np.float32)))
print("program done", flush=True)
sys.exit(3)
"""


def test_reexec_under_fake_nsys(tmp_path, fake_nsys):
    output = str(tmp_path / "run.nsys-rep")
    p = run_py(PROGRAM.format(nsys=True, output=output), env=fake_nsys, check=False)
    assert p.returncode == 3, p.stderr  # the child's status
    text = p.stdout
    log = Path(fake_nsys["FAKE_NSYS_LOG"]).read_text()
    assert (f"profile --trace=cuda,nvtx --capture-range=cudaProfilerApi --capture-range-end=stop "
            f"--output {output} --force-overwrite=true {sys.executable} -c") in log
    assert "AXL_ENABLE_PROFILING=detailed" in log and "_AXL_PROFILE_UNDER_NSYS=1" in log
    assert f"_AXL_PROFILE_CPROFILE_DUMP_PATH={output}.cprofile" in log
    # Child output first, then the parent's CPU table (from the dump) and GPU table.
    order = [text.index(s) for s in ("cudaProfilerStart", "cudaProfilerStop", "program done",
                                     "Python/CPU functions", "GPU kernels", "Full profile saved to")]
    assert order == sorted(order)
    assert "<genexpr>" in text and "gemm_kernel" in text
    assert f"Open with: nsys-ui {output}" in text
    assert not os.path.exists(output + ".cprofile")  # the dump is removed


def test_reexec_nsys_writes_no_report(tmp_path, fake_nsys):
    output = str(tmp_path / "run.nsys-rep")
    p = run_py(PROGRAM.format(nsys=True, output=output), env={**fake_nsys, "FAKE_NSYS_NO_REPORT": "1"},
               check=False)
    assert p.returncode == 3
    assert f"--profile: nsys exited with rc=3 without writing {output}. No kernel summary produced." in p.stdout


def test_reexec_empty_kernel_table(tmp_path, fake_nsys):
    (tmp_path / "kern.csv").write_text("")
    output = str(tmp_path / "run.nsys-rep")
    p = run_py(PROGRAM.format(nsys=True, output=output), env=fake_nsys, check=False)
    assert f"No GPU kernel data found in profile ({output}). The capture window may have been empty." in p.stdout


def test_without_nsys_the_user_gets_cpu_launch_tables_and_the_timeline(tmp_path):
    output = str(tmp_path / "run.nsys-rep")
    p = run_py(PROGRAM.format(nsys=False, output=output), env={"PATH": os.environ["PATH"]}, check=False)
    assert p.returncode == 3, p.stderr
    text = p.stdout
    assert "Nsight Systems (`nsys`) not found on PATH; only Python/CPU profile will be captured." in text
    assert "cudaProfilerStart" not in text  # not the nsys child
    assert "=== Top 5 Python/CPU functions" in text and "<genexpr>" in text
    assert "=== Top 1 axl launches (1 total) ===" in text
    timeline = str(tmp_path / "run.trace.json")
    assert f"axl timeline saved to: {timeline}" in text
    evs = json.loads(Path(timeline).read_text())["traceEvents"]
    assert any(e.get("cat") == "span" and e["name"] == "work" for e in evs)
    assert any(e.get("cat") == "launch" for e in evs)


def test_no_gpu_and_no_cudart_notes(tmp_path, monkeypatch):
    out = io.StringIO()
    code = """
        import io
        from axl.profiler.oneshot import ProfileBackend, maybe_reexec_under_nsys
        for b in (ProfileBackend(True, False, True), ProfileBackend(True, True, False)):
            maybe_reexec_under_nsys("{}/x.nsys-rep", backend=b)
    """.format(tmp_path)
    p = run_py(code)
    assert "no NVIDIA GPU detected; only Python/CPU profile will be captured." in p.stdout
    assert "libcudart could not be loaded; only Python/CPU profile will be captured." in p.stdout
