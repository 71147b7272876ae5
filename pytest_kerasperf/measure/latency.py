"""Latency statistics, taken from pytest-benchmark's own Stats."""

from __future__ import annotations

from typing import Any

from pytest_kerasperf.record import LatencyRecord


def from_benchmark_stats(stats: Any, *, device: str, accelerator: bool) -> LatencyRecord:
    """Milliseconds per workload call from pytest-benchmark ``Stats`` (seconds)."""
    return LatencyRecord(
        median_ms=float(stats.median) * 1e3,
        iqr_ms=float(stats.iqr) * 1e3,
        rounds=int(stats.rounds),
        device=device,
        accelerator=accelerator,
    )
