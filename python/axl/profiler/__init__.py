"""Profiling for axl, with the surface of MAX's ``max.profiler``.

Spans (:class:`Tracer`, :func:`traced`, :class:`Trace`) go to every sink that
is available: NVTX (Nsight Systems), roctx, a Chrome-trace/Perfetto JSON file
(``AXL_PROFILE_OUTPUT=trace.json``, with the launches and copies of every
queue beside the spans) and an in-process collector. Enable them with
``AXL_ENABLE_PROFILING=on`` (or ``detailed``, or any true-like value), or at
run time with ``set_gpu_profiling_state("on")``. When off, every call is a
no-op that costs one relaxed atomic load (plus the Python call).

Usage::

    from axl.profiler import Tracer, traced

    with Tracer("load"):          # context manager
        ...

    @traced                        # decorator (also @traced(message=..., color=...))
    def step(): ...

    t = Tracer()                   # manual stack
    t.push("phase 1"); ...; t.next("phase 2"); ...; t.cleanup()

Submodules: :mod:`axl.profiler.cpu` (CPU time of processes),
:mod:`axl.profiler.gpu` (NVML / ROCm SMI diagnostics) and
:mod:`axl.profiler.oneshot` (``nsys`` re-exec and cProfile summaries).
See docs/profiler.md.
"""

from . import cpu, gpu, oneshot
from .oneshot import (
    OneShotCapture,
    ProfileBackend,
    default_profile_output,
    detect_backend,
    maybe_reexec_under_nsys,
    profiled_region,
)
from .tracing import Trace, Tracer, is_profiling_enabled, set_gpu_profiling_state, traced

__all__ = [
    "OneShotCapture",
    "ProfileBackend",
    "Trace",
    "Tracer",
    "cpu",
    "default_profile_output",
    "detect_backend",
    "gpu",
    "is_profiling_enabled",
    "maybe_reexec_under_nsys",
    "oneshot",
    "profiled_region",
    "set_gpu_profiling_state",
    "traced",
]
