"""``--kerasperf-junit-properties``: a few numbers of each perf test for junitxml."""

from __future__ import annotations

from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.outcome import Outcome


def junit_properties(outcome: Outcome) -> list[tuple[str, object]]:
    """``--kerasperf-junit-properties``: a few numbers of the outcome for junitxml."""
    record = outcome.record
    calls = outcome.verdict.change(CallsChange)
    found: list[tuple[str, object]] = [
        ("kerasperf_status", outcome.verdict.status),
        ("kerasperf_calls", record.calls),
        ("kerasperf_calls_delta", calls.delta if calls else None),
        ("kerasperf_graph_breaks", record.graph_breaks.breaks if record.graph_breaks else None),
        ("kerasperf_latency_median_ms", record.latency.median_ms if record.latency else None),
    ]
    return [(name, value) for name, value in found if value is not None]
