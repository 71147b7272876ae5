"""When two latency medians may be divided: the one rule every latency ratio of the reports obeys.

A ratio of two medians ("change ×", "Keras/plain", a dot against another on a chart) says
something only when both medians describe their workload, not the machine's load at the time,
and nothing but the runs' own spread can tell.  So a ratio is shown only when
:func:`not_comparable` finds no reason against it (``REASONS``, checked in that order);
otherwise the reports print ``not comparable (REASON)`` and the charts leave the pair
undivided.  Each reason, and why 25 % (the committed baselines' spreads, measured), is in
docs/article-report.md ("When two medians may be divided").

Pure: plain numbers in, a reason or None out.  The article's rows (``article.py``) apply it;
the renderers and ``charts.py`` only show the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_kerasperf.record import LatencyRecord

#: a run whose IQR is more than this fraction of its median is too noisy to divide.
SPREAD_LIMIT = 0.25
#: fewer timed rounds than this: the IQR says nothing about the median.
MIN_ROUNDS = 3

Reason = Literal["device", "cpu", "rounds", "no spread", "spread"]

#: what each reason means, for the notes under the tables and on the charts.
REASONS: dict[Reason, str] = {
    "device": "the two medians were taken on different (or unknown) devices",
    "cpu": "separate runs on a CPU: the machine's load is in neither spread "
    "(compare them with kerasperf ab)",
    "rounds": f"a run timed fewer than {MIN_ROUNDS} rounds, so its spread is unknown",
    "no spread": "the baseline's spread is not in the results file, so a loaded run "
    "cannot be told from an idle one",
    "spread": f"a run's IQR is over {SPREAD_LIMIT:.0%} of its median",
}


@dataclass(frozen=True)
class Timing:
    """One median and what its run says about it (None: not recorded)."""

    median_ms: float
    iqr_ms: float | None = None
    rounds: int | None = None
    device: str | None = None
    accelerator: bool | None = None  # None: not recorded

    @classmethod
    def of(cls, latency: LatencyRecord) -> Timing:
        return cls(
            latency.median_ms, latency.iqr_ms, latency.rounds, latency.device, latency.accelerator
        )

    @property
    def spread(self) -> float | None:
        """IQR / median (None: unknown)."""
        if self.iqr_ms is None or self.median_ms <= 0:
            return None
        return self.iqr_ms / self.median_ms


def not_comparable(a: Timing, b: Timing, *, same_run: bool = False) -> Reason | None:
    """Why ``a.median_ms / b.median_ms`` would mislead, or None when it may be shown
    (``same_run``: both timed in one run, e.g. Keras and its plain twin)."""
    if a.device is None or b.device is None or a.device != b.device:
        return "device"
    if not same_run and not (a.accelerator and b.accelerator):
        return "cpu"
    if any(t.rounds is not None and t.rounds < MIN_ROUNDS for t in (a, b)):
        return "rounds"
    spreads = (a.spread, b.spread)
    if any(t.rounds is None or s is None for t, s in zip((a, b), spreads, strict=True)):
        return "no spread"
    if any(s is not None and s > SPREAD_LIMIT for s in spreads):
        return "spread"
    return None


@dataclass(frozen=True)
class Ratio:
    """``a / b`` when the rule allows it (``value``), else why not (``blocked``)."""

    value: float | None
    blocked: Reason | None = None


def ratio(a: Timing | None, b: Timing | None, *, same_run: bool = False) -> Ratio:
    """``a / b`` by the rule; no value and no reason when either is missing or ``b`` is 0."""
    if a is None or b is None or b.median_ms <= 0:
        return Ratio(None)
    reason = not_comparable(a, b, same_run=same_run)
    if reason is not None:
        return Ratio(None, reason)
    return Ratio(a.median_ms / b.median_ms)
