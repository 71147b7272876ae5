"""One row per commit x backend x test: what moved against the previous commit measured.

Pure: records in, steps out.  Per step, the change of calls, graph breaks
and latency against the previous commit that measured the test, where the
calls changed (``culprits.entry_points``), and where a test's latency series
changes level (``changepoints.e_divisive``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec.structs import replace

from kerasperf_lab.history import changepoints
from kerasperf_lab.history.cache import SweepRun
from pytest_kerasperf import changes
from pytest_kerasperf.ab.commits import Commit, Sha
from pytest_kerasperf.ab.runner import Selection
from pytest_kerasperf.codec import MAX_COUNT, Count, Milliseconds
from pytest_kerasperf.culprits import EntryPoint
from pytest_kerasperf.explain import Explanation
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.metrics.graph_breaks import BreakChange, GraphBreaksChange
from pytest_kerasperf.metrics.latency import LatencyChange
from pytest_kerasperf.record import Backend

if TYPE_CHECKING:
    from pytest_kerasperf.ab.runner import Measurement
    from pytest_kerasperf.record import Record

Status = Literal["first", "changed", "unchanged", "failed", "missing"]
SWEEP_SCHEMA = "kerasperf-sweep/2"
#: Longer text is refused in a sweep read back (titles, errors, function names are far shorter).
MAX_TEXT = 2000
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
Delta = Annotated[int, msgspec.Meta(ge=-MAX_COUNT, le=MAX_COUNT)]


class Step(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row: a test's numbers at one commit against the previous commit that measured it."""

    index: Count  # the commit's position in the range (0: the start)
    commit: Commit
    backend: Backend
    status: Status
    key: Text | None = msgspec.field(default=None, name="test")
    against: Sha | None = None  # the sha compared with
    keras: Text | None = None
    calls: Count | None = None
    calls_delta: Delta | None = None
    graph_breaks: Count | None = None
    graph_breaks_delta: Delta | None = None
    latency_ms: Milliseconds | None = None
    latency_delta_pct: float | None = None
    #: E-divisive: the latency series of this test changes level here (segment medians)
    latency_change: changepoints.ChangePoint | None = msgspec.field(
        default=None, name="latency_change_point"
    )
    entry_points: tuple[EntryPoint, ...] = ()
    #: the change of calls as own-count changes grouped by caller, summing to ``calls_delta``
    explanation: Explanation | None = None
    break_changes: tuple[BreakChange, ...] = msgspec.field(default=(), name="graph_break_changes")
    error: Text | None = None


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


class SweepTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A sweep (``kerasperf sweep --json``, schema ``kerasperf-sweep/2``): the one model the
    command writes, its views render and ``kerasperf publish`` reads back."""

    spec: Text = msgspec.field(name="range")
    commits: tuple[Commit, ...]
    backends: tuple[Backend, ...]
    selection: Selection
    environments: dict[str, dict[str, str | None]]
    steps: tuple[Step, ...] = msgspec.field(name="rows")
    repo: Text | None = None
    run: SweepRun | None = None  # what this run measured; None for a merge
    schema: Literal["kerasperf-sweep/2"] = "kerasperf-sweep/2"


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
        environments={backend: dict(fields) for backend, fields in environments.items()},
        steps=tuple(build_steps(commits, backends_, measurements, top)),
    )
