"""``--kerasperf-junit-properties``: a few numbers of each perf test for junitxml."""

from __future__ import annotations

from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.outcome import Outcome


def junit_properties(outcome: Outcome) -> list[tuple[str, object]]:
    """``--kerasperf-junit-properties``: the status, then each metric's numbers
    (``Metric.junit``: calls and their change, graph breaks, median latency)."""
    found: list[tuple[str, object]] = [("kerasperf_status", outcome.verdict.status)]
    for metric in METRICS:
        found += metric.junit(outcome.record, metric.change_in(outcome.verdict))
    return [(name, value) for name, value in found if value is not None]
