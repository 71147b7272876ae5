"""The per-PR table's rows: each PR's before and after records, side by side.

Pure: pairs (``pulls.PullPair``) and measurements (``runner.Measurement``)
in, rows out.  Per PR, per backend, per test measured on both sides: calls,
graph breaks, recompiles and latency before and after, the change of calls
explained exactly (``explain.explain``: own-count changes grouped by the
Keras function they were called from, summing to the delta), and the
hot-function families (``report/families.toml``) before and after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_kerasperf.explain import Explanation, explain

if TYPE_CHECKING:
    from pytest_kerasperf.history.pulls import PullPair
    from pytest_kerasperf.history.runner import Measurement, Selection
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.report.families import FamilyMapping

PRS_SCHEMA = "kerasperf-prs/1"


def _families(record: Record, mapping: FamilyMapping | None) -> dict[str, int]:
    if mapping is None or not record.calls_by_function:
        return {}
    grouped = mapping.group(record.calls_by_function)
    return {family: sum(calls.values()) for family, calls in sorted(grouped.items())}


@dataclass(frozen=True)
class PrRow:
    """One test on one backend, before and after one PR."""

    backend: str
    test: str  # the baseline key, e.g. test_standard.py::test_lm_forward[eager]
    mode: str
    before: Record
    after: Record
    explanation: Explanation | None
    hot_before: Mapping[str, int]
    hot_after: Mapping[str, int]

    @property
    def calls_delta(self) -> int:
        return self.after.calls - self.before.calls

    @property
    def name(self) -> str:
        return self.test.rsplit("::", 1)[-1]

    def graph_breaks(self) -> tuple[int, int] | None:
        if self.before.graph_breaks is None or self.after.graph_breaks is None:
            return None
        return self.before.graph_breaks.breaks, self.after.graph_breaks.breaks

    def to_json(self) -> dict[str, Any]:
        before, after = self.before, self.after

        def breaks(record: Record) -> int | None:
            return None if record.graph_breaks is None else record.graph_breaks.breaks

        def latency(record: Record, field: str) -> float | None:
            if record.latency is None:
                return None
            return float(getattr(record.latency, field))

        return {
            "backend": self.backend,
            "test": self.test,
            "mode": self.mode,
            "calls_before": before.calls,
            "calls_after": after.calls,
            "calls_delta": self.calls_delta,
            "graph_breaks_before": breaks(before),
            "graph_breaks_after": breaks(after),
            "recompiles_before": before.recompiles,
            "recompiles_after": after.recompiles,
            "latency_before_ms": latency(before, "median_ms"),
            "latency_after_ms": latency(after, "median_ms"),
            "latency_iqr_before_ms": latency(before, "iqr_ms"),
            "latency_iqr_after_ms": latency(after, "iqr_ms"),
            "explanation": None if self.explanation is None else self.explanation.to_json(),
            "hot_before": dict(self.hot_before),
            "hot_after": dict(self.hot_after),
        }


@dataclass(frozen=True)
class PrFailure:
    backend: str
    side: str  # "before" or "after"
    error: str

    def to_json(self) -> dict[str, str]:
        return {"backend": self.backend, "side": self.side, "error": self.error}


@dataclass(frozen=True)
class PrEntry:
    pair: PullPair
    rows: tuple[PrRow, ...]
    failed: tuple[PrFailure, ...] = ()

    def row(self, backend: str, test_name: str) -> PrRow | None:
        """The row of ``backend`` whose test is ``test_name`` (``test_lm_forward[eager]``)."""
        return next((r for r in self.rows if r.backend == backend and r.name == test_name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.pair.to_json(),
            "rows": [row.to_json() for row in self.rows],
            "failed": [failure.to_json() for failure in self.failed],
        }


@dataclass(frozen=True)
class PrTable:
    repo: str
    target: str
    backends: tuple[str, ...]
    selection: Selection
    environments: Mapping[str, Mapping[str, str | None]]
    entries: tuple[PrEntry, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": PRS_SCHEMA,
            "repo": self.repo,
            "target": self.target,
            "backends": list(self.backends),
            "selection": self.selection.to_json(),
            "environments": {b: dict(f) for b, f in self.environments.items()},
            "prs": [entry.to_json() for entry in self.entries],
        }


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
        for side, measurement in (("before", before), ("after", after)):
            if measurement is None:
                failed.append(PrFailure(backend, side, "not measured"))
            elif not measurement.ok:
                failed.append(PrFailure(backend, side, measurement.error or "failed"))
        if before is None or after is None:
            continue  # a failed side still gives the rows of the tests that passed
        before_runs = {run.key: run.record for run in before.runs}
        for run in after.runs:
            old = before_runs.get(run.key)
            if old is None:
                continue
            new = run.record
            explained = None
            if old.calls_by_function and new.calls_by_function and old.call_edges:
                explained = explain(
                    old.calls_by_function, old.call_edges, new.calls_by_function, new.call_edges
                )
            rows.append(
                PrRow(
                    backend=backend,
                    test=run.key,
                    mode=new.mode,
                    before=old,
                    after=new,
                    explanation=explained,
                    hot_before=_families(old, mapping),
                    hot_after=_families(new, mapping),
                )
            )
    return PrEntry(pair, tuple(rows), tuple(failed))


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
        environments=environments,
        entries=tuple(entry_of(pair, backends_, measurements, mapping) for pair in pairs),
    )
