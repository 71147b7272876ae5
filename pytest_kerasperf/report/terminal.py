"""The report section of one test, the terminal summary and the closing lines of the run."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from pytest_kerasperf.accounting import ChangedAccount, RunAccount
from pytest_kerasperf.baseline import EntryChange
from pytest_kerasperf.changes import moved_words
from pytest_kerasperf.formatting import plural, text_table
from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.metrics.base import counted
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import Record
from pytest_kerasperf.report.next_steps import next_steps, rerecord_helps
from pytest_kerasperf.verdict import Verdict

MAX_STALE_NAMED = 5


def detail_section(
    result: Verdict,
    record: Record | None = None,
    command: str | None = None,
    where: str | None = None,
) -> str:
    """Failures, notes, each metric's details (``Metric.details``: where calls changed, the
    per-function diff, graph breaks), what to do (``where``: the test's file and line, for a
    budget in its marker)."""
    lines = [f"FAIL {line}" for line in result.failures]
    lines += [f"note: {line}" for line in result.notes]
    for metric in METRICS:
        lines += metric.details(metric.change_in(result), record)
    lines += next_steps(result, where)
    if command and rerecord_helps(result):
        lines.append(f"re-record this test's baseline entry: {command}")
    return "\n".join(lines)


def summary_row(outcome: Outcome) -> tuple[str, ...]:
    record, judged = outcome.record, outcome.verdict
    cells = [metric.cell(record, metric.change_in(judged)) for metric in METRICS if metric.column]
    return (
        outcome.key,
        f"{record.backend} ({outcome.variant})" if outcome.variant else record.backend,
        record.mode,
        *cells,
        judged.status,
    )


table = text_table  # the summary's text table (formatting.text_table)


METRIC_COLUMNS = tuple(metric.column for metric in METRICS if metric.column)
HEADER = ("test", "backend", "mode", *METRIC_COLUMNS, "verdict")
OVERHEAD_HEADER = "Keras/plain (ms, calls)"


def overhead_text(outcome: Outcome) -> str:
    """``1.53× ms, 8.59× calls``: Keras over its plain-framework twin, or ``-``."""
    overhead = outcome.overhead_json()
    if not overhead:
        return "-"
    parts = [
        f"{overhead[what]:.2f}× {unit}"
        for what, unit in (("latency", "ms"), ("calls", "calls"))
        if overhead.get(what) is not None
    ]
    return ", ".join(parts) or "-"


def results_table(results: Sequence[Outcome], *, by_backend: bool = False) -> list[str]:
    """The summary table; a Keras/plain column when any test measured its plain twin.

    Rows in the results' order, or by backend then test (``by_backend``).
    """
    overhead = any(r.record.plain_twin is not None for r in results)
    rows = [(*summary_row(r), *([overhead_text(r)] if overhead else [])) for r in results]
    if by_backend:
        rows.sort(key=lambda row: (row[1], row[0]))
    return table(rows, (*HEADER, OVERHEAD_HEADER) if overhead else HEADER)


def change_line(change: EntryChange) -> str:
    if change.kind == "added" and change.after is not None:
        return f"  added     {change.key}: {change.after.calls:,} calls"
    if change.kind == "removed":
        return f"  removed   {change.key}: stale (its test no longer exists)"
    if change.kind == "updated" and change.before is not None and change.after is not None:
        return f"  updated   {change.key}: " + ", ".join(moved_words(change.before, change.after))
    return f"  unchanged {change.key}"


def summary_lines(
    results: Sequence[Outcome], changes: Sequence[EntryChange], baseline_path: Path | str
) -> list[str]:
    lines = ["", "=" * 25 + " kerasperf " + "=" * 25]
    if results:
        lines += results_table(results)
    if changes:
        lines.append("")
        lines.append(f"baseline {baseline_path}:")
        lines += [change_line(change) for change in changes]
    return lines + win_lines(results, changes)


#: Improved tests named in the summary; the rest are counted.
MAX_WINS = 10
_RECORD_THE_WIN = ": record the win"


def win_lines(results: Sequence[Outcome], changes: Sequence[EntryChange]) -> list[str]:
    """The tests that improved on their baseline entry and this run did not record: a pass
    whose note is shown only by ``-rP``, so said here, with how to record the win."""
    recorded = {change.key for change in changes}
    won = [o for o in results if o.verdict.status == "improved" and o.key not in recorded]
    if not won:
        return []
    lines = [
        "",
        f"kerasperf: {plural(len(won), 'perf test')} improved on the baseline, not recorded; "
        "record the win: `--kerasperf-update-baseline`",
    ]
    for outcome in won[:MAX_WINS]:
        wins = [n.split(_RECORD_THE_WIN)[0] for n in outcome.verdict.notes if _RECORD_THE_WIN in n]
        lines.append(f"  {outcome.key}: {'; '.join(wins) or 'improved'}")
    if len(won) > MAX_WINS:
        lines.append(f"  and {len(won) - MAX_WINS} more")
    return lines


#: Characters of the closing line's skip reasons: more, and they are grouped by kind.
MAX_SKIP_TEXT = 200
#: Characters of one kind of skip reason.
MAX_KIND = 80
_PARTICULAR = re.compile(r"[.`'\"\d/<>()\[\]=]")


def skip_kind(reason: str) -> str:
    """A skip reason without its particulars: its first two ``": "`` parts, the words that name
    something (dotted names, quoted, numbers, paths) shown as ``…``."""
    head = ": ".join(reason.split(": ")[:2])
    words: list[str] = []
    for word in head.split():
        word = "…" if _PARTICULAR.search(word.rstrip(".,;:")) else word
        if word != "…" or not words or words[-1] != "…":
            words.append(word)
    kind = " ".join(words)
    return kind if len(kind) <= MAX_KIND else kind[: MAX_KIND - 1] + "…"


def skip_kinds(reasons: Mapping[str, int]) -> str:
    """``reason: n, ...`` where it is short; else the reasons grouped by kind with counts,
    the most common first, bounded, pointing at the detail (``-rs``, the JSON)."""
    text = counted(reasons)
    if len(text) <= MAX_SKIP_TEXT:
        return text
    kinds: Counter[str] = Counter()
    for reason, n in reasons.items():
        kinds[skip_kind(reason)] += n
    shown: list[str] = []
    for kind, n in sorted(kinds.items(), key=lambda item: (-item[1], item[0])):
        part = f"{kind}: {n}"
        if shown and len(", ".join([*shown, part])) > MAX_SKIP_TEXT:
            break
        shown.append(part)
    rest = sum(sorted(kinds.values(), reverse=True)[len(shown) :])
    more = f", {rest} more of {len(kinds) - len(shown)} other kinds" if rest else ""
    return (
        f"{plural(len(reasons), 'reason')} of {plural(len(kinds), 'kind')}: "
        f"{', '.join(shown)}{more}; each reason: `-rs` or --kerasperf-json"
    )


def closing_lines(
    summary: RunAccount,
    baseline_path: Path | str,
    *,
    strict: bool,
    printed_elsewhere: Collection[str] = (),
) -> list[tuple[str, bool]]:
    """The run's account, always printed: (line, is it a problem).

    A metric in ``printed_elsewhere`` gets no line here (an A/B prints its own latency).
    """
    not_compared = sum(summary.not_compared.values())
    not_measured = sum(summary.not_measured.values())
    total = summary.measured + not_measured
    parts = [f"{summary.measured} measured", f"{summary.compared} compared"]
    if not_compared:
        parts.append(f"{not_compared} not compared ({counted(summary.not_compared)})")
    if not_measured:
        parts.append(f"{not_measured} not measured ({skip_kinds(summary.not_measured)})")
    stale = len(summary.stale)
    stale_text = plural(stale, "stale baseline entry", "stale baseline entries")
    if stale:
        named = ", ".join(summary.stale[:MAX_STALE_NAMED])
        more = f" and {stale - MAX_STALE_NAMED} more" if stale > MAX_STALE_NAMED else ""
        stale_text += f" ({named}{more})"
    problems = summary.strict_problems()
    head = f"kerasperf: {plural(total, 'perf test')}: {', '.join(parts)}; {stale_text}"
    lines = [(f"{head} [{baseline_path}]", bool(problems))]
    if summary.changed is not None:
        lines.append((changed_line(summary.changed), False))
    for part in summary.metrics:
        line = part.closing_line()
        if line is not None and type(part).__struct_config__.tag not in printed_elsewhere:
            lines.append(line)
    if strict and problems:
        lines.append((f"kerasperf --kerasperf-strict: run FAILED: {', '.join(problems)}", True))
    return lines


def changed_line(changed: ChangedAccount, *, prefix: bool = True) -> str:
    """What ``--kerasperf-changed`` ran, and why, in one line."""
    head = "kerasperf --kerasperf-changed: " if prefix else ""
    since = f"the change since {changed.commit[:10]}" if changed.commit else "the change"
    if changed.everything:
        why = "; ".join(changed.everything[:2])
        more = f" (and {len(changed.everything) - 2} more)" if len(changed.everything) > 2 else ""
        return f"{head}every perf test ran: {why}{more}"
    return (
        f"{head}{plural(changed.ran, 'perf test')} ran, "
        f"{changed.not_affected:,} not affected by {since} "
        f"({plural(changed.functions, 'changed function')} of keras/src): not run, not passed"
    )
