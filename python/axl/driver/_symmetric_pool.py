"""``SymmetricPool`` (MAX ``max.driver.SymmetricPool``, spec 2.7): one
symmetric allocation per set of devices, with a unicast view (the device's
own copy) and a multicast view per device.

The memory is a multicast group of the core (``axl_multicast_create``,
plugin ABI 1.4's multicast slots): per device its own (unicast) memory of
the reservation, the size rounded up to the backend's multicast granularity,
and a multicast view at another address whose writes reach every device's
unicast memory. A backend provides them where its devices do: cuda through
CUDA's multicast objects (CUDA 12.1 drivers, devices with
CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, i.e. NVSwitch-connected GPUs), and
the virtual backend for any two or more virtual devices (a copy or fill into
a multicast view is broadcast, as a multicast store is), so the pool's
semantics are tested without hardware (and on cuda against the fake driver
of tests/cuda). ``is_supported`` asks the core, which asks each
device (``axl_device_multicast_supported``): it answers what axl can do
here, not what the hardware could. MAX leaves host access to a multicast
view undefined. Memory is never freed: a pool lives as long as the process
(MAX: dropping the handle does not free it).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence

from .. import _core
from .._core import Buffer
from .._errors import AxlError
from ..dtype import DType
from ._device import Device

# The largest flat uint8 Buffer: a shape entry is an int64 (axl.h). The
# backend rounds byte_size up to its multicast granularity; a rounding past
# this is the core's refusal (axl_multicast_create), named in allocate's
# message with byte_size.
_MAX_BYTES = (1 << 63) - 1


class _Allocation:
    """The memory of one pool: its multicast group and, per device, the
    unicast and multicast buffers of the reservation."""

    def __init__(self, devices: tuple[Device, ...], byte_size: int):
        self.devices = devices
        self.byte_size = byte_size
        try:
            self.group = _core._multicast_create(devices, byte_size)
        except AxlError as e:
            # The backend's message names the rounded reservation; the
            # caller's figure and devices lead, as for every other refusal.
            raise type(e)(f"SymmetricPool.allocate: byte_size {byte_size} on {list(devices)}: {e.detail}",
                          e.status, e.backend, e.native_code, e.native_name) from e
        self.unicast = {d: self.group.view(i, False, DType.uint8) for i, d in enumerate(devices)}
        self.multicast = {d: self.group.view(i, True, DType.uint8) for i, d in enumerate(devices)}


_pools: dict[frozenset[Device], _Allocation] = {}
_lock = threading.Lock()


def _device_set(devices: object, what: str) -> tuple[tuple[Device, ...], frozenset[Device]]:
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence):
        raise TypeError(f"SymmetricPool.{what}: devices must be a sequence of Device, got {type(devices).__name__}")
    devs = tuple(devices)
    for d in devs:
        if not isinstance(d, Device):
            raise TypeError(f"SymmetricPool.{what}: devices must be Device objects, got {type(d).__name__} {d!r}")
    return devs, frozenset(devs)


def _duplicate_reason(devs: tuple[Device, ...]) -> str | None:
    return f"a device is listed twice in {list(devs)}" if len(set(devs)) != len(devs) else None


def _distinct_device_set(devices: object, what: str) -> tuple[tuple[Device, ...], frozenset[Device]]:
    """_device_set of a list that names each device once: allocate and
    lookup share this rule, so a list allocate refuses ([a, a, b]) does not
    find the pool of {a, b} either."""
    devs, key = _device_set(devices, what)
    reason = _duplicate_reason(devs)
    if reason is not None:
        raise RuntimeError(f"SymmetricPool.{what}: {reason}")
    return devs, key


def _byte_size(byte_size: object) -> int:
    """allocate's byte_size as an int: any integer with __index__ (numpy's
    too, as the rest of axl takes them); bool is refused, as a size of True
    is a mistake. One no Buffer can span (2^63 - 1 bytes at most) is refused
    naming byte_size itself; it is an allocation that cannot succeed, MAX's
    RuntimeError."""
    try:
        if isinstance(byte_size, bool):
            raise TypeError
        byte_size = operator.index(byte_size)
    except TypeError:
        raise TypeError(f"SymmetricPool.allocate: byte_size must be an int, got {type(byte_size).__name__} "
                        f"{byte_size!r}") from None
    if byte_size <= 0:
        raise ValueError(f"SymmetricPool.allocate: byte_size must be positive, got {byte_size}")
    if byte_size > _MAX_BYTES:
        raise RuntimeError(f"SymmetricPool.allocate: byte_size {byte_size} is too large: it exceeds the largest "
                           f"buffer, {_MAX_BYTES} bytes")
    return byte_size


def _unsupported_reason(devs: tuple[Device, ...]) -> str | None:
    reason = _duplicate_reason(devs)
    if reason is not None:
        return reason
    if len(devs) < 2:
        return f"a symmetric pool needs at least 2 devices, got {len(devs)}"
    for d in devs:
        if d.is_host or not _core._multicast_supported(d):
            return (f"{d} ({d._h.backend} backend) has no multicast support here (its backend has no multicast "
                    "groups, or the device reports none: on cuda, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED)")
    if len({d._h.backend for d in devs}) > 1:
        return f"{list(devs)} are devices of different backends; a pool joins devices of one backend"
    return None


class SymmetricPool:
    """A handle on the symmetric allocation of one device set.

    Not constructible: use :meth:`allocate` (once per set) and :meth:`lookup`.
    Every handle of a set aliases the same memory, and dropping a handle
    frees nothing.
    """

    __slots__ = ("_alloc",)

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("SymmetricPool cannot be constructed; use SymmetricPool.allocate(devices, byte_size)")

    @classmethod
    def _handle(cls, alloc: _Allocation) -> SymmetricPool:
        pool = object.__new__(cls)
        pool._alloc = alloc
        return pool

    @staticmethod
    def is_supported(devices: Sequence[Device]) -> bool:
        """Whether a pool can be allocated for ``devices`` (at least two
        distinct devices, each with multicast support)."""
        devs, _ = _device_set(devices, "is_supported")
        return _unsupported_reason(devs) is None

    @staticmethod
    def allocate(devices: Sequence[Device], byte_size: int) -> SymmetricPool:
        """Allocates the pool of ``devices`` (order does not matter) with
        ``byte_size`` bytes on each.

        Raises:
            TypeError: ``devices`` is not a sequence of devices, or
                ``byte_size`` not an int.
            ValueError: ``byte_size`` is not positive.
            RuntimeError: a pool exists for the set already, a device listed
                twice, fewer than two devices, a device without multicast
                support, a ``byte_size`` too large for any buffer, or the
                allocation failed (an ``OutOfMemoryError``).
        """
        devs, key = _distinct_device_set(devices, "allocate")
        byte_size = _byte_size(byte_size)
        reason = _unsupported_reason(devs)
        if reason is not None:
            raise RuntimeError(f"SymmetricPool.allocate: {reason}")
        with _lock:
            if key in _pools:
                raise RuntimeError(f"SymmetricPool.allocate: a pool already exists for {list(devs)} "
                                   "(use SymmetricPool.lookup)")
            alloc = _Allocation(devs, byte_size)
            _pools[key] = alloc
        return SymmetricPool._handle(alloc)

    @staticmethod
    def lookup(devices: Sequence[Device]) -> SymmetricPool | None:
        """The pool of ``devices`` (order does not matter), or None; never
        allocates.

        Raises:
            TypeError: ``devices`` is not a sequence of devices.
            RuntimeError: a device is listed twice (as in allocate).
        """
        _, key = _distinct_device_set(devices, "lookup")
        with _lock:
            alloc = _pools.get(key)
        return None if alloc is None else SymmetricPool._handle(alloc)

    @property
    def byte_size(self) -> int:
        """The requested size in bytes (the reservation may be larger)."""
        return self._alloc.byte_size

    def _view(self, views: dict[Device, Buffer], device: Device, what: str) -> Buffer:
        buf = views.get(device) if isinstance(device, Device) else None
        if buf is None:
            raise RuntimeError(f"SymmetricPool.{what}: {device!r} is not one of the pool's devices "
                               f"{list(self._alloc.devices)}")
        return buf[: self._alloc.byte_size]

    def unicast_view(self, device: Device) -> Buffer:
        """A flat uint8 Buffer of ``byte_size`` bytes: ``device``'s own copy.

        Raises:
            RuntimeError: ``device`` is not in the pool.
        """
        return self._view(self._alloc.unicast, device, "unicast_view")

    def multicast_view(self, device: Device) -> Buffer:
        """A flat uint8 Buffer of ``byte_size`` bytes at the multicast
        address on ``device`` (distinct from the unicast view's; host access
        undefined, as in MAX).

        Raises:
            RuntimeError: ``device`` is not in the pool.
        """
        return self._view(self._alloc.multicast, device, "multicast_view")

    def __repr__(self) -> str:
        return f"SymmetricPool(devices={list(self._alloc.devices)}, byte_size={self._alloc.byte_size})"
