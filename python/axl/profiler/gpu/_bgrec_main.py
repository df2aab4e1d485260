"""The BackgroundRecorder's child: samples GPUDiagContext every `interval`
seconds (argv[1]) into a temporary JSON-lines file until a stop request,
then replies with the file's path. Any failure is reported as a
die_notification before exiting."""

from __future__ import annotations

import json
import sys
import tempfile

from . import _protocol
from .diag import GPUDiagContext
from .types import stats_to_json_dict


def main(argv: list[str]) -> int:
    out = sys.stdout.buffer
    try:
        interval = float(argv[1])
        reader = _protocol.LineReader(sys.stdin.buffer)
        with GPUDiagContext() as ctx, tempfile.NamedTemporaryFile(
                "w", prefix="axl-gpu-stats-", suffix=".jsonl", delete=False) as f:
            _protocol.send(out, {"type": "ready_notification"})
            while True:
                f.write(json.dumps(stats_to_json_dict(ctx.get_stats())) + "\n")
                f.flush()
                if reader.readable_now(interval):
                    msg = reader.read(timeout=None)
                    if msg is None:  # the parent gave up: no reply expected
                        return 1
                    if msg.get("type") == "stop_request":
                        break
        _protocol.send(out, {"type": "stop_reply", "path": f.name})
        return 0
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        try:
            _protocol.send(out, {"type": "die_notification", "cause": text[:200]})
        except Exception:  # noqa: BLE001
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
