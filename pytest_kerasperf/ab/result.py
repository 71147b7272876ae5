"""An A/B's latency verdict as files hold it: a results file's ``ab`` (``--kerasperf-compare-ref``)
and ``kerasperf ab --json``.  Typed, so that its codec and schema are generated and a file from
elsewhere (a CI artifact) is checked field by field where it is read."""

from __future__ import annotations

import math
from typing import Literal

import msgspec

from pytest_kerasperf.codec import Count, PositiveCount

Decision = Literal["slower", "faster", "no change"]


class ABResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``stats.ABVerdict`` with what it derives (its effect, whether it is sure)."""

    base_n: Count  # rounds, all processes
    head_n: Count
    base_processes: Count
    head_processes: Count
    base_median: float  # pooled
    head_median: float
    ratio: float  # head / base
    effect: float  # ratio - 1: +0.10 is 10 % slower
    #: of the ratio; None: unbounded (one pair, or one process a side: the spread is unknown)
    ci: tuple[float | None, float | None]
    ci_method: str
    confidence: float
    p_value: float
    alpha: float
    looks: PositiveCount
    min_effect: float
    decision: Decision
    sure: bool


def bound(value: float) -> float | None:
    """An interval's bound as files hold it: None where it is unbounded (the spread is
    unknown: one pair, or one process a side)."""
    return value if math.isfinite(value) else None
