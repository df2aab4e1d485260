"""Shared fixtures of the axl Python tests.

The tests run against the *installed* package (python/run_tests.sh runs
pytest from outside the source tree). Discovery reads the environment once
per process, so the in-process tests describe the default environment: the
variables that change which plugins and devices exist are removed here,
before axl is imported. Tests that need another environment (virtual
devices, fault injection, disabled plugins, fork) run a child interpreter
through ``run_py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

for _var in list(os.environ):
    if _var in ("AXL_PLUGINS", "AXL_PLUGIN_PATH", "AXL_PLUGINS_DISABLE") or _var.startswith("AXL_VIRTUAL_"):
        del os.environ[_var]

import axl  # noqa: E402
from axl import _core  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = Path(_core.__file__).resolve().parent
PLUGIN_DIR = PACKAGE_DIR / "lib" / "axl" / "plugins"
HAS_VIRTUAL = (PLUGIN_DIR / "libaxl_plugin_virtual.so").exists()
EXAMPLE_KERNELS = PACKAGE_DIR / "kernels" / "libaxl_example_kernels.so"

needs_virtual = pytest.mark.skipif(
    not HAS_VIRTUAL, reason=f"the virtual plugin is not installed ({PLUGIN_DIR}/libaxl_plugin_virtual.so)"
)


def run_py(code: str, env: dict[str, str] | None = None, timeout: float = 120,
           check: bool = True) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter with the AXL_* environment of
    this process replaced by ``env``; returns the completed process (stdout
    and stderr as text). With ``check``, a non-zero exit fails the test and
    shows both streams."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("AXL_")}
    child_env.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_env, capture_output=True,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        pytest.fail(f"child exited {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    return p


@pytest.fixture(scope="session")
def cpu():
    from axl.driver import CPU

    return CPU()


@pytest.fixture
def queue(cpu):
    from axl.driver import DeviceQueue

    q = DeviceQueue(cpu)
    yield q
    q.synchronize()


@pytest.fixture(scope="session")
def example_module(cpu):
    if not EXAMPLE_KERNELS.exists():
        pytest.skip(f"{EXAMPLE_KERNELS} is not installed")
    return cpu.load_module(EXAMPLE_KERNELS)


@pytest.fixture(scope="session")
def store_module(cpu, tmp_path_factory):
    """A CPU module compiled here with `cc`: ``store(out, value, size)`` copies
    the scalar argument's bytes into ``out``, so tests can see exactly what
    a launch passed. Skips without a C compiler."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler (cc) to build the test kernel module")
    src = tmp_path_factory.mktemp("kernels") / "store.c"
    src.write_text(textwrap.dedent("""\
        #include <string.h>
        #include <axl/cpu_kernel.h>
        /* args: buffer out, scalar value (any width), uint32 size */
        AXL_CPU_KERNEL void store(const axl_cpu_kernel_ctx* ctx, void* const* args) {
          (void)ctx;
          unsigned char* out = *(unsigned char* const*)args[0];
          unsigned size = *(const unsigned*)args[2];
          memcpy(out, args[1], size);
        }
        /* args: buffer out (uint32), then 20 uint32 scalars: out[i] = arg i */
        AXL_CPU_KERNEL void gather20(const axl_cpu_kernel_ctx* ctx, void* const* args) {
          (void)ctx;
          unsigned* out = *(unsigned* const*)args[0];
          for (int i = 0; i < 20; ++i) out[i] = *(const unsigned*)args[1 + i];
        }
        /* args: buffer out (uint32), reads the grid, block and shared memory it ran with */
        AXL_CPU_KERNEL void shape(const axl_cpu_kernel_ctx* ctx, void* const* args) {
          unsigned* out = *(unsigned* const*)args[0];
          if (ctx->block_idx[0] || ctx->block_idx[1] || ctx->block_idx[2]) return;
          for (int d = 0; d < 3; ++d) { out[d] = ctx->grid[d]; out[3 + d] = ctx->block[d]; }
          out[6] = (unsigned)ctx->shared_mem_bytes;
        }
    """))
    so = src.with_suffix(".so")
    subprocess.run([cc, "-shared", "-fPIC", f"-I{PACKAGE_DIR / 'include'}", str(src), "-o", str(so)], check=True)
    return cpu.load_module(so)
