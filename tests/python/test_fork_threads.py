"""fork() safety and concurrent use from Python threads."""

from __future__ import annotations

import threading

import numpy as np

from axl.driver import Buffer, DeviceQueue
from axl.dtype import DType

from conftest import run_py


def test_fork_after_accelerator_count_child_uses_devices():
    """Counting devices initialises no backend, so a child forked afterwards
    can use every device itself."""
    p = run_py("""
        import os
        import numpy as np
        from axl.driver import CPU, Buffer, accelerator_count
        from axl.dtype import DType
        n = accelerator_count()
        pid = os.fork()
        if pid == 0:
            try:
                cpu = CPU()
                buf = Buffer.from_numpy(np.zeros(64, dtype=np.uint32))
                cpu.default_queue.launch(cpu._test_kernel(0), 1, 64, buf, np.uint32(64))
                ok = (buf.to_numpy() == 1).all()
                os._exit(0 if ok else 3)
            except BaseException as e:
                print("child:", repr(e), flush=True)
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        # The parent still works too.
        buf = Buffer.from_numpy(np.zeros(8, dtype=np.uint32))
        print("ok", n)
    """)
    assert "ok" in p.stdout


def test_fork_after_backend_init_child_gets_forked_error():
    p = run_py("""
        import os
        import numpy as np
        from axl.driver import CPU, Buffer, ForkedError
        from axl.dtype import DType
        cpu = CPU()
        Buffer(DType.uint8, (16,), cpu)        # the cpu backend is initialised here
        pid = os.fork()
        if pid == 0:
            try:
                Buffer(DType.uint8, (16,), cpu)
            except ForkedError as e:
                print("forked:", e, flush=True)
                os._exit(0 if "spawn" in str(e) else 5)
            except BaseException as e:
                print("child:", repr(e), flush=True)
                os._exit(4)
            os._exit(6)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
    """)
    assert "forked:" in p.stdout and "AXL_ERROR_FORKED" in p.stdout


def test_eight_threads_launch_concurrently(cpu):
    """8 threads launch at once, alternating between a queue shared by all of
    them and a queue of their own; each queue works on its own buffers, so
    every count is exact only if no launch was lost, doubled or torn."""
    inc = cpu._test_kernel("INCREMENT_U32")
    shared = DeviceQueue(cpu)
    n, launches = 256, 300
    on_shared = [Buffer.zeros((n,), DType.uint32, cpu) for _ in range(8)]
    on_own = [Buffer.zeros((n,), DType.uint32, cpu) for _ in range(8)]
    cpu.default_queue.synchronize()
    errors = []
    start = threading.Barrier(8)

    def work(i: int) -> None:
        try:
            own = DeviceQueue(cpu)
            start.wait()
            for j in range(launches):
                if j % 2:
                    shared.launch(inc, 4, 64, on_shared[i], np.uint32(n))
                else:
                    own.launch(inc, (2, 2), 64, on_own[i], np.uint32(n))
            own.synchronize()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    shared.synchronize()
    assert not errors, errors
    for b in on_shared + on_own:
        assert (b.to_numpy() == launches // 2).all()


def test_threads_share_one_queue_exact(cpu):
    """One in-order queue fed by 8 threads: every launch lands exactly once."""
    inc = cpu._test_kernel("INCREMENT_U32")
    q = DeviceQueue(cpu)
    buf = Buffer.zeros((64,), DType.uint32, cpu)
    cpu.default_queue.synchronize()
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(250):
            q.launch(inc, 1, 64, buf, np.uint32(64))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    q.synchronize()
    assert (buf.to_numpy() == 8 * 250).all()
