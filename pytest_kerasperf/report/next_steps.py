"""What to do about a failure, one line per kind of failure it has.

A budget a marker sets has its own next step, and each metric's move against the baseline
its own (``Metric.advice``).  Re-recording the baseline fixes only a move, and only when the
change is meant (a budget is in the test's source: a re-recorded baseline fails again).
"""

from __future__ import annotations

from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.metrics.base import Failure
from pytest_kerasperf.verdict import Verdict


def is_budget(failure: Failure) -> bool:
    """A marker's budget exceeded (``max_calls(1740): measured ...``), not a baseline moved."""
    return failure.text.startswith("max_")


def rerecord_helps(verdict: Verdict) -> bool:
    """Whether re-recording the test's baseline entry can end its failure or note: not when
    every failure is a budget, which lives in the test's source."""
    if not verdict.failures:
        return True  # a note: a win to record, no entry, another environment
    return not all(is_budget(failure) for failure in verdict.failures)


def next_steps(verdict: Verdict, where: str | None = None) -> list[str]:
    """``next: ...`` lines for the failures of ``verdict``, one per kind, in a fixed order."""
    kinds = {(failure.kind, is_budget(failure)) for failure in verdict.failures}
    marker = f"the test's marker ({where})" if where else "the test's marker"
    steps: list[str] = []
    if any(budget for _, budget in kinds):
        steps.append(
            f"next: bring the count under the budget, or change the budget in {marker} and "
            "say why; re-recording the baseline does not change a budget"
        )
    for metric in METRICS:
        advice = {metric.advice(budget) for name, budget in kinds if name == metric.name}
        steps += sorted(text for text in advice if text)
    if ("win_not_recorded", False) in kinds:
        steps.append("next: record the win: re-record this test's entry (below)")
    if ("not_compared", False) in kinds:
        steps.append("next: record an entry for this variant, or install the pinned set")
    return steps
