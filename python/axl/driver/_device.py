"""Device, CPU and Accelerator (MAX: ``max.driver.Device`` and subclasses).

Each core device has exactly one Python object for the life of the process:
``Accelerator() is Accelerator(0)``, however often it is called. The cache
lives in the extension (keyed by the core's device handle, so it stays right
when virtual-device mode changes which devices the accelerator ids name);
the classes here only give the handle MAX's surface.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .. import _core
from . import _args
from .._core import DeviceQueue, Kernel, Module
from .._errors import Status, UnsupportedError

# Annotations (strings here) name only what this module imports, and nothing
# from typing: typing.get_type_hints and inspect.signature(eval_str=True)
# resolve them in these globals, and importing typing would cost `import
# axl.driver` about a tenth (benchmarks/python_overhead.py prints it).


class Device:
    """A device: the host CPU or an accelerator (MAX: ``max.driver.Device``).

    Not constructible: use :class:`CPU`, :class:`Accelerator`, or
    ``load_device(DeviceSpec)``. Equal devices are the same object; devices
    hash and compare by identity of the underlying core device.
    """

    __slots__ = ("_h", "_default_queue", "__weakref__")
    _h: _core.DeviceHandle
    _default_queue: DeviceQueue | None

    def __new__(cls, *args: object, **kwargs: object) -> Device:
        raise TypeError(
            "Device cannot be constructed directly; use CPU() or Accelerator(id), "
            "or load_device(DeviceSpec)"
        )

    # ---------------------------------------------------------- properties
    @property
    def label(self) -> str:
        """``"cpu"`` for the host, ``"gpu"`` for accelerators (``f"{label}:{id}"`` names a device)."""
        return self._h.label

    @property
    def api(self) -> str:
        """``"cpu"``, ``"cuda"``, ``"hip"``, ``"metal"``, or what a plugin reports."""
        return self._h.api

    @property
    def architecture_name(self) -> str:
        """E.g. ``"sm_90"`` or ``"gfx942"``.

        Raises:
            UnsupportedError: (a RuntimeError) for the CPU, which has none; the
                message contains ``failed to get device architecture name``
                as MAX's does.
        """
        arch = self._h.architecture_name
        if not arch:
            raise UnsupportedError(
                f"failed to get device architecture name: {self} (api '{self.api}') has none",
                Status.UNSUPPORTED,
                self._h.backend,
            )
        return arch

    @property
    def model_name(self) -> str:
        """Marketing name, e.g. ``"NVIDIA H200"``; the CPU model for the host."""
        return self._h.model_name

    @property
    def id(self) -> int:
        """Zero-based accelerator ordinal; always 0 for the CPU."""
        return self._h.id

    @property
    def is_host(self) -> bool:
        """True for the CPU device."""
        return self._h.is_host

    @property
    def is_host_unified(self) -> bool:
        """True when device and host share one physical memory pool (True for the CPU)."""
        return self._h.is_host_unified

    @property
    def is_compatible(self) -> bool:
        """True when axl supports running work on this device."""
        return self._h.is_compatible

    @property
    def stats(self) -> Mapping[str, int]:
        """``{"free_memory": bytes, "total_memory": bytes}`` with free <= total;
        accelerators also have MAX's ``graph_mem_reserved`` and
        ``graph_mem_used`` keys, 0 (axl captures no graphs, so no memory is
        held for them)."""
        free, total = self._h.memory_info()
        if self.is_host:
            return {"free_memory": free, "total_memory": total}
        return {"free_memory": free, "total_memory": total, "graph_mem_reserved": 0, "graph_mem_used": 0}

    @property
    def max_single_alloc_size(self) -> int:
        """The largest single allocation in bytes (positive)."""
        return self._h.max_single_alloc_size

    @property
    def default_queue(self) -> DeviceQueue:
        """The queue created with the device (the same object on every access)."""
        q = self._default_queue
        if q is None:
            q = self._h.default_queue()
            self._default_queue = q
        return q

    @property
    def default_stream(self) -> DeviceQueue:
        """MAX's S1 name of :attr:`default_queue` (the same object)."""
        return self.default_queue

    # ------------------------------------------------------------- methods
    def can_access(self, other: Device) -> bool:
        """True if this device can read and write ``other``'s memory directly
        (peer access). False for a device and itself, for host devices and
        across backends, as in MAX."""
        return self._h.can_access(other)

    def synchronize(self) -> None:
        """Blocks (without the GIL) until all work on every queue of the
        device has finished; raises the first failure (an AxlError)."""
        self._h.synchronize()

    def load_module(
        self, source: str | os.PathLike | bytes | bytearray | memoryview, *, format: str | None = None
    ) -> Module:
        """Loads a backend-native module (axl extension; see docs/python.md).

        Args:
            source: a path, or the module's bytes. On the cpu backend a shared
                object whose kernels have the signature of axl/cpu_kernel.h;
                on cuda PTX, cubin or fatbin.
            format: ``"shared_object"``, ``"ptx"``, ``"cubin"``, ``"fatbin"``,
                ``"hsaco"``, ``"spirv"``, or None to let the backend detect it.

        Raises:
            InvalidArgumentError: unreadable or malformed module.
            UnsupportedError: the backend cannot load modules.
        """
        return _core._load_module(self, source, format)

    def _test_kernel(self, which: int | str) -> Kernel:
        """A backend's built-in test kernel: 0 / ``"INCREMENT_U32"`` takes
        (buffer data, uint32 n) and adds 1 to n uint32s; 1 / ``"FILL_U32"``
        takes (buffer data, uint32 n, uint32 value)."""
        if isinstance(which, str):
            which = {"INCREMENT_U32": 0, "FILL_U32": 1}[which.upper()]
        return _core._test_kernel(self, which)

    def _device_context_ptr(self) -> int:
        """The core device handle as an int (a per-device key)."""
        return self._h.ptr

    @staticmethod
    def cpu(id: int = -1) -> CPU:
        """The CPU device (``id`` is accepted and ignored, as in MAX)."""
        return CPU(id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self._h.ptr == other._h.ptr

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._h.ptr)

    def __str__(self) -> str:
        return f"Device(type={self._h.label},id={self._h.id})"

    __repr__ = __str__

    def __reduce__(self):
        # Devices are per-process singletons: pickling names the device.
        return (_rebuild, (self._h.label, self._h.id))


def _rebuild(label: str, id: int) -> Device:
    return CPU() if label == "cpu" else Accelerator(id)


def _device_id(id: object, where: str) -> int:
    """A device id of the type MAX's binding requires (it refuses others in
    the cast): an int32, as the core's ids are."""
    index = _args.index(id, f"{where}: id")
    if not -(2**31) <= index < 2**31:
        raise ValueError(f"{where}(id={index}): id is out of range; ids are int32 (-1 picks the first)")
    return index


class CPU(Device):
    """The host CPU (MAX: ``max.driver.CPU``). ``CPU(id=-1)``; ``id`` is
    ignored and ``CPU().id == 0``. Every call returns the same object.

    Raises:
        ValueError: no cpu plugin was found next to libaxl.so.
    """

    __slots__ = ()

    # No __init__: object.__init__ accepts the id when __new__ is overridden,
    # and one Python frame less keeps CPU() cheap.
    def __new__(cls, id: int = -1) -> CPU:
        if id.__class__ is not int or id != -1:  # CPU() costs two tests
            _device_id(id, "CPU")  # ignored, but of the type MAX's binding requires
        return _core._device_object("cpu", 0)  # type: ignore[return-value]


class Accelerator(Device):
    """An accelerator (MAX: ``max.driver.Accelerator``): any non-CPU device
    of any backend (cuda, hip, virtual, a third-party plugin); ``api`` says
    which.

    ``Accelerator(id=-1)``: ``-1`` is the first available accelerator.
    Objects are cached: ``Accelerator()`` and ``Accelerator(0)`` are the same
    object, and so are any number of repeated calls.

    Raises:
        ValueError: no accelerator with that id; the message says how many
            exist (``accelerator_count()``).
        AxlError: the device's backend failed to initialise (e.g.
            ``BackendUnavailableError`` with the driver's reason).
    """

    __slots__ = ()

    def __new__(cls, id: int = -1) -> Accelerator:
        index = _device_id(id, "Accelerator")
        return _core._device_object("gpu", index)  # type: ignore[return-value]


def _make_device(handle: _core.DeviceHandle) -> Device:
    # Called by the extension, once per core device.
    obj: Device = object.__new__(CPU if handle.is_host else Accelerator)
    obj._h = handle
    obj._default_queue = None
    return obj


_core._set_device_factory(_make_device)
