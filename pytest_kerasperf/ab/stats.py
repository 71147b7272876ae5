"""The A/B verdict: is HEAD slower than BASE?  Pure and typed, on two two-level samples.

Each side is its processes' per-round times.  The i-th base and head processes ran as a pair in
lockstep; each pair gives the median over its cycles of log(head round / base round), and the
pair, not the round, is the unit (rounds of one process share its speed).  The effect is
exp(mean over the pairs), its interval the t interval of those numbers (Welch's of the processes'
log medians where process counts differ).  "slower" or "faster" only when p < alpha and the
effect is at least ``min_effect``; a ``Plan`` spreads alpha over the looks of a sequential A/B
(Bonferroni) and stops once the verdict is sure.  Why this rule, measured: docs/history.md.
``counts_diff`` compares both sides' counts exactly.

numpy and scipy are imported inside the functions that use them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.result import ABResult, Decision, bound
from pytest_kerasperf.culprits import EntryPoint, signed
from pytest_kerasperf.record import Record

Side = Literal["base", "head"]
#: the chance of a wrong "slower" or "faster" of one A/B, over all its looks
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_EFFECT = 0.02
DEFAULT_ROUNDS = 60
#: the most pairs of processes of one A/B (a sequential one stops earlier when it can)
DEFAULT_PROCESSES = 16
#: pairs before the first look
DEFAULT_MIN_PAIRS = 4
#: seconds of measuring an A/B gives itself: no wave of pairs starts that would end later
DEFAULT_BUDGET_S = 170.0

Samples = Sequence[Sequence[float]]  # per process, its rounds

PAIRED_METHOD = "t interval over the pairs of the median paired-round log ratio"
WELCH_METHOD = "Welch interval of the processes' log medians (unpaired)"


# --------------------------------------------------------------------------- latency


@dataclass(frozen=True)
class ABVerdict:
    """The comparison of two two-level latency samples (any unit, the same for both)."""

    base_n: int  # rounds, all processes
    head_n: int
    base_processes: int
    head_processes: int
    base_median: float  # pooled
    head_median: float
    ratio: float  # exp(mean over the pairs of the median paired-round log ratio)
    ci_low: float  # of the ratio: t interval over the pairs
    ci_high: float
    confidence: float
    p_value: float  # of the t test over the pairs (Welch's where unpaired), two-sided
    alpha: float  # what p must be below at this look (the plan's alpha / looks)
    min_effect: float  # relative, 0.02: 2 %
    decision: Decision
    method: str = PAIRED_METHOD
    looks: int = 1  # the looks the plan allowed (alpha and the confidence are per look)

    @property
    def effect(self) -> float:
        """The relative change, head against base: +0.10 is 10 % slower."""
        return self.ratio - 1.0

    @property
    def sure(self) -> bool:
        """Decided, or "no change" with the interval within +-min_effect: a change of the
        minimum is ruled out either way."""
        if self.decision != "no change":
            return True
        return 1.0 - self.min_effect < self.ci_low and self.ci_high < 1.0 + self.min_effect

    def describe(self) -> str:
        pct = self.confidence * 100
        per = self.base_n // max(self.base_processes, 1)
        looks = f", {self.looks} looks" if self.looks > 1 else ""
        return (
            f"{self.decision}: head/base {self.ratio:.3f} ({self.effect:+.1%}), "
            f"{pct:.4g} % CI [{self.ci_low:.3f}, {self.ci_high:.3f}] over the "
            f"{'pairs' if self.method == PAIRED_METHOD else 'processes'}, "
            f"p = {self.p_value:.2g}; decides when p < {self.alpha:.2g} and "
            f"|effect| ≥ {self.min_effect:.1%} (n = {self.base_processes}×{per} base, "
            f"{self.head_processes}×{self.head_n // max(self.head_processes, 1)} head{looks})"
        )

    def result(self) -> ABResult:
        """The verdict as files hold it, with its effect and whether it is sure."""
        derived: dict[str, Any] = {
            "ci": (bound(self.ci_low), bound(self.ci_high)),
            "ci_method": self.method,
        }
        fields = [name for name in ABResult.__struct_fields__ if name not in derived]
        return ABResult(**{name: getattr(self, name) for name in fields}, **derived)


def pair_log_ratio(base: Sequence[float], head: Sequence[float]) -> float:
    """One pair of processes' number: the median over the cycles of log(head / base), round j
    of each side paired (the same cycle of the lockstep)."""
    n = min(len(base), len(head))
    if n < 1:
        raise ValueError("a pair needs a timed round on each side")
    return statistics.median(math.log(head[j] / base[j]) for j in range(n))


@dataclass(frozen=True)
class _LogRatio:
    """The mean log ratio head / base, its standard error and degrees of freedom."""

    mean: float
    se: float  # nan: one pair or one process a side, the spread is unknown
    df: float
    method: str

    def interval(self, confidence: float) -> tuple[float, float]:
        from scipy import stats  # type: ignore[import-untyped]

        if math.isnan(self.se):
            return 0.0, float("inf")
        t = float(stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, self.df))
        return math.exp(self.mean - t * self.se), math.exp(self.mean + t * self.se)

    def p_value(self) -> float:
        """Two-sided, of the t test of "no change" (1.0 where the spread is unknown)."""
        from scipy import stats

        if math.isnan(self.se):
            return 1.0
        if self.se == 0:
            return 1.0 if self.mean == 0 else 0.0
        return float(2.0 * stats.t.sf(abs(self.mean) / self.se, self.df))


def _log_ratio(base: Samples, head: Samples) -> _LogRatio:
    import numpy as np

    if len(base) == len(head):
        d = np.array([pair_log_ratio(b, h) for b, h in zip(base, head, strict=True)])
        mean = float(d.mean())
        if d.size < 2:
            return _LogRatio(mean, float("nan"), 0.0, PAIRED_METHOD)
        return _LogRatio(
            mean, float(d.std(ddof=1)) / math.sqrt(d.size), float(d.size - 1), PAIRED_METHOD
        )
    b = np.log([float(np.median(run)) for run in base])
    h = np.log([float(np.median(run)) for run in head])
    mean = float(h.mean() - b.mean())
    if b.size < 2 or h.size < 2:
        return _LogRatio(mean, float("nan"), 0.0, WELCH_METHOD)
    vb, vh = float(b.var(ddof=1)) / b.size, float(h.var(ddof=1)) / h.size
    se = math.sqrt(vb + vh)
    df = (vb + vh) ** 2 / (vb**2 / (b.size - 1) + vh**2 / (h.size - 1)) if se else 1.0
    return _LogRatio(mean, se, df, WELCH_METHOD)


def decide(
    base: Samples,
    head: Samples,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    looks: int = 1,
) -> ABVerdict:
    """Is ``head`` slower or faster than ``base``?  Each is a list of processes' rounds.

    "slower"/"faster" only when the t test over the pairs gives p < alpha /
    looks (its interval at confidence 1 - alpha / looks excludes 1) and
    |effect| >= min_effect.  ``looks``: how many times a sequential A/B may
    apply this rule (Bonferroni).
    """
    if not base or not head or any(len(run) < 2 for run in (*base, *head)):
        raise ValueError("each side needs at least one process with at least 2 timings each")
    pooled_base = [float(t) for run in base for t in run]
    pooled_head = [float(t) for run in head for t in run]
    if min(min(pooled_base), min(pooled_head)) <= 0:
        raise ValueError("latencies must be positive")
    if not 0 < alpha < 1 or min_effect < 0 or looks < 1:
        raise ValueError("alpha in (0, 1), min_effect >= 0, looks >= 1")
    level = alpha / looks
    summary = _log_ratio(base, head)
    ratio = math.exp(summary.mean)
    low, high = summary.interval(1.0 - level)
    p_value = summary.p_value()
    decision: Decision = "no change"
    if p_value < level and abs(ratio - 1.0) >= min_effect and (low > 1.0 or high < 1.0):
        decision = "slower" if ratio > 1.0 else "faster"
    return ABVerdict(
        base_n=len(pooled_base),
        head_n=len(pooled_head),
        base_processes=len(base),
        head_processes=len(head),
        base_median=statistics.median(pooled_base),
        head_median=statistics.median(pooled_head),
        ratio=ratio,
        ci_low=low,
        ci_high=high,
        confidence=1.0 - level,
        p_value=p_value,
        alpha=level,
        min_effect=min_effect,
        decision=decision,
        method=summary.method,
        looks=looks,
    )


@dataclass(frozen=True)
class Plan:
    """How many pairs an A/B measures, and when it may stop.

    Pairs run in waves of ``wave`` (one pair per CPU); with ``sequential``,
    the rule is applied after every wave that brings the pairs to at least
    ``min_pairs``, each time at alpha / looks, and the A/B stops once the
    verdict is sure (decided, or the interval within +-min_effect); else it
    measures ``max_pairs``, and decides once.
    """

    max_pairs: int = DEFAULT_PROCESSES
    min_pairs: int = DEFAULT_MIN_PAIRS
    wave: int = 1
    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT
    sequential: bool = True

    def __post_init__(self) -> None:
        if self.max_pairs < 1 or self.wave < 1 or self.min_pairs < 2:
            raise ValueError("at least 1 pair, waves of at least 1, at least 2 pairs a look")
        if not 0 < self.alpha < 1 or self.min_effect < 0:
            raise ValueError("alpha in (0, 1), min_effect >= 0")

    def look_points(self) -> tuple[int, ...]:
        """The pair counts after which the rule is applied."""
        if not self.sequential:
            return (self.max_pairs,)
        ends = [
            min(n, self.max_pairs) for n in range(self.wave, self.max_pairs + self.wave, self.wave)
        ]
        points = sorted({n for n in ends if n >= min(self.min_pairs, self.max_pairs)})
        return tuple(points) or (self.max_pairs,)

    @property
    def looks(self) -> int:
        return len(self.look_points())

    def decide(self, base: Samples, head: Samples) -> ABVerdict:
        return decide(base, head, alpha=self.alpha, min_effect=self.min_effect, looks=self.looks)

    def should_stop(self, verdicts: Sequence[ABVerdict], pairs: int) -> bool:
        """After ``pairs`` pairs: stop when this is a look and every verdict is sure."""
        return pairs in self.look_points() and all(v.sure for v in verdicts)


# --------------------------------------------------------------------------- exact counts


class CountsDiff(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The exact change of calls between the two sides (``calls_delta``: head - base)."""

    base_calls: int
    head_calls: int
    calls_delta: int
    entry_points: tuple[EntryPoint, ...]

    def lines(self, top: int = 5) -> list[str]:
        if not self.calls_delta and not self.entry_points:
            return [f"calls per call: {self.base_calls:,} on both (exact)"]
        lines = [
            f"calls per call: {self.base_calls:,} → {self.head_calls:,} "
            f"({signed(self.calls_delta)}, exact)"
        ]
        lines += [f"  {point.describe()}" for point in self.entry_points[:top]]
        return lines


def counts_diff(base: Record, head: Record) -> CountsDiff:
    from pytest_kerasperf.changes import diff
    from pytest_kerasperf.metrics.calls import CallsChange

    calls = diff(base, head).get(CallsChange)
    return CountsDiff(
        base_calls=base.calls,
        head_calls=head.calls,
        calls_delta=head.calls - base.calls,
        entry_points=calls.entry_points if calls else (),
    )


# --------------------------------------------------------------------------- one test's runs


@dataclass(frozen=True)
class ProcessRun:
    """One pytest process on one side, for one test: every round's time (ms), its record, and
    the index of its pair (None: not run as a pair)."""

    side: Side
    times_ms: tuple[float, ...]
    record: Record
    pair: int | None = None


def paired_samples(
    runs: Sequence[ProcessRun],
) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]]]:
    """(base, head) processes' rounds, the i-th of each from the same pair where the runs say
    their pair (a pair that measured the test on one side only is left out); else every
    process of each side in order."""
    base = {run.pair: run for run in runs if run.side == "base"}
    head = {run.pair: run for run in runs if run.side == "head"}
    if None in base or None in head:
        return (
            [run.times_ms for run in runs if run.side == "base"],
            [run.times_ms for run in runs if run.side == "head"],
        )
    both = sorted(set(base) & set(head), key=lambda pair: pair or 0)
    return [base[p].times_ms for p in both], [head[p].times_ms for p in both]


def decide_runs(
    runs: Sequence[ProcessRun], plan: Plan | None = None
) -> tuple[ABVerdict, CountsDiff]:
    """The latency verdict (by ``plan``'s rule) and the exact counts diff of one test's
    interleaved runs."""
    plan = plan or Plan(sequential=False)
    base_runs = [run for run in runs if run.side == "base"]
    head_runs = [run for run in runs if run.side == "head"]
    if not base_runs or not head_runs:
        raise HistoryError("the test ran on one side only")
    if any(len(run.times_ms) < 2 for run in runs):
        raise HistoryError("fewer than 2 timed rounds in a process (is --rounds > 1?)")
    base, head = paired_samples(runs)
    if not base:
        raise HistoryError("no pair measured the test on both sides")
    return plan.decide(base, head), counts_diff(base_runs[0].record, head_runs[0].record)
