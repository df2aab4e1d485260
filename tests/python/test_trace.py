"""Launch tracing (spec section 9), with axl's include_host extension."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from axl.driver import (
    Buffer,
    LaunchTraceEntry,
    begin_launch_trace,
    launch_trace,
    take_launch_trace,
)
from axl.dtype import DType

from conftest import on_accelerator_kinds, run_on, run_py

Kind = LaunchTraceEntry.OperationKind
Copy = LaunchTraceEntry.MemcpyKind


def test_enums():
    assert issubclass(Kind, enum.Enum) and issubclass(Copy, enum.Enum)
    assert [k.value for k in (Kind.KERNEL_LAUNCH, Kind.MEMCPY, Kind.MEMSET)] == [0, 1, 2]
    assert [k.value for k in (Copy.NONE, Copy.HTOD, Copy.DTOH, Copy.DTOD)] == [0, 1, 2, 3]


def test_take_without_begin_is_empty():
    take_launch_trace()
    assert take_launch_trace() == []


def test_host_work_is_not_recorded_by_default(cpu, queue):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (4,), cpu)
    begin_launch_trace()
    queue.launch(k, 1, 4, buf, np.uint32(4))
    queue.synchronize()
    assert take_launch_trace() == []


def test_include_host_records_cpu_work(cpu, queue):
    k = cpu._test_kernel(0)
    begin_launch_trace(include_host=True)
    buf = Buffer(DType.int32, (4,), cpu)
    buf.inplace_copy_from(Buffer.from_numpy(np.arange(4, dtype=np.int32)))  # one 16-byte HtoD copy
    queue.launch(k, (2, 1, 1), (8, 2, 1), buf, np.uint32(4), shared_mem_bytes=64)
    queue.synchronize()
    trace = take_launch_trace()
    assert take_launch_trace() == []  # entries are handed out once

    copies = [e for e in trace if e.kind is Kind.MEMCPY]
    assert copies and copies[0].memcpy_kind is Copy.HTOD and copies[0].memcpy_byte_size == 16
    assert copies[0].semantic_hash != 0 and copies[0].stream_index >= 0
    launches = [e for e in trace if e.kind is Kind.KERNEL_LAUNCH]
    assert len(launches) == 1
    e = launches[0]
    assert (e.grid_x, e.grid_y, e.grid_z, e.block_x, e.block_y, e.block_z) == (2, 1, 1, 8, 2, 1)
    assert e.shared_mem_bytes == 64 and e.memcpy_kind is Copy.NONE and e.memcpy_byte_size == 0
    assert e.name and e.device_id == 0
    assert [t.sequence for t in trace] == list(range(len(trace)))
    assert "KERNEL_LAUNCH" in repr(e)
    with pytest.raises(AttributeError):
        e.name = "x"


def test_semantic_hash_is_stable_for_equal_work(cpu, queue):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (4,), cpu)
    hashes = []
    for _ in range(2):
        with launch_trace(include_host=True) as t:
            queue.launch(k, 1, 4, buf, np.uint32(4))
        hashes.append([e.semantic_hash for e in t])
    assert hashes[0] == hashes[1] and hashes[0]


def test_context_manager_fills_at_exit(cpu, queue):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (4,), cpu)
    with launch_trace(include_host=True) as t:
        queue.launch(k, 1, 4, buf, np.uint32(4))
        assert t == []  # empty during the block, as MAX's
    assert len(t) == 1


def test_context_manager_stops_when_the_block_raises(cpu, queue):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (4,), cpu)
    with pytest.raises(RuntimeError, match="inside"):
        with launch_trace(include_host=True) as t:
            queue.launch(k, 1, 4, buf, np.uint32(4))
            raise RuntimeError("inside")
    assert len(t) == 1 and t[0].kind is Kind.KERNEL_LAUNCH  # recorded before the raise
    # Recording stopped: later work is not recorded anywhere.
    queue.launch(k, 1, 4, buf, np.uint32(4))
    queue.synchronize()
    assert take_launch_trace() == []


@on_accelerator_kinds
def test_accelerator_work_is_recorded_by_default(kind):
    run_on(kind, """
        import numpy as np
        from axl.driver import Buffer, CPU, LaunchTraceEntry, launch_trace
        from axl.dtype import DType
        K = LaunchTraceEntry.OperationKind
        a, cpu = dev, CPU()
        host_buf = Buffer(DType.uint32, (4,), cpu)
        with launch_trace() as t:
            dev = Buffer.from_numpy(np.arange(4, dtype=np.int32), device=a)   # HtoD on the accelerator
            a.default_queue.launch(a._test_kernel(0), 1, 4, dev, np.uint32(4))
            cpu.default_queue.launch(cpu._test_kernel(0), 1, 4, host_buf, np.uint32(4))  # not recorded
            a.default_queue.synchronize(); cpu.default_queue.synchronize()
        kinds = [(e.kind, e.device_id) for e in t]
        assert (K.MEMCPY, 0) in kinds and (K.KERNEL_LAUNCH, 0) in kinds, kinds
        assert len(t) == 2, t
        copy = [e for e in t if e.kind is K.MEMCPY][0]
        assert copy.memcpy_kind is LaunchTraceEntry.MemcpyKind.HTOD and copy.memcpy_byte_size == 16
        assert copy.semantic_hash != 0 and copy.stream_index >= 0
        if a.api == "opencl":  # the backend names the OpenCL call it made
            assert copy.name == "clEnqueueWriteBuffer", copy.name
        with launch_trace(include_host=True) as t2:
            cpu.default_queue.launch(cpu._test_kernel(0), 1, 4, host_buf, np.uint32(4))
            a.default_queue.launch(a._test_kernel(0), 1, 4, dev, np.uint32(4))
            cpu.default_queue.synchronize(); a.default_queue.synchronize()
        assert len(t2) == 2 and len({e.stream_index for e in t2}) == 2, t2
        print("ok")
    """)
