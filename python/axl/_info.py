"""``python -m axl info``: the report of the ``axl-info`` tool.

The report is one C++ implementation (axl/report.hpp) that both print, so
the text and JSON output are byte-for-byte the same (a test checks); this
module is only the command line around ``_core._report``.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from . import _core


USAGE = """\
usage: python -m axl info [--json] [--verbose] [--help]

Lists every plugin file axl's discovery considered (loaded, skipped,
shadowed, disabled or unavailable, with the reason) and every device
with its properties: the same report as the axl-info tool.

  --json     print one JSON object {core, plugins, devices} (for bug reports)
  --verbose  also print the discovery trace (folders searched, files
             tried) and log at level info, unless AXL_LOG_LEVEL is set
  --help     show this help

Environment: AXL_PLUGINS, AXL_PLUGIN_PATH, AXL_PLUGINS_DISABLE,
AXL_LOG_LEVEL, AXL_LOG_FILE (see docs/).

Exit status: 0, or 1 if axl_init failed (e.g. AXL_PLUGINS names a file
that does not load); what could be learnt is printed either way.
"""


def main(argv: list[str], stdout: BinaryIO | None = None) -> int:
    """Runs ``axl info`` with the arguments after ``info``; returns the exit status."""
    json_out = verbose = False
    for a in argv:
        if a == "--json":
            json_out = True
        elif a in ("--verbose", "-v"):
            verbose = True
        elif a in ("--help", "-h"):
            sys.stdout.write(USAGE)
            return 0
        else:
            sys.stderr.write(f"axl info: unknown argument '{a}'\n\n{USAGE}")
            return 2
    out = stdout if stdout is not None else sys.stdout.buffer
    try:
        # Logging starts before discovery so the loader's info lines show; an
        # explicit AXL_LOG_LEVEL wins because the user asked for it by name.
        if verbose and "AXL_LOG_LEVEL" not in os.environ:
            _core._set_log_level(2)
        report, init_error = _core._report(json_out, verbose)
        sys.stdout.flush()
        out.write(report)
        if json_out and init_error is not None:
            sys.stderr.write("axl info: axl_init failed: %s\n" % init_error.decode("utf-8", "replace"))
        out.flush()
        return 1 if init_error is not None else 0
    except Exception as e:  # noqa: BLE001  (the tool reports, never tracebacks)
        sys.stderr.write(f"axl info: {e}\n")
        return 1
