"""Error mapping: core status -> Python exception (docs/python.md, "Errors")."""

from __future__ import annotations

import pickle

import pytest

from axl import _core
from axl import driver
from axl.dtype import DType
from axl.driver import (
    AxlError,
    BackendUnavailableError,
    DeviceLostError,
    ForkedError,
    HostHazardError,
    InvalidArgumentError,
    InvalidStateError,
    NotFoundError,
    OutOfMemoryError,
    OutOfRangeError,
    Status,
    UnsupportedError,
)

from conftest import needs_virtual, run_py


def test_hierarchy():
    for cls in (DeviceLostError, OutOfMemoryError, BackendUnavailableError, ForkedError, InvalidStateError,
                NotFoundError, HostHazardError, UnsupportedError):
        assert issubclass(cls, AxlError) and issubclass(cls, RuntimeError)
    assert issubclass(AxlError, RuntimeError)
    assert issubclass(InvalidArgumentError, ValueError) and issubclass(InvalidArgumentError, AxlError)
    assert issubclass(OutOfRangeError, IndexError) and issubclass(OutOfRangeError, AxlError)
    assert issubclass(UnsupportedError, NotImplementedError)


def test_attributes_and_message():
    e = DeviceLostError("the device fell off the bus", Status.DEVICE_LOST, "cuda", 999, "CUDA_ERROR_UNKNOWN")
    assert e.status is Status.DEVICE_LOST and e.status_name == "AXL_ERROR_DEVICE_LOST"
    assert (e.backend, e.native_code, e.native_name) == ("cuda", 999, "CUDA_ERROR_UNKNOWN")
    assert e.detail == "the device fell off the bus"
    assert str(e) == ("the device fell off the bus [AXL_ERROR_DEVICE_LOST, backend 'cuda', "
                      "native CUDA_ERROR_UNKNOWN (999)]")
    bare = AxlError("core refused", Status.INVALID_HANDLE)
    assert str(bare) == "core refused [AXL_ERROR_INVALID_HANDLE]"
    assert AxlError("x", 999).status == 999  # a newer core's unknown code survives


def test_pickle_round_trip():
    e = OutOfMemoryError("no memory", Status.OUT_OF_DEVICE_MEMORY, "virtual", 5, "VIRTUAL_ERROR_OUT_OF_DEVICE_MEMORY")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is OutOfMemoryError and str(back) == str(e) and back.native_code == 5


def test_core_errors_arrive_typed():
    with pytest.raises(InvalidArgumentError) as e:
        driver.set_virtual_device_count(-3)
    assert e.value.status is Status.INVALID_ARGUMENT and e.value.backend == ""
    assert "-3" in e.value.detail
    with pytest.raises(ValueError):
        _core._device_count("tpu")
    with pytest.raises(OutOfRangeError) as e:
        driver.Buffer(DType.float32, (3,))[5]  # the core's axl_layout_index
    assert e.value.status is Status.OUT_OF_RANGE
    assert "index 5 is out of bounds for axis 0 with size 3" in e.value.detail


def test_status_names():
    assert _core.status_name(0) == "AXL_SUCCESS"
    for s in Status:
        if s:
            assert _core.status_name(int(s)) == f"AXL_ERROR_{s.name}"


def test_every_core_status_has_its_python_class():
    """Status and the class map come from status.h's list (_core.status_table);
    a code added there without a class here, or a class for a code the core
    does not have, fails here."""
    from axl import _errors

    table = _core.status_table()
    assert table[0] == (0, "AXL_SUCCESS")
    assert [v for v, _ in table] == list(range(len(table)))  # append-only, no gaps
    assert [(int(s), _core.status_name(int(s))) for s in Status] == table
    core_errors = {name.removeprefix("AXL_ERROR_") for value, name in table if value}
    assert set(_errors.ERROR_TYPES_BY_NAME) == core_errors
    for s in Status:
        if not s:
            continue
        cls = _errors.ERROR_TYPES[s]
        assert issubclass(cls, AxlError)
        # The docstring names the code the class stands for.
        assert f"AXL_ERROR_{s.name}" in (cls.__doc__ or ""), cls


@needs_virtual
def test_fault_injection_surfaces_with_backend_and_native_code():
    """The issue's example rule set: the first allocation runs out of memory,
    every launch loses the device."""
    p = run_py("""
        import numpy as np
        from axl.driver import Accelerator, Buffer, DeviceLostError, OutOfMemoryError, Status
        from axl.dtype import DType
        a = Accelerator()
        try:
            Buffer(DType.float32, (1024,), a)
        except OutOfMemoryError as e:
            assert e.status is Status.OUT_OF_DEVICE_MEMORY, e.status
            assert e.backend == "virtual", e.backend
            assert isinstance(e, RuntimeError)
            print("oom:", e)
        else:
            raise SystemExit("the first allocation did not fail")
        buf = Buffer(DType.uint32, (16,), a)  # only call 1 fails
        try:
            a.default_queue.launch(a._test_kernel(0), 1, 16, buf, np.uint32(16))
        except DeviceLostError as e:
            assert e.status is Status.DEVICE_LOST
            assert e.backend == "virtual" and e.native_name == "VIRTUAL_ERROR_DEVICE_LOST", e
            assert e.native_code == 8, e.native_code
            assert "VIRTUAL_ERROR_DEVICE_LOST" in str(e) and "backend 'virtual'" in str(e)
            print("lost:", e)
        else:
            raise SystemExit("launch did not fail")
    """, env={"AXL_VIRTUAL_DEVICES": "1",
              "AXL_VIRTUAL_FAIL": "alloc:1=OUT_OF_DEVICE_MEMORY;launch:*=DEVICE_LOST"})
    assert "oom:" in p.stdout and "lost:" in p.stdout


@needs_virtual
def test_failed_allocation_keeps_the_plugins_native_code():
    # Regression: a failed allocation once ran the half-built buffer's
    # destructor, whose memory_free(0) replaced this detail (core/src/buffer.cpp).
    run_py("""
        from axl.driver import Accelerator, Buffer, OutOfMemoryError
        from axl.dtype import DType
        try:
            Buffer(DType.float32, (1024,), Accelerator())
        except OutOfMemoryError as e:
            assert e.native_name == "VIRTUAL_ERROR_OUT_OF_DEVICE_MEMORY", str(e)
            assert e.native_code == 5, e.native_code
            assert "injected" in e.detail, e.detail
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": "alloc:1=OUT_OF_DEVICE_MEMORY"})


@needs_virtual
def test_async_fault_surfaces_at_synchronize():
    run_py("""
        import numpy as np
        from axl.driver import Accelerator, Buffer, DeviceLostError
        from axl.dtype import DType
        a = Accelerator()
        q = a.default_queue
        buf = Buffer(DType.uint32, (16,), a)
        q.launch(a._test_kernel(0), 1, 16, buf, np.uint32(16))   # enqueues fine
        try:
            q.synchronize()
        except DeviceLostError as e:
            assert e.backend == "virtual" and e.native_name == "VIRTUAL_ERROR_DEVICE_LOST", e
        else:
            raise SystemExit("synchronize did not raise")
        q.synchronize()  # the error is reported once
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": "launch:1=DEVICE_LOST@async"})


@needs_virtual
@pytest.mark.parametrize("rule,status,cls", [
    # queue_create call 1 is the default queue, made with the device.
    ("queue_create:2", "OUT_OF_HOST_MEMORY", "OutOfHostMemoryError"),
    ("flag_create:1", "UNSUPPORTED", "UnsupportedError"),
    ("module_load:1", "INVALID_ARGUMENT", "InvalidArgumentError"),
    ("event_record:1", "DEVICE_LOST", "DeviceLostError"),
])
def test_each_injected_status_maps_to_its_class(rule, status, cls):
    op = rule.split(":")[0]
    run_py(f"""
        from axl import driver
        from axl.driver import Accelerator, CompletionFlag, DeviceEvent, DeviceQueue
        a = Accelerator()
        calls = {{
            "queue_create": lambda: DeviceQueue(a),
            "flag_create": lambda: CompletionFlag(a),
            "module_load": lambda: a.load_module(b"k\\n"),
            "event_record": lambda: a.default_queue.record_event(DeviceEvent(a)),
        }}
        try:
            calls[{op!r}]()
        except driver.{cls} as e:
            assert e.native_name == "VIRTUAL_ERROR_{status}", e.native_name
        else:
            raise SystemExit("no error")
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": f"{rule}={status}"})


@needs_virtual
def test_host_hazard_error_keeps_the_origin_of_the_failure():
    # The host read is the first to see the asynchronous failure of the copy
    # that should have filled the staging buffer: it raises HostHazardError,
    # which still names the backend and native code of that failure.
    run_py("""
        import numpy as np
        from axl.driver import Accelerator, Buffer, HostHazardError, Status, Usage
        from axl.dtype import DType
        a = Accelerator()
        src = Buffer.from_numpy(np.arange(4, dtype=np.float32)).to(a)
        st = Buffer(DType.float32, (4,), a, usage=Usage.STAGING)
        st.inplace_copy_from(src)  # fails on the queue (injected)
        for _ in range(2):  # the first wait sees the failure, the second the poisoned record
            try:
                st.to_numpy()
            except HostHazardError as e:
                assert e.status is Status.HOST_HAZARD, e
                assert e.backend == "virtual", e
                assert e.native_name == "VIRTUAL_ERROR_INTERNAL", e
                assert e.native_code == 13, e.native_code
                assert "injected failure of memcpy_dtoh" in e.detail, e.detail
            else:
                raise SystemExit("the host read did not raise")
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": "memcpy_dtoh:*=INTERNAL@async"})


@needs_virtual
def test_failed_free_surfaces_at_the_next_synchronize():
    # A release has no caller to tell: the device's next synchronize reports
    # it with the plugin's detail, once, and the log has it at error level.
    p = run_py("""
        import numpy as np
        from axl.driver import Accelerator, Buffer, DeviceLostError
        from axl.dtype import DType
        a = Accelerator()
        b = Buffer(DType.uint8, (4096,), a)
        del b  # memory_free call 1 fails
        try:
            a.synchronize()
        except DeviceLostError as e:
            assert e.backend == "virtual" and e.native_name == "VIRTUAL_ERROR_DEVICE_LOST", e
            assert "injected failure of free call 1" in e.detail, e.detail
            assert "releasing 4096 bytes" in e.detail, e.detail
        else:
            raise SystemExit("synchronize did not report the failed free")
        a.synchronize()  # reported once
        a.default_queue.synchronize()
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": "free:1=DEVICE_LOST"})
    assert "[axl E]" in p.stderr and "injected failure of free call 1" in p.stderr, p.stderr


@needs_virtual
def test_released_memory_is_reused_under_a_memory_limit():
    # Two 768 KiB buffers never fit on the 1 MiB device: each allocation
    # reuses the memory of the one released just before, although the copy
    # into it may still be pending (the free is deferred until it ran).
    run_py("""
        import numpy as np
        from axl.driver import Accelerator, Buffer
        from axl.dtype import DType
        a = Accelerator()
        host = np.ones(768 << 10, dtype=np.uint8)
        for i in range(4):
            b = Buffer.from_numpy(host).to(a)  # a copy queued on b
            del b
        b = Buffer.from_numpy(host).to(a)
        del b
        a.synchronize()  # and after a synchronize the memory is free at once
        stats = a.stats
        assert stats["free_memory"] == stats["total_memory"] == 1 << 20, stats
        b = Buffer(DType.uint8, (768 << 10,), a)
    """, env={"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_DEVICE_MEMORY": "1M", "AXL_VIRTUAL_LATENCY_US": "20000"})
