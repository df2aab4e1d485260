"""Every argument of the public surface refuses a wrongly typed value with an
error that names the argument (issue 14).

A hand-kept table: one row per public callable of axl.driver and
axl.profiler and of the objects they hand out, with one valid value per
parameter and the parameter's kind. Each parameter is then given each wrong
value of its kind, one at a time, the others staying valid. The call must
raise TypeError (or the ValueError / OverflowError numpy or MAX would raise,
noted per kind below), name the parameter, never carry pybind11's default
messages, and leave no trace (the state a row names is unchanged).

``test_table_is_complete`` walks ``__all__`` and each class's public
attributes: a new callable without a row (or an entry in NO_ARGUMENTS /
NOT_WALKED with its reason) fails, and so does a row whose parameters differ
from the callable's signature.
"""
from __future__ import annotations

import gc
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import axl.driver as d
import axl.profiler as p
from axl.dtype import DType

PYBIND11_DEFAULTS = ("incompatible function arguments", "incompatible constructor arguments", "Unable to cast",
                     "C++ type")


class Bad:
    """A value of no type any parameter takes."""

    def __repr__(self) -> str:
        return "<Bad>"


BAD = Bad()

# The wrong values of each kind of parameter, with the error types allowed
# for each. TypeError unless said: a negative size is a ValueError (numpy:
# "negative dimensions are not allowed"), a size beyond the C type's range
# an OverflowError or ValueError (numpy: "Python int too large to convert
# to C long" / "maximum allowed dimension exceeded"; MAX's binding raises
# TypeError, also accepted).
T = (TypeError,)
RANGE = (TypeError, ValueError, OverflowError)
NOT_NONE = [(None, T)]
KINDS: dict[str, list[tuple[object, tuple[type[BaseException], ...]]]] = {
    # ints that are not sizes (ids, counts): no float, str, list
    "int": [("1", T), (1.5, T), ([1], T), (BAD, T), (2**64, RANGE)] + NOT_NONE,
    # unsigned quantities (flag values, byte sizes)
    "size": [("1", T), (1.5, T), ([1], T), (BAD, T), (-1, RANGE), (2**64, RANGE)] + NOT_NONE,
    # Python-side counts (no C type behind them)
    "count": [("1", T), (1.5, T), ([1], T), (BAD, T), (-1, (ValueError,))] + NOT_NONE,
    # MAX's bool parameters are nanobind bools: True/False (and numpy.bool_)
    # only; an int, a str or None is refused, not read as truthy.
    "bool": [("no", T), (1, T), (1.5, T), (BAD, T)] + NOT_NONE,
    "str": [(3, T), (b"x", T), (["x"], T), (BAD, T)] + NOT_NONE,
    # a module source: a path (str, os.PathLike) or the module's bytes
    "path": [(3, T), (["x"], T), (BAD, T)] + NOT_NONE,
    # a sequence of str: a bare str (a sequence of one-character strs) is
    # refused rather than split into characters
    "str_list": [("-DX", T), (3, T), ([3], T), (BAD, T)] + NOT_NONE,
    "device": [("cpu", T), (0, T), (BAD, T)] + NOT_NONE,
    "buffer": [(np.zeros(2, np.int32), T), (3, T), (BAD, T)] + NOT_NONE,
    "buffer_list": [(3, T), ([3], T), (BAD, T)] + NOT_NONE,
    "dtype": [("x", T), (3, T), (np.float32, T), (BAD, T)] + NOT_NONE,
    "shape": [("x", T), (1.5, T), ([1.5], T), (BAD, T)],
    "queue": [(3, T), ("q", T), (BAD, T)] + NOT_NONE,
    "event": [(3, T), ("e", T), (BAD, T)] + NOT_NONE,
    "flag": [(3, T), ("f", T), (BAD, T)] + NOT_NONE,
    "callable": [(3, T), ("f", T)] + NOT_NONE,
    "spec_list": [(3, T), ([3], T), (BAD, T)] + NOT_NONE,
    "device_list": [(3, T), (["cpu"], T), (BAD, T)] + NOT_NONE,
    # a --devices input: a str or a list of int ids (MAX's grammar ignores
    # any other input, so only a list's entries can be of the wrong type)
    "cli_input": [([1.5], T), ([True], T), (["1"], T)],
    "usage": [("x", T), (1.5, T), (BAD, T)],
    "kernel": [(3, T), ("saxpy", T), (BAD, T)] + NOT_NONE,
    # launch dimensions: an int or a tuple of 1 to 3 ints
    "dims": [("x", T), (1.5, T), ((1.5,), T), (BAD, T)] + NOT_NONE,
    # a module format: a name or the C ABI's int code
    "format": [(b"x", T), (["x"], T), (1.5, T), (BAD, T)],
}


def bad_values(kind: str) -> list[tuple[object, tuple[type[BaseException], ...]]]:
    """The wrong values of ``kind``; "opt_KIND" is KIND where None is valid."""
    if kind.startswith("opt_"):
        return [(v, e) for v, e in KINDS[kind[4:]] if v is not None]
    return KINDS[kind]


@dataclass
class Row:
    """``call(args)`` calls the entry with the dict ``args`` (parameter name
    -> value); ``params`` maps each parameter to (valid value, kind).
    ``state`` snapshots what a refused call must leave as it was."""
    call: Callable[[dict[str, Any]], object]
    params: dict[str, tuple[object, str]]
    state: Callable[[], object] | None = None


def _cpu():
    return d.CPU()


def _live_buffers() -> int:
    """Buffers alive (a refused call must not leave one behind); the
    device's free memory moves with every other process on the host."""
    gc.collect()
    return sum(isinstance(o, d.Buffer) for o in gc.get_objects())


def _virtual_settings():
    return (d.get_virtual_device_count(), d.get_virtual_device_api(), d.get_virtual_device_target_arch(),
            d.get_virtual_cpu_target())


def _enter(cm) -> None:
    """Enters and leaves a context manager (whose arguments are checked on
    entry, as contextlib's are)."""
    with cm:
        pass


def _rows() -> dict[str, Row]:
    cpu = _cpu()
    q = cpu.default_queue
    flag = d.CompletionFlag(cpu)
    ev = d.DeviceEvent(cpu)
    buf = d.Buffer(DType.int32, (4,))
    launch_buf = d.Buffer(DType.uint32, (1,))
    mod_path = None
    from conftest import EXAMPLE_KERNELS
    if EXAMPLE_KERNELS.exists():
        mod_path = str(EXAMPLE_KERNELS)
    module = cpu.load_module(mod_path) if mod_path else None
    stats = _live_buffers
    rows = {
        # ---------------------------------------------------------- devices
        "CPU": Row(lambda a: d.CPU(a["id"]), {"id": (-1, "int")}),
        "Accelerator": Row(lambda a: d.Accelerator(a["id"]), {"id": (0, "int")}),
        "Device.can_access": Row(lambda a: cpu.can_access(a["other"]), {"other": (cpu, "device")}),
        "Device.load_module": Row(lambda a: cpu.load_module(a["source"], format=a["format"]),
                                  {"source": (mod_path, "path"), "format": (None, "format")}),
        "Device.cpu": Row(lambda a: d.Device.cpu(a["id"]), {"id": (-1, "int")}),
        # ------------------------------------------------ queues and events
        "DeviceQueue": Row(lambda a: d.DeviceQueue(a["device"], max_pending=a["max_pending"]),
                           {"device": (cpu, "device"), "max_pending": (None, "opt_size")}),
        "DeviceQueue.record_event": Row(lambda a: q.record_event(a["event"]), {"event": (ev, "opt_event")}),
        "DeviceQueue.wait_for": Row(lambda a: q.wait_for(a["other"]), {"other": (q, "queue")}),
        "DeviceQueue.wait_for_host_value": Row(lambda a: q.wait_for_host_value(a["flag"], a["value"]),
                                               {"flag": (flag, "flag"), "value": (0, "size")}),
        "DeviceQueue.launch": Row(lambda a: q.launch(a["kernel"], a["grid"], a["block"], launch_buf, np.uint32(0),
                                                     shared_mem_bytes=a["shared_mem_bytes"]),
                                  {"kernel": (cpu._test_kernel(0), "kernel"), "grid": (1, "dims"), "block": (1, "dims"),
                                   "shared_mem_bytes": (0, "size")}),
        "DeviceQueue.enqueue_host_func": Row(lambda a: q.enqueue_host_func(a["fn"]), {"fn": (lambda: None, "callable")}),
        "DeviceEvent": Row(lambda a: d.DeviceEvent(a["device"], enable_timing=a["enable_timing"]),
                           {"device": (cpu, "device"), "enable_timing": (False, "bool")}),
        "DeviceEvent.elapsed_time": Row(lambda a: ev.elapsed_time(a["end_event"]), {"end_event": (d.DeviceEvent(cpu), "event")}),
        "CompletionFlag": Row(lambda a: d.CompletionFlag(a["device"]), {"device": (cpu, "device")}),
        "CompletionFlag.signal": Row(lambda a: flag.signal(a["value"]), {"value": (0, "size")},
                                     state=lambda: flag.load()),
        # ------------------------------------------------- modules, kernels
        "Module.kernel": Row(lambda a: module.kernel(a["name"]), {"name": ("saxpy", "str")}),
        "Program": Row(lambda a: d.Program(a["source"], device=a["device"], options=a["options"], name=a["name"],
                                           language=a["language"]),
                       {"source": ("__global__ void k() {}", "str"), "device": (cpu, "device"),
                        "options": ((), "str_list"), "name": (None, "opt_str"), "language": (None, "opt_str")}),
        # ----------------------------------------------------------- buffers
        "Buffer": Row(lambda a: d.Buffer(a["dtype"], a["shape"], device=a["device"]),
                      {"dtype": (DType.int32, "dtype"), "shape": ((2,), "shape"), "device": (cpu, "opt_device")},
                      state=stats),
        # A "#" names a second row of one callable (parameters that do not
        # combine: a Buffer is made on a device or bound to a stream).
        "Buffer#stream": Row(lambda a: d.Buffer(DType.int32, (2,), stream=a["stream"], usage=a["usage"]),
                             {"stream": (q, "opt_queue"), "usage": (d.Usage.DEFAULT, "usage")}, state=stats),
        "DeviceQueue.wait_for#keywords": Row(lambda a: q.wait_for(stream=a["stream"]), {"stream": (q, "queue")}),
        "Buffer.zeros": Row(lambda a: d.Buffer.zeros(a["shape"], a["dtype"], device=a["device"]),
                            {"shape": ((2,), "shape"), "dtype": (DType.int32, "dtype"),
                             "device": (cpu, "opt_device")}, state=stats),
        "Buffer.scalar": Row(lambda a: d.Buffer.scalar(1, a["dtype"], device=a["device"]),
                             {"dtype": (DType.int32, "dtype"), "device": (cpu, "opt_device")}, state=stats),
        "Buffer.from_numpy": Row(lambda a: d.Buffer.from_numpy(np.zeros(2), device=a["device"]),
                                 {"device": (cpu, "opt_device")}, state=stats),
        "Buffer.mmap": Row(lambda a: d.Buffer.mmap(a["filename"], a["dtype"], a["shape"], mode=a["mode"],
                                                offset=a["offset"]),
                           {"filename": (mod_path or __file__, "path"), "dtype": (DType.int8, "dtype"),
                            "shape": ((1,), "shape"), "mode": ("r", "str"), "offset": (0, "size")}),
        "Buffer.from_dlpack": Row(lambda a: d.Buffer.from_dlpack(np.zeros(2), copy=a["copy"]),
                                  {"copy": (None, "opt_bool")}),
        "Buffer.copy": Row(lambda a: buf.copy(a["device"]), {"device": (cpu, "opt_device")}, state=stats),
        "Buffer.to": Row(lambda a: buf.to(a["target"]), {"target": (cpu, "device")}, state=stats),
        "DevicePinnedBuffer": Row(lambda a: d.DevicePinnedBuffer(DType.int8, (2,), a["device"]),
                                  {"device": (cpu, "opt_device")}, state=stats),
        "DevicePinnedBuffer.zeros": Row(lambda a: d.DevicePinnedBuffer.zeros((2,), DType.int8, a["device"]),
                                        {"device": (cpu, "opt_device")}, state=stats),
        "Buffer.inplace_copy_from": Row(lambda a: buf.inplace_copy_from(a["src"]),
                                        {"src": (d.Buffer(DType.int32, (4,)), "buffer")}),
        "Buffer.view": Row(lambda a: buf.view(a["dtype"], a["shape"]),
                           {"dtype": (DType.int32, "dtype"), "shape": ((4,), "shape")}),
        "batch_inplace_copy": Row(lambda a: d.batch_inplace_copy(a["dsts"], a["srcs"]),
                                  {"dsts": ([buf], "buffer_list"), "srcs": ([d.Buffer(DType.int32, (4,))], "buffer_list")}),
        "copy_pinned_to_destinations": Row(lambda a: d.copy_pinned_to_destinations(a["source"], a["destinations"]),
                                           {"source": (d.Buffer(DType.int32, (4,)), "buffer"),
                                            "destinations": ([buf], "buffer_list")}),
        "HostHazardCompletion.record_on": Row(lambda a: d.HostHazardCompletion.record_on(a["queue"]),
                                              {"queue": (q, "queue")}),
        "HostHazardCompletion.poisoned": Row(lambda a: d.HostHazardCompletion.poisoned(a["queue"], a["error"]),
                                             {"queue": (q, "queue"), "error": ("e", "str")}),
        "SymmetricPool.is_supported": Row(lambda a: d.SymmetricPool.is_supported(a["devices"]),
                                          {"devices": ([cpu], "device_list")}),
        "SymmetricPool.allocate": Row(lambda a: d.SymmetricPool.allocate(a["devices"], a["byte_size"]),
                                      {"devices": ([cpu], "device_list"), "byte_size": (1, "count")}),
        "SymmetricPool.lookup": Row(lambda a: d.SymmetricPool.lookup(a["devices"]),
                                    {"devices": ([cpu], "device_list")}),
        "load_max_buffer": Row(lambda a: d.load_max_buffer(a["path"]), {"path": ("/nonexistent.max", "path")}),
        "HostHazardCompletion.poison": Row(lambda a: d.HostHazardCompletion.record_on(q).poison(a["message"]),
                                           {"message": ("m", "str")}),
        # ---------------------------------------------------- virtual devices
        "set_virtual_device_count": Row(lambda a: d.set_virtual_device_count(a["count"]), {"count": (0, "int")},
                                        state=_virtual_settings),
        "set_virtual_device_api": Row(lambda a: d.set_virtual_device_api(a["api"]), {"api": ("", "str")},
                                      state=_virtual_settings),
        "set_virtual_device_target_arch": Row(lambda a: d.set_virtual_device_target_arch(a["arch"]),
                                              {"arch": ("", "str")}, state=_virtual_settings),
        "set_virtual_cpu_target": Row(lambda a: d.set_virtual_cpu_target(a["cpu"]), {"cpu": ("", "str")},
                                      state=_virtual_settings),
        "calculate_virtual_device_count": Row(lambda a: d.calculate_virtual_device_count(a["device_spec_lists"]),
                                              {"device_spec_lists": ([d.DeviceSpec.cpu()], "spec_list")}),
        "load_devices": Row(lambda a: d.load_devices(a["device_specs"]),
                            {"device_specs": ([d.DeviceSpec.cpu()], "spec_list")}),
        "devices_exist": Row(lambda a: d.devices_exist(a["devices"]), {"devices": ([d.DeviceSpec.cpu()], "spec_list")}),
        "calculate_virtual_device_count_from_cli": Row(
            lambda a: d.calculate_virtual_device_count_from_cli(a["device_inputs"]),
            {"device_inputs": ("gpu:0", "cli_input")}),
        # ------------------------------------------------------------ traces
        "begin_launch_trace": Row(lambda a: d.begin_launch_trace(a["include_host"]),
                                  {"include_host": (False, "bool")}),
        "launch_trace": Row(lambda a: _enter(d.launch_trace(a["include_host"])), {"include_host": (False, "bool")}),
        # ---------------------------------------------------------- profiler
        "set_gpu_profiling_state": Row(lambda a: p.set_gpu_profiling_state(a["state"]), {"state": ("off", "str")},
                                       state=p.is_profiling_enabled),
        "Trace": Row(lambda a: p.Trace(a["message"]), {"message": ("m", "str")}),
        "Tracer": Row(lambda a: p.Tracer(a["message"], a["color"]),
                      {"message": (None, "opt_str"), "color": ("modular_purple", "str")}),
        "Tracer.push": Row(lambda a: p.Tracer().push(a["message"], a["color"]),
                           {"message": (None, "opt_str"), "color": ("modular_purple", "str")}),
        "Tracer.next": Row(lambda a: p.Tracer().next(a["message"], a["color"]),
                           {"message": ("m", "opt_str"), "color": ("modular_purple", "str")}),
        "OneShotCapture": Row(lambda a: p.OneShotCapture(top_n=a["top_n"]), {"top_n": (15, "count")}),
        "profiled_region": Row(lambda a: _enter(p.profiled_region(top_n=a["top_n"])), {"top_n": (15, "count")}),
        "traced": Row(lambda a: p.traced(lambda: None, message=a["message"], color=a["color"]),
                      {"message": (None, "opt_str"), "color": ("modular_purple", "str")}),
    }
    if module is None:
        del rows["Module.kernel"]
        rows["Device.load_module"].params["source"] = ("/nonexistent", "path")
    return rows


def _cases():
    for name, row in _rows().items():
        for param, (_, kind) in row.params.items():
            for i in range(len(bad_values(kind))):
                yield pytest.param(name, param, i, id=f"{name}-{param}-{kind}{i}")


@pytest.mark.parametrize("name, param, index", list(_cases()))
def test_a_wrongly_typed_argument_is_refused_by_name(name, param, index):
    row = _rows()[name]
    value, errors = bad_values(row.params[param][1])[index]
    args = {k: v for k, (v, _) in row.params.items()}
    args[param] = value
    before = row.state() if row.state else None
    try:
        with pytest.raises(errors) as info:
            row.call(args)
    finally:
        d.take_launch_trace()
    text = str(info.value)
    assert param in text, f"{name}({param}={value!r}): {type(info.value).__name__}: {text}"
    assert not any(m in text for m in PYBIND11_DEFAULTS), text
    if row.state:
        assert row.state() == before, f"{name}({param}={value!r}) changed state"


# Public callables with no parameter a user passes (properties without a
# setter are not callables and are not listed at all).
NO_ARGUMENTS = {
    "accelerator_api", "accelerator_architecture_name", "accelerator_count", "enable_all_peer_access",
    "get_virtual_cpu_target", "get_virtual_device_api", "get_virtual_device_count",
    "get_virtual_device_target_arch", "is_virtual_device_mode", "scan_available_devices", "take_launch_trace",
    "is_profiling_enabled", "default_profile_output", "detect_backend",
    "Device.synchronize", "DeviceQueue.synchronize", "DeviceEvent.synchronize", "DeviceEvent.is_ready",
    "CompletionFlag.load", "CompletionFlag.reset", "Program.compile", "Buffer.to_numpy", "Buffer.item",
    "Buffer.contiguous", "HostHazardCompletion.is_ready", "HostHazardCompletion.wait", "Trace.mark",
    "Tracer.pop", "Tracer.cleanup", "Tracer.mark", "OneShotCapture.start", "OneShotCapture.end_and_finalize",
}
# Public names the sweep does not call, and why.
NOT_WALKED = {
    # exception classes: constructed by axl with a message, like any exception
    **dict.fromkeys(["AxlError", "AxlTimeoutError", "BackendUnavailableError", "DeviceLostError", "ForkedError",
                     "HostHazardError", "InternalError", "InvalidArgumentError", "InvalidHandleError",
                     "InvalidStateError", "NotFoundError", "NotReadyError", "OutOfHostMemoryError",
                     "OutOfMemoryError", "OutOfRangeError", "PluginInvalidError", "UnsupportedError",
                     "VersionMismatchError"], "exception class"),
    # enum classes: the enum module's own lookup raises ValueError naming the value
    "Status": "enum", "Usage": "enum",
    "DLPackArray": "typing.Protocol, not callable",
    "cpu": "submodule", "gpu": "submodule", "oneshot": "submodule",
    # instances come from the core only (no public constructor)
    "Kernel": "no public constructor", "Module": "no public constructor",
    "LaunchTraceEntry": "made by take_launch_trace from the core's tuples",
    "ProfileBackend": "a record detect_backend returns",
    # MAX's frozen dataclass stores its fields unchecked (docs: as MAX does);
    # load_devices and devices_exist refuse what is not a DeviceSpec
    "DeviceSpec": "a dataclass, unchecked as in MAX", "DeviceSpec.cpu": "DeviceSpec(id, 'cpu')",
    "DeviceSpec.accelerator": "DeviceSpec(id, 'gpu')",
    "SymmetricPool.unicast_view": "needs a pool: 2+ accelerators with multicast (test_symmetric_pool.py)",
    "SymmetricPool.multicast_view": "needs a pool: 2+ accelerators with multicast (test_symmetric_pool.py)",
    "Device": "not constructible (TypeError, as in MAX): CPU() and Accelerator() have rows",
    "SymmetricPool": "not constructible: allocate and lookup have rows",
    "HostHazardCompletion": "not constructible: record_on and poisoned have rows",
    "DevicePinnedBuffer.view": "needs an accelerator (a pinned buffer); Buffer.view has a row",
    "LaunchTraceEntry.MemcpyKind": "enum", "LaunchTraceEntry.OperationKind": "enum",
    "maybe_reexec_under_nsys": "re-executes the program under nsys or starts the JSON timeline",
}


def _public_callables() -> set[str]:
    """Every public callable of axl.driver / axl.profiler: functions, classes
    (their constructors) and the methods, static methods and property setters
    each class defines itself."""
    import enum

    names = set()
    for mod in (d, p):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj):
                names.add(name)  # a module: listed in NOT_WALKED or it fails
                continue
            names.add(name)
            if not isinstance(obj, type) or issubclass(obj, (BaseException, enum.Enum)):
                continue
            for attr, raw in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(raw, property):
                    if raw.fset is not None:
                        names.add(f"{name}.{attr}=")
                elif callable(raw) or isinstance(raw, (staticmethod, classmethod)):
                    names.add(f"{name}.{attr}")
    return names


def _resolve(name: str) -> object:
    head, _, attr = name.partition(".")
    obj = getattr(d, head, None) or getattr(p, head)
    return getattr(obj, attr) if attr else obj


def test_table_is_complete():
    """A public callable without a row fails here: add its row (or its
    reason in NO_ARGUMENTS / NOT_WALKED)."""
    rows = {name.split("#")[0] for name in _rows()}
    covered = rows | NO_ARGUMENTS | set(NOT_WALKED)
    public = _public_callables()
    assert sorted(public - covered) == [], "public callables without a row"
    assert sorted(covered - public) == [], "rows for names that are not public callables"
    assert not rows & NO_ARGUMENTS


@pytest.mark.parametrize("name", sorted(_rows()))
def test_row_parameters_are_the_documented_names(name):
    """Each row's parameters are the callable's own (as inspect.signature or
    the stub _core.pyi spells them), so the message test checks the names a
    user sees."""
    target = _resolve(name.split("#")[0])
    if isinstance(target, type) and "__init__" in vars(target) and not inspect.isfunction(vars(target)["__init__"]):
        target = target.__init__  # a pybind11 constructor
    try:
        sig = inspect.signature(target)
        if any(p_.kind is p_.VAR_POSITIONAL for p_ in sig.parameters.values()):
            return  # *args: the row names the pieces
        names = set(sig.parameters)
    except (TypeError, ValueError):
        # pybind11 writes the signature as the docstring's first line(s):
        # "kernel(self: axl._core.Module, name: object) -> axl._core.Kernel"
        names = set(re.findall(r"[(,] ?(\w+): ", (target.__doc__ or "").split(") ->")[0]))
        assert names, f"{name}: no signature to check"
    missing = set(_rows()[name].params) - names
    assert not missing, f"{name}: no parameter {missing} among {sorted(names)}"


# ------------------------------------------------ what the strict casts take


def test_bool_parameters_take_bools_and_numpy_bools_only():
    cpu = d.CPU()
    assert d.DeviceEvent(cpu, enable_timing=True).enable_timing is True
    assert d.DeviceEvent(cpu, enable_timing=np.bool_(True)).enable_timing is True
    assert d.DeviceEvent(cpu, np.bool_(False)).enable_timing is False
    for truthy in (1, 1.5, "no", [1]):
        with pytest.raises(TypeError, match=r"DeviceEvent: enable_timing must be a bool, got"):
            d.DeviceEvent(cpu, enable_timing=truthy)
    d.begin_launch_trace(np.bool_(False))
    assert d.take_launch_trace() == []
    with pytest.raises(TypeError, match="begin_launch_trace: include_host must be a bool, got NoneType None"):
        d.begin_launch_trace(None)


def test_program_options_are_a_sequence_of_str():
    cpu = d.CPU()
    for options in ((), ["-DN=4"], ("-DN=4", "-O2"), iter(["-DX"])):
        d.Program("__global__ void k() {}", device=cpu, options=options)
    assert d.Program("x", device=cpu, options=("-DA", "-DB")).options == ["-DA", "-DB"]
    with pytest.raises(TypeError, match=r"Program: options must be a sequence of str, got str '-DN=4'"):
        d.Program("x", device=cpu, options="-DN=4")
    with pytest.raises(TypeError, match=r"Program: options\[1\] must be a str, got int 3"):
        d.Program("x", device=cpu, options=["-DA", 3])
    with pytest.raises(TypeError, match=r"Program: source must be a str, got bytes b'x'"):
        d.Program(b"x", device=cpu)
    with pytest.raises(TypeError, match=r"Program: device: expected an axl.driver.Device"):
        d.Program("x", device=None)


def test_wait_for_takes_one_queue_device_or_event_by_position_or_max_keyword():
    cpu = d.CPU()
    q = d.DeviceQueue(cpu)
    ev = q.record_event()
    for call in (lambda: q.wait_for(cpu.default_queue), lambda: q.wait_for(cpu), lambda: q.wait_for(ev),
                 lambda: q.wait_for(stream=cpu.default_queue), lambda: q.wait_for(device=cpu),
                 lambda: q.wait_for(event=ev)):
        call()
    q.synchronize()
    with pytest.raises(TypeError, match="exactly one of other, stream, device or event, got 2"):
        q.wait_for(q, device=cpu)
    with pytest.raises(TypeError, match="exactly one of other, stream, device or event, got 0"):
        q.wait_for()
    with pytest.raises(TypeError, match=r"wait_for: stream must be a DeviceQueue, got Accelerator|wait_for: stream "
                                        r"must be a DeviceQueue, got CPU"):
        q.wait_for(stream=cpu)
    with pytest.raises(TypeError, match=r"wait_for: device: expected an axl.driver.Device"):
        q.wait_for(device=q)
    with pytest.raises(TypeError, match=r"wait_for: other must be a DeviceQueue, a Device or a DeviceEvent, got int 3"):
        q.wait_for(3)


def test_module_kernel_name_is_a_str(example_module):
    with pytest.raises(TypeError, match=r"Module.kernel: name must be a str, got int 3"):
        example_module.kernel(3)
    with pytest.raises(TypeError, match=r"Module.kernel: name must be a str, got bytes b'saxpy'"):
        example_module.kernel(name=b"saxpy")
    assert example_module.kernel(name="saxpy").name == "saxpy"


def test_trace_names_its_parameters():
    with pytest.raises(TypeError, match=r"Trace: message must be a str, got int 3"):
        p.Trace(3)
    with pytest.raises(TypeError, match=r"Trace: color must be a str, got int 3"):
        p.Trace("m", color=3)
    with pytest.raises(ValueError, match=r"Trace: message contains an embedded null character"):
        p.Trace("a\x00b")
    assert p.Trace("m", "red").message == "m"


# pybind11's int caster takes True as 1: every int argument converted by the
# binding refuses a bool, as shapes and byte sizes do.
def test_bools_are_not_ints():
    from axl.driver import CompletionFlag
    flag = CompletionFlag(d.CPU())
    with pytest.raises(TypeError, match="value must be an int"):
        flag.signal(True)
    assert flag.load() == 0
    with pytest.raises(TypeError, match="value must be an int"):
        d.CPU().default_queue.wait_for_host_value(flag, True)
