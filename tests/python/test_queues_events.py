"""DeviceQueue, DeviceEvent and CompletionFlag (spec sections 2.4-2.6)."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest

from axl.driver import (
    AxlError,
    Buffer,
    CompletionFlag,
    DeviceEvent,
    DeviceQueue,
    InvalidArgumentError,
    InvalidStateError,
    NotReadyError,
)
from axl.dtype import DType

from conftest import on_accelerator_kinds, run_on, run_py
from test_buffer_model import on_devices


# ------------------------------------------------------------------ queues

def test_queue_basics(cpu, queue):
    assert queue.device is cpu
    assert queue != cpu.default_queue and queue == queue
    assert hash(queue) == hash(queue)
    assert queue.native_stream_handle == 0  # the cpu backend has no native stream
    assert isinstance(queue._device_context_ptr(), int)
    assert "Device(type=cpu,id=0)" in repr(queue)
    queue.synchronize()


def test_queue_needs_a_device():
    with pytest.raises(TypeError, match="expected an axl.driver.Device"):
        DeviceQueue("cpu")


def test_record_event_overloads(cpu, queue):
    e = queue.record_event()
    assert isinstance(e, DeviceEvent) and e.device is cpu
    e.synchronize()
    assert e.is_ready()
    mine = DeviceEvent(cpu)
    assert queue.record_event(mine) is None
    mine.synchronize()
    assert mine.is_ready()


def gate(dev, queue):
    """Stalls `queue` (of `dev`) behind a flag; returns the flag (signal(1) opens it)."""
    flag = CompletionFlag(dev)
    queue.wait_for_host_value(flag, 1)
    return flag


@on_devices
def test_wait_for_host_value_gates_the_queue(dev):
    queue = DeviceQueue(dev)
    flag = gate(dev, queue)
    ev = queue.record_event()
    time.sleep(0.05)
    assert not ev.is_ready()
    flag.signal(1)
    ev.synchronize()
    assert ev.is_ready()


@on_devices
def test_wait_for_queue_device_and_event(dev):
    """Two queues with cross-queue waits (on a queue, a device, an event)."""
    cpu, queue = dev, DeviceQueue(dev)
    other = DeviceQueue(cpu)
    flag = gate(cpu, other)
    other_done = other.record_event()
    queue.wait_for(other)  # later work on queue waits for other's gate
    after = queue.record_event()
    time.sleep(0.05)
    assert not after.is_ready()
    flag.signal(1)
    after.synchronize()
    assert other_done.is_ready()

    # wait_for(device): the device's default queue.
    dflag = gate(cpu, cpu.default_queue)
    queue.wait_for(cpu)
    e2 = queue.record_event()
    time.sleep(0.05)
    assert not e2.is_ready()
    dflag.signal(1)
    e2.synchronize()

    # wait_for(event): an axl extension.
    eflag = gate(cpu, other)
    mark = other.record_event()
    queue.wait_for(mark)
    e3 = queue.record_event()
    time.sleep(0.05)
    assert not e3.is_ready()
    eflag.signal(1)
    e3.synchronize()
    other.synchronize()


def test_synchronize_releases_the_gil(cpu, queue):
    """A thread blocked in synchronize must not stop Python elsewhere: here
    the main thread opens the gate the other one waits behind."""
    flag = gate(cpu, queue)
    done = threading.Event()

    def wait():
        queue.synchronize()
        done.set()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.05)
    assert not done.is_set()
    flag.signal(1)  # needs the GIL while the other thread is in synchronize
    t.join(10)
    assert done.is_set()


# ------------------------------------------------------------------ events

def test_event_str_format(cpu):
    a, b = DeviceEvent(cpu), DeviceEvent(cpu)
    for e in (a, b):
        assert re.fullmatch(r"cpu\[0\]:event@(0x)?[0-9a-f]+", str(e)), str(e)
        assert repr(e) == str(e)
    assert str(a) != str(b)
    assert a != b and a == a


def test_event_never_recorded_is_complete(cpu):
    e = DeviceEvent(cpu)
    assert e.is_ready()
    e.synchronize()
    assert e.enable_timing is False


@on_devices
def test_elapsed_time(dev):
    cpu, queue = dev, DeviceQueue(dev)
    start, end = DeviceEvent(cpu, enable_timing=True), DeviceEvent(cpu, enable_timing=True)
    queue.record_event(start)
    buf = Buffer.zeros((1 << 16,), DType.uint32, cpu)
    queue.record_event(end)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0
    del buf
    # Timing is device time: a queue held 100 ms between the two events
    # shows it.
    queue.record_event(start)
    flag = gate(dev, queue)
    queue.record_event(end)
    time.sleep(0.1)
    flag.signal(1)
    end.synchronize()
    assert start.elapsed_time(end) >= 90


@on_devices
def test_elapsed_time_errors_are_distinct(dev):
    cpu, queue = dev, DeviceQueue(dev)
    start, end = DeviceEvent(cpu, enable_timing=True), DeviceEvent(cpu, enable_timing=True)
    # 1. never recorded
    with pytest.raises(InvalidStateError, match="never recorded") as not_recorded:
        start.elapsed_time(end)
    # 2. not complete
    flag = gate(cpu, queue)
    queue.record_event(start)
    queue.record_event(end)
    with pytest.raises(NotReadyError, match="not completed") as not_complete:
        start.elapsed_time(end)
    flag.signal(1)
    end.synchronize()
    start.elapsed_time(end)
    # 3. timing disabled
    plain = DeviceEvent(cpu)
    queue.record_event(plain)
    plain.synchronize()
    with pytest.raises(InvalidArgumentError, match="timing") as no_timing:
        start.elapsed_time(plain)
    messages = {str(e.value) for e in (not_recorded, not_complete, no_timing)}
    assert len(messages) == 3
    for e in (not_recorded, not_complete, no_timing):
        assert isinstance(e.value, RuntimeError) and isinstance(e.value, AxlError)
    assert isinstance(no_timing.value, ValueError)


# ------------------------------------------------------------------- flags

def test_completion_flag(cpu):
    f = CompletionFlag(cpu)
    assert f.load() == 0
    f.signal(7)
    assert f.load() == 7
    f.signal(2**64 - 1)
    assert f.load() == 2**64 - 1
    f.reset()
    assert f.load() == 0
    assert f.device_ptr != 0
    assert f.device is cpu
    with pytest.raises(TypeError):
        f.signal(-1)


@on_devices
def test_flag_written_by_the_queue_is_seen_by_the_host(dev):
    cpu, queue = dev, DeviceQueue(dev)
    # A host function stands in for device work that writes the flag.
    f = CompletionFlag(cpu)
    queue.enqueue_host_func(lambda: f.signal(3))
    queue.synchronize()
    assert f.load() == 3


@on_accelerator_kinds
def test_flag_of_another_backend_is_refused(kind):
    run_on(kind, """
        from axl.driver import CPU, CompletionFlag, InvalidArgumentError
        f = CompletionFlag(CPU())
        try:
            dev.default_queue.wait_for_host_value(f, 1)
        except InvalidArgumentError as e:
            assert "backend" in str(e), e
        else:
            raise SystemExit("no error")
    """)


@on_accelerator_kinds
def test_accelerator_queue_and_events(kind):
    run_on(kind, f"""
        import re
        from axl.driver import DeviceEvent, DeviceQueue
        a = dev
        q = DeviceQueue(a)
        s, e = DeviceEvent(a, enable_timing=True), DeviceEvent(a, enable_timing=True)
        q.record_event(s); q.record_event(e); e.synchronize()
        assert s.elapsed_time(e) >= 0
        assert re.fullmatch(r"{kind.name}\\[0\\]:event@0x[0-9a-f]+", str(e)), str(e)
        q.wait_for(a)
        a.synchronize()
    """)
