"""Annotations resolve at run time: ``typing.get_type_hints`` and
``inspect.signature(eval_str=True)`` work on every public callable, class and
method of the public modules (what pydantic, typer and sphinx's autodoc call).

The modules keep ``typing`` out of ``import axl.driver`` (startup cost), so an
annotation naming ``Any``, ``Union`` or ``Sequence`` imported only under
``TYPE_CHECKING`` is a NameError for these users; this walks them all."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing

PUBLIC_ROOTS = ("axl.driver", "axl.profiler", "axl.dtype")


def _public_modules() -> list[types.ModuleType]:
    """The roots and every submodule with no underscore-led part."""
    mods = []
    for root_name in PUBLIC_ROOTS:
        root = importlib.import_module(root_name)
        mods.append(root)
        for info in pkgutil.walk_packages(getattr(root, "__path__", []), root_name + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                mods.append(importlib.import_module(info.name))
    return mods


def _public_names(mod: types.ModuleType) -> list[str]:
    return list(getattr(mod, "__all__", None) or (n for n in vars(mod) if not n.startswith("_")))


def _functions_of(cls: type) -> list[tuple[str, object]]:
    """The Python functions of a class and of axl's classes in its MRO
    (Buffer's methods added from Python count), dunders included, with
    static/class methods and property accessors unwrapped; each named by
    the class that defines it."""
    out = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("axl"):
            continue
        where = f"{klass.__module__}.{klass.__qualname__}"
        for name, attr in vars(klass).items():
            if isinstance(attr, (staticmethod, classmethod)):
                out.append((f"{where}.{name}", attr.__func__))
            elif isinstance(attr, property):
                out += [(f"{where}.{name}.{acc}", f) for acc in ("fget", "fset", "fdel")
                        if (f := getattr(attr, acc)) is not None]
            elif inspect.isfunction(attr):
                out.append((f"{where}.{name}", attr))
    return out


def _targets() -> dict[str, object]:
    """Qualified name -> function or class, each object once."""
    found: dict[str, object] = {}
    seen: set[int] = set()

    def add(qualname: str, obj: object) -> None:
        if id(obj) not in seen and (inspect.isfunction(obj) or inspect.isclass(obj)):
            seen.add(id(obj))
            found[qualname] = obj

    for mod in _public_modules():
        for name in _public_names(mod):
            obj = getattr(mod, name)
            if not getattr(obj, "__module__", "").startswith("axl"):
                continue  # re-exported from elsewhere (e.g. enum, os)
            add(f"{mod.__name__}.{name}", obj)
            if inspect.isclass(obj):
                for qualname, fn in _functions_of(obj):
                    add(qualname, fn)
    return found


def _unresolved(obj: object) -> str | None:
    """Why obj's annotations do not resolve, or None when they do."""
    try:
        typing.get_type_hints(obj)
        if inspect.isfunction(obj):
            inspect.signature(obj, eval_str=True)
    except NameError as e:
        return f"NameError: {e}"
    return None


def test_the_check_catches_an_annotation_naming_an_unimported_type():
    # The control: an annotation of a name the module does not bind fails.
    ns: dict[str, object] = {}
    exec("from __future__ import annotations\ndef f(x: Sequence[int]) -> None: ...", ns)
    assert _unresolved(ns["f"]) == "NameError: name 'Sequence' is not defined"


def test_walk_covers_the_public_surface():
    targets = _targets()
    # The ones that broke, from each module that had them, and methods
    # reached through a class (Python methods of the extension's Buffer, a
    # dataclass-like field, a staticmethod, a property).
    for name in ("axl.driver.Buffer.zeros", "axl.driver.Buffer.to_numpy", "axl.driver.DeviceSpec",
                 "axl.driver.driver.DeviceSpec.__init__", "axl.driver._device.Device.stats.fget",
                 "axl.driver.load_devices", "axl.driver.calculate_virtual_device_count_from_cli",
                 "axl.driver.load_max_buffer", "axl.driver._symmetric_pool.SymmetricPool.allocate",
                 "axl.driver.buffer.DevicePinnedBuffer.__new__", "axl.driver.buffer.DLPackArray.__dlpack__",
                 "axl.profiler.tracing.Tracer.push", "axl.profiler.traced", "axl.dtype.DType.from_numpy"):
        assert name in targets, name
    assert len(targets) > 200, len(targets)


def test_annotations_resolve():
    failures = {name: why for name, obj in _targets().items() if (why := _unresolved(obj))}
    assert failures == {}
