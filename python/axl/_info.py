"""``python -m axl info``: the report of the ``axl-info`` tool, written in
Python over the binding (tools/axl-info/main.cpp is the reference; the text
and JSON output are byte-for-byte the same, which a test checks).

Everything is gathered first and printed afterwards: initialising a backend
while listing devices can turn its plugin record from "loaded" into
"unavailable", and the report must show the final state.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import BinaryIO, Optional

from . import _core
from ._errors import AxlError, Status

_LOADED = 0


def _b(s: str) -> bytes:
    # The binding decodes the core's bytes with surrogateescape; this gives the
    # original bytes back, so odd file names print exactly as the C tool's.
    return s.encode("utf-8", "surrogateescape")


@dataclass
class ErrorDetail:
    status: int
    backend: str = ""
    native_code: int = 0
    native_name: str = ""
    message: str = ""

    @staticmethod
    def of(e: AxlError) -> ErrorDetail:
        return ErrorDetail(int(e.status), e.backend, e.native_code, e.native_name,
                           e.detail or _core.status_name(int(e.status)))


@dataclass
class DeviceView:
    backend: str = ""
    label: str = ""
    api: str = ""
    architecture: str = ""
    model: str = ""
    id: int = 0
    backend_index: int = 0
    total_memory: int = 0
    max_single_alloc: int = 0
    free_memory: Optional[int] = None
    free_memory_error: str = ""
    is_host: bool = False
    is_host_unified: bool = False
    is_compatible: bool = False
    error: Optional[ErrorDetail] = None
    failed_devices: int = 0


@dataclass
class Report:
    version: str = ""
    abi: tuple = (0, 0)
    init_error: Optional[ErrorDetail] = None
    device_list_error: Optional[ErrorDetail] = None
    plugins: list = field(default_factory=list)
    devices: list = field(default_factory=list)
    discovery_log: str = ""


def _collect_devices(r: Report) -> None:
    try:
        count = _core._device_count(None)
    except AxlError as e:
        r.device_list_error = ErrorDetail.of(e)
        return
    i = 0
    while i < count:
        try:
            d = _core._device_report(i)
        except AxlError as e:
            err = ErrorDetail.of(e)
            v = DeviceView(backend=err.backend, error=err)
            # A backend whose initialisation failed stops contributing
            # devices, so the count shrinks and index i names the next
            # backend's first device; otherwise the failure was this device's
            # alone, so step over it and the loop always ends.
            try:
                now = _core._device_count(None)
            except AxlError:
                now = count
            if now < count:
                v.failed_devices = count - now
                count = now
            else:
                v.failed_devices = 1
                i += 1
            r.devices.append(v)
            continue
        if "error" in d:
            status, backend, code, name, message = d["error"]
            r.devices.append(DeviceView(error=ErrorDetail(status, backend, code, name, message), failed_devices=1))
        else:
            r.devices.append(DeviceView(**d))
        i += 1


def collect(with_discovery_log: bool) -> Report:
    r = Report(version=_core.__version__, abi=_core.abi_version())
    # Once axl_init has failed every device call answers with the same
    # error, so the devices are left unlisted rather than reported twice.
    try:
        _core._init()
    except AxlError as e:
        r.init_error = ErrorDetail.of(e)
    else:
        _collect_devices(r)
    r.plugins = _core._plugin_records()
    if with_discovery_log:
        r.discovery_log = _core._discovery_log()
    return r


# ---------------------------------------------------------------- names

def _flag_names(flags: int) -> list[bytes]:
    out = []
    for bit, name in ((_core.PLUGIN_FLAG_HOST, b"host"), (_core.PLUGIN_FLAG_FORK_SAFE, b"fork_safe"),
                      (_core.PLUGIN_FLAG_VIRTUAL, b"virtual"), (_core.PLUGIN_FLAG_EXPERIMENTAL, b"experimental")):
        if flags & bit:
            out.append(name)
            flags &= ~bit
    # A newer plugin may declare bits this tool does not know: shown raw.
    if flags:
        out.append(b"0x%x" % flags)
    return out


def _gib(n: int) -> bytes:
    return b"%.2f GiB" % (n / (1024.0 * 1024 * 1024))


def _abi(major: int, minor: int) -> bytes:
    return b"%d.%d" % (major, minor)


def _split_lines(s: str) -> list[str]:
    out, start = [], 0
    while start < len(s):
        nl = s.find("\n", start)
        if nl < 0:
            nl = len(s)
        out.append(s[start:nl])
        start = nl + 1
    return out


def _status_name(s: int) -> bytes:
    return _core.status_name(int(s)).encode()


# ----------------------------------------------------------------- JSON

def _json_escape(s: bytes) -> bytes:
    """JSON string body; invalid UTF-8 bytes become \\ufffd one by one (RFC 3629 table)."""
    out = bytearray()
    n, i = len(s), 0
    simple = {0x22: b'\\"', 0x5C: b"\\\\", 0x08: b"\\b", 0x0C: b"\\f", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t"}
    while i < n:
        c = s[i]
        if c < 0x80:
            if c in simple:
                out += simple[c]
            elif c < 0x20:
                out += b"\\u%04x" % c
            else:
                out.append(c)
            i += 1
            continue
        length, lo, hi = 0, 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            length = 2
        elif c == 0xE0:
            length, lo = 3, 0xA0
        elif 0xE1 <= c <= 0xEC:
            length = 3
        elif c == 0xED:
            length, hi = 3, 0x9F
        elif 0xEE <= c <= 0xEF:
            length = 3
        elif c == 0xF0:
            length, lo = 4, 0x90
        elif 0xF1 <= c <= 0xF3:
            length = 4
        elif c == 0xF4:
            length, hi = 4, 0x8F
        ok = length != 0 and i + length <= n and lo <= s[i + 1] <= hi
        k = 2
        while ok and k < length:
            ok = 0x80 <= s[i + k] <= 0xBF
            k += 1
        if ok:
            out += s[i:i + length]
            i += length
        else:
            out += b"\\ufffd"
            i += 1
    return bytes(out)


class _JsonWriter:
    """Pretty printer with the C tool's exact layout (2-space indent, a value
    on its key's line, empty containers as [] / {})."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.first: list[bool] = []
        self.after_key = False

    def _newline(self) -> None:
        self.out += b"\n" + b" " * (2 * len(self.first))

    def _separate(self) -> None:
        if self.after_key:
            self.after_key = False
            return
        if not self.first:
            return
        if not self.first[-1]:
            self.out += b","
        self.first[-1] = False
        self._newline()

    def open(self, c: bytes) -> None:
        self._separate()
        self.out += c
        self.first.append(True)

    def close(self, c: bytes) -> None:
        empty = self.first.pop()
        if not empty:
            self._newline()
        self.out += c

    def key(self, k: str) -> None:
        self._separate()
        self.out += b'"' + _json_escape(_b(k)) + b'": '
        self.after_key = True

    def string(self, v: str) -> None:
        self._separate()
        self.out += b'"' + _json_escape(_b(v)) + b'"'

    def raw(self, v: bytes) -> None:
        self._separate()
        self.out += v

    def field(self, k: str, v: str) -> None:
        self.key(k)
        self.string(v)

    def num(self, k: str, v: int) -> None:
        self.key(k)
        self.raw(b"%d" % v)

    def boolean(self, k: str, v: bool) -> None:
        self.key(k)
        self.raw(b"true" if v else b"false")


def _json_error(j: _JsonWriter, e: ErrorDetail) -> None:
    j.open(b"{")
    j.field("status", _core.status_name(e.status))
    j.num("status_code", e.status)
    j.field("backend", e.backend)
    j.num("native_code", e.native_code)
    j.field("native_name", e.native_name)
    j.field("message", e.message)
    j.close(b"}")


def to_json(r: Report, verbose: bool) -> bytes:
    j = _JsonWriter()
    j.open(b"{")
    j.key("core")
    j.open(b"{")
    j.field("version", r.version)
    j.field("abi", "%d.%d" % r.abi)
    j.key("init_error")
    if r.init_error:
        _json_error(j, r.init_error)
    else:
        j.raw(b"null")
    j.close(b"}")

    j.key("plugins")
    j.open(b"[")
    for p in r.plugins:
        j.open(b"{")
        j.field("path", p["path"])
        j.field("name", p["name"])
        j.field("api", p["api"])
        j.field("version", p["version"])
        j.field("abi", "%d.%d" % (p["abi_major"], p["abi_minor"]) if p["abi_major"] else "")
        j.field("state", p["state_name"])
        j.field("status", _core.status_name(p["status"]))
        j.field("reason", p["reason"])
        j.num("device_count", p["device_count"])
        j.key("flags")
        j.open(b"[")
        for f in _flag_names(p["flags"]):
            j.string(f.decode())
        j.close(b"]")
        j.close(b"}")
    j.close(b"]")

    j.key("devices")
    j.open(b"[")
    for d in r.devices:
        j.open(b"{")
        j.boolean("ok", d.error is None)
        j.field("backend", d.backend)
        if d.error:
            j.num("device_count", d.failed_devices)
            j.key("error")
            _json_error(j, d.error)
        else:
            j.field("device", f"{d.label}:{d.id}")
            j.field("label", d.label)
            j.num("id", d.id)
            j.num("backend_index", d.backend_index)
            j.field("api", d.api)
            j.field("architecture", d.architecture)
            j.field("model", d.model)
            j.num("total_memory_bytes", d.total_memory)
            j.key("free_memory_bytes")
            j.raw(b"%d" % d.free_memory if d.free_memory is not None else b"null")
            if d.free_memory is None:
                j.field("free_memory_error", d.free_memory_error)
            j.num("max_single_alloc_bytes", d.max_single_alloc)
            j.boolean("is_host", d.is_host)
            j.boolean("is_host_unified", d.is_host_unified)
            j.boolean("is_compatible", d.is_compatible)
        j.close(b"}")
    j.close(b"]")
    if r.device_list_error:
        j.key("device_list_error")
        _json_error(j, r.device_list_error)

    if verbose:
        j.key("discovery_log")
        j.open(b"[")
        for line in _split_lines(r.discovery_log):
            j.string(line)
        j.close(b"]")
    j.close(b"}")
    return bytes(j.out) + b"\n"


# ----------------------------------------------------------------- text

def describe(e: ErrorDetail) -> bytes:
    s = _status_name(e.status)
    if e.native_name or e.native_code != 0:
        s += b" (" + (_b(e.native_name) if e.native_name else b"native") + b" %d)" % e.native_code
    return s + b": " + _b(e.message)


def _yes_no(v: bool) -> bytes:
    return b"yes" if v else b"no"


def to_text(r: Report, verbose: bool) -> bytes:
    out = bytearray()
    w = out.extend
    w(b"axl %s (application ABI %s)\n" % (_b(r.version), _abi(*r.abi)))
    if r.init_error:
        w(b"\nINIT FAILED: %s\n" % describe(r.init_error))

    w(b"\nPlugins: %d file(s) considered\n" % len(r.plugins))
    if not r.plugins:
        w(b"  none found (axl-info --verbose shows the folders searched)\n")
    # Names are padded to the longest (within reason) so states line up.
    width = 12
    for p in r.plugins:
        width = max(width, min(len(_b(p["name"])), 24))
    for p in r.plugins:
        name = _b(p["name"]) or b"(unnamed)"
        w(b"  %-*s %-11s" % (width, name, p["state_name"].encode()))
        if p["state"] == _LOADED:
            w(b" api %s, version %s, ABI %s, %d device(s)"
              % (_b(p["api"]), _b(p["version"]), _abi(p["abi_major"], p["abi_minor"]), p["device_count"]))
            flags = _flag_names(p["flags"])
            if flags:
                w(b", flags %s" % b",".join(flags))
        else:
            if p["status"] != Status.SUCCESS:
                w(b" %s:" % _status_name(p["status"]))
            w(b" %s" % (_b(p["reason"]) or b"(no reason given)"))
            # Whatever negotiation did learn helps tell a stale build from a
            # foreign file.
            if p["api"] or p["version"] or p["abi_major"]:
                w(b" [api %s, version %s, ABI %s]"
                  % (_b(p["api"]) or b"?", _b(p["version"]) or b"?",
                     _abi(p["abi_major"], p["abi_minor"]) if p["abi_major"] else b"?"))
        w(b"\n  %-*s %s\n" % (width, b"", _b(p["path"])))

    usable = sum(1 for d in r.devices if d.error is None)
    w(b"\nDevices: %d\n" % usable)
    if r.init_error:
        w(b"  not listed: initialisation failed (above)\n")
    elif r.device_list_error:
        w(b"  cannot list devices: %s\n" % describe(r.device_list_error))
    elif not r.devices:
        w(b"  none (no plugin reported a device)\n")
    for d in r.devices:
        if d.error:
            w(b"  backend %s: %d device(s) not usable: %s\n"
              % (_b(d.backend) or b"?", d.failed_devices, describe(d.error)))
            continue
        w(b"  %s:%d  %s (backend %s, index %d)\n"
          % (_b(d.label), d.id, _b(d.model), _b(d.backend), d.backend_index))
        w(b"    %-18s %s\n" % (b"api", _b(d.api)))
        w(b"    %-18s %s\n" % (b"architecture", _b(d.architecture) or b"-"))
        w(b"    %-18s %s\n" % (b"model", _b(d.model)))
        w(b"    %-18s %d bytes (%s)\n" % (b"total memory", d.total_memory, _gib(d.total_memory)))
        if d.free_memory is not None:
            w(b"    %-18s %d bytes (%s)\n" % (b"free memory", d.free_memory, _gib(d.free_memory)))
        else:
            w(b"    %-18s unknown (%s)\n" % (b"free memory", _b(d.free_memory_error)))
        w(b"    %-18s %d bytes (%s)\n" % (b"max allocation", d.max_single_alloc, _gib(d.max_single_alloc)))
        w(b"    %-18s %s\n" % (b"is_host", _yes_no(d.is_host)))
        w(b"    %-18s %s\n" % (b"is_host_unified", _yes_no(d.is_host_unified)))
        w(b"    %-18s %s\n" % (b"is_compatible", _yes_no(d.is_compatible)))

    if verbose:
        w(b"\nDiscovery trace:\n")
        for line in _split_lines(r.discovery_log):
            w(b"  %s\n" % _b(line))
    return bytes(out)


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
        r = collect(verbose)
        sys.stdout.flush()
        if json_out:
            out.write(to_json(r, verbose))
            if r.init_error:
                sys.stderr.write("axl info: axl_init failed: %s\n"
                                 % describe(r.init_error).decode("utf-8", "replace"))
        else:
            out.write(to_text(r, verbose))
        out.flush()
        return 1 if r.init_error else 0
    except Exception as e:  # noqa: BLE001  (the tool reports, never tracebacks)
        sys.stderr.write(f"axl info: {e}\n")
        return 1
