"""``--kerasperf-junit-properties``: a few numbers of each perf test for junitxml."""

from __future__ import annotations

from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.outcome import Outcome


def junit_properties(outcome: Outcome) -> list[tuple[str, object]]:
    """``--kerasperf-junit-properties``: the status, then each metric's numbers
    (``Metric.junit``: calls and their change, graph breaks, median latency)."""
    found: list[tuple[str, object]] = [("kerasperf_status", outcome.verdict.status)]
    by_type = {type(change): change for change in outcome.verdict.changes}
    for metric in METRICS:
        change = by_type.get(metric.change_type) if metric.change_type else None
        found += metric.junit(outcome.record, change)
    return [(name, value) for name, value in found if value is not None]
