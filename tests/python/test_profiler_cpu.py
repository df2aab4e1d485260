"""axl.profiler.cpu: MAX's CPUMetricsCollector and collect_pids_for_port
semantics, measured on real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

psutil = pytest.importorskip("psutil")

from axl.profiler.cpu import CPUMetrics, CPUMetricsCollector, collect_pids_for_port  # noqa: E402


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1


def test_collector_measures_this_process():
    with CPUMetricsCollector([os.getpid()]) as c:
        burn(0.2)
    stats = c.get_stats()
    assert isinstance(stats, CPUMetrics)
    assert stats.elapsed >= 0.2
    assert 0.15 <= stats.user + stats.system <= stats.elapsed + 0.1
    assert stats.user_percent == pytest.approx(stats.user / stats.elapsed * 100)
    assert stats.system_percent == pytest.approx(stats.system / stats.elapsed * 100)
    assert c.clock_start < c.clock_end
    assert set(c.cpu_times_start) == set(c.cpu_times_end) == {os.getpid()}


def test_get_stats_errors():
    c = CPUMetricsCollector([os.getpid()])
    msg = "Must use CPUMetricsCollector as a context manager before calling get_stats"
    with pytest.raises(RuntimeError, match=msg):
        c.get_stats()
    with c:
        with pytest.raises(RuntimeError, match=msg):  # end clock not set yet
            c.get_stats()
    c.clock_end = c.clock_start
    with pytest.raises(RuntimeError, match="Elapsed time must be positive"):
        c.get_stats()


def test_missing_process_is_left_out():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    gone = p.pid
    with CPUMetricsCollector([gone, os.getpid()]) as c:
        burn(0.05)
    assert c.cpu_times_start[gone] is None and c.cpu_times_end[gone] is None
    assert c.get_stats().user + c.get_stats().system > 0


def test_collector_can_be_entered_again():
    c = CPUMetricsCollector([os.getpid()])
    with c:
        pass
    first = c.clock_end
    with c:
        burn(0.01)
    assert c.clock_start >= first


SERVER = textwrap.dedent("""
    import socket, subprocess, sys, time
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(s.getsockname()[1], child.pid, flush=True)
    time.sleep(60)
""")


def test_collect_pids_for_port_finds_the_listener_and_its_children():
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port, child = (int(v) for v in server.stdout.readline().split())
        pids = collect_pids_for_port(port)
        assert sorted(pids) == sorted([server.pid, child])
    finally:
        for proc in psutil.Process(server.pid).children(recursive=True):
            proc.kill()
        server.kill()
        server.wait()


def test_collect_pids_for_port_nothing_listening():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # bound, not listening
    port = s.getsockname()[1]
    try:
        assert collect_pids_for_port(port) == []
    finally:
        s.close()
