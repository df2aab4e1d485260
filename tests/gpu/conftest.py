"""Fixtures of the GPU tests (tests/gpu/run.sh runs them against the
installed package). Every test needs a CUDA device and skips without one."""

from __future__ import annotations

import pytest

import axl.driver as drv


def _cuda_accelerator():
    try:
        if drv.accelerator_count() == 0:
            return None
        gpu = drv.Accelerator()
    except drv.AxlError:
        return None
    return gpu if gpu.api == "cuda" else None


_GPU = _cuda_accelerator()


@pytest.fixture(scope="session")
def gpu():
    if _GPU is None:
        pytest.skip("no CUDA device")
    return _GPU


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


INC_SOURCE = r'''
extern "C" __global__ void inc(unsigned* data, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += STEP;
}
extern "C" __global__ void spin(unsigned long long cycles) {
  unsigned long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}
'''
