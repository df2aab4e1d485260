"""``SymmetricPool`` (MAX ``max.driver.SymmetricPool``, spec 2.7): one
symmetric allocation per set of devices, with a unicast view (the device's
own copy) and a multicast view per device.

Where it exists: the virtual backend emulates it for two or more virtual
devices, so the pool's semantics (registry per device set, sizes, views,
aliasing, lifetime) are tested without hardware. CUDA multicast objects
(``cuMulticastCreate`` and friends) need plugin ABI slots that do not exist
yet, so ``is_supported`` is False for cuda devices, as for every other
backend: it answers what axl can do, not what the hardware could.

Emulation: each device gets two allocations of the pool's reservation (the
size rounded up to the multicast granularity, as CUDA rounds it), one behind
the unicast view and one behind the multicast view, so the two views have
distinct addresses. A write through a multicast view is not broadcast to the
other devices (the virtual backend runs no kernels, and a copy into a Buffer
cannot fan out); MAX leaves host access to a multicast view undefined.
Memory is never freed: a pool lives as long as the process (MAX: dropping
the handle does not free it).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence

from .._core import Buffer
from ..dtype import DType
from ._device import Device

# CUDA's usual multicast granularity (CU_MULTICAST_GRANULARITY_RECOMMENDED
# on Hopper); the emulation reserves as much so byte_size is not the
# reservation there either.
_GRANULARITY = 2 << 20
_EMULATING_BACKENDS = frozenset({"virtual"})
# The largest flat uint8 Buffer: a shape entry is an int64 (axl.h).
_MAX_BYTES = (1 << 63) - 1


def _reservation(byte_size: int) -> int:
    return -(-byte_size // _GRANULARITY) * _GRANULARITY


class _Allocation:
    """The memory of one pool: per device, the unicast and multicast
    buffers of the reservation."""

    def __init__(self, devices: tuple[Device, ...], byte_size: int):
        reserved = _reservation(byte_size)
        self.devices = devices
        self.byte_size = byte_size
        self.unicast = {d: Buffer(DType.uint8, (reserved,), d) for d in devices}
        self.multicast = {d: Buffer(DType.uint8, (reserved,), d) for d in devices}


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


def _distinct_device_set(devices: Any, what: str) -> tuple[tuple[Device, ...], frozenset[Device]]:
    """_device_set of a list that names each device once: allocate and
    lookup share this rule, so a list allocate refuses ([a, a, b]) does not
    find the pool of {a, b} either."""
    devs, key = _device_set(devices, what)
    reason = _duplicate_reason(devs)
    if reason is not None:
        raise RuntimeError(f"SymmetricPool.{what}: {reason}")
    return devs, key


def _byte_size(byte_size: Any) -> int:
    """allocate's byte_size as an int: any integer with __index__ (numpy's
    too, as the rest of axl takes them); bool is refused, as a size of True
    is a mistake. One whose reservation (rounded up to the granularity)
    cannot be a Buffer's size (2^63 - 1 bytes at most) is refused naming
    byte_size itself, rather than by the Buffer naming the rounded figure;
    it is an allocation that cannot succeed, MAX's RuntimeError."""
    try:
        if isinstance(byte_size, bool):
            raise TypeError
        byte_size = operator.index(byte_size)
    except TypeError:
        raise TypeError(f"SymmetricPool.allocate: byte_size must be an int, got {type(byte_size).__name__} "
                        f"{byte_size!r}") from None
    if byte_size <= 0:
        raise ValueError(f"SymmetricPool.allocate: byte_size must be positive, got {byte_size}")
    if _reservation(byte_size) > _MAX_BYTES:
        raise RuntimeError(f"SymmetricPool.allocate: byte_size {byte_size} is too large: rounded up to the "
                           f"multicast granularity ({_GRANULARITY} bytes) it exceeds the largest buffer, "
                           f"{_MAX_BYTES} bytes")
    return byte_size


def _unsupported_reason(devs: tuple[Device, ...]) -> str | None:
    reason = _duplicate_reason(devs)
    if reason is not None:
        return reason
    if len(devs) < 2:
        return f"a symmetric pool needs at least 2 devices, got {len(devs)}"
    for d in devs:
        if d.is_host or d._h.backend not in _EMULATING_BACKENDS:
            return (f"{d} ({d.api} backend) has no multicast support in axl (only the virtual backend's "
                    "emulation: CUDA multicast objects need plugin ABI slots that do not exist yet)")
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
