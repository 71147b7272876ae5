"""The page's charts (plotly figures), built from checked rows, honest and escaped as
docs/publish.md says.  plotly is imported only when a page is made."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import Any

from kerasperf_lab.history.steps import Series
from kerasperf_lab.publish.publish import RunPoint, Sweep
from pytest_kerasperf.formatting import signed
from pytest_kerasperf.record import LatencyRecord


def short_spec(spec: str) -> str:
    """A sweep's range with its full shas cut to 10 digits, as the sweep's table shows them."""
    return re.sub(r"\b([0-9a-f]{10})[0-9a-f]{30}\b", r"\1", spec)


class PlotlyUnavailable(Exception):
    """plotly is not installed; the message says how to install it."""


def plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise PlotlyUnavailable(
            "kerasperf publish needs plotly: pip install plotly "
            "(or pip install pytest-kerasperf[report])"
        ) from None
    return go


def _layout(title: str, y_title: str, **more: Any) -> dict[str, Any]:
    return {
        "title": {"text": escape(title)},
        "template": "plotly_white",
        "height": 400,
        "margin": {"l": 70, "r": 20, "t": 60, "b": 90},
        "yaxis": {"title": {"text": escape(y_title)}, "rangemode": "tozero"},
        "hovermode": "closest",
        **more,
    }


def _grouped(figure: Any, title: str, y_title: str, categories: Sequence[str]) -> None:
    """Lay ``figure`` out with its traces side by side, its x axis in ``categories``' order."""
    figure.update_layout(**_layout(title, y_title, scattermode="group"))
    figure.update_xaxes(categoryorder="array", categoryarray=[escape(c) for c in categories])


def _dots(
    go: Any, dots: Sequence[tuple[RunPoint, str, RunPoint | LatencyRecord]], name: str, marker: Any
) -> Any:
    """A point per median at its config (a dot: its point, what it is, its timing), whiskers
    ± IQR / 2 (none below zero: a latency is not negative)."""
    medians = [t.median_ms or 0.0 for _, _, t in dots]
    spreads = [t.iqr_ms or 0 for _, _, t in dots]
    return go.Scatter(
        x=[escape(p.config) for p, _, _ in dots],
        y=medians,
        mode="markers",
        name=name,
        marker=marker,
        error_y={
            "type": "data",
            "array": [iqr / 2 for iqr in spreads],
            "arrayminus": [min(iqr / 2, m) for iqr, m in zip(spreads, medians, strict=True)],
        },
        hovertext=[
            f"{escape(p.run)}<br>{what}<br>median {t.median_ms:.3f} ms<br>IQR {t.iqr_ms or 0:.3f} "
            f"ms<br>rounds {t.rounds}"
            for p, what, t in dots
        ],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def latency_figures(points: Sequence[RunPoint]) -> list[tuple[str, Any]]:
    """One dot plot per workload: each run's median per config, whiskers ± IQR / 2."""
    go = plotly()
    timed = [p for p in points if p.median_ms is not None]
    figures = []
    for workload in dict.fromkeys(p.workload for p in timed):
        here = [p for p in timed if p.workload == workload]
        configs = list(dict.fromkeys(p.config for p in here))
        figure = go.Figure()
        for run in dict.fromkeys(p.run for p in here):
            dots = [
                (p, f"{escape(p.config)} · {escape(p.workload)}", p) for p in here if p.run == run
            ]
            figure.add_trace(_dots(go, dots, escape(run), {"size": 10}))
        # The plain framework, same process and run: beside its config's point.
        twins = [
            (p, f"{escape(q.name)} (beside {escape(p.config)})", t)
            for p in here
            if (q := p.plain) and (t := q.latency)
        ]
        if twins:
            marker = {"size": 9, "symbol": "diamond-open", "color": "#8250df"}
            figure.add_trace(_dots(go, twins, "plain framework, same run", marker))
        spread = []
        for config in configs:
            medians = [p.median_ms for p in here if p.config == config and p.median_ms]
            if len(medians) > 1:
                spread.append((config, min(medians), max(medians), len(medians)))
        if spread:
            figure.add_trace(
                go.Scatter(
                    x=[escape(c) for c, *_ in spread for _ in range(3)],
                    y=[y for _, low, high, _n in spread for y in (low, high, None)],
                    mode="lines",
                    name="range across runs",
                    line={"color": "rgba(80,80,80,0.5)", "width": 6},
                    hovertext=[
                        f"{n} runs: {low:.3f} to {high:.3f} ms"
                        for _, low, high, n in spread
                        for _ in range(3)
                    ],
                    hovertemplate="%{hovertext}<extra></extra>",
                )
            )
        title = f"{workload}: ms per call, each run's median (whiskers: ± IQR / 2)"
        _grouped(figure, title, "ms per call (axis from 0)", configs)
        figures.append((f"latency: {workload}", figure))
    return figures


def calls_figures(points: Sequence[RunPoint]) -> list[tuple[str, Any]]:
    """Python calls per workload call, one chart per workload (a generate makes 100× the calls
    of a forward: on one axis the forwards would lie flat on zero), eager and compiled side by
    side, a trace per backend and a point per run."""
    go = plotly()
    figures = []
    for workload in dict.fromkeys(p.workload for p in points):
        here = [p for p in points if p.workload == workload]
        modes = list(dict.fromkeys(p.mode for p in here))
        figure = go.Figure()
        for backend in dict.fromkeys(p.backend for p in here):
            mine = [p for p in here if p.backend == backend]
            figure.add_trace(
                go.Scatter(
                    x=[escape(p.mode) for p in mine],
                    y=[p.calls for p in mine],
                    mode="markers",
                    name=escape(backend),
                    marker={"size": 10, "symbol": "diamond"},
                    hovertext=[
                        f"{escape(p.run)}<br>{escape(p.key)} ({escape(p.backend)})<br>"
                        f"{p.calls:,} calls"
                        + (f" ({signed(p.calls_delta)} vs baseline)" if p.calls_delta else "")
                        for p in mine
                    ],
                    hovertemplate="%{hovertext}<extra></extra>",
                )
            )
        title = f"{workload}: Python calls per call (cProfile, exact), per backend"
        _grouped(figure, title, "calls per call (axis from 0)", modes)
        figures.append((f"calls: {workload}", figure))
    return figures


def sweep_figure(sweep: Sweep, metric: Series, what: str) -> Any | None:
    """A step line per test of the sweep: ``metric`` (``what``: its words) at each commit."""
    go = plotly()
    figure = go.Figure()
    for series in sweep.series:
        values = {p.index: p.value(metric) for p in series.points}
        if all(v is None for v in values.values()):
            continue
        xs = list(range(len(sweep.table.commits)))
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=[values.get(i) for i in xs],
                mode="lines+markers",
                line={"shape": "hv"},
                connectgaps=False,
                name=escape(f"{series.backend} {series.test.rsplit('::', 1)[-1]}"),
                # Only a measured point has a label (hover labels grow with commits × series).
                hovertext=[
                    f"{escape(c.label())} {escape(c.short)} {escape(c.day)}<br>"
                    f"{escape(c.title[:80])}<br>{values[i]:,}"
                    if values.get(i) is not None
                    else ""
                    for i, c in enumerate(sweep.table.commits)
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    if not figure.data:
        return None
    figure.update_layout(
        **_layout(
            f"{what} at every commit of {short_spec(sweep.table.spec)[:80]} ({sweep.name})",
            f"{what} (axis from 0)",
            showlegend=True,
        )
    )
    figure.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(sweep.table.commits))),
        ticktext=[escape(c.label()) for c in sweep.table.commits],
        title={"text": "commit (first parent), oldest first"},
    )
    return figure
