"""The per-PR table's rows: each PR's before and after records, side by side.

Pure: pairs (``pulls.PullPair``) and measurements (``runner.Measurement``) in, rows out; the
columns are docs/history.md's ("Per PR").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from kerasperf_lab.history.pulls import PullPair
from kerasperf_lab.history.steps import Series, Text, values_of
from pytest_kerasperf import changes
from pytest_kerasperf.ab.runner import Selection
from pytest_kerasperf.explain import Explanation
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.record import Backend, Mode, Record

if TYPE_CHECKING:
    from kerasperf_lab.publish.families import FamilyMapping
    from pytest_kerasperf.ab.runner import Measurement

PRS_SCHEMA = "kerasperf-prs/3"
#: the per-PR tables ``kerasperf publish`` recognises: older versions, refused by name, and this
PRS_SCHEMAS = ("kerasperf-prs/2", PRS_SCHEMA)
Count = Annotated[int, msgspec.Meta(ge=0)]
Ms = Annotated[float, msgspec.Meta(ge=0)]


def _families(record: Record, mapping: FamilyMapping | None) -> dict[str, int]:
    if mapping is None or not record.calls_by_function:
        return {}
    grouped = mapping.group(record.calls_by_function)
    return {family: sum(calls.values()) for family, calls in sorted(grouped.items())}


class PrRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One test on one backend, before and after one PR: its numbers on both sides, where its
    calls changed (exact), its hot-function families."""

    backend: Backend
    test: Text  # the baseline key, e.g. test_standard.py::test_lm_forward[eager]
    mode: Mode
    calls_before: Count
    calls_after: Count
    #: each followed metric's value on each side, by the metric's name, where measured
    values_before: dict[Series, Count | Ms] = {}
    values_after: dict[Series, Count | Ms] = {}
    recompiles_before: Count | None = None
    recompiles_after: Count | None = None
    latency_iqr_before_ms: Ms | None = None
    latency_iqr_after_ms: Ms | None = None
    explanation: Explanation | None = None
    hot_before: dict[Text, Count] = {}
    hot_after: dict[Text, Count] = {}

    @classmethod
    def of(
        cls, backend: str, test: str, before: Record, after: Record, mapping: FamilyMapping | None
    ) -> PrRow:
        calls = changes.diff(before, after).get(CallsChange)
        return cls(
            backend=backend,
            test=test,
            mode=after.mode,
            calls_before=before.calls,
            calls_after=after.calls,
            values_before=values_of(before),
            values_after=values_of(after),
            recompiles_before=before.recompiles,
            recompiles_after=after.recompiles,
            latency_iqr_before_ms=before.latency.iqr_ms if before.latency else None,
            latency_iqr_after_ms=after.latency.iqr_ms if after.latency else None,
            explanation=calls.explanation if calls else None,
            hot_before=_families(before, mapping),
            hot_after=_families(after, mapping),
        )

    @property
    def calls_delta(self) -> int:
        return self.calls_after - self.calls_before

    @property
    def name(self) -> str:
        return self.test.rsplit("::", 1)[-1]

    def hot_changes(self) -> list[tuple[str, int, int]]:
        """The hot-function families whose calls changed: (family, before, after), by name."""
        families = sorted(set(self.hot_before) | set(self.hot_after))
        pairs = [(f, self.hot_before.get(f, 0), self.hot_after.get(f, 0)) for f in families]
        return [(family, old, new) for family, old, new in pairs if old != new]

    def pair(self, metric: str) -> tuple[int | float, int | float] | None:
        """``metric``'s value before and after, or None where a side did not measure it."""
        before, after = self.values_before.get(metric), self.values_after.get(metric)
        return None if before is None or after is None else (before, after)


class PrFailure(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    backend: Backend
    side: Literal["before", "after"]
    error: Text


class PrEntry(PullPair, frozen=True, forbid_unknown_fields=True):
    """One PR: its before and after (``pulls.PullPair``), its rows and what failed."""

    rows: tuple[PrRow, ...] = ()
    failed: tuple[PrFailure, ...] = ()

    def row(self, backend: str, test_name: str) -> PrRow | None:
        """The row of ``backend`` whose test is ``test_name`` (``test_lm_forward[eager]``)."""
        return next((r for r in self.rows if r.backend == backend and r.name == test_name), None)


class PrTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A per-PR table (``kerasperf prs --json``, schema ``kerasperf-prs/3``): the one model
    the command writes, its views render and ``kerasperf publish`` reads back (version 2 had
    a pair of fields per metric where 3 has ``values_before`` and ``values_after``)."""

    repo: Text
    target: Text
    backends: tuple[Backend, ...]
    selection: Selection
    environments: dict[str, dict[str, str | None]]
    entries: tuple[PrEntry, ...] = msgspec.field(name="prs")
    schema: Literal["kerasperf-prs/3"] = "kerasperf-prs/3"


def entry_of(
    pair: PullPair,
    backends_: Sequence[str],
    measurements: Mapping[tuple[str, str], Measurement],
    mapping: FamilyMapping | None = None,
) -> PrEntry:
    """One PR's rows: every test measured on both sides, per backend."""
    rows: list[PrRow] = []
    failed: list[PrFailure] = []
    for backend in backends_:
        before = measurements.get((pair.before.sha, backend))
        after = measurements.get((pair.after.sha, backend))
        sides: tuple[tuple[Literal["before", "after"], Measurement | None], ...] = (
            ("before", before),
            ("after", after),
        )
        for side, measurement in sides:
            if measurement is None:
                failed.append(PrFailure(backend, side, "not measured"))
            elif not measurement.ok:
                failed.append(PrFailure(backend, side, measurement.error or "failed"))
        if before is None or after is None:
            continue  # a failed side still gives the rows of the tests that passed
        before_runs = {run.key: run.record for run in before.runs}
        for run in after.runs:
            old = before_runs.get(run.key)
            if old is not None:
                rows.append(PrRow.of(backend, run.key, old, run.record, mapping))
    fields = {name: getattr(pair, name) for name in pair.__struct_fields__}
    return PrEntry(**fields, rows=tuple(rows), failed=tuple(failed))


def build(
    repo: str,
    target: str,
    pairs: Sequence[PullPair],
    backends_: Sequence[str],
    selection: Selection,
    measurements: Mapping[tuple[str, str], Measurement],
    environments: Mapping[str, Mapping[str, str | None]],
    mapping: FamilyMapping | None = None,
) -> PrTable:
    return PrTable(
        repo=repo,
        target=target,
        backends=tuple(backends_),
        selection=selection,
        environments={backend: dict(fields) for backend, fields in environments.items()},
        entries=tuple(entry_of(pair, backends_, measurements, mapping) for pair in pairs),
    )
