"""axl's own timeline, beyond MAX: the in-process span collector and the
Chrome-trace/Perfetto JSON file (``AXL_PROFILE_OUTPUT``).

Events are dicts with ``name``, ``kind`` (``"span"``, ``"mark"``,
``"launch"``, ``"device"``), ``color`` (ARGB), ``thread_id`` (OS thread id),
``queue_id``, ``depth``, ``launch_kind`` (``AXL_TRACE_*`` for launches, else
-1), ``start_ns``/``end_ns`` (CLOCK_MONOTONIC) and ``bytes``.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from .. import _core


class SpanCollector:
    """Collects every span, mark and (while profiling is on) launch recorded
    in the process during the ``with`` block, in completion order, into
    :attr:`events`. One collector runs at a time; starting one discards what
    an earlier, unfinished one held."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> "SpanCollector":
        _core._profiler_collector_start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.events = _core._profiler_collector_take()

    def spans(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == "span"]


def set_output(path: Optional[os.PathLike | str]) -> None:
    """Sets (or with None / "" clears) the JSON trace file. It is written at
    exit, on :func:`flush` and from ``std::terminate``."""
    _core._profiler_set_output(None if path is None else os.fspath(path))


def get_output() -> str:
    """The JSON trace file ("" when none)."""
    return _core._profiler_get_output()


def flush() -> None:
    """Writes the JSON trace file now (every event so far)."""
    _core._profiler_flush()


def sinks() -> dict[str, bool]:
    """Which sinks are active: ``nvtx`` (compiled in), ``roctx`` (library
    loaded), ``json`` (an output is set), ``collector`` (one is running)."""
    return _core._profiler_sinks()


__all__ = ["SpanCollector", "flush", "get_output", "set_output", "sinks"]
