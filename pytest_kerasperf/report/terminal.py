"""The report section of one test, the terminal summary and the closing lines of the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_kerasperf.accounting import RunAccount
from pytest_kerasperf.baseline import Change
from pytest_kerasperf.culprits import OWN_CALLS
from pytest_kerasperf.formatting import plural, signed, text_table
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import LATENCY_DECIMALS, Record
from pytest_kerasperf.verdict import Verdict

MAX_DIFF_ROWS = 25
MAX_ENTRY_POINTS = 10
MAX_ITEMS = 5  # an explanation group's biggest own-count changes shown
MAX_STALE_NAMED = 5


def detail_section(
    result: Verdict, record: Record | None = None, command: str | None = None
) -> str:
    """Failures, notes, where calls changed, the per-function diff, graph breaks, the fix."""
    lines = [f"FAIL {line}" for line in result.failures]
    lines += [f"note: {line}" for line in result.notes]
    if result.explanation is not None and result.explanation.groups:
        lines.append(
            "where calls changed (per workload call; the groups sum exactly to the change):"
        )
        lines += [f"  {line}" for line in result.explanation.lines(items=MAX_ITEMS)]
    elif result.entry_points:
        if all(point.callee == OWN_CALLS for point in result.entry_points):
            # Against a compact baseline entry: function-level culprits, exact.
            lines.append(
                "where calls changed (functions called as often as before whose own calls "
                "moved, per workload call):"
            )
        else:
            lines.append(
                "where calls changed (caller → callee, times called per workload call; "
                "≈: cProfile keeps edges, not paths):"
            )
        lines += [f"  {point.describe()}" for point in result.entry_points[:MAX_ENTRY_POINTS]]
        hidden = len(result.entry_points) - MAX_ENTRY_POINTS
        if hidden > 0:
            lines.append(f"  ... {hidden} more (see --kerasperf-json)")
    if result.function_diff:
        lines.append("calls by function vs baseline (changed only, biggest change first):")
        rows = result.function_diff[:MAX_DIFF_ROWS]
        width = max(len(signed(new - old)) for _, old, new in rows)
        for name, old, new in rows:
            lines.append(f"  {signed(new - old):>{width}}  {name}  ({old:,} -> {new:,})")
        hidden = len(result.function_diff) - MAX_DIFF_ROWS
        if hidden > 0:
            lines.append(f"  ... {hidden} more (see --kerasperf-json)")
    if result.break_changes:
        lines.append("graph breaks that changed (baseline→measured per reason):")
        lines += [f"  {change.describe()}" for change in result.break_changes]
    if record is not None and record.graph_breaks is not None and record.graph_breaks.reasons:
        graph = record.graph_breaks
        lines.append(
            f"graph breaks measured: {graph.breaks} ({graph.graphs} graphs); where dynamo "
            "broke, by reason (times per forward):"
        )
        lines += [
            f"  {r.count}× {r.frame} (line {r.line}): {r.reason}"
            for r in sorted(graph.reasons, key=lambda r: (-r.count, r.key))
        ]
    if command:
        lines.append(f"re-record this test's baseline entry: {command}")
    return "\n".join(lines)


def _delta(value: int | None) -> str:
    return "" if value is None or value == 0 else f" ({signed(value)})"


def summary_row(outcome: Outcome) -> tuple[str, ...]:
    record, judged = outcome.record, outcome.verdict
    graph, latency = record.graph_breaks, record.latency
    graph_text = "-" if graph is None else f"{graph.breaks}{_delta(judged.graph_breaks_delta)}"
    if latency is None:
        latency_text = "-"
    else:
        pct = judged.latency_delta_pct
        median = round(latency.median_ms, LATENCY_DECIMALS)
        latency_text = f"{median:.3f} ms" + ("" if pct is None else f" ({pct:+.1f}%)")
    return (
        outcome.key,
        f"{record.backend} ({outcome.variant})" if outcome.variant else record.backend,
        record.mode,
        f"{record.calls:,}{_delta(judged.calls_delta)}",
        graph_text,
        latency_text,
        judged.status,
    )


table = text_table  # the summary's text table (formatting.text_table)


HEADER = ("test", "backend", "mode", "calls (Δ)", "graph breaks (Δ)", "latency (Δ %)", "verdict")
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
    rows = [summary_row(r) for r in results]
    if by_backend:
        rows.sort(key=lambda row: (row[1], row[0]))
    if any(r.record.plain_twin is not None for r in results):
        by_row = {summary_row(r): overhead_text(r) for r in results}
        return table([(*row, by_row[row]) for row in rows], (*HEADER, OVERHEAD_HEADER))
    return table(rows, HEADER)


def _what_moved(before: Record, after: Record) -> list[str]:
    moved = []
    if before.calls != after.calls:
        delta = after.calls - before.calls
        moved.append(f"calls {before.calls:,} -> {after.calls:,} ({signed(delta)})")
    elif before.profile() != after.profile():
        moved.append("calls per function or call edges")
    old_graph, new_graph = before.graph_breaks, after.graph_breaks
    if old_graph and new_graph and old_graph.breaks != new_graph.breaks:
        moved.append(f"graph breaks {signed(new_graph.breaks - old_graph.breaks)}")
    elif (old_graph is None) != (new_graph is None) or (
        old_graph and new_graph and not old_graph.same_breaks(new_graph)
    ):
        moved.append("graph-break reasons")
    if before.recompiles != after.recompiles:
        moved.append(f"recompiles {before.recompiles} -> {after.recompiles}")
    if after.latency is not None and after.latency != before.latency:
        was = f"{before.latency.median_ms:.3f}" if before.latency else "-"
        moved.append(f"latency {was} -> {after.latency.median_ms:.3f} ms")
    for count in after.instruction_counts():  # one per tool (valgrind and CPU model)
        old = before.instructions_under(count.tool)
        if old != count:
            was = f"{old.median:,}" if old else "-"
            moved.append(f"instructions {was} -> {count.median:,} ({count.tool})")
    kept = {count.tool for count in after.instruction_counts()}
    dropped = [c for c in before.instruction_counts() if c.tool not in kept]
    if dropped:
        moved.append(f"instructions dropped (the calls moved): {len(dropped)}")
    return moved or ["environment"]


def change_line(change: Change) -> str:
    if change.kind == "added" and change.after is not None:
        return f"  added     {change.key}: {change.after.calls:,} calls"
    if change.kind == "removed":
        return f"  removed   {change.key}: stale (its test no longer exists)"
    if change.kind == "updated" and change.before is not None and change.after is not None:
        return f"  updated   {change.key}: " + ", ".join(_what_moved(change.before, change.after))
    return f"  unchanged {change.key}"


def summary_lines(
    results: Sequence[Outcome], changes: Sequence[Change], baseline_path: Path | str
) -> list[str]:
    lines = ["", "=" * 25 + " kerasperf " + "=" * 25]
    if results:
        lines += results_table(results)
    if changes:
        lines.append("")
        lines.append(f"baseline {baseline_path}:")
        lines += [change_line(change) for change in changes]
    return lines


def _counted(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{reason}: {n}" for reason, n in counts.items())


def closing_lines(
    summary: RunAccount, baseline_path: Path | str, *, strict: bool, latency: bool = True
) -> list[tuple[str, bool]]:
    """The run's account, always printed: (line, is it a problem).

    ``latency=False`` leaves out the latency line (an A/B run prints its own).
    """
    not_compared = sum(summary.not_compared.values())
    not_measured = sum(summary.not_measured.values())
    total = summary.measured + not_measured
    parts = [f"{summary.measured} measured", f"{summary.compared} compared"]
    if not_compared:
        parts.append(f"{not_compared} not compared ({_counted(summary.not_compared)})")
    if not_measured:
        parts.append(f"{not_measured} not measured ({_counted(summary.not_measured)})")
    stale = len(summary.stale)
    stale_text = plural(stale, "stale baseline entry", "stale baseline entries")
    if stale:
        named = ", ".join(summary.stale[:MAX_STALE_NAMED])
        more = f" and {stale - MAX_STALE_NAMED} more" if stale > MAX_STALE_NAMED else ""
        stale_text += f" ({named}{more})"
    problems = summary.strict_problems()
    head = f"kerasperf: {plural(total, 'perf test')}: {', '.join(parts)}; {stale_text}"
    lines = [(f"{head} [{baseline_path}]", bool(problems))]
    text = f"kerasperf latency: {summary.latency_measured} measured"
    if summary.latency_measured:
        ungated = summary.latency_measured - summary.latency_gated
        if ungated:
            text += (
                f", {ungated} on a CPU: reported, not gated "
                "(--kerasperf-gate-latency-on-cpu gates it)"
            )
        else:
            text += ", gated"
    if summary.latency_not_measured:
        text += f"; not measured ({_counted(summary.latency_not_measured)})"
    if latency:
        lines.append((text, False))
    if summary.instructions:
        counted = (
            f"kerasperf instructions: {summary.instructions_counted} counted under callgrind, "
            f"{summary.instructions_compared} compared"
        )
        skipped = sum(summary.instructions_not_compared.values())
        if skipped:
            counted += f", {skipped} not compared ({_counted(summary.instructions_not_compared)})"
        lines.append((counted, bool(skipped) or not summary.instructions_counted))
    if strict and problems:
        lines.append((f"kerasperf --kerasperf-strict: run FAILED: {', '.join(problems)}", True))
    return lines
