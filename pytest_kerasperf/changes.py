"""What moved between two records of one test: once, for every metric.

``diff(before, after)`` asks each metric (``metrics/``) for its
``compare(before, after)``; the verdict (a test against its baseline entry),
the baseline update (is an entry rewritten, and what its line says), the
terminal's listing of rewritten entries and the history commands (one commit
against the previous one) all read this one result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.metrics.base import Change, Metric
from pytest_kerasperf.verdict import AnyChange

if TYPE_CHECKING:
    from pytest_kerasperf.record import Record

__all__ = ["AnyChange", "Diff", "diff"]

C = TypeVar("C", bound=Change)


@dataclass(frozen=True)
class Diff:
    """Each metric's change between two records (those that could compare)."""

    by_metric: dict[str, Change]

    @property
    def changes(self) -> tuple[AnyChange, ...]:
        return tuple(self.by_metric.values())

    def of(self, metric: Metric) -> Change | None:
        return self.by_metric.get(metric.name)

    def get(self, kind: type[C]) -> C | None:
        return next(
            (change for change in self.by_metric.values() if isinstance(change, kind)), None
        )


def diff(before: Record, after: Record) -> Diff:
    """What moved from ``before`` to ``after``, metric by metric."""
    found: dict[str, Change] = {}
    for metric in METRICS:
        change = metric.compare(before, after)
        if change is not None:
            found[metric.name] = change
    return Diff(found)


def moved_words(before: Record, after: Record) -> list[str]:
    """What moved between an entry and its rewrite, for the ``updated`` line."""
    words = [word for metric in METRICS for word in metric.moved_words(before, after)]
    return words or ["environment"]
