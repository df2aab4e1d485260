"""AMD GPUs through ROCm SMI (librocm_smi64.so, loaded with ctypes when a
context opens). Clocks use the ROCm >= 6.0 rsmi_frequencies_t layout."""

from __future__ import annotations

import ctypes
from typing import Optional

from .types import ClockStats, GPUStats, MemoryStats, UtilizationStats

_STATUS_NOT_SUPPORTED = 2
_MEM_VRAM = 0
_CLK_SYS, _CLK_MEM = 0, 4
_MAX_FREQS = 33


class RSMIError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"ROCm SMI error {code}: {message}")
        self.code = code
        self.message = message


class _Frequencies(ctypes.Structure):
    _fields_ = [("has_deep_sleep", ctypes.c_bool), ("num_supported", ctypes.c_uint32),
                ("current", ctypes.c_uint32), ("frequency", ctypes.c_uint64 * _MAX_FREQS)]


class _ProcessInfo(ctypes.Structure):  # rsmi_process_info_t
    _fields_ = [("process_id", ctypes.c_uint32), ("pasid", ctypes.c_uint32), ("vram_usage", ctypes.c_uint64),
                ("sdma_usage", ctypes.c_uint64), ("cu_occupancy", ctypes.c_uint32)]


class RSMIContext:
    def __init__(self, library: str = "librocm_smi64.so") -> None:
        self._lib = ctypes.CDLL(library)  # OSError when absent
        self._check(self._lib.rsmi_init(ctypes.c_uint64(0)))
        self._open = True

    def _check(self, rc: int) -> None:
        if rc == 0:
            return
        text = ctypes.c_char_p()
        try:
            self._lib.rsmi_status_string(rc, ctypes.byref(text))
            message = text.value.decode(errors="replace") if text.value else "(Unknown)"
        except Exception:  # noqa: BLE001
            message = "(Unknown)"
        raise RSMIError(rc, message)

    def close(self) -> None:
        if self._open:
            self._open = False
            self._lib.rsmi_shut_down()

    def _count(self) -> int:
        n = ctypes.c_uint32()
        self._check(self._lib.rsmi_num_monitor_devices(ctypes.byref(n)))
        return n.value

    def _u64(self, fn: str, *args) -> int:
        v = ctypes.c_uint64()
        self._check(getattr(self._lib, fn)(*args, ctypes.byref(v)))
        return v.value

    def _u32(self, fn: str, *args) -> int:
        v = ctypes.c_uint32()
        self._check(getattr(self._lib, fn)(*args, ctypes.byref(v)))
        return v.value

    def _clock(self, dev: int, kind: int) -> Optional[tuple[int, int]]:
        f = _Frequencies()
        rc = self._lib.rsmi_dev_gpu_clk_freq_get(ctypes.c_uint32(dev), kind, ctypes.byref(f))
        if rc == _STATUS_NOT_SUPPORTED:
            return None
        self._check(rc)
        if f.num_supported == 0 or f.num_supported > _MAX_FREQS or f.current >= f.num_supported:
            return None
        if f.has_deep_sleep and f.current == 0:
            return None
        freqs = list(f.frequency[: f.num_supported])
        return f.frequency[f.current] // 1_000_000, max(freqs) // 1_000_000

    def get_stats(self) -> list[GPUStats]:
        out = []
        for dev in range(self._count()):
            d = ctypes.c_uint32(dev)
            total = self._u64("rsmi_dev_memory_total_get", d, _MEM_VRAM)
            used = self._u64("rsmi_dev_memory_usage_get", d, _MEM_VRAM)
            busy = self._u32("rsmi_dev_busy_percent_get", d)
            try:
                mem_busy: Optional[int] = self._u32("rsmi_dev_memory_busy_percent_get", d)
            except RSMIError:
                mem_busy = None
            core, mem = self._clock(dev, _CLK_SYS), self._clock(dev, _CLK_MEM)
            clocks = None
            if core is not None:
                clocks = ClockStats(core_mhz=core[0], core_max_mhz=core[1], mem_mhz=mem[0] if mem else None,
                                    mem_max_mhz=mem[1] if mem else None, throttle_reasons=None)
            out.append(GPUStats(
                memory=MemoryStats(total_bytes=total, free_bytes=total - used, used_bytes=used,
                                   reserved_bytes=None),
                utilization=UtilizationStats(gpu_usage_percent=busy, memory_activity_percent=mem_busy),
                clocks=clocks))
        return out

    def get_process_memory_bytes(self, pid: int) -> Optional[int]:
        info = _ProcessInfo()
        rc = self._lib.rsmi_compute_process_info_by_pid_get(ctypes.c_uint32(pid), ctypes.byref(info))
        if rc != 0:
            return None
        return info.vram_usage
