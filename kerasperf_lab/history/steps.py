"""One row per commit x backend x test: what moved against the previous commit measured.

Pure: records in, steps out.  Per step, each metric's value at the commit
(``Step.values``, by the metric's name), the verdict's changes against the
previous commit that measured the test (``changes.diff``: one change per
metric that could compare, the calls' with where they changed), and where a
test's latency series changes level (``changepoints.e_divisive``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import msgspec
from msgspec.structs import replace

from kerasperf_lab.history import changepoints
from kerasperf_lab.history.cache import SweepRun
from pytest_kerasperf import changes
from pytest_kerasperf.ab.commits import Commit, Sha
from pytest_kerasperf.ab.runner import Selection
from pytest_kerasperf.codec import Count, Milliseconds
from pytest_kerasperf.metrics.base import Change
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.metrics.graph_breaks import GraphBreaksChange
from pytest_kerasperf.record import Backend
from pytest_kerasperf.verdict import AnyChange

if TYPE_CHECKING:
    from pytest_kerasperf.ab.runner import Measurement
    from pytest_kerasperf.record import Record

Status = Literal["first", "changed", "unchanged", "failed", "missing"]
SWEEP_SCHEMA = "kerasperf-sweep/2"
#: Longer text is refused in a sweep read back (titles, errors, function names are far shorter).
MAX_TEXT = 2000
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
C = TypeVar("C", bound=Change)

#: The metrics a sweep follows (``pytest_kerasperf.metrics`` names them), each with its value
#: in a record, or None where the record did not measure it.
#: A series' name; a sweep read back with another is refused.
Series = Literal["calls", "graph_breaks", "latency"]
SERIES: dict[Series, Callable[[Record], int | float | None]] = {
    "calls": lambda record: record.calls,
    "graph_breaks": lambda record: record.graph_breaks.breaks if record.graph_breaks else None,
    "latency": lambda record: record.latency.median_ms if record.latency else None,  # median ms
}


class Step(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row: a test's numbers at one commit against the previous commit that measured it."""

    index: Count  # the commit's position in the range (0: the start)
    commit: Commit
    backend: Backend
    status: Status
    key: Text | None = msgspec.field(default=None, name="test")
    against: Sha | None = None  # the sha compared with
    keras: Text | None = None
    #: each metric's value at this commit, by the metric's name (``SERIES``)
    values: dict[Series, Count | Milliseconds] = {}
    #: the verdict's changes against ``against``: one per metric that could compare
    changes: tuple[AnyChange, ...] = ()
    #: E-divisive: this metric's series of the test changes level here (segment medians)
    change_points: dict[Series, changepoints.ChangePoint] = {}
    error: Text | None = None

    def value(self, metric: Series) -> int | float | None:
        """The value of ``metric`` (``step.value("calls")``), or None where not measured."""
        return self.values.get(metric)

    # Readers' shortcuts to the values most read (as ``Verdict``'s to its changes); each
    # metric's value is in ``values``, and nothing here decides anything.

    @property
    def calls(self) -> int | None:
        calls = self.values.get("calls")
        return None if calls is None else int(calls)

    @property
    def graph_breaks(self) -> int | None:
        breaks = self.values.get("graph_breaks")
        return None if breaks is None else int(breaks)

    @property
    def latency_ms(self) -> float | None:
        return self.values.get("latency")

    def change(self, kind: type[C]) -> C | None:
        """The change of one metric (``step.change(CallsChange)``), or None."""
        return next((c for c in self.changes if isinstance(c, kind)), None)

    def change_point(self, metric: Series) -> changepoints.ChangePoint | None:
        return self.change_points.get(metric)


def diff(before: Record, after: Record, top: int) -> tuple[tuple[AnyChange, ...], bool]:
    """The verdict's changes between two records of one test (the calls' with its first
    ``top`` entry points and no function diff), and whether an exact count moved."""
    moved = changes.diff(before, after)
    found = tuple(
        replace(c, entry_points=c.entry_points[:top], function_diff=())
        if isinstance(c, CallsChange)
        else c
        for c in moved.changes
    )
    calls = next((c for c in found if isinstance(c, CallsChange)), None)  # as the step keeps it
    graph = moved.get(GraphBreaksChange)
    changed = bool(
        (calls and (calls.delta or calls.entry_points or calls.digest_moved))
        or (graph and (graph.delta or graph.changes))
    )
    return found, changed


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
                keras, error = measurement.keras, measurement.error
                steps.append(Step(index, commit, backend, "failed", keras=keras, error=error))
                continue
            for run in measurement.runs:
                record = run.record
                values = {
                    name: v for name, value in SERIES.items() if (v := value(record)) is not None
                }
                step = Step(
                    index, commit, backend, "first", run.key, keras=measurement.keras, values=values
                )
                before = previous.get((backend, run.key))
                previous[(backend, run.key)] = (commit.sha, record)
                if before is not None:
                    found, changed = diff(before[1], record, top)
                    status: Status = "changed" if changed else "unchanged"
                    step = replace(step, status=status, against=before[0], changes=found)
                steps.append(step)
    return mark_latency_changes(steps)


def mark_latency_changes(steps: Sequence[Step], metric: Series = "latency") -> list[Step]:
    """Mark where each test's latency series changes level, by E-divisive means.

    Per (backend, test), the medians of the commits that measured latency, in
    commit order, go to ``changepoints.e_divisive`` (minimum segment 3 commits,
    minimum magnitude 5 %, permutation test at 5 %); the first commit of each
    new level gets the change point (``Step.change_points``) and counts as
    changed.  Fewer than 6 measured commits: no change point can be found, none
    is marked.
    """
    series: dict[tuple[str, str], list[int]] = {}  # (backend, key) -> positions in steps
    for position, step in enumerate(steps):
        if step.key is not None and step.value(metric) is not None:
            series.setdefault((step.backend, step.key), []).append(position)
    marked = list(steps)
    for positions in series.values():
        values = [float(steps[i].value(metric) or 0.0) for i in positions]
        for point in changepoints.e_divisive(values):
            at = positions[point.index]
            points: dict[Series, changepoints.ChangePoint] = {**marked[at].change_points}
            points[metric] = point
            marked[at] = replace(marked[at], change_points=points, status="changed")
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
