"""Entries of the MAX driver spec (../shared/spec/max-driver.md) that axl
lacked or answered differently (issue 14): the host-function entry points
of Device and DeviceQueue (2.1, 2.4), an accelerator's ``stats`` keys
(2.1), and ``Buffer(..., stream=...)``, where the stream replaces the
device (4.1)."""
from __future__ import annotations

import threading

import pytest

from axl.driver import CPU, Buffer, CompletionFlag, DeviceQueue
from axl.dtype import DType

from conftest import needs_virtual, run_py
from test_buffer_model import on_virtual

UNSAFE = "__unsafe_enqueue_py_host_func"
UNSAFE_ASYNC = "__unsafe_enqueue_async_py_host_func"


def test_host_function_entry_points_refuse_the_cpu(cpu):
    ran = []
    with pytest.raises(RuntimeError, match=r"need an accelerator queue, not Device\(type=cpu,id=0\)"):
        getattr(cpu, UNSAFE)(lambda: ran.append(1))
    flag = CompletionFlag(cpu)
    for target in (cpu, cpu.default_queue):
        with pytest.raises(RuntimeError, match=r"need an accelerator queue"):
            getattr(target, UNSAFE_ASYNC)(lambda: ran.append(1), flag, 1, cpu)
    cpu.synchronize()
    assert ran == []
    cpu.default_queue.enqueue_host_func(lambda: ran.append(2))  # axl's own entry point: any queue
    cpu.synchronize()
    assert ran == [2]


def test_host_function_entry_points_check_their_arguments(cpu):
    flag = CompletionFlag(cpu)
    with pytest.raises(TypeError, match="fn must be a callable"):
        getattr(cpu, UNSAFE)(3)
    with pytest.raises(TypeError, match="flag must be a CompletionFlag, got int"):
        getattr(cpu, UNSAFE_ASYNC)(lambda: None, 0, 1, cpu)
    with pytest.raises(TypeError, match=r"value must be an int in \[0, 2\*\*64\), got -1"):
        getattr(cpu.default_queue, UNSAFE_ASYNC)(lambda: None, flag, -1, cpu)
    with pytest.raises(TypeError, match="cpu must be the CPU device, got str"):
        getattr(cpu.default_queue, UNSAFE_ASYNC)(lambda: None, flag, 1, "cpu")


@on_virtual()
def test_unsafe_enqueue_py_host_func_runs_in_queue_order(dev):
    seen = []
    for i in range(20):
        getattr(dev, UNSAFE)(lambda i=i: seen.append(i))
    getattr(dev, UNSAFE)(lambda: 1 / 0)  # printed; synchronize does not raise
    dev.synchronize()
    assert seen == list(range(20))


@on_virtual()
def test_unsafe_enqueue_async_py_host_func_signals_the_flag(dev):
    cpu = CPU()
    for target in (dev, DeviceQueue(dev)):
        queue = target if isinstance(target, DeviceQueue) else dev.default_queue
        flag = CompletionFlag(dev)
        release = threading.Event()
        done = []

        def fn():
            release.wait(10)
            done.append(threading.current_thread().name)

        getattr(target, UNSAFE_ASYNC)(fn, flag, 7, cpu)
        # The queue's host node only dispatches fn: the queue goes on while
        # fn still waits, and the flag is set only when fn has finished.
        queue.synchronize()
        assert flag.load() == 0 and not done
        release.set()
        queue.wait_for_host_value(flag, 7)
        queue.synchronize()
        assert flag.load() == 7 and done and done[0] != threading.current_thread().name


@needs_virtual
def test_async_host_function_enqueued_at_exit_still_signals_its_flag():
    # An atexit handler registered after import runs after concurrent.futures
    # shut its pools down: the hand-off must still run fn and signal the flag,
    # or the queue gated on it (and the synchronize behind it) hangs.
    p = run_py("""
        import atexit
        import axl.driver as d
        def at_exit():
            g, cpu = d.Accelerator(0), d.CPU()
            f, q = d.CompletionFlag(g), d.DeviceQueue(g)
            getattr(q, "__unsafe_enqueue_async_py_host_func")(lambda: print("ran", flush=True), f, 1, cpu)
            q.wait_for_host_value(f, 1)
            q.synchronize()
            print("synchronized", flush=True)
        atexit.register(at_exit)
    """, env={"AXL_VIRTUAL_DEVICES": "1"}, timeout=60)
    assert p.stdout.split() == ["ran", "synchronized"], p.stdout + p.stderr


def test_cpu_stats_keys(cpu):
    assert set(cpu.stats) == {"free_memory", "total_memory"}


@on_virtual()
def test_accelerator_stats_have_max_keys(dev):
    stats = dev.stats
    assert set(stats) == {"free_memory", "total_memory", "graph_mem_reserved", "graph_mem_used"}
    assert 0 <= stats["free_memory"] <= stats["total_memory"]
    assert stats["graph_mem_reserved"] == stats["graph_mem_used"] == 0


def test_stream_replaces_the_device_on_the_cpu(cpu):
    q = DeviceQueue(cpu)
    b = Buffer(DType.int32, (3,), device=cpu, stream=q)
    assert b.stream == q and b.device == cpu
    b = Buffer(DType.int32, (3,), cpu.default_queue, stream=q)  # a queue positionally, and stream=
    assert b.stream == q
    with pytest.raises(TypeError, match="stream must be a DeviceQueue, got 3"):
        Buffer(DType.int32, (3,), device=cpu, stream=3)


@on_virtual()
def test_stream_replaces_the_device(dev):
    cpu = CPU()
    q = DeviceQueue(dev)
    b = Buffer(DType.float32, (2, 2), device=cpu, stream=q)
    assert b.device == dev and b.stream == q and not b.is_host
    c = Buffer(DType.float32, (2,), dev, stream=cpu.default_queue)
    assert c.device == cpu and c.stream == cpu.default_queue
