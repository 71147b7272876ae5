"""One perf test's outcome: what it measured, what it was compared with, the verdict.

The one typed value a test's result is, in process and in a results file: the
gate builds it, the reports, the run's account and ``kerasperf accept`` read
it.  It stays an object inside one process; it becomes JSON only where it
crosses one (a pytest-xdist worker's output, ``--kerasperf-json``), with the
codec generated from these types (``results_file``).
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from pytest_kerasperf.ab.result import ABResult
from pytest_kerasperf.codec import Count, Milliseconds, PositiveCount, to_data
from pytest_kerasperf.parts.graph_breaks import Breaks
from pytest_kerasperf.record import Key, NodeId, Record, Variant, record_data, test_key
from pytest_kerasperf.verdict import Verdict

#: The reports' grouping of the results, in the order they list them.
Category = Literal["regression", "win not recorded", "not compared", "improvement", "unchanged"]
CATEGORIES: tuple[Category, ...] = get_args(Category)


class BaselineSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a test was compared with, as a results file keeps it (not the whole entry)."""

    calls: Count
    graph_breaks: Breaks | None
    latency_median_ms: Milliseconds | None
    environment: dict[str, str | None]
    #: the entry's spread and rounds, so a latency change against it can be judged comparable
    latency_iqr_ms: Milliseconds | None = None
    latency_rounds: PositiveCount | None = None

    @classmethod
    def of(cls, record: Record) -> BaselineSummary:
        latency = record.latency
        return cls(
            calls=record.calls,
            graph_breaks=record.graph_breaks.breaks if record.graph_breaks else None,
            latency_median_ms=latency.median_ms if latency else None,
            environment=dict(record.environment),
            latency_iqr_ms=latency.iqr_ms if latency else None,
            latency_rounds=latency.rounds if latency else None,
        )


class Profile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The pyinstrument profile taken of a test's workload after its verdict."""

    html: str  # the HTML file, relative to where pytest ran when under it
    text: str  # the hottest frames and the trimmed call tree


class ComparedWith(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``--kerasperf-compare-ref``: the REF compared with, and its commit."""

    ref: str
    commit: str


class Outcome(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A perf test's result: its record, what it was compared with, the verdict and more."""

    nodeid: NodeId
    key: Key
    record: Record
    verdict: Verdict
    passed: bool  # the test's pytest outcome after the verdict
    variant: Variant | None = None  # the baseline variant of the record's environment
    baseline: BaselineSummary | None = None
    test_failed: bool = False  # failed on its own, before the verdict: never recorded
    latency_not_measured: str | None = None  # why timing did not run
    rerecord: str | None = None  # the command that re-records this test's entry
    location: tuple[str, int] | None = None  # (file, line) of the test, for annotations
    profile: Profile | None = None
    compared_with: ComparedWith | None = None  # --kerasperf-compare-ref
    ab: ABResult | None = None  # --kerasperf-compare-ref: the A/B latency verdict

    def __post_init__(self) -> None:
        if self.key != test_key(self.nodeid):
            raise ValueError(f"key {self.key!r} is not the test key of nodeid {self.nodeid!r}")

    @property
    def backend(self) -> str:
        return self.record.backend

    @property
    def mode(self) -> str:
        return self.record.mode

    @property
    def category(self) -> Category:
        """regression, improvement, unchanged or not compared (the reports' grouping)."""
        if self.verdict.status in ("regressed", "over-budget"):
            return "regression"
        if self.verdict.status == "win-not-recorded":
            return "win not recorded"
        if not self.verdict.compared:
            return "not compared"
        if self.verdict.status == "improved":
            return "improvement"
        return "unchanged"

    def overhead_json(self) -> dict[str, str | float | None] | None:
        """Keras / plain framework, same process and run: calls and median latency."""
        record = self.record
        if record.plain_twin is None:
            return None
        calls, latency = record.calls_overhead, record.latency_overhead
        return {
            "reference": record.plain_twin.name,
            "calls": None if calls is None else round(calls, 4),
            "latency": None if latency is None else round(latency, 4),
        }


def outcome_data(outcome: Outcome) -> dict[str, object]:
    """One result of a results file as JSON data: the outcome as its type encodes it, its
    record in the whole form (``record_data``).  Read back with ``msgspec.convert(data,
    Outcome)`` (trusted data; a results file is read through ``results_file``)."""
    data: dict[str, object] = to_data(outcome)
    data["record"] = record_data(outcome.record, whole=True)
    return data
