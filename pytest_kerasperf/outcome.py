"""One perf test's outcome: what it measured, what it was compared with, the verdict.

The one typed value a test's result travels as.  The gate builds it; the
reports, the run's account and ``kerasperf accept`` read it.  JSON only at
process boundaries, as pytest's ``reports.py`` does: a report's
``user_properties`` (so that it crosses pytest-xdist), ``--kerasperf-json``
files, and the results files ``kerasperf report`` and ``accept`` read
(``to_json`` / ``from_json``; schemas/results.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_kerasperf.record import Record
from pytest_kerasperf.verdict import Verdict

Category = Literal["regression", "improvement", "unchanged", "not compared"]


@dataclass(frozen=True)
class BaselineSummary:
    """What a test was compared with, as a results file keeps it (not the whole entry)."""

    calls: int
    graph_breaks: int | None
    latency_median_ms: float | None
    environment: Mapping[str, str | None]
    #: the entry's spread and rounds, so a latency change against it can be judged comparable
    latency_iqr_ms: float | None = None
    latency_rounds: int | None = None

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

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "graph_breaks": self.graph_breaks,
            "latency_median_ms": self.latency_median_ms,
            "latency_iqr_ms": self.latency_iqr_ms,
            "latency_rounds": self.latency_rounds,
            "environment": dict(self.environment),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineSummary:
        latency, iqr, rounds = (
            data.get("latency_median_ms"),
            data.get("latency_iqr_ms"),
            data.get("latency_rounds"),
        )
        return cls(
            calls=int(data["calls"]),
            graph_breaks=None if data.get("graph_breaks") is None else int(data["graph_breaks"]),
            latency_median_ms=None if latency is None else float(latency),
            environment=dict(data.get("environment", {})),
            latency_iqr_ms=None if iqr is None else float(iqr),
            latency_rounds=None if rounds is None else int(rounds),
        )


@dataclass(frozen=True)
class Profile:
    """The pyinstrument profile taken of a test's workload after its verdict."""

    html: str  # the HTML file, relative to where pytest ran when under it
    text: str  # the hottest frames and the trimmed call tree


@dataclass(frozen=True)
class Outcome:
    """A perf test's result: its record, what it was compared with, the verdict and more."""

    nodeid: str
    key: str
    record: Record
    verdict: Verdict
    passed: bool  # the test's pytest outcome after the verdict
    variant: str | None = None  # the baseline variant of the record's environment
    baseline: BaselineSummary | None = None
    test_failed: bool = False  # failed on its own, before the verdict: never recorded
    latency_not_measured: str | None = None  # why timing did not run
    rerecord: str | None = None  # the command that re-records this test's entry
    location: tuple[str, int] | None = None  # (file, line) of the test, for annotations
    profile: Profile | None = None
    compared_with: tuple[str, str] | None = None  # --kerasperf-compare-ref: (REF, its commit)
    ab: Mapping[str, Any] | None = None  # --kerasperf-compare-ref: the A/B verdict's JSON

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
        if not self.verdict.compared:
            return "not compared"
        if self.verdict.status == "improved":
            return "improvement"
        return "unchanged"

    def overhead_json(self) -> dict[str, Any] | None:
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

    def to_json(self) -> dict[str, Any]:
        """One result of a results file (and of a report's ``user_properties``)."""
        record = self.record.to_json()
        latency = record["latency_ms"]
        graph = record["graph_breaks"]
        data: dict[str, Any] = {
            "nodeid": self.nodeid,
            "key": self.key,
            "variant": self.variant,
            "backend": self.record.backend,
            "mode": self.record.mode,
            "calls": self.record.calls,
            "graph_breaks": graph["breaks"] if graph else None,
            "graphs": graph["graphs"] if graph else None,
            "latency_median_ms": latency["median"] if latency else None,
            "latency_iqr_ms": latency["iqr"] if latency else None,
            "latency_rounds": latency["rounds"] if latency else None,
            "latency_not_measured": self.latency_not_measured,
            "device": self.record.environment.get("device"),
            "test_failed": self.test_failed,
            "rerecord": self.rerecord,
            "location": (
                {"path": self.location[0], "line": self.location[1]} if self.location else None
            ),
            "profile": (
                {"html": self.profile.html, "text": self.profile.text} if self.profile else None
            ),
            "overhead": self.overhead_json(),
            "baseline": self.baseline.to_json() if self.baseline else None,
            "verdict": self.verdict.to_json(self.passed),
            "record": record,
        }
        if self.compared_with is not None:
            data["compared_with"] = {"ref": self.compared_with[0], "commit": self.compared_with[1]}
            data["ab"] = dict(self.ab) if self.ab is not None else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        """The outcome a result holds (after the schema checked it: cli validates files)."""
        location = data.get("location")
        profile = data.get("profile")
        baseline = data.get("baseline")
        compared = data.get("compared_with")
        return cls(
            nodeid=str(data["nodeid"]),
            key=str(data["key"]),
            record=Record.from_json(data["record"]),
            verdict=Verdict.from_json(data["verdict"]),
            passed=bool(data["verdict"]["passed"]),
            variant=None if data.get("variant") is None else str(data["variant"]),
            baseline=BaselineSummary.from_json(baseline) if baseline is not None else None,
            test_failed=bool(data["test_failed"]),
            latency_not_measured=data.get("latency_not_measured"),
            rerecord=data.get("rerecord"),
            location=(str(location["path"]), int(location["line"])) if location else None,
            profile=Profile(str(profile["html"]), str(profile["text"])) if profile else None,
            compared_with=(str(compared["ref"]), str(compared["commit"])) if compared else None,
            ab=data.get("ab") if compared else None,
        )
