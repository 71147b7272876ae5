"""The A/B verdict: is HEAD slower than BASE?  Pure and typed, on two two-level samples.

The latencies are per-round times of each process of each side (processes,
then rounds inside a process).  Each process contributes its median; the
effect is the geometric mean of head / base over the pairs of processes, and
its confidence interval the paired t interval of the pairs' log ratios (with
3 pairs, t has 2 degrees of freedom: 4.30 at 95 %).  The process, not the
round, is the unit: rounds of one process share its speed, and treating
3 x 20 rounds as 60 independent timings raised an alarm in 4 of 20 A/A runs,
and a bootstrap of processes then rounds in 1 of 14 here.  The decision is
"slower" or "faster" only when all three hold: the two-sided Mann-Whitney U
test of the pooled rounds gives p < ``alpha`` (asv's test), the interval
excludes 1, and the effect is at least ``min_effect`` (asv's minimum).  The
counts of both sides are compared exactly (``counts_diff``: Δ calls and the
entry points of the change).

numpy and scipy are imported inside the functions that use them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pytest_kerasperf.culprits import EntryPoint, entry_points, signed
from pytest_kerasperf.history.commits import HistoryError
from pytest_kerasperf.record import Record

Decision = Literal["slower", "faster", "no change"]
Side = Literal["base", "head"]
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_EFFECT = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_ROUNDS = 20
DEFAULT_PROCESSES = 3

Samples = Sequence[Sequence[float]]  # per process, its rounds


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
    ratio: float  # geometric mean of the pairs' head / base process medians
    ci_low: float  # of the ratio: t interval over the processes
    ci_high: float
    confidence: float
    p_value: float  # Mann-Whitney U of the pooled rounds, two-sided
    alpha: float
    min_effect: float  # relative, 0.05: 5 %
    decision: Decision

    @property
    def effect(self) -> float:
        """The relative change, head against base: +0.10 is 10 % slower."""
        return self.ratio - 1.0

    @property
    def interval_excludes_one(self) -> bool:
        return self.ci_low > 1.0 or self.ci_high < 1.0

    def describe(self) -> str:
        pct = self.confidence * 100
        return (
            f"{self.decision}: head/base {self.ratio:.3f} ({self.effect:+.1%}), "
            f"{pct:g} % CI [{self.ci_low:.3f}, {self.ci_high:.3f}] over the processes, "
            f"Mann-Whitney p = {self.p_value:.2g}; decides when p < {self.alpha:g}, the CI "
            f"excludes 1 and |effect| ≥ {self.min_effect:.0%} (n = {self.base_processes}×"
            f"{self.base_n // max(self.base_processes, 1)} base, {self.head_processes}×"
            f"{self.head_n // max(self.head_processes, 1)} head)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "base_n": self.base_n,
            "head_n": self.head_n,
            "base_processes": self.base_processes,
            "head_processes": self.head_processes,
            "base_median": self.base_median,
            "head_median": self.head_median,
            "ratio": self.ratio,
            "effect": self.effect,
            "ci": [self.ci_low, self.ci_high],
            "ci_method": "t interval of the log ratios of process medians (paired by pair)",
            "confidence": self.confidence,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "decision": self.decision,
        }


def process_ratio_ci(
    base: Samples, head: Samples, *, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float]:
    """(ratio, low, high): head / base from the processes' medians, with a t interval.

    Each process contributes its median, and the logs are compared: with as
    many processes a side, the i-th base and i-th head ran as a pair (in
    lockstep), so the interval is the paired t interval of the pairs' log
    ratios; otherwise Welch's.  The ratio is exp(mean log ratio): the
    geometric mean of the pairs' ratios.  One process a side leaves the
    spread between processes unknown: the interval is (0, inf).
    """
    import numpy as np
    from scipy import stats  # type: ignore[import-untyped]

    b = np.log([float(np.median(run)) for run in base])
    h = np.log([float(np.median(run)) for run in head])
    if b.size == h.size:
        d = h - b
        mean = float(d.mean())
        if d.size < 2:
            return float(np.exp(mean)), 0.0, float("inf")
        se = float(d.std(ddof=1)) / np.sqrt(d.size)
        df = float(d.size - 1)
    else:
        mean = float(h.mean() - b.mean())
        if b.size < 2 or h.size < 2:
            return float(np.exp(mean)), 0.0, float("inf")
        vb, vh = float(b.var(ddof=1)) / b.size, float(h.var(ddof=1)) / h.size
        se = float(np.sqrt(vb + vh))
        df = (vb + vh) ** 2 / (vb**2 / (b.size - 1) + vh**2 / (h.size - 1)) if se else 1.0
    t = float(stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, df))
    return float(np.exp(mean)), float(np.exp(mean - t * se)), float(np.exp(mean + t * se))


def decide(
    base: Samples,
    head: Samples,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = DEFAULT_CONFIDENCE,
) -> ABVerdict:
    """Is ``head`` slower or faster than ``base``?  Each is a list of processes' rounds.

    "slower"/"faster" only when p < alpha, the interval excludes 1 and
    |effect| >= min_effect.
    """
    if not base or not head or any(len(run) < 2 for run in (*base, *head)):
        raise ValueError("each side needs at least one process with at least 2 timings each")
    pooled_base = [float(t) for run in base for t in run]
    pooled_head = [float(t) for run in head for t in run]
    if min(min(pooled_base), min(pooled_head)) <= 0:
        raise ValueError("latencies must be positive")
    if not 0 < alpha < 1 or min_effect < 0 or not 0 < confidence < 1:
        raise ValueError("alpha and confidence in (0, 1), min_effect >= 0")
    from scipy import stats

    base_median = statistics.median(pooled_base)
    head_median = statistics.median(pooled_head)
    p_value = float(stats.mannwhitneyu(pooled_head, pooled_base, alternative="two-sided").pvalue)
    ratio, low, high = process_ratio_ci(base, head, confidence=confidence)
    decision: Decision = "no change"
    if p_value < alpha and abs(ratio - 1.0) >= min_effect and (low > 1.0 or high < 1.0):
        decision = "slower" if ratio > 1.0 else "faster"
    return ABVerdict(
        base_n=len(pooled_base),
        head_n=len(pooled_head),
        base_processes=len(base),
        head_processes=len(head),
        base_median=base_median,
        head_median=head_median,
        ratio=ratio,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        p_value=p_value,
        alpha=alpha,
        min_effect=min_effect,
        decision=decision,
    )


# --------------------------------------------------------------------------- exact counts


@dataclass(frozen=True)
class CountsDiff:
    base_calls: int
    head_calls: int
    entry_points: tuple[EntryPoint, ...]

    @property
    def calls_delta(self) -> int:
        return self.head_calls - self.base_calls

    def lines(self, top: int = 5) -> list[str]:
        if not self.calls_delta and not self.entry_points:
            return [f"calls per call: {self.base_calls:,} on both (exact)"]
        lines = [
            f"calls per call: {self.base_calls:,} → {self.head_calls:,} "
            f"({signed(self.calls_delta)}, exact)"
        ]
        lines += [f"  {point.describe()}" for point in self.entry_points[:top]]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "base_calls": self.base_calls,
            "head_calls": self.head_calls,
            "calls_delta": self.calls_delta,
            "entry_points": [asdict(point) for point in self.entry_points],
        }


def counts_diff(base: Record, head: Record) -> CountsDiff:
    points = entry_points(
        base.calls_by_function, base.call_edges, head.calls_by_function, head.call_edges
    )
    return CountsDiff(base.calls, head.calls, points)


# --------------------------------------------------------------------------- one test's runs


@dataclass(frozen=True)
class ProcessRun:
    """One pytest process on one side, for one test: every round's time (ms) and its record."""

    side: Side
    times_ms: tuple[float, ...]
    record: Record


def decide_runs(
    runs: Sequence[ProcessRun],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[ABVerdict, CountsDiff]:
    """The latency verdict and the exact counts diff of one test's interleaved runs."""
    base = [run for run in runs if run.side == "base"]
    head = [run for run in runs if run.side == "head"]
    if not base or not head:
        raise HistoryError("the test ran on one side only")
    if any(len(run.times_ms) < 2 for run in runs):
        raise HistoryError("fewer than 2 timed rounds in a process (is --rounds > 1?)")
    verdict = decide(
        [run.times_ms for run in base],
        [run.times_ms for run in head],
        alpha=alpha,
        min_effect=min_effect,
        confidence=confidence,
    )
    return verdict, counts_diff(base[0].record, head[0].record)
