"""The cuda backend through axl.driver as MAX names it (spec: ../shared/spec/
max-driver.md sections 2-9): buffers to and from the GPU, staging buffers,
DLPack with torch in both directions, completion flags, host functions,
events, two queues, the launch trace and run-time compilation. Skips without
a CUDA device; run by tests/gpu/run.sh."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import INC_SOURCE

import axl.driver as drv
from axl.dtype import DType


def _inc_kernel(gpu, step=1):
    return drv.Program(INC_SOURCE, device=gpu, options=[f"-DSTEP={step}"], name="inc.cu").compile()


def test_accelerator_is_cuda(gpu):
    assert gpu.api == "cuda"
    assert gpu.label == "gpu"
    assert drv.accelerator_api() == "cuda"
    assert gpu.architecture_name.startswith("sm_")


def test_numpy_round_trip_through_the_gpu(gpu):
    a = np.arange(1 << 20, dtype=np.float32)
    b = drv.Buffer.from_numpy(a).to(gpu)
    assert b.device == gpu
    back = b.to(drv.CPU()).to_numpy()
    np.testing.assert_array_equal(back, a)


def test_program_compiles_and_launches(gpu):
    module = _inc_kernel(gpu, step=5)
    n = 1000
    buf = drv.Buffer.from_numpy(np.arange(n, dtype=np.uint32)).to(gpu)
    q = gpu.default_queue
    q.launch(module.kernel("inc"), ((n + 127) // 128, 1, 1), (128, 1, 1), buf, np.uint32(n))
    out = buf.to(drv.CPU()).to_numpy()
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.uint32) + 5)


def test_compile_error_carries_the_nvrtc_log(gpu):
    with pytest.raises(drv.InvalidArgumentError) as e:
        drv.Program('extern "C" __global__ void k() { undefined_thing(); }', device=gpu, name="bad.cu").compile()
    assert "undefined_thing" in str(e.value)
    assert "bad.cu" in str(e.value)


def test_staging_buffers_are_pinned_and_device_bound(gpu):
    s = drv.Buffer(DType.float32, [1024], device=gpu, usage=drv.Usage.STAGING)
    assert s.pinned is True
    assert s.is_host is False
    assert s.device == gpu
    view = s.to_numpy()
    view[:] = 3.0
    d = s.to(gpu)  # real device memory
    assert d.pinned is False
    np.testing.assert_array_equal(d.to(drv.CPU()).to_numpy(), np.full(1024, 3.0, np.float32))


def test_dlpack_from_torch_cuda(gpu, torch_cuda):
    torch = torch_cuda
    t = torch.arange(4096, dtype=torch.float32, device="cuda:0") * 2
    b = drv.Buffer.from_dlpack(t)
    assert b.device == gpu
    np.testing.assert_array_equal(b.to(drv.CPU()).to_numpy(), np.arange(4096, dtype=np.float32) * 2)


def test_dlpack_to_torch_cuda_with_stream_handshake(gpu, torch_cuda):
    torch = torch_cuda
    b = drv.Buffer.from_numpy(np.arange(4096, dtype=np.int32)).to(gpu)
    t = torch.from_dlpack(b)  # torch passes its current stream; axl orders its queue before it
    assert t.is_cuda
    assert torch.equal(t.cpu(), torch.arange(4096, dtype=torch.int32))
    assert b.stream.native_stream_handle != 0


def test_completion_flag_gates_a_queue(gpu):
    flag = drv.CompletionFlag(gpu)
    assert flag.load() == 0
    q = gpu.default_queue
    ev = drv.DeviceEvent(gpu)
    q.wait_for_host_value(flag, 1)
    q.record_event(ev)
    time.sleep(0.05)
    assert not ev.is_ready()
    flag.signal(1)
    ev.synchronize()
    assert ev.is_ready()


def test_host_functions_run_in_order(gpu):
    module = _inc_kernel(gpu)
    order = []
    # MAX's name (spec 2.2) where the package has it, axl's queue method otherwise.
    enqueue = getattr(gpu, "__unsafe_enqueue_py_host_func", None) or gpu.default_queue.enqueue_host_func
    gpu.default_queue.launch(module.kernel("spin"), (1, 1, 1), (1, 1, 1), np.uint64(5_000_000))
    for i in range(5):
        enqueue(lambda i=i: order.append(i))
    assert len(order) < 5  # the spin keeps them queued for a few ms
    gpu.synchronize()
    assert order == [0, 1, 2, 3, 4]


# A copy between device memory and pageable host memory blocks the host until
# the stream's earlier work has run, here a Python host function: the copy
# must not hold the GIL (python/src/common.hpp). In a child with a timeout, so
# a regression fails instead of hanging the run.
_PAGEABLE_COPY = """
    import threading, time
    import numpy as np
    import axl.driver as drv
    gpu = drv.Accelerator()
    q = gpu.default_queue
    host = np.arange(1 << 20, dtype=np.float32)   # pageable: numpy's own memory
    d = drv.Buffer.from_numpy(host).to(gpu)
    q.synchronize()
    ran = []
    def slow():
        time.sleep(0.2)
        ran.append({"thread": threading.get_ident()})   # needs the GIL
    q.enqueue_host_func(slow)
    OP
    q.synchronize()
    assert len(ran) == 1, ran
    print("ok")
"""


@pytest.mark.parametrize("op", [
    "drv.Buffer.from_numpy(host).to(gpu)",               # host to device
    "back = d.to(drv.CPU()).to_numpy()",                 # device to host
    "d.inplace_copy_from(drv.Buffer.from_numpy(host))",  # into existing device memory
], ids=["htod", "dtoh", "inplace"])
def test_pageable_copy_after_a_python_host_func_does_not_deadlock(gpu, op):
    code = textwrap.dedent(_PAGEABLE_COPY).replace("OP", op)
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{op!r} deadlocked against the queued host function (the copy held the GIL)")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok" in p.stdout


def test_event_elapsed_time(gpu):
    module = drv.Program(INC_SOURCE, device=gpu, options=["-DSTEP=1"]).compile()
    q = gpu.default_queue
    start, end = drv.DeviceEvent(gpu, enable_timing=True), drv.DeviceEvent(gpu, enable_timing=True)
    q.record_event(start)
    q.launch(module.kernel("spin"), (1, 1, 1), (1, 1, 1), np.uint64(20_000_000))
    q.record_event(end)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 1.0 < ms < 1000.0


def test_two_queues_with_a_cross_queue_wait(gpu):
    module = _inc_kernel(gpu, step=1)
    n = 4096
    q1 = gpu.default_queue
    q2 = drv.DeviceQueue(gpu)
    buf = drv.Buffer.from_numpy(np.zeros(n, np.uint32)).to(gpu)
    q1.launch(module.kernel("spin"), (1, 1, 1), (1, 1, 1), np.uint64(50_000_000))
    q1.launch(module.kernel("inc"), (n // 128, 1, 1), (128, 1, 1), buf, np.uint32(n))
    q2.wait_for(q1)
    out = buf.to(q2).to(drv.CPU()).to_numpy()
    np.testing.assert_array_equal(out, np.ones(n, np.uint32))


def test_launch_trace_names_copies_and_kernels(gpu):
    module = _inc_kernel(gpu)
    n = 256
    host = drv.Buffer.from_numpy(np.zeros(n, np.uint32))
    with drv.launch_trace() as trace:
        buf = host.to(gpu)
        gpu.default_queue.launch(module.kernel("inc"), (2, 1, 1), (128, 1, 1), buf, np.uint32(n))
    gpu.synchronize()
    names = [e.name for e in trace]
    assert "cuMemcpyHtoDAsync" in names
    assert "inc" in names
    htod = [e for e in trace if e.name == "cuMemcpyHtoDAsync"][0]
    assert htod.kind == drv.LaunchTraceEntry.OperationKind.MEMCPY
    assert htod.memcpy_kind == drv.LaunchTraceEntry.MemcpyKind.HTOD
    assert htod.memcpy_byte_size == n * 4
    k = [e for e in trace if e.name == "inc"][0]
    assert (k.grid_x, k.block_x) == (2, 128)


def test_symmetric_pool_over_the_gpus(gpu):
    # SymmetricPool over every GPU: with fewer than 2 it is unsupported with
    # the reason; with 2+ it is allocated where every device reports
    # multicast support (the cuda plugin's multicast slots), and a copy into
    # one GPU's multicast view then reaches every GPU's unicast memory.
    from axl.driver import SymmetricPool

    gpus = [drv.Accelerator(i) for i in range(drv.accelerator_count())]
    if len(gpus) < 2:
        assert not SymmetricPool.is_supported(gpus)
        with pytest.raises(RuntimeError, match="at least 2 devices"):
            SymmetricPool.allocate(gpus, 1 << 20)
        return
    if not SymmetricPool.is_supported(gpus):
        with pytest.raises(RuntimeError, match="no multicast support"):
            SymmetricPool.allocate(gpus, 1 << 20)
        return
    pool = SymmetricPool.allocate(gpus, 1 << 20)
    zeros = drv.Buffer.from_numpy(np.zeros(1 << 20, np.uint8))
    for g in gpus:
        pool.unicast_view(g).inplace_copy_from(zeros)
        g.synchronize()
    data = (np.arange(1 << 20) % 251).astype(np.uint8)
    pool.multicast_view(gpus[0]).inplace_copy_from(drv.Buffer.from_numpy(data))
    gpus[0].synchronize()
    for g in gpus:
        np.testing.assert_array_equal(pool.unicast_view(g).to(drv.CPU()).to_numpy(), data)
