"""The host-hazard bridge for code that runs device work outside axl's own
copies (MAX ``max.driver._hazard``, spec section 6): after enqueuing work
that writes and reads Buffers, stamp them so that host access waits for it
(or, when the work failed, raises ``HostHazardError`` with its error).

Only tracked buffers are stamped (untracked ones never wait); buffers are
grouped by their queue, one completion per queue. The module's namespace is
kept to MAX's names, which MAX's test pins.
"""

from __future__ import annotations

import traceback
from typing import Sequence

from .._core import Buffer, DeviceQueue, HostHazardCompletion
from .._errors import HostHazardError

# A queue's identity: its core handle (DeviceQueue._device_context_ptr()).
QueueKey = int


def render_producer_error(exc: BaseException) -> str:
    """The full traceback of ``exc`` as text: what a poisoned completion
    carries, as text so that no frame keeps buffers alive."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()


def stamp_device_write(written: Sequence[Buffer], read: Sequence[Buffer] = (), error: str | None = None) -> None:
    """Marks ``written`` as written and ``read`` as read by the work just
    enqueued on their queues: later host reads of ``written`` wait for it,
    host writes of either wait for it too. With ``error`` (the work failed
    after enqueuing) the completions are poisoned instead: those waits raise
    ``HostHazardError`` carrying ``error``. Untracked buffers are skipped;
    with no tracked buffer nothing is recorded.
    """
    groups: dict[QueueKey, tuple[DeviceQueue, list[Buffer], list[Buffer]]] = {}
    for bufs, slot in ((written, 1), (read, 2)):
        for buf in bufs:
            if buf._host_hazard_tracked:
                queue = buf.stream
                groups.setdefault(queue._device_context_ptr(), (queue, [], []))[slot].append(buf)
    for queue, writes, reads in groups.values():
        completion = (HostHazardCompletion.poisoned(queue, error) if error is not None
                      else HostHazardCompletion.record_on(queue))
        for buf in writes:  # writes first: a write stamp clears the reader set
            buf._stamp_write(completion)
        for buf in reads:
            buf._stamp_read(completion)
