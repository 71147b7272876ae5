"""Device-synced median latency of one workload call (pytest-benchmark's timing).

Noise-bound, so gated only where it means something: on an accelerator, or on
a CPU when asked (``--kerasperf-gate-latency-on-cpu``); elsewhere reported.
``gated`` is the one place that decides it.  An entry keeps its stored latency
unless a new one moved beyond the tolerance on the same device.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from pytest_kerasperf.budget import Budget, MarkerError
from pytest_kerasperf.codec import Count
from pytest_kerasperf.metrics.base import (
    NOTHING,
    Change,
    Metric,
    MetricAccount,
    counted,
    noted,
    scoped,
)
from pytest_kerasperf.parts.latency import LatencyRecord

if TYPE_CHECKING:
    import pytest

    from pytest_kerasperf.measure.context import Measuring
    from pytest_kerasperf.metrics.base import Judged, Judgement
    from pytest_kerasperf.options import Options
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings
#: (warm-up, timed rounds) where latency is gated: the issue script's WARMUP and RUNS.
GATED_TIMING = (10, 50)
#: Where latency is only reported (a CPU): a median of a few calls is what a
#: report needs, and the suite's cost stays what the counts need.
REPORTED_TIMING = (1, 5)


def max_latency(ms: float, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_latency(ms, *, backend=None, mode=None): fail if the median latency of one
    workload call exceeds ms milliseconds; enforced on an accelerator, reported only
    on a CPU unless --kerasperf-gate-latency-on-cpu; backend= / mode= limit it to
    that backend / mode."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not ms > 0:
        raise MarkerError(f"ms must be a positive number of milliseconds, got {ms!r}")
    return scoped("latency", float(ms), backend, mode)


def gated(accelerator: bool, gate_on_cpu: bool) -> bool:
    """Is a latency measured on this device gated (else only reported)?"""
    return accelerator or gate_on_cpu


def timing(options: Options, is_gated: bool) -> tuple[int, int]:
    """(warm-up calls, timed rounds): the options, else by whether latency is gated."""
    warmup, rounds = GATED_TIMING if is_gated else REPORTED_TIMING
    return (
        warmup if options.warmup is None else options.warmup,
        rounds if options.rounds is None else options.rounds,
    )


def timing_blocker(
    config: pytest.Config, rounds: int | None, instructions: bool = False
) -> str | None:
    """Why the timing pass will not run in this session, or None.

    Perf tests are benchmarks to pytest-benchmark: ``--benchmark-only`` runs
    them.  ``--benchmark-skip`` and ``--benchmark-disable`` skip their timing
    pass only: counts and graph breaks are still measured and gated.
    pytest-benchmark does not time under pytest-xdist; neither do we.
    """
    if instructions:
        return "counted under callgrind: not timed"
    if rounds == 0:
        return "--kerasperf-rounds=0"
    if not config.pluginmanager.has_plugin("benchmark"):
        return "pytest-benchmark is not active (-p no:benchmark)"
    if config.getoption("benchmark_skip", False) and not config.getoption("benchmark_only", False):
        return "--benchmark-skip"
    if config.getoption("benchmark_disable", False) and not config.getoption(
        "benchmark_enable", False
    ):
        return "--benchmark-disable"
    if (
        hasattr(config, "workerinput")
        or os.environ.get("PYTEST_XDIST_WORKER")
        or config.getoption("dist", "no") != "no"
    ):
        return "pytest-benchmark does not time under pytest-xdist"
    return None


class LatencyChange(Change, frozen=True, tag="latency"):
    """The median's change in percent (None: not comparable), and what was compared."""

    pct: float | None
    before: LatencyRecord | None = None
    after: LatencyRecord | None = None


class LatencyAccount(MetricAccount, frozen=True, tag="latency"):
    measured: Count
    not_measured: dict[str, Count]  # reason -> perf tests
    gated: Count  # measured on an accelerator or with --kerasperf-gate-latency-on-cpu

    def closing_line(self) -> tuple[str, bool] | None:
        text = f"kerasperf latency: {self.measured} measured"
        if self.measured:
            ungated = self.measured - self.gated
            if ungated:
                text += (
                    f", {ungated} on a CPU: reported, not gated "
                    "(--kerasperf-gate-latency-on-cpu gates it)"
                )
            else:
                text += ", gated"
        if self.not_measured:
            text += f"; not measured ({counted(self.not_measured)})"
        return text, False


class Latency(
    Metric,
    name="latency",
    marker=max_latency,
    change=LatencyChange,
    account=LatencyAccount,
    column="latency (Δ %)",
    limit_format="{:g} ms",
    series="median ms per call",
):
    next_step = (
        "next: the kerasperf profile section shows where the time went; latency is noisy, "
        "so run it again before acting on a small change"
    )
    junit_property = "kerasperf_latency_median_ms"

    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        if (latency := measured.latency) is None:
            return self.not_checked(budget, "latency was not measured")
        line = f"{self.describe(budget)}: median {latency.median_ms:.3f} ms on {latency.device}"
        if latency.median_ms <= budget.limit:
            return NOTHING
        if gated(latency.accelerator, settings.gate_latency_on_cpu):
            over_pct = (latency.median_ms / budget.limit - 1) * 100
            return self.failed(f"{line} (+{over_pct:.1f}% over budget)")
        return noted(f"{line}: over budget, not gated on a CPU")

    def measure(self, run: Measuring) -> None:
        """The timing pass: pytest-benchmark's pedantic rounds, each followed by a sync."""
        from pytest_kerasperf.budget import latency_declined
        from pytest_kerasperf.measure import lockstep, reach
        from pytest_kerasperf.measure.latency import from_benchmark_stats

        options = run.options
        blocker = timing_blocker(run.config, options.rounds, options.instructions)
        if blocker is None and options.rounds is None and latency_declined(run.request.node):
            blocker = "not asked: kerasperf(latency=False) (--kerasperf-rounds N times it)"
        if blocker is None:
            env = run.environment()
            accelerator = env["accelerator"] == "yes"
            warmup, rounds = timing(options, gated(accelerator, options.gate_latency_on_cpu))
            benchmark = run.request.getfixturevalue("benchmark")
            turn = lockstep.child_turn()  # an A/B's process: one side's round at a time
            with reach.paused():  # timed as users run it, not under an index's profiler
                benchmark.pedantic(
                    run.call,
                    setup=turn.ready if turn else None,
                    teardown=turn.done if turn else None,
                    rounds=rounds,
                    warmup_rounds=warmup,
                    iterations=1,
                )
            if getattr(benchmark, "stats", None) is not None:
                run.fields["latency"] = from_benchmark_stats(
                    benchmark.stats.stats, device=str(env["device"]), accelerator=accelerator
                )
                return
            blocker = "pytest-benchmark took no timings"
        run.fields["latency"] = None
        run.latency_not_measured = blocker

    def compare(self, before: Record, after: Record) -> LatencyChange | None:
        then, now = before.latency, after.latency
        if then is None or now is None:
            return None
        if now.device != then.device or then.median_ms <= 0:
            return LatencyChange(None, then, now)
        return LatencyChange((now.median_ms / then.median_ms - 1) * 100, then, now)

    def judge(
        self, change: Change, measured: Record, baseline: Record, settings: Settings
    ) -> Judgement:
        assert isinstance(change, LatencyChange)
        then, now, pct = change.before, change.after, change.pct
        if then is None or now is None:
            return NOTHING
        if now.device != then.device:
            note = f"latency not compared: baseline on {then.device}, this run on {now.device}"
            return noted(note)
        if pct is None or pct <= settings.latency_tolerance * 100:
            return NOTHING
        if gated(now.accelerator, settings.gate_latency_on_cpu):
            text = (
                f"latency: median {now.median_ms:.3f} ms, baseline {then.median_ms:.3f} ms "
                f"({pct:+.1f}%, tolerance {settings.latency_tolerance:.0%})"
            )
            return self.failed(text)
        return noted(f"median latency {pct:+.1f}% vs baseline on {now.device} (not gated on a CPU)")

    def value(self, record: Record) -> float | None:
        """The median in ms."""
        return None if record.latency is None else record.latency.median_ms

    def text(self, value: int | float, change: Change | None) -> str:
        pct = change.pct if isinstance(change, LatencyChange) else None
        return f"{value:.3f} ms" + ("" if pct is None else f" ({pct:+.1f}%)")

    def moved(self, before: Record, after: Record, settings: Settings) -> bool:
        old, new = before.latency, after.latency
        if new is None:
            return False
        if old is None or old.device != new.device or old.median_ms <= 0:
            return True
        return abs(new.median_ms / old.median_ms - 1) > settings.latency_tolerance

    def merge(
        self, before: Record, after: Record, counts_moved: bool, settings: Settings
    ) -> Record:
        if self.moved(before, after, settings):
            return after
        return msgspec.structs.replace(after, latency=before.latency)

    def moved_words(self, before: Record, after: Record) -> list[str]:
        if after.latency is not None and after.latency != before.latency:
            was = f"{before.latency.median_ms:.3f}" if before.latency else "-"
            return [f"latency {was} -> {after.latency.median_ms:.3f} ms"]
        return []

    def account(self, outcomes: Sequence[Judged], settings: Settings) -> LatencyAccount:
        not_measured: Counter[str] = Counter()
        measured = gated_count = 0
        for outcome in outcomes:
            latency = outcome.record.latency
            if latency is None:
                not_measured[outcome.latency_not_measured or "not measured"] += 1
            else:
                measured += 1
                gated_count += gated(latency.accelerator, settings.gate_latency_on_cpu)
        return LatencyAccount(measured, dict(sorted(not_measured.items())), gated_count)


METRIC = Latency()
