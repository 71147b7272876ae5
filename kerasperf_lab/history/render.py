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

if TYPE_CHECKING:
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
    delta = (
        "" if step.calls_delta is None else signed(step.calls_delta) if step.calls_delta else "0"
    )
    if step.against is not None and step.index > 0 and step.against != commits[step.index - 1].sha:
        delta += f" (vs {step.against[:10]})"
    graph = ""
    if step.graph_breaks is not None:
        graph = str(step.graph_breaks)
        if step.graph_breaks_delta:
            graph += f" ({signed(step.graph_breaks_delta)})"
    latency = ""
    if step.latency_ms is not None:
        latency = f"{step.latency_ms:.3f}"
        if step.latency_delta_pct is not None:
            latency += f" ({step.latency_delta_pct:+.1f}%)"
        if step.latency_change is not None:
            latency += (
                f"; change point {step.latency_change.relative:+.1%} "
                f"(p {step.latency_change.p_value:.2g})"
            )
    calls_where = (
        [step.explanation.line(short_function)]
        if step.explanation is not None and (step.explanation.groups or step.explanation.moves)
        else [entry_text(p) for p in step.entry_points]
    )
    where = calls_where + [
        f"graph break {short_function(c.frame)} {c.before}→{c.after}× {c.reason}"
        for c in step.break_changes
    ]
    calls = "" if step.calls is None else f"{step.calls:,}"
    return (*head, short_test(step.key), calls, delta, graph, latency, "; ".join(where))


def shown_steps(table: SweepTable, changed_only: bool) -> list[Step]:
    if not changed_only:
        return list(table.steps)
    return [s for s in table.steps if s.status != "unchanged"]


def terminal_lines(table: SweepTable, *, changed_only: bool = False) -> list[str]:
    from pytest_kerasperf.report.terminal import table as text_table

    rows = [_cells(step, table.commits) for step in shown_steps(table, changed_only)]
    lines = [f"kerasperf sweep {table.spec}: {table.selection.describe()}", ""]
    lines += text_table(rows, HEADER)
    lines += ["", *_environment_lines(table)]
    return lines


def _environment_lines(table: SweepTable) -> list[str]:
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
    lines += [""] + [f"- {escape(line)}" for line in _environment_lines(table)]
    if charts:
        lines += ["", *(f"![{Path(c).stem}]({c})" for c in charts)]
    return "\n".join(lines) + "\n"
