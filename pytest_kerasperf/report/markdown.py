"""Markdown of a run, or of several backends' runs: a PR comment, a GitHub step summary.

One verdict line first (regressions / improvements / unchanged / not compared),
then the rows that changed, then the full table folded in ``<details>``, kept
under GitHub's step-summary size limit.  The first line is a hidden marker so
a bot can find and update its own comment instead of adding a new one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import accumulate

from pytest_kerasperf.formatting import code, escape, plural
from pytest_kerasperf.outcome import CATEGORIES, Outcome
from pytest_kerasperf.report.next_steps import next_steps, rerecord_helps
from pytest_kerasperf.report.terminal import METRIC_COLUMNS, summary_row

MARKER = "<!-- kerasperf-report -->"
#: GitHub caps a step's summary at 1 MiB; leave room for other steps' lines.
SIZE_LIMIT = 1_000_000
HEADER = ("backend", "test", "mode", *METRIC_COLUMNS, "verdict")
MAX_FAILURE_LINES = 20
#: Stale entries named in the report; the rest are counted (the JSON results name them all).
MAX_STALE_NAMED = 50


def verdict_line(results: Sequence[Outcome], not_measured: int = 0, stale: int = 0) -> str:
    counts = Counter(result.category for result in results)
    parts = [
        f"{'❌' if counts['regression'] else '✅'} {plural(counts['regression'], 'regression')}",
        plural(counts["improvement"], "improvement"),
    ]
    if unrecorded := counts["win not recorded"]:
        parts.append(f"⚠️ {plural(unrecorded, 'win')} not recorded")
    parts += [
        f"{counts['unchanged']} unchanged",
        f"{'⚠️ ' if counts['not compared'] else ''}{counts['not compared']} not compared",
    ]
    if not_measured:
        parts.append(f"⚠️ {not_measured} not measured")
    if stale:
        parts.append(f"⚠️ {plural(stale, 'stale baseline entry', 'stale baseline entries')}")
    return "**kerasperf:** " + " · ".join(parts)


def _row(result: Outcome) -> str:
    key, backend, mode, *cells, status = summary_row(result)
    test = key.split("::", 1)[-1] if "::" in key else key
    cells = [escape(backend), code(test), *map(escape, (mode, *cells, status))]
    return "| " + " | ".join(cells) + " |"


def _table(rows: Sequence[str]) -> list[str]:
    return [
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" for _ in HEADER) + "|",
        *rows,
    ]


def render(
    results: Sequence[Outcome],
    *,
    title: str = "kerasperf",
    not_measured: int = 0,
    stale: Sequence[str] = (),
    limit: int = SIZE_LIMIT,
    missing: Sequence[str] = (),
    selections: Sequence[str] = (),
) -> str:
    """The Markdown report of ``results`` (of one backend or several).

    ``missing``: the runs expected but without results, said first (not green).
    """
    ordered = sorted(results, key=lambda r: (CATEGORIES.index(r.category), r.backend, r.key))
    head = [
        MARKER,
        f"### {escape(title)}",
        "",
        verdict_line(results, not_measured=not_measured, stale=len(stale)),
        "",
    ]
    if missing:
        head += [f"❌ **No results for {escape(', '.join(missing))}** (expected).", ""]
    if selections:  # --kerasperf-changed: how many ran, how many the change cannot move, why
        head += [f"- Selected by the change: {escape(line)}" for line in selections] + [""]
    changed = [r for r in ordered if r.category != "unchanged"]
    body: list[str] = []
    if changed:
        body += _table([_row(r) for r in changed])
        body.append("")
    failing = [r for r in ordered if r.verdict.failures]
    if failing:
        body.append("<details open><summary>What failed</summary>")
        body.append("")
        for result in failing[:MAX_FAILURE_LINES]:
            for line in result.verdict.failure_lines:
                body.append(f"- {code(result.backend)} {code(result.key)}: {escape(line)}")
            body += [f"  - {escape(step)}" for step in next_steps(result.verdict)]
            if result.rerecord and rerecord_helps(result.verdict):
                body.append(f"  - re-record: {code(result.rerecord)}")
        if len(failing) > MAX_FAILURE_LINES:
            body.append(f"- … {len(failing) - MAX_FAILURE_LINES} more (see the JSON results)")
        body += ["", "</details>", ""]
    if stale:
        body.append(
            "Stale baseline entries (their tests no longer exist): "
            + ", ".join(code(key) for key in stale[:MAX_STALE_NAMED])
            + (
                f" and {len(stale) - MAX_STALE_NAMED:,} more (see the JSON results)"
                if len(stale) > MAX_STALE_NAMED
                else ""
            )
        )
        body.append("")
    full_head = [f"<details><summary>All {len(ordered)} results</summary>", ""]
    full_tail = ["", "</details>", ""]
    text = "\n".join(head + body)
    rows = [_row(r) for r in ordered]
    budget = limit - len(text.encode()) - 400
    used = accumulate(len(row.encode()) + 1 for row in rows)  # each row and its newline
    kept = [row for row, size in zip(rows, used, strict=True) if size <= budget]
    cut = len(rows) - len(kept)
    table = _table(kept)
    if cut:
        table.append("")
        table.append(f"… {cut} more rows not shown (GitHub's size limit); see the JSON results.")
    return text + "\n" + "\n".join(full_head + table + full_tail)
