#!/usr/bin/env python3
"""quickstart: the whole axl round trip from Python, on one device.

  1. discover devices and print them;
  2. pick the best device: the first usable accelerator, else the CPU;
  3. get saxpy (the CPU module, CUDA C++ compiled by NVRTC on a cuda
     device, or OpenCL C compiled by clBuildProgram on an opencl device),
     upload two numpy arrays, launch it, download;
  4. check every element against the same arithmetic in numpy;
  5. print the device-side timings (events) and the launch trace.

usage: python examples/quickstart.py [path/to/libaxl_example_kernels.so]

On an OpenCL device, e.g. PoCL's CPU device (which axl counts as an
accelerator only when asked, docs/python.md):

  AXL_OPENCL_DEVICE_TYPES=all python examples/quickstart.py

The kernel module is the CPU shared object built from
examples/kernels/saxpy_cpu.c, shipped in the wheel (axl/kernels/). Without
it (a source checkout without the wheel's files) the script compiles
saxpy_cpu.c with `cc` into a temporary folder. Exits 0 when every element
matched, 1 on a mismatch or an axl error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import axl
from axl import driver
from axl.driver import CPU, Accelerator, AxlError, Buffer, DeviceEvent, LaunchTraceEntry, UnsupportedError
from axl.dtype import DType


# saxpy for CUDA devices, with the CPU kernel's arguments (alpha, x, y, n).
# It is compiled with --fmad=false so alpha * x + y rounds twice, as numpy does
# (the values below make both exact anyway).
SAXPY_CUDA = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, float* y, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
"""

# The same saxpy in OpenCL C, for opencl devices: global = grid x block work
# items. FP_CONTRACT OFF is OpenCL's --fmad=false.
SAXPY_OPENCL = r"""
#pragma OPENCL FP_CONTRACT OFF
__kernel void saxpy(float alpha, __global const float* x, __global float* y, uint n) {
  for (uint i = get_global_id(0); i < n; i += get_global_size(0))
    y[i] = alpha * x[i] + y[i];
}
"""

# Run-time compiled saxpy per device api: (source, compiler options, name).
SAXPY_SOURCES = {
    "cuda": (SAXPY_CUDA, ["--fmad=false"], "saxpy.cu"),
    "opencl": (SAXPY_OPENCL, [], "saxpy.cl"),
}
from axl.profiler import Tracer


def print_devices() -> None:
    """Lists the CPU and every accelerator; a backend that cannot initialise
    (no driver, no GPU) is reported and skipped, because the CPU may still
    do the job."""
    print(f"{'device':<8} {'api':<8} {'model':<40} {'memory':>12}")

    def row(d: driver.Device) -> None:
        try:
            memory = f"{d.stats['total_memory'] / 2**30:8.2f} GiB"
        except UnsupportedError:  # a backend without memory figures (opencl today) still runs kernels
            memory = "unknown"
        print(f"{d.label + ':' + str(d.id):<8} {d.api:<8} {d.model_name[:40]:<40} {memory:>12}")

    row(CPU())
    for i in range(driver.accelerator_count()):
        try:
            row(Accelerator(i))
        except (AxlError, ValueError) as e:
            print(f"{'gpu:' + str(i):<8} not usable: {e}")


def pick_device() -> driver.Device:
    """The first usable accelerator (Accelerator() skips backends that fail
    to initialise), else the CPU."""
    if driver.accelerator_count() > 0:
        try:
            return Accelerator()
        except (AxlError, ValueError) as e:
            print(f"no usable accelerator ({e}); using the CPU")
    return CPU()


def load_saxpy_module(device: driver.Device, argv: list[str]) -> driver.Module:
    """The saxpy CPU module: argv[1], the wheel's copy, or a fresh build in
    a temporary folder, removed once the module is loaded (the loaded
    library needs no file)."""
    if len(argv) > 1:
        return device.load_module(Path(argv[1]), format="shared_object")
    shipped = Path(axl._core.__file__).parent / "kernels" / "libaxl_example_kernels.so"
    if shipped.exists():
        return device.load_module(shipped, format="shared_object")
    source = Path(__file__).resolve().parent / "kernels" / "saxpy_cpu.c"
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None or not source.exists():
        raise SystemExit(f"no kernel module at {shipped} and no C compiler to build {source}")
    include = Path(axl._core.__file__).parent / "include"
    with tempfile.TemporaryDirectory(prefix="axl-quickstart-") as tmp:
        out = Path(tmp) / "libaxl_example_kernels.so"
        subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(out)], check=True)
        return device.load_module(out, format="shared_object")


def print_trace(trace: list[LaunchTraceEntry]) -> None:
    kinds = {LaunchTraceEntry.OperationKind.KERNEL_LAUNCH: "launch",
             LaunchTraceEntry.OperationKind.MEMCPY: "memcpy",
             LaunchTraceEntry.OperationKind.MEMSET: "memset"}
    print(f"\nlaunch trace: {len(trace)} entries")
    print(f"{'seq':>4} {'kind':<7} {'name':<24} {'copy':<5} {'bytes':>10} {'grid':<14} {'block':<14} "
          f"{'stream':>6} {'semantic_hash':>18}")
    for e in trace:
        launch = e.kind is LaunchTraceEntry.OperationKind.KERNEL_LAUNCH
        grid = f"{e.grid_x}x{e.grid_y}x{e.grid_z}" if launch else "-"
        block = f"{e.block_x}x{e.block_y}x{e.block_z}" if launch else "-"
        nbytes = (e.memcpy_byte_size if e.kind is LaunchTraceEntry.OperationKind.MEMCPY
                  else e.memset_byte_size if e.kind is LaunchTraceEntry.OperationKind.MEMSET else 0)
        copy = e.memcpy_kind.name.replace("TO", "to") if e.memcpy_kind.value else "-"
        print(f"{e.sequence:>4} {kinds[e.kind]:<7} {e.name[:24]:<24} {copy:<5} {nbytes:>10} {grid:<14} "
              f"{block:<14} {e.stream_index:>6} 0x{e.semantic_hash:016x}")


def run(argv: list[str]) -> int:
    print(f"axl {axl.__version__}\n")
    print_devices()

    device = pick_device()
    # saxpy exists as a CPU shared object and as source compiled at run time
    # (CUDA C++, OpenCL C); other accelerators fall back to the CPU.
    if device.api != "cpu" and device.api not in SAXPY_SOURCES:
        print(f"\n{device} ({device.model_name}, api {device.api}) is the best device, but this example "
              f"has no {device.api} build of saxpy; falling back to the CPU.")
        device = CPU()
    print(f"\nusing {device} (api {device.api}): {device.model_name}")

    try:
        if device.api in SAXPY_SOURCES:
            source, options, name = SAXPY_SOURCES[device.api]
            saxpy = driver.Program(source, device=device, options=options, name=name).compile().kernel("saxpy")
        else:
            saxpy = load_saxpy_module(device, argv).kernel("saxpy")
    except AxlError as e:
        print(f"cannot get the saxpy kernel for {device}: {e}", file=sys.stderr)
        return 1

    # Values on a coarse binary grid (multiples of 1/128, below 2^7) so that
    # alpha * x + y is exact in float32 whether or not either side fuses the
    # multiply-add: every element can then be compared bit for bit.
    n = 1 << 20
    alpha = np.float32(1.5)
    i = np.arange(n, dtype=np.int64)
    x = (((i * 7919) % 4096) - 2048).astype(np.float32) / np.float32(64)
    y = (((i * 104729) % 4096) - 2048).astype(np.float32) / np.float32(128)
    block = 256
    grid = (n + block - 1) // block

    queue = device.default_queue
    start, copied_in, launched, copied_out = (DeviceEvent(device, enable_timing=True) for _ in range(4))

    # Host devices are left out of a trace by default (as in MAX); this
    # example runs on one, so ask for them.
    # The Tracer spans cost nothing unless profiling is on
    # (AXL_ENABLE_PROFILING=on AXL_PROFILE_OUTPUT=trace.json: see docs/profiler.md).
    with driver.launch_trace(include_host=True) as trace, Tracer("saxpy round trip") as spans:
        queue.record_event(start)
        spans.push("copy in")
        # Device buffers, filled from numpy arrays (from_numpy aliases host
        # memory; inplace_copy_from moves it to any device).
        xb = Buffer(DType.float32, x.shape, device)
        yb = Buffer(DType.float32, y.shape, device)
        xb.inplace_copy_from(Buffer.from_numpy(x))
        yb.inplace_copy_from(Buffer.from_numpy(y))
        queue.record_event(copied_in)
        spans.next("launch")
        queue.launch(saxpy, grid, block, alpha, xb, yb, np.uint32(n))
        queue.record_event(launched)
        spans.next("copy out")
        result = yb.to_numpy()  # waits for the kernel (host hazard tracking)
        queue.record_event(copied_out)
        copied_out.synchronize()

    want = alpha * x + y
    mismatches = np.flatnonzero(result != want)
    mib = x.nbytes / 2**20
    print(f"\nsaxpy over {n} floats, grid {grid} x block {block}")
    print(f"  copy in  (2 x {mib:.1f} MiB) {start.elapsed_time(copied_in):8.3f} ms")
    print(f"  kernel                  {copied_in.elapsed_time(launched):8.3f} ms")
    print(f"  copy out ({mib:.1f} MiB)     {launched.elapsed_time(copied_out):8.3f} ms")
    print_trace(trace)

    if mismatches.size:
        for k in mismatches[:5]:
            print(f"mismatch at {k}: got {result[k]!r}, want {want[k]!r} (x {x[k]!r}, y {y[k]!r})",
                  file=sys.stderr)
        print(f"\nFAILED: {mismatches.size} of {n} elements differ from the host result", file=sys.stderr)
        return 1
    print(f"\nOK: all {n} elements match the host result")
    return 0


def main() -> int:
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        print(f"usage: {sys.argv[0]} [path/to/libaxl_example_kernels.so]", file=sys.stderr)
        return 2
    try:
        return run(sys.argv)
    except AxlError as e:
        print(f"axl error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
