#!/usr/bin/env python3
"""Checks that ELF files need no shared library a bare Linux lacks (issue 14).

  check_elf_deps.py [--relocatable] [--allow GLOB]... PATH...

PATH: ELF files, or folders searched for them (files starting with the ELF
magic, whatever their names). Each NEEDED entry (`readelf -d`) must be

  * one of BASE_LIBRARIES: what glibc and GCC's runtime put on every Linux,
    the part of the manylinux policies' library list (PEP 600, auditwheel's
    policies) that axl could need; or
  * a library found through the file's own RUNPATH/RPATH entries that start
    with $ORIGIN, inside the checked folders (the wheel's libaxl.so.1 for
    axl._core and the tools); or
  * matched by an --allow glob (the sanitizer runtimes of a sanitizer build).

and never spdlog or fmt, whatever --allow says: those are compiled into
libaxl (core/CMakeLists.txt), so a wheel built on Debian imports where
Debian's libspdlog/libfmt packages are missing. --relocatable also refuses
absolute RUNPATH/RPATH entries (a wheel must not point into the build
machine). Prints one line per file and exits 1 naming each offending entry,
2 when no ELF file was found or readelf is missing.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys

# glibc's libraries and GCC's C++ runtime: present on every Linux that runs
# a manylinux wheel (the policies' list has more, X11 and GL among them, that
# axl does not use).
BASE_LIBRARIES = frozenset({
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libc.so.6", "libm.so.6", "libdl.so.2",
    "libpthread.so.0", "librt.so.1", "libutil.so.1", "libresolv.so.2", "libgcc_s.so.1",
    "libstdc++.so.6",
})
# Never NEEDED: what issue 14 removed.
FORBIDDEN = re.compile(r"^lib(spdlog|fmt)(d)?\.so")


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(paths: list[str]) -> list[str]:
    found = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                found += [os.path.join(root, n) for n in sorted(names)
                          if not os.path.islink(os.path.join(root, n)) and is_elf(os.path.join(root, n))]
        elif is_elf(p):
            found.append(p)
    return sorted(set(found))


def dynamic_section(path: str) -> tuple[list[str], list[str]]:
    """NEEDED entries and RUNPATH/RPATH folders, in the file's order."""
    out = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    paths = []
    for entry in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", out):
        paths += [p for p in entry.split(":") if p]
    return needed, paths


def check(path: str, roots: list[str], allow: list[str], relocatable: bool) -> tuple[list[str], list[str], list[str]]:
    """NEEDED, RUNPATH and the problems found (empty: the file is fine)."""
    needed, search = dynamic_section(path)
    origin = os.path.dirname(os.path.realpath(path))
    problems = []
    if relocatable:
        problems += ["RUNPATH %s points outside the package (not $ORIGIN-relative)" % s
                     for s in search if not s.startswith("$ORIGIN")]
    inside = [os.path.normpath(s.replace("$ORIGIN", origin)) for s in search if s.startswith("$ORIGIN")]
    for lib in needed:
        if FORBIDDEN.match(lib):
            problems.append("NEEDED %s: spdlog/fmt must be compiled in (core/CMakeLists.txt)" % lib)
        elif lib in BASE_LIBRARIES or any(fnmatch.fnmatch(lib, g) for g in allow):
            continue
        elif not any(os.path.exists(os.path.join(d, lib)) and
                     any(os.path.realpath(os.path.join(d, lib)).startswith(r + os.sep) for r in roots)
                     for d in inside):
            problems.append("NEEDED %s: not a base library and not found through $ORIGIN (RUNPATH %s)"
                            % (lib, ":".join(search) or "none"))
    return needed, search, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relocatable", action="store_true", help="refuse absolute RUNPATH/RPATH entries")
    ap.add_argument("--allow", action="append", default=[], metavar="GLOB", help="also accept these NEEDED names")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    if shutil.which("readelf") is None:
        print("check_elf_deps: readelf (binutils) is missing")
        return 2
    roots = [os.path.realpath(p if os.path.isdir(p) else os.path.dirname(p)) for p in args.paths]
    files = elf_files(args.paths)
    if not files:
        print("check_elf_deps: no ELF file in %s" % " ".join(args.paths))
        return 2
    bad = 0
    for f in files:
        needed, search, problems = check(f, roots, args.allow, args.relocatable)
        print("%s %s: NEEDED %s%s" % ("FAIL" if problems else "ok  ", f, " ".join(needed) or "nothing",
                                      "; RUNPATH " + ":".join(search) if search else ""))
        for p in problems:
            print("     " + p)
        bad += bool(problems)
    print("check_elf_deps: %d ELF files, %d with a dependency a bare Linux lacks" % (len(files), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
