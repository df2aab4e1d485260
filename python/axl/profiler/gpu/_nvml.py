"""NVIDIA GPUs through NVML (libnvidia-ml.so.1, loaded with ctypes when a
context opens). Optional entry points (clocks, throttle reasons) disable
only what they report when missing."""

from __future__ import annotations

import ctypes
from typing import Optional

from .types import ClockStats, GPUStats, MemoryStats, ThrottleReason, UtilizationStats

_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_GPU_NOT_FOUND = 28
_CLOCK_GRAPHICS, _CLOCK_SM, _CLOCK_MEM = 0, 1, 2
_UNAVAILABLE = (1 << 64) - 1  # usedGpuMemory when the driver cannot tell

_THROTTLE_BITS = [
    (0x1, ThrottleReason.GPU_IDLE),
    (0x2, ThrottleReason.APPLICATIONS_CLOCKS_SETTING),
    (0x4, ThrottleReason.SW_POWER_CAP),
    (0x8, ThrottleReason.HW_SLOWDOWN),
    (0x10, ThrottleReason.SYNC_BOOST),
    (0x20, ThrottleReason.SW_THERMAL_SLOWDOWN),
    (0x40, ThrottleReason.HW_THERMAL_SLOWDOWN),
    (0x80, ThrottleReason.HW_POWER_BRAKE_SLOWDOWN),
    (0x100, ThrottleReason.DISPLAY_CLOCK_SETTING),
]


class NVMLError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"NVML error {code}: {message}")
        self.code = code
        self.message = message


class NotSupportedError(NVMLError):
    pass


class NoPermissionError(NVMLError):
    pass


class GPUNotFoundError(NVMLError):
    pass


class _Memory(ctypes.Structure):  # nvmlMemory_v2_t
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_v1_t
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


def throttle_reasons_from_bits(bits: int) -> list[ThrottleReason]:
    """NVML's bitfield as reasons, in bit order; unknown bits ignored."""
    return [reason for bit, reason in _THROTTLE_BITS if bits & bit]


class NVMLContext:
    """An open NVML session; ``get_stats()`` lists every device it may read."""

    def __init__(self, library: str = "libnvidia-ml.so.1") -> None:
        self._lib = ctypes.CDLL(library)  # OSError when absent
        self._lib.nvmlErrorString.restype = ctypes.c_char_p
        self._check(self._lib.nvmlInit_v2())
        self._open = True

    def _check(self, rc: int) -> None:
        if rc == 0:
            return
        try:
            text = self._lib.nvmlErrorString(rc)
            message = text.decode(errors="replace") if text else "(Unknown)"
        except Exception:  # noqa: BLE001 - the message is best effort
            message = "(Unknown)"
        cls = {_NOT_SUPPORTED: NotSupportedError, _NO_PERMISSION: NoPermissionError,
               _GPU_NOT_FOUND: GPUNotFoundError}.get(rc, NVMLError)
        raise cls(rc, message)

    def close(self) -> None:
        if self._open:
            self._open = False
            self._lib.nvmlShutdown()

    def _handles(self) -> list[ctypes.c_void_p]:
        count = ctypes.c_uint()
        self._check(self._lib.nvmlDeviceGetCount_v2(ctypes.byref(count)))
        handles = []
        for i in range(count.value):
            h = ctypes.c_void_p()
            try:
                self._check(self._lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)))
            except NoPermissionError:
                continue
            handles.append(h)
        return handles

    def _clock(self, fn_name: str, h: ctypes.c_void_p, kind: int) -> Optional[int]:
        fn = getattr(self._lib, fn_name, None)
        if fn is None:
            return None
        v = ctypes.c_uint()
        try:
            self._check(fn(h, kind, ctypes.byref(v)))
        except NotSupportedError:
            return None
        return v.value

    def _clocks(self, h: ctypes.c_void_p) -> Optional[ClockStats]:
        core = self._clock("nvmlDeviceGetClockInfo", h, _CLOCK_SM)
        core_max = self._clock("nvmlDeviceGetMaxClockInfo", h, _CLOCK_SM)
        if core is None or core_max is None:
            core = self._clock("nvmlDeviceGetClockInfo", h, _CLOCK_GRAPHICS)
            core_max = self._clock("nvmlDeviceGetMaxClockInfo", h, _CLOCK_GRAPHICS)
        if core is None or core_max is None:
            return None
        reasons = None
        fn = getattr(self._lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        if fn is not None:
            bits = ctypes.c_ulonglong()
            try:
                self._check(fn(h, ctypes.byref(bits)))
                reasons = throttle_reasons_from_bits(bits.value)
            except NotSupportedError:
                reasons = None
        return ClockStats(core_mhz=core, core_max_mhz=core_max,
                          mem_mhz=self._clock("nvmlDeviceGetClockInfo", h, _CLOCK_MEM),
                          mem_max_mhz=self._clock("nvmlDeviceGetMaxClockInfo", h, _CLOCK_MEM),
                          throttle_reasons=reasons)

    def get_stats(self) -> list[GPUStats]:
        out = []
        for h in self._handles():
            mem = _Memory()
            mem.version = ctypes.sizeof(_Memory) | (2 << 24)
            self._check(self._lib.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(mem)))
            util = _Utilization()
            self._check(self._lib.nvmlDeviceGetUtilizationRates(h, ctypes.byref(util)))
            out.append(GPUStats(
                memory=MemoryStats(total_bytes=mem.total, free_bytes=mem.free, used_bytes=mem.used,
                                   reserved_bytes=mem.reserved),
                utilization=UtilizationStats(gpu_usage_percent=util.gpu, memory_activity_percent=util.memory),
                clocks=self._clocks(h)))
        return out

    def get_process_memory_bytes(self, pid: int) -> Optional[int]:
        """GPU memory ``pid`` uses across devices; None if unknown."""
        total, found = 0, False
        for h in self._handles():
            count = ctypes.c_uint(64)
            infos = (_ProcessInfo * 64)()
            try:
                self._check(self._lib.nvmlDeviceGetComputeRunningProcesses(h, ctypes.byref(count), infos))
            except NotSupportedError:
                return None
            for info in infos[: count.value]:
                if info.pid == pid and info.usedGpuMemory != _UNAVAILABLE:
                    total += info.usedGpuMemory
                    found = True
        return total if found else None
