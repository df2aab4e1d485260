"""The GIL and backend threads: no enqueue holds the GIL while it may block,
and no backend thread drops the last reference to a Python object.

Why: a backend's worker or callback thread runs Python host functions, so
any call that waits for queued work while holding the GIL deadlocks against
them; and on CUDA the callback thread must not call the driver, which a
__del__ or a Buffer release (run by dropping the last reference) may do.

The deadlock needs an enqueue that blocks until earlier queue work has run.
On CUDA that is a copy from pageable host memory (tests/gpu); here it is
the core's hazard-tracking fallback: when no event can be recorded to mark
a copy (fault injection makes every event record fail on the virtual
backend), the copy synchronizes its queue instead, waiting for the host
function queued before it.
"""

from __future__ import annotations

import pytest

from conftest import needs_virtual, run_py

# Run in a child: a regression hangs it, and the timeout turns that into a
# failure instead of a hung test run.
_DEADLOCK_SETUP = """
    import sys, threading, time
    import numpy as np
    import axl.driver as drv
    from axl.dtype import DType
    dev = drv.Accelerator()
    q = dev.default_queue
    ran = []
    def slow():
        time.sleep(0.2)              # queue work that needs the GIL, slowly
        ran.append({"t": threading.get_ident()})
    a = np.arange(256, dtype=np.float32)
    d = drv.Buffer(DType.float32, [256], device=dev)
    d.inplace_copy_from(drv.Buffer.from_numpy(a))
    q.synchronize()
    staging = drv.Buffer(DType.float32, [256], device=dev, usage=drv.Usage.STAGING)
    k = dev._test_kernel(0)          # INCREMENT_U32(buffer, n)
    q.enqueue_host_func(slow)
    print("enqueued", flush=True)
"""

_BLOCKING_ENQUEUES = {
    # from_numpy(...).to(dev): a copy from a tracked CPU buffer
    "copy_to_device": "b = drv.Buffer.from_numpy(a).to(dev)",
    # to_numpy of device memory: the copy into host memory
    "to_numpy": "out = d.to_numpy()",
    "inplace_copy_from": "d.inplace_copy_from(drv.Buffer.from_numpy(a))",
    "strided_copy": "d[::2].inplace_copy_from(drv.Buffer.from_numpy(a)[::2])",
    "batched_copy": "drv.batch_inplace_copy([d, staging], [drv.Buffer.from_numpy(a), drv.Buffer.from_numpy(a)])",
    # a fill of tracked (staging) memory
    "fill": "z = drv.Buffer.zeros([256], DType.float32, device=dev, usage=drv.Usage.STAGING)",
    # a launch leaves its stamp open; the next enqueue closes it (and blocks)
    "host_func_after_launch": (
        "q.launch(k, 1, 1, staging, np.uint32(0))\n"
        "q.enqueue_host_func(lambda: None)"
    ),
}


@needs_virtual
@pytest.mark.parametrize("op", sorted(_BLOCKING_ENQUEUES))
def test_blocking_enqueue_releases_the_gil(op):
    code = _DEADLOCK_SETUP + "\n" + "\n".join("    " + line for line in _BLOCKING_ENQUEUES[op].splitlines()) + """
    print("returned", flush=True)
    q.synchronize()
    assert len(ran) == 1, ran
    print("ok")
"""
    env = {"AXL_VIRTUAL_DEVICES": "1", "AXL_VIRTUAL_FAIL": "event_record:*=INTERNAL", "AXL_LOG_LEVEL": "error"}
    import subprocess

    try:
        p = run_py(code, env=env, timeout=15, check=False)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"{op} deadlocked: it blocked on the queued host function while holding the GIL "
                    f"(child output: {out!r})")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok" in p.stdout


# ------------------------------------------------ references and the release thread
# Each case runs in a child on the cpu backend and on the virtual one (their
# queues have their own worker threads). `thread_name` reads the OS name of
# a thread, which for the binding's release thread is "axl-py-release".
_RELEASE_SETUP = """
    import gc, sys, threading, time
    import axl.driver as drv
    from axl import _core
    dev = drv.{device}()
    q = dev.default_queue
    main = threading.get_ident()
    def thread_name():
        try:
            with open(f"/proc/self/task/{{threading.get_native_id()}}/comm") as f:
                return f.read().strip()
        except OSError:
            return "?"
    def wait_for(cond, what, timeout=5.0):
        # Bounded: the release thread needs the GIL, which sleep gives up.
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for " + what)
            time.sleep(0.005)
"""

_RELEASE_BACKENDS = [
    pytest.param("CPU", {}, id="cpu"),
    pytest.param("Accelerator", {"AXL_VIRTUAL_DEVICES": "1"}, id="virtual", marks=needs_virtual),
]


def _run_release_case(device, env, body):
    return run_py(_RELEASE_SETUP.format(device=device) + body, env=env, timeout=60)


@pytest.mark.parametrize("device,env", _RELEASE_BACKENDS)
def test_host_func_callable_is_released_off_the_backend_thread(device, env):
    p = _run_release_case(device, env, """
    where = {}
    class Fn:
        def __call__(self):
            where["call"] = threading.get_ident()
        def __del__(self):
            where["del"] = threading.get_ident()
            where["del_name"] = thread_name()
    # Gated, so neither callable runs before its enqueue has returned: until
    # then the caller's argument is a second reference, dropped on main.
    gate = drv.CompletionFlag(dev)
    q.wait_for_host_value(gate, 1)
    q.enqueue_host_func(Fn())            # the queue holds the only reference
    class Target:
        pass
    t = Target()
    import weakref
    def closure(t=t):
        where["call2"] = threading.get_ident()
    weakref.finalize(t, lambda: where.__setitem__("fin", threading.get_ident()))
    q.enqueue_host_func(closure)
    del t, closure                       # the callable's default holds the last reference
    gate.signal(1)
    q.synchronize()
    wait_for(lambda: "del" in where and "fin" in where, "the finalizers")
    assert where["del"] not in (main, where["call"]), where
    assert where["fin"] not in (main, where["call2"]), where
    assert where["del_name"] == "axl-py-release", where
    print("ok", where["del_name"])
""")
    assert "ok" in p.stdout


@pytest.mark.parametrize("device,env", _RELEASE_BACKENDS)
def test_raising_host_func_releases_its_traceback_off_the_backend_thread(device, env):
    p = _run_release_case(device, env, """
    where = {}
    class Witness:
        def __del__(self):
            where["del"] = threading.get_ident()
    def bad():
        witness = Witness()              # kept alive by the traceback's frame
        where["call"] = threading.get_ident()
        raise ValueError("boom from a host function")
    q.enqueue_host_func(bad)
    del bad
    q.synchronize()
    wait_for(lambda: "del" in where, "the traceback's locals to be released")
    assert where["del"] not in (main, where["call"]), where
    print("ok")
""")
    assert "ok" in p.stdout
    assert "Traceback (most recent call last)" in p.stderr
    assert "ValueError: boom from a host function" in p.stderr


@pytest.mark.parametrize("device,env", _RELEASE_BACKENDS)
def test_many_host_funcs_complete_and_leak_nothing(device, env):
    p = _run_release_case(device, env, """
    class Fn:
        live = 0
        calls = 0
        def __init__(self, shared):
            self.shared = shared
            Fn.live += 1
        def __call__(self):
            Fn.calls += 1
        def __del__(self):
            Fn.live -= 1
    shared = object()
    base = sys.getrefcount(shared)
    gc.collect()
    objects = len(gc.get_objects())
    n = 10000
    for _ in range(n):
        q.enqueue_host_func(Fn(shared))
    q.synchronize()
    assert Fn.calls == n, Fn.calls
    wait_for(lambda: Fn.live == 0, "every callable to be released")
    assert sys.getrefcount(shared) == base, (sys.getrefcount(shared), base)
    assert _core._pending_host_funcs() == 0
    gc.collect()
    assert len(gc.get_objects()) < objects + 100, (len(gc.get_objects()), objects)
    print("ok")
""")
    assert "ok" in p.stdout


def test_numpy_memory_wrapped_by_a_used_buffer_is_released_on_a_python_thread():
    """The DLPack deleter of a from_numpy buffer that a queue used runs once
    the core's reaper saw the queue catch up: on the release thread, not on
    the reaper (which must not wait for the GIL)."""
    p = _run_release_case("CPU", {}, """
    import numpy as np
    from axl.dtype import DType
    where = {}
    class Memory(bytearray):
        def __del__(self):
            where["del"] = threading.get_ident()
            where["del_name"] = thread_name()
    arr = np.frombuffer(Memory(4096), dtype=np.float32)
    b = drv.Buffer.from_numpy(arr)
    del arr
    out = drv.Buffer(DType.float32, [1024], device=dev)
    gate = drv.CompletionFlag(dev)
    q.wait_for_host_value(gate, 1)       # the copy cannot run yet
    out.inplace_copy_from(b)
    del b                                # freed once the queue has run the copy
    assert "del" not in where
    gate.signal(1)
    q.synchronize()
    wait_for(lambda: "del" in where, "the wrapped memory's owner to be released")
    assert where["del"] != main, where
    assert where["del_name"] == "axl-py-release", where
    print("ok")
""")
    assert "ok" in p.stdout


def test_release_thread_at_exit_is_drained_or_leaked_but_never_crashes():
    """References still queued for the release thread at exit are dropped by
    the atexit drain (their finalizers run); the process exits cleanly."""
    p = run_py("""
        import time
        from axl.driver import CPU
        q = CPU().default_queue
        class Fn:
            def __call__(self):
                time.sleep(0.05)
            def __del__(self):
                print("released", flush=True)
        for _ in range(3):
            q.enqueue_host_func(Fn())
    """, timeout=60)
    assert p.stdout.count("released") == 3, p.stdout + p.stderr
