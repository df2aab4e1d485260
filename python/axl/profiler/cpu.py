"""CPU time of processes, with the names and semantics of MAX's
``max.profiler.cpu`` (built on psutil, imported when first needed)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional


def _psutil():
    try:
        import psutil
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("axl.profiler.cpu needs psutil (pip install psutil)") from e
    return psutil


@dataclass
class CPUMetrics:
    """CPU use over a measured interval. Percentages are of one CPU, so they
    exceed 100 with several busy cores or processes."""

    user: float  # total user CPU time, seconds
    user_percent: float
    system: float  # total system CPU time, seconds
    system_percent: float
    elapsed: float  # wall time, seconds


class CPUMetricsCollector:
    """Measures the CPU time of ``pids`` over a ``with`` block. A process
    that does not exist (at the start or the end) is left out of the sums;
    ``psutil.AccessDenied`` propagates. Children are not included unless
    listed."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.clock_start: Optional[float] = None
        self.clock_end: Optional[float] = None
        self.cpu_times_start: dict[int, Any] = {}
        self.cpu_times_end: dict[int, Any] = {}

    def _times(self) -> dict[int, Any]:
        psutil = _psutil()
        out: dict[int, Any] = {}
        for pid in self.pids:
            try:
                out[pid] = psutil.Process(pid).cpu_times()
            except psutil.NoSuchProcess:
                out[pid] = None
        return out

    def __enter__(self) -> "CPUMetricsCollector":
        self.clock_start = time.monotonic()
        self.cpu_times_start = self._times()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.clock_end = time.monotonic()
        self.cpu_times_end = self._times()

    def get_stats(self) -> CPUMetrics:
        # MAX's check is on truthiness, so a clock of 0.0 reads as unset too.
        if not self.clock_start or not self.clock_end:
            raise RuntimeError("Must use CPUMetricsCollector as a context manager before calling get_stats")
        elapsed = self.clock_end - self.clock_start
        if elapsed <= 0:
            raise RuntimeError("Elapsed time must be positive")
        user = system = 0.0
        for pid in self.pids:
            start, end = self.cpu_times_start.get(pid), self.cpu_times_end.get(pid)
            if start is None or end is None:
                continue
            user += end.user - start.user
            system += end.system - start.system
        return CPUMetrics(
            user=user,
            user_percent=user / elapsed * 100,
            system=system,
            system_percent=system / elapsed * 100,
            elapsed=elapsed,
        )


def collect_pids_for_port(port: int) -> list[int]:
    """The processes listening on TCP/UDP ``port`` and all their descendants
    (order not defined). Empty when nothing listens. Seeing other users'
    sockets may need privileges."""
    psutil = _psutil()
    pids: set[int] = set()
    for conn in psutil.net_connections(kind="inet"):
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
            pids.add(conn.pid)
    if not pids:
        return []
    procs = [(p.info["pid"], p.info["ppid"]) for p in psutil.process_iter(["pid", "ppid"])]
    grew = True
    while grew:  # add children of anything already in the set, to a fixed point
        grew = False
        for pid, ppid in procs:
            if ppid in pids and pid not in pids:
                pids.add(pid)
                grew = True
    return list(pids)


__all__ = ["CPUMetrics", "CPUMetricsCollector", "collect_pids_for_port"]
