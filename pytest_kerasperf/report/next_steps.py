"""What to do about a failure, one line per kind of failure it has.

A regression against the baseline, a budget a marker sets and a graph break each have their
own next step: re-recording the baseline fixes none of them but the first, and only when the
change is meant (a budget is in the test's source: a re-recorded baseline fails again).
"""

from __future__ import annotations

from pytest_kerasperf.metrics.base import Failure
from pytest_kerasperf.verdict import Verdict

#: The page that lists the graph breaks Keras has had and how each was removed.
GRAPH_BREAKS_PAGE = "docs/reading-a-failure.md#common-graph-breaks"


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
    if ("calls", False) in kinds:
        steps.append(
            "next: find the new calls ('made by' names each caller whose own calls changed, "
            "the biggest first); if the change is meant, re-record this test's entry (below) "
            "and say why in the pull request"
        )
    if any(budget for _, budget in kinds):
        steps.append(
            f"next: bring the count under the budget, or change the budget in {marker} and "
            "say why; re-recording the baseline does not change a budget"
        )
    if ("graph_breaks", False) in kinds or ("graph_breaks", True) in kinds:
        steps.append(
            "next: each break's frame and reason are listed with the breaks measured; "
            f"{GRAPH_BREAKS_PAGE} lists the common ones and how Keras removed them"
        )
    if ("recompiles", False) in kinds:
        steps.append(
            "next: the recompiles' causes name the guard that failed (a shape, a Python value "
            "or an attribute set in the forward); docs/reference.md#compile-health"
        )
    if ("latency", False) in kinds:
        steps.append(
            "next: the kerasperf profile section shows where the time went; latency is noisy, "
            "so run it again before acting on a small change"
        )
    if ("win_not_recorded", False) in kinds:
        steps.append("next: record the win: re-record this test's entry (below)")
    if ("not_compared", False) in kinds:
        steps.append("next: record an entry for this variant, or install the pinned set")
    return steps
