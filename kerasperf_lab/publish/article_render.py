"""The article's views as text: aligned terminal tables and GitHub Markdown.

Only renders the rows ``article.build`` made; numbers, tables and escaping
come from ``formatting``, as everywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kerasperf_lab.publish.article import (
    Article,
    CallsRow,
    FamilyRow,
    GraphRow,
    LatencyRow,
    config_label,
    in_order,
    workload_name,
)
from kerasperf_lab.publish.comparable import REASONS, Ratio
from kerasperf_lab.publish.families import OTHER
from pytest_kerasperf.ab.text import short_function
from pytest_kerasperf.formatting import (
    Markup,
    code,
    count,
    escape,
    markdown_table,
    ms,
    signed,
    text_table,
    times,
)
from pytest_kerasperf.record import MODES, BreakReason


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


def ratio_text(ratio: Ratio) -> str:
    """``0.97×``, ``not comparable (spread)`` (``comparable.not_comparable``), or ``-``."""
    if ratio.blocked is not None:
        return f"not comparable ({ratio.blocked})"
    return times(ratio.value)


def _latency_cells(row: LatencyRow) -> tuple[str, ...]:
    return (
        config_label(row.backend, row.mode, row.workload),
        workload_name(row.workload),
        ms(row.plain.median_ms if row.plain else None),
        ms(row.baseline.median_ms if row.baseline else None),
        ms(row.current_ms),
        ratio_text(row.change),
        ratio_text(row.overhead),
    )


def _calls_cells(row: CallsRow) -> tuple[str, ...]:
    return (
        workload_name(row.workload),
        row.mode,
        row.backend,
        f"{row.calls:,}",
        count(row.baseline_calls),
        _pct(row.calls_delta, row.baseline_calls),
        count(row.plain_calls),
        times(row.overhead),
    )


def _graph_cells(row: GraphRow) -> tuple[str, ...]:
    breaks = count(row.breaks)
    if row.breaks is not None and row.breaks_delta:
        breaks += f" ({signed(row.breaks_delta)})"
    return (
        row.backend,
        workload_name(row.workload),
        row.mode,
        breaks,
        count(row.graphs),
        count(row.recompiles),
    )


def reason_line(reason: BreakReason) -> str:
    """``2× keras/src/ops/core.py:cond: data-dependent branching``."""
    return f"{reason.count}× {reason.frame}: {reason.reason}"


def _family_cells(row: FamilyRow, top: int, width: int | None = None) -> tuple[str, ...]:
    functions = ", ".join(f"{short_function(f)} {n:,}" for f, n in row.top_functions(top))
    if width is not None and len(functions) > width:
        functions = functions[: width - 1] + "…"
    return (row.family, *(count(n) for n in row.calls.values()), functions)


#: the terminal's "top function(s)" column is cut at this width.
TOP_WIDTH = 72
LATENCY_NOTE = (
    "change × = current / baseline median (below 1 is faster); Keras/plain = current / "
    "plain-framework median, same run; a ratio is shown only where both runs' spread allows it"
)


def not_comparable_notes(article: Article) -> list[str]:
    """One line per reason a ratio of the latency view was refused, in the rule's order."""
    seen = {r.blocked for row in article.latency for r in (row.change, row.overhead)}
    return [
        f"not comparable ({reason}): {text}; no ratio is shown "
        f"(rule: kerasperf_lab/publish/comparable.py)"
        for reason, text in REASONS.items()
        if reason in seen
    ]


def terminal_lines(article: Article) -> list[str]:
    """The four views as aligned text tables."""
    lines = _heading("Every config, every workload (ms per call)")
    lines += text_table([_latency_cells(r) for r in article.latency], LATENCY_HEADER)
    lines.append(LATENCY_NOTE)
    lines += not_comparable_notes(article)
    lines += _heading("Python calls per workload call")
    lines += text_table([_calls_cells(r) for r in _by_workload(article.calls)], CALLS_HEADER)
    lines += _heading("Graph breaks per compiled model")
    if article.graphs:
        lines += text_table([_graph_cells(r) for r in article.graphs], GRAPHS_HEADER)
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
        rows.append(("total", *(count(n) for n in family_table.totals.values()), ""))
        header = ("family", *family_table.backends, "top function")
        lines += [f"  {line}" for line in text_table(rows, header)]
        lines.append("")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _by_workload(rows: Sequence[CallsRow]) -> list[CallsRow]:
    """Workload, then mode, then backend: the backends of one workload side by side."""
    workloads = list(dict.fromkeys(r.workload for r in rows))
    modes = in_order((r.mode for r in rows), MODES)
    # Stable: the backends of one workload and mode stay in the views' order.
    return sorted(rows, key=lambda r: (workloads.index(r.workload), modes.index(r.mode)))


def _heading(title: str) -> list[str]:
    return ["", title, "=" * len(title)]


def markdown(article: Article, charts: Sequence[str] = ()) -> str:
    """The four views as GitHub Markdown; ``charts``: image paths to show under the first two."""
    title = f"kerasperf: the article's views ({', '.join(article.backends)})"
    lines = [f"## {title}", "", "### Every config, every workload (ms per call)", ""]
    lines += markdown_table(LATENCY_HEADER, (_latency_cells(r) for r in article.latency))
    lines += ["", LATENCY_NOTE + "."]
    lines += [f"\n{escape(note)}." for note in not_comparable_notes(article)]
    lines += [f"\n![{Path(c).stem}]({c})" for c in charts if Path(c).stem == "latency"]
    lines += ["", "### Python calls per workload call", ""]
    lines += markdown_table(CALLS_HEADER, (_calls_cells(r) for r in _by_workload(article.calls)))
    lines += [f"\n![{Path(c).stem}]({c})" for c in charts if Path(c).stem != "latency"]
    lines += ["", "### Graph breaks per compiled model", ""]
    if article.graphs:
        lines += markdown_table(GRAPHS_HEADER, (_graph_cells(r) for r in article.graphs))
        for row in article.graphs:
            if row.reasons:
                name = workload_name(row.workload)
                lines += ["", f"{code(row.backend)} {code(name)} [{escape(row.mode)}]:", ""]
                lines += [f"- {escape(reason_line(r))}" for r in row.reasons]
    else:
        lines.append("No compiled model in these results.")
    lines += ["", "### Hot functions by family (calls per workload call)"]
    for family_table in article.families:
        name = code(workload_name(family_table.workload))
        lines += ["", f"#### {name} [{escape(family_table.mode)}]", ""]
        rows = [_family_cells(r, 3) for r in family_table.rows]
        rows.append((Markup("**total**"), *(count(n) for n in family_table.totals.values()), ""))
        lines += markdown_table(("family", *family_table.backends, "top functions"), rows)
    lines += [
        "",
        f"<details><summary>Families ({escape(article.mapping.source)})</summary>",
        "",
    ]
    lines += [
        f"- **{escape(f.name)}**: {escape(f.description)} — "
        + ", ".join(code(p) for p in f.patterns)
        for f in article.mapping.families
    ]
    lines += [
        f"- **{OTHER}**: {escape(article.mapping.description(OTHER))}",
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)
