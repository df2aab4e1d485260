"""Spans from Python, with the names and behaviour of MAX's
``max.profiler.tracing``: :class:`Trace` (native), :class:`Tracer` (a stack
of spans opened and closed in separate calls) and :func:`traced` (a
decorator).

Spans are per thread (NVTX push/pop semantics): a :class:`Tracer` shared
between threads, or a span held across an ``await`` while other tasks run on
the same thread, pairs pushes and pops on the wrong stack, exactly as in MAX.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, TypeVar, overload

from .. import _core
from .._core import Trace

F = TypeVar("F", bound=Callable[..., Any])

is_profiling_enabled = _core._profiler_is_enabled


def _check_span_args(where: str, message: object, color: object) -> None:
    # Checked whether or not profiling is on, so that a wrong type fails the
    # same way in a run with profiling off as in one with it on (Trace, the
    # native span, refuses them with the same TypeError).
    if message is not None and not isinstance(message, str):
        raise TypeError(f"{where}: message must be a str or None, got {type(message).__name__} {message!r}")
    if not isinstance(color, str):
        raise TypeError(f"{where}: color must be a str, got {type(color).__name__} {color!r}")


def set_gpu_profiling_state(state: str, /) -> None:
    """Sets the profiling state: ``"off"``, ``"on"`` or ``"detailed"``
    (case-sensitive). Another string raises ``ValueError`` naming the three;
    a non-string ``TypeError`` (MAX's binding refuses it in the argument
    cast). Overrides ``AXL_ENABLE_PROFILING``; spans already open still close."""
    if not isinstance(state, str):
        raise TypeError(
            f"set_gpu_profiling_state: state must be a str, one of 'off', 'on', 'detailed'; got {state!r}"
        )
    _core._profiler_set_state(state)


class Tracer:
    """A stack of spans (MAX's ``Tracer``). The constructor pushes its first
    span; ``None`` placeholders keep pushes and pops balanced while profiling
    is off or when no message is given."""

    def __init__(self, message: Optional[str] = None, color: str = "modular_purple") -> None:
        self.trace_stack: list[Optional[Trace]] = []
        self.push(message, color)

    def push(self, message: Optional[str] = None, color: str = "modular_purple") -> None:
        """Opens a span on top of the stack, or a placeholder when profiling is
        off or ``message`` is None (checked on every push)."""
        # Exact-type test inline (push is per step, ~25 ns); str subclasses
        # take the slow path, which accepts them.
        if color.__class__ is not str or (message is not None and message.__class__ is not str):
            _check_span_args("Tracer.push", message, color)
        if not is_profiling_enabled() or message is None:
            self.trace_stack.append(None)
            return
        trace = Trace(message, color)
        self.trace_stack.append(trace)
        trace.__enter__()

    def pop(self, exc_type: Any = None, exc_value: Any = None, traceback: Any = None) -> None:
        """Closes the top span (a placeholder is just dropped). On an empty
        stack the list's ``IndexError`` propagates, as in MAX."""
        trace = self.trace_stack.pop()
        if trace is not None:
            trace.__exit__(exc_type, exc_value, traceback)

    def next(self, message: str, color: str = "modular_purple") -> None:
        """``pop()`` then ``push(message, color)``."""
        self.pop()
        self.push(message, color)

    def cleanup(self) -> None:
        """Closes every span, innermost first."""
        while self.trace_stack:
            self.pop()

    def mark(self) -> None:
        """An instant marker with the top span's message; nothing for a
        placeholder."""
        assert self.trace_stack, "stack underflow in Tracer.mark()"
        top = self.trace_stack[-1]
        if top is not None:
            top.mark()

    def __enter__(self) -> "Tracer":
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self.cleanup()

    def __del__(self) -> None:
        # A Tracer dropped mid-run closes its spans (when depends on the GC).
        if getattr(self, "trace_stack", None):
            self.cleanup()


@overload
def traced(func: F, *, message: Optional[str] = None, color: str = "modular_purple") -> F: ...


@overload
def traced(
    func: None = None, *, message: Optional[str] = None, color: str = "modular_purple"
) -> Callable[[F], F]: ...


def traced(func=None, *, message=None, color="modular_purple"):
    """Wraps each call of ``func`` in a span named ``message`` (default: the
    function's ``__name__``). Works bare (``@traced``) or called
    (``@traced(message=..., color=...)``), on plain and ``async`` functions;
    whether profiling is on is checked at every call. Metadata is copied with
    ``functools.wraps``. An ``async`` function's span covers the whole
    coroutine, suspensions included (MAX's behaviour)."""
    _check_span_args("traced", message, color)

    def decorate(f):
        name = message if message is not None else f.__name__
        if inspect.iscoroutinefunction(f):

            @functools.wraps(f)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                if not is_profiling_enabled():
                    return await f(*args, **kwargs)
                with Trace(name, color):
                    return await f(*args, **kwargs)

            return async_wrapper
        # Native wrapper: one relaxed load per call when profiling is off.
        wrapper = _core._profiler_traced_call(f, name, color)
        functools.update_wrapper(wrapper, f)
        return wrapper

    if func is None:
        return decorate
    return decorate(func)


__all__ = ["Trace", "Tracer", "traced", "is_profiling_enabled", "set_gpu_profiling_state"]
