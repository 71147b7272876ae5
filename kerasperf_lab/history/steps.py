"""One row per commit x backend x test: what moved against the previous commit measured.

Pure: records in, steps out.  Per step, the change of calls, graph breaks
and latency against the previous commit that measured the test, where the
calls changed (``culprits.entry_points``), and where a test's latency series
changes level (``changepoints.e_divisive``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from kerasperf_lab.history import changepoints
from pytest_kerasperf import changes
from pytest_kerasperf.ab.commits import Commit
from pytest_kerasperf.culprits import EntryPoint
from pytest_kerasperf.explain import Explanation
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.metrics.graph_breaks import BreakChange, GraphBreaksChange
from pytest_kerasperf.metrics.latency import LatencyChange

if TYPE_CHECKING:
    from pytest_kerasperf.ab.runner import Measurement, Selection
    from pytest_kerasperf.record import Record

Status = Literal["first", "changed", "unchanged", "failed", "missing"]


@dataclass(frozen=True)
class Step:
    """One row: a test's numbers at one commit against the previous commit that measured it."""

    index: int  # the commit's position in the range (0: the start)
    commit: Commit
    backend: str
    status: Status
    key: str | None = None
    against: str | None = None  # the sha compared with
    keras: str | None = None
    calls: int | None = None
    calls_delta: int | None = None
    graph_breaks: int | None = None
    graph_breaks_delta: int | None = None
    latency_ms: float | None = None
    latency_delta_pct: float | None = None
    #: E-divisive: the latency series of this test changes level here (segment medians)
    latency_change: changepoints.ChangePoint | None = None
    entry_points: tuple[EntryPoint, ...] = ()
    #: the change of calls as own-count changes grouped by caller, summing to ``calls_delta``
    explanation: Explanation | None = None
    break_changes: tuple[BreakChange, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "commit": self.commit.sha,
            "pr": self.commit.pr,
            "title": self.commit.title,
            "date": self.commit.date,
            "backend": self.backend,
            "status": self.status,
            "test": self.key,
            "against": self.against,
            "keras": self.keras,
            "calls": self.calls,
            "calls_delta": self.calls_delta,
            "graph_breaks": self.graph_breaks,
            "graph_breaks_delta": self.graph_breaks_delta,
            "latency_ms": self.latency_ms,
            "latency_delta_pct": self.latency_delta_pct,
            "latency_change_point": None
            if self.latency_change is None
            else {
                "before_ms": self.latency_change.before,
                "after_ms": self.latency_change.after,
                "relative": self.latency_change.relative,
                "p_value": self.latency_change.p_value,
            },
            "entry_points": [p.to_json() for p in self.entry_points],
            "explanation": None if self.explanation is None else self.explanation.to_json(),
            "graph_break_changes": [
                {
                    "frame": c.frame,
                    "reason": c.reason,
                    "before": c.before,
                    "after": c.after,
                    "line": c.line,
                }
                for c in self.break_changes
            ],
            "error": self.error,
        }


@dataclass(frozen=True)
class Moved:
    """What moved between two records of one test, as a step shows it (``changes.diff``)."""

    calls_delta: int
    entry_points: tuple[EntryPoint, ...] = ()
    explanation: Explanation | None = None
    graph_breaks_delta: int | None = None
    break_changes: tuple[BreakChange, ...] = ()
    latency_delta_pct: float | None = None
    profile_moved: bool = False  # calls moved between callers (the digest differs)

    @property
    def changed(self) -> bool:
        return bool(
            self.calls_delta
            or self.entry_points
            or self.profile_moved
            or self.graph_breaks_delta
            or self.break_changes
        )


def diff(before: Record, after: Record, top: int) -> Moved:
    """What moved between two records of one test: deltas, entry points, break changes."""
    moved = changes.diff(before, after)
    calls = moved.get(CallsChange) or CallsChange(before.calls, after.calls)
    graph = moved.get(GraphBreaksChange)
    latency = moved.get(LatencyChange)
    return Moved(
        calls_delta=calls.delta,
        entry_points=calls.entry_points[:top],
        explanation=calls.explanation,
        graph_breaks_delta=graph.delta if graph else None,
        break_changes=graph.changes if graph else (),
        latency_delta_pct=None if latency is None or latency.pct is None else round(latency.pct, 1),
        profile_moved=calls.digest_moved,
    )


def build_steps(
    commits: Sequence[Commit],
    backends_: Sequence[str],
    measurements: Mapping[tuple[str, str], Measurement],
    top: int = 3,
) -> list[Step]:
    """Every commit x backend x test, each against the previous commit that measured the test."""
    steps: list[Step] = []
    previous: dict[tuple[str, str], tuple[str, Record]] = {}  # (backend, key) -> (sha, record)
    for index, commit in enumerate(commits):
        for backend in backends_:
            measurement = measurements.get((commit.sha, backend))
            if measurement is None:
                steps.append(Step(index, commit, backend, "missing"))
                continue
            if not measurement.ok:
                steps.append(
                    Step(
                        index,
                        commit,
                        backend,
                        "failed",
                        keras=measurement.keras,
                        error=measurement.error,
                    )
                )
                continue
            for run in measurement.runs:
                record = run.record
                graph = record.graph_breaks.breaks if record.graph_breaks else None
                latency = record.latency.median_ms if record.latency else None
                before = previous.get((backend, run.key))
                previous[(backend, run.key)] = (commit.sha, record)
                base = Step(
                    index,
                    commit,
                    backend,
                    "first",
                    key=run.key,
                    keras=measurement.keras,
                    calls=record.calls,
                    graph_breaks=graph,
                    latency_ms=latency,
                )
                if before is None:
                    steps.append(base)
                    continue
                moved = diff(before[1], record, top)
                steps.append(
                    replace(
                        base,
                        status="changed" if moved.changed else "unchanged",
                        against=before[0],
                        calls_delta=moved.calls_delta,
                        entry_points=moved.entry_points,
                        explanation=moved.explanation,
                        graph_breaks_delta=moved.graph_breaks_delta,
                        break_changes=moved.break_changes,
                        latency_delta_pct=moved.latency_delta_pct,
                    )
                )
    return mark_latency_changes(steps)


def mark_latency_changes(steps: Sequence[Step]) -> list[Step]:
    """Mark where each test's latency series changes level, by E-divisive means.

    Per (backend, test), the medians of the commits that measured latency, in
    commit order, go to ``changepoints.e_divisive`` (minimum segment 3 commits,
    minimum magnitude 5 %, permutation test at 5 %); the first commit of each
    new level gets the change point and counts as changed.  Fewer than 6
    measured commits: no change point can be found, none is marked.
    """
    series: dict[tuple[str, str], list[int]] = {}  # (backend, key) -> positions in steps
    for position, step in enumerate(steps):
        if step.key is not None and step.latency_ms is not None:
            series.setdefault((step.backend, step.key), []).append(position)
    marked = list(steps)
    for positions in series.values():
        values = [steps[i].latency_ms or 0.0 for i in positions]
        for point in changepoints.e_divisive(values):
            position = positions[point.index]
            marked[position] = replace(marked[position], latency_change=point, status="changed")
    return marked


@dataclass(frozen=True)
class SweepTable:
    spec: str
    commits: tuple[Commit, ...]
    backends: tuple[str, ...]
    selection: Selection
    environments: Mapping[str, Mapping[str, str | None]]
    steps: tuple[Step, ...]


def build_table(
    spec: str,
    commits: Sequence[Commit],
    backends_: Sequence[str],
    selection: Selection,
    measurements: Mapping[tuple[str, str], Measurement],
    environments: Mapping[str, Mapping[str, str | None]],
    top: int = 3,
) -> SweepTable:
    return SweepTable(
        spec=spec,
        commits=tuple(commits),
        backends=tuple(backends_),
        selection=selection,
        environments=environments,
        steps=tuple(build_steps(commits, backends_, measurements, top)),
    )
