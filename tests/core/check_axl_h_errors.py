#!/usr/bin/env python3
"""Checks that axl.h documents the errors of every AXL_API function.

The rule is the one stated at the top of axl.h: a function is documented by
the comment that ends on the line directly above its declaration. The one
exception: axl_<object>_release declared directly below axl_<object>_retain
shares the retain's comment. No other sharing is allowed, so that removing
any one comment leaves its function undocumented (a looser rule, "a comment
documents the run of declarations below it", would let the function inherit
the comment of the declaration above it). That comment must say what the
function answers when something goes wrong:

  - a function returning axl_status: it names an error (AXL_ERROR_...), or
    refers to the "Backend errors" the header defines once, or says it
    cannot fail ("Always AXL_SUCCESS", "Never fails");
  - any other function (a getter returning a value, or void): it says
    "Never fails", and, when it takes arguments, what it answers for bad
    ones ("Bad input: ...").

Usage: check_axl_h_errors.py AXL_H           check the header
       check_axl_h_errors.py --self-test AXL_H
           also proves the check fails, naming the function, on copies of
           the header with one function's comment removed.
Exit status 0 when every function passes; 1 with one line per function
that does not.
"""
import re
import sys

STATUS_MARKERS = ("AXL_ERROR_", "Backend errors", "Always AXL_SUCCESS", "Never fails")
GETTER_MARKER = "Never fails"
BAD_INPUT_MARKER = "Bad input:"

# A declaration: AXL_API <return type> <name>(<params>); possibly over lines.
# Exported data (AXL_API extern ...) is not a function and is skipped.
DECL = re.compile(r"AXL_API\s+(?!extern\b)(?P<ret>[^;(]*?)\b(?P<name>axl_\w+)\s*\((?P<params>[^;]*?)\)\s*;", re.S)


def flatten(comment):
    """The words of a C block comment on one line, so that a phrase broken
    over two lines still matches."""
    body = comment.strip()[2:-2]
    return " ".join(l.strip().lstrip("*").strip() for l in body.split("\n")).strip()


def parse(text):
    """Yields (name, return type, params, doc comment or None) per function."""
    lines = text.split("\n")
    doc = None  # the comment directly above the line being read, if any
    prev = None  # the function declared directly above, if any
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("/*"):
            start = i
            while "*/" not in lines[i]:
                i += 1
            doc = flatten("\n".join(lines[start:i + 1]))
            prev = None
            i += 1
            continue
        if stripped.startswith("AXL_API"):
            start = i
            while ";" not in lines[i]:
                i += 1
            decl = "\n".join(lines[start:i + 1])
            m = DECL.search(decl)
            name = m.group("name") if m else None
            if m:
                # The comment right above, or the retain's for its release.
                shared = prev is not None and prev[0].endswith("_retain") and \
                    name == prev[0][:-len("_retain")] + "_release"
                yield name, m.group("ret").strip(), m.group("params").strip(), \
                    doc if prev is None else (prev[1] if shared else None)
            prev = (name, doc if prev is None else None) if m else None
            i += 1
            continue
        # A blank line or any other code: what follows has no comment.
        doc = None
        prev = None
        i += 1


def problems(text):
    out = []
    count = 0
    for name, ret, params, doc in parse(text):
        count += 1
        if doc is None:
            out.append(f"{name}: no comment directly above it (only a release directly below its retain shares one)")
            continue
        if ret == "axl_status":
            if not any(m in doc for m in STATUS_MARKERS):
                out.append(f"{name}: its comment names no error (AXL_ERROR_*, \"Backend errors\") "
                           "and does not say \"Always AXL_SUCCESS\" or \"Never fails\"")
        else:
            if GETTER_MARKER not in doc:
                out.append(f"{name}: returns {ret}, not a status, and its comment does not say \"Never fails\"")
            if params != "void" and BAD_INPUT_MARKER not in doc:
                out.append(f"{name}: takes arguments but its comment does not say what it answers on bad "
                           "input (\"Bad input: ...\")")
    if count == 0:
        out.append("no AXL_API function found: is this axl.h?")
    return out, count


def replace_comment_above(text, name, comment):
    """The header with the comment that documents `name` replaced by
    `comment` (a list of lines; empty to remove it)."""
    lines = text.split("\n")
    at = next(i for i, l in enumerate(lines) if "AXL_API" in l and re.search(r"\b%s\s*\(" % name, l))
    # Back over the declarations of the run (a release below its retain),
    # then over the comment.
    end = at - 1
    while not lines[end].strip().endswith("*/"):
        end -= 1
    start = end
    while not lines[start].strip().startswith("/*"):
        start -= 1
    return "\n".join(lines[:start] + comment + lines[end + 1:])


def self_test(text):
    """Failures of the check itself: each scratch copy below must fail for
    exactly the functions whose comment was taken away."""
    failures = []
    base, _ = problems(text)
    if base:
        failures.append("the header itself does not pass, so the self-test proves nothing")
    cases = [
        # A status function whose comment is removed: it would otherwise
        # inherit nothing, not the comment of the declaration above it.
        ("axl_buffer_view", [], ["axl_buffer_view"]),
        # A comment that says what the function does but names no error.
        ("axl_buffer_host_pointer", ["/* Host pointer of the first byte. */"], ["axl_buffer_host_pointer"]),
        # A getter without "Never fails" / "Bad input:".
        ("axl_kernel_name", [], ["axl_kernel_name"]),
        ("axl_kernel_name", ["/* The kernel's name. Never fails. */"], ["axl_kernel_name"]),
        # The comment a retain shares with its release: both lose it.
        ("axl_event_retain", [], ["axl_event_retain", "axl_event_release"]),
    ]
    for name, comment, expected in cases:
        found, _ = problems(replace_comment_above(text, name, comment))
        named = sorted({p.split(":")[0] for p in found})
        if named != sorted(expected):
            failures.append(f"replacing the comment of {name} by {comment or 'nothing'} made the check "
                            f"fail for {named or 'nothing'}, expected {sorted(expected)}")
    return failures


def main(argv):
    args = [a for a in argv[1:] if a != "--self-test"]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    with open(args[0], encoding="utf-8") as f:
        text = f.read()
    if "--self-test" in argv:
        failures = self_test(text)
        for f in failures:
            print("self-test: " + f)
        return 1 if failures else 0
    found, count = problems(text)
    for p in found:
        print(p)
    if not found:
        print(f"{count} AXL_API functions, each documents its errors")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
