"""The article's views of one run's per-backend results (``kerasperf report --article``):
latency, calls, graph breaks and hot-function families, as docs/article-report.md describes
them.  :func:`build` turns the outcomes of ``--kerasperf-json`` files into plain rows
(:class:`Article`); ``article_render`` only renders those rows, as ``charts.py`` only draws them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kerasperf_lab.publish.comparable import Ratio, Timing, ratio
from kerasperf_lab.publish.families import DEFAULT_FAMILIES as DEFAULT_FAMILIES
from kerasperf_lab.publish.families import OTHER, FamilyMapping
from kerasperf_lab.publish.families import UNATTRIBUTED as UNATTRIBUTED
from kerasperf_lab.publish.families import load_families as load_families
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.metrics.graph_breaks import GraphBreaksChange
from pytest_kerasperf.outcome import BaselineSummary, Outcome
from pytest_kerasperf.record import BACKENDS, MODES, BreakReason, Record

#: how each backend calls its compiled mode, as the article does.
COMPILED_LABEL = {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf.function"}
#: a train step's compiled mode is ``model.compile(jit_compile=True)``: on tensorflow that is
#: ``tf.function(jit_compile=True)``, XLA, where the compiled forwards are plain tf.function.
TRAIN_COMPILED_LABEL = {**COMPILED_LABEL, "tensorflow": "tf.function + XLA"}


@dataclass(frozen=True)
class Row:
    """What every row of the views is of: one config (backend x mode) running one workload."""

    backend: str
    mode: str
    workload: str


@dataclass(frozen=True)
class LatencyRow(Row):
    """Milliseconds per call of one config running one workload.

    Each median comes with what its run says about it (``comparable.Timing``),
    and each ratio is ``comparable.ratio``'s: a value only where the rule lets
    the two medians be divided, else the reason it refused.
    """

    plain: Timing | None
    baseline: Timing | None
    current: Timing | None

    @property
    def current_ms(self) -> float | None:
        return None if self.current is None else self.current.median_ms

    @property
    def change(self) -> Ratio:
        """current / baseline: below 1 is faster than the baseline."""
        return ratio(self.current, self.baseline)

    @property
    def overhead(self) -> Ratio:
        """Keras / plain framework, same run."""
        return ratio(self.current, self.plain, same_run=True)


@dataclass(frozen=True)
class CallsRow(Row):
    """Python calls per workload call of one backend x mode x workload."""

    calls: int
    baseline_calls: int | None
    #: measured - baseline, as the verdict compared them (None: not compared).
    calls_delta: int | None
    plain_calls: int | None

    @property
    def overhead(self) -> float | None:
        """Keras calls / plain-framework calls."""
        if self.plain_calls is None or self.plain_calls <= 0:
            return None
        return self.calls / self.plain_calls


@dataclass(frozen=True)
class GraphRow(Row):
    """Graph breaks (torch.compile) and recompiles per call of one compiled model."""

    breaks: int | None
    graphs: int | None
    breaks_delta: int | None
    recompiles: int | None
    reasons: tuple[BreakReason, ...]


@dataclass(frozen=True)
class FamilyRow:
    """One family's calls per workload call on each backend (None: no such result)."""

    family: str
    description: str
    calls: Mapping[str, int | None]
    functions: Mapping[str, Mapping[str, int]]  # backend -> function -> calls

    @property
    def total(self) -> int:
        return sum(n for n in self.calls.values() if n is not None)

    def top_functions(self, n: int = 3) -> list[tuple[str, int]]:
        """The family's biggest functions, summed over the backends."""
        summed: Counter[str] = Counter()
        for counts in self.functions.values():
            summed.update(counts)
        return sorted(summed.items(), key=lambda item: (-item[1], item[0]))[:n]


@dataclass(frozen=True)
class FamilyTable:
    """The hot-function families of one workload x mode, one column per backend."""

    workload: str
    mode: str
    backends: tuple[str, ...]
    rows: tuple[FamilyRow, ...]
    totals: Mapping[str, int | None]  # backend -> record calls


@dataclass(frozen=True)
class Article:
    backends: tuple[str, ...]
    latency: tuple[LatencyRow, ...]
    calls: tuple[CallsRow, ...]
    graphs: tuple[GraphRow, ...]
    families: tuple[FamilyTable, ...]
    mapping: FamilyMapping


def workload_of(key: str, mode: str) -> str:
    """The test id without its mode parameter: ``f.py::test_cnn[eager]`` -> ``f.py::test_cnn``."""
    base, bracket, params = key.partition("[")
    if not bracket or not params.endswith("]"):
        return key
    kept = [part for part in params[:-1].split("-") if part != mode]
    return base + (f"[{'-'.join(kept)}]" if kept else "")


def workload_name(workload: str) -> str:
    """What a table shows of a workload: the test without its file."""
    return workload.rsplit("::", 1)[-1]


def config_label(backend: str, mode: str, workload: str = "") -> str:
    """``Keras[torch] · torch.compile``, as the article names its configs (``workload``: a train
    step's compiled mode on tensorflow is XLA)."""
    train_step = workload_name(workload).split("[")[0].endswith("_train_step")
    labels = TRAIN_COMPILED_LABEL if train_step else COMPILED_LABEL
    shown = labels.get(backend, mode) if mode == "compiled" else mode
    return f"Keras[{backend}] · {shown}"


def in_order(items: Iterable[str], known: Sequence[str]) -> list[str]:
    """The distinct ``items``: those ``known`` in its order, then the others by name."""
    return sorted(set(items), key=lambda x: (known.index(x) if x in known else len(known), x))


@dataclass(frozen=True)
class _Entry:
    at: tuple[str, str, str]  # backend, mode, workload
    record: Record
    outcome: Outcome


def build(results: Sequence[Outcome], mapping: FamilyMapping) -> Article:
    """The article's rows of ``results`` (the outcomes of one run's --kerasperf-json files).

    Raises ValueError when one backend has the same test twice.
    """
    workloads: list[str] = []  # first-seen order: the suite's order
    entries: dict[tuple[str, str, str], _Entry] = {}
    for result in results:
        record = result.record
        workload = workload_of(result.key, record.mode)
        if workload not in workloads:
            workloads.append(workload)
        at = (record.backend, record.mode, workload)
        if at in entries:
            raise ValueError(f"{result.key} ({record.backend}) is in the results twice")
        entries[at] = _Entry(at, record, result)
    backends = tuple(in_order((b for b, _, _ in entries), BACKENDS))
    modes = in_order((m for _, m, _ in entries), MODES)
    rank = {
        at: (backends.index(at[0]), modes.index(at[1]), workloads.index(at[2])) for at in entries
    }
    ordered = [entries[at] for at in sorted(entries, key=rank.__getitem__)]
    tables = []
    for workload in workloads:
        for mode in in_order((m for _, m, w in entries if w == workload), MODES):
            here = {b: entries.get((b, mode, workload)) for b in backends}
            tables.append(_family_table(workload, mode, here, mapping))
    return Article(
        backends=backends,
        latency=tuple(_latency_row(e) for e in ordered),
        calls=tuple(_calls_row(e) for e in ordered),
        graphs=tuple(
            _graph_row(e)
            for e in ordered
            if e.record.graph_breaks is not None or e.record.recompiles is not None
        ),
        families=tuple(tables),
        mapping=mapping,
    )


def _latency_row(entry: _Entry) -> LatencyRow:
    record, baseline = entry.record, entry.outcome.baseline
    twin_latency = record.plain_twin.latency if record.plain_twin else None
    return LatencyRow(
        *entry.at,
        plain=Timing.of(twin_latency) if twin_latency else None,
        baseline=baseline_timing(baseline) if baseline else None,
        current=Timing.of(record.latency) if record.latency else None,
    )


def baseline_timing(baseline: BaselineSummary) -> Timing | None:
    """The baseline entry's median as a results file keeps it, with its IQR, rounds and device.

    A results file written before the summary kept the entry's IQR and rounds
    (``outcome.BaselineSummary``) has neither, and the rule refuses a change
    against it as ``no spread``.
    """
    if baseline.latency_median_ms is None:
        return None
    return Timing(
        baseline.latency_median_ms,
        baseline.latency_iqr_ms,
        baseline.latency_rounds,
        device=baseline.environment.get("device"),
        accelerator=baseline.environment.get("accelerator") == "yes",
    )


def _calls_row(entry: _Entry) -> CallsRow:
    record, baseline = entry.record, entry.outcome.baseline
    return CallsRow(
        *entry.at,
        calls=record.calls,
        baseline_calls=baseline.calls if baseline else None,
        calls_delta=calls.delta if (calls := entry.outcome.verdict.change(CallsChange)) else None,
        plain_calls=record.plain_twin.calls if record.plain_twin else None,
    )


def _graph_row(entry: _Entry) -> GraphRow:
    record, graph = entry.record, entry.record.graph_breaks
    return GraphRow(
        *entry.at,
        breaks=graph.breaks if graph else None,
        graphs=graph.graphs if graph else None,
        breaks_delta=moved.delta
        if (moved := entry.outcome.verdict.change(GraphBreaksChange))
        else None,
        recompiles=record.recompiles,
        reasons=tuple(sorted(graph.reasons, key=lambda r: (-r.count, r.key))) if graph else (),
    )


def _family_table(
    workload: str, mode: str, here: Mapping[str, _Entry | None], mapping: FamilyMapping
) -> FamilyTable:
    grouped: dict[str, dict[str, dict[str, int]]] = {}
    for backend, entry in here.items():
        if entry is not None:
            families = grouped[backend] = mapping.group(entry.record.calls_by_function)
            missing = entry.record.calls - sum(sum(f.values()) for f in families.values())
            if missing:
                families[UNATTRIBUTED] = {UNATTRIBUTED: missing}
    names = {name for families in grouped.values() for name in families}
    rows = [
        FamilyRow(
            family=name,
            description=mapping.description(name),
            calls={
                backend: (
                    sum(grouped[backend].get(name, {}).values()) if backend in grouped else None
                )
                for backend in here
            },
            functions={backend: dict(grouped[backend].get(name, {})) for backend in grouped},
        )
        for name in names
    ]
    rank = [f.name for f in mapping.families] + [OTHER, UNATTRIBUTED]
    tail = {OTHER: 1, UNATTRIBUTED: 2}
    rows.sort(key=lambda row: (tail.get(row.family, 0), -row.total, rank.index(row.family)))
    return FamilyTable(
        workload=workload,
        mode=mode,
        backends=tuple(here),
        rows=tuple(rows),
        totals={b: (e.record.calls if e else None) for b, e in here.items()},
    )
