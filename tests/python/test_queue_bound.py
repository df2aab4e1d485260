"""Bounded queues (issue 15): DeviceQueue(device, max_pending=...) blocks an
enqueue on a full queue, without the GIL, until the queue has made room, and a
full queue stuck behind a host-value wait only the blocked thread could
satisfy raises AxlTimeoutError instead of hanging."""

from __future__ import annotations

import threading
import time

import pytest

from axl.driver import AxlTimeoutError, Buffer, CompletionFlag, DeviceQueue
from axl.dtype import DType

from conftest import run_py


def test_max_pending_blocks_until_another_thread_writes_the_flag(cpu):
    q = DeviceQueue(cpu, max_pending=4)
    flag = CompletionFlag(cpu)
    src = Buffer(dtype=DType.uint8, shape=(8,), device=cpu)
    dst = Buffer(dtype=DType.uint8, shape=(8,), stream=q)
    q.wait_for_host_value(flag, 1)
    returned = 0
    seen = []

    def release():
        # Blocked means the count stops moving; the GIL is free meanwhile, or
        # this thread could not run at all.
        last = -1
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if returned == last:
                break
            last = returned
        seen.append(returned)
        flag.signal(1)

    t = threading.Thread(target=release)
    t.start()
    for _ in range(200):
        dst.inplace_copy_from(src)
        returned += 1
    t.join()
    q.synchronize()
    assert returned == 200
    # The wait plus at most 3 copies fit before the producer blocked.
    assert 1 <= seen[0] <= 3


@pytest.mark.parametrize("bad", [0, -1, 2**32, 2**70])
def test_max_pending_out_of_range_is_a_value_error(cpu, bad):
    with pytest.raises(ValueError, match=f"max_pending must be from 1 to 4294967295, got {bad}"):
        DeviceQueue(cpu, max_pending=bad)


@pytest.mark.parametrize("bad", [True, False, 4.0, "8"])
def test_max_pending_of_another_type_is_a_type_error(cpu, bad):
    with pytest.raises(TypeError, match=r"max_pending must be an int > 0 or None, got " + repr(bad).replace(".", r"\.")):
        DeviceQueue(cpu, max_pending=bad)


def test_max_pending_none_and_int_are_accepted(cpu):
    for mp in (None, 1, 4096, 2**32 - 1):
        q = DeviceQueue(cpu, max_pending=mp)
        q.synchronize()


def test_full_queue_behind_an_unwritten_flag_raises_timeout():
    # A child process: if the bound or the timeout were missing it would hang
    # or grow without end, and the timeout below ends it.
    p = run_py(
        """
        import time
        from axl.driver import CPU, AxlTimeoutError, Buffer, CompletionFlag, DeviceQueue, Status
        from axl.dtype import DType
        cpu = CPU()
        q = DeviceQueue(cpu, max_pending=8)
        flag = CompletionFlag(cpu)
        src = Buffer(dtype=DType.uint8, shape=(8,), device=cpu)
        dst = Buffer(dtype=DType.uint8, shape=(8,), stream=q)
        q.wait_for_host_value(flag, 1)
        t0 = time.monotonic()
        n = 0
        try:
            for _ in range(100000):
                dst.inplace_copy_from(src)
                n += 1
        except AxlTimeoutError as e:
            assert isinstance(e, RuntimeError)
            assert e.status == Status.TIMEOUT, e.status
            print("waited", time.monotonic() - t0)
            print("accepted", n)
            print("message", str(e))
        flag.signal(1)
        q.synchronize()
        """,
        env={"AXL_QUEUE_FULL_TIMEOUT_MS": "200"},
        timeout=60,
    )
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines() if " " in line)
    assert "message" in lines, p.stdout + p.stderr
    assert 0.2 <= float(lines["waited"]) < 10
    assert int(lines["accepted"]) < 8
    m = lines["message"]
    assert "queue is full (8 operations pending" in m
    assert "waits for the completion flag at 0x" in m and "to reach 1" in m
    assert "write the flag from another thread or enqueue fewer operations before it" in m
