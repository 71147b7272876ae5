"""How an A/B measures and when it stops: its settings, its plan, its sequential stop.

``kerasperf ab``, ``kerasperf bisect --metric latency`` and ``--kerasperf-compare-ref``
share these: the settings (``ABSettings``) make the plan (``history.stats.Plan``) of
pairs of processes measured in lockstep (``interleave``), and ``stopper`` ends the
measuring once every verdict is sure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.interleave import Interleaved
from pytest_kerasperf.ab.processes import allowed_cpus
from pytest_kerasperf.ab.runner import DEFAULT_TIMEOUT_S
from pytest_kerasperf.ab.stats import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET_S,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_PAIRS,
    DEFAULT_PROCESSES,
    DEFAULT_ROUNDS,
    Plan,
    decide_runs,
)


@dataclass(frozen=True)
class ABSettings:
    """How an A/B measures and decides (``kerasperf ab``, ``kerasperf bisect --metric
    latency``): rounds per process, the most pairs, the plan's statistics, the budget."""

    rounds: int = DEFAULT_ROUNDS
    processes: int = DEFAULT_PROCESSES
    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT
    parallel: int | None = None  # pairs at once (None: one per allowed CPU)
    sequential: bool = True  # look after every wave and stop once sure
    min_pairs: int = DEFAULT_MIN_PAIRS
    budget_s: float | None = DEFAULT_BUDGET_S
    timeout_s: float = DEFAULT_TIMEOUT_S

    def plan(self) -> Plan:
        """The plan these settings make; HistoryError where they cannot measure."""
        if self.rounds < 2 or self.processes < 1:
            raise HistoryError("give --rounds-per-process >= 2 and --processes >= 1")
        return plan_for(
            self.processes,
            alpha=self.alpha,
            min_effect=self.min_effect,
            parallel=self.parallel,
            sequential=self.sequential,
            min_pairs=self.min_pairs,
        )


def plan_for(
    processes: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    parallel: int | None = None,
    sequential: bool = True,
    min_pairs: int = DEFAULT_MIN_PAIRS,
) -> Plan:
    """The plan of an A/B of at most ``processes`` pairs, ``parallel`` at once (None: one per
    allowed CPU), looking after every wave when ``sequential``."""
    cpus = len(allowed_cpus())
    wave = max(1, min(cpus if parallel is None else parallel, cpus, processes))
    try:
        return Plan(
            max_pairs=processes,
            min_pairs=min_pairs,
            wave=wave,
            alpha=alpha,
            min_effect=min_effect,
            sequential=sequential,
        )
    except ValueError as error:
        raise HistoryError(str(error)) from None


def stopper(plan: Plan, keys: Sequence[str] | None = None) -> Callable[[Interleaved], bool]:
    """The sequential stop of ``measure_interleaved``: after a wave, stop when this is one of
    the plan's looks and the verdict of every test of ``keys`` (None: every test) measured on
    both sides is sure.  A test measured on one side only cannot be judged, and does not
    hold the others up."""

    def stop(measured: Interleaved) -> bool:
        if not plan.sequential or measured.pairs not in plan.look_points():
            return False
        both = measured.keys("base") & measured.keys("head")
        wanted = sorted(both if keys is None else both & set(keys))  # a test REF lacks: none
        if not wanted:
            return False
        verdicts = []
        for key in wanted:
            try:
                verdicts.append(decide_runs(measured.runs(key), plan)[0])
            except (HistoryError, ValueError):
                return False
        return plan.should_stop(verdicts, measured.pairs)

    return stop
