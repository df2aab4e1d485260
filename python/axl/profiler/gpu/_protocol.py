"""The BackgroundRecorder's pipe protocol: newline-delimited JSON objects
with a "type" (stop_request; stop_reply{path}; ready_notification{path};
die_notification{cause}). One message must fit in PIPE_BUF so a write is
atomic."""

from __future__ import annotations

import json
import os
import select
import time
from typing import IO, Any, Optional

PIPE_BUF = getattr(select, "PIPE_BUF", 4096)


def encode(msg: dict[str, Any]) -> bytes:
    data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
    if len(data) > PIPE_BUF:
        raise ValueError(f"message of {len(data)} bytes is longer than PIPE_BUF ({PIPE_BUF})")
    return data


def send(stream: IO[bytes], msg: dict[str, Any]) -> None:
    stream.write(encode(msg))
    stream.flush()


class LineReader:
    """Reads messages from a pipe with a timeout (poll-based, so no
    FD_SETSIZE limit). read() returns None at end of file."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._fd = stream.fileno()
        self._buf = b""
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def read(self, timeout: Optional[float]) -> Optional[dict[str, Any]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if deadline is not None and left == 0.0:
                raise TimeoutError(f"no message from the recorder within {timeout} s")
            if not self._poll.poll(None if left is None else int(left * 1000) + 1):
                continue
            chunk = os.read(self._fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def readable_now(self, timeout: float) -> bool:
        """Whether a message or end of file can be read within ``timeout``."""
        return b"\n" in self._buf or bool(self._poll.poll(int(timeout * 1000)))
