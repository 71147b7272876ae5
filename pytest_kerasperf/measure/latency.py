"""Latency statistics, taken from pytest-benchmark's own Stats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Latency:
    """Milliseconds per workload call, device-synced, after warm-up."""

    median_ms: float
    iqr_ms: float
    min_ms: float
    max_ms: float
    mean_ms: float
    stddev_ms: float
    rounds: int
    warmup: int
    device: str
    accelerator: bool


def from_benchmark_stats(stats: Any, *, warmup: int, device: str, accelerator: bool) -> Latency:
    """Convert pytest-benchmark ``Stats`` (seconds) to a Latency (milliseconds)."""
    return Latency(
        median_ms=float(stats.median) * 1e3,
        iqr_ms=float(stats.iqr) * 1e3,
        min_ms=float(stats.min) * 1e3,
        max_ms=float(stats.max) * 1e3,
        mean_ms=float(stats.mean) * 1e3,
        stddev_ms=float(stats.stddev) * 1e3,
        rounds=int(stats.rounds),
        warmup=warmup,
        device=device,
        accelerator=accelerator,
    )
