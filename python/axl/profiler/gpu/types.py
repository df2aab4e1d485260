"""The GPU diagnostic types of MAX's ``max.profiler.gpu`` (there msgspec
structs; here dataclasses with ``to_dict``/``from_dict`` so that
``json.dumps(stats.to_dict())`` round-trips without extra dependencies)."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any, Optional


class ThrottleReason(str, enum.Enum):
    """Why a GPU's clocks are held down (NVML's clock event reasons). A
    ``str`` enum: each member equals its name (``"sw_power_cap"``) and
    serialises as it."""

    GPU_IDLE = "gpu_idle"
    APPLICATIONS_CLOCKS_SETTING = "applications_clocks_setting"
    SW_POWER_CAP = "sw_power_cap"
    HW_SLOWDOWN = "hw_slowdown"
    SYNC_BOOST = "sync_boost"
    SW_THERMAL_SLOWDOWN = "sw_thermal_slowdown"
    HW_THERMAL_SLOWDOWN = "hw_thermal_slowdown"
    HW_POWER_BRAKE_SLOWDOWN = "hw_power_brake_slowdown"
    DISPLAY_CLOCK_SETTING = "display_clock_setting"

    def __str__(self) -> str:
        return self.value


# Reasons that mean real throttling; gpu_idle alone does not.
HARDWARE_THROTTLE_REASONS: frozenset[ThrottleReason] = frozenset(
    {
        ThrottleReason.SW_POWER_CAP,
        ThrottleReason.HW_SLOWDOWN,
        ThrottleReason.SYNC_BOOST,
        ThrottleReason.SW_THERMAL_SLOWDOWN,
        ThrottleReason.HW_THERMAL_SLOWDOWN,
        ThrottleReason.HW_POWER_BRAKE_SLOWDOWN,
    }
)


@dataclass(frozen=True)
class MemoryStats:
    total_bytes: int
    free_bytes: int
    used_bytes: int
    reserved_bytes: Optional[int]  # driver-reserved; None on AMD


@dataclass(frozen=True)
class UtilizationStats:
    gpu_usage_percent: int  # 0-100
    memory_activity_percent: Optional[int]


@dataclass(frozen=True)
class ClockStats:
    core_mhz: int
    core_max_mhz: int
    mem_mhz: Optional[int]
    mem_max_mhz: Optional[int]
    # None when the vendor has no such API (always on AMD).
    throttle_reasons: Optional[list[ThrottleReason]]


@dataclass(frozen=True)
class GPUStats:
    memory: MemoryStats
    utilization: UtilizationStats
    clocks: Optional[ClockStats] = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only (throttle reasons as strings)."""
        d = asdict(self)
        if d["clocks"] and d["clocks"]["throttle_reasons"] is not None:
            d["clocks"]["throttle_reasons"] = [str(r) for r in d["clocks"]["throttle_reasons"]]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GPUStats":
        clocks = d.get("clocks")
        if clocks is not None:
            reasons = clocks.get("throttle_reasons")
            clocks = ClockStats(**{**clocks, "throttle_reasons": None if reasons is None else
                                   [ThrottleReason(r) for r in reasons]})
        return cls(memory=MemoryStats(**d["memory"]), utilization=UtilizationStats(**d["utilization"]),
                   clocks=clocks)


def stats_to_json_dict(stats: dict[str, GPUStats]) -> dict[str, Any]:
    """``{"nv0": GPUStats, ...}`` as plain JSON types."""
    return {k: v.to_dict() for k, v in stats.items()}


def stats_from_json_dict(d: dict[str, Any]) -> dict[str, GPUStats]:
    return {k: GPUStats.from_dict(v) for k, v in d.items()}
