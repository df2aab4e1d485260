"""Exit always ends (axl.h: axl_process_exit_begin; docs/python.md, "Exit").

Each case runs a fresh interpreter with a short AXL_EXIT_GRACE_MS and a
subprocess timeout: before the bounded exit drain, every one of them hung at
interpreter finalisation (the queue's release joined a worker waiting for a
flag nobody writes) and failed by timeout.
"""
import time

import pytest

from conftest import needs_virtual, run_py

GATED = """
import axl.driver as d
dev = {device}
q = d.DeviceQueue(dev)
f = d.CompletionFlag(dev)
q.wait_for_host_value(f, 1)
"""


def run_timed(code, grace_ms="300", timeout=30, **kw):
    t0 = time.monotonic()
    p = run_py(code, env={"AXL_EXIT_GRACE_MS": grace_ms, **kw.pop("env", {})}, timeout=timeout, check=False)
    return p, time.monotonic() - t0


def test_queue_gated_on_a_never_set_flag_does_not_hang_exit():
    p, took = run_timed(GATED.format(device="d.CPU()") + "print('enqueued', flush=True)\n")
    assert p.returncode == 0, p.stderr
    assert "enqueued" in p.stdout
    assert took < 15
    # The warning says what was left and why.
    assert "abandoned" in p.stderr
    assert "completion flag" in p.stderr and "to reach 1" in p.stderr
    assert "300 ms" in p.stderr


def test_uncaught_exception_with_a_gated_queue_still_exits():
    p, took = run_timed(GATED.format(device="d.CPU()") + "raise RuntimeError('uncaught on purpose')\n")
    assert p.returncode == 1
    assert "uncaught on purpose" in p.stderr
    assert "abandoned" in p.stderr
    assert took < 15


def test_gated_queue_with_buffers_and_host_func_behind_the_gate_exits():
    code = GATED.format(device="d.CPU()") + """
import numpy as np
b = d.Buffer.from_numpy(np.arange(1024, dtype=np.float32))
q.enqueue_host_func(lambda: print('never', flush=True))
print('enqueued', flush=True)
"""
    p, took = run_timed(code)
    assert p.returncode == 0, p.stderr
    assert "never" not in p.stdout
    # The host function behind the gate is reported, not silently lost.
    assert "host function(s)" in p.stderr and "will not run" in p.stderr
    assert took < 15


def test_host_funcs_that_can_still_run_run_before_exit():
    code = """
import time
import axl.driver as d
q = d.DeviceQueue(d.CPU())
q.enqueue_host_func(lambda: (time.sleep(0.3), print('ran', flush=True)))
"""
    p, _ = run_timed(code, grace_ms="5000")
    assert p.returncode == 0, p.stderr
    assert "ran" in p.stdout
    assert "abandoned" not in p.stderr


@needs_virtual
def test_gated_virtual_queue_does_not_hang_exit():
    p, took = run_timed(GATED.format(device="d.Accelerator()"), env={"AXL_VIRTUAL_DEVICES": "1"})
    assert p.returncode == 0, p.stderr
    assert took < 15


@pytest.mark.parametrize("op", [
    "q.enqueue_host_func(lambda: None)",
    "dst.inplace_copy_from(src)",
])
def test_daemon_thread_enqueueing_forever_does_not_hold_exit(op):
    code = """
import threading, time
import numpy as np
import axl.driver as d
dev = d.CPU()
q = d.DeviceQueue(dev)
src = d.Buffer.from_numpy(np.zeros(1 << 12, dtype=np.uint8))
dst = d.Buffer.from_numpy(np.ones(1 << 12, dtype=np.uint8))
def spam():
    while True:
        OP
threading.Thread(target=spam, daemon=True).start()
""".replace("OP", op) + """
time.sleep(0.5)
print('main done', flush=True)
"""
    p, took = run_timed(code, grace_ms="1000", timeout=60)
    assert p.returncode == 0, p.stderr
    assert "main done" in p.stdout
    assert took < 20


@pytest.mark.parametrize("op", [
    "d.DeviceEvent(dev)",       # a destructor that drops the GIL
    "d.DeviceQueue(dev)",
    "q.record_event()",
    "q.launch(inc, 1, 64, buf, np.uint32(64))",   # the launch's own catch-all
])
def test_daemon_threads_dropping_objects_or_launching_at_exit_do_not_abort(op):
    # At finalisation CPython ends a daemon thread that comes back for the GIL
    # with pthread_exit. Its forced unwind met an object's noexcept destructor
    # ("terminate called without an active exception") or a catch (...) of the
    # binding ("FATAL: exception not rethrown"), aborting most runs with four
    # threads; such a thread is now parked where the unwind starts.
    code = """
import threading, time
import numpy as np
import axl.driver as d
from axl.dtype import DType
dev = d.CPU()
q = d.DeviceQueue(dev)
buf = d.Buffer(DType.uint32, (64,), stream=q)
inc = dev._test_kernel("INCREMENT_U32")
def spam():
    while True:
        OP
for _ in range(4):
    threading.Thread(target=spam, daemon=True).start()
time.sleep(0.2)
print('main done', flush=True)
""".replace("OP", op)
    for _ in range(3):
        p, took = run_timed(code, grace_ms="1000", timeout=60)
        assert p.returncode == 0, p.stderr
        assert "main done" in p.stdout
        assert "terminate" not in p.stderr and "FATAL" not in p.stderr, p.stderr
        assert took < 20


@needs_virtual
def test_only_the_stuck_queue_is_reported_when_others_finished():
    # A stuck queue uses up the shared exit deadline; queues released after
    # it whose work had finished long before (their buffers' frees are the
    # only thing enqueued at finalisation) were declared abandoned too,
    # because their drain thread had no time left to run.
    code = """
import numpy as np
from axl.driver import *
d = Accelerator(); c = CPU()
q = DeviceQueue(d)
bufs = [Buffer.from_numpy(np.arange(1 << 16, dtype=np.float32), device=d).copy(q) for i in range(4)]
q.record_event().synchronize()
f = CompletionFlag(c); cq = DeviceQueue(c); cq.wait_for_host_value(f, 1)
G = [bufs, q, cq]
print('ready', flush=True)
"""
    p, took = run_timed(code, env={"AXL_VIRTUAL_DEVICES": "2"})
    assert p.returncode == 0, p.stderr
    assert "ready" in p.stdout
    abandoned = [line for line in p.stderr.splitlines() if "abandoned" in line]
    assert len(abandoned) == 1, p.stderr
    assert "cpu" in abandoned[0] and "completion flag" in abandoned[0], abandoned
    assert took < 15


@pytest.mark.parametrize("wait", ["q.synchronize()", "dev.synchronize()", "ev.synchronize()", "memoryview(b)"])
def test_finalizer_waiting_on_a_gated_queue_gives_up_at_the_exit_deadline(wait):
    # A module global's __del__, run at interpreter finalisation (after the
    # bounded exit began), that waits for a queue gated forever used to hang
    # the process: the wait ignored the exit deadline. It now raises (status
    # TIMEOUT, "Exception ignored in ... __del__") once the deadline passed,
    # and the process exits.
    code = f"""
import numpy as np
import axl.driver as d
dev = d.CPU()
q = dev.default_queue
f = d.CompletionFlag(dev)
q.wait_for_host_value(f, 1)
b = d.Buffer.from_numpy(np.arange(1024, dtype=np.float32))
b.inplace_copy_from(d.Buffer.from_numpy(np.zeros(1024, dtype=np.float32)))  # behind the gate
ev = q.record_event()
class Waiter:
    def __del__(self):
        {wait}
waiter = Waiter()
print('enqueued', flush=True)
"""
    p, took = run_timed(code)
    assert "enqueued" in p.stdout, p.stderr
    assert p.returncode == 0, p.stderr
    assert took < 15
    assert "did not finish by the exit deadline" in p.stderr, p.stderr
    assert "__del__" in p.stderr, p.stderr
