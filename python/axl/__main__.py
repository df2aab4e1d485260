"""``python -m axl <command>``.

Commands:
  info [--json] [--verbose]   plugins and devices (the axl-info report)
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(__doc__.lstrip().replace("``", ""))
        return 0 if args else 2
    if args[0] == "info":
        from . import _info

        return _info.main(args[1:])
    sys.stderr.write(f"python -m axl: unknown command '{args[0]}'\n\n{__doc__.lstrip()}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
