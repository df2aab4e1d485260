"""Device discovery, device specs and virtual-device counts
(MAX: ``max/driver/driver.py``, same names and behaviour).

Functions here look ``accelerator_count`` up as a module global on every
call, so tests can patch ``axl.driver.driver.accelerator_count`` the way
MAX's tests patch ``max.driver.driver.accelerator_count``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from .. import _core
from .._core import accelerator_count
from . import _args
from ._device import CPU, Accelerator, Device

# Annotations name nothing from typing, so typing.get_type_hints and
# inspect.signature(eval_str=True) resolve them in these globals while
# `import axl.driver` stays free of typing (benchmarks/python_overhead.py
# prints the startup ratio). A type checker sees MAX's Literal for a device
# type; at run time the name is str, which is what DeviceSpec accepts (it
# does not validate, nor does MAX).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    _DeviceType = Literal["cpu", "gpu"]
else:
    _DeviceType = str


class _DataclassFields:
    """``__dataclass_fields__`` / ``__dataclass_params__`` of a class written
    out by hand as a frozen dataclass. On first read each is taken from a real
    ``@dataclass(frozen=True)`` twin (same annotations and defaults) and
    stored on the class in place of this descriptor, so ``dataclasses``'
    functions (``is_dataclass``, ``fields``, ``replace``, ``asdict``) see what
    the decorator would have made. Why not the decorator: ``dataclasses``
    imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``), about as
    much as the rest of ``import axl.driver`` together
    (benchmarks/python_overhead.py prints the startup ratio)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        # The class written out, not the one the attribute is later read
        # through: an undecorated subclass inherits its base's fields, as it
        # would from a real dataclass, whatever it annotates itself.
        self.cls = owner

    def __get__(self, obj: object, owner: type) -> object:
        import dataclasses

        cls = self.cls
        namespace = {k: cls.__dict__[k] for k in cls.__annotations__ if k in cls.__dict__}
        namespace["__annotations__"] = dict(cls.__annotations__)
        twin = dataclasses.dataclass(frozen=True)(type(cls.__name__, (), namespace))
        for attr in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(cls, attr, getattr(twin, attr))
        return getattr(owner, self.name)


class DeviceSpec:
    """Names a device to load: ``DeviceSpec(id, device_type="cpu")``.

    Frozen, so specs compare by value and hash. Any ``device_type`` other
    than ``"cpu"`` is treated as an accelerator by :func:`load_device` (as in
    MAX, which does not validate it either).

    MAX's ``@dataclass(frozen=True)``, written out (the methods are what the
    decorator generates; tests/python/test_discovery.py compares them with a
    decorated twin) so that importing axl does not import ``dataclasses``.

    Raises:
        ValueError: ``device_type == "gpu"`` with a negative id. The message is
            MAX's, including its wording "greater than 0" although 0 is valid.
    """

    id: int
    device_type: _DeviceType = "cpu"

    __dataclass_fields__ = _DataclassFields()
    __dataclass_params__ = _DataclassFields()
    __match_args__ = ("id", "device_type")

    def __init__(self, id: int, device_type: _DeviceType = "cpu") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "device_type", device_type)
        self.__post_init__()

    def __post_init__(self) -> None:
        if self.device_type == "gpu" and self.id < 0:
            raise ValueError(f"id provided {self.id} for accelerator must always be greater than 0")

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(id={self.id!r}, device_type={self.device_type!r})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.id, self.device_type) == (other.id, other.device_type)  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.id, self.device_type))

    def __setattr__(self, name: str, value: object) -> None:
        if type(self) is DeviceSpec or name in DeviceSpec.__match_args__:
            import dataclasses

            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if type(self) is DeviceSpec or name in DeviceSpec.__match_args__:
            import dataclasses

            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super().__delattr__(name)

    @staticmethod
    def cpu(id: int = -1) -> DeviceSpec:
        """``DeviceSpec(id, "cpu")``."""
        return DeviceSpec(id, "cpu")

    @staticmethod
    def accelerator(id: int = 0) -> DeviceSpec:
        """``DeviceSpec(id, "gpu")``."""
        return DeviceSpec(id, "gpu")


def _spec_list(specs: object, what: str) -> list[DeviceSpec]:
    # MAX reads a wrong entry's attributes and fails with an AttributeError
    # from inside; refused here naming the argument instead.
    return _args.items(specs, DeviceSpec, what)


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
    return [load_device(spec) for spec in _spec_list(device_specs, "load_devices: device_specs")]


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
    devices = _spec_list(devices, "devices_exist: devices")
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
        for spec in _spec_list(specs, "calculate_virtual_device_count: device_spec_lists"):
            if spec.device_type == "gpu":
                max_id = max(max_id, spec.id)
    return max(1, max_id + 1)


_CLI_WHAT = "calculate_virtual_device_count_from_cli: device_inputs"


def _cli_list_text(ids: list) -> str:
    """A list of ids as the CLI string the core reads (``[1, 5]`` ->
    ``"gpu:1,5"``), so one grammar, in the core, range-checks list ids and
    string ids alike. Elements must be ints (``__index__``, so numpy integers
    pass); bool is refused although it is an int, as ``[True]`` is not an id."""
    parts = []
    for x in ids:
        if isinstance(x, bool):
            raise TypeError(f"{_CLI_WHAT}: device list {ids!r}: {x!r} is a bool, not an accelerator id (expected an int)")
        try:
            parts.append(str(operator.index(x)))
        except TypeError:
            raise TypeError(
                f"{_CLI_WHAT}: device list {ids!r}: {x!r} ({type(x).__name__}) is not an accelerator id (expected an int)"
            ) from None
    return "gpu:" + ",".join(parts)


def calculate_virtual_device_count_from_cli(*device_inputs: str | list[int]) -> int:
    """The virtual device count for raw ``--devices`` inputs, before parsing.

    MAX's grammar, each input on its own (``max_id`` starts at -1; the result
    is ``max(1, max_id + 1)``):

    * a non-empty list of ints: its largest id; an empty list is ignored;
    * exactly ``"gpu"`` (case-sensitive): id 0;
    * ``"gpu:all"`` (any case): ``accelerator_count() - 1``;
    * ``"gpu:<ids>"`` (any case): the comma-separated ids, each stripped of
      spaces and tabs; empty parts and ``"all"`` are skipped, not expanded;
    * anything else (``"cpu"``, ``"GPU"``, ``"gpu0"``, ints) is ignored.

    Ids are read by the core (``axl_calculate_virtual_device_count_from_cli``),
    the same reader as device specs: ASCII digits with an optional sign, within
    int32 (the C ABI's id type). So, unlike MAX's ``int()``, ``"gpu:1_000"``
    and non-ASCII digits are refused, and no id wraps the count.

    Examples: ``"gpu:0,3"`` -> 4; ``"GPU:2"`` -> 3; ``"gpu:1,all"`` -> 2;
    ``("gpu:1", [5])`` -> 6.

    Raises:
        ValueError: an id part that is not an integer, or one outside int32
            (axl names the input and the part; MAX lets ``int()``'s bare
            error through); a string with an embedded NUL.
        TypeError: a list element that is not an int, or is a bool.
    """
    texts: list[str] = []
    count_all = False
    for item in device_inputs:
        if isinstance(item, list):
            if item:
                text = _cli_list_text(item)
                try:
                    _core._calculate_virtual_device_count_from_cli([text])
                except ValueError as e:
                    raise ValueError(f"device list {item!r}: {e}") from None
                texts.append(text)
        elif isinstance(item, str):
            # gpu:all is counted here, not in the core, only so that it reads
            # this module's accelerator_count, which tests patch as MAX's
            # tests do; the test is the core's (ASCII case, no trimming).
            if item.isascii() and item.lower() == "gpu:all":
                count_all = True
            else:
                texts.append(item)
    count = _core._calculate_virtual_device_count_from_cli(texts)
    if count_all:
        count = max(count, accelerator_count())
    return count


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
