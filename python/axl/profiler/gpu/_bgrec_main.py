"""The BackgroundRecorder's child: samples GPUDiagContext every `interval`
seconds (argv[1]) into a temporary JSON-lines file until a stop request,
then replies with the file's path. Any failure is reported as a
die_notification before exiting.

The file is the child's until its path is in a stop_reply: on every other
way out (the parent closed the pipe because the block raised or it gave up,
a failure, an interrupt) the child removes it. The ready_notification names
it too, so that a parent that has to kill the child removes it then."""

from __future__ import annotations

import json
import os
import sys
import tempfile

from . import _protocol
from .diag import GPUDiagContext
from .types import stats_to_json_dict


def main(argv: list[str]) -> int:
    out = sys.stdout.buffer
    path = None
    try:
        interval = float(argv[1])
        reader = _protocol.LineReader(sys.stdin.buffer)
        with GPUDiagContext() as ctx:
            fd, path = tempfile.mkstemp(prefix="axl-gpu-stats-", suffix=".jsonl")
            with open(fd, "w", encoding="utf-8") as f:
                _protocol.send(out, {"type": "ready_notification", "path": path})
                while True:
                    f.write(json.dumps(stats_to_json_dict(ctx.get_stats())) + "\n")
                    f.flush()
                    if reader.readable_now(interval):
                        msg = reader.read(timeout=None)
                        if msg is None:  # the parent gave up: no reply expected
                            return 1
                        if msg.get("type") == "stop_request":
                            break
        _protocol.send(out, {"type": "stop_reply", "path": path})
        path = None  # the parent's now
        return 0
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        try:
            _protocol.send(out, {"type": "die_notification", "cause": text[:200]})
        except Exception:  # noqa: BLE001
            pass
        return 1
    finally:
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
