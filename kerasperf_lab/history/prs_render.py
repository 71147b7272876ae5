"""The per-PR table as text: the terminal and GitHub Markdown (JSON: ``PrTable``).

The article's columns: per PR, the change of calls per forward on each
backend (LM forward / CNN forward, eager), graph breaks before → after per
compiled model on torch, recompiles, the change of latency where timed, and
what else the measured head holds; then, per PR, where the calls changed
(exact: the groups sum to the delta), the hot-function families before and
after, and every test's numbers.  Rendering only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kerasperf_lab.history.render import environment_lines
from pytest_kerasperf.ab.text import short_function
from pytest_kerasperf.formatting import code, escape, signed

if TYPE_CHECKING:
    from kerasperf_lab.history.prs_table import PrEntry, PrRow, PrTable

#: the forwards whose calls the article's table gives, eager: (label, test name)
FORWARDS = (("LM", "test_lm_forward[eager]"), ("CNN", "test_cnn_forward[eager]"))
#: the train steps (not in the article: it did not train), eager, where the table has them
TRAIN_STEPS = (("LM", "test_lm_train_step[eager]"), ("CNN", "test_cnn_train_step[eager]"))
#: the compiled models whose graph breaks it gives, and the compiled train steps'
COMPILED = (
    ("LM", "test_lm_forward[compiled]"),
    ("CNN", "test_cnn_forward[compiled]"),
    ("LM step", "test_lm_train_step[compiled]"),
    ("CNN step", "test_cnn_train_step[compiled]"),
)
EXPLAINED_BACKEND = "torch"
EXPLAINED_TEST = "test_lm_forward[eager]"
TITLE_CHARS = 70


def _title(entry: PrEntry) -> str:
    title = entry.pair.title
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _measured(entry: PrEntry) -> str:
    pair = entry.pair
    if pair.how == "merged":
        return f"merged {pair.merged}"
    return f"head vs base {pair.before.day}"


def _delta(row: PrRow | None) -> str:
    if row is None:
        return "-"
    return signed(row.calls_delta) if row.calls_delta else "0"


def calls_cell(entry: PrEntry, backend: str, tests: Sequence[tuple[str, str]] = FORWARDS) -> str:
    """``−546 / −147``: the LM and CNN eager forwards' (or train steps') change of calls on
    ``backend``."""
    cells = [_delta(entry.row(backend, test)) for _, test in tests]
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


def graph_cell(entry: PrEntry) -> str:
    """``LM 11 → 0``, the compiled models whose graph breaks changed on torch, else ``·``."""
    parts = []
    for label, test in COMPILED:
        row = entry.row("torch", test)
        pair = row.graph_breaks() if row is not None else None
        if pair is not None and pair[0] != pair[1]:
            parts.append(f"{label} {pair[0]} → {pair[1]}")
    measured = any(entry.row("torch", test) is not None for _, test in COMPILED)
    return ", ".join(parts) if parts else ("·" if measured else "-")


def recompiles_cell(entry: PrEntry) -> str:
    parts = []
    for row in entry.rows:
        if row.recompiles_before != row.recompiles_after:
            parts.append(
                f"{row.backend} {row.name} {row.recompiles_before} → {row.recompiles_after}"
            )
    return ", ".join(parts) if parts else "·"


def latency_cell(entry: PrEntry) -> str:
    """The change of median latency of the timed rows, on torch (``--rounds``), else ``-``."""
    parts = []
    for row in entry.rows:
        if row.backend != EXPLAINED_BACKEND:
            continue
        change = row.latency_change_ms()
        if change is not None:
            parts.append(f"{row.name} {change:+.2f} ms")
    return ", ".join(parts) if parts else "-"


def header(backends: Sequence[str], trains: Sequence[str] = ()) -> tuple[str, ...]:
    return (
        "PR",
        "measured",
        "title",
        *(f"Δ calls {b} (LM / CNN)" for b in backends),
        *(f"Δ calls {b} train step (LM / CNN)" for b in trains),
        "graph breaks (torch.compile)",
        "recompiles",
        "Δ latency",
        "also holds",
    )


def cells(entry: PrEntry, backends: Sequence[str], trains: Sequence[str] = ()) -> tuple[str, ...]:
    return (
        f"#{entry.pair.pr}",
        _measured(entry),
        _title(entry),
        *(calls_cell(entry, b) for b in backends),
        *(calls_cell(entry, b, TRAIN_STEPS) for b in trains),
        graph_cell(entry),
        recompiles_cell(entry),
        latency_cell(entry),
        entry.pair.also_line() or "·",
    )


def also_markdown(entry: PrEntry) -> str:
    """The ``also holds`` cell with the PR numbers left as ``#N`` (GitHub links them)."""
    pair = entry.pair
    parts = []
    if pair.contains:
        shared = ", ".join(f"#{c.pr} ({c.commits})" for c in pair.contains)
        parts.append(f"shares commits with {shared}")
    if pair.merged_branches:
        parts.append("merges branch " + ", ".join(code(b) for b in pair.merged_branches))
    return "; ".join(parts) or "·"


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
        lines.append(f"#{entry.pair.pr} {row.backend} {row.name}:")
        lines += [f"  {line}" for line in row.explanation.lines(short_function, explain_items)]
    for entry in table.entries:
        for failure in entry.failed:
            lines.append(
                f"#{entry.pair.pr} {failure.backend} {failure.side}: failed: {failure.error}"
            )
    return [*lines, "", *environment_lines(table)]


def _md_row(values: Sequence[str]) -> str:
    return "| " + " | ".join(values) + " |"


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
        _md_row(head),
        "|" + "|".join("---" for _ in head) + "|",
    ]
    for entry in table.entries:
        values = [escape(c) for c in cells(entry, table.backends, trains)]
        values[0] = f"#{entry.pair.pr}"  # GitHub links it
        values[-1] = also_markdown(entry)
        lines.append(_md_row(values))
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
        lines.append(f"- #{entry.pair.pr} {escape(row.backend)} {code(row.name)}: {escape(first)}")
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
        for family in sorted(set(row.hot_before) | set(row.hot_after)):
            old, new = row.hot_before.get(family, 0), row.hot_after.get(family, 0)
            if old != new:
                changed.append((entry.pair.pr, family, old, new))
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
        "| PR | backend | test | calls before | calls after | Δ | graph breaks | recompiles |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in table.entries:
        for row in entry.rows:
            pair = row.graph_breaks()
            graph = "-" if pair is None else f"{pair[0]} → {pair[1]}"
            recompiles = (
                "-"
                if row.recompiles_after is None
                else f"{row.recompiles_before} → {row.recompiles_after}"
            )
            delta = signed(row.calls_delta) if row.calls_delta else "0"
            out.append(
                f"| #{entry.pair.pr} | {escape(row.backend)} | {code(row.name)} | "
                f"{row.calls_before:,} | {row.calls_after:,} | {delta} | "
                f"{graph} | {recompiles} |"
            )
        for failure in entry.failed:
            out.append(
                f"| #{entry.pair.pr} | {escape(failure.backend)} | {failure.side}: failed | "
                f"{escape(failure.error)} | | | | |"
            )
    return out
