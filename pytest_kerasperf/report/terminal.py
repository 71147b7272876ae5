"""The report section of one test and the terminal summary of the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_kerasperf.baseline import Change
from pytest_kerasperf.verdict import Verdict, signed

MAX_DIFF_ROWS = 25


def detail_section(result: Verdict) -> str:
    """Failures, notes, the per-function diff (biggest first) and changed break reasons."""
    lines = [f"FAIL {line}" for line in result.failures]
    lines += [f"note: {line}" for line in result.notes]
    if result.function_diff:
        lines.append("calls by function vs baseline (changed only, biggest change first):")
        width = max(len(signed(new - old)) for _, old, new in result.function_diff[:MAX_DIFF_ROWS])
        for name, old, new in result.function_diff[:MAX_DIFF_ROWS]:
            lines.append(f"  {signed(new - old):>{width}}  {name}  ({old:,} -> {new:,})")
        hidden = len(result.function_diff) - MAX_DIFF_ROWS
        if hidden > 0:
            lines.append(f"  ... {hidden} more (see --kerasperf-json)")
    for label, reasons in (
        ("new graph breaks", result.new_break_reasons),
        ("graph breaks gone", result.gone_break_reasons),
    ):
        if reasons:
            lines.append(f"{label}:")
            lines += [f"  {r.frame}: {r.reason}" for r in reasons]
    return "\n".join(lines)


def _delta(value: int | None) -> str:
    return "" if value is None or value == 0 else f" ({signed(value)})"


def summary_row(result: Mapping[str, Any]) -> tuple[str, ...]:
    record = result["record"]
    judged = result["verdict"]
    graph = record["graph_breaks"]
    latency = record["latency_ms"]
    graph_text = (
        "-" if graph is None else f"{graph['breaks']}{_delta(judged['graph_breaks_delta'])}"
    )
    if latency is None:
        latency_text = "-"
    else:
        pct = judged["latency_delta_pct"]
        latency_text = f"{latency['median']:.3f} ms" + ("" if pct is None else f" ({pct:+.1f}%)")
    return (
        result["key"],
        record["backend"],
        record["mode"],
        f"{record['calls']:,}{_delta(judged['calls_delta'])}",
        graph_text,
        latency_text,
        judged["status"],
    )


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))

    return [fmt(header), fmt(["-" * w for w in widths]), *(fmt(row) for row in rows)]


HEADER = ("test", "backend", "mode", "calls (Δ)", "graph breaks (Δ)", "latency (Δ %)", "verdict")


def summary_lines(
    results: Sequence[Mapping[str, Any]], changes: Sequence[Change], baseline_path: Path
) -> list[str]:
    lines = ["", "=" * 25 + " kerasperf " + "=" * 25]
    if not results:
        return [*lines, "no perf test measured anything"]
    lines += table([summary_row(r) for r in results], HEADER)
    if changes:
        lines.append("")
        lines.append(f"baseline {baseline_path}:")
        for change in changes:
            if change.kind == "added":
                lines.append(f"  added     {change.key}: {change.after.calls:,} calls")
            elif change.kind == "updated" and change.before is not None:
                delta = change.after.calls - change.before.calls
                graphs = ""
                if change.after.graph_breaks and change.before.graph_breaks:
                    g = change.after.graph_breaks.breaks - change.before.graph_breaks.breaks
                    graphs = f", graph breaks {signed(g)}" if g else ""
                lines.append(
                    f"  updated   {change.key}: calls {change.before.calls:,} -> "
                    f"{change.after.calls:,} ({signed(delta)}){graphs}"
                )
            else:
                lines.append(f"  unchanged {change.key}")
    return lines
