"""Python on OpenCL devices: Program compiles OpenCL C, launches run on the
device, buffers report DLPack device kDLOpenCL but are not exported (no
consumer could dereference them), and a machine without the ICD
loader or without an OpenCL driver says why it has no OpenCL accelerator.

The device cases need PoCL (its CPU device, counted as an accelerator with
AXL_OPENCL_DEVICE_TYPES=all) and run in child interpreters, because
discovery reads the environment once per process; they skip, saying why,
where the OpenCL plugin, the ICD loader or PoCL is missing. The shared
accelerator cases (buffers, hazards, queues, events, host functions,
trace) run on PoCL through conftest.ACCELERATOR_KINDS.
"""

from __future__ import annotations

import pytest

from conftest import OPENCL, PLUGIN_DIR, run_on, run_py, skip_unless_available

# saxpy in OpenCL C with the CPU kernel's arguments (alpha, x, y, n);
# FP_CONTRACT OFF: no fused multiply-add, so it rounds as numpy does.
SAXPY = r"""
#pragma OPENCL FP_CONTRACT OFF
__kernel void saxpy(float alpha, __global const float* x, __global float* y, uint n) {
  for (uint i = get_global_id(0); i < n; i += get_global_size(0))
    y[i] = alpha * x[i] + y[i];
}
"""


@pytest.fixture
def pocl():
    skip_unless_available(OPENCL)


def test_program_compiles_opencl_c_and_launches(pocl):
    p = run_on(OPENCL, f"""
        import numpy as np
        import axl.driver as drv
        from axl.dtype import DType
        SAXPY = {SAXPY!r}
        prog = drv.Program(SAXPY, device=dev)
        # The language follows the device's api when none is named.
        assert prog.language == "opencl" and prog.name == "axl_program.cl", (prog.language, prog.name)
        mod = prog.compile()
        assert prog.compile() is mod
        k = mod.kernel("saxpy")
        n = 1000
        x = np.arange(n, dtype=np.float32)
        y = np.full(n, 0.5, np.float32)
        xb, yb = drv.Buffer.from_numpy(x).to(dev), drv.Buffer.from_numpy(y).to(dev)
        # fewer work items than elements: the grid-stride loop covers the rest
        dev.default_queue.launch(k, 3, 64, np.float32(2), xb, yb, np.uint32(n))
        np.testing.assert_array_equal(yb.to_numpy(), np.float32(2) * x + y)
        # Named explicitly, and with compiler options.
        k2 = drv.Program("__kernel void f(__global int* p) {{ p[get_global_id(0)] = V; }}", device=dev,
                         language="opencl", options=["-DV=7"]).compile().kernel("f")
        b = drv.Buffer(DType.int32, (64,), dev)
        dev.default_queue.launch(k2, 2, 32, b)
        assert (b.to_numpy() == 7).all()
        print("@@api", dev.api)
    """)
    assert "@@api opencl" in p.stdout


def test_opencl_c_errors_name_what_is_wrong(pocl):
    run_on(OPENCL, """
        import numpy as np
        import axl.driver as drv
        from axl.dtype import DType
        try:
            drv.Program("__kernel void broken(__global int* p) { p[0] = undeclared_name; }", device=dev).compile()
        except drv.InvalidArgumentError as e:
            assert "undeclared_name" in str(e), e  # the build log
        else:
            raise SystemExit("a broken program compiled")
        mod = drv.Program("__kernel void f(__global int* p, int v) { p[0] = v; }", device=dev).compile()
        try:
            mod.kernel("g")
        except drv.NotFoundError as e:
            assert "'g'" in str(e) or "g" in str(e), e
        else:
            raise SystemExit("a kernel that is not in the program was found")
        b = drv.Buffer(DType.int32, (1,), dev)
        try:
            dev.default_queue.launch(mod.kernel("f"), 1, 1, b)
        except drv.InvalidArgumentError as e:
            assert "argument" in str(e), e
        else:
            raise SystemExit("a launch with too few arguments ran")
        # CUDA C++ is not OpenCL C: naming the wrong language fails in the compiler or backend.
        try:
            drv.Program('extern "C" __global__ void k() {}', device=dev, language="cuda").compile()
        except (drv.InvalidArgumentError, drv.UnsupportedError) as e:
            pass
        else:
            raise SystemExit("CUDA C++ compiled on an OpenCL device")
    """)


def test_launch_refuses_an_argument_of_the_wrong_kind(pocl):
    # A scalar of pointer size at a __global parameter was taken by the
    # driver as a cl_mem and dereferenced (the process died); a buffer at an
    # 8-byte value parameter passed the cl_mem as the value, silently.
    run_on(OPENCL, """
        import numpy as np
        import axl.driver as drv
        from axl.dtype import DType
        src = "__kernel void f(__global float* y, ulong n) { if (get_global_id(0) < n) y[get_global_id(0)] = 1.0f; }"
        k = drv.Program(src, device=dev).compile().kernel("f")
        y = drv.Buffer.zeros((64,), DType.float32, dev)
        q = dev.default_queue
        for args, where in (((np.uint64(5), np.uint64(64)), "argument 0"), ((y, y), "argument 1")):
            try:
                q.launch(k, 1, 64, *args)
            except drv.InvalidArgumentError as e:
                assert where in str(e) and "'f'" in str(e), e
            else:
                raise SystemExit(f"a launch with {args!r} ran")
        q.launch(k, 1, 64, y, np.uint64(64))  # the queue still works
        assert (y.to_numpy() == 1.0).all()
        print("ok")
    """)


def test_stats_reports_total_and_this_process_s_use(pocl):
    # MAX's Device.stats is a property of every device; it raised here.
    run_on(OPENCL, """
        import axl.driver as drv
        from axl.dtype import DType
        s = dev.stats
        assert s["total_memory"] > 0 and 0 <= s["free_memory"] <= s["total_memory"], s
        b = drv.Buffer(DType.uint8, (1 << 20,), dev)
        after = dev.stats["free_memory"]
        assert after <= s["free_memory"] - (1 << 20), (s, after)
        del b
    """)


def test_saxpy_over_ten_million_floats_matches_numpy(pocl):
    run_on(OPENCL, f"""
        import numpy as np
        import axl.driver as drv
        n = 10_000_000
        rng = np.random.default_rng(13)
        x = rng.standard_normal(n, dtype=np.float32)
        y = rng.standard_normal(n, dtype=np.float32)
        alpha = np.float32(-1.25)
        k = drv.Program({SAXPY!r}, device=dev).compile().kernel("saxpy")
        xb, yb = drv.Buffer.from_numpy(x).to(dev), drv.Buffer.from_numpy(y).to(dev)
        block = 256
        dev.default_queue.launch(k, (n + block - 1) // block, block, alpha, xb, yb, np.uint32(n))
        got = yb.to_numpy()
        want = alpha * x + y
        np.testing.assert_array_equal(got, want)  # bit for bit: both round the product, then the sum
    """, timeout=600)


def test_dlpack_device_is_kdlopencl_and_the_export_refused_as_virtual_memory(pocl):
    """One rule for memory no consumer can dereference (as the virtual
    backend's, test_dlpack_consumers.py): OpenCL device memory reports
    kDLOpenCL, whose data dlpack.h defines as a cl_mem, and axl has only a
    synthetic address, so __dlpack__ refuses it with a BufferError naming the
    ways to a host copy, which work."""
    run_on(OPENCL, """
        import numpy as np
        from axl.driver import Buffer, Usage
        from axl.dtype import DType
        DL_OPENCL = 4  # kDLOpenCL in dlpack.h's DLDeviceType
        b = Buffer.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)).to(dev)
        assert b.__dlpack_device__() == (DL_OPENCL, dev.id), b.__dlpack_device__()
        class Producer:
            def __init__(self, buf): self.buf = buf
            def __dlpack__(self, **kw): return self.buf.__dlpack__(**kw)
            def __dlpack_device__(self): return self.buf.__dlpack_device__()
        calls = {"__dlpack__()": lambda: b.__dlpack__(), "versioned": lambda: b[:, 1:].__dlpack__(max_version=(1, 0)),
                 "copy=True": lambda: b.__dlpack__(copy=True), "np.from_dlpack": lambda: np.from_dlpack(b),
                 "Buffer.from_dlpack": lambda: Buffer.from_dlpack(Producer(b))}
        for name, call in calls.items():
            try:
                call()
            except BufferError as e:
                text = str(e)
                assert "no DLPack consumer can read" in text and "cl_mem" in text, (name, text)
                assert "buf.to(CPU())" in text and "dl_device=(1, 0)" in text, (name, text)
            else:
                raise SystemExit(f"{name}: OpenCL device memory was exported")
        # Asked for the CPU, the export is a host copy.
        np.testing.assert_array_equal(np.from_dlpack(b, device="cpu"), np.arange(12).reshape(3, 4))
        # Staging (pinned, mapped) memory is host memory to every consumer.
        s = Buffer(DType.float32, (4,), dev, usage=Usage.STAGING)
        assert s.__dlpack_device__() == (1, 0)
        assert np.from_dlpack(s).ctypes.data == s._data_ptr()
    """)


def test_opencl_devices_are_opt_in_for_cpu_drivers(pocl):
    """PoCL's device is a CPU device: without AXL_OPENCL_DEVICE_TYPES it is
    no accelerator, and the plugin record says how to opt in."""
    p = run_py("""
        import axl.driver as d
        from axl import _core
        assert not any(d.Accelerator(i).api == "opencl" for i in range(d.accelerator_count()))
        rec = [r for r in _core._plugin_records() if r["name"] == "opencl"][0]
        print("@@reason", rec["reason"])
    """)
    assert "AXL_OPENCL_DEVICE_TYPES=all" in p.stdout, p.stdout


def _no_opencl(env: dict[str, str]) -> str:
    """Runs a child with ``env`` that must have no OpenCL accelerator and
    returns the opencl plugin's reason, as Python sees it."""
    if not (PLUGIN_DIR / "libaxl_plugin_opencl.so").exists():
        pytest.skip(f"the opencl plugin is not installed ({PLUGIN_DIR / 'libaxl_plugin_opencl.so'})")
    p = run_py("""
        import axl.driver as d
        from axl import _core
        assert not any(d.Accelerator(i).api == "opencl" for i in range(d.accelerator_count()))
        rec = [r for r in _core._plugin_records() if r["name"] == "opencl"][0]
        print("@@state", rec["state_name"])
        print("@@reason", rec["reason"])
    """, env={"AXL_OPENCL_DEVICE_TYPES": "all", **env})
    return p.stdout


def test_no_loader_says_so():
    out = _no_opencl({"AXL_OPENCL_LOADER_PATH": "/nonexistent/libOpenCL.so.1"})
    assert "ICD loader is not installed" in out and "/nonexistent/libOpenCL.so.1" in out, out


def test_no_device_says_so(tmp_path):
    import ctypes.util

    if ctypes.util.find_library("OpenCL") is None:
        pytest.skip("no OpenCL ICD loader (libOpenCL.so.1) is installed")
    out = _no_opencl({"OCL_ICD_VENDORS": str(tmp_path)})
    assert "found no platform" in out and "OCL_ICD_VENDORS" in out, out


@pytest.mark.parametrize("device_type, name", [(4, "kDLOpenCL"), (12, "kDLExtDev")])
def test_a_foreign_capsule_of_unreadable_memory_is_refused(device_type, name):
    """axl exports neither kDLOpenCL nor kDLExtDev, so such a capsule is
    another producer's: an OpenCL tensor holds a cl_mem, an extension
    device's data means nothing to axl, neither an address axl can wrap.
    from_dlpack refuses both before looking for the device (so no OpenCL or
    virtual device is needed here)."""
    import ctypes

    from axl.driver import Buffer

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                    ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]

    class Versioned(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                    ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

    shape = (ctypes.c_int64 * 1)(4)
    m = Versioned(1, 1, None, None, 0, DLTensor(0x1234, device_type, 0, 1, 2, 32, 1, shape, None, 0))  # float32[4]
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new(ctypes.addressof(m), b"dltensor_versioned", None)

    class Producer:
        def __dlpack__(self, **kwargs):
            return capsule

        def __dlpack_device__(self):
            return (device_type, 0)

    with pytest.raises(BufferError, match=f"from_dlpack: a {name} tensor cannot be wrapped .*copy it to the host"):
        Buffer.from_dlpack(Producer())
