"""The per-PR table as text: the terminal and GitHub Markdown (JSON: ``PrTable``).  Rendering
only; the columns and sections are docs/history.md's ("Per PR")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kerasperf_lab.history.render import OTHERS, environment_lines
from pytest_kerasperf.ab.text import short_function
from pytest_kerasperf.formatting import Markup, code, escape, markdown_table, signed

if TYPE_CHECKING:
    from kerasperf_lab.history.prs_table import PrEntry, PrRow, PrTable

#: the forwards whose calls the article's table gives, eager: (label, test name)
FORWARDS = (("LM", "test_lm_forward[eager]"), ("CNN", "test_cnn_forward[eager]"))
#: the train steps (not in the article: it did not train), eager, where the table has them
TRAIN_STEPS = (("LM", "test_lm_train_step[eager]"), ("CNN", "test_cnn_train_step[eager]"))
#: the compiled models whose exact counts past calls (graph breaks) it gives, and the
#: compiled train steps'
COMPILED = (
    ("LM", "test_lm_forward[compiled]"),
    ("CNN", "test_cnn_forward[compiled]"),
    ("LM step", "test_lm_train_step[compiled]"),
    ("CNN step", "test_cnn_train_step[compiled]"),
)
EXPLAINED_BACKEND = "torch"
EXPLAINED_TEST = "test_lm_forward[eager]"
TITLE_CHARS = 70
#: the followed metrics other than calls: counts before → after, noisy ones as a change
COUNTS = tuple(m for m in OTHERS if m.exact)
NOISY = tuple(m for m in OTHERS if not m.exact)


def calls_cell(entry: PrEntry, backend: str, tests: Sequence[tuple[str, str]] = FORWARDS) -> str:
    """``−546 / −147``: the LM and CNN eager forwards' (or train steps') change of calls on
    ``backend``."""
    rows = [entry.row(backend, test) for _, test in tests]
    cells = ["-" if r is None else signed(r.calls_delta) if r.calls_delta else "0" for r in rows]
    if all(cell == "-" for cell in cells):
        failed = [f for f in entry.failed if f.backend == backend]
        return "failed" if failed else "-"
    return " / ".join(cells)


def train_backends(table: PrTable) -> tuple[str, ...]:
    """The backends on which some PR's train steps were measured (numpy cannot train)."""
    names = {test for _, test in TRAIN_STEPS}
    return tuple(
        b
        for b in table.backends
        if any(row.backend == b and row.name in names for e in table.entries for row in e.rows)
    )


def pair_cell(entry: PrEntry, metric: str) -> str:
    """``LM 11 → 0``, the compiled models on torch whose ``metric`` changed, else ``·``."""
    parts = []
    for label, test in COMPILED:
        row = entry.row("torch", test)
        pair = row.pair(metric) if row is not None else None
        if pair is not None and pair[0] != pair[1]:
            parts.append(f"{label} {pair[0]} → {pair[1]}")
    measured = any(entry.row("torch", test) is not None for _, test in COMPILED)
    return ", ".join(parts) if parts else ("·" if measured else "-")


def recompiles_cell(entry: PrEntry) -> str:
    parts = [
        f"{row.backend} {row.name} {row.recompiles_before} → {row.recompiles_after}"
        for row in entry.rows
        if row.recompiles_before != row.recompiles_after
    ]
    return ", ".join(parts) if parts else "·"


def change_cell(entry: PrEntry, metric: str) -> str:
    """The change of a noisy ``metric`` (median latency, in ms) of the rows on torch that
    measured it on both sides (latency: ``--rounds``), else ``-``."""
    parts = []
    for row in entry.rows:
        pair = row.pair(metric) if row.backend == EXPLAINED_BACKEND else None
        if pair is not None:
            parts.append(f"{row.name} {pair[1] - pair[0]:+.2f} ms")
    return ", ".join(parts) if parts else "-"


def header(backends: Sequence[str], trains: Sequence[str] = ()) -> tuple[str, ...]:
    return (
        "PR",
        "measured",
        "title",
        *(f"Δ calls {b} (LM / CNN)" for b in backends),
        *(f"Δ calls {b} train step (LM / CNN)" for b in trains),
        *(f"{m.label} (torch.compile)" for m in COUNTS),
        "recompiles",
        *(f"Δ {m.label}" for m in NOISY),
        "also holds",
    )


def cells(entry: PrEntry, backends: Sequence[str], trains: Sequence[str] = ()) -> tuple[str, ...]:
    return (
        f"#{entry.pr}",
        f"merged {entry.merged}" if entry.how == "merged" else f"head vs base {entry.before.day}",
        title if len(title := entry.title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…",
        *(calls_cell(entry, b) for b in backends),
        *(calls_cell(entry, b, TRAIN_STEPS) for b in trains),
        *(pair_cell(entry, m.name) for m in COUNTS),
        recompiles_cell(entry),
        *(change_cell(entry, m.name) for m in NOISY),
        entry.also_line() or "·",
    )


def explained_row(entry: PrEntry) -> PrRow | None:
    return entry.row(EXPLAINED_BACKEND, EXPLAINED_TEST) or next(
        (row for row in entry.rows if row.explanation is not None and row.calls_delta), None
    )


def terminal_lines(table: PrTable, explain_items: int = 3) -> list[str]:
    from pytest_kerasperf.report.terminal import table as text_table

    lines = [
        f"kerasperf prs: {len(table.entries)} PRs of {table.repo}; {table.selection.describe()}",
        "",
    ]
    trains = train_backends(table)
    lines += text_table(
        [cells(e, table.backends, trains) for e in table.entries], header(table.backends, trains)
    )
    lines.append("")
    for entry in table.entries:
        row = explained_row(entry)
        if row is None or row.explanation is None or not row.calls_delta:
            continue
        lines.append(f"#{entry.pr} {row.backend} {row.name}:")
        lines += [f"  {line}" for line in row.explanation.lines(short_function, explain_items)]
    for entry in table.entries:
        for failure in entry.failed:
            lines.append(f"#{entry.pr} {failure.backend} {failure.side}: failed: {failure.error}")
    return [*lines, "", *environment_lines(table)]


def markdown(table: PrTable) -> str:
    """The per-PR table, where each changed, hot functions and every test, as GitHub Markdown."""
    trains = train_backends(table)
    head = header(table.backends, trains)
    lines = [
        f"### kerasperf prs ({escape(', '.join(table.backends))})",
        "",
        f"{len(table.entries)} PRs; {escape(table.selection.describe())}. A merged PR is "
        f"measured on its merge into {code(table.target)} and that commit's first parent; "
        "an open one on its head and its merge base. Δ calls are per workload call, after "
        "minus before, exact; LM / CNN: the eager forwards (train step: one optimizer step "
        "on one batch, eager).",
        "",
    ]
    rows = []
    for entry in table.entries:
        values: list[str] = list(cells(entry, table.backends, trains))
        values[0] = Markup(f"#{entry.pr}")  # GitHub links it
        values[-1] = Markup(entry.also_line(code) or "·")
        rows.append(values)
    lines += markdown_table(head, rows)
    lines += ["", "#### Where the calls changed", ""]
    lines.append(
        "The functions whose own call counts changed, grouped under the Keras function they "
        "were called from; the groups sum exactly to the delta. A function called as often "
        "as before from another caller is *moved* and adds nothing."
    )
    lines.append("")
    for entry in table.entries:
        row = explained_row(entry)
        if row is None or row.explanation is None or not row.calls_delta:
            continue
        first, *rest = row.explanation.lines(short_function)
        lines.append(f"- #{entry.pr} {escape(row.backend)} {code(row.name)}: {escape(first)}")
        lines += [f"  - {escape(line.strip())}" for line in rest]
    lines += hot_lines(table)
    lines += every_test_lines(table)
    lines += [""] + [f"- {escape(line)}" for line in environment_lines(table)]
    return "\n".join(lines) + "\n"


def hot_lines(table: PrTable) -> list[str]:
    """Per PR, the hot-function families that changed (torch, LM forward, eager)."""
    out = [
        "",
        f"#### Hot functions ({EXPLAINED_BACKEND}, {code(EXPLAINED_TEST)}): before → after",
        "",
    ]
    changed: list[tuple[int, str, int, int]] = []
    for entry in table.entries:
        row = entry.row(EXPLAINED_BACKEND, EXPLAINED_TEST)
        if row is None:
            continue
        changed += [(entry.pr, *change) for change in row.hot_changes()]
    if not changed:
        return [*out, "No family's calls changed."]
    out += ["| PR | family | before | after | change |", "|---|---|---|---|---|"]
    out += [
        f"| #{pr} | {escape(family)} | {old:,} | {new:,} | {signed(new - old)} |"
        for pr, family, old, new in changed
    ]
    return out


def every_test_lines(table: PrTable) -> list[str]:
    out = [
        "",
        "#### Every test",
        "",
        "| PR | backend | test | calls before | calls after | Δ | "
        + "".join(f"{m.label} | " for m in COUNTS)
        + "recompiles |",
        "|---|---|---|---|---|---|" + "---|" * len(COUNTS) + "---|",
    ]
    for entry in table.entries:
        for row in entry.rows:
            pairs = [row.pair(m.name) for m in COUNTS]
            counts = "".join("- | " if p is None else f"{p[0]} → {p[1]} | " for p in pairs)
            recompiles = (
                "-"
                if row.recompiles_after is None
                else f"{row.recompiles_before} → {row.recompiles_after}"
            )
            delta = signed(row.calls_delta) if row.calls_delta else "0"
            out.append(
                f"| #{entry.pr} | {escape(row.backend)} | {code(row.name)} | "
                f"{row.calls_before:,} | {row.calls_after:,} | {delta} | {counts}{recompiles} |"
            )
        for failure in entry.failed:
            out.append(
                f"| #{entry.pr} | {escape(failure.backend)} | {failure.side}: failed | "
                f"{escape(failure.error)} | | | |" + " |" * len(COUNTS)
            )
    return out
