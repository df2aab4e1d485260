"""Devices, queues, events, kernels and discovery (mirrors Modular MAX's
``max.driver``; see docs/python.md for where and why axl differs).

Quick tour::

    from axl.driver import CPU, Accelerator, accelerator_count, DeviceEvent
    dev = Accelerator() if accelerator_count() else CPU()
    q = dev.default_queue
    module = dev.load_module("libkernels.so")
    q.launch(module.kernel("saxpy"), grid, block, np.float32(2), x, y, np.uint32(n))
    q.synchronize()

Every failure of the core is an :class:`AxlError` (a ``RuntimeError``) with
the backend and its native error code; invalid arguments are also
``ValueError`` and out-of-range ids also ``IndexError``, as in MAX.
"""

from __future__ import annotations

import atexit

from .. import _core
from .._core import (
    Buffer,
    CompletionFlag,
    DeviceEvent,
    DeviceQueue,
    Kernel,
    Module,
    Program,
    accelerator_count,
    enable_all_peer_access,
    get_virtual_cpu_target,
    get_virtual_device_api,
    get_virtual_device_count,
    get_virtual_device_target_arch,
    is_virtual_device_mode,
    set_virtual_cpu_target,
    set_virtual_device_api,
    set_virtual_device_count,
    set_virtual_device_target_arch,
)
from .._errors import (
    AxlError,
    AxlTimeoutError,
    BackendUnavailableError,
    DeviceLostError,
    ForkedError,
    HostHazardError,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    InvalidStateError,
    NotFoundError,
    NotReadyError,
    OutOfHostMemoryError,
    OutOfMemoryError,
    OutOfRangeError,
    PluginInvalidError,
    Status,
    UnsupportedError,
    VersionMismatchError,
)
from . import buffer as _buffer  # noqa: F401  (adds Buffer's Python methods)
from .buffer import (
    DevicePinnedBuffer,
    HostHazardCompletion,
    Usage,
    batch_inplace_copy,
    copy_pinned_to_destinations,
)
from . import driver
from ._device import CPU, Accelerator, Device
from . import _host_func  # noqa: F401  (adds MAX's host-function entry points)
from . import _cuda_array_interface  # noqa: F401  (adds Buffer.__cuda_array_interface__)
from ._max_file import load_max_buffer
from ._symmetric_pool import SymmetricPool
from ._trace import LaunchTraceEntry, begin_launch_trace, launch_trace, take_launch_trace
from .driver import (
    DeviceSpec,
    accelerator_api,
    accelerator_architecture_name,
    calculate_virtual_device_count,
    calculate_virtual_device_count_from_cli,
    devices_exist,
    load_devices,
    scan_available_devices,
)

__version__ = _core.__version__

# Exit always ends: at atexit (before the interpreter finalizes and releases
# the queues it holds) the core is told the process is ending, so a queue
# gated on a flag nobody writes is abandoned after AXL_EXIT_GRACE_MS instead
# of joined forever; host functions still queued run meanwhile, while Python
# can take them. Registered at import, it runs after atexit handlers the
# program registers later, which may still use axl.
atexit.register(_core._exit_begin)
# Not part of the namespace (dir(axl.driver) lists what the module offers);
# `annotations` is the __future__ feature's name.
del atexit, annotations


def __getattr__(name: str) -> object:
    # DLPackArray, a typing.Protocol, is made on first use: importing typing
    # is a tenth of `import axl.driver` (benchmarks/python_overhead.py).
    if name == "DLPackArray":
        cls = globals()["DLPackArray"] = _buffer.DLPackArray
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy name too, so dir(), help() and completion list it before use.
    return sorted(set(globals()) | {"DLPackArray"})


# MAX's S1 name of DeviceQueue (max-driver.md: DeviceStream became
# DeviceQueue, default_stream default_queue), kept as an alias so S1 code
# runs; not in __all__, which follows the newest MAX.
DeviceStream = DeviceQueue

# Classes defined in the extension present themselves as axl.driver's.
for _cls in (Buffer, CompletionFlag, DeviceEvent, DeviceQueue, Kernel, Module, Program):
    _cls.__module__ = __name__
del _cls

__all__ = [
    # classes (MAX)
    "Accelerator",
    "Buffer",
    "CPU",
    "CompletionFlag",
    "Device",
    "DeviceEvent",
    "DeviceQueue",
    "DeviceSpec",
    "DLPackArray",
    "DevicePinnedBuffer",
    "HostHazardCompletion",
    "HostHazardError",
    "LaunchTraceEntry",
    "SymmetricPool",
    "Usage",
    # functions (MAX)
    "accelerator_api",
    "accelerator_architecture_name",
    "accelerator_count",
    "batch_inplace_copy",
    "begin_launch_trace",
    "calculate_virtual_device_count",
    "calculate_virtual_device_count_from_cli",
    "copy_pinned_to_destinations",
    "devices_exist",
    "enable_all_peer_access",
    "get_virtual_cpu_target",
    "get_virtual_device_api",
    "get_virtual_device_count",
    "get_virtual_device_target_arch",
    "is_virtual_device_mode",
    "launch_trace",
    "load_devices",
    "load_max_buffer",
    "scan_available_devices",
    "set_virtual_cpu_target",
    "set_virtual_device_api",
    "set_virtual_device_count",
    "set_virtual_device_target_arch",
    "take_launch_trace",
    # axl extensions: kernels and errors
    "Kernel",
    "Module",
    "Program",
    "AxlError",
    "AxlTimeoutError",
    "BackendUnavailableError",
    "DeviceLostError",
    "ForkedError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "InvalidStateError",
    "NotFoundError",
    "NotReadyError",
    "OutOfHostMemoryError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "PluginInvalidError",
    "Status",
    "UnsupportedError",
    "VersionMismatchError",
]
