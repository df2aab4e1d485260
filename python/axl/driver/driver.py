"""Device discovery, device specs and virtual-device counts
(MAX: ``max/driver/driver.py``, same names and behaviour).

Functions here look ``accelerator_count`` up as a module global on every
call, so tests can patch ``axl.driver.driver.accelerator_count`` the way
MAX's tests patch ``max.driver.driver.accelerator_count``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Union

from .._core import accelerator_count
from ._device import CPU, Accelerator, Device


@dataclass(frozen=True)
class DeviceSpec:
    """Names a device to load: ``DeviceSpec(id, device_type="cpu")``.

    Frozen, so specs compare by value and hash. Any ``device_type`` other
    than ``"cpu"`` is treated as an accelerator by :func:`load_device` (as in
    MAX, which does not validate it either).

    Raises:
        ValueError: ``device_type == "gpu"`` with a negative id. The message is
            MAX's, including its wording "greater than 0" although 0 is valid.
    """

    id: int
    device_type: Literal["cpu", "gpu"] = "cpu"

    def __post_init__(self) -> None:
        if self.device_type == "gpu" and self.id < 0:
            raise ValueError(f"id provided {self.id} for accelerator must always be greater than 0")

    @staticmethod
    def cpu(id: int = -1) -> DeviceSpec:
        """``DeviceSpec(id, "cpu")``."""
        return DeviceSpec(id, "cpu")

    @staticmethod
    def accelerator(id: int = 0) -> DeviceSpec:
        """``DeviceSpec(id, "gpu")``."""
        return DeviceSpec(id, "gpu")


def load_device(device_spec: DeviceSpec) -> Device:
    """The device a spec names: ``CPU()`` for cpu specs, else ``Accelerator(id)``.

    Raises:
        ValueError: ``Device {id} was requested but no devices were found.``
            (no accelerator) or ``... but only found {n} devices.``
    """
    if device_spec.device_type == "cpu":
        return CPU(device_spec.id)
    n = accelerator_count()
    if device_spec.id >= n:
        if n == 0:
            raise ValueError(f"Device {device_spec.id} was requested but no devices were found.")
        raise ValueError(f"Device {device_spec.id} was requested but only found {n} devices.")
    return Accelerator(device_spec.id)


def load_devices(device_specs: Sequence[DeviceSpec]) -> list[Device]:
    """``[load_device(s) for s in device_specs]``; the first failure propagates."""
    return [load_device(spec) for spec in device_specs]


def scan_available_devices() -> list[DeviceSpec]:
    """``[DeviceSpec.accelerator(i) for i in range(n)]`` for n accelerators, or
    ``[DeviceSpec.cpu()]`` when there is none (the CPU is never listed next
    to accelerators). Initialises no backend."""
    n = accelerator_count()
    if n == 0:
        return [DeviceSpec.cpu()]
    return [DeviceSpec.accelerator(i) for i in range(n)]


def devices_exist(devices: list[DeviceSpec]) -> bool:
    """True iff every non-cpu spec is among :func:`scan_available_devices`
    (cpu specs always exist; an empty list is True)."""
    available = set(scan_available_devices())
    return all(d.device_type == "cpu" or d in available for d in devices)


def accelerator_api() -> str:
    """``Accelerator().api`` when there is an accelerator, else ``"cpu"``."""
    if accelerator_count() > 0:
        return Accelerator().api
    return CPU().api


def accelerator_architecture_name() -> str:
    """``Accelerator().architecture_name``; on a CPU-only host this raises,
    as in MAX, because the CPU has no architecture name.

    Raises:
        UnsupportedError: (a RuntimeError) on a host without accelerators.
    """
    if accelerator_count() > 0:
        return Accelerator().architecture_name
    return CPU().architecture_name


def calculate_virtual_device_count(*device_spec_lists: Sequence[DeviceSpec]) -> int:
    """``max(1, 1 + the largest accelerator id)`` over all the lists; cpu specs
    are ignored; no accelerator spec gives 1. Example:
    ``([DeviceSpec.accelerator(3)], [DeviceSpec.accelerator(1)])`` -> 4."""
    max_id = -1
    for specs in device_spec_lists:
        for spec in specs:
            if spec.device_type == "gpu":
                max_id = max(max_id, spec.id)
    return max(1, max_id + 1)


def calculate_virtual_device_count_from_cli(*device_inputs: Union[str, list[int]]) -> int:
    """The virtual device count for raw ``--devices`` inputs, before parsing.

    MAX's grammar, each input on its own (``max_id`` starts at -1; the result
    is ``max(1, max_id + 1)``):

    * a non-empty list of ints: its largest id; an empty list is ignored;
    * exactly ``"gpu"`` (case-sensitive): id 0;
    * ``"gpu:all"`` (any case): ``accelerator_count() - 1``;
    * ``"gpu:<ids>"`` (any case): the comma-separated ids, each stripped;
      empty parts and ``"all"`` are skipped, not expanded;
    * anything else (``"cpu"``, ``"GPU"``, ``"gpu0"``, ints) is ignored.

    Examples: ``"gpu:0,3"`` -> 4; ``"GPU:2"`` -> 3; ``"gpu:1,all"`` -> 2;
    ``("gpu:1", [5])`` -> 6.

    Raises:
        ValueError: an id part that is not an integer (MAX lets ``int()``'s
            bare error through; axl names the input and the part).
    """
    max_id = -1
    for item in device_inputs:
        if isinstance(item, list):
            if item:
                max_id = max(max_id, max(item))
        elif isinstance(item, str):
            if item == "gpu":
                max_id = max(max_id, 0)
            elif item.lower() == "gpu:all":
                max_id = max(max_id, accelerator_count() - 1)
            elif item.lower().startswith("gpu:"):
                for part in item.split(":", 1)[1].split(","):
                    part = part.strip()
                    if not part or part.lower() == "all":
                        continue
                    try:
                        value = int(part)
                    except ValueError:
                        raise ValueError(
                            f"device input {item!r}: {part!r} is not an accelerator id (expected an integer)"
                        ) from None
                    max_id = max(max_id, value)
    return max(1, max_id + 1)


__all__ = [
    "DeviceSpec",
    "accelerator_api",
    "accelerator_architecture_name",
    "accelerator_count",
    "calculate_virtual_device_count",
    "calculate_virtual_device_count_from_cli",
    "devices_exist",
    "load_device",
    "load_devices",
    "scan_available_devices",
]
