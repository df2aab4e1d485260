"""axl.driver._hazard, MAX's host-hazard bridge (spec section 6):
render_producer_error and stamp_device_write."""

from __future__ import annotations

import numpy as np
import pytest

import axl.driver as drv
from axl.driver import Buffer, DeviceQueue, HostHazardError, Usage
from axl.driver import _hazard
from axl.dtype import DType


def test_namespace_is_maxs():
    names = {n for n in vars(_hazard) if not (n.startswith("__") and n.endswith("__"))}
    assert names == {"Buffer", "DeviceQueue", "HostHazardCompletion", "HostHazardError", "QueueKey", "Sequence",
                     "annotations", "render_producer_error", "stamp_device_write", "traceback"}


def test_render_producer_error_is_the_traceback_text():
    def producer():
        raise ValueError("kernel 7 failed")

    try:
        producer()
    except ValueError as e:
        text = _hazard.render_producer_error(e)
    assert text.startswith("Traceback (most recent call last):")
    assert "in producer" in text and text.endswith("ValueError: kernel 7 failed")


class _Recorder:
    """Stands in for HostHazardCompletion, counting what is created."""

    def __init__(self):
        self.calls = []

    def record_on(self, queue):
        self.calls.append(("record_on", queue))
        return drv.HostHazardCompletion.record_on(queue)

    def poisoned(self, queue, error):
        self.calls.append(("poisoned", queue))
        return drv.HostHazardCompletion.poisoned(queue, error)


@pytest.fixture
def recorder(monkeypatch):
    r = _Recorder()
    monkeypatch.setattr(_hazard, "HostHazardCompletion", r)
    return r


def test_one_completion_per_queue_and_none_for_untracked(cpu, recorder):
    q1, q2 = DeviceQueue(cpu), DeviceQueue(cpu)
    a, b = Buffer(DType.int32, (4,), stream=q1), Buffer(DType.int32, (4,), stream=q1)
    c = Buffer(DType.int32, (4,), stream=q2)
    untracked = Buffer(DType.int32, (4,), cpu, usage=Usage.STAGING | Usage.UNTRACKED)
    _hazard.stamp_device_write([untracked], read=[untracked])
    assert recorder.calls == []
    _hazard.stamp_device_write([a, untracked], read=[b, c])
    assert sorted(id(q) for _, q in recorder.calls) == sorted([id(q1), id(q2)])
    assert all(kind == "record_on" for kind, _ in recorder.calls)


def test_a_failed_producer_poisons_host_access_and_records_nothing(cpu, recorder):
    out = Buffer.from_numpy(np.zeros(4, np.float32))
    inp = Buffer.from_numpy(np.ones(4, np.float32))
    _hazard.stamp_device_write([out], read=[inp], error="realization failed: boom")
    assert [kind for kind, _ in recorder.calls] == ["poisoned"]
    with pytest.raises(HostHazardError, match="boom"):
        out.to_numpy()
    # A read only waits for the last write: the input was not written.
    assert inp.to_numpy().tolist() == [1.0] * 4
    with pytest.raises(HostHazardError, match="boom"):
        inp[0] = 2.0  # a host write waits for the (failed) readers


def test_an_error_text_with_a_nul_still_poisons(cpu):
    # An exception message holding a NUL (decoded bytes) must not make the
    # bridge refuse the text and leave the output readable (the binding's
    # poisoned() writes it as \0: test_buffer_hazards.py).
    out = Buffer.from_numpy(np.zeros(4, np.float32))
    _hazard.stamp_device_write([out], error="bad\0byte")
    with pytest.raises(HostHazardError, match=r"bad\\0byte"):
        out.to_numpy()


def test_a_stamped_write_is_waited_for(cpu):
    # The completion follows the queue's work: a copy enqueued before the
    # stamp has landed when the host reads.
    q = DeviceQueue(cpu)
    src = Buffer.from_numpy(np.arange(1 << 16, dtype=np.float32))
    dst = Buffer(DType.float32, (1 << 16,), stream=q)
    dst._copy_from(src, q)
    _hazard.stamp_device_write([dst], read=[src])
    assert np.array_equal(dst.to_numpy(), np.arange(1 << 16, dtype=np.float32))
    q.synchronize()  # nothing left for the exit deadline (AXL_EXIT_GRACE_MS) under a loaded machine
