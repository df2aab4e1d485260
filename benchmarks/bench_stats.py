"""Summaries shared by the Python benchmarks: a ratio measured in rounds
(the two sides interleaved within each round, so a burst of load on a shared
machine hits both) is reported as its median with the min-max over rounds."""

from __future__ import annotations

import statistics


def ratios(numerators: list[float], denominators: list[float]) -> list[float]:
    """Per-round ratios of two series measured in the same rounds."""
    return [a / b for a, b in zip(numerators, denominators)]


def spread(values: list[float], fmt: str = ".2f") -> str:
    """``median M (min-max A-B over N rounds)``."""
    return (f"median {statistics.median(values):{fmt}} "
            f"(min-max {min(values):{fmt}}-{max(values):{fmt}} over {len(values)} rounds)")


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"
