"""Measurements: each returns plain data and knows nothing about baselines."""

from __future__ import annotations

from pytest_kerasperf.measure.calls import CallCounts, CountsUnstable, count_calls
from pytest_kerasperf.measure.latency import from_benchmark_stats, time_rounds

__all__ = [
    "CallCounts",
    "CountsUnstable",
    "count_calls",
    "from_benchmark_stats",
    "time_rounds",
]
