"""Real consumers of axl Buffers on the GPU machine: CuPy and torch through
``__cuda_array_interface__`` (v3) and DLPack, torch on host Buffers
(zero copy) and its clean refusal of memory it cannot read. CuPy and torch
come from the machine's Python (/opt/torch/.venv); a case skips, saying
which, where one is missing. The interface's fields are checked without a
GPU in tests/python/test_cuda_array_interface.py (fake libcuda)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import axl.driver as drv
from axl.dtype import DType


@pytest.fixture
def cupy(gpu):
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CuPy's CUDARuntimeError and ImportErrors of its libraries
        pytest.skip(f"CuPy cannot reach the GPU: {e}")
    return cp


def test_cupy_takes_a_device_buffer_without_a_copy(gpu, cupy):
    b = drv.Buffer.from_numpy(np.arange(4096, dtype=np.float32)).to(gpu)
    a = cupy.asarray(b)  # __cuda_array_interface__; CuPy waits on the exported stream
    assert a.data.ptr == b._data_ptr()
    assert a.dtype == np.float32 and a.shape == (4096,)
    np.testing.assert_array_equal(cupy.asnumpy(a), np.arange(4096, dtype=np.float32))
    a *= 2  # writes land in the Buffer's memory
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(b.to(drv.CPU()).to_numpy(), np.arange(4096, dtype=np.float32) * 2)


def test_cupy_reads_a_strided_view(gpu, cupy):
    host = np.arange(48, dtype=np.int32).reshape(6, 8)
    b = drv.Buffer.from_numpy(host).to(gpu)
    v = b[1:5, ::2]
    a = cupy.asarray(v)
    assert a.strides == (32, 8)
    np.testing.assert_array_equal(cupy.asnumpy(a), host[1:5, ::2])


def test_cupy_sees_work_still_queued_on_the_buffer_stream(gpu, cupy):
    # The interface's stream is the Buffer's queue: CuPy orders its read
    # after the copy axl enqueued there, without axl waiting on the host.
    n = 1 << 22
    src = drv.Buffer.from_numpy(np.full(n, 7, dtype=np.uint32)).to(gpu)
    dst = drv.Buffer(DType.uint32, (n,), gpu)
    dst.inplace_copy_from(src)
    assert dst.__cuda_array_interface__["stream"] == dst.stream.native_stream_handle
    assert int(cupy.asarray(dst).min()) == 7


def test_torch_takes_a_device_buffer_through_the_interface(gpu, torch_cuda):
    torch = torch_cuda
    b = drv.Buffer.from_numpy(np.arange(1024, dtype=np.int64)).to(gpu)
    b.stream.synchronize()  # the stream field's handling is CuPy's case above; torch versions differ
    t = torch.as_tensor(b, device="cuda")  # __cuda_array_interface__
    assert t.data_ptr() == b._data_ptr()
    assert torch.equal(t.cpu(), torch.arange(1024, dtype=torch.int64))


def test_torch_aliases_host_buffers_through_dlpack():
    torch = pytest.importorskip("torch")
    b = drv.Buffer.from_numpy(np.arange(16, dtype=np.float32))
    t = torch.from_dlpack(b)
    assert t.device.type == "cpu" and t.data_ptr() == b._data_ptr()
    t += 1  # zero copy: torch writes the Buffer's memory
    np.testing.assert_array_equal(b.to_numpy(), np.arange(16, dtype=np.float32) + 1)
    for dt, tt in ((DType.int32, torch.int32), (DType.bool, torch.bool), (DType.bfloat16, torch.bfloat16)):
        assert torch.from_dlpack(drv.Buffer(dt, (3,))).dtype == tt


def test_torch_refuses_virtual_device_memory_cleanly():
    # kDLExtDev memory is refused by __dlpack__ itself (BufferError), rather
    # than torch failing on 'torch.privateuseone'; a host copy still works.
    pytest.importorskip("torch")
    code = """
        import torch, numpy as np
        import axl.driver as drv
        b = drv.Buffer.from_numpy(np.arange(4, dtype=np.float32)).to(drv.Accelerator(0))
        assert not hasattr(b, "__cuda_array_interface__")
        try:
            torch.from_dlpack(b)
        except BufferError as e:
            assert "buf.to(CPU())" in str(e), e
        else:
            raise AssertionError("torch took virtual device memory")
        assert torch.from_dlpack(b.to(drv.CPU())).tolist() == [0.0, 1.0, 2.0, 3.0]
        print("OK")
        """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXL_")}
    env.update(AXL_VIRTUAL_DEVICES="1", CUDA_VISIBLE_DEVICES="")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout + p.stderr
