"""PNG charts of a sweep (``kerasperf sweep ... --charts DIR``): one per followed metric that some
step measured (``steps.FOLLOWED``), named after it; docs/history.md (Outputs, charts) says what
each draws.  Drawn with matplotlib's Agg canvas on standalone Figures, as ``publish.charts``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerasperf_lab.history.steps import FOLLOWED, Step, SweepTable
from kerasperf_lab.publish.charts import (
    COLOURS,
    FALLBACK_COLOUR,
    MEDIUM,
    SMALL,
    ChartsUnavailable,
    note,
    require_matplotlib,
    save,
    title,
)
from pytest_kerasperf.ab.text import short_test
from pytest_kerasperf.formatting import signed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ChartsUnavailable", "write"]

Value = Callable[[Step], float | None]
#: a panel whose values span less than this fraction of its largest one is zoomed, and says so.
ZOOM_BELOW = 0.05
#: at most this many commit labels on the x axis; more commits label every k-th.
MAX_LABELS = 30
NOT_FROM_ZERO = "axis does not start at 0"


def write(table: SweepTable, directory: Path) -> list[Path]:
    """Draw the sweep's charts into ``directory`` (created if needed); the paths written."""
    require_matplotlib()
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for metric in FOLLOWED:
        if metric.series and any(s.value(metric.name) is not None for s in table.steps):
            value: Value = partial(Step.value, metric=metric.name)
            title_text = f"{metric.series[0].upper()}{metric.series[1:]} over the commits"
            if not metric.exact:
                title_text += " (dashed: E-divisive change points)"
            figure = series_figure(
                table, value, ylabel=metric.series, title_text=title_text, zoom=metric.exact,
                metric=metric.name,
            )  # fmt: skip
            written.append(save(figure, directory / f"{metric.label.replace(' ', '-')}.png"))
    return written


def series_figure(
    table: SweepTable,
    value: Value,
    *,
    ylabel: str,
    title_text: str,
    zoom: bool,
    metric: str | None = None,
) -> Figure:
    """One panel per test, one step line per backend; ``zoom``: counts, changes labelled, else
    the change points of ``metric`` marked."""
    from matplotlib.figure import Figure

    tests = list(dict.fromkeys(s.key for s in table.steps if s.key and value(s) is not None))
    labels = [c.label() for c in table.commits]
    width = min(24.0, max(7.5, 0.6 * len(labels) + 3.0))
    figure = Figure(figsize=(width, 1.9 + 2.6 * len(tests)), layout="constrained")
    panels = figure.subplots(len(tests), 1, squeeze=False, sharex=True)
    for row, test in enumerate(tests):
        axes = panels[row][0]
        _panel(axes, table, test, value, zoom=zoom, metric=metric)
        axes.set_title(short_test(test), fontsize=MEDIUM, loc="left")
        axes.set_ylabel(ylabel, fontsize=SMALL)
    every = max(1, math.ceil(len(labels) / MAX_LABELS))
    ticks = list(range(0, len(labels), every))
    panels[-1][0].set_xticks(
        ticks,
        labels=[labels[i] for i in ticks],
        rotation=30,
        ha="right",
        rotation_mode="anchor",
        fontsize=SMALL,
    )
    title(figure, f"{title_text} ({table.spec})")
    lines = [
        "Steps: a commit's value holds across its column until the next commit's. "
        "First-parent commits, oldest first."
    ]
    if not zoom:
        lines.append(
            "No per-commit change is stated: a sweep keeps no spread per commit; "
            "a dashed line is an E-divisive change of level over the whole series."
        )
    note(figure, lines, _legend(table, tests, value))
    return figure


def _panel(
    axes: Axes, table: SweepTable, test: str, value: Value, *, zoom: bool, metric: str | None
) -> None:
    count = len(table.commits)
    drawn: list[float] = []
    labelled: dict[int, int] = {}  # commit -> change-point labels already there
    for backend in table.backends:
        values = [math.nan] * count
        for s in table.steps:
            if s.backend == backend and s.key == test and (v := value(s)) is not None:
                values[s.index] = v
        if all(math.isnan(v) for v in values):
            continue
        colour = COLOURS.get(backend, FALLBACK_COLOUR)
        for s in table.steps:  # a failed commit: its column hatched in the backend's colour
            if s.backend == backend and s.status == "failed":
                axes.axvspan(
                    s.index - 0.5, s.index + 0.5, color=colour, alpha=0.12, hatch="xx", lw=0
                )
        edges = [i - 0.5 for i in range(count + 1)]
        axes.plot(edges, [*values, values[-1]], drawstyle="steps-post", color=colour, label=backend)
        axes.plot(range(count), values, linestyle="none", marker="o", markersize=4, color=colour)
        drawn += [v for v in values if not math.isnan(v)]
        if zoom:
            _label_changes(axes, values, colour)
        elif metric is not None:
            _mark_change_points(axes, table, (backend, test, metric), colour, labelled)
    _y_axis(axes, drawn, zoom=zoom)
    axes.set_xlim(-0.5, count - 0.5)
    axes.grid(axis="y", alpha=0.3)
    axes.tick_params(axis="y", labelsize=SMALL)


def _label_changes(axes: Axes, values: Sequence[float], colour: str) -> None:
    """``+35 (+0.7 %)`` at each commit whose value differs from the last one measured."""
    last = math.nan
    for index, v in enumerate(values):
        if math.isnan(v):
            continue
        if not math.isnan(last) and v != last:
            delta = v - last
            text = signed(round(delta)) if delta == round(delta) else f"{delta:+.3g}"
            if last:
                text += f" ({delta / last * 100:+.1f} %)".replace("-", "\u2212")
            axes.annotate(
                text,
                (index - 0.5, v),
                xytext=(3, 4 if delta > 0 else -4),
                textcoords="offset points",
                ha="left",
                va="bottom" if delta > 0 else "top",
                fontsize=SMALL,
                color=colour,
            )
        last = v


def _mark_change_points(
    axes: Axes,
    table: SweepTable,
    series: tuple[str, str, str],
    colour: str,
    labelled: dict[int, int],
) -> None:
    """A dashed line before each commit where the (backend, test, metric) series changes
    level, labelled with the two levels."""
    backend, test, metric = series
    for s in table.steps:
        point = s.change_point(metric)
        if s.backend != backend or s.key != test or point is None:
            continue
        axes.axvline(s.index - 0.5, color=colour, linestyle="--", alpha=0.8)
        above = labelled.get(s.index, 0)
        labelled[s.index] = above + 1
        axes.annotate(
            f"{point.relative:+.0%}: {point.before:.3g} → {point.after:.3g}",
            (s.index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -3 - 12 * above),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=SMALL,
            color=colour,
        )


def _y_axis(axes: Axes, values: Sequence[float], *, zoom: bool) -> None:
    """From 0; zoomed (and saying so) only where 0 would flatten the panel's change."""
    from matplotlib.ticker import MaxNLocator

    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=zoom))
    axes.yaxis.set_major_formatter("{x:,.0f}" if zoom or high >= 100 else "{x:,.3g}")
    if zoom and 0 < low < high and (high - low) / high < ZOOM_BELOW:
        pad = high - low
        axes.set_ylim(low - pad, high + pad)
        axes.text(
            0.005,
            0.97,
            NOT_FROM_ZERO,
            transform=axes.transAxes,
            ha="left",
            va="top",
            fontsize=SMALL,
            fontweight="bold",
            bbox={"boxstyle": "round", "facecolor": "#fff3cd", "edgecolor": "#c09000"},
        )
        return
    axes.set_ylim(0, high * 1.25 if high > 0 else 1.0)


def _legend(table: SweepTable, tests: Sequence[str], value: Value) -> list[Any]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    for backend in table.backends:
        colour = COLOURS.get(backend, FALLBACK_COLOUR)
        if any(
            s.backend == backend and s.key in tests and value(s) is not None for s in table.steps
        ):
            handles.append(Line2D([], [], color=colour, marker="o", markersize=4, label=backend))
        if any(s.backend == backend and s.status == "failed" for s in table.steps):
            handles.append(
                Patch(facecolor=colour, alpha=0.12, hatch="xx", label=f"{backend}: failed to run")
            )
    return handles
