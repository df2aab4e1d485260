"""Checks of Python-side arguments, each refusing a wrong type with a
TypeError that names the argument and the value (issue 14), before any work
is done. The native entry points do the same in C++ (python/src/common.hpp:
arg_as, arg_str, arg_bool); these are for entries written in Python."""

from __future__ import annotations

import os

from .. import _core


def _got(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


# An integer (anything with ``__index__``, numpy's too) but a bool, which is
# an int to Python and a mistake as a count or an id; otherwise a TypeError
# naming ``what`` and the value. The native rule itself (python/src/common.hpp,
# arg_index), so Python and C++ entries cannot drift apart.
index = _core._arg_index  # (value: object, what: str) -> int


def fspath(value: object, what: str) -> str | bytes:
    """A path: a str, bytes or os.PathLike (``os.fspath``'s rule)."""
    try:
        return os.fspath(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be a path (str or os.PathLike), got {_got(value)}") from None


def items(value: object, cls: type, what: str) -> list:
    """A list of ``cls`` from any non-string iterable; a bare str or bytes is
    refused rather than iterated."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{what} must be a sequence of {cls.__name__}, got {_got(value)}")
    out = list(value)  # type: ignore[call-overload]
    for i, item in enumerate(out):
        if not isinstance(item, cls):
            raise TypeError(f"{what}[{i}] must be a {cls.__name__}, got {_got(item)}")
    return out
