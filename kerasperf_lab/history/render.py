"""A sweep's table as text: the terminal and GitHub Markdown (its JSON: ``steps.SweepTable``).

Rendering only: the steps come from ``history.steps``; nothing here measures
or judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_kerasperf import metrics
from pytest_kerasperf.ab.runner import describe_fingerprint
from pytest_kerasperf.ab.text import short_function, short_test
from pytest_kerasperf.culprits import signed
from pytest_kerasperf.formatting import Markup, code, escape, markdown_table
from pytest_kerasperf.metrics.calls import CallsChange

if TYPE_CHECKING:
    from kerasperf_lab.history.prs_table import PrTable
    from kerasperf_lab.history.steps import Step, SweepTable
    from pytest_kerasperf.ab.commits import Commit

#: the followed metrics (``steps.FOLLOWED``: those with a ``series``) after calls, each in its
#: column (``graph breaks (Δ)``)
OTHERS = tuple(m for m in metrics.METRICS if m.series and m.name != "calls")
HEADER = (
    "commit",
    "merged",
    "PR",
    "title",
    "backend",
    "test",
    "calls",
    "Δ calls",
    *(m.column or m.label for m in OTHERS),
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
        return (*head, "", "", *("" for _ in OTHERS), "", reason)
    calls = step.change(CallsChange)
    delta = "" if calls is None else signed(calls.delta) if calls.delta else "0"
    if step.against is not None and step.index > 0 and step.against != commits[step.index - 1].sha:
        delta += f" (vs {step.against[:10]})"
    others = []
    for metric in OTHERS:
        value = step.value(metric.name)
        change = next((c for c in step.changes if c.__struct_config__.tag == metric.name), None)
        cell = "" if value is None else metric.text(value, change)
        if value is not None and (point := step.change_point(metric.name)) is not None:
            cell += f"; change point {point.relative:+.1%} (p {point.p_value:.2g})"
        others.append(cell)
    where = [line for change in step.changes for line in change.where(short_function)]
    count = step.value("calls")
    calls_cell = "" if count is None else f"{count:,}"
    return (*head, short_test(step.key), calls_cell, delta, *others, "; ".join(where))


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
    ]
    rows = []
    for step in shown_steps(table, changed_only):
        cells: list[str] = list(_cells(step, table.commits))
        if step.commit.pr is not None:
            cells[2] = Markup(f"#{step.commit.pr}")  # an int: GitHub links the pull request
        cells[5] = code(cells[5]) if cells[5] else ""
        rows.append(cells)
    lines += markdown_table(HEADER, rows)
    lines += [""] + [f"- {escape(line)}" for line in environment_lines(table)]
    if charts:
        lines += ["", *(f"![{Path(c).stem}]({c})" for c in charts)]
    return "\n".join(lines) + "\n"
