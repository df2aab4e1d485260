#!/usr/bin/env python3
"""What the Python binding adds per call: each operation is timed as a
Python loop over axl.driver and as a C++ loop straight through axl.h (the
private axl._core._bench_* functions), in the same process and run, and the
ratio is printed.

Operations:
  launch        empty CPU kernel: the built-in INCREMENT_U32 test kernel with
                n = 0 on a 1x1 grid (arguments: a buffer and a uint32)
  event record  DeviceQueue.record_event(event) of an existing event
  device lookup Accelerator() (CPU() when there is no accelerator: said so)
  idle sync     DeviceQueue.synchronize() of a queue with nothing pending

Loops that enqueue end with one synchronize, on both sides, so queued work
is paid for. Each figure is the best of several repetitions (least noise),
Python and C++ runs interleaved.

Startup: `import axl.driver; axl.driver.scan_available_devices()` in a fresh
interpreter against a bare one (`python -c pass`, site included), wall time
of the whole process from spawn to exit, the two alternated for --rounds
rounds; the ratio and the import + scan time are printed as medians with
their min-max (targets: import + scan <= 25 ms; the ratio has none).

Usage: python benchmarks/python_overhead.py [--iters N] [--repeat R] [--rounds S]
Exit status 0; the targets (launch <= 2 us, within 3x of C++; startup) are
reported, not enforced, because shared CI machines are noisy.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

import axl
from axl import _core
from axl.driver import CPU, Accelerator, Buffer, DeviceEvent, accelerator_count
from axl.dtype import DType
from bench_stats import ratios, spread, verdict

LAUNCH_TARGET_NS = 2000.0
RATIO_TARGET = 3.0
STARTUP_CODE = "import axl.driver; axl.driver.scan_available_devices()"
STARTUP_TARGET_MS = 25.0


def spawn_seconds(code: str) -> float:
    """Wall time of a fresh interpreter running `code`, spawn to exit."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def startup(rounds: int) -> None:
    # Bytecode compiled first (a source checkout may have none yet), then one
    # untimed round so both sides start with warm file caches.
    compileall.compile_dir(os.path.dirname(axl.__file__), quiet=1)
    spawn_seconds("pass"), spawn_seconds(STARTUP_CODE)
    bare, full = [], []
    for _ in range(rounds):
        bare.append(spawn_seconds("pass"))
        full.append(spawn_seconds(STARTUP_CODE))
    ms = [t * 1e3 for t in full]
    print(f"startup: bare interpreter {spread([t * 1e3 for t in bare], '.1f')} ms")
    print(f"startup: {STARTUP_CODE!r} {spread(ms, '.1f')} ms")
    ok = statistics.median(ms) <= STARTUP_TARGET_MS
    print(f"RATIO startup import_axl_driver+scan/bare_interpreter {spread(ratios(full, bare))}; "
          f"import+scan median {statistics.median(ms):.1f} ms (target <= {STARTUP_TARGET_MS:.0f} ms: {verdict(ok)})")


def best_pair(py_fn, cpp_fn, repeat: int) -> tuple[float, float]:
    """Best of `repeat` runs of each, interleaved (py, c++, py, ...) so that a
    burst of load on a shared machine hits both sides alike."""
    py, cpp = [], []
    for _ in range(repeat):
        py.append(py_fn())
        cpp.append(cpp_fn())
    return min(py), min(cpp)


def py_launch(q, k, buf, n, iters: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        q.launch(k, 1, 1, buf, n)
    q.synchronize()
    return (time.perf_counter_ns() - t0) / iters


def py_record(q, ev, iters: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        q.record_event(ev)
    q.synchronize()
    return (time.perf_counter_ns() - t0) / iters


def py_lookup(cls, iters: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        cls()
    return (time.perf_counter_ns() - t0) / iters


def py_sync(q, iters: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        q.synchronize()
    return (time.perf_counter_ns() - t0) / iters


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=200_000, help="calls per timed loop")
    ap.add_argument("--repeat", type=int, default=7, help="timed loops per figure (best is kept)")
    ap.add_argument("--rounds", type=int, default=40, help="fresh interpreters per side for startup")
    args = ap.parse_args()
    iters, repeat = args.iters, args.repeat
    startup(max(1, args.rounds))

    cpu = CPU()
    q = cpu.default_queue
    kernel = cpu._test_kernel("INCREMENT_U32")
    buf = Buffer(DType.uint32, (1,), cpu)
    n0 = np.uint32(0)
    ev = DeviceEvent(cpu)

    have_gpu = accelerator_count() > 0
    lookup_cls, lookup_label = (Accelerator, "gpu") if have_gpu else (CPU, "cpu")

    # Warm up: thread pools, caches, the numpy scalar layout cache.
    py_launch(q, kernel, buf, n0, 10_000)
    _core._bench_launch(q, kernel, buf, 0, 10_000)

    rows = [
        ("launch (empty cpu kernel)",
         *best_pair(lambda: py_launch(q, kernel, buf, n0, iters),
                    lambda: _core._bench_launch(q, kernel, buf, 0, iters), repeat)),
        ("event record",
         *best_pair(lambda: py_record(q, ev, iters),
                    lambda: _core._bench_event_record(q, ev, iters), repeat)),
        (f"{lookup_cls.__name__}() lookup",
         *best_pair(lambda: py_lookup(lookup_cls, iters),
                    lambda: _core._bench_device_get(lookup_label, iters), repeat)),
        ("idle queue synchronize",
         *best_pair(lambda: py_sync(q, iters),
                    lambda: _core._bench_queue_sync(q, iters), repeat)),
    ]

    print(f"axl {axl.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{iters} calls per loop, best of {repeat}")
    if not have_gpu:
        print("no accelerator: the device lookup row times CPU() against axl_device_get(\"cpu\", 0)")
    print(f"{'operation':<28} {'python ns/op':>13} {'c++ ns/op':>10} {'ratio':>7}")
    for name, py_ns, cpp_ns in rows:
        print(f"{name:<28} {py_ns:>13.1f} {cpp_ns:>10.1f} {py_ns / cpp_ns:>6.2f}x")

    launch_py, launch_cpp = rows[0][1], rows[0][2]
    ok_abs = launch_py <= LAUNCH_TARGET_NS
    ok_ratio = launch_py / launch_cpp <= RATIO_TARGET
    print(f"RATIO python_launch/cpp_launch {launch_py / launch_cpp:.2f} "
          f"(target <= {RATIO_TARGET:.0f}x: {'met' if ok_ratio else 'MISSED'}); "
          f"python launch {launch_py:.0f} ns (target <= {LAUNCH_TARGET_NS:.0f} ns: "
          f"{'met' if ok_abs else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
