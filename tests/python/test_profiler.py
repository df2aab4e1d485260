"""axl.profiler spans: MAX's names and behaviour (Trace, Tracer, traced,
is_profiling_enabled, set_gpu_profiling_state), checked through the
in-process collector and the JSON timeline, plus the environment switches
and the quickstart timeline in child interpreters."""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import threading
import time
from pathlib import Path

import pytest

import axl.profiler as profiler
from axl.profiler import Trace, Tracer, is_profiling_enabled, set_gpu_profiling_state, traced
from axl.profiler.timeline import SpanCollector, flush, get_output, set_output, sinks

from axl import _core

from conftest import REPO, run_py

PURPLE = 0xFFB5BAF5


@pytest.fixture(autouse=True)
def profiling_off():
    """Every test starts and ends with profiling off and no JSON output."""
    set_gpu_profiling_state("off")
    set_output(None)
    yield
    set_gpu_profiling_state("off")
    set_output(None)


def names(events, kind="span"):
    return [e["name"] for e in events if e["kind"] == kind]


def load_trace(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def x_events_nest(events) -> bool:
    """Complete events on each track nest (the Trace Event Format's rule)."""
    tracks: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "X":
            start = round(float(e["ts"]) * 1000)
            tracks.setdefault(e["tid"], []).append((start, start + round(float(e["dur"]) * 1000)))
    for spans in tracks.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list[int] = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                return False
            stack.append(end)
    return True


# ------------------------------------------------------------ the surface --
def test_every_name_of_max_profiler_exists():
    assert set(profiler.__all__) >= {
        "OneShotCapture", "ProfileBackend", "Tracer", "cpu", "default_profile_output", "detect_backend",
        "gpu", "is_profiling_enabled", "maybe_reexec_under_nsys", "oneshot", "profiled_region",
        "set_gpu_profiling_state", "traced"}
    for name in profiler.__all__:
        assert hasattr(profiler, name), name
    for name in ("BackgroundRecorder", "GPUDiagContext", "HARDWARE_THROTTLE_REASONS", "ClockStats", "GPUStats",
                 "GpuStatsRecorder", "MemoryStats", "ThrottleReason", "UtilizationStats"):
        assert hasattr(profiler.gpu, name), name
    for name in ("CPUMetrics", "CPUMetricsCollector", "collect_pids_for_port"):
        assert hasattr(profiler.cpu, name), name
    for name in ("ProfileBackend", "detect_backend", "cuda_profiler_region", "render_nsys_kernel_summary",
                 "OneShotCapture", "default_profile_output", "inject_trace_flags", "maybe_reexec_under_nsys",
                 "profiled_region"):
        assert hasattr(profiler.oneshot, name), name


def test_set_gpu_profiling_state_values_and_errors():
    assert not is_profiling_enabled()
    set_gpu_profiling_state("on")
    assert is_profiling_enabled()
    set_gpu_profiling_state("detailed")
    assert is_profiling_enabled()
    set_gpu_profiling_state("off")
    assert not is_profiling_enabled()
    for bad in ("ON", "true", "", "verbose"):
        with pytest.raises(ValueError, match=r"expected one of 'off', 'on', 'detailed'") as info:
            set_gpu_profiling_state(bad)
        assert repr(bad) in str(info.value)
    for bad in (None, 1, b"on", ["on"]):  # not a str: TypeError, as MAX's argument cast
        with pytest.raises(TypeError, match=r"state must be a str, one of 'off', 'on', 'detailed'") as info:
            set_gpu_profiling_state(bad)
        assert repr(bad) in str(info.value)
    assert not is_profiling_enabled()
    with pytest.raises(TypeError):
        set_gpu_profiling_state(state="on")  # positional-only, as MAX's


# ------------------------------------------------------------------ Trace --
def test_trace_context_manager_mark_and_colours():
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        with Trace("outer") as t:
            assert isinstance(t, Trace) and t.is_open
            with Trace("inner", color="red") as inner:
                inner.mark()
            Trace("stray", "chartreuse").mark()  # unknown colour: modular_purple
    spans = {e["name"]: e for e in c.events if e["kind"] == "span"}
    marks = [e for e in c.events if e["kind"] == "mark"]
    assert names(c.events) == ["inner", "outer"]
    assert spans["outer"]["color"] == PURPLE and spans["outer"]["depth"] == 0
    assert spans["inner"]["color"] == 0xFFFF0000 and spans["inner"]["depth"] == 1
    assert [(m["name"], m["color"], m["depth"]) for m in marks] == [("inner", 0xFFFF0000, 2),
                                                                   ("stray", PURPLE, 1)]
    assert spans["outer"]["start_ns"] <= spans["inner"]["start_ns"] <= spans["inner"]["end_ns"] \
        <= spans["outer"]["end_ns"]
    assert {e["thread_id"] for e in c.events} == {threading.get_native_id()}


def test_trace_exception_propagates_and_closes_the_span():
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        with pytest.raises(KeyError):
            with Trace("raises"):
                raise KeyError("k")
        t = Trace("manual")
        t.__enter__()
        t.__exit__()  # all three arguments optional
        t.__exit__(None, exc_value=None)
        with pytest.raises(TypeError, match="at most 3 arguments"):
            t.__exit__(None, None, None, None)
    assert names(c.events) == ["raises", "manual"]
    assert _core._profiler_depth() == 0


def test_trace_arguments():
    t = Trace(message="kw", color="red")
    assert (t.message, t.color, t.is_open) == ("kw", 0xFFFF0000, False)
    assert Trace("x").color == PURPLE
    with pytest.raises(ValueError, match="null character"):
        Trace("a\0b")
    with pytest.raises(TypeError):
        Trace()


def test_trace_off_records_nothing():
    with SpanCollector() as c:
        with Trace("x") as t:
            assert not t.is_open
            t.mark()
    assert c.events == []


# ----------------------------------------------------------------- Tracer --
def test_tracer_stack_placeholders_and_order():
    t = Tracer()
    assert t.trace_stack == [None]  # never empty after construction
    t.push("off: placeholder")
    assert t.trace_stack == [None, None]
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        t.pop()  # pushed while off, popped while on: fine
        t.push("a")
        t.push(None)  # no message: placeholder even when on
        t.push("b", "green")
        assert [type(x).__name__ if x else None for x in t.trace_stack] == [None, "Trace", None, "Trace"]
        t.next("c")
        t.mark()
        t.cleanup()
        assert t.trace_stack == []
    assert names(c.events) == ["b", "c", "a"]  # LIFO
    assert names(c.events, "mark") == ["c"]
    with pytest.raises(IndexError, match="pop from empty list"):
        t.pop()
    with pytest.raises(IndexError):
        t.next("d")


def test_tracer_mark_underflow_and_placeholder_mark():
    t = Tracer()
    t.pop()
    with pytest.raises(AssertionError, match=r"stack underflow in Tracer.mark\(\)"):
        t.mark()
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        t.push(None)
        t.mark()  # placeholder on top: nothing
        t.pop()
    assert c.events == []


def test_tracer_context_manager_closes_everything_and_propagates():
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        with pytest.raises(RuntimeError, match="inside"):
            with Tracer("first") as t:
                assert t.trace_stack[0] is not None
                t.push("second")
                raise RuntimeError("inside")
        assert t.trace_stack == []
    assert names(c.events) == ["second", "first"]


def test_span_opened_while_on_closes_after_switching_off():
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        t = Tracer("straddle")
        set_gpu_profiling_state("off")
        t.push("not opened")
        t.cleanup()
    assert names(c.events) == ["straddle"]


def test_tracer_dropped_closes_its_spans():
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        t = Tracer("dropped")
        del t
        gc.collect()
    assert names(c.events) == ["dropped"]


# ----------------------------------------------------------------- traced --
def test_traced_forms_and_metadata():
    @traced
    def bare(a, b=2):
        """bare doc"""
        return a + b

    @traced()
    def empty_call(x):
        return x * 3

    @traced(message="custom", color="blue")
    def called(x):
        return -x

    bare.extra = "kept"
    assert bare(1) == 3 and empty_call(2) == 6 and called(4) == -4
    assert bare.__name__ == "bare" and bare.__doc__ == "bare doc"
    assert bare.__qualname__.endswith("test_traced_forms_and_metadata.<locals>.bare")
    assert bare.__module__ == __name__
    assert inspect.signature(bare) == inspect.signature(bare.__wrapped__)
    assert str(inspect.signature(bare)) == "(a, b=2)"
    assert bare.extra == "kept"
    assert not inspect.iscoroutinefunction(bare)

    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        bare(1)
        empty_call(1)
        called(1)
    assert [(e["name"], e["color"]) for e in c.events] == [("bare", PURPLE), ("empty_call", PURPLE),
                                                           ("custom", 0xFF0000FF)]


def test_traced_checks_profiling_at_each_call():
    calls = []

    @traced
    def f():
        calls.append(1)

    with SpanCollector() as c:
        f()
        set_gpu_profiling_state("on")
        f()
        set_gpu_profiling_state("off")
        f()
        set_gpu_profiling_state("detailed")
        f()
    assert len(calls) == 4
    assert names(c.events) == ["f", "f"]


def test_traced_exception_ends_the_span_and_propagates():
    @traced
    def boom():
        raise ValueError("boom")

    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        with pytest.raises(ValueError, match="boom"):
            boom()
    assert names(c.events) == ["boom"]
    assert _core._profiler_depth() == 0


def test_traced_methods_bind_like_functions():
    class Model:
        def __init__(self):
            self.k = 10

        @traced
        def execute(self, x):
            return self.k + x

        @traced(message="Model.static")
        @staticmethod
        def helper(x):
            return x

    m = Model()
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        assert m.execute(1) == 11
        assert Model.execute(m, 2) == 12
    assert names(c.events) == ["execute", "execute"]


def test_traced_async_functions():
    @traced
    async def work(delay):
        await asyncio.sleep(delay)
        return "done"

    @traced(message="async_fail")
    async def fail():
        await asyncio.sleep(0)
        raise OSError("x")

    assert inspect.iscoroutinefunction(work)
    assert work.__name__ == "work" and work.__wrapped__ is not None
    assert asyncio.run(work(0)) == "done"  # off: no span

    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        assert asyncio.run(work(0.02)) == "done"
        with pytest.raises(OSError):
            asyncio.run(fail())
    spans = [e for e in c.events if e["kind"] == "span"]
    assert [s["name"] for s in spans] == ["work", "async_fail"]
    assert spans[0]["end_ns"] - spans[0]["start_ns"] >= 20_000_000  # covers the await


# ------------------------------------------------------- launches, JSON ---
def test_launches_and_copies_reach_the_collector(cpu, queue):
    import numpy as np
    from axl.driver import Buffer
    from axl.dtype import DType

    k = cpu._test_kernel(0)
    set_gpu_profiling_state("on")
    with SpanCollector() as c:
        with Trace("upload"):
            # from_numpy aliases (MAX): the copy into a cpu buffer is the 64-byte HtoD.
            buf = Buffer(DType.uint32, (16,), cpu)
            buf.inplace_copy_from(Buffer.from_numpy(np.arange(16, dtype=np.uint32)))
            queue.launch(k, 1, 4, buf, np.uint32(4))
            queue.synchronize()
    launches = [e for e in c.events if e["kind"] == "launch"]
    assert [(e["launch_kind"], e["bytes"]) for e in launches] == [(1, 64), (0, 0)]  # MEMCPY, KERNEL
    assert all(e["queue_id"] > 0 and e["thread_id"] == threading.get_native_id() for e in launches)
    assert launches[0]["start_ns"] <= launches[1]["start_ns"]
    assert names(c.events) == ["upload"]
    span = next(e for e in c.events if e["kind"] == "span")
    assert span["start_ns"] <= launches[0]["start_ns"] <= span["end_ns"]


def test_json_output_in_process(tmp_path):
    path = tmp_path / "t.json"
    set_output(path)
    assert get_output() == str(path) and sinks()["json"]
    set_gpu_profiling_state("on")

    @traced
    def leaf():
        pass

    with Tracer("json_root") as t:
        leaf()
        t.mark()
    flush()
    doc = load_trace(path)
    evs = doc["traceEvents"]
    x = {e["name"]: e for e in evs if e["ph"] == "X"}
    assert x["json_root"]["args"]["depth"] == 0 and x["leaf"]["args"]["depth"] == 1
    assert x["leaf"]["tid"] == x["json_root"]["tid"] == threading.get_native_id()
    assert any(e["ph"] == "i" and e["name"] == "json_root" for e in evs)
    assert any(e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] == threading.get_native_id()
               for e in evs)
    assert x_events_nest(evs)
    set_output(None)
    assert not sinks()["json"]
    from axl.driver import AxlError

    with pytest.raises(AxlError, match="no profile output"):
        flush()


@pytest.mark.threads
def test_eight_threads_of_concurrent_spans_give_valid_json(tmp_path):
    path = tmp_path / "threads.json"
    set_output(path)
    set_gpu_profiling_state("on")
    n_iter = 200
    tids: dict[int, int] = {}
    barrier = threading.Barrier(8)

    @traced
    def inner(i):
        return i

    def worker(k):
        tids[k] = threading.get_native_id()
        barrier.wait()
        for i in range(n_iter):
            with Tracer(f"w{k}"):
                inner(i)

    with SpanCollector() as c:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for _ in range(5):
            flush()  # concurrent with the writers
        for t in threads:
            t.join()
    flush()
    spans = [e for e in c.events if e["kind"] == "span"]
    assert len(spans) == 8 * n_iter * 2
    for k, tid in tids.items():
        mine = [e for e in spans if e["thread_id"] == tid]
        assert len(mine) == 2 * n_iter
        assert {e["name"] for e in mine} == {f"w{k}", "inner"}
        assert all(e["depth"] == (0 if e["name"] == f"w{k}" else 1) for e in mine)
    evs = load_trace(path)["traceEvents"]
    x = [e for e in evs if e["ph"] == "X"]
    assert len(x) >= 8 * n_iter * 2
    assert set(tids.values()) <= {e["tid"] for e in x}
    assert x_events_nest(evs)


# ------------------------------------------------ environment, child runs --
CHILD = """
import json, sys
import numpy as np
from axl.profiler import Tracer, traced, is_profiling_enabled
from axl.driver import CPU, Buffer, DeviceQueue
from axl.dtype import DType
print("enabled", is_profiling_enabled())

@traced
def step():
    q = DeviceQueue(CPU())
    b = Buffer(DType.float32, (16,), CPU())
    b.inplace_copy_from(Buffer.from_numpy(np.arange(16, dtype=np.float32)))  # one HtoD copy
    b.to_numpy()
    q.synchronize()

with Tracer("root"):
    step()
if len(sys.argv) > 1 or "{mode}" == "raise":
    with Tracer("dying"):
        raise SystemError("uncaught on purpose")
"""


@pytest.mark.parametrize("value,enabled", [("on", True), ("detailed", True), ("1", True), ("TRUE", True),
                                           ("yes", True), ("off", False), ("0", False), ("nope", False)])
def test_axl_enable_profiling_values(value, enabled):
    p = run_py(CHILD.format(mode="ok"), env={"AXL_ENABLE_PROFILING": value})
    assert f"enabled {enabled}" in p.stdout


def test_child_json_timeline_survives_an_uncaught_exception(tmp_path):
    path = tmp_path / "trace.json"
    p = run_py(CHILD.format(mode="raise"), env={"AXL_ENABLE_PROFILING": "on", "AXL_PROFILE_OUTPUT": str(path)},
               check=False)
    assert p.returncode == 1 and "uncaught on purpose" in p.stderr
    evs = load_trace(path)["traceEvents"]
    x = {e["name"]: e for e in evs if e["ph"] == "X" and e["cat"] == "span"}
    assert {"root", "step", "dying"} <= set(x)
    assert x["step"]["args"]["depth"] == 1
    launches = [e for e in evs if e.get("cat") == "launch"]
    assert launches and all(e["tid"] >= 1_000_000_000 for e in launches)
    track_names = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert any(n.startswith("queue ") and n.endswith("launches") for n in track_names)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in evs)
    assert x_events_nest(evs)


def test_quickstart_timeline(tmp_path):
    """The issue's done-criterion: spans, launches and copies of the
    quickstart in one Perfetto-readable file."""
    script = REPO / "examples" / "quickstart.py"
    path = tmp_path / "trace.json"
    code = f"import runpy, sys; sys.argv = [{str(script)!r}]; runpy.run_path({str(script)!r}, run_name='__main__')"
    p = run_py(code, env={"AXL_ENABLE_PROFILING": "on", "AXL_PROFILE_OUTPUT": str(path)}, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    evs = load_trace(path)["traceEvents"]
    kinds = {e["args"].get("kind") for e in evs if e.get("cat") == "launch"}
    assert {"kernel", "memcpy"} <= kinds
    assert any(e.get("cat") == "span" for e in evs)
    assert any(e.get("cat") == "device" for e in evs)  # the quickstart's event timings
    assert x_events_nest(evs)


# Issue 14: a timeline with no span was invalid JSON (a comma after the last
# metadata event, core/src/profile_json.cpp).
def test_timeline_without_spans_is_valid_json(tmp_path):
    path = tmp_path / "empty.json"
    p = run_py("import axl.driver\n", env={"AXL_ENABLE_PROFILING": "on", "AXL_PROFILE_OUTPUT": str(path)})
    assert p.returncode == 0 and path.exists()
    doc = load_trace(path)
    assert [e["ph"] for e in doc["traceEvents"]] == ["M"]


def test_device_intervals_of_one_queue_follow_its_order(tmp_path):
    # Issue 14: an interval was drawn from its start event's host record
    # time, so a short op recorded while a long one (held 150 ms here) still
    # ran was drawn inside it. One in-order queue's intervals must not
    # overlap, and the short one starts after the long one ends.
    path = tmp_path / "device.json"
    run_py(
        """
        import time
        from axl.driver import CPU, CompletionFlag, DeviceEvent, DeviceQueue
        dev = CPU()
        q = DeviceQueue(dev)
        ev = [DeviceEvent(dev, enable_timing=True) for _ in range(4)]
        flag = CompletionFlag(dev)
        q.record_event(ev[0])
        q.wait_for_host_value(flag, 1)
        q.record_event(ev[1])
        q.record_event(ev[2])
        q.record_event(ev[3])
        time.sleep(0.15)
        flag.signal(1)
        ev[3].synchronize()
        long_ms = ev[0].elapsed_time(ev[1])
        short_ms = ev[2].elapsed_time(ev[3])
        assert long_ms >= 140 and short_ms < 100, (long_ms, short_ms)
        """,
        env={"AXL_ENABLE_PROFILING": "on", "AXL_PROFILE_OUTPUT": str(path)},
    )
    events = [e for e in load_trace(path)["traceEvents"] if e.get("cat") == "device"]
    begins = sorted((e["ts"], e["args"]["elapsed_ns"]) for e in events if e["ph"] == "b")
    assert len(begins) == 2, events
    (long_start, long_ns), (short_start, _) = sorted(begins, key=lambda b: -b[1])
    assert long_ns >= 140e6
    # ts is in microseconds.
    assert short_start >= long_start + long_ns / 1000 - 1, begins


# A long profiled run kept every event in memory (the JSON timeline and the
# collector grew without bound): AXL_PROFILE_MAX_EVENTS caps both, counts
# what was dropped and warns once.
def test_max_events_caps_the_timeline_and_the_collector(tmp_path):
    path = tmp_path / "capped.json"
    p = run_py(
        """
        from axl.profiler import Tracer
        from axl.profiler.timeline import SpanCollector, flush
        with SpanCollector() as c:
            for i in range(25):
                with Tracer(f"span{i}"):
                    pass
        print("collected", len(c.events))
        flush()
        """,
        env={"AXL_ENABLE_PROFILING": "on", "AXL_PROFILE_OUTPUT": str(path), "AXL_PROFILE_MAX_EVENTS": "10",
             "AXL_LOG_LEVEL": "warn"})
    assert "collected 10" in p.stdout, p.stdout
    doc = load_trace(path)
    spans = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X"]
    assert spans == [f"span{i}" for i in range(10)]  # the first ten kept, in order
    assert doc["otherData"]["max_events"] == 10 and doc["otherData"]["dropped_events"] == 15
    assert p.stderr.count("later events are dropped") == 2, p.stderr  # once per sink
    assert "dropped 15 events past its 10" in p.stderr, p.stderr


def test_max_events_zero_keeps_everything_and_a_bad_value_warns(tmp_path):
    for value, kept, warned in (("0", 30, False), ("-3", 30, True), ("lots", 30, True)):
        path = tmp_path / f"t{kept}{value}.json"
        p = run_py(
            """
            from axl.profiler import Tracer
            from axl.profiler.timeline import flush
            for i in range(30):
                with Tracer(f"s{i}"):
                    pass
            flush()
            """,
            env={"AXL_ENABLE_PROFILING": "on", "AXL_PROFILE_OUTPUT": str(path), "AXL_PROFILE_MAX_EVENTS": value,
                 "AXL_LOG_LEVEL": "warn"})
        doc = load_trace(path)
        assert sum(e["ph"] == "X" for e in doc["traceEvents"]) == kept, value
        assert "dropped_events" not in doc["otherData"]
        assert ("AXL_PROFILE_MAX_EVENTS" in p.stderr) == warned, (value, p.stderr)
