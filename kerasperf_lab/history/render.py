"""A sweep's table as text: the terminal and GitHub Markdown (its JSON: ``steps.SweepTable``).

Rendering only: the steps come from ``history.steps``; nothing here measures
or judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_kerasperf.ab.runner import describe_fingerprint
from pytest_kerasperf.ab.text import entry_text, short_function, short_test
from pytest_kerasperf.culprits import signed
from pytest_kerasperf.formatting import code, escape
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.metrics.graph_breaks import GraphBreaksChange
from pytest_kerasperf.metrics.latency import LatencyChange

if TYPE_CHECKING:
    from kerasperf_lab.history.prs_table import PrTable
    from kerasperf_lab.history.steps import Step, SweepTable
    from pytest_kerasperf.ab.commits import Commit

HEADER = (
    "commit",
    "merged",
    "PR",
    "title",
    "backend",
    "test",
    "calls",
    "Δ calls",
    "graph breaks (Δ)",
    "latency ms (Δ %)",
    "where it changed",
)
TITLE_CHARS = 60


def _cells(step: Step, commits: Sequence[Commit]) -> tuple[str, ...]:
    commit = step.commit
    title = (
        commit.title if len(commit.title) <= TITLE_CHARS else commit.title[: TITLE_CHARS - 1] + "…"
    )
    head = (
        commit.short,
        commit.day,
        f"#{commit.pr}" if commit.pr is not None else "",
        title,
        step.backend,
    )
    if step.status in ("failed", "missing"):
        reason = f"failed: {step.error}" if step.status == "failed" else "not measured"
        return (*head, "", "", "", "", "", reason)
    calls, graph = step.change(CallsChange), step.change(GraphBreaksChange)
    delta = "" if calls is None else signed(calls.delta) if calls.delta else "0"
    if step.against is not None and step.index > 0 and step.against != commits[step.index - 1].sha:
        delta += f" (vs {step.against[:10]})"
    breaks = step.value("graph_breaks")
    graph_cell = (
        ""
        if breaks is None
        else f"{breaks}" + (f" ({signed(graph.delta)})" if graph and graph.delta else "")
    )
    latency = ""
    if (median := step.value("latency")) is not None:
        latency = f"{median:.3f}"
        moved = step.change(LatencyChange)
        if moved is not None and moved.pct is not None:
            latency += f" ({moved.pct:+.1f}%)"
        if (point := step.change_point("latency")) is not None:
            latency += f"; change point {point.relative:+.1%} (p {point.p_value:.2g})"
    explanation = calls.explanation if calls else None
    where = (
        [explanation.line(short_function)]
        if explanation is not None and (explanation.groups or explanation.moves)
        else [entry_text(p) for p in (calls.entry_points if calls else ())]
    ) + [
        f"graph break {short_function(c.frame)} {c.before}→{c.after}× {c.reason}"
        for c in (graph.changes if graph else ())
    ]
    count = step.value("calls")
    calls_cell = "" if count is None else f"{count:,}"
    return (*head, short_test(step.key), calls_cell, delta, graph_cell, latency, "; ".join(where))


def shown_steps(table: SweepTable, changed_only: bool) -> list[Step]:
    if not changed_only:
        return list(table.steps)
    return [s for s in table.steps if s.status != "unchanged"]


def terminal_lines(table: SweepTable, *, changed_only: bool = False) -> list[str]:
    from pytest_kerasperf.report.terminal import table as text_table

    rows = [_cells(step, table.commits) for step in shown_steps(table, changed_only)]
    lines = [f"kerasperf sweep {table.spec}: {table.selection.describe()}", ""]
    lines += text_table(rows, HEADER)
    lines += ["", *environment_lines(table)]
    return lines


def environment_lines(table: SweepTable | PrTable) -> list[str]:
    return [
        f"{backend} measured with: {describe_fingerprint(table.environments.get(backend, {}))}"
        for backend in table.backends
    ]


def markdown(table: SweepTable, *, changed_only: bool = False, charts: Sequence[str] = ()) -> str:
    """The per-PR table as GitHub Markdown (step summary, docs)."""
    failed = sum(s.status == "failed" for s in table.steps)
    lines = [
        f"### kerasperf sweep {code(table.spec)} ({escape(', '.join(table.backends))})",
        "",
        f"{len(table.commits)} first-parent commits; {table.selection.describe()}; each Δ is "
        "against the previous commit measured"
        + (f"; {failed} commit × backend failed to run" if failed else "")
        + ".",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" for _ in HEADER) + "|",
    ]
    for step in shown_steps(table, changed_only):
        cells = [escape(c) for c in _cells(step, table.commits)]
        if step.commit.pr is not None:
            cells[2] = f"#{step.commit.pr}"  # an int: GitHub links the pull request
        cells[5] = f"<code>{cells[5]}</code>" if cells[5] else ""
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + [f"- {escape(line)}" for line in environment_lines(table)]
    if charts:
        lines += ["", *(f"![{Path(c).stem}]({c})" for c in charts)]
    return "\n".join(lines) + "\n"
