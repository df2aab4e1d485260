#!/usr/bin/env python3
"""What axl.profiler costs per call, all measured in this run:

  bare            f(x) -> x, a plain Python function (the floor)
  traced, off     the same function under @traced with profiling off
                  (target: <= 1.3x bare)
  traced, on      @traced with profiling on, no NVTX tool attached and no
                  recording sink (what an instrumented run costs outside
                  Nsight)
  traced, json    @traced with profiling on into the JSON timeline
  Trace, on       `with Trace("x"):` around a call, profiling on, no tool
  nvtx.annotate   the `nvtx` package's decorator and context manager around
                  the same function, no tool (only when `nvtx` is installed;
                  target: axl's span faster). Note: without a tool at
                  decoration time, nvtx's decorator returns the function
                  itself, so that row is the bare function.
  python wrapper  for scale: MAX's kind of wrapper, a Python closure that
                  checks is_profiling_enabled() per call, profiling off
  1 us body       bare vs @traced-off around a body of about 1 us of work

Each figure is the best of several repetitions of a timed loop (least
noise), the sides interleaved. Exit status 0: targets are reported, not
enforced (shared CI machines are noisy).

Usage: python benchmarks/profiler_overhead.py [--iters N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

os.environ.pop("NVTX_INJECTION64_PATH", None)  # "no tool attached", for both libraries

from axl.profiler import Trace, set_gpu_profiling_state, traced  # noqa: E402
from axl.profiler.timeline import set_output  # noqa: E402
from bench_stats import ratios, spread, verdict  # noqa: E402

OFF_RATIO_TARGET = 1.3


def f(x):
    return x


traced_f = traced(f)


def python_wrapper(func):
    from axl.profiler import is_profiling_enabled

    def wrapper(*args, **kwargs):
        if not is_profiling_enabled():
            return func(*args, **kwargs)
        with Trace(func.__name__):
            return func(*args, **kwargs)

    return wrapper


closure_f = python_wrapper(f)


def work(x):
    s = 0
    for i in range(40):
        s += i * x
    return s


traced_work = traced(work)


def loop_call(fn, iters: int) -> float:
    t0 = time.perf_counter_ns()
    for i in range(iters):
        fn(i)
    return (time.perf_counter_ns() - t0) / iters


def loop_with(ctx_factory, iters: int) -> float:
    t0 = time.perf_counter_ns()
    for i in range(iters):
        with ctx_factory():
            f(i)
    return (time.perf_counter_ns() - t0) / iters


def rounds(series: dict[str, callable], repeat: int) -> dict[str, list[float]]:
    """`repeat` rounds; each round runs every series once, in turn."""
    results: dict[str, list[float]] = {k: [] for k in series}
    for _ in range(repeat):
        for k, run in series.items():
            results[k].append(run())
    return results


def best(series: dict[str, callable], repeat: int) -> dict[str, float]:
    """Best of `repeat` rounds (least noise)."""
    return {k: min(v) for k, v in rounds(series, repeat).items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n, r = args.iters, args.repeat
    print(f"axl.profiler overhead: Python {platform.python_version()}, {n} calls x best of {r}")

    set_gpu_profiling_state("off")
    off_rounds = rounds({"bare": lambda: loop_call(f, n), "traced_off": lambda: loop_call(traced_f, n),
                         "closure_off": lambda: loop_call(closure_f, n)}, max(r, 15))
    off = {k: min(v) for k, v in off_rounds.items()}
    wn = max(n // 20, 1000)
    heavy = best({"work": lambda: loop_call(work, wn), "traced_work": lambda: loop_call(traced_work, wn)}, r)

    set_gpu_profiling_state("on")
    on_n = max(n // 4, 1000)
    on = best({"traced_on": lambda: loop_call(traced_f, on_n),
               "trace_on": lambda: loop_with(lambda: Trace("x"), on_n)}, r)

    nv: dict[str, float] = {}
    try:
        import nvtx
    except ImportError:
        nvtx = None
    if nvtx is not None:
        nv_f = nvtx.annotate()(f)
        nv = best({"nvtx_decorator": lambda: loop_call(nv_f, on_n),
                   "nvtx_with": lambda: loop_with(lambda: nvtx.annotate("x"), on_n)}, r)

    with tempfile.TemporaryDirectory() as d:
        set_output(os.path.join(d, "bench.json"))
        json_ns = best({"traced_json": lambda: loop_call(traced_f, on_n)}, r)["traced_json"]
        set_output(None)  # nothing to write at exit
    set_gpu_profiling_state("off")

    rows = [("bare function", off["bare"]), ("@traced, profiling off", off["traced_off"]),
            ("python closure wrapper, off", off["closure_off"]),
            ("1 us body, bare", heavy["work"]), ("1 us body, @traced off", heavy["traced_work"]),
            ("@traced, on, no tool", on["traced_on"]), ("with Trace(), on, no tool", on["trace_on"]),
            ("@traced, on, JSON sink", json_ns)]
    if nv:
        rows += [("@nvtx.annotate(), no tool", nv["nvtx_decorator"]),
                 ("with nvtx.annotate(), no tool", nv["nvtx_with"])]
    for name, ns in rows:
        print(f"INFO {name:<32} {ns:9.1f} ns/call")

    off_ratios = ratios(off_rounds["traced_off"], off_rounds["bare"])
    ratio = statistics.median(off_ratios)
    print(f"RATIO traced_off/bare {spread(off_ratios)} (target <= {OFF_RATIO_TARGET}): "
          f"{verdict(ratio <= OFF_RATIO_TARGET)}; off overhead (best of each) "
          f"{off['traced_off'] - off['bare']:.1f} ns/call")
    print(f"INFO python_closure_off/bare = {off['closure_off'] / off['bare']:.2f}; "
          f"1us_body traced_off/bare = {heavy['traced_work'] / heavy['work']:.3f}")
    if nv:
        for axl_key, nv_key, label in (("traced_on", "nvtx_decorator", "decorator"),
                                       ("trace_on", "nvtx_with", "context_manager")):
            rr = on[axl_key] / nv[nv_key]
            print(f"RATIO axl_{label}/nvtx_{label} (on, no tool) = {rr:.2f} (target < 1.0): "
                  f"{'MET' if rr < 1.0 else 'NOT MET'}")
    else:
        print("INFO the `nvtx` package is not installed: no comparison with nvtx.annotate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
