"""axl.profiler.gpu: the types and their JSON form, GPUDiagContext and
BackgroundRecorder with MAX's errors and timeouts, on this host (no GPU
library: empty results) and against a stand-in libnvidia-ml.so.1 built here
with `cc` (the NVML path end to end)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from axl.profiler import gpu
from axl.profiler.gpu import (
    HARDWARE_THROTTLE_REASONS,
    BackgroundRecorder,
    ClockStats,
    GPUDiagContext,
    GPUStats,
    MemoryStats,
    ThrottleReason,
    UtilizationStats,
)
from axl.profiler.gpu import bgrec
from axl.profiler.gpu._nvml import throttle_reasons_from_bits

from conftest import run_py

HAS_NVML = any(os.path.exists(os.path.join(d, "libnvidia-ml.so.1"))
               for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"))


def sample() -> GPUStats:
    return GPUStats(
        memory=MemoryStats(total_bytes=80, free_bytes=30, used_bytes=50, reserved_bytes=None),
        utilization=UtilizationStats(gpu_usage_percent=99, memory_activity_percent=None),
        clocks=ClockStats(core_mhz=1400, core_max_mhz=1980, mem_mhz=None, mem_max_mhz=2619,
                          throttle_reasons=[ThrottleReason.GPU_IDLE, ThrottleReason.SW_POWER_CAP]))


def test_types_round_trip_through_json():
    s = sample()
    text = json.dumps(s.to_dict())
    assert json.loads(text)["clocks"]["throttle_reasons"] == ["gpu_idle", "sw_power_cap"]
    assert GPUStats.from_dict(json.loads(text)) == s
    bare = GPUStats(memory=s.memory, utilization=s.utilization)
    assert bare.clocks is None and GPUStats.from_dict(json.loads(json.dumps(bare.to_dict()))) == bare


def test_throttle_reasons():
    assert {r.value for r in ThrottleReason} == {
        "gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
        "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting"}
    assert HARDWARE_THROTTLE_REASONS == {"sw_power_cap", "hw_slowdown", "sync_boost", "sw_thermal_slowdown",
                                         "hw_thermal_slowdown", "hw_power_brake_slowdown"}
    assert "gpu_idle" not in HARDWARE_THROTTLE_REASONS
    # Bit order, unknown bits ignored.
    assert throttle_reasons_from_bits(0x1 | 0x8 | 0x100 | 0x8000) == [
        ThrottleReason.GPU_IDLE, ThrottleReason.HW_SLOWDOWN, ThrottleReason.DISPLAY_CLOCK_SETTING]
    assert throttle_reasons_from_bits(0) == []


@pytest.mark.skipif(HAS_NVML, reason="this host has NVML")
def test_diag_context_without_gpu_libraries_is_empty():
    ctx = GPUDiagContext()
    assert ctx.get_stats() == {}  # before enter
    with ctx as c:
        assert c is ctx
        assert c.get_stats() == {}
        with pytest.raises(AssertionError, match="Can't enter an already-entered context"):
            ctx.__enter__()
    assert set(ctx.errors) == {"nvml", "rocm_smi"}


def test_recorder_errors():
    with pytest.raises(ValueError, match="Interval must be non-negative"):
        BackgroundRecorder(interval=-0.1)
    r = BackgroundRecorder(interval=0.01)
    with pytest.raises(RuntimeError, match="Recorder has not finished yet"):
        r.stats
    with r:
        with pytest.raises(RuntimeError, match="Recorder already running"):
            r.__enter__()
        with pytest.raises(RuntimeError, match="Recorder has not finished yet"):
            r.stats
    assert isinstance(r.stats, list) and r.stats
    with pytest.raises(RuntimeError, match="Recorder has already been used once"):
        with r:
            pass


@pytest.mark.skipif(HAS_NVML, reason="this host has NVML")
def test_recorder_samples_empty_dicts_on_a_cpu_host():
    with BackgroundRecorder(interval=0) as r:
        pass
    assert len(r.stats) >= 1 and all(s == {} for s in r.stats)


def test_recorder_exception_in_block_leaves_no_stats():
    r = BackgroundRecorder(interval=0.01)
    with pytest.raises(KeyError):
        with r:
            proc = r._proc
            raise KeyError("x")
    assert proc.poll() is not None  # the child is gone
    with pytest.raises(RuntimeError, match="Recorder has not finished yet"):
        r.stats


def test_recorder_leaves_no_samples_file_on_any_path(monkeypatch, tmp_path):
    """The child's samples file (in TMPDIR) is removed whether the block
    finished (the parent read it) or raised (the child removes it on the
    pipe's end of file); it used to stay in /tmp after a raise."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with BackgroundRecorder(interval=0.01) as r:
        names = [p.name for p in tmp_path.iterdir()]
        assert len(names) == 1 and names[0].startswith("axl-gpu-stats-"), names
    assert r.stats and list(tmp_path.iterdir()) == []
    r = BackgroundRecorder(interval=0.01)
    with pytest.raises(KeyError):
        with r:
            assert len(list(tmp_path.iterdir())) == 1
            proc = r._proc
            raise KeyError("x")
    assert proc.poll() is not None and list(tmp_path.iterdir()) == []


def test_recorder_child_removes_its_file_unless_handed_over(tmp_path):
    """The child alone (no parent to clean up after it): at the pipe's end of
    file, the way out of a parent that gave up, it removes its file."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    child = subprocess.Popen([sys.executable, "-m", "axl.profiler.gpu._bgrec_main", "0.01"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    ready = json.loads(child.stdout.readline())
    assert ready["type"] == "ready_notification" and os.path.dirname(ready["path"]) == str(tmp_path)
    assert os.path.exists(ready["path"])
    child.stdin.close()
    assert child.wait(60) == 1 and child.stdout.read() == b""  # no reply: nobody asked
    child.stdout.close()
    assert list(tmp_path.iterdir()) == []


def test_recorder_removes_the_file_of_a_child_it_had_to_kill(monkeypatch, tmp_path):
    """A child that does not answer is killed (it cannot clean up then): the
    parent removes the file the ready_notification named."""
    monkeypatch.setattr(bgrec, "STOP_TIMEOUT", 0.2)
    stuck = tmp_path / "axl-gpu-stats-stuck.jsonl"
    child = (f"import json, sys, time; open({str(stuck)!r}, 'w').close(); "
             f"sys.stdout.write(json.dumps({{'type': 'ready_notification', 'path': {str(stuck)!r}}}) + '\\n'); "
             "sys.stdout.flush(); time.sleep(60)")
    for raising in (True, False):
        r = BackgroundRecorder()
        monkeypatch.setattr(r, "_command", lambda: [sys.executable, "-c", child])
        with pytest.raises(KeyError if raising else TimeoutError):
            with r:
                assert stuck.exists()
                if raising:
                    raise KeyError("x")
        assert not stuck.exists() and r._proc is None


def test_recorder_child_death_is_reported(monkeypatch):
    r = BackgroundRecorder(interval=0.5)
    monkeypatch.setattr(r, "_command", lambda: [sys.executable, "-m", "axl.profiler.gpu._bgrec_main", "bogus"])
    with pytest.raises(RuntimeError, match=r"Recorder process died with exception: could not convert string"):
        r.__enter__()
    r2 = BackgroundRecorder()
    monkeypatch.setattr(r2, "_command", lambda: [sys.executable, "-c", "pass"])
    with pytest.raises(RuntimeError, match="Recorder process died with no message"):
        r2.__enter__()


def test_recorder_ready_timeout(monkeypatch):
    monkeypatch.setattr(bgrec, "READY_TIMEOUT", 0.3)
    r = BackgroundRecorder()
    monkeypatch.setattr(r, "_command", lambda: [sys.executable, "-c", "import time; time.sleep(30)"])
    with pytest.raises(TimeoutError):
        r.__enter__()
    assert r._proc is None


def test_protocol_message_size_limit():
    from axl.profiler.gpu import _protocol

    _protocol.encode({"type": "die_notification", "cause": "x" * 200})
    with pytest.raises(ValueError, match="PIPE_BUF"):
        _protocol.encode({"type": "die_notification", "cause": "x" * (_protocol.PIPE_BUF + 1)})


FAKE_NVML = r"""
/* A stand-in libnvidia-ml.so.1: three devices, the second refusing access
 * (skipped), the third without SM clocks (graphics clock fallback). */
#include <string.h>
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } mem_v2;
typedef struct { unsigned gpu, memory; } util;
typedef struct { unsigned pid; unsigned long long used; } proc;
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 4 ? "Insufficient Permissions" : "Not Supported"; }
int nvmlDeviceGetCount_v2(unsigned* n) { *n = 3; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) {
  if (i == 1) return 4;
  *h = (void*)(unsigned long)(i + 1); return 0; }
int nvmlDeviceGetMemoryInfo_v2(void* h, mem_v2* m) {
  if (m->version != (sizeof(mem_v2) | (2u << 24))) return 3;
  m->total = 1000ull * (unsigned long)h; m->reserved = 10; m->used = 300; m->free = m->total - 310; return 0; }
int nvmlDeviceGetUtilizationRates(void* h, util* u) { u->gpu = 40 + (unsigned)(unsigned long)h; u->memory = 7; return 0; }
int nvmlDeviceGetClockInfo(void* h, int type, unsigned* v) {
  if ((unsigned long)h == 3 && type == 1) return 3;
  *v = type == 2 ? 2600 : (type == 1 ? 1500 : 1400); return 0; }
int nvmlDeviceGetMaxClockInfo(void* h, int type, unsigned* v) {
  if ((unsigned long)h == 3 && type == 1) return 3;
  *v = type == 2 ? 2619 : (type == 1 ? 1980 : 1900); return 0; }
int nvmlDeviceGetCurrentClocksThrottleReasons(void* h, unsigned long long* bits) { *bits = 0x1 | 0x4 | 0x8000; return 0; }
int nvmlDeviceGetComputeRunningProcesses(void* h, unsigned* n, proc* p) {
  p[0].pid = 42; p[0].used = 100; p[1].pid = 43; p[1].used = ~0ull; *n = 2; return 0; }
"""


@pytest.fixture(scope="module")
def fake_nvml_dir(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler for the stand-in NVML")
    d = tmp_path_factory.mktemp("nvml")
    (d / "nvml.c").write_text(FAKE_NVML)
    subprocess.run([cc, "-shared", "-fPIC", str(d / "nvml.c"), "-o", str(d / "libnvidia-ml.so.1")], check=True)
    return d


def test_nvml_path_end_to_end_with_a_stand_in_library(fake_nvml_dir):
    code = """
        import json
        from axl.profiler.gpu import GPUDiagContext, BackgroundRecorder
        from axl.profiler.gpu._nvml import NVMLContext
        from axl.profiler.gpu.types import stats_to_json_dict
        with GPUDiagContext() as ctx:
            print(json.dumps(stats_to_json_dict(ctx.get_stats()), sort_keys=True))
        n = NVMLContext()
        print(json.dumps([n.get_process_memory_bytes(42), n.get_process_memory_bytes(43),
                          n.get_process_memory_bytes(7)]))
        n.close()
        with BackgroundRecorder(interval=0.01) as r:
            pass
        print(sorted(r.stats[0]), type(r.stats[0]["nv0"]).__name__)
    """
    p = run_py(code, env={"LD_LIBRARY_PATH": str(fake_nvml_dir)})
    lines = p.stdout.splitlines()
    stats = json.loads(lines[0])
    assert sorted(stats) == ["nv0", "nv1"]  # the refusing device is skipped
    assert stats["nv0"]["memory"] == {"total_bytes": 1000, "free_bytes": 690, "used_bytes": 300,
                                      "reserved_bytes": 10}
    assert stats["nv0"]["utilization"] == {"gpu_usage_percent": 41, "memory_activity_percent": 7}
    assert stats["nv0"]["clocks"] == {"core_mhz": 1500, "core_max_mhz": 1980, "mem_mhz": 2600,
                                      "mem_max_mhz": 2619, "throttle_reasons": ["gpu_idle", "sw_power_cap"]}
    assert stats["nv1"]["memory"]["total_bytes"] == 3000
    assert stats["nv1"]["clocks"]["core_mhz"] == 1400  # SM unsupported: graphics clock
    assert stats["nv1"]["clocks"]["core_max_mhz"] == 1900
    assert json.loads(lines[1]) == [200, None, None]  # 100 on each of two devices; all-ones skipped
    assert lines[2] == "['nv0', 'nv1'] GPUStats"
