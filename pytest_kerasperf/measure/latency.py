"""Latency statistics, taken from pytest-benchmark's own Stats."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pytest_kerasperf.parts.latency import LatencyRecord


def from_benchmark_stats(stats: Any, *, device: str, accelerator: bool) -> LatencyRecord:
    """Milliseconds per workload call from pytest-benchmark ``Stats`` (seconds)."""
    return LatencyRecord(
        median_ms=float(stats.median) * 1e3,
        iqr_ms=float(stats.iqr) * 1e3,
        rounds=int(stats.rounds),
        device=device,
        accelerator=accelerator,
    )


def time_rounds(
    call: Callable[[], None], *, warmup: int, rounds: int, device: str, accelerator: bool
) -> LatencyRecord | None:
    """Warm up, then time ``rounds`` calls (each ends with its device sync) into
    pytest-benchmark's ``Stats``: for a second workload in one test (pytest-benchmark
    times one function per test)."""
    from pytest_benchmark.stats import Stats

    from pytest_kerasperf.measure import reach

    with reach.paused():
        for _ in range(warmup):
            call()
        stats = Stats()  # type: ignore[no-untyped-call]
        for _ in range(rounds):
            start = time.perf_counter()
            call()
            stats.update(time.perf_counter() - start)  # type: ignore[no-untyped-call]
        if not rounds:
            return None
        return from_benchmark_stats(stats, device=device, accelerator=accelerator)
