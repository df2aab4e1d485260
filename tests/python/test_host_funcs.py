"""DeviceQueue.enqueue_host_func: Python on a backend thread."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from axl import _core
from axl.driver import CompletionFlag, DeviceQueue

from conftest import on_accelerator_kinds, run_on, run_py
from test_buffer_model import on_devices


@on_devices
def test_runs_in_queue_order(dev):
    queue = DeviceQueue(dev)
    seen = []
    for i in range(100):
        queue.enqueue_host_func(lambda i=i: seen.append(i))
    queue.synchronize()
    assert seen == list(range(100))


@on_devices
def test_runs_on_another_thread(dev):
    queue = DeviceQueue(dev)
    where = []
    queue.enqueue_host_func(lambda: where.append(threading.get_ident()))
    queue.synchronize()
    assert where and where[0] != threading.get_ident()


@on_devices
def test_callable_is_kept_alive_until_it_ran_then_released(dev):
    cpu, queue = dev, DeviceQueue(dev)
    flag = CompletionFlag(cpu)
    queue.wait_for_host_value(flag, 1)  # nothing runs until the flag opens

    class Callback:
        ran = False

        def __call__(self):
            Callback.ran = True

    cb = Callback()
    ref = weakref.ref(cb)
    queue.enqueue_host_func(cb)
    del cb
    gc.collect()
    assert ref() is not None, "dropped before it ran"
    flag.signal(1)
    queue.synchronize()
    assert Callback.ran
    _core._drain_release_thread()  # the release thread drops it (test_gil.py)
    gc.collect()
    assert ref() is None, "kept after it ran"
    assert _core._pending_host_funcs() == 0


def test_not_callable(queue):
    with pytest.raises(TypeError, match="callable"):
        queue.enqueue_host_func(42)


def test_raising_callback_is_printed_and_the_process_goes_on():
    p = run_py("""
        from axl.driver import CPU
        q = CPU().default_queue
        out = []
        def bad():
            raise ValueError("boom from a host function")
        q.enqueue_host_func(bad)
        q.enqueue_host_func(lambda: out.append("after"))
        q.synchronize()          # does not raise
        def stop():
            raise SystemExit(3)  # not even SystemExit ends the process
        q.enqueue_host_func(stop)
        q.synchronize()
        assert out == ["after"], out
        print("still alive")
    """)
    assert "still alive" in p.stdout
    assert "Traceback (most recent call last)" in p.stderr
    assert "ValueError: boom from a host function" in p.stderr
    assert "in bad" in p.stderr
    assert "enqueue_host_func" in p.stderr  # the header says where it came from


def test_pending_host_funcs_run_before_exit(tmp_path):
    """Queued callbacks still run when the script ends without synchronize."""
    marker = tmp_path / "ran"
    run_py(f"""
        import time
        from axl.driver import CPU
        q = CPU().default_queue
        def slow():
            time.sleep(0.2)
            open({str(marker)!r}, "w").write("yes")
        q.enqueue_host_func(slow)
    """)
    assert marker.read_text() == "yes"


def test_callback_may_use_axl_but_not_wait_on_its_own_queue():
    p = run_py("""
        from axl.driver import CPU, DeviceQueue, InvalidStateError
        cpu = CPU()
        q = DeviceQueue(cpu)
        errors = []
        def cb():
            try:
                q.synchronize()
            except InvalidStateError as e:
                errors.append(str(e))
        q.enqueue_host_func(cb)
        q.synchronize()
        assert errors and "wait for itself" in errors[0], errors
        print("ok")
    """)
    assert "ok" in p.stdout


def test_callback_reading_a_buffer_written_behind_it_raises_instead_of_hanging():
    """A host function that reads a buffer whose writer is enqueued behind
    it on its own queue would wait for itself: InvalidStateError at once
    (the core's axl_buffer_host_wait refusal); before, it hung the queue.
    The callback waits until the copy is enqueued, so the copy is behind it
    whatever the scheduling. A read after the queue ran sees the copy."""
    p = run_py("""
        import threading
        import numpy as np
        from axl.driver import CPU, Buffer, InvalidStateError
        q = CPU().default_queue
        dst = Buffer.from_numpy(np.zeros(1024, np.float32))
        src = Buffer.from_numpy(np.ones(1024, np.float32))
        copy_enqueued = threading.Event()
        seen = []
        def cb():
            copy_enqueued.wait()
            try:
                seen.append(float(dst.to_numpy().sum()))
            except InvalidStateError as e:
                seen.append(str(e))
        q.enqueue_host_func(cb)
        dst.inplace_copy_from(src)
        copy_enqueued.set()
        q.synchronize()
        assert len(seen) == 1 and "axl_buffer_host_wait" in seen[0] and "wait for itself" in seen[0], seen
        assert dst.to_numpy().sum() == 1024.0
        print("ok")
    """, timeout=60)
    assert "ok" in p.stdout

@on_accelerator_kinds
def test_host_funcs_on_accelerators(kind):
    run_on(kind, """
        q = dev.default_queue
        seen = []
        for i in range(10):
            q.enqueue_host_func(lambda i=i: seen.append(i))
        q.synchronize()
        assert seen == list(range(10)), seen
    """)


def test_dropping_a_queue_with_pending_host_funcs(cpu):
    """Releasing a queue finishes its work first; that work needs the GIL,
    so the release must not hold it."""
    from axl.driver import DeviceQueue

    seen = []
    q = DeviceQueue(cpu)
    for i in range(20):
        q.enqueue_host_func(lambda i=i: seen.append(i))
    del q
    gc.collect()
    assert seen == list(range(20))
