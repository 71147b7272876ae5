"""PNG charts of the article's views (``kerasperf report --article --charts DIR``).

Drawn with matplotlib's Agg canvas on standalone Figures: no display, no
pyplot state, nothing shared with a caller's own matplotlib use.  matplotlib
is optional (``pip install matplotlib``, or the ``report`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_kerasperf.formatting import ms
from pytest_kerasperf.report.article import Article, CallsRow, config_label, workload_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: the four backends' colours, the same in every chart.
COLOURS = {"torch": "#d62728", "jax": "#1f77b4", "tensorflow": "#ff7f0e", "numpy": "#2ca02c"}
FALLBACK_COLOUR = "#7f7f7f"
DPI = 120


class ChartsUnavailable(Exception):
    """matplotlib cannot be imported; one line saying how to install it."""


def write(article: Article, directory: Path) -> list[Path]:
    """Draw the charts into ``directory`` (created if needed); the paths written."""
    try:
        import matplotlib  # noqa: F401  (only to fail early with a clear message)
    except ImportError:
        raise ChartsUnavailable(
            "--charts needs matplotlib, which is not installed: pip install matplotlib"
        ) from None
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    if any(r.current_ms is not None or r.plain_ms is not None for r in article.latency):
        written.append(_latency(article, directory / "latency.png"))
    if article.calls:
        written.append(_calls(article, directory / "calls.png"))
    return written


def _save(figure: Figure, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=DPI)
    return path


def _latency(article: Article, path: Path) -> Path:
    """Horizontal bars per config x workload: baseline, Keras now, plain framework."""
    from matplotlib.figure import Figure

    rows = [r for r in article.latency if r.current_ms is not None or r.plain_ms is not None]
    labels = [f"{config_label(r.backend, r.mode)} · {workload_name(r.workload)}" for r in rows]
    series = [
        ("baseline (Keras)", [r.baseline_ms for r in rows], "#b0b0b0", ""),
        ("current (Keras)", [r.current_ms for r in rows], "#1f77b4", ""),
        ("plain framework", [r.plain_ms for r in rows], "#9467bd", "//"),
    ]
    series = [s for s in series if any(v is not None for v in s[1])]
    height = 0.8 / len(series)
    figure = Figure(figsize=(10, 1.5 + 0.32 * len(series) * len(rows)), layout="constrained")
    axes = figure.add_subplot()
    for index, (name, values, colour, hatch) in enumerate(series):
        positions = [
            i - 0.4 + height * (index + 0.5) for i, v in enumerate(values) if v is not None
        ]
        shown = [v for v in values if v is not None]
        bars = axes.barh(
            positions,
            shown,
            height=height,
            label=name,
            color=colour,
            hatch=hatch,
            edgecolor="white",
        )
        axes.bar_label(bars, labels=[f" {ms(v)}" for v in shown], fontsize=7)
    axes.set_yticks(range(len(rows)), labels=labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("median ms per call (log scale; shorter is faster)")
    axes.set_title("Every config, every workload")
    figure.legend(loc="outside lower center", ncols=len(series), fontsize=8)
    _headroom(axes)
    return _save(figure, path)


def _calls(article: Article, path: Path) -> Path:
    """Grouped bars per workload x mode: one bar per backend (hatched: plain framework)."""
    from matplotlib.figure import Figure

    groups = list(dict.fromkeys((r.workload, r.mode) for r in article.calls))
    by_at: dict[tuple[str, str, str], CallsRow] = {
        (r.workload, r.mode, r.backend): r for r in article.calls
    }
    backends = article.backends
    with_plain = any(r.plain_calls is not None for r in article.calls)
    per_backend = 2 if with_plain else 1
    width = 0.8 / (len(backends) * per_backend)
    figure = Figure(figsize=(max(6.0, 1.6 * len(groups) + 2), 5.5), layout="constrained")
    axes = figure.add_subplot()
    for b_index, backend in enumerate(backends):
        colour = COLOURS.get(backend, FALLBACK_COLOUR)
        kinds: Sequence[tuple[str, bool]] = [(backend, False)]
        if with_plain:
            kinds = [(backend, False), (f"{backend} plain", True)]
        for k_index, (name, plain) in enumerate(kinds):
            slot = b_index * per_backend + k_index
            xs, values = [], []
            for g_index, (workload, mode) in enumerate(groups):
                row = by_at.get((workload, mode, backend))
                value = None if row is None else (row.plain_calls if plain else row.calls)
                if value is None:
                    continue
                x = g_index - 0.4 + width * (slot + 0.5)
                if value <= 0:  # nothing to draw on a log axis; say so
                    axes.annotate(
                        "0",
                        (x, 0),
                        xycoords=("data", "axes fraction"),
                        ha="center",
                        va="bottom",
                        fontsize=7,
                        color=colour,
                    )
                    continue
                xs.append(x)
                values.append(value)
            if not xs:
                continue
            bars = axes.bar(
                xs,
                values,
                width=width,
                label=name,
                color=colour,
                alpha=0.45 if plain else 1.0,
                hatch="//" if plain else "",
                edgecolor="white",
            )
            axes.bar_label(bars, labels=[f"{v:,}" for v in values], fontsize=6, rotation=90)
    axes.set_xticks(
        range(len(groups)),
        labels=[f"{workload_name(w)}\n[{m}]" for w, m in groups],
        fontsize=8,
    )
    axes.set_yscale("log")
    axes.set_ylabel("Python calls per workload call (log scale)")
    axes.set_title("Python calls per workload call, per backend")
    figure.legend(loc="outside lower center", ncols=len(backends) * per_backend, fontsize=8)
    _headroom(axes, vertical=True)
    return _save(figure, path)


def _headroom(axes: Axes, *, vertical: bool = False) -> None:
    """Room past the longest bar for its label on a log axis."""
    low, high = axes.get_ylim() if vertical else axes.get_xlim()
    if vertical:
        axes.set_ylim(max(low, 0.5), high * 8)
    else:
        axes.set_xlim(low, high * 4)
