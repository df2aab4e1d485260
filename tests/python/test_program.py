"""axl.driver.Program: run-time compilation through axl_module_compile.

Compiling needs a backend with a run-time compiler (cuda: NVRTC, opencl:
clBuildProgram). Without a GPU these tests check the API's shape and its
errors; tests/python/test_opencl.py compiles and launches OpenCL C on PoCL,
tests/gpu/test_cuda_*.py compile and launch on a real device, and
tests/cuda/nvrtc_test.cpp checks NVRTC itself (it needs no GPU).
"""

from __future__ import annotations

import os

import pytest
from conftest import PLUGIN_DIR, run_py

import axl.driver as drv

SOURCE = 'extern "C" __global__ void k(unsigned* p) { p[threadIdx.x] += 1; }'


def test_program_is_exported_from_axl_driver():
    assert "Program" in drv.__all__
    assert drv.Program.__module__ == "axl.driver"


def test_program_keeps_what_it_was_given(cpu):
    p = drv.Program(SOURCE, device=cpu, options=["-DN=4"], name="k.cu", language="cuda")
    assert p.source == SOURCE
    assert p.options == ["-DN=4"]
    assert p.name == "k.cu"
    assert p.language == "cuda"
    assert p.device == cpu
    assert "k.cu" in repr(p)


def test_program_defaults(cpu):
    p = drv.Program(SOURCE, device=cpu)
    assert p.name == "axl_program.cu"
    assert p.options == []
    assert p.language == "cuda"  # the cpu device is not a hip device


@pytest.mark.parametrize("language, name", [("cuda", "axl_program.cu"), ("hip", "axl_program.cu"),
                                            ("opencl", "axl_program.cl")])
def test_every_language_can_be_named(cpu, language, name):
    p = drv.Program(SOURCE, device=cpu, language=language)
    assert p.language == language and p.name == name


def test_an_unknown_language_lists_the_known_ones(cpu):
    with pytest.raises(ValueError, match="^Program language 'opencl_c' is not one of 'cuda', 'hip', 'opencl'$"):
        drv.Program(SOURCE, device=cpu, language="opencl_c")


def test_compiling_on_a_backend_without_a_compiler_is_unsupported(cpu):
    with pytest.raises(drv.UnsupportedError, match="module_compile"):
        drv.Program(SOURCE, device=cpu).compile()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"language": "fortran"}, "fortran"),
        ({"options": ["-DA", "bad\0option"]}, "compiler option"),
        ({"name": "a\0b"}, "program name"),
    ],
)
def test_bad_arguments_are_value_errors(cpu, kwargs, message):
    with pytest.raises(ValueError, match=message):
        drv.Program(SOURCE, device=cpu, **kwargs)


def test_source_and_device_are_required(cpu):
    with pytest.raises(ValueError, match="empty"):
        drv.Program("", device=cpu)
    # None is not a Device: a TypeError naming the argument, as MAX's binding raises for a wrong type
    with pytest.raises(TypeError, match="Program: device: expected an axl.driver.Device"):
        drv.Program(SOURCE, device=None)
    with pytest.raises(TypeError):
        drv.Program(SOURCE)  # device is keyword-only and required


CUDA_STUBS = [p for p in ("/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so")
              if os.path.exists(p)]


@pytest.mark.skipif(not CUDA_STUBS, reason="no CUDA toolkit stub libcuda.so on this machine")
def test_cuda_backend_on_the_stub_is_unavailable_and_the_others_work():
    if not (PLUGIN_DIR / "libaxl_plugin_cuda.so").exists():
        pytest.skip("the cuda plugin is not installed (built without CUDA headers)")
    p = run_py(
        """
        import axl.driver as drv
        from axl import _core
        rec = [r for r in _core._plugin_records() if r["name"] == "cuda"][0]
        print("STATE", rec["state_name"])
        print("REASON", rec["reason"])
        cpu = drv.CPU()
        import numpy
        b = drv.Buffer.from_numpy(numpy.arange(4, dtype="uint32"))
        print("CPU", b.to_numpy().tolist())
        print("GPUS", drv.accelerator_count())
        """,
        env={"AXL_CUDA_DRIVER_PATH": CUDA_STUBS[0]},
    )
    out = p.stdout
    assert "STATE unavailable" in out
    assert "CUDA_ERROR_STUB_LIBRARY" in out
    assert "stubs/libcuda.so" in out
    assert "CPU [0, 1, 2, 3]" in out
    assert "GPUS 0" in out
