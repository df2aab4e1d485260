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


def test_cpu_kernel_sees_its_argument_count(cpu, example_module):
    """cpu_kernel.h passes num_args: the example saxpy refuses a short list
    instead of reading past it (it used to crash the process)."""
    code = f"""
import numpy as np
from axl.driver import CPU
dev = CPU()
k = dev.load_module({str(EXAMPLE_KERNELS)!r}).kernel("saxpy")
q = dev.default_queue
q.launch(k, 1, 8)
q.launch(k, 1, 8, np.float32(2))
q.synchronize()
print("ok")
"""
    r = _run(code)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
