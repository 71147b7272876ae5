"""The per-PR table of ``kerasperf publish`` as HTML: one row per PR, explanations folded.

Rendering only (``publish_prs`` checked the rows).  Per PR: its link, when it
merged (or ``head``: measured at the PR's head), its title, a warning when
the measured change holds other PRs' work too, the change of calls per
forward on each backend for the eager forwards, graph breaks before → after
of each compiled model that has them, and a folded explanation: where the
calls moved (groups whose deltas sum to the total), moved calls, and the hot
families that changed.
"""

from __future__ import annotations

from html import escape

from pytest_kerasperf.formatting import signed
from pytest_kerasperf.report.publish import commit_url, pr_url
from pytest_kerasperf.report.publish_prs import Explanation, Pr, PrRow, PrTable


def _forward_columns(table: PrTable) -> list[tuple[str, str]]:
    """(workload, backend) of every eager forward, then of every eager train step, in the order
    the rows name them (a train step only on the backends that measured one)."""
    backends = list(table.backends) or list(
        dict.fromkeys(row.backend for pr in table.prs for row in pr.rows)
    )
    columns = []
    for kind in ("forward", "train_step"):
        workloads = dict.fromkeys(
            row.workload
            for pr in table.prs
            for row in pr.rows
            if row.mode == "eager" and row.workload.endswith(kind)
        )
        for workload in workloads:
            measured = {
                row.backend for pr in table.prs for row in pr.rows if row.workload == workload
            }
            columns += [(workload, b) for b in backends if b in measured or kind == "forward"]
    return columns


def _delta_cell(pr: Pr, workload: str, backend: str) -> str:
    for row in pr.rows:
        if (row.workload, row.backend, row.mode) == (workload, backend, "eager"):
            if row.calls_delta is None:
                return '<td class="n" title="not measured on both sides">n/a</td>'
            shown = signed(row.calls_delta) if row.calls_delta else "0"
            return f'<td class="n" title="{row.calls_before} → {row.calls_after}">{shown}</td>'
    return '<td class="n" title="not measured">n/a</td>'


def _breaks_cell(pr: Pr) -> str:
    changed = [
        f"{escape(row.workload)} {row.graph_breaks_before} → {row.graph_breaks_after}"
        for row in pr.rows
        if row.mode == "compiled"
        and row.graph_breaks_before is not None
        and row.graph_breaks_after is not None
        and row.graph_breaks_before != row.graph_breaks_after
    ]
    unchanged = [
        f"{row.backend} {row.workload}: {row.graph_breaks_after}"
        for row in pr.rows
        if row.mode == "compiled"
        and row.graph_breaks_after is not None
        and row.graph_breaks_before == row.graph_breaks_after
    ]
    if changed:
        return "<td>" + "<br>".join(changed) + "</td>"
    return f'<td title="{escape("; ".join(unchanged) or "no compiled model measured")}">·</td>'


def _explanation(row: PrRow, explanation: Explanation) -> list[str]:
    out = [
        f"<p><b>{escape(row.backend)}</b> <code>{escape(row.test)}</code>: "
        f"{signed(explanation.total) if explanation.total else '0'} calls</p>"
    ]
    if explanation.groups_sum != explanation.total:
        out.append(
            f'<p class="warn">The groups add up to {signed(explanation.groups_sum)}, '
            f"not to the total {signed(explanation.total)}.</p>"
        )
    out.append("<table><tr><th>caller</th><th>Δ</th><th>callees: before → after (Δ)</th></tr>")
    for group in explanation.groups:
        via = f" via <code>{escape(group.via)}</code>" if group.via else ""
        items = "<br>".join(
            f"<code>{escape(item.callee)}</code>"
            + (f" (via <code>{escape(item.via)}</code>)" if item.via else "")
            + f" {item.before:,} → {item.after:,} "
            f"({signed(item.delta)})"
            for item in group.items
        )
        out.append(
            f"<tr><td><code>{escape(group.caller)}</code>{via}</td>"
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
    families = sorted(set(row.hot_before) | set(row.hot_after))
    moved = [
        f"{escape(f)} {row.hot_before.get(f, 0):,} → {row.hot_after.get(f, 0):,}"
        for f in families
        if row.hot_before.get(f, 0) != row.hot_after.get(f, 0)
    ]
    if not moved:
        return []
    return [
        f"<p>Hot families, {escape(row.backend)} <code>{escape(row.test)}</code>: "
        + "; ".join(moved)
        + "</p>"
    ]


def _details(pr: Pr) -> str:
    inner: list[str] = []
    for row in pr.rows:
        if row.explanation is not None and (row.explanation.total or row.explanation.groups):
            inner += _explanation(row, row.explanation)
        inner += _hot_lines(row)
    for backend, side, error in pr.failed:
        inner.append(f'<p class="warn">{escape(backend)} {escape(side)}: {escape(error)}</p>')
    sides = (
        f'<p class="note">before <a href="{escape(commit_url(pr.before.sha))}">'
        f"{escape(pr.before.sha[:10])}</a> ({escape(pr.before.date[:10])}), after "
        f'<a href="{escape(commit_url(pr.after.sha))}">{escape(pr.after.sha[:10])}</a> '
        f"({escape(pr.after.date[:10])})</p>"
    )
    if not inner:
        return f"<td>{sides}</td>"
    return f"<td><details><summary>explain</summary>{sides}{''.join(inner)}</details></td>"


def _contains(pr: Pr) -> str:
    if not pr.not_alone:
        return ""
    parts = [
        f'<a href="{escape(pr_url(number))}">#{number}</a> ({commits} commits)'
        for number, commits in pr.contains
    ]
    parts += [f"branch <code>{escape(branch)}</code>" for branch in pr.merged_branches]
    return (
        f'<br><span class="warn">⚠ the head also contains {", ".join(parts)}: '
        f"the Δ is not #{pr.number}'s alone</span>"
    )


def pr_section(table: PrTable) -> list[str]:
    columns = _forward_columns(table)
    head = "".join(f"<th>Δ calls/call<br>{escape(w)}<br>{escape(b)}</th>" for w, b in columns)
    rows = []
    for pr in table.prs:
        when = escape(pr.merged) if pr.how == "merged" and pr.merged else "head"
        cells = "".join(_delta_cell(pr, w, b) for w, b in columns)
        rows.append(
            f'<tr><td><a href="{escape(pr_url(pr.number))}">#{pr.number}</a></td>'
            f'<td class="d">{when}</td><td>{escape(pr.title)}{_contains(pr)}</td>{cells}'
            f"{_breaks_cell(pr)}{_details(pr)}</tr>"
        )
    return [
        f"<h2>Each PR, measured where it landed ({escape(table.name)})</h2>",
        f'<p class="note">Δ is after minus before (negative is fewer calls): a merged PR '
        f"against its merge commit's first parent on {escape(table.target)}, a head against "
        "its merge base.</p>",
        f"<table><tr><th>PR</th><th>merged</th><th>title</th>{head}"
        "<th>graph breaks (compiled)</th><th>explanation</th></tr>",
        *rows,
        "</table>",
    ]
