"""The per-PR table of ``kerasperf publish`` as HTML: one row per PR, explanations folded.

Rendering only (``publish_prs`` checked the rows).  Per PR: its link, when it
merged (or ``head``: measured at the PR's head), its title, a warning when
the measured change holds other PRs' work too, the change of calls per
forward on each backend for the eager forwards, each other exact count
(graph breaks) before → after of each compiled model that has it, and a
folded explanation: where the calls moved (groups whose deltas sum to the
total), moved calls, and the hot families that changed.
"""

from __future__ import annotations

from html import escape

from kerasperf_lab.history.prs_render import COUNTS
from kerasperf_lab.history.prs_table import PrEntry, PrRow
from kerasperf_lab.publish.publish import commit_url, pr_url
from kerasperf_lab.publish.publish_prs import PublishedPrs, workload
from pytest_kerasperf.explain import Explanation
from pytest_kerasperf.formatting import signed


def _forward_columns(published: PublishedPrs) -> list[tuple[str, str]]:
    """(workload, backend) of every eager forward, then of every eager train step, in the order
    the rows name them (a train step only on the backends that measured one)."""
    table = published.table
    rows = [row for entry in table.entries for row in entry.rows]
    backends = list(table.backends) or list(dict.fromkeys(row.backend for row in rows))
    columns = []
    for kind in ("forward", "train_step"):
        named = dict.fromkeys(
            workload(row) for row in rows if row.mode == "eager" and workload(row).endswith(kind)
        )
        for name in named:
            measured = {row.backend for row in rows if workload(row) == name}
            columns += [(name, b) for b in backends if b in measured or kind == "forward"]
    return columns


def _delta_cell(pr: PrEntry, name: str, backend: str) -> str:
    for row in pr.rows:
        if (workload(row), row.backend, row.mode) == (name, backend, "eager"):
            shown = signed(row.calls_delta) if row.calls_delta else "0"
            return f'<td class="n" title="{row.calls_before} → {row.calls_after}">{shown}</td>'
    return '<td class="n" title="not measured">n/a</td>'


def _pairs_cell(pr: PrEntry, metric: str) -> str:
    """The compiled models whose ``metric`` changed, ``before → after``, else ``·``."""
    pairs = [
        (row, pair) for row in pr.rows if row.mode == "compiled" and (pair := row.pair(metric))
    ]
    changed = [f"{escape(workload(row))} {b} → {a}" for row, (b, a) in pairs if b != a]
    unchanged = [f"{row.backend} {workload(row)}: {a}" for row, (b, a) in pairs if b == a]
    if changed:
        return "<td>" + "<br>".join(changed) + "</td>"
    return f'<td title="{escape("; ".join(unchanged) or "no compiled model measured")}">·</td>'


def _explanation(row: PrRow, explanation: Explanation) -> list[str]:
    out = [
        f"<p><b>{escape(row.backend)}</b> <code>{escape(row.test)}</code>: "
        f"{signed(explanation.total) if explanation.total else '0'} calls</p>"
    ]
    out.append("<table><tr><th>caller</th><th>Δ</th><th>callees: before → after (Δ)</th></tr>")
    for group in explanation.groups:
        items = "<br>".join(
            f"<code>{escape(item.callee)}</code>"
            + (f" (via <code>{escape(item.via)}</code>)" if item.via else "")
            + f" {item.before:,} → {item.after:,} "
            f"({signed(item.delta)})"
            for item in group.items
        )
        out.append(
            f"<tr><td><code>{escape(group.caller)}</code></td>"
            f'<td class="n">{signed(group.delta)}</td><td>{items}</td></tr>'
        )
    out.append("</table>")
    if explanation.moves:
        moves = "".join(
            f"<li><code>{escape(m.callee)}</code> ({m.calls:,} calls) moved from "
            f"<code>{escape(m.source)}</code> to <code>{escape(m.target)}</code></li>"
            for m in explanation.moves
        )
        out.append(f"<ul>{moves}</ul>")
    return out


def _hot_lines(row: PrRow) -> list[str]:
    moved = [f"{escape(f)} {old:,} → {new:,}" for f, old, new in row.hot_changes()]
    if not moved:
        return []
    return [
        f"<p>Hot families, {escape(row.backend)} <code>{escape(row.test)}</code>: "
        + "; ".join(moved)
        + "</p>"
    ]


def _details(pr: PrEntry) -> str:
    inner: list[str] = []
    for row in pr.rows:
        if row.explanation is not None and (row.explanation.total or row.explanation.groups):
            inner += _explanation(row, row.explanation)
        inner += _hot_lines(row)
    for failure in pr.failed:
        inner.append(
            f'<p class="warn">{escape(failure.backend)} {escape(failure.side)}: '
            f"{escape(failure.error)}</p>"
        )
    before, after = pr.before, pr.after
    sides = (
        f'<p class="note">before <a href="{escape(commit_url(before.sha))}">'
        f"{escape(before.sha[:10])}</a> ({escape(before.date[:10])}), after "
        f'<a href="{escape(commit_url(after.sha))}">{escape(after.sha[:10])}</a> '
        f"({escape(after.date[:10])})</p>"
    )
    if not inner:
        return f"<td>{sides}</td>"
    return f"<td><details><summary>explain</summary>{sides}{''.join(inner)}</details></td>"


def _contains(pr: PrEntry) -> str:
    if not (pr.contains or pr.merged_branches):
        return ""
    parts = [
        f'<a href="{escape(pr_url(c.pr))}">#{c.pr}</a> ({c.commits} commits)' for c in pr.contains
    ]
    parts += [f"branch <code>{escape(branch)}</code>" for branch in pr.merged_branches]
    return (
        f'<br><span class="warn">⚠ the head also contains {", ".join(parts)}: '
        f"the Δ is not #{pr.pr}'s alone</span>"
    )


def pr_section(published: PublishedPrs) -> list[str]:
    table = published.table
    columns = _forward_columns(published)
    head = "".join(f"<th>Δ calls/call<br>{escape(w)}<br>{escape(b)}</th>" for w, b in columns)
    rows = []
    for pr in table.entries:
        when = escape(pr.merged) if pr.how == "merged" and pr.merged else "head"
        cells = "".join(_delta_cell(pr, w, b) for w, b in columns)
        rows.append(
            f'<tr><td><a href="{escape(pr_url(pr.pr))}">#{pr.pr}</a></td>'
            f'<td class="d">{when}</td><td>{escape(pr.title)}{_contains(pr)}</td>{cells}'
            + "".join(_pairs_cell(pr, m.name) for m in COUNTS)
            + f"{_details(pr)}</tr>"
        )
    return [
        f"<h2>Each PR, measured where it landed ({escape(published.name)})</h2>",
        f'<p class="note">Δ is after minus before (negative is fewer calls): a merged PR '
        f"against its merge commit's first parent on {escape(table.target)}, a head against "
        "its merge base.</p>",
        f"<table><tr><th>PR</th><th>merged</th><th>title</th>{head}"
        + "".join(f"<th>{escape(m.label)} (compiled)</th>" for m in COUNTS)
        + "<th>explanation</th></tr>",
        *rows,
        "</table>",
    ]
