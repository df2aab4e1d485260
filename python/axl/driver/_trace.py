"""Launch tracing (MAX: ``begin_launch_trace``, ``take_launch_trace``,
``launch_trace``, ``LaunchTraceEntry``).

The recording is process-wide and covers every queue, including queues the
caller holds no handle to. As in MAX only accelerator work is recorded by
default; ``include_host=True`` (an axl extension) records host devices too,
which is what makes the trace useful on a CPU-only machine.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

from .. import _core

# contextlib is imported on first use (launch_trace): at module level it is
# a twentieth of `import axl.driver`'s instructions (callgrind; the startup
# ratio is printed by benchmarks/python_overhead.py). A type checker sees
# the context manager; at run time the return annotation is object.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    _Recording = AbstractContextManager[list["LaunchTraceEntry"]]
else:
    _Recording = object


class LaunchTraceEntry:
    """One recorded operation, produced by :func:`take_launch_trace` (not
    meant to be constructed by hand). Read-only. Only the field group that
    matches ``kind`` is meaningful; the others are 0."""

    class OperationKind(enum.Enum):
        KERNEL_LAUNCH = 0
        MEMCPY = 1
        MEMSET = 2

    class MemcpyKind(enum.Enum):
        NONE = 0
        HTOD = 1
        DTOH = 2
        DTOD = 3

    __slots__ = (
        "kind",
        "memcpy_kind",
        "name",
        "semantic_hash",
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        "shared_mem_bytes",
        "stream_index",
        "device_id",
        "memcpy_byte_size",
        "memset_byte_size",
        "memset_value",
        "memset_value_size",
        "sequence",
    )

    kind: LaunchTraceEntry.OperationKind
    """KERNEL_LAUNCH, MEMCPY or MEMSET."""
    memcpy_kind: LaunchTraceEntry.MemcpyKind
    """HTOD / DTOH / DTOD for copies; NONE otherwise."""
    name: str
    """Kernel name, or the driver API name of a copy or fill (e.g. ``cuMemcpyHtoDAsync``)."""
    semantic_hash: int
    """Deterministic, address-free hash of the operation: equal work hashes equally across runs."""
    grid_x: int
    grid_y: int
    grid_z: int
    block_x: int
    block_y: int
    block_z: int
    shared_mem_bytes: int
    stream_index: int
    """The queue's index in first-seen order within this trace (>= 0)."""
    device_id: int
    """``Device.id`` of the queue's device (axl extension)."""
    memcpy_byte_size: int
    memset_byte_size: int
    memset_value: int
    memset_value_size: int
    sequence: int
    """Global enqueue order within the trace, from 0 (axl extension)."""

    def __init__(self, raw: tuple) -> None:
        (kind, memcpy_kind, name, h, grid, block, shared, stream, device_id, mc_bytes, ms_bytes, ms_value,
         ms_value_size, seq) = raw
        set_ = object.__setattr__
        set_(self, "kind", LaunchTraceEntry.OperationKind(kind))
        set_(self, "memcpy_kind", LaunchTraceEntry.MemcpyKind(memcpy_kind))
        set_(self, "name", name)
        set_(self, "semantic_hash", h)
        set_(self, "grid_x", grid[0])
        set_(self, "grid_y", grid[1])
        set_(self, "grid_z", grid[2])
        set_(self, "block_x", block[0])
        set_(self, "block_y", block[1])
        set_(self, "block_z", block[2])
        set_(self, "shared_mem_bytes", shared)
        set_(self, "stream_index", stream)
        set_(self, "device_id", device_id)
        set_(self, "memcpy_byte_size", mc_bytes)
        set_(self, "memset_byte_size", ms_bytes)
        set_(self, "memset_value", ms_value)
        set_(self, "memset_value_size", ms_value_size)
        set_(self, "sequence", seq)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("LaunchTraceEntry is read-only")

    def __repr__(self) -> str:
        k = self.kind
        if k is LaunchTraceEntry.OperationKind.KERNEL_LAUNCH:
            what = (f"grid=({self.grid_x}, {self.grid_y}, {self.grid_z}), "
                    f"block=({self.block_x}, {self.block_y}, {self.block_z}), "
                    f"shared_mem_bytes={self.shared_mem_bytes}")
        elif k is LaunchTraceEntry.OperationKind.MEMCPY:
            what = f"memcpy_kind={self.memcpy_kind.name}, memcpy_byte_size={self.memcpy_byte_size}"
        else:
            what = (f"memset_byte_size={self.memset_byte_size}, memset_value={self.memset_value}, "
                    f"memset_value_size={self.memset_value_size}")
        return (f"LaunchTraceEntry({k.name}, {self.name!r}, {what}, stream_index={self.stream_index}, "
                f"semantic_hash=0x{self.semantic_hash:016x})")


def begin_launch_trace(include_host: bool = False) -> None:
    """Starts recording kernel launches, copies and fills on every queue,
    discarding any earlier recording.

    Args:
        include_host: also record work on host (CPU) devices. MAX records
            accelerators only, which stays the default.
    """
    _core._launch_trace_begin(include_host)


def take_launch_trace() -> list[LaunchTraceEntry]:
    """Stops recording and returns the entries in enqueue order across
    queues. Entries are handed out once: a second take returns ``[]``, and
    so does a take without a begin."""
    return [LaunchTraceEntry(raw) for raw in _core._launch_trace_take()]


def launch_trace(include_host: bool = False) -> _Recording:
    """``with launch_trace() as trace: ...`` records the block's work.

    The yielded list stays empty during the block and is filled when the
    block exits; recording stops even if the block raises (the exception
    propagates and the entries recorded before it are kept). Tracing is
    process-wide and not re-entrant: a nested block restarts the recording.
    """
    global _launch_trace_cm
    if _launch_trace_cm is None:
        import contextlib

        _launch_trace_cm = contextlib.contextmanager(_record_launches)
    return _launch_trace_cm(include_host)


def _record_launches(include_host: bool) -> Iterator[list[LaunchTraceEntry]]:
    entries: list[LaunchTraceEntry] = []
    begin_launch_trace(include_host)
    try:
        yield entries
    finally:
        entries.extend(take_launch_trace())


_launch_trace_cm = None

__all__ = ["LaunchTraceEntry", "begin_launch_trace", "launch_trace", "take_launch_trace"]
