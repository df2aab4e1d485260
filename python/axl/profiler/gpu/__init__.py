"""GPU diagnostics (MAX's ``max.profiler.gpu``): memory, utilisation and
clocks of every NVIDIA GPU (NVML) and AMD GPU (ROCm SMI), each library
loaded at run time when present; with neither, results are empty and no
error is raised. ``BackgroundRecorder`` samples them in a child process."""

from .bgrec import BackgroundRecorder, GpuStatsRecorder
from .diag import GPUDiagContext
from .types import (
    HARDWARE_THROTTLE_REASONS,
    ClockStats,
    GPUStats,
    MemoryStats,
    ThrottleReason,
    UtilizationStats,
)

__all__ = [
    "BackgroundRecorder",
    "ClockStats",
    "GPUDiagContext",
    "GPUStats",
    "GpuStatsRecorder",
    "HARDWARE_THROTTLE_REASONS",
    "MemoryStats",
    "ThrottleReason",
    "UtilizationStats",
]
