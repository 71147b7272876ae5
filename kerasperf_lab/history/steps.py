"""One row per commit x backend x test: what moved against the previous commit measured.

Pure: records in, steps out: each followed metric's value (``FOLLOWED``), the verdict's changes
against the previous commit that measured the test, and the change points of a noisy series.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import msgspec
from msgspec.structs import replace

from kerasperf_lab.history import changepoints
from kerasperf_lab.history.cache import SweepRun
from pytest_kerasperf import changes, metrics
from pytest_kerasperf.ab.commits import Commit, Sha
from pytest_kerasperf.ab.runner import Selection
from pytest_kerasperf.codec import Count, Milliseconds
from pytest_kerasperf.metrics.base import Change
from pytest_kerasperf.metrics.calls import CallsChange
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

#: The metrics the lab follows over commits, in the registry's order: those that say what
#: their series is (``Metric.series``), each with its value in a record (``Metric.value``).
FOLLOWED = tuple(metric for metric in metrics.METRICS if metric.series)
#: A followed metric's name (to msgspec, the literal names); a file read back with another
#: is refused.
if TYPE_CHECKING:
    Series = str
else:
    Series = Literal[tuple(m.name for m in FOLLOWED)]


class Step(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row: a test's numbers at one commit against the previous commit that measured it."""

    index: Count  # the commit's position in the range (0: the start)
    commit: Commit
    backend: Backend
    status: Status
    key: Text | None = msgspec.field(default=None, name="test")
    against: Sha | None = None  # the sha compared with
    keras: Text | None = None
    #: each followed metric's value at this commit, by the metric's name (``FOLLOWED``)
    values: dict[Series, Count | Milliseconds] = {}
    #: the verdict's changes against ``against``: one per metric that could compare
    changes: tuple[AnyChange, ...] = ()
    #: E-divisive: this metric's series of the test changes level here (segment medians)
    change_points: dict[Series, changepoints.ChangePoint] = {}
    error: Text | None = None

    def value(self, metric: str) -> int | float | None:
        """The value of ``metric`` (``step.value("calls")``), or None where not measured."""
        return self.values.get(metric)

    def change(self, kind: type[C]) -> C | None:
        """The change of one metric (``step.change(CallsChange)``), or None."""
        return next((c for c in self.changes if isinstance(c, kind)), None)

    def change_point(self, metric: str) -> changepoints.ChangePoint | None:
        return self.change_points.get(metric)


def values_of(record: Record) -> dict[str, int | float]:
    """Each followed metric's value in ``record``, by the metric's name, where measured."""
    return {m.name: v for m in FOLLOWED if (v := m.value(record)) is not None}


def diff(before: Record, after: Record, top: int) -> tuple[tuple[AnyChange, ...], bool]:
    """The verdict's changes between two records of one test (the calls' with its first
    ``top`` entry points and no function diff), and whether an exact count moved (as the
    step keeps the changes)."""
    found = tuple(
        replace(c, entry_points=c.entry_points[:top], function_diff=())
        if isinstance(c, CallsChange)
        else c
        for c in changes.diff(before, after).changes
    )
    return found, any(c.counts_moved for c in found)


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
                values = values_of(record)
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
    return mark_change_points(steps)


def mark_change_points(steps: Sequence[Step]) -> list[Step]:
    """Mark where each test's series of a noisy metric (latency) changes level, by E-divisive
    means: the first commit of each new level (docs/history.md, "Latency change points")."""
    marked = list(steps)
    for metric in (m.name for m in FOLLOWED if not m.exact):
        series: dict[tuple[str, str], list[int]] = {}  # (backend, key) -> positions in steps
        for position, step in enumerate(steps):
            if step.key is not None and step.value(metric) is not None:
                series.setdefault((step.backend, step.key), []).append(position)
        for positions in series.values():
            values = [float(steps[i].value(metric) or 0.0) for i in positions]
            for point in changepoints.e_divisive(values):
                at = positions[point.index]
                points = {**marked[at].change_points, metric: point}
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
