"""What a test's judgement says: its status, its failures (each with a kind), its notes,
and what moved in each metric (the settings it is made under: ``settings.Settings``).

Typed values (``msgspec.Struct``): the results file's ``verdict`` is this type,
its codec and schema generated.  The judging itself is ``judging.judge``, a
pure function of records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeVar, Union

import msgspec

from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.metrics.base import Change, Failure
from pytest_kerasperf.settings import Settings

__all__ = ["Failure", "Settings", "Status", "Verdict"]

Status = Literal[
    "pass", "improved", "regressed", "over-budget", "win-not-recorded", "new", "mismatch"
]
C = TypeVar("C", bound=Change)

if TYPE_CHECKING:
    AnyChange = Change
else:  # the tagged union of every metric's change type, for the codec
    AnyChange = Union[tuple(m.change_type for m in METRICS if m.change_type is not None)]  # noqa: UP007


class Verdict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    status: Status
    failures: tuple[Failure, ...] = ()
    notes: tuple[str, ...] = ()
    compared: bool = False  # counts were compared with a baseline entry
    not_compared: str | None = None  # why not: "no baseline entry", "environment differs: ..."
    mismatched: tuple[str, ...] = ()
    #: what moved, one change per metric that could compare (``Metric.compare``)
    changes: tuple[AnyChange, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failure_lines(self) -> tuple[str, ...]:
        return tuple(failure.text for failure in self.failures)

    def failed_on(self, kind: str) -> bool:
        return any(failure.kind == kind for failure in self.failures)

    def change(self, kind: type[C]) -> C | None:
        """The change of one metric (``verdict.change(CallsChange)``), or None."""
        return next((change for change in self.changes if isinstance(change, kind)), None)
