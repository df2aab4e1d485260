"""BackgroundRecorder: samples every GPU in a child process while the
``with`` block runs (MAX's max.profiler.gpu.BackgroundRecorder)."""

from __future__ import annotations

import json
import math
import numbers
import os
import subprocess
import sys
from typing import Any, Optional, Protocol

from . import _protocol
from .types import GPUStats, stats_from_json_dict

# Seconds; module attributes so tests can shorten them.
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0
EXIT_TIMEOUT = 5.0
# The longest interval a sleep takes everywhere (threading's TIMEOUT_MAX is
# far larger on Linux; a day between samples is already no recording).
_MAX_INTERVAL = 86400.0


class GpuStatsRecorder(Protocol):
    """Starts sampling on enter, stops on exit; ``stats`` after exit."""

    stats: list[dict[str, GPUStats]]

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Any: ...


class BackgroundRecorder:
    """Samples ``GPUDiagContext.get_stats()`` every ``interval`` seconds (the
    first at once; spacing is interval plus sampling time) in a child
    process, so sampling never competes with this interpreter's GIL. Single
    use. On a host without GPUs ``stats`` is a list of empty dicts."""

    def __init__(self, *, interval: float = 1.0) -> None:
        # MAX checks only the sign; NaN, infinity and values too large for
        # a sleep are refused here too, rather than by the child after a spawn.
        if isinstance(interval, bool) or not isinstance(interval, numbers.Real):
            raise TypeError(f"BackgroundRecorder: interval must be a number of seconds, got "
                            f"{type(interval).__name__} {interval!r}")
        if interval < 0:
            raise ValueError("Interval must be non-negative")
        if not math.isfinite(interval) or interval > _MAX_INTERVAL:
            raise ValueError(f"BackgroundRecorder: interval must be a finite number of seconds up to "
                             f"{_MAX_INTERVAL:g}, got {interval!r}")
        self._interval = float(interval)
        self._proc: Optional[subprocess.Popen] = None
        self._reader: Optional[_protocol.LineReader] = None
        self._used = False
        self._stats: Optional[list[dict[str, GPUStats]]] = None
        # The child's samples file (its ready_notification names it): removed
        # by _kill whatever happened, as a killed child cannot remove it.
        self._path: Optional[str] = None

    def _command(self) -> list[str]:
        return [sys.executable, "-m", f"{__package__}._bgrec_main", repr(self._interval)]

    @staticmethod
    def _died(msg: Optional[dict[str, Any]]) -> RuntimeError:
        if msg is not None and msg.get("type") == "die_notification":
            return RuntimeError(f"Recorder process died with exception: {msg.get('cause')}")
        return RuntimeError("Recorder process died with no message")

    def __enter__(self) -> "BackgroundRecorder":
        if self._proc is not None:
            raise RuntimeError("Recorder already running")
        if self._used:
            raise RuntimeError("Recorder has already been used once")
        self._used = True
        self._proc = subprocess.Popen(self._command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self._reader = _protocol.LineReader(self._proc.stdout)
            msg = self._reader.read(timeout=READY_TIMEOUT)
            if msg is None or msg.get("type") != "ready_notification":
                raise self._died(msg)
            self._path = msg.get("path")
        except BaseException:
            self._kill()
            raise
        return self

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for s in (proc.stdin, proc.stdout):
            try:
                if s:
                    s.close()
            except OSError:
                pass
        path, self._path = self._path, None
        if path is not None:
            try:
                os.unlink(path)  # gone already where the child removed it
            except OSError:
                pass

    def _wait_exit(self) -> None:
        proc = self._proc
        try:
            proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if self._proc is None:
            return
        if exc_type is not None:
            # The block failed: no results; let the child see end of file.
            try:
                self._proc.stdin.close()
                if self._reader.readable_now(STOP_TIMEOUT):
                    self._reader.read(timeout=STOP_TIMEOUT)
            except (OSError, ValueError, TimeoutError):
                pass
            self._kill()
            return
        try:
            try:
                _protocol.send(self._proc.stdin, {"type": "stop_request"})
            except BrokenPipeError:
                pass
            msg = self._reader.read(timeout=STOP_TIMEOUT)
            if msg is None or msg.get("type") != "stop_reply":
                raise self._died(msg)
            self._wait_exit()
            self._path = msg["path"]
            with open(self._path, encoding="utf-8") as f:
                self._stats = [stats_from_json_dict(json.loads(line)) for line in f if line.strip()]
        finally:
            self._kill()  # removes the file

    @property
    def stats(self) -> list[dict[str, GPUStats]]:
        if self._stats is None:
            raise RuntimeError("Recorder has not finished yet")
        return self._stats
