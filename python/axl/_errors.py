"""The exceptions raised for errors of the axl core and its backends.

Every error that comes out of libaxl is an :class:`AxlError`, a
``RuntimeError`` carrying the core's detail: ``status`` (an :class:`Status`),
``backend`` (plugin name, ``""`` for the core itself), ``native_code`` and
``native_name`` (the vendor's code, e.g. ``CUDA_ERROR_OUT_OF_MEMORY``) and
``detail`` (the core's message). One base class means one ``except`` clause
catches every backend's failures, however the backend words them.

Where MAX raises a builtin type, the axl class also derives from it, so code
written for MAX keeps working:

* invalid argument -> :class:`InvalidArgumentError` (``AxlError``, ``ValueError``)
* out of range     -> :class:`OutOfRangeError` (``AxlError``, ``IndexError``)
* unsupported      -> :class:`UnsupportedError` (``AxlError``, ``NotImplementedError``)
* anything else    -> a ``RuntimeError`` subclass named after the status.

The price of this design: an ``InvalidArgumentError`` is also a
``RuntimeError``, so ``except RuntimeError`` catches it too.
"""

from __future__ import annotations

import enum

from . import _core


def _status_members() -> list[tuple[str, int]]:
    # status.h's list as the extension was built with it: AXL_SUCCESS ->
    # SUCCESS, AXL_ERROR_DEVICE_LOST -> DEVICE_LOST.
    return [
        (name.removeprefix("AXL_ERROR_").removeprefix("AXL_"), value)
        for value, name in _core.status_table()
    ]


# Built from the core's list rather than written out, so a code added to
# status.h is a member here without a second list to keep in step.
Status = enum.IntEnum("Status", _status_members(), module=__name__, qualname="Status")
Status.__doc__ = """``axl_status`` codes (axl/status.h). Append-only; never renumbered."""


def _status(value: int) -> Status | int:
    try:
        return Status(value)
    except ValueError:  # a newer core's code this package does not know
        return value


class AxlError(RuntimeError):
    """An error reported by the axl core or one of its backends.

    Attributes:
        detail: the core's message (what happened, and usually what to do).
        status: the :class:`Status` code.
        status_name: e.g. ``"AXL_ERROR_DEVICE_LOST"``.
        backend: the plugin that failed (``"cuda"``, ``"virtual"``, ...), or
            ``""`` when the core itself refused the call.
        native_code: the vendor's numeric code (0 if none).
        native_name: the vendor's code name (``""`` if none).

    ``str(error)`` is the detail followed by ``[status, backend, native]``.
    """

    def __init__(
        self,
        detail: str = "",
        status: int = Status.INTERNAL,
        backend: str = "",
        native_code: int = 0,
        native_name: str = "",
    ) -> None:
        self.detail = detail
        self.status = _status(status)
        self.status_name = _core.status_name(int(status))
        self.backend = backend
        self.native_code = native_code
        self.native_name = native_name
        parts = [self.status_name]
        if backend:
            parts.append(f"backend '{backend}'")
        if native_name or native_code:
            parts.append(f"native {native_name or 'code'} ({native_code})")
        super().__init__(f"{detail} [{', '.join(parts)}]")

    def __reduce__(self):
        # Keyword-built exceptions do not pickle by default; multiprocessing
        # needs them to.
        return (
            type(self),
            (self.detail, int(self.status), self.backend, self.native_code, self.native_name),
        )


class InvalidArgumentError(AxlError, ValueError):
    """A malformed argument (AXL_ERROR_INVALID_ARGUMENT). Also a ValueError."""


class OutOfRangeError(AxlError, IndexError):
    """An index or id past the end (AXL_ERROR_OUT_OF_RANGE). Also an IndexError."""


class NotFoundError(AxlError):
    """A named thing does not exist, e.g. a kernel name (AXL_ERROR_NOT_FOUND)."""


class UnsupportedError(AxlError, NotImplementedError):
    """The backend does not implement the operation (AXL_ERROR_UNSUPPORTED)."""


class OutOfMemoryError(AxlError):
    """Device memory is exhausted (AXL_ERROR_OUT_OF_DEVICE_MEMORY)."""


class OutOfHostMemoryError(OutOfMemoryError):
    """Host memory is exhausted (AXL_ERROR_OUT_OF_HOST_MEMORY)."""


class NotReadyError(AxlError):
    """The work has not finished (AXL_ERROR_NOT_READY), e.g. elapsed_time of a running event."""


class DeviceLostError(AxlError):
    """The device failed or disappeared; its objects are unusable (AXL_ERROR_DEVICE_LOST)."""


class BackendUnavailableError(AxlError):
    """The backend cannot run here: no driver, stub library, no device (AXL_ERROR_BACKEND_UNAVAILABLE)."""


class VersionMismatchError(AxlError):
    """Plugin and core ABI versions disagree (AXL_ERROR_VERSION_MISMATCH)."""


class ForkedError(AxlError):
    """The backend was initialised before fork(); use spawn (AXL_ERROR_FORKED)."""


class HostHazardError(AxlError):
    """Host access to a buffer whose producing device work failed (AXL_ERROR_HOST_HAZARD).

    ``backend``, ``native_code`` and ``native_name`` are those of the failure
    that caused it (also when it was asynchronous and this host access is the
    first to see it); ``""`` and 0 only for an application's own poison.

    MAX: ``max.driver.HostHazardError`` (a RuntimeError).
    """


class InternalError(AxlError):
    """A bug in axl or a backend: a broken invariant (AXL_ERROR_INTERNAL)."""


class InvalidHandleError(AxlError):
    """A handle that is NULL, released or of the wrong kind (AXL_ERROR_INVALID_HANDLE)."""


class InvalidStateError(AxlError):
    """Not valid in the object's state, e.g. elapsed_time of an unrecorded event (AXL_ERROR_INVALID_STATE)."""


class AxlTimeoutError(AxlError):
    """A wait with a deadline ran out (AXL_ERROR_TIMEOUT).

    Not a builtin ``TimeoutError``: that one is an ``OSError`` and cannot
    share a base with ``RuntimeError``.
    """


class PluginInvalidError(AxlError):
    """A broken or shadowed plugin (AXL_ERROR_PLUGIN_INVALID)."""


# The Python class of each error code, by the core's name without the
# AXL_ERROR_ prefix. Python-specific (which builtin each class also derives
# from), so it stays here; tests/python/test_errors.py fails when a code of
# the core has no entry or an entry names no code.
ERROR_TYPES_BY_NAME: dict[str, type[AxlError]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "OUT_OF_RANGE": OutOfRangeError,
    "NOT_FOUND": NotFoundError,
    "UNSUPPORTED": UnsupportedError,
    "OUT_OF_DEVICE_MEMORY": OutOfMemoryError,
    "OUT_OF_HOST_MEMORY": OutOfHostMemoryError,
    "NOT_READY": NotReadyError,
    "DEVICE_LOST": DeviceLostError,
    "BACKEND_UNAVAILABLE": BackendUnavailableError,
    "VERSION_MISMATCH": VersionMismatchError,
    "FORKED": ForkedError,
    "HOST_HAZARD": HostHazardError,
    "INTERNAL": InternalError,
    "INVALID_HANDLE": InvalidHandleError,
    "INVALID_STATE": InvalidStateError,
    "TIMEOUT": AxlTimeoutError,
    "PLUGIN_INVALID": PluginInvalidError,
}

# A code without a class raises the AxlError base (set_python_error's
# fallback); a name the core does not have is skipped here and reported by
# the test.
ERROR_TYPES: dict[Status, type[AxlError]] = {
    Status[name]: cls for name, cls in ERROR_TYPES_BY_NAME.items() if name in Status.__members__
}

_core._set_error_types(AxlError, {int(k): v for k, v in ERROR_TYPES.items()})
