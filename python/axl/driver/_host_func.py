"""MAX's host-function entry points (spec 2.1, 2.4): ``Device.
__unsafe_enqueue_py_host_func``, ``Device.__unsafe_enqueue_async_py_host_func``
and ``DeviceQueue.__unsafe_enqueue_async_py_host_func``.

axl's own API is ``DeviceQueue.enqueue_host_func`` (any queue, the cpu
backend included); these names keep MAX's contract, errors included: a
``RuntimeError`` on the CPU, so code written for MAX that relies on it
behaves the same. Set with setattr: the names start with two underscores,
which Python would mangle inside a class body.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from .._core import CompletionFlag, DeviceQueue
from ._device import CPU, Device

# concurrent.futures and traceback are imported only where used, and the
# annotations name nothing from typing:
# together they are about a third of `import axl.driver`'s cost
# (benchmarks/python_overhead.py prints the startup ratio). threading stays
# here: the pool may be made first on a thread that is not the main one (a
# host function's), and threading imported there would take that thread for
# the main thread.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import concurrent.futures

# The "CPU worker pool" of MAX's async variant: one per process (axl's CPU
# device has no pool of its own), created on first use.
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _worker_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            import concurrent.futures

            _pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="axl-host-func")
        return _pool


def _refuse_host(where: str, queue: DeviceQueue) -> None:
    if queue.device.is_host:
        raise RuntimeError(
            f"{where}: host functions through MAX's entry points need an accelerator queue, not {queue.device} "
            "(MAX refuses the CPU; axl's DeviceQueue.enqueue_host_func runs them on any queue)"
        )


def _check_callable(where: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{where}: fn must be a callable taking no arguments, got {type(fn).__name__}")


def _enqueue_py_host_func(self: Device, fn: Callable[[], object]) -> None:
    """Runs ``fn()`` on a driver thread after the work already on the
    device's default queue (cuLaunchHostFunc's contract: no device calls
    inside). A raising ``fn`` has its traceback printed; ``synchronize``
    does not raise for it.

    Raises:
        TypeError: ``fn`` is not callable.
        RuntimeError: the device is the CPU, or its backend has no host
            functions (``UnsupportedError``).
    """
    where = "Device.__unsafe_enqueue_py_host_func"
    _check_callable(where, fn)
    _refuse_host(where, self.default_queue)
    self.default_queue.enqueue_host_func(fn)


def _enqueue_async(
    where: str, queue: DeviceQueue, fn: Callable[[], object], flag: CompletionFlag, value: int, cpu: CPU
) -> None:
    _check_callable(where, fn)
    if not isinstance(flag, CompletionFlag):
        raise TypeError(f"{where}: flag must be a CompletionFlag, got {type(flag).__name__}")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise TypeError(f"{where}: value must be an int in [0, 2**64), got {value!r}")
    if not isinstance(cpu, CPU):
        raise TypeError(f"{where}: cpu must be the CPU device, got {type(cpu).__name__}")
    _refuse_host(where, queue)

    def run() -> None:
        try:
            fn()
        except BaseException:  # printed, as the synchronous variant does
            import traceback

            print(f"axl: exception in a host function ({where}):", file=sys.stderr)
            traceback.print_exc()
        finally:
            flag.signal(value)

    # The queue's host node only hands fn to the pool and returns, so the
    # queue goes on at once; fn, flag and cpu stay referenced by `run`.
    def hand_off() -> None:
        try:
            _worker_pool().submit(run)
        except BaseException:
            # The pool cannot take it: shut down, or concurrent.futures not
            # importable any more (both once the interpreter's shutdown has
            # begun, e.g. from an atexit handler), or no thread to start. Run
            # fn here rather than never signal the flag, which would leave a
            # queue gated on it, and any synchronize behind it, hanging.
            run()

    queue.enqueue_host_func(hand_off)


def _device_enqueue_async(self: Device, fn: Callable[[], object], flag: CompletionFlag, value: int, cpu: CPU) -> None:
    """Hands ``fn`` to a CPU worker thread once the device's default queue
    reaches this point, and returns at once; when ``fn`` has finished, the
    worker signals ``value`` into ``flag`` (``wait_for_host_value`` can gate
    later queue work on it).

    Raises:
        TypeError: ``fn`` not callable, ``flag`` not a CompletionFlag,
            ``value`` not a u64, ``cpu`` not the CPU.
        RuntimeError: the device is the CPU, or its backend has no host
            functions.
    """
    _enqueue_async("Device.__unsafe_enqueue_async_py_host_func", self.default_queue, fn, flag, value, cpu)


def _queue_enqueue_async(
    self: DeviceQueue, fn: Callable[[], object], flag: CompletionFlag, value: int, cpu: CPU
) -> None:
    """As ``Device.__unsafe_enqueue_async_py_host_func``, on this queue."""
    _enqueue_async("DeviceQueue.__unsafe_enqueue_async_py_host_func", self, fn, flag, value, cpu)


setattr(Device, "__unsafe_enqueue_py_host_func", _enqueue_py_host_func)
setattr(Device, "__unsafe_enqueue_async_py_host_func", _device_enqueue_async)
setattr(DeviceQueue, "__unsafe_enqueue_async_py_host_func", _queue_enqueue_async)
