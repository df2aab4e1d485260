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
    if (_var in ("AXL_PLUGINS", "AXL_PLUGIN_PATH", "AXL_PLUGINS_DISABLE", "AXL_OPENCL_DEVICE_TYPES")
            or _var.startswith("AXL_VIRTUAL_")):
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


# ------------------------------------------------------- accelerator kinds
# The accelerators the device tests run on, each in child interpreters
# because discovery reads the environment once per process: the virtual
# backend (always there) and a real OpenCL driver (PoCL's CPU device in CI,
# counted as an accelerator only when AXL_OPENCL_DEVICE_TYPES asks for it).


class AcceleratorKind:
    """One kind of accelerator: the AXL_* environment of a child that has
    it and the api that picks it among the child's accelerators (None: the
    first accelerator)."""

    def __init__(self, name: str, env: dict[str, str], api: str | None, plugin: str):
        self.name, self.env, self.api, self.plugin = name, env, api, plugin

    def pick_code(self, var: str = "dev") -> str:
        """Python source that binds ``var`` to this kind's accelerator (in a
        child started with ``env``)."""
        return (f"import axl.driver as _axl_driver\n"
                f"{var} = next(d for d in (_axl_driver.Accelerator(_i) "
                f"for _i in range(_axl_driver.accelerator_count())) if {self.api!r} in (None, d.api))\n")

    def unavailable(self) -> str | None:
        """Why a child with ``env`` has no such accelerator, or None. Asked
        once per kind per session, by a child interpreter."""
        if self.name not in _UNAVAILABLE:
            _UNAVAILABLE[self.name] = self._probe()
        return _UNAVAILABLE[self.name]

    def _probe(self) -> str | None:
        if not (PLUGIN_DIR / self.plugin).exists():
            return f"the {self.name} plugin is not installed ({PLUGIN_DIR / self.plugin})"
        if self.api is None:
            return None
        p = run_py(f"""
            import axl.driver as d
            from axl import _core
            n = d.accelerator_count()
            if any(d.Accelerator(i).api == {self.api!r} for i in range(n)):
                print("@@OK")
            else:
                recs = [r for r in _core._plugin_records() if r["name"] == {self.name!r}]
                print("@@NO " + (recs[0]["reason"] if recs else "no {self.name} plugin was discovered"))
        """, env=self.env, check=False)
        for line in p.stdout.splitlines():
            if line == "@@OK":
                return None
            if line.startswith("@@NO "):
                return f"no {self.name} accelerator with {self.env}: {line[5:]}"
        return f"probing for a {self.name} accelerator failed (exit {p.returncode}): {p.stderr[-2000:]}"

    def __repr__(self) -> str:
        return self.name


_UNAVAILABLE: dict[str, str | None] = {}

VIRTUAL = AcceleratorKind("virtual", {"AXL_VIRTUAL_DEVICES": "1"}, None, "libaxl_plugin_virtual.so")
OPENCL = AcceleratorKind("opencl", {"AXL_OPENCL_DEVICE_TYPES": "all"}, "opencl", "libaxl_plugin_opencl.so")
ACCELERATOR_KINDS = (VIRTUAL, OPENCL)


def skip_unless_available(kind: AcceleratorKind) -> None:
    reason = kind.unavailable()
    if reason is not None:
        pytest.skip(reason)


def on_accelerator_kinds(fn=None, *, kinds=ACCELERATOR_KINDS):
    """Parametrizes a test over ``kinds`` as its ``kind`` argument (an
    AcceleratorKind); a kind this machine lacks skips, saying why."""
    def deco(f):
        return pytest.mark.parametrize("kind", [pytest.param(k, id=k.name) for k in kinds])(f)
    return deco(fn) if fn is not None else deco


@pytest.fixture(autouse=True)
def _skip_missing_accelerator_kind(request):
    kind = getattr(request.node, "callspec", None) and request.node.callspec.params.get("kind")
    if isinstance(kind, AcceleratorKind):
        skip_unless_available(kind)


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


def run_on(kind: AcceleratorKind, code: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``run_py(code)`` in a child with ``kind``'s environment (plus ``env``)
    where ``dev`` is already that kind's accelerator."""
    return run_py(kind.pick_code("dev") + textwrap.dedent(code), env={**kind.env, **(env or {})}, **kwargs)


FAKE_CUDA_SOURCE = REPO / "tests" / "cuda" / "fake_cuda_device.c"
CUDA_INCLUDE = next((p for p in ("/usr/local/cuda/include", "/usr/include") if os.path.exists(f"{p}/cuda.h")), None)


@pytest.fixture(scope="session")
def fake_cuda(tmp_path_factory):
    """The path of libcuda_fake_device.so (tests/cuda's functional fake
    libcuda: its device memory is host memory, and it has multicast objects),
    built from its source here: the tests run against the installed package,
    which does not ship it. Use it as AXL_CUDA_DRIVER_PATH in a child."""
    if not (PLUGIN_DIR / "libaxl_plugin_cuda.so").exists():
        pytest.skip("the cuda plugin is not installed (built without CUDA headers)")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or CUDA_INCLUDE is None or not FAKE_CUDA_SOURCE.exists():
        pytest.skip(f"cannot build the fake CUDA driver (compiler {compiler}, cuda.h in {CUDA_INCLUDE})")
    out = tmp_path_factory.mktemp("fake_cuda") / "libcuda_fake_device.so"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", f"-I{CUDA_INCLUDE}", str(FAKE_CUDA_SOURCE), "-o", str(out),
                    "-lpthread"], check=True, capture_output=True, timeout=300)
    return str(out)


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
