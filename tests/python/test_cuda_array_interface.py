"""Buffer.__cuda_array_interface__ (CUDA Array Interface v3) on the cuda
backend, driven by the functional fake libcuda of tests/cuda (its device
memory is host memory, so the exported pointers can be read back here);
real CuPy and torch consume it in tests/gpu. The fake comes from the
``fake_cuda`` fixture of conftest.py."""

from __future__ import annotations

import textwrap

from conftest import run_py


def run_cuda(fake_cuda, code: str):
    return run_py("import axl.driver as drv\nfrom axl.dtype import DType\nimport ctypes, numpy as np\n"
                  "gpu = drv.Accelerator(0)\nassert gpu.api == 'cuda', gpu.api\n" + textwrap.dedent(code),
                  env={"AXL_CUDA_DRIVER_PATH": fake_cuda, "FAKE_CUDA_DEVICES": "1"})


def test_a_cuda_device_buffer_exports_version_3(fake_cuda):
    p = run_cuda(fake_cuda, """
        host = np.arange(6, dtype=np.float32)
        b = drv.Buffer.from_numpy(host).to(gpu)
        cai = b.__cuda_array_interface__
        assert set(cai) == {"shape", "typestr", "data", "strides", "version", "stream"}, cai
        assert cai["version"] == 3 and cai["shape"] == (6,) and cai["typestr"] == "<f4", cai
        assert cai["strides"] is None  # C-contiguous
        ptr, read_only = cai["data"]
        assert read_only is False and ptr == b._data_ptr()
        # The fake driver's device memory is host memory: the pointer is the data.
        b.stream.synchronize()
        assert np.frombuffer(ctypes.string_at(ptr, 24), np.float32).tolist() == host.tolist()
        # The consumer synchronizes on the buffer's own queue (v3's stream).
        assert cai["stream"] == b.stream.native_stream_handle and cai["stream"] not in (0, None)
        q = drv.DeviceQueue(gpu)
        other = drv.Buffer(DType.int32, (2, 3), stream=q)
        assert other.__cuda_array_interface__["stream"] == q.native_stream_handle != cai["stream"]
        assert other.__cuda_array_interface__["typestr"] == "<i4"
        print("OK")
        """)
    assert "OK" in p.stdout


def test_views_give_byte_strides_and_element_0(fake_cuda):
    p = run_cuda(fake_cuda, """
        host = np.arange(12, dtype=np.int16).reshape(3, 4)
        b = drv.Buffer.from_numpy(host).to(gpu)
        b.stream.synchronize()
        v = b[:, 1:3]
        cai = v.__cuda_array_interface__
        assert cai["shape"] == (3, 2) and cai["strides"] == (8, 2), cai
        ptr = cai["data"][0]
        assert ptr == b._data_ptr() + 2
        seen = [[int.from_bytes(ctypes.string_at(ptr + i * 8 + j * 2, 2), "little", signed=True)
                 for j in range(2)] for i in range(3)]
        assert seen == host[:, 1:3].tolist(), seen
        rev = b[0, ::-1].__cuda_array_interface__
        assert rev["strides"] == (-2,) and rev["data"][0] == b._data_ptr() + 6, rev
        row = b[1].__cuda_array_interface__
        assert row["strides"] is None and row["shape"] == (4,), row
        scalar = b[2, 3].__cuda_array_interface__
        assert scalar["shape"] == () and scalar["strides"] is None
        empty = b[3:].__cuda_array_interface__
        assert empty["shape"] == (0, 4) and empty["data"] == (0, False), empty
        assert drv.Buffer(DType.bool, (2,), gpu).__cuda_array_interface__["typestr"] == "|b1"
        print("OK")
        """)
    assert "OK" in p.stdout


def test_dtypes_without_a_type_string_are_refused(fake_cuda):
    p = run_cuda(fake_cuda, """
        for dt in (DType.bfloat16, DType.float8_e4m3fn):
            b = drv.Buffer(dt, (2,), gpu)
            # AttributeError, so the consumers' hasattr probe is False and
            # they fall back to DLPack (a TypeError would escape hasattr).
            assert not hasattr(b, "__cuda_array_interface__"), dt
            assert getattr(b, "__cuda_array_interface__", None) is None, dt
            try:
                b.__cuda_array_interface__
            except AttributeError as e:
                assert str(dt) in str(e) and "__dlpack__" in str(e), e
            else:
                raise AssertionError(f"{dt} exported")
        print("OK")
        """)
    assert "OK" in p.stdout


def test_memory_that_is_not_cuda_device_memory_has_no_attribute(fake_cuda):
    # CuPy and Numba probe with hasattr; a host or staging address taken for
    # a device pointer would be misread.
    p = run_cuda(fake_cuda, """
        from axl.driver import Usage
        assert not hasattr(drv.Buffer(DType.float32, (4,)), "__cuda_array_interface__")
        staging = drv.Buffer(DType.float32, (4,), gpu, usage=Usage.STAGING)
        assert staging.pinned and not hasattr(staging, "__cuda_array_interface__")
        try:
            drv.Buffer(DType.float32, (4,)).__cuda_array_interface__
        except AttributeError as e:
            assert "not CUDA device memory" in str(e), e
        print("OK")
        """)
    assert "OK" in p.stdout


def test_virtual_devices_that_call_themselves_cuda_have_no_attribute():
    p = run_py("""
        import axl.driver as drv
        from axl.dtype import DType
        drv.set_virtual_device_api("cuda")
        drv.set_virtual_device_count(1)
        b = drv.Buffer(DType.float32, (4,), drv.Accelerator(0))
        assert not hasattr(b, "__cuda_array_interface__")
        print("OK")
        """)
    assert "OK" in p.stdout
