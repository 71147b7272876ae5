"""``kerasperf publish``: one self-contained HTML page of results, sweeps and per-PR tables.

Rendering only: the rows come from ``publish`` and ``publish_prs`` (checked input) and
``article.build`` (the hot functions).  What keeps the page safe and honest (plotly.js embedded
once, figures as escaped JSON, escaped text, links only into Keras's repository, a
Content-Security-Policy) is docs/publish.md's."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from kerasperf_lab.history.prs_render import COUNTS
from kerasperf_lab.history.steps import FOLLOWED
from kerasperf_lab.publish import article
from kerasperf_lab.publish.html_figures import (
    calls_figures,
    latency_figures,
    plotly,
    short_spec,
    sweep_figure,
)
from kerasperf_lab.publish.html_prs import pr_section
from kerasperf_lab.publish.publish import RunPoint, Sweep, commit_url, failing_first, pr_url
from kerasperf_lab.publish.publish_prs import PublishedPrs
from pytest_kerasperf.formatting import count, ms, signed

#: Nothing is fetched at view time: scripts and styles are inline, images data: or blob:.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px;
  padding: 0 1em; color: #1b1f24; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.regression td { background: #ffebe9; } tr.failed td { background: #fff8c5; }
.chart { width: 100%; min-height: 380px; } .note { color: #57606a; }
.warn { color: #9a6700; } code { font-size: 90%; } td.d { white-space: nowrap; }
"""
BOOT = """(function () {
  var figures = JSON.parse(document.getElementById("kerasperf-figures").textContent);
  Object.keys(figures).forEach(function (id) {
    var figure = figures[id];
    Plotly.newPlot(id, figure.data, figure.layout, {displaylogo: false, responsive: true});
  });
})();"""
_SCRIPT_SAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028"}


@dataclass(frozen=True)
class Page:
    title: str
    inputs: tuple[tuple[str, str], ...]  # (file name, what it is)
    points: tuple[RunPoint, ...] = ()
    hot: article.Article | None = None
    hot_runs: tuple[str, ...] = ()  # the results files the hot functions come from
    sweeps: tuple[Sweep, ...] = ()
    prs: tuple[PublishedPrs, ...] = ()


@dataclass
class _Charts:
    """The page's figures, by the id of the div each is drawn in."""

    figures: dict[str, Any] = field(default_factory=dict)

    def div(self, title: str, figure: Any) -> str:
        div = f"chart-{len(self.figures)}"
        self.figures[div] = figure
        return f'<div class="chart" id="{div}" data-title="{escape(title)}"></div>'


def script_json(text: str) -> str:
    """JSON text that cannot end the <script> it is embedded in (nor start a comment)."""
    for char, escaped in _SCRIPT_SAFE.items():
        text = text.replace(char, escaped)
    return text.replace("\u2029", "\\u2029")


def _gate_section(points: Sequence[RunPoint]) -> list[str]:
    rows = []
    for p in failing_first(points):
        kind = "regression" if p.category == "regression" else "failed" if not p.passed else ""
        failures = "".join(f"<li>{escape(line)}</li>" for line in p.failures)
        delta = f" ({signed(p.calls_delta)})" if p.calls_delta else ""
        latency = "-" if p.median_ms is None else f"{ms(p.median_ms)} (IQR {ms(p.iqr_ms)})"
        counts = "".join(f'<td class="n">{p.values.get(m.name, "-")}</td>' for m in COUNTS)
        rows.append(
            f'<tr class="{kind}"><td>{escape(p.status)}</td><td>{escape(p.backend)}</td>'
            f"<td><code>{escape(p.key)}</code>"
            + (f"<ul>{failures}</ul>" if failures else "")
            + f'</td><td>{escape(p.run)}</td><td class="n">{p.calls:,}{delta}</td>'
            f'{counts}<td class="n">{latency}</td></tr>'
        )
    failing = sum(1 for p in points if not p.passed)
    return [
        "<h2>Gate results</h2>",
        f'<p class="note">{len(points)} results, {failing} failing; failing tests first '
        "(regressions at the top), each with its failure lines.</p>",
        "<table><tr><th>status</th><th>backend</th><th>test</th><th>run</th>"
        "<th>calls (Δ vs baseline)</th>"
        + "".join(f"<th>{escape(m.label)}</th>" for m in COUNTS)
        + "<th>median ms</th></tr>",
        *rows,
        "</table>",
    ]


def _graphs_table(hot: article.Article) -> list[str]:
    if not hot.graphs:
        return []
    rows = [
        f"<tr><td>{escape(article.config_label(g.backend, g.mode, g.workload))}</td>"
        f"<td>{escape(article.workload_name(g.workload))}</td>"
        f'<td class="n">{"-" if g.breaks is None else g.breaks}</td>'
        f'<td class="n">{"-" if g.graphs is None else g.graphs}</td>'
        f'<td class="n">{"-" if g.recompiles is None else g.recompiles}</td></tr>'
        for g in hot.graphs
    ]
    return [
        "<h2>Graph breaks per compiled model</h2>",
        "<table><tr><th>config</th><th>workload</th><th>graph breaks</th><th>graphs</th>"
        "<th>recompiles per call</th></tr>",
        *rows,
        "</table>",
    ]


def _hot_section(hot: article.Article, runs: Sequence[str]) -> list[str]:
    out = [
        "<h2>Hot functions by family</h2>",
        f'<p class="note">Calls per workload call grouped into families, from '
        f"{escape(', '.join(runs))} (the first results file of each backend).</p>",
    ]
    for table in hot.families:
        if not any(table.totals.values()):
            continue  # nothing called (a cached jax.jit forward): no family to show
        head = "".join(f"<th>{escape(b)}</th>" for b in table.backends)
        out.append(
            f"<h3><code>{escape(article.workload_name(table.workload))}</code> "
            f"[{escape(table.mode)}]</h3><table><tr><th>family</th>{head}<th>top functions</th>"
            "</tr>"
        )
        for row in table.rows:
            cells = "".join(f'<td class="n">{count(row.calls[b])}</td>' for b in table.backends)
            top = ", ".join(
                f"<code>{escape(f.removeprefix('keras/src/'))}</code> {n:,}"
                for f, n in row.top_functions()
            )
            out.append(
                f'<tr><td title="{escape(row.description)}">{escape(row.family)}</td>'
                f"{cells}<td>{top}</td></tr>"
            )
        totals = "".join(f'<td class="n">{count(table.totals[b])}</td>' for b in table.backends)
        out.append(f"<tr><th>total</th>{totals}<td></td></tr></table>")
    return out


def _sweep_section(charts: _Charts, sweep: Sweep) -> list[str]:
    out = [f"<h2>Sweep {escape(short_spec(sweep.table.spec))}</h2>"]
    for metric in (m for m in FOLLOWED if m.exact):  # counts: a sweep keeps no spread to draw
        figure = sweep_figure(sweep, metric.name, metric.series or metric.label)
        out.append(
            charts.div(f"{metric.label} per merge", figure)
            if figure is not None
            else f'<p class="note">No test of this sweep has {escape(metric.label)} to draw.</p>'
        )
    links = ", ".join(
        f'<a href="{escape(commit_url(c.sha))}">{escape(c.sha[:10])}</a>'
        + (f' (<a href="{escape(pr_url(c.pr))}">#{c.pr}</a>)' if c.pr is not None else "")
        for c in sweep.table.commits
    )
    out.append(f'<p class="note">Commits, oldest first: {links}</p>')
    return out


def body(page: Page, charts: _Charts) -> list[str]:
    """The page's sections (adding their figures to ``charts``)."""
    kinds = "".join(f"<li>{escape(kind)}: {escape(name)}</li>" for name, kind in page.inputs)
    out = [f"<h1>{escape(page.title)}</h1>", f"<ul class='note'>{kinds}</ul>"]
    if page.points:
        out += _gate_section(page.points)
        out.append("<h2>Latency per config and workload</h2>")
        out.append(
            '<p class="note">One point per results file (run); hover for the file, median, '
            "IQR and rounds; an open diamond beside a config is its plain-framework twin, "
            "timed in the same process (<code>--kerasperf-plain</code>). Compare latency "
            "within a backend: each was timed on its own device.</p>"
        )
        out += [charts.div(title, figure) for title, figure in latency_figures(page.points)]
        out.append("<h2>Python calls per workload call, per backend</h2>")
        out.append(
            '<p class="note">Exact counts (cProfile), one chart per workload: a generate-32 '
            "makes about 32 forwards' worth of calls. Hover for the run and the change against "
            "the baseline.</p>"
        )
        out += [charts.div(title, figure) for title, figure in calls_figures(page.points)]
    if page.hot is not None:
        out += _graphs_table(page.hot)
    for sweep in page.sweeps:
        out += _sweep_section(charts, sweep)
    for table in page.prs:
        out += pr_section(table)
    if page.hot is not None:
        out += _hot_section(page.hot, page.hot_runs)
    return out


def render(page: Page) -> str:
    """The whole page: plotly.js once in the head, the figures as escaped JSON at the end."""
    plotly()  # plotly missing: said once, before any work
    from plotly.offline import get_plotlyjs

    charts = _Charts()
    sections = body(page, charts)
    plotly_js = get_plotlyjs().replace("</script", "<\\/script")
    figures = "{" + ",".join(f"{json.dumps(k)}:{f.to_json()}" for k, f in charts.figures.items())
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(page.title)}</title>",
            f"<style>{STYLE}</style>",
            f"<script>{plotly_js}</script>",
            "</head><body>",
            *sections,
            '<script type="application/json" id="kerasperf-figures">'
            + script_json(figures + "}")
            + "</script>",
            f"<script>{BOOT}</script>",
            "</body></html>",
            "",
        ]
    )
