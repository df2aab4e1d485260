"""Host cost of launching an empty CUDA kernel from Python: axl.driver vs
CuPy (RawKernel) and torch (a one-element in-place add, the cheapest kernel
torch launches), where installed, in the same process on the same GPU.

Prints "METRIC name value unit" and "RATIO name value target" lines (target:
axl no slower, ratio <= 1.0) for tests/gpu/run.sh. Without a CUDA device it
says so and exits 0.

    python benchmarks/python_cuda_launch.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time

EMPTY = 'extern "C" __global__ void empty_kernel() {}'


def per_launch_ns(launch, sync, batch: int, reps: int) -> float:
    """Median over `reps` batches of the host time per launch (enqueue only)."""
    launch()
    sync()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            launch()
        samples.append((time.perf_counter_ns() - t0) / batch)
        sync()
    return statistics.median(samples)


def main() -> int:
    quick = "--quick" in sys.argv
    batch, reps = (256, 5) if quick else (1024, 21)
    import axl.driver as drv

    if drv.accelerator_count() == 0 or drv.Accelerator().api != "cuda":
        print("python_cuda_launch: no CUDA device; nothing measured")
        return 0
    gpu = drv.Accelerator()
    kernel = drv.Program(EMPTY, device=gpu, name="empty.cu").compile().kernel("empty_kernel")
    q = gpu.default_queue
    one = (1, 1, 1)
    axl_ns = per_launch_ns(lambda: q.launch(kernel, one, one), q.synchronize, batch, reps)
    print(f"METRIC py_launch_axl_ns {axl_ns:.1f} ns")

    try:
        import cupy

        raw = cupy.RawKernel(EMPTY, "empty_kernel")
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            cupy_ns = per_launch_ns(lambda: raw(one, one, ()), stream.synchronize, batch, reps)
        print(f"METRIC py_launch_cupy_ns {cupy_ns:.1f} ns")
        print(f"RATIO py_launch_vs_cupy {axl_ns / cupy_ns:.3f} <=1.0")
    except ImportError:
        print("python_cuda_launch: CuPy not installed; skipped")

    try:
        import torch

        if torch.cuda.is_available():
            x = torch.zeros(1, device="cuda")
            torch_ns = per_launch_ns(lambda: x.add_(1), torch.cuda.synchronize, batch, reps)
            print(f"METRIC py_launch_torch_ns {torch_ns:.1f} ns")
            print(f"RATIO py_launch_vs_torch {axl_ns / torch_ns:.3f} <=1.0")
    except ImportError:
        print("python_cuda_launch: torch not installed; skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
