"""PNG charts of the article's views (``kerasperf report --article --charts DIR``):
``latency.png`` and ``calls.png``, as docs/article-report.md (The charts) describes them.

Drawn with matplotlib's Agg canvas on standalone Figures: no display, no pyplot state.
matplotlib is optional and imported only inside the functions that draw."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerasperf_lab.publish.article import (
    Article,
    CallsRow,
    LatencyRow,
    config_label,
    workload_name,
)
from kerasperf_lab.publish.comparable import REASONS
from pytest_kerasperf.formatting import ms, signed, times

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: the four backends' colours, the same in every chart.
COLOURS = {"torch": "#d62728", "jax": "#1f77b4", "tensorflow": "#ff7f0e", "numpy": "#2ca02c"}
FALLBACK_COLOUR = "#7f7f7f"
DPI = 120
#: the smallest text on any chart (tick labels, value labels, notes), in points.
SMALL = 8
#: panel titles and axis labels.
MEDIUM = 9
#: the figure's title.
LARGE = 11
CURRENT = "#1f77b4"
PLAIN = "#9467bd"
BASELINE = "#555555"


class ChartsUnavailable(Exception):
    """matplotlib cannot be imported; one line saying how to install it."""


def require_matplotlib() -> None:
    """ChartsUnavailable, saying how to install it, where matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401  (only to fail early with a clear message)
    except ImportError:
        raise ChartsUnavailable(
            "--charts needs matplotlib, which is not installed: pip install matplotlib"
        ) from None


def write(article: Article, directory: Path) -> list[Path]:
    """Draw the charts into ``directory`` (created if needed); the paths written."""
    require_matplotlib()
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    if any(r.current is not None or r.plain is not None for r in article.latency):
        written.append(save(latency_figure(article), directory / "latency.png"))
    if article.calls:
        written.append(save(calls_figure(article), directory / "calls.png"))
    return written


def save(figure: Figure, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=DPI)
    return path


def wrapped(text: str, width_in: float, points: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``points`` points."""
    per_line = max(20, int(width_in * 72 / (points * 0.6)))
    return "\n".join(textwrap.wrap(text, per_line, break_on_hyphens=False))


def title(figure: Figure, text: str) -> None:
    """The figure's title, wrapped to its width (constrained layout keeps it inside)."""
    width = float(figure.get_figwidth()) - 0.4
    figure.suptitle(wrapped(text, width, LARGE), fontsize=LARGE)


def note(figure: Figure, lines: Sequence[str], handles: Sequence[Any] = ()) -> None:
    """Notes under the panels, wrapped to the figure's width, as the legend's title."""
    width = float(figure.get_figwidth()) - 0.6
    text = "\n".join(wrapped(line, width, SMALL) for line in lines)
    figure.legend(
        handles=list(handles),
        loc="outside lower center",
        ncols=max(1, len(handles)),
        fontsize=SMALL,
        title=text or None,
        title_fontsize=SMALL,
        frameon=False,
    )


# ---------------------------------------------------------------------------
# latency.png


def latency_figure(article: Article) -> Figure:
    """Median and IQR of every config, one panel per workload, axes from 0."""
    from matplotlib.figure import Figure

    rows = [r for r in article.latency if r.current is not None or r.plain is not None]
    workloads = list(dict.fromkeys(r.workload for r in rows))
    by_workload = {w: [r for r in rows if r.workload == w] for w in workloads}
    sizes = [len(by_workload[w]) + 1.2 for w in workloads]
    figure = Figure(figsize=(10, 2.2 + 0.5 * sum(sizes)), layout="constrained")
    panels = figure.subplots(len(workloads), 1, squeeze=False, height_ratios=sizes)
    for index, workload in enumerate(workloads):
        _latency_panel(panels[index][0], by_workload[workload], workload_name(workload))
    title(figure, "Latency per call: median and IQR of each config (same run), per workload")
    note(figure, _latency_notes(rows), _latency_legend(rows))
    return figure


def _latency_panel(axes: Axes, rows: Sequence[LatencyRow], name: str) -> None:
    top = 0.0
    for y, row in enumerate(rows):
        # The baseline entry's dot only where its ratio to this run may be shown.
        baseline = row.baseline if row.change.value is not None else None
        for timing, offset, gid, style in (
            (row.current, 0.0, "current", {"fmt": "o", "color": CURRENT, "elinewidth": 2}),
            (row.plain, 0.28, "plain", {"fmt": "D", "color": PLAIN, "elinewidth": 2}),
            (baseline, -0.28, "baseline", {"fmt": "o", "color": BASELINE, "mfc": "white"}),
        ):
            if timing is None:
                continue
            half = (timing.iqr_ms or 0.0) / 2
            axes.errorbar(
                [timing.median_ms],
                [y + offset],
                xerr=[[min(half, timing.median_ms)], [half]],
                markersize=6,
                capsize=3,
                gid=gid,
                **style,
            )
            top = max(top, timing.median_ms + half)
        axes.annotate(
            _row_text(row),
            (1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(-4, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=SMALL,
        )
    axes.set_xlim(0, top * 1.7 if top > 0 else 1.0)
    axes.set_ylim(len(rows) - 0.4, -0.6)
    axes.set_yticks(
        range(len(rows)),
        labels=[config_label(r.backend, r.mode, r.workload) for r in rows],
        fontsize=MEDIUM,
    )
    axes.tick_params(axis="x", labelsize=SMALL)
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(name, fontsize=MEDIUM, loc="left")
    axes.set_xlabel("ms per call (axis from 0)", fontsize=SMALL)


def _row_text(row: LatencyRow) -> str:
    overhead, change = row.overhead, row.change
    parts = []
    if overhead.value is not None:
        parts.append(f"Keras/plain {times(overhead.value)}")
    elif overhead.blocked is not None:
        parts.append(f"Keras/plain: not comparable ({overhead.blocked})")
    if change.value is not None:
        parts.append(f"vs baseline {times(change.value)}")
    if not parts and row.current is not None:
        parts.append(f"{ms(row.current.median_ms)} ms")
    return "\n".join(parts)


def _latency_legend(rows: Sequence[LatencyRow]) -> list[Any]:
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], label=label, **style)
        for shown, label, style in (
            (True, "Keras: median, bar = IQR", {"color": CURRENT, "marker": "o", "lw": 2}),
            (
                any(r.plain for r in rows),
                "plain framework, same run",
                {"color": PLAIN, "marker": "D", "lw": 2},
            ),
            (
                any(r.change.value is not None for r in rows),
                "baseline entry (comparable runs only)",
                {"color": BASELINE, "marker": "o", "mfc": "white", "ls": "none"},
            ),
        )
        if shown
    ]


def _latency_notes(rows: Sequence[LatencyRow]) -> list[str]:
    """Why baselines and ratios are missing, counted: the rule's reasons, once each."""
    with_baseline = [r for r in rows if r.baseline is not None and r.current is not None]
    refused = Counter(r.change.blocked for r in with_baseline if r.change.blocked is not None)
    lines = [
        "Bars are the IQR (middle half of the timed rounds), centred on the median. "
        "Compare within a workload's panel and a backend: each backend ran on its own."
    ]
    if refused:
        reasons = "; ".join(f"{reason}: {REASONS[reason]} ({n})" for reason, n in refused.items())
        lines.append(
            f"Baseline not drawn for {sum(refused.values())} of {len(with_baseline)} rows, "
            f"the runs are not comparable: {reasons}."
        )
    return lines


# ---------------------------------------------------------------------------
# calls.png


def calls_figure(article: Article) -> Figure:
    """Calls per workload call, one panel per workload x mode, bars from 0."""
    from matplotlib.figure import Figure

    workloads = list(dict.fromkeys(r.workload for r in article.calls))
    modes = list(dict.fromkeys(r.mode for r in article.calls))
    rows = {
        (w, m): [r for r in article.calls if r.workload == w and r.mode == m]
        for w in workloads
        for m in modes
    }
    with_plain = any(r.plain_calls is not None for r in article.calls)
    most = max((len(v) for v in rows.values()), default=1) * (2 if with_plain else 1)
    figure = Figure(
        figsize=(6.5 * len(modes), 1.6 + len(workloads) * (0.36 * most + 1.1)),
        layout="constrained",
    )
    panels = figure.subplots(len(workloads), len(modes), squeeze=False)
    for w_index, workload in enumerate(workloads):
        for m_index, mode in enumerate(modes):
            axes = panels[w_index][m_index]
            here = rows[(workload, mode)]
            if not here:
                axes.set_axis_off()
                continue
            _calls_panel(axes, here, with_plain)
            axes.set_title(f"{workload_name(workload)} · {mode}", fontsize=MEDIUM, loc="left")
    title(figure, "Python calls per workload call, per backend (exact, cProfile)")
    note(
        figure,
        [
            "Axes from 0, one scale per panel. Δ: change against the committed baseline "
            "entry; × plain: Keras calls / plain-framework calls, same run."
        ],
    )
    return figure


def _calls_panel(axes: Axes, rows: Sequence[CallsRow], with_plain: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    step = 2 if with_plain else 1
    ticks, labels = [], []
    for index, row in enumerate(rows):
        colour = COLOURS.get(row.backend, FALLBACK_COLOUR)
        y = index * step
        ticks.append(y)
        labels.append(config_label(row.backend, row.mode, row.workload))
        bars = axes.barh([y], [row.calls], height=0.8, color=colour)
        axes.bar_label(bars, labels=[_calls_text(row)], padding=3, fontsize=SMALL)
        if with_plain and row.plain_calls is not None:
            plain = axes.barh(
                [y + 0.9],
                [row.plain_calls],
                height=0.7,
                color=colour,
                alpha=0.4,
                hatch="//",
                edgecolor="white",
            )
            text = f"plain {row.backend}: {row.plain_calls:,}"
            axes.bar_label(plain, labels=[text], padding=3, fontsize=SMALL)
    largest = max(max(r.calls, r.plain_calls or 0) for r in rows)
    axes.set_xlim(0, largest * 1.6 if largest > 0 else 1.0)
    axes.set_ylim(len(rows) * step - 0.5, -0.6)
    axes.set_yticks(ticks, labels=labels, fontsize=MEDIUM)
    axes.tick_params(axis="x", labelsize=SMALL)
    axes.xaxis.set_major_formatter("{x:,.0f}")
    axes.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    axes.grid(axis="x", alpha=0.3)


def _calls_text(row: CallsRow) -> str:
    parts = [f"{row.calls:,}"]
    if row.calls_delta and row.baseline_calls:
        pct = row.calls_delta / row.baseline_calls * 100
        parts.append(f"Δ {signed(row.calls_delta)} ({pct:+.1f} %)".replace("-", "\u2212"))
    if row.overhead is not None:
        parts.append(f"{times(row.overhead)} plain")
    return " · ".join(parts)
