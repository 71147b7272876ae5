"""PNG charts of a sweep (``kerasperf sweep ... --charts DIR``).

- ``calls.png``: Python calls per workload call over the commits, one panel
  per test, one line per backend;
- ``graph-breaks.png``: torch.compile graph breaks over the commits as a step
  chart (only when some test measured graph breaks);
- ``latency.png``: the median latency over the commits (only when measured),
  a dashed line before each commit where E-divisive finds a new level.

A commit that failed to run leaves a gap, marked x on the axis.  Drawn with
matplotlib's Agg canvas on standalone Figures, as ``report.charts`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_kerasperf.history.steps import Step, SweepTable
from pytest_kerasperf.history.text import short_test
from pytest_kerasperf.report.charts import COLOURS, DPI, FALLBACK_COLOUR, ChartsUnavailable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ChartsUnavailable", "write"]

Value = Callable[[Step], float | None]


def write(table: SweepTable, directory: Path) -> list[Path]:
    """Draw the sweep's charts into ``directory`` (created if needed); the paths written."""
    try:
        import matplotlib  # noqa: F401  (only to fail early with a clear message)
    except ImportError:
        raise ChartsUnavailable(
            "--charts needs matplotlib, which is not installed: pip install matplotlib"
        ) from None
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    if any(s.calls is not None for s in table.steps):
        written.append(
            _series(
                table,
                directory / "calls.png",
                lambda s: None if s.calls is None else float(s.calls),
                ylabel="Python calls per workload call",
                title="Python calls per workload call over the commits",
                step=False,
            )
        )
    if any(s.graph_breaks is not None for s in table.steps):
        written.append(
            _series(
                table,
                directory / "graph-breaks.png",
                lambda s: None if s.graph_breaks is None else float(s.graph_breaks),
                ylabel="graph breaks per forward",
                title="torch.compile graph breaks over the commits",
                step=True,
            )
        )
    if any(s.latency_ms is not None for s in table.steps):
        written.append(
            _series(
                table,
                directory / "latency.png",
                lambda s: s.latency_ms,
                ylabel="median ms per call",
                title="Median latency over the commits (dashed: E-divisive change points)",
                step=False,
                mark=lambda s: s.latency_change is not None,
            )
        )
    return written


def _series(
    table: SweepTable,
    path: Path,
    value: Value,
    *,
    ylabel: str,
    title: str,
    step: bool,
    mark: Callable[[Step], bool] | None = None,
) -> Path:
    from matplotlib.figure import Figure

    tests = list(dict.fromkeys(s.key for s in table.steps if s.key and value(s) is not None))
    positions = range(len(table.commits))
    labels = [c.label() for c in table.commits]
    figure = Figure(
        figsize=(max(6.0, 0.55 * len(labels) + 2.5), 2.2 + 2.3 * len(tests)), layout="constrained"
    )
    panels = figure.subplots(len(tests), 1, squeeze=False)
    for row, test in enumerate(tests):
        axes = panels[row][0]
        for backend in table.backends:
            values: list[float] = [math.nan] * len(labels)
            for s in table.steps:
                if s.backend == backend and s.key == test:
                    v = value(s)
                    values[s.index] = math.nan if v is None else v
            if all(math.isnan(v) for v in values):
                continue
            colour = COLOURS.get(backend, FALLBACK_COLOUR)
            if step:
                axes.step(positions, values, where="post", color=colour, label=backend)
            else:
                axes.plot(positions, values, marker="o", markersize=4, color=colour, label=backend)
            if mark is not None:
                for s in table.steps:
                    if s.backend == backend and s.key == test and mark(s):
                        axes.axvline(s.index - 0.5, color=colour, linestyle="--", alpha=0.7)
            failed = [s.index for s in table.steps if s.backend == backend and s.status == "failed"]
            if not failed:  # (an empty line on the axis transform breaks the layout)
                continue
            axes.plot(
                failed,
                [0.0] * len(failed),
                linestyle="none",
                marker="x",
                color=colour,
                transform=axes.get_xaxis_transform(),
                clip_on=False,
            )
        axes.set_title(short_test(test), fontsize=9)
        axes.set_xlim(-0.5, len(labels) - 0.5)
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize=7, loc="best")
        if row < len(tests) - 1:
            axes.set_xticks(list(positions))
            axes.tick_params(labelbottom=False)
        else:
            axes.set_xticks(list(positions), labels=labels, rotation=60, fontsize=7, ha="right")
            axes.set_xlabel("first-parent commits, oldest first (x: failed to run)", fontsize=8)
    figure.supylabel(ylabel, fontsize=9)
    figure.suptitle(f"{title} ({table.spec})", fontsize=10)
    return _save(figure, path)


def _save(figure: Figure, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=DPI)
    return path
