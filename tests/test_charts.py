"""The charts do not mislead: the comparability rule, and the Figures the charts draw.

Real data throughout: the records committed under baselines/ (torch, jax,
tensorflow and numpy on their CPUs: real medians, IQRs, rounds, devices and
calls) are judged, built into the article's rows and drawn; the sweep charts
are drawn from a sweep table built by ``steps.build_table`` from the same
records.  The Figures are inspected, not their pixels: scales, axis limits,
text sizes and angles, where every text lies once drawn, and line styles.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Annotation, Text
from matplotlib.transforms import BboxBase

from kerasperf_lab.history import charts as sweep_charts
from kerasperf_lab.history.steps import SweepTable, build_table
from kerasperf_lab.publish import article, article_render, charts
from kerasperf_lab.publish.comparable import (
    MIN_ROUNDS,
    SPREAD_LIMIT,
    Timing,
    not_comparable,
    ratio,
)
from pytest_kerasperf import baseline, formatting
from pytest_kerasperf.ab.commits import Commit
from pytest_kerasperf.ab.outputs import MeasuredTest
from pytest_kerasperf.ab.runner import Measurement, Selection
from pytest_kerasperf.judging import judge
from pytest_kerasperf.outcome import BaselineSummary, Outcome
from pytest_kerasperf.record import LatencyRecord, PlainTwinRecord, Record
from pytest_kerasperf.settings import Settings
from tests.realrun import BASELINES
from tests.replacing import replace

BACKENDS = ("torch", "jax", "tensorflow", "numpy")
VARIANT = "py3.11-cpu"
LM = "test_standard.py::test_lm_forward[eager]"
CNN = "test_standard.py::test_cnn_forward[eager]"


#: the standard suite's entries (the census's tables, in the same directories, hold no latency)
SUITE = "test_standard.py::"


def entries(backend: str, variant: str = VARIANT) -> dict[str, Record]:
    loaded = baseline.load_all(BASELINES, backend)[variant]
    return {key: record for key, record in loaded.items() if key.startswith(SUITE)}


def noisiest() -> LatencyRecord:
    """The committed entry whose rounds spread widest (IQR over median), of every backend and
    variant: a real run too noisy to divide (openvino's eager generate, 49 %, when written)."""
    found = [
        record.latency
        for backend in (*BACKENDS, "openvino")
        for by_key in baseline.load_all(BASELINES, backend).values()
        for record in by_key.values()
        if record.latency is not None
    ]
    worst = max(found, key=lambda t: t.iqr_ms / t.median_ms)
    assert worst.iqr_ms / worst.median_ms > SPREAD_LIMIT, worst  # the case the rule exists for
    return worst


def latency(backend: str, key: str, variant: str = VARIANT) -> LatencyRecord:
    found = entries(backend, variant)[key].latency
    assert found is not None
    return found


# ---------------------------------------------------------------------------
# the rule


def test_two_quiet_runs_on_one_device_are_comparable_within_a_run_or_on_an_accelerator() -> None:
    eager, compiled = latency("torch", LM), latency("torch", LM.replace("eager", "compiled"))
    assert eager.device == compiled.device
    assert eager.iqr_ms / eager.median_ms <= SPREAD_LIMIT
    assert not_comparable(Timing.of(eager), Timing.of(compiled), same_run=True) is None
    shown = ratio(Timing.of(compiled), Timing.of(eager), same_run=True)
    assert shown.blocked is None
    assert shown.value == pytest.approx(compiled.median_ms / eager.median_ms)
    # Two separate runs on a CPU: the machine's load is in neither spread.
    assert not_comparable(Timing.of(eager), Timing.of(compiled)) == "cpu"
    # On an accelerator, separate runs compare (as the gate gates them).
    gpu = [replace(Timing.of(t), accelerator=True) for t in (eager, compiled)]
    assert not_comparable(*gpu) is None


def test_medians_of_two_devices_are_not_comparable() -> None:
    torch = latency("torch", LM)
    other = replace(Timing.of(latency("jax", LM)), device="cpu: Intel(R) Xeon(R) Processor")
    assert torch.device != other.device
    assert not_comparable(Timing.of(torch), other) == "device"
    assert ratio(Timing.of(torch), other).value is None
    # on an accelerator too: another GPU's median says nothing of this one's
    gpus = (replace(Timing.of(torch), accelerator=True), replace(other, accelerator=True))
    assert not_comparable(*gpus) == "device"
    assert not_comparable(Timing.of(torch), replace(Timing.of(torch), device=None)) == "device"


def test_a_run_spread_past_the_limit_is_not_comparable() -> None:
    """The noisiest committed entry against a quiet one, as if timed on the same device."""
    quiet = latency("torch", LM)
    noisy = replace(noisiest(), device=quiet.device)
    assert noisy.iqr_ms / noisy.median_ms > SPREAD_LIMIT >= quiet.iqr_ms / quiet.median_ms
    assert not_comparable(Timing.of(quiet), Timing.of(noisy), same_run=True) == "spread"
    assert not_comparable(Timing.of(noisy), Timing.of(quiet), same_run=True) == "spread"
    edge = Timing(quiet.median_ms, quiet.median_ms * SPREAD_LIMIT, 5, quiet.device)
    assert not_comparable(Timing.of(quiet), edge, same_run=True) is None  # at the limit
    over = replace(edge, iqr_ms=quiet.median_ms * SPREAD_LIMIT * 1.001)
    assert not_comparable(Timing.of(quiet), over, same_run=True) == "spread"


def test_one_round_cannot_vouch_for_its_median() -> None:
    quiet = latency("torch", CNN)
    single = replace(quiet, rounds=1, iqr_ms=0.0)  # what --kerasperf-rounds=1 records
    assert not_comparable(Timing.of(quiet), Timing.of(single), same_run=True) == "rounds"
    enough = Timing.of(replace(quiet, rounds=MIN_ROUNDS))
    assert not_comparable(Timing.of(quiet), enough, same_run=True) is None


def test_the_loaded_baseline_of_the_sample_is_refused() -> None:
    """The old sample's torch LM forward: baseline 353 ms (a machine loaded throughout, so its
    IQR was small: 1.5 ms) against 14.5 ms from another run: separate runs on a CPU."""
    current = entries("torch")[LM]
    loaded = replace(current, latency=replace(latency("torch", LM), median_ms=353.0, iqr_ms=1.529))
    summary = BaselineSummary.of(loaded)
    timing = article.baseline_timing(summary)
    assert timing is not None
    assert (timing.median_ms, timing.iqr_ms, timing.accelerator) == (353.0, 1.529, False)
    assert current.latency is not None
    shown = ratio(Timing.of(current.latency), timing)
    assert (shown.value, shown.blocked) == (None, "cpu")
    assert article_render.ratio_text(shown) == "not comparable (cpu)"
    # A results file written before it kept the spread: refused for that too, on a GPU.
    old = article.baseline_timing(replace(summary, latency_iqr_ms=None, latency_rounds=None))
    assert old is not None
    gpu = replace(Timing.of(current.latency), accelerator=True)
    assert ratio(gpu, replace(old, accelerator=True)).blocked == "no spread"


# ---------------------------------------------------------------------------
# the article's rows and charts, from the committed entries


def outcomes(plain: bool = False) -> list[Outcome]:
    """Every committed py3.11-cpu entry of the four backends, judged against itself.

    ``plain``: the eager entries get a stand-in plain twin, the compiled entry of the same
    workload (a real latency on the same device, and its calls); jax's from its nnx variant,
    and jax's eager CNN forward's with the spread of the noisiest entry committed
    (``noisiest``), too noisy to divide.
    """
    found = []
    for backend in BACKENDS:
        records = entries(backend)
        twins = entries(backend, "py3.11-cpu-nnx") if backend == "jax" else records
        for key, record in records.items():
            twin = twins.get(key.replace("[eager]", "[compiled]"))
            if plain and record.mode == "eager" and twin is not None:
                timing = twin.latency
                if backend == "jax" and key == CNN and timing is not None:
                    worst = noisiest()
                    spread = worst.iqr_ms / worst.median_ms
                    timing = replace(timing, iqr_ms=timing.median_ms * spread)
                stand_in = PlainTwinRecord(backend, "stand-in", twin.calls, timing)
                record = replace(record, plain_twin=stand_in)
            verdict = judge(record, record, (), Settings())
            found.append(
                Outcome(
                    nodeid=key,
                    key=key,
                    record=record,
                    verdict=verdict,
                    passed=verdict.passed,
                    baseline=BaselineSummary.of(record),
                )
            )
    return found


def views(plain: bool = False) -> article.Article:
    return article.build(outcomes(plain), article.load_families())


def drawn(figure: Figure) -> Figure:
    """Lay the figure out and draw it, as savefig does, so that extents are final."""
    FigureCanvasAgg(figure)
    figure.draw_without_rendering()
    return figure


def shown_texts(figure: Figure) -> Iterator[Text]:
    for text in figure.findobj(Text):
        if isinstance(text, Text) and text.get_visible() and text.get_text().strip():
            yield text


def inside(box: BboxBase | None, bounds: BboxBase) -> bool:
    assert box is not None
    return bool(
        box.x0 >= bounds.x0 - 1
        and box.x1 <= bounds.x1 + 1
        and box.y0 >= bounds.y0 - 1
        and box.y1 <= bounds.y1 + 1
    )


def assert_readable(figure: Figure) -> None:
    """No log axis; every text at least 8 pt and at most 45° (axis labels excepted: 90° is
    their convention); once drawn, the title, every note and label, and every panel with its
    tick labels inside the figure."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    bounds = figure.bbox
    axis_labels = {id(axis.label) for a in figure.axes for axis in (a.xaxis, a.yaxis)}
    tick_labels = {
        id(label)
        for a in figure.axes
        for axis in (a.xaxis, a.yaxis)
        for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks())
        for label in (tick.label1, tick.label2)
    }
    assert figure.get_suptitle()
    titles = 0
    for text in shown_texts(figure):
        assert float(text.get_fontsize()) >= charts.SMALL, text.get_text()
        if id(text) not in axis_labels:
            assert float(text.get_rotation()) <= 45, text.get_text()
        if id(text) not in tick_labels:  # (ticks outside the view keep stale places)
            assert inside(text.get_window_extent(renderer), bounds), text.get_text()
        titles += text.get_text() == figure.get_suptitle()
    assert titles == 1
    for axes in figure.axes:
        assert axes.get_xscale() == axes.get_yscale() == "linear"
        assert inside(axes.get_tightbbox(renderer), bounds)  # tick labels drawn: in the view


def first_x(line: Line2D) -> float:
    return float(np.asarray(line.get_xdata(), dtype=float)[0])


def value_axes(figure: Figure) -> list[Axes]:
    return [a for a in figure.axes if a.axison]


def test_the_latency_chart_is_a_dot_plot_from_zero_without_refused_baselines() -> None:
    article_views = views(plain=True)
    figure = drawn(charts.latency_figure(article_views))
    assert_readable(figure)
    panels = value_axes(figure)
    workloads = list(
        dict.fromkeys(article.workload_name(r.workload) for r in article_views.latency)
    )
    assert [a.get_title(loc="left") for a in panels] == workloads
    assert {"test_cnn_forward", "test_lm_generate_32", "test_lm_train_step"} <= set(workloads)
    for axes in panels:
        assert axes.get_xlim()[0] == 0
        assert not axes.patches  # no bars: dots and their IQR
    # Baselines are other runs on a CPU: none is drawn, and the figure says why.
    rows = [r for r in article_views.latency if r.baseline is not None]
    assert rows
    assert all(r.change.blocked == "cpu" for r in rows)
    assert not [line for line in figure.findobj(Line2D) if line.get_gid() == "baseline"]
    assert any(f"{len(rows)} of {len(rows)} rows" in t.get_text() for t in shown_texts(figure))
    # Each current dot sits at its median, its bar spans the IQR.
    dots = [
        line
        for line in figure.findobj(Line2D)
        if line.get_gid() == "current" and line.get_marker() == "o"
    ]
    medians = sorted(r.current_ms for r in article_views.latency if r.current_ms is not None)
    assert sorted(first_x(line) for line in dots) == medians
    # The stand-in plain twins: a ratio where both runs' spread allows it, the reason where not.
    lines = {line for t in shown_texts(figure) for line in t.get_text().splitlines()}
    checked = Counter[bool]()
    for row in article_views.latency:
        if row.plain is None or row.current is None:
            continue
        spreads = [(t.iqr_ms or 0.0) / t.median_ms for t in (row.plain, row.current)]
        expected = (
            "Keras/plain: not comparable (spread)"
            if max(spreads) > SPREAD_LIMIT
            else f"Keras/plain {formatting.times(row.current.median_ms / row.plain.median_ms)}"
        )
        assert expected in lines
        checked[max(spreads) > SPREAD_LIMIT] += 1
    # every eager workload with a compiled one on torch, jax and tensorflow: 3 forwards and 2
    # train steps each; jax's CNN forward refused (its stand-in twin is too noisy)
    assert checked == {False: 14, True: 1}


def test_comparable_baselines_are_drawn_and_noisy_ones_left_out() -> None:
    """jax's entries against the jax nnx variant's (the same machine, 5 rounds each), taken as
    if on an accelerator (separate CPU runs are never divided), the nnx compiled LM forward with
    the spread of the noisiest entry committed: the pairs the nnx run's spread allows get a
    baseline dot with its IQR, the one it does not, none."""
    jax = views()
    nnx = dict(entries("jax", "py3.11-cpu-nnx"))
    noisy_key = LM.replace("eager", "compiled")
    worst, timed = noisiest(), nnx[noisy_key].latency
    assert timed is not None
    spread = worst.iqr_ms / worst.median_ms
    nnx[noisy_key] = replace(
        nnx[noisy_key], latency=replace(timed, iqr_ms=timed.median_ms * spread)
    )
    rows = []
    for row in jax.latency:
        key = f"test_standard.py::{article.workload_name(row.workload)}[{row.mode}]"
        other = nnx[key].latency if row.backend == "jax" else None
        if other is None or row.current is None:
            rows.append(row)
            continue
        rows.append(
            replace(
                row,
                baseline=replace(Timing.of(other), accelerator=True),
                current=replace(row.current, accelerator=True),
            )
        )
    figure = drawn(charts.latency_figure(replace(jax, latency=tuple(rows))))
    assert_readable(figure)
    baselines = sorted(
        first_x(line)
        for line in figure.findobj(Line2D)
        if line.get_gid() == "baseline" and line.get_marker() == "o"
    )
    allowed = sorted(
        r.median_ms
        for r in (nnx[k].latency for k in nnx)
        if r is not None and r.iqr_ms / r.median_ms <= SPREAD_LIMIT
    )
    refused = [k for k in nnx if (t := nnx[k].latency) and t.iqr_ms / t.median_ms > SPREAD_LIMIT]
    assert noisy_key in refused
    assert len(allowed) == len(nnx) - len(refused)
    assert baselines == allowed


def test_the_calls_chart_has_bars_from_zero_and_no_text_under_an_axis() -> None:
    article_views = views(plain=True)
    figure = drawn(charts.calls_figure(article_views))
    assert_readable(figure)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    zero_rows = [r for r in article_views.calls if r.calls == 0]
    assert zero_rows  # jax.jit's compiled forwards run no Python per call
    labels = []
    for axes in value_axes(figure):
        assert axes.get_xlim()[0] == 0
        panel_box = axes.get_window_extent(renderer)
        for text in axes.texts:
            assert isinstance(text, Annotation)
            box = text.get_window_extent(renderer)
            assert box.y0 >= panel_box.y0, text.get_text()  # not under the axis
            assert box.y1 <= panel_box.y1, text.get_text()
            assert box.x0 >= panel_box.x0, text.get_text()
            labels.append(text.get_text())
    assert labels.count("0") == len(zero_rows)  # said next to the bar, inside the panel
    for row in article_views.calls:
        assert any(label.startswith(f"{row.calls:,}") for label in labels)


def test_write_keeps_the_file_names(tmp_path: Path) -> None:
    written = charts.write(views(plain=True), tmp_path)
    assert [p.name for p in written] == ["latency.png", "calls.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)


# ---------------------------------------------------------------------------
# the sweep's charts


def sweep(calls_from: int, moved: int) -> SweepTable:
    """Eight commits of the committed numpy CNN and LM forward entries (and torch's compiled
    CNN with its graph breaks), numpy's CNN calls moved by ``moved`` from ``calls_from`` on,
    torch failing at commit 3."""
    commits = [
        Commit(sha=f"{i + 1:x}" * 40, date="2026-07-27T00:00:00+00:00",
               subject=f"PR {23300 + i} (#{23300 + i})", pr=23300 + i, title=f"PR {i}")
        for i in range(8)
    ]  # fmt: skip
    numpy, torch = entries("numpy"), entries("torch")
    compiled = "test_standard.py::test_cnn_forward[compiled]"
    measurements = {}
    for index, commit in enumerate(commits):
        cnn = numpy[CNN]
        if index >= calls_from:
            cnn = replace(cnn, calls=cnn.calls + moved)
        runs = (MeasuredTest(CNN, CNN, cnn), MeasuredTest(LM, LM, numpy[LM]))
        measurements[(commit.sha, "numpy")] = Measurement(
            commit.sha, "numpy", Selection(), {}, ok=True, runs=runs
        )
        measurements[(commit.sha, "torch")] = Measurement(
            commit.sha, "torch", Selection(), {}, ok=index != 3, error="ImportError: x",
            runs=(MeasuredTest(compiled, compiled, torch[compiled]),),
        )  # fmt: skip
    return build_table("a..b", commits, ("numpy", "torch"), Selection(), measurements, {})


def panel(figure: Figure, title: str) -> Axes:
    [found] = [a for a in figure.axes if a.get_title(loc="left") == title]
    return found


def assert_steps(figure: Figure, table: SweepTable) -> None:
    """Each backend's series in each panel is one line drawn as steps."""
    for axes in value_axes(figure):
        series = [line for line in axes.get_lines() if line.get_label() in table.backends]
        assert series
        assert all(line.get_drawstyle() == "steps-post" for line in series)


def test_a_small_change_of_calls_is_labelled_on_a_marked_zoomed_axis() -> None:
    """The issue's +35 calls on numpy's 5,216-call CNN forward (0.7 %)."""
    table = sweep(calls_from=5, moved=35)
    figure = drawn(
        sweep_charts.series_figure(
            table,
            lambda s: None if (v := s.value("calls")) is None else float(v),
            ylabel="calls",
            title_text="calls",
            zoom=True,
        )
    )
    assert_readable(figure)
    cnn = panel(figure, "test_cnn_forward[eager]")
    texts = [t.get_text() for t in cnn.texts]
    assert sweep_charts.NOT_FROM_ZERO in texts
    assert "+35 (+0.7 %)" in texts
    low, high = cnn.get_ylim()
    assert 0 < low < 5216
    assert high > 5216 + 35
    for axes in value_axes(figure):  # the others, flat, start at 0
        if axes is not cnn:
            assert axes.get_ylim()[0] == 0
            assert sweep_charts.NOT_FROM_ZERO not in [t.get_text() for t in axes.texts]
    assert_steps(figure, table)


def test_a_large_change_stays_on_an_axis_from_zero() -> None:
    moved = -2000  # 38 % of 5,216: visible from 0
    table = sweep(calls_from=4, moved=moved)
    figure = drawn(
        sweep_charts.series_figure(
            table,
            lambda s: None if (v := s.value("calls")) is None else float(v),
            ylabel="calls",
            title_text="calls",
            zoom=True,
        )
    )
    cnn = panel(figure, "test_cnn_forward[eager]")
    assert cnn.get_ylim()[0] == 0
    assert sweep_charts.NOT_FROM_ZERO not in [t.get_text() for t in cnn.texts]
    assert "\u22122,000 (\u221238.3 %)" in [t.get_text() for t in cnn.texts]


def test_the_sweep_files_are_step_charts_with_titles_inside(tmp_path: Path) -> None:
    table = replace(sweep(calls_from=5, moved=35), spec="0" * 40 + ".." + "f" * 40)
    written = sweep_charts.write(table, tmp_path)
    assert [p.name for p in written] == ["calls.png", "graph-breaks.png", "latency.png"]
    for value, zoom in (
        (lambda s: None if (v := s.value("graph_breaks")) is None else float(v), True),
        (lambda s: s.value("latency"), False),
    ):
        figure = drawn(
            sweep_charts.series_figure(
                table, value, ylabel="y", title_text="a long title " * 6, zoom=zoom
            )
        )
        assert_readable(figure)  # the 82-character spec wrapped, the title inside the figure
        for axes in value_axes(figure):
            assert axes.get_ylim()[0] == 0
        assert_steps(figure, table)
