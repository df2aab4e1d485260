"""Regressions from an adversarial review: input that used to crash the
process or be silently misread now raises a clear error."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLE_KERNELS


def _run(code: str) -> subprocess.CompletedProcess:
    # A crash must fail the test, not take pytest down with it.
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("cut", [2000, "half"])
def test_truncated_module_is_an_error_not_a_crash(cut, tmp_path):
    if not EXAMPLE_KERNELS.exists():
        pytest.skip("example kernel module not installed")
    data = EXAMPLE_KERNELS.read_bytes()
    n = len(data) // 2 if cut == "half" else cut
    path = tmp_path / "trunc.so"
    path.write_bytes(data[:n])
    code = f"""
from axl.driver import CPU, InvalidArgumentError
dev = CPU()
for source in (open({str(path)!r}, "rb").read(), {str(path)!r}):
    try:
        dev.load_module(source)
    except InvalidArgumentError as e:
        assert "truncated or corrupt" in str(e), e
    else:
        raise SystemExit("loaded a truncated module")
print("ok")
"""
    r = _run(code)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.strip() == "ok"


def test_strided_memoryview_is_refused(cpu):
    if not EXAMPLE_KERNELS.exists():
        pytest.skip("example kernel module not installed")
    view = memoryview(EXAMPLE_KERNELS.read_bytes())[::2]
    with pytest.raises(BufferError, match="C-contiguous"):
        cpu.load_module(view)


def test_embedded_nul_is_refused(cpu, example_module):
    with pytest.raises(ValueError, match="embedded null"):
        example_module.kernel("sax\x00py")
    with pytest.raises(ValueError, match="embedded null"):
        cpu.load_module("a\x00b")


def test_cpu_kernel_argument_list_is_checked_against_its_signature(cpu, example_module):
    """The example saxpy declares its signature (cpu_kernel.h,
    AXL_CPU_KERNEL_SIGNATURE): a short list, a scalar of the wrong width or a
    buffer for a scalar is a ValueError naming the argument, and the kernel
    never runs (a short list used to crash the process in the kernel's
    reads). Run in a child so a crash fails the test, not pytest."""
    code = f"""
import numpy as np
from axl.driver import CPU, Buffer
from axl.dtype import DType
dev = CPU()
k = dev.load_module({str(EXAMPLE_KERNELS)!r}).kernel("saxpy")
q = dev.default_queue
x = Buffer.from_numpy(np.ones(8, np.float32))
y = Buffer.from_numpy(np.zeros(8, np.float32))
for args, says in [((), "takes 4 arguments, got 0"),
                   ((np.float32(2),), "takes 4 arguments, got 1"),
                   ((np.float32(2), x, y, np.uint64(8)), "argument 3 must be SCALAR of 4 bytes, got SCALAR of 8"),
                   ((x, x, y, np.uint32(8)), "argument 0 must be SCALAR of 4 bytes, got DEVADDR")]:
    try:
        q.launch(k, 1, 8, *args)
    except ValueError as e:
        assert "saxpy" in str(e) and says in str(e), (args, str(e))
    else:
        raise AssertionError(f"launch with {{args!r}} was not refused")
q.synchronize()
assert not y.to_numpy().any()  # nothing ran
q.launch(k, 1, 8, np.float32(2), x, y, np.uint32(8))
q.synchronize()
assert (y.to_numpy() == 2).all()
print("ok")
"""
    r = _run(code)
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stdout, r.stderr)


def test_instance_made_by_new_without_init_raises_instead_of_crashing():
    # `Cls.__new__(Cls)` skips __init__, so no C++ object exists. pybind11 used to hand
    # every method and property raw memory in its place (a crash or garbage); each class
    # now refuses with a TypeError naming it. Swept over every class of axl._core, so a
    # class added without the guard fails here.
    code = """
import inspect, numpy as np
import axl, axl._core as core
from axl.driver import CPU
classes = [c for _, c in inspect.getmembers(core, inspect.isclass) if type(c).__name__ == "pybind11_type"]
assert len(classes) >= 10, classes
def refused(cls, f):
    try:
        f()
    except TypeError as e:
        text = str(e)
        assert text.startswith(cls.__name__ + " object was made by " + cls.__name__ + ".__new__() without __init__"), text
        return True
    return False
checked = 0
for cls in classes:
    o = cls.__new__(cls)
    if "__repr__" in vars(cls):
        assert refused(cls, lambda: repr(o)), cls
    for name in dir(cls):
        if isinstance(inspect.getattr_static(cls, name), property):
            assert refused(cls, lambda: getattr(o, name)), (cls, name)
            checked += 1
    del o  # deallocating the empty instance must not crash either
assert checked >= 20, checked
cpu = CPU()
good = axl.driver.Buffer(axl.dtype.DType.float32, (4,), cpu)
empty = core.Buffer.__new__(core.Buffer)
for f in (lambda: good.inplace_copy_from(empty), lambda: empty.inplace_copy_from(good), lambda: empty.to_numpy(),
          lambda: np.asarray(empty), lambda: np.from_dlpack(empty), lambda: empty[0]):
    assert refused(core.Buffer, f)
assert refused(core.Kernel, lambda: cpu.default_stream.launch(core.Kernel.__new__(core.Kernel), 1, 1))
print("ok", checked)
"""
    r = _run(code)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.startswith("ok"), r.stdout
