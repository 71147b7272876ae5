"""The article's views of one run's per-backend results (``kerasperf report --article``).

Four views, as the issue #22561 write-up tabulates them:

* every config, every workload: plain-framework, baseline and current median
  latency, the change (current / baseline) and Keras / plain;
* Python calls per workload call, per backend, against the baseline and the
  plain framework;
* graph breaks per compiled model (and recompiles per call);
* hot functions: ``calls_by_function`` grouped into families
  (``families.toml``, or ``--families PATH``).

:func:`build` turns the result dicts of ``--kerasperf-json`` files into plain
rows (:class:`Article`); :func:`terminal_lines` and :func:`markdown` only
render those rows, as ``charts.py`` only draws them.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kerasperf.culprits import signed
from pytest_kerasperf.record import BACKENDS, MODES, BreakReason, Record
from pytest_kerasperf.report.terminal import table

DEFAULT_FAMILIES = Path(__file__).parent / "families.toml"
OTHER = "other"
#: calls_by_function does not add up to calls (should not happen; shown, not hidden).
UNATTRIBUTED = "unattributed"
#: how each backend calls its compiled mode, as the article does.
COMPILED_LABEL = {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf.function"}

Result = Mapping[str, Any]


class FamiliesError(Exception):
    """A families mapping that cannot be used; one line naming the file."""


# ---------------------------------------------------------------------------
# The family mapping


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    patterns: tuple[str, ...]

    def matches(self, function: str) -> bool:
        return any(fnmatch.fnmatchcase(function, pattern) for pattern in self.patterns)


@dataclass(frozen=True)
class FamilyMapping:
    """Families in priority order: a function belongs to the first that matches."""

    families: tuple[Family, ...]
    source: str

    def family_of(self, function: str) -> str:
        for family in self.families:
            if family.matches(function):
                return family.name
        return OTHER

    def group(self, calls_by_function: Mapping[str, int]) -> dict[str, dict[str, int]]:
        """family -> function -> calls; every function lands in exactly one family."""
        grouped: dict[str, dict[str, int]] = {}
        for function, count in calls_by_function.items():
            grouped.setdefault(self.family_of(function), {})[function] = count
        return grouped

    def description(self, name: str) -> str:
        for family in self.families:
            if family.name == name:
                return family.description
        if name == UNATTRIBUTED:
            return "calls not in calls_by_function"
        return "every function no family matches"


_FAMILY_KEYS = {"name", "description", "patterns"}


def load_families(path: Path | None = None) -> FamilyMapping:
    """The mapping in ``path`` (default: the bundled families.toml); FamiliesError if unusable."""
    path = path or DEFAULT_FAMILIES

    def bad(what: str) -> FamiliesError:
        return FamiliesError(f"{path}: not a families mapping: {what}")

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise FamiliesError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise FamiliesError(f"{path}: not valid TOML (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as error:
        message = " ".join(str(error).split())
        raise FamiliesError(f"{path}: not valid TOML ({message})") from None
    extra = sorted(set(data) - {"family"})
    if extra:
        raise bad(f"unknown top-level key {extra[0]!r} (expected [[family]] tables)")
    tables = data.get("family")
    if not isinstance(tables, list) or not tables:
        raise bad("no [[family]] table")
    families: list[Family] = []
    for number, entry in enumerate(tables, start=1):
        if not isinstance(entry, dict):
            raise bad(f"family {number} is not a table")
        missing = sorted(_FAMILY_KEYS - set(entry))
        if missing:
            raise bad(f"family {number}: missing {missing[0]!r}")
        unknown = sorted(set(entry) - _FAMILY_KEYS)
        if unknown:
            raise bad(f"family {number}: unknown key {unknown[0]!r}")
        name, description, patterns = entry["name"], entry["description"], entry["patterns"]
        if not isinstance(name, str) or not name.strip():
            raise bad(f"family {number}: 'name' must be a non-empty string")
        if name in (OTHER, UNATTRIBUTED) or name in {f.name for f in families}:
            raise bad(f"family {number}: name {name!r} is reserved or used twice")
        if not isinstance(description, str):
            raise bad(f"family {number} ({name}): 'description' must be a string")
        if (
            not isinstance(patterns, list)
            or not patterns
            or not all(isinstance(p, str) and p for p in patterns)
        ):
            raise bad(f"family {number} ({name}): 'patterns' must be a non-empty list of strings")
        families.append(Family(name=name, description=description, patterns=tuple(patterns)))
    return FamilyMapping(families=tuple(families), source=str(path))


# ---------------------------------------------------------------------------
# The rows


@dataclass(frozen=True)
class LatencyRow:
    """One config (backend x mode) running one workload: milliseconds per call."""

    backend: str
    mode: str
    workload: str
    plain_ms: float | None
    baseline_ms: float | None
    current_ms: float | None
    #: the baseline's latency was measured on another device than the current one.
    other_device: bool = False

    @property
    def change(self) -> float | None:
        """current / baseline: below 1 is faster than the baseline."""
        return _ratio(self.current_ms, self.baseline_ms)

    @property
    def overhead(self) -> float | None:
        """Keras / plain framework."""
        return _ratio(self.current_ms, self.plain_ms)


@dataclass(frozen=True)
class CallsRow:
    """Python calls per workload call of one backend x mode x workload."""

    backend: str
    mode: str
    workload: str
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
class GraphRow:
    """Graph breaks (torch.compile) and recompiles per call of one compiled model."""

    backend: str
    mode: str
    workload: str
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
        summed: dict[str, int] = {}
        for counts in self.functions.values():
            for function, count in counts.items():
                summed[function] = summed.get(function, 0) + count
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


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


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


def config_label(backend: str, mode: str) -> str:
    """``Keras[torch] · torch.compile``, as the article names its configs."""
    shown = COMPILED_LABEL.get(backend, mode) if mode == "compiled" else mode
    return f"Keras[{backend}] · {shown}"


def _order(items: Iterable[str], known: Sequence[str]) -> list[str]:
    return sorted(set(items), key=lambda x: (known.index(x) if x in known else len(known), x))


@dataclass(frozen=True)
class _Entry:
    workload: str
    record: Record
    result: Result


def build(results: Sequence[Result], mapping: FamilyMapping) -> Article:
    """The article's rows of ``results`` (result dicts of one run's --kerasperf-json files).

    Raises ValueError when one backend has the same test twice.
    """
    workloads: list[str] = []  # first-seen order: the suite's order
    entries: dict[tuple[str, str, str], _Entry] = {}
    for result in results:
        record = Record.from_json(result["record"])
        workload = workload_of(str(result["key"]), record.mode)
        if workload not in workloads:
            workloads.append(workload)
        at = (record.backend, record.mode, workload)
        if at in entries:
            raise ValueError(f"{result['key']} ({record.backend}) is in the results twice")
        entries[at] = _Entry(workload, record, result)
    backends = tuple(_order((b for b, _, _ in entries), BACKENDS))
    ordered = [
        entries[at]
        for at in sorted(
            entries,
            key=lambda at: (
                backends.index(at[0]),
                MODES.index(at[1]) if at[1] in MODES else len(MODES),
                workloads.index(at[2]),
            ),
        )
    ]
    tables = []
    for workload in workloads:
        for mode in _order((m for _, m, w in entries if w == workload), MODES):
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
    record, baseline = entry.record, entry.result.get("baseline") or {}
    reference = record.reference.latency if record.reference else None
    baseline_device = (baseline.get("environment") or {}).get("device")
    current_device = record.latency.device if record.latency else None
    return LatencyRow(
        backend=record.backend,
        mode=record.mode,
        workload=entry.workload,
        plain_ms=reference.median_ms if reference else None,
        baseline_ms=baseline.get("latency_median_ms"),
        current_ms=record.latency.median_ms if record.latency else None,
        other_device=bool(baseline_device and current_device and baseline_device != current_device),
    )


def _calls_row(entry: _Entry) -> CallsRow:
    record, baseline = entry.record, entry.result.get("baseline")
    verdict = entry.result.get("verdict") or {}
    return CallsRow(
        backend=record.backend,
        mode=record.mode,
        workload=entry.workload,
        calls=record.calls,
        baseline_calls=int(baseline["calls"]) if baseline else None,
        calls_delta=verdict.get("calls_delta"),
        plain_calls=record.reference.calls if record.reference else None,
    )


def _graph_row(entry: _Entry) -> GraphRow:
    record, graph = entry.record, entry.record.graph_breaks
    verdict = entry.result.get("verdict") or {}
    return GraphRow(
        backend=record.backend,
        mode=record.mode,
        workload=entry.workload,
        breaks=graph.breaks if graph else None,
        graphs=graph.graphs if graph else None,
        breaks_delta=verdict.get("graph_breaks_delta"),
        recompiles=record.recompiles,
        reasons=tuple(sorted(graph.reasons, key=lambda r: (-r.count, r.key))) if graph else (),
    )


def _family_table(
    workload: str, mode: str, here: Mapping[str, _Entry | None], mapping: FamilyMapping
) -> FamilyTable:
    grouped = {
        backend: mapping.group(entry.record.calls_by_function)
        for backend, entry in here.items()
        if entry is not None
    }
    for backend, families in grouped.items():
        entry = here[backend]
        assert entry is not None
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


# ---------------------------------------------------------------------------
# Rendering: the rows above as terminal text or Markdown


def ms(value: float | None) -> str:
    """Milliseconds to three significant digits or so, as the article prints them."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def times(value: float | None) -> str:
    """``1.40×``, ``11.6×``, ``123×``."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}×"
    if value >= 10:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pct(delta: int | None, base: int | None) -> str:
    if delta is None:
        return "not compared" if base is not None else "new"
    if delta == 0:
        return "±0"
    if not base:
        return signed(delta)
    return f"{signed(delta)} ({delta / base * 100:+.1f}%)".replace("-", "\u2212")


LATENCY_HEADER = (
    "Keras config",
    "workload",
    "plain ms",
    "baseline ms",
    "current ms",
    "change ×",
    "Keras/plain",
)
CALLS_HEADER = (
    "workload",
    "mode",
    "backend",
    "calls",
    "baseline",
    "Δ vs baseline",
    "plain calls",
    "Keras/plain",
)
GRAPHS_HEADER = ("backend", "workload", "mode", "graph breaks", "graphs", "recompiles/call")


def _latency_cells(row: LatencyRow) -> tuple[str, ...]:
    change = times(row.change)
    if row.change is not None and row.other_device:
        change += " †"
    return (
        config_label(row.backend, row.mode),
        workload_name(row.workload),
        ms(row.plain_ms),
        ms(row.baseline_ms),
        ms(row.current_ms),
        change,
        times(row.overhead),
    )


def _calls_cells(row: CallsRow) -> tuple[str, ...]:
    return (
        workload_name(row.workload),
        row.mode,
        row.backend,
        f"{row.calls:,}",
        _count(row.baseline_calls),
        _pct(row.calls_delta, row.baseline_calls),
        _count(row.plain_calls),
        times(row.overhead),
    )


def _graph_cells(row: GraphRow) -> tuple[str, ...]:
    breaks = _count(row.breaks)
    if row.breaks is not None and row.breaks_delta:
        breaks += f" ({signed(row.breaks_delta)})"
    return (
        row.backend,
        workload_name(row.workload),
        row.mode,
        breaks,
        _count(row.graphs),
        _count(row.recompiles),
    )


def reason_line(reason: BreakReason) -> str:
    """``2× keras/src/ops/core.py:cond: data-dependent branching``."""
    return f"{reason.count}× {reason.frame}: {reason.reason}"


def _family_header(table_: FamilyTable, top: int) -> tuple[str, ...]:
    return ("family", *table_.backends, "top function" if top == 1 else "top functions")


def _family_cells(row: FamilyRow, top: int, width: int | None = None) -> tuple[str, ...]:
    functions = ", ".join(f"{_short(f)} {n:,}" for f, n in row.top_functions(top))
    if width is not None and len(functions) > width:
        functions = functions[: width - 1] + "…"
    return (row.family, *(_count(n) for n in row.calls.values()), functions)


def _short(function: str) -> str:
    """``keras/src/tree/tree_api.py:flatten`` -> ``tree/tree_api.py:flatten``."""
    return function.removeprefix("keras/src/")


#: the terminal's "top function(s)" column is cut at this width.
TOP_WIDTH = 72
LATENCY_NOTE = (
    "change × = current / baseline median (below 1 is faster); Keras/plain = current / "
    "plain-framework median, same run"
)
OTHER_DEVICE_NOTE = "† the baseline latency was measured on another device"


def terminal_lines(article: Article) -> list[str]:
    """The four views as aligned text tables."""
    lines = _heading("Every config, every workload (ms per call)")
    lines += table([_latency_cells(r) for r in article.latency], LATENCY_HEADER)
    lines.append(LATENCY_NOTE)
    if any(r.other_device and r.change is not None for r in article.latency):
        lines.append(OTHER_DEVICE_NOTE)
    lines += _heading("Python calls per workload call")
    lines += table([_calls_cells(r) for r in _by_workload(article.calls)], CALLS_HEADER)
    lines += _heading("Graph breaks per compiled model")
    if article.graphs:
        lines += table([_graph_cells(r) for r in article.graphs], GRAPHS_HEADER)
        for row in article.graphs:
            if row.reasons:
                lines.append(f"{row.backend} {workload_name(row.workload)} [{row.mode}]:")
                lines += [f"  {reason_line(r)}" for r in row.reasons]
    else:
        lines.append("no compiled model in these results")
    lines += _heading(
        f"Hot functions by family (calls per workload call; {article.mapping.source})"
    )
    for family_table in article.families:
        lines.append(f"{workload_name(family_table.workload)} [{family_table.mode}]:")
        rows = [_family_cells(r, 1, TOP_WIDTH) for r in family_table.rows]
        rows.append(("total", *(_count(n) for n in family_table.totals.values()), ""))
        lines += [f"  {line}" for line in table(rows, _family_header(family_table, 1))]
        lines.append("")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _by_workload(rows: Sequence[CallsRow]) -> list[CallsRow]:
    """Workload, then mode, then backend: the backends of one workload side by side."""
    workloads = list(dict.fromkeys(r.workload for r in rows))
    backends = list(dict.fromkeys(r.backend for r in rows))
    return sorted(
        rows,
        key=lambda r: (
            workloads.index(r.workload),
            MODES.index(r.mode) if r.mode in MODES else len(MODES),
            backends.index(r.backend),
        ),
    )


def _heading(title: str) -> list[str]:
    return ["", title, "=" * len(title)]


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell or list item (``<unknown module>`` is not HTML)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("\n", " ")
    )


def _code(text: str) -> str:
    """A code span: entities are not decoded there, only the pipe is escaped."""
    return "`" + text.replace("`", "'").replace("|", "\\|").replace("\n", " ") + "`"


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows),
    ]


def markdown(article: Article, charts: Sequence[str] = ()) -> str:
    """The four views as GitHub Markdown; ``charts``: image paths to show under the first two."""
    title = f"kerasperf: the article's views ({', '.join(article.backends)})"
    lines = [f"## {title}", "", "### Every config, every workload (ms per call)", ""]
    lines += _md_table(LATENCY_HEADER, (_latency_cells(r) for r in article.latency))
    lines += ["", LATENCY_NOTE + "."]
    if any(r.other_device and r.change is not None for r in article.latency):
        lines += ["", OTHER_DEVICE_NOTE + "."]
    lines += [f"\n![{Path(c).stem}]({c})" for c in charts if Path(c).stem == "latency"]
    lines += ["", "### Python calls per workload call", ""]
    lines += _md_table(CALLS_HEADER, (_calls_cells(r) for r in _by_workload(article.calls)))
    lines += [f"\n![{Path(c).stem}]({c})" for c in charts if Path(c).stem != "latency"]
    lines += ["", "### Graph breaks per compiled model", ""]
    if article.graphs:
        lines += _md_table(GRAPHS_HEADER, (_graph_cells(r) for r in article.graphs))
        for row in article.graphs:
            if row.reasons:
                lines += ["", f"`{row.backend}` `{workload_name(row.workload)}` [{row.mode}]:", ""]
                lines += [f"- {_cell(reason_line(r))}" for r in row.reasons]
    else:
        lines.append("No compiled model in these results.")
    lines += ["", "### Hot functions by family (calls per workload call)"]
    for family_table in article.families:
        lines += ["", f"#### `{workload_name(family_table.workload)}` [{family_table.mode}]", ""]
        rows = [_family_cells(r, 3) for r in family_table.rows]
        rows.append(("**total**", *(_count(n) for n in family_table.totals.values()), ""))
        lines += _md_table(_family_header(family_table, 3), rows)
    lines += [
        "",
        f"<details><summary>Families ({_cell(article.mapping.source)})</summary>",
        "",
    ]
    lines += [
        f"- **{_cell(f.name)}**: {_cell(f.description)} — "
        + ", ".join(_code(p) for p in f.patterns)
        for f in article.mapping.families
    ]
    lines += [f"- **{OTHER}**: {article.mapping.description(OTHER)}", "", "</details>", ""]
    return "\n".join(lines)
