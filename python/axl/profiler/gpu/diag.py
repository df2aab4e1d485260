"""GPUDiagContext: every NVIDIA (NVML) and AMD (ROCm SMI) GPU of the host,
read in one call. A vendor whose library is missing or fails to open is
skipped silently (the exception is kept in ``errors``), so a host with
neither gives ``{}``."""

from __future__ import annotations

from typing import Any, Optional

from ._nvml import NVMLContext
from ._rsmi import RSMIContext
from .types import GPUStats


class GPUDiagContext:
    def __init__(self) -> None:
        self._entered = False
        self._nvml: Optional[NVMLContext] = None
        self._rsmi: Optional[RSMIContext] = None
        self.errors: dict[str, BaseException] = {}

    def __enter__(self) -> "GPUDiagContext":
        assert not self._entered, "Can't enter an already-entered context"
        self._entered = True
        self.errors = {}
        try:
            self._nvml = NVMLContext()
        except Exception as e:  # noqa: BLE001 - a missing vendor is not an error
            self.errors["nvml"] = e
        try:
            self._rsmi = RSMIContext()
        except Exception as e:  # noqa: BLE001
            self.errors["rocm_smi"] = e
        return self

    def get_stats(self) -> dict[str, GPUStats]:
        """``{"nv0": ..., "nv1": ..., "amd0": ...}``; ``{}`` before entering."""
        out: dict[str, GPUStats] = {}
        if self._nvml is not None:
            out.update({f"nv{i}": s for i, s in enumerate(self._nvml.get_stats())})
        if self._rsmi is not None:
            out.update({f"amd{i}": s for i, s in enumerate(self._rsmi.get_stats())})
        return out

    def __exit__(self, *exc: Any) -> None:
        assert self._entered, "GPUDiagContext exited without being entered"
        self._entered = False
        for ctx in (self._nvml, self._rsmi):
            if ctx is not None:
                ctx.close()
        self._nvml = self._rsmi = None
