"""Modules, kernels and DeviceQueue.launch (axl extension; design section 5)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from axl.driver import Buffer, InvalidArgumentError, Kernel, Module, NotFoundError
from axl.dtype import DType

from conftest import EXAMPLE_KERNELS, needs_virtual, run_py


def saxpy_check(cpu, queue, kernel, n=1000, block=64):
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, dtype=np.float32)
    want = np.float32(2.0) * x + y
    # from_numpy aliases (MAX): the kernel writes y itself.
    xb, yb = Buffer.from_numpy(x), Buffer.from_numpy(y)
    queue.launch(kernel, (n + block - 1) // block, block, np.float32(2.0), xb, yb, np.uint32(n))
    queue.synchronize()
    np.testing.assert_array_equal(yb.to_numpy(), want)
    np.testing.assert_array_equal(y, want)


def test_load_module_from_path_str_and_bytes(cpu, queue, example_module):
    assert isinstance(example_module, Module) and example_module.device is cpu
    k = example_module.kernel("saxpy")
    assert isinstance(k, Kernel) and k.name == "saxpy" and k.device is cpu
    assert "saxpy" in repr(k)
    saxpy_check(cpu, queue, k)
    by_str = cpu.load_module(str(EXAMPLE_KERNELS), format="shared_object")
    saxpy_check(cpu, queue, by_str.kernel("saxpy"))
    by_bytes = cpu.load_module(Path(EXAMPLE_KERNELS).read_bytes())
    assert "bytes" in repr(by_bytes)
    saxpy_check(cpu, queue, by_bytes.kernel("saxpy"))


def test_module_errors(cpu, example_module, tmp_path):
    with pytest.raises(NotFoundError, match="nope") as e:
        example_module.kernel("nope")
    assert isinstance(e.value, RuntimeError) and e.value.backend == "cpu"
    with pytest.raises(ValueError, match="module format 'elf'"):
        cpu.load_module(EXAMPLE_KERNELS, format="elf")
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an elf file")
    with pytest.raises(RuntimeError):
        cpu.load_module(junk)
    with pytest.raises(RuntimeError):
        cpu.load_module(tmp_path / "missing.so")


def test_test_kernels(cpu, queue):
    inc = cpu._test_kernel("INCREMENT_U32")
    fill = cpu._test_kernel(1)
    buf = Buffer(DType.uint32, (100,), cpu)
    queue.launch(fill, 4, 32, buf, np.uint32(100), np.uint32(41))
    queue.launch(inc, (4, 1, 1), [32], buf, np.uint32(50))
    queue.synchronize()
    got = buf.to_numpy()
    assert (got[:50] == 42).all() and (got[50:] == 41).all()
    with pytest.raises(InvalidArgumentError):
        cpu._test_kernel(7)


def test_grid_and_block_forms(cpu, queue, store_module):
    shape = store_module.kernel("shape")
    out = Buffer(DType.uint32, (7,), cpu)
    for grid, block, want in [(3, 4, [3, 1, 1, 4, 1, 1]), ((2, 3), (4, 5, 6), [2, 3, 1, 4, 5, 6]),
                              ([1, 1, 2], [7], [1, 1, 2, 7, 1, 1]), (np.int64(2), np.uint16(3), [2, 1, 1, 3, 1, 1])]:
        queue.launch(shape, grid, block, out, shared_mem_bytes=128)
        queue.synchronize()
        assert out.to_numpy().tolist() == want + [128]


@pytest.mark.parametrize("grid,err,match", [
    (0, ValueError, ">= 1"), ((1, 2, 3, 4), ValueError, "1 to 3"), ((), ValueError, "1 to 3"),
    (2**32, ValueError, "< 2\\*\\*32"), (-1, ValueError, ">= 1"), ("3", TypeError, "int or a tuple"),
    ((1.5,), TypeError, "must be ints"),
])
def test_bad_grid(cpu, queue, grid, err, match):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (1,), cpu)
    with pytest.raises(err, match=match):
        queue.launch(k, grid, 1, buf, np.uint32(0))
    with pytest.raises(err, match=match):
        queue.launch(k, 1, grid, buf, np.uint32(0))


def test_call_shape_errors(cpu, queue, example_module):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (1,), cpu)
    with pytest.raises(TypeError, match="at least 3 positional"):
        queue.launch(k, 1)
    with pytest.raises(TypeError, match="must be a Kernel"):
        queue.launch(example_module, 1, 1, buf)
    with pytest.raises(TypeError, match="unexpected keyword argument 'stream'"):
        queue.launch(k, 1, 1, buf, np.uint32(0), stream=queue)
    with pytest.raises(ValueError, match="shared_mem_bytes must be >= 0"):
        queue.launch(k, 1, 1, buf, np.uint32(0), shared_mem_bytes=-1)


@pytest.mark.parametrize("value", [3, 3.0, True, 1j])
def test_plain_python_scalars_are_refused(cpu, queue, value):
    k = cpu._test_kernel(0)
    buf = Buffer(DType.uint32, (1,), cpu)
    with pytest.raises(TypeError, match=r"args\[1\] is a Python .*np\.uint32\(.*DType\.int32"):
        queue.launch(k, 1, 1, buf, value)


def test_other_objects_are_refused(cpu, queue):
    k = cpu._test_kernel(0)
    with pytest.raises(TypeError, match=r"args\[0\] is a list; expected a Buffer, a numpy scalar"):
        queue.launch(k, 1, 1, [1, 2])
    with pytest.raises(TypeError, match="no fixed width"):
        queue.launch(k, 1, 1, np.str_("x"))
    with pytest.raises(TypeError, match=r"expected a Buffer"):
        queue.launch(k, 1, 1, (1, "float32"))


def read_store(cpu, queue, store, value, size):
    out = Buffer(DType.uint8, (32,), cpu)
    queue.launch(store, 1, 1, out, value, np.uint32(size))
    queue.synchronize()
    return out.to_numpy()[:size].tobytes()


NUMPY_SCALARS = [np.float32(2.5), np.float64(-1.25), np.float16(0.1), np.int8(-3), np.uint8(250), np.int16(-300),
                 np.uint16(60000), np.int32(-7), np.uint32(4_000_000_000), np.int64(-2**40), np.uint64(2**63 + 5),
                 np.bool_(True), np.complex64(1 + 2j)]


@pytest.mark.parametrize("value", NUMPY_SCALARS, ids=lambda v: type(v).__name__)
def test_numpy_scalars_pass_their_exact_bytes(cpu, queue, store_module, value):
    store = store_module.kernel("store")
    want = value.tobytes()
    # Twice: the first call learns the type's layout, the second uses it.
    assert read_store(cpu, queue, store, value, len(want)) == want
    assert read_store(cpu, queue, store, value, len(want)) == want


def bf16(x: float) -> bytes:
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return struct.pack("<H", u)


TYPED = [
    ((1.5, DType.float32), np.float32(1.5).tobytes()),
    ((1.1, DType.float64), np.float64(1.1).tobytes()),
    ((0.1, DType.float16), np.float16(0.1).tobytes()),
    ((65519.0, DType.float16), np.float16(65519.0).tobytes()),
    ((1e-7, DType.float16), np.float16(1e-7).tobytes()),
    ((1.00390625, DType.bfloat16), bf16(1.00390625)),
    ((3.14159, DType.bfloat16), bf16(3.14159)),
    ((-128, DType.int8), np.int8(-128).tobytes()),
    ((255, DType.uint8), np.uint8(255).tobytes()),
    ((-32768, DType.int16), np.int16(-32768).tobytes()),
    ((65535, DType.uint16), np.uint16(65535).tobytes()),
    ((-2**31, DType.int32), np.int32(-2**31).tobytes()),
    ((2**32 - 1, DType.uint32), np.uint32(2**32 - 1).tobytes()),
    ((-2**63, DType.int64), np.int64(-2**63).tobytes()),
    ((2**64 - 1, DType.uint64), np.uint64(2**64 - 1).tobytes()),
    ((True, DType.bool), b"\x01"),
    ((np.int16(7), DType.int64), np.int64(7).tobytes()),
    ((3, DType.float32), np.float32(3).tobytes()),
]


@pytest.mark.parametrize("arg,want", TYPED, ids=lambda v: repr(v)[:30])
def test_dtype_typed_scalars(cpu, queue, store_module, arg, want):
    assert read_store(cpu, queue, store_module.kernel("store"), arg, len(want)) == want


@pytest.mark.parametrize("arg,match", [
    ((128, DType.int8), "does not fit in int8"), ((-1, DType.uint32), "does not fit in uint32"),
    ((2**64, DType.uint64), "does not fit in uint64"), ((2**63, DType.int64), "int"),
    ((1.5, DType.int32), "integer dtype needs an integer"),
])
def test_typed_scalar_range_errors(cpu, queue, arg, match):
    k = cpu._test_kernel(0)
    with pytest.raises((ValueError, TypeError, OverflowError), match=match):
        queue.launch(k, 1, 1, arg)


def test_more_than_sixteen_arguments(cpu, queue, store_module):
    out = Buffer(DType.uint32, (20,), cpu)
    queue.launch(store_module.kernel("gather20"), 1, 1, out, *[np.uint32(i * 3) for i in range(20)])
    queue.synchronize()
    assert out.to_numpy().tolist() == [i * 3 for i in range(20)]


def test_dropping_a_buffer_right_after_launch_is_safe(cpu, queue):
    """The core synchronizes the queues that used a buffer before freeing it."""
    fill = cpu._test_kernel(1)
    for _ in range(50):
        buf = Buffer(DType.uint32, (1 << 14,), cpu)
        queue.launch(fill, 64, 256, buf, np.uint32(1 << 14), np.uint32(9))
        del buf
    queue.synchronize()


@needs_virtual
def test_virtual_launches_and_argument_checks():
    run_py("""
        import numpy as np
        from axl.driver import Accelerator, Buffer, CPU, InvalidArgumentError
        from axl.dtype import DType
        a = Accelerator()
        q = a.default_queue
        inc = a._test_kernel("INCREMENT_U32")
        buf = Buffer(DType.uint32, (16,), a)
        q.launch(inc, 1, 16, buf, np.uint32(16))
        q.synchronize()
        # The virtual backend checks a built-in kernel's parameter list.
        try:
            q.launch(inc, 1, 1, buf)
        except InvalidArgumentError as e:
            assert "takes 2 arguments" in str(e), e
        else:
            raise SystemExit("no error for a missing argument")
        # A buffer on another device is refused by the core.
        try:
            q.launch(inc, 1, 1, Buffer(DType.uint32, (4,), CPU()), np.uint32(4))
        except InvalidArgumentError as e:
            assert "buffer on" in str(e), e
        else:
            raise SystemExit("no error for a cpu buffer")
        # A kernel of another device is refused.
        try:
            CPU().default_queue.launch(inc, 1, 1, Buffer(DType.uint32, (4,)), np.uint32(4))
        except InvalidArgumentError as e:
            assert "belongs to" in str(e), e
        else:
            raise SystemExit("no error for a foreign kernel")
        # Modules are opaque bytes on the virtual backend: a kernel list.
        m = a.load_module(b"many\\n")
        q.launch(m.kernel("many"), (2, 2), 32, buf, *[np.float32(i) for i in range(40)])
        q.synchronize()
        print("ok")
    """, env={"AXL_VIRTUAL_DEVICES": "1"})


def test_launch_signature_is_introspectable():
    import inspect

    from axl.driver import DeviceQueue

    sig = inspect.signature(DeviceQueue.launch)
    assert list(sig.parameters)[:4] == ["self", "kernel", "grid", "block"]
    assert sig.parameters["shared_mem_bytes"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "numpy scalar" in DeviceQueue.launch.__doc__
