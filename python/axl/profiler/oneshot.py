"""One-shot profiling of a whole run (MAX's ``max.profiler.oneshot``, the
machinery behind a ``--profile`` flag).

With Nsight Systems, an NVIDIA GPU and libcudart, :func:`maybe_reexec_under_nsys`
re-runs the program under ``nsys profile`` and prints the top GPU kernels
(``nsys stats``) and the top Python functions (cProfile). Without them, the
program runs as is and, beyond MAX, still gets:

* the cProfile table of the :func:`profiled_region` / :class:`OneShotCapture`;
* axl's own timeline, a Chrome-trace/Perfetto JSON file of spans, launches and
  copies (``AXL_PROFILE_OUTPUT``, or ``<report>.trace.json`` next to where the
  nsys report would have gone);
* a table of the most frequent launches, copies and fills from the launch
  trace.

Environment: ``_AXL_PROFILE_UNDER_NSYS=1`` marks the nsys child;
``_AXL_PROFILE_CPROFILE_DUMP_PATH`` makes the child dump cProfile data there
instead of printing; ``BUILD_WORKSPACE_DIRECTORY`` picks the default report
folder.
"""

from __future__ import annotations

import contextlib
import cProfile
import csv
import ctypes
import ctypes.util
import io
import logging
import os
import pstats
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence, TextIO

logger = logging.getLogger("axl.profiler.oneshot")

UNDER_NSYS_ENV = "_AXL_PROFILE_UNDER_NSYS"
CPROFILE_DUMP_ENV = "_AXL_PROFILE_CPROFILE_DUMP_PATH"
_DEFAULT_NAME = "axl-profile.nsys-rep"
_CUDART_NAMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.dylib")


# ------------------------------------------------------------- detection --
@dataclass(frozen=True)
class ProfileBackend:
    nsys_available: bool
    nvidia_gpu_present: bool
    cudart_loadable: bool

    @property
    def can_capture_gpu(self) -> bool:
        return self.nsys_available and self.nvidia_gpu_present and self.cudart_loadable


def _load_cudart() -> Optional[ctypes.CDLL]:
    found = ctypes.util.find_library("cudart")
    for name in ((found,) if found else ()) + _CUDART_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def detect_backend() -> ProfileBackend:
    """``nsys`` and ``nvidia-smi`` on PATH (the latter as the cheap GPU
    check) and whether libcudart can be loaded."""
    return ProfileBackend(
        nsys_available=shutil.which("nsys") is not None,
        nvidia_gpu_present=shutil.which("nvidia-smi") is not None,
        cudart_loadable=_load_cudart() is not None,
    )


@contextlib.contextmanager
def cuda_profiler_region() -> Iterator[None]:
    """cudaProfilerStart/Stop around the block (nsys's capture range)."""
    lib = _load_cudart()
    if lib is None:
        raise RuntimeError("libcudart could not be loaded: cudaProfilerStart is unavailable, so the nsys "
                           "capture range would be empty")
    rc = lib.cudaProfilerStart()
    if rc:
        logger.debug("cudaProfilerStart returned %d", rc)
    try:
        yield
    finally:
        rc = lib.cudaProfilerStop()
        if rc:
            logger.debug("cudaProfilerStop returned %d", rc)


def default_profile_output() -> str:
    """``$BUILD_WORKSPACE_DIRECTORY/axl-profile.nsys-rep`` when that is set,
    else ``axl-profile.nsys-rep`` in the current folder (absolute)."""
    ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if ws:
        return os.path.join(ws, _DEFAULT_NAME)
    return os.path.abspath(_DEFAULT_NAME)


def timeline_output_for(profile_output: str) -> str:
    """Where axl's JSON timeline goes for a given report path."""
    base = profile_output[: -len(".nsys-rep")] if profile_output.endswith(".nsys-rep") else profile_output
    return base + ".trace.json"


def inject_trace_flags(args: Sequence[str], profile_output: str) -> list[str]:
    """Drops every ``--trace-file X`` / ``--trace-file=X``, keeps the other
    arguments in order, adds ``--trace`` if absent, then ``--trace-file
    <profile_output>``."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--trace-file":
            skip = True
            continue
        if a.startswith("--trace-file="):
            continue
        out.append(a)
    if "--trace" not in out:
        out.append("--trace")
    return out + ["--trace-file", profile_output]


# ----------------------------------------------------------- formatting --
def _format_ns(ns: float) -> str:
    """A duration with a unit, right-aligned to 10 characters."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.2f} {unit}".rjust(10)
    return f"{ns:.0f} ns".rjust(10)


_RUNFILES = re.compile(r"^.*?\.runfiles/[^/]+/")
_SITE = re.compile(r"^.*?/site-packages/")
_STDLIB = re.compile(r"^.*?/python3\.\d+/")


def _short_path(path: str) -> str:
    for pattern in (_RUNFILES, _SITE, _STDLIB):
        path = pattern.sub("", path)
    return path


def render_cprofile_table(stats: pstats.Stats, top_n: int, out: TextIO) -> None:
    """The top ``top_n`` functions by exclusive time."""
    rows = []
    total = 0.0
    for (path, line, func), (prim, calls, tottime, _cum, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        label = f"{_short_path(path)}:{line}<{func[1:-1]}>" if func.startswith("<") else \
            f"{_short_path(path)}:{line}({func})"
        rows.append((tottime, prim, calls, label))
    if not rows or total <= 0:
        print("=== Python/CPU functions: no samples captured ===", file=out)
        return
    rows.sort(key=lambda r: r[0], reverse=True)
    shown = rows[:top_n]
    pct = sum(r[0] for r in shown) / total * 100
    print(file=out)
    print(f"=== Top {len(shown)} Python/CPU functions ({pct:.1f}% of CPU time, "
          f"{_format_ns(total * 1e9).strip()} total) ===", file=out)
    print(f"{'%':>6} {'total':>10} {'calls':>8}  function", file=out)
    for tottime, prim, calls, label in shown:
        ncalls = f"{prim}/{calls}" if prim != calls else str(calls)
        print(f"{tottime / total * 100:6.1f} {_format_ns(tottime * 1e9)} {ncalls:>8}  {label}", file=out)


def render_nsys_kernel_summary(nsys_rep_path: str, top_n: int, out: TextIO) -> bool:
    """Prints the top GPU kernels of a report (``nsys stats --report
    cuda_gpu_kern_sum``). False when nsys fails or reports no kernel."""
    cmd = ["nsys", "stats", "--force-export=true", "--report", "cuda_gpu_kern_sum", "--format", "csv",
           nsys_rep_path]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        logger.warning("nsys not found; no kernel summary")
        return False
    if p.returncode != 0:
        logger.warning("nsys stats exited with %d: %s", p.returncode, p.stderr.strip())
        return False
    lines = [ln for ln in p.stdout.splitlines() if ln.strip() and not ln.startswith("**")]
    header: Optional[list[str]] = None
    rows: list[tuple[float, int, str]] = []
    for rec in csv.reader(lines):
        if header is None:
            if any("total time" in c.lower() or "time (%)" in c.lower() for c in rec):
                header = rec
            continue
        if len(rec) != len(header):
            continue
        row = dict(zip(header, rec))
        name = row.get("Name") or row.get("Kernel Name")
        if not name:
            continue
        raw = row.get("Total Time (ns)") or row.get("Total Time") or row.get("Sum (ns)") or "0"
        try:
            total = float(raw.replace(",", ""))
            count = int((row.get("Instances") or "0").replace(",", ""))
        except ValueError:
            continue
        rows.append((total, count, name))
    if not rows:
        return False
    rows.sort(key=lambda r: r[0], reverse=True)
    grand = sum(r[0] for r in rows)
    shown = rows[:top_n]
    pct = sum(r[0] for r in shown) / grand * 100 if grand else 0.0
    print(file=out)
    print(f"=== Top {len(shown)} GPU kernels ({pct:.1f}% of GPU time, {_format_ns(grand).strip()} total) ===",
          file=out)
    print(f"{'%':>6} {'total':>10} {'calls':>8}  kernel", file=out)
    for total, count, name in shown:
        share = total / grand * 100 if grand else 0.0
        print(f"{share:6.1f} {_format_ns(total)} {count:>8}  {name}", file=out)
    return True


def render_launch_table(entries: Sequence[Any], top_n: int, out: TextIO) -> None:
    """The most frequent launches, copies and fills (axl's launch trace),
    grouped by kind and name, with the bytes they moved."""
    groups: dict[tuple[str, str], list[int]] = {}
    for e in entries:
        kind = getattr(e.kind, "name", str(e.kind)).lower()
        g = groups.setdefault((kind, e.name), [0, 0])
        g[0] += 1
        g[1] += e.memcpy_byte_size + e.memset_byte_size
    if not groups:
        print("=== axl launches: none recorded ===", file=out)
        return
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top_n]
    print(file=out)
    print(f"=== Top {len(ranked)} axl launches ({len(entries)} total) ===", file=out)
    print(f"{'calls':>8} {'bytes':>12}  {'kind':<14} name", file=out)
    for (kind, name), (calls, nbytes) in ranked:
        print(f"{calls:>8} {nbytes:>12}  {kind:<14} {name}", file=out)


# --------------------------------------------------------------- capture --
_timeline_path: Optional[str] = None


def _start_timeline(profile_output: Optional[str]) -> str:
    """Turns axl's JSON timeline on (AXL_PROFILE_OUTPUT wins) and profiling
    with it, unless the user chose a level."""
    global _timeline_path
    from . import timeline
    from .tracing import set_gpu_profiling_state

    path = timeline.get_output() or timeline_output_for(profile_output or default_profile_output())
    timeline.set_output(path)
    if "AXL_ENABLE_PROFILING" not in os.environ:
        set_gpu_profiling_state("detailed")
    _timeline_path = path
    return path


def _original_args() -> list[str]:
    """The interpreter's arguments as given (``-c code``, ``-m mod``, ``-X``
    options included), so any way of starting the program re-runs the same."""
    orig = getattr(sys, "orig_argv", None)
    return list(orig[1:]) if orig else list(sys.argv)


def maybe_reexec_under_nsys(profile_output: Optional[str] = None, *, top_n: int = 15,
                            backend: Optional[ProfileBackend] = None, out: Optional[TextIO] = None) -> None:
    """Re-runs this program under ``nsys profile`` when a GPU capture is
    possible, prints the summaries and exits with the child's status (it
    does not return then). Otherwise prints why and returns, after turning
    on axl's JSON timeline. Inside the nsys child it returns at once."""
    out = out if out is not None else sys.stdout
    backend = backend if backend is not None else detect_backend()
    if os.environ.get(UNDER_NSYS_ENV) == "1":
        return
    if not backend.can_capture_gpu:
        if not backend.nsys_available:
            note = ("Nsight Systems (`nsys`) not found on PATH; only Python/CPU profile will be captured. "
                    "Install Nsight Systems for a GPU kernel breakdown.")
        elif not backend.nvidia_gpu_present:
            note = "no NVIDIA GPU detected; only Python/CPU profile will be captured."
        else:
            note = "libcudart could not be loaded; only Python/CPU profile will be captured."
        print(f"--profile: {note}", file=out)
        path = _start_timeline(profile_output)
        print(f"--profile: axl timeline (spans, launches, copies) will be written to {path}", file=out)
        return
    output = profile_output or default_profile_output()
    dump = output + ".cprofile"
    env = dict(os.environ)
    env[UNDER_NSYS_ENV] = "1"
    env[CPROFILE_DUMP_ENV] = dump
    env.setdefault("AXL_ENABLE_PROFILING", "detailed")
    cmd = ["nsys", "profile", "--trace=cuda,nvtx", "--capture-range=cudaProfilerApi",
           "--capture-range-end=stop", "--output", output, "--force-overwrite=true",
           sys.executable, *_original_args()]
    rc = subprocess.run(cmd, env=env).returncode
    if os.path.exists(dump):
        try:
            render_cprofile_table(pstats.Stats(dump), top_n, out)
        except Exception as e:  # noqa: BLE001 - a bad dump only loses the table
            logger.warning("could not read the cProfile dump %s: %s", dump, e)
        finally:
            os.unlink(dump)
    if os.path.exists(output):
        if not render_nsys_kernel_summary(output, top_n, out):
            print(f"No GPU kernel data found in profile ({output}). The capture window may have been empty.",
                  file=out)
        print(f"Full profile saved to: {output}", file=out)
        print(f"Open with: nsys-ui {output}", file=out)
    else:
        print(f"--profile: nsys exited with rc={rc} without writing {output}. No kernel summary produced.",
              file=out)
    sys.exit(rc)


class OneShotCapture:
    """A capture whose start and end are in different places: ``start()``
    once (later calls do nothing), ``end_and_finalize()`` once (idempotent;
    nothing if never started). Outside the nsys child it also records the
    launch trace (host queues included) for the launch table."""

    def __init__(self, *, top_n: int = 15, out: Optional[TextIO] = None) -> None:
        # Checked here, not when the tables are printed at the end of the run.
        if isinstance(top_n, bool) or not isinstance(top_n, int):
            raise TypeError(f"OneShotCapture: top_n must be an int, got {type(top_n).__name__} {top_n!r}")
        if top_n < 0:
            raise ValueError(f"OneShotCapture: top_n must be >= 0, got {top_n}")
        self._top_n = top_n
        self._out = out
        self._profiler = cProfile.Profile()
        self._cuda: Optional[contextlib.ExitStack] = None
        self._started = False
        self._ended = False
        self._launches = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        if os.environ.get(UNDER_NSYS_ENV) == "1":
            self._cuda = contextlib.ExitStack()
            self._cuda.enter_context(cuda_profiler_region())
        else:
            from ..driver import begin_launch_trace

            begin_launch_trace(include_host=True)
            self._launches = True
        self._profiler.enable()

    def end_and_finalize(self) -> None:
        if self._ended:
            return
        self._ended = True
        if not self._started:
            return
        self._profiler.disable()
        if self._cuda is not None:
            try:
                self._cuda.close()
            except Exception as e:  # noqa: BLE001
                logger.warning("ending the CUDA profiler region failed: %s", e)
        _finalize(self._profiler, self._top_n, self._out, self._launches)


def _finalize(profiler: cProfile.Profile, top_n: int, out: Optional[TextIO], launches: bool) -> None:
    out = out if out is not None else sys.stdout
    dump = os.environ.get(CPROFILE_DUMP_ENV)
    if dump:
        try:
            profiler.dump_stats(dump)
            return
        except OSError as e:
            logger.warning("could not write the cProfile dump %s: %s; printing instead", dump, e)
    render_cprofile_table(pstats.Stats(profiler), top_n, out)
    if launches:
        from ..driver import take_launch_trace

        render_launch_table(take_launch_trace(), top_n, out)
    from . import timeline

    path = timeline.get_output()
    if path:
        timeline.flush()
        print(f"axl timeline saved to: {path} (open in https://ui.perfetto.dev or chrome://tracing)", file=out)


@contextlib.contextmanager
def profiled_region(*, top_n: int = 15, backend: Optional[ProfileBackend] = None,
                    out: Optional[TextIO] = None) -> Iterator[None]:
    """cProfile around the block (and the CUDA capture range inside the nsys
    child); the summaries are printed, or dumped for the parent, when it
    ends, also on an exception (which propagates). ``backend`` is accepted
    for MAX compatibility and unused."""
    del backend
    capture = OneShotCapture(top_n=top_n, out=out)
    capture.start()
    try:
        yield
    finally:
        capture.end_and_finalize()


__all__ = [
    "OneShotCapture",
    "ProfileBackend",
    "cuda_profiler_region",
    "default_profile_output",
    "detect_backend",
    "inject_trace_flags",
    "maybe_reexec_under_nsys",
    "profiled_region",
    "render_nsys_kernel_summary",
]
