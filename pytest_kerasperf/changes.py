"""What moved between two records: per-function call counts and graph breaks per reason.

Pure diffs of plain data, shared by the verdict (one test against its
baseline) and the history commands (one commit against the previous one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pytest_kerasperf.record import GraphRecord, ProfileSummary

__all__ = ["BreakChange", "break_changes", "diff_counts", "summary_diff"]


@dataclass(frozen=True)
class BreakChange:
    """Graph breaks of one reason at one Keras function, baseline -> measured."""

    frame: str
    reason: str
    before: int
    after: int
    line: int

    def describe(self) -> str:
        return f"{self.frame} (line {self.line}): {self.before}→{self.after}× {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BreakChange:
        return cls(
            frame=str(data["frame"]),
            reason=str(data["reason"]),
            before=int(data["before"]),
            after=int(data["after"]),
            line=int(data["line"]),
        )


def diff_counts(
    before: Mapping[str, int], after: Mapping[str, int]
) -> tuple[tuple[str, int, int], ...]:
    """(function, before, after) for every function whose count changed, biggest change first."""
    changed = [
        (name, before.get(name, 0), after.get(name, 0))
        for name in set(before) | set(after)
        if before.get(name, 0) != after.get(name, 0)
    ]
    changed.sort(key=lambda row: (-abs(row[2] - row[1]), row[0]))
    return tuple(changed)


def summary_diff(before: ProfileSummary, after: ProfileSummary) -> tuple[tuple[str, int, int], ...]:
    """``diff_counts`` of two profiles' summaries: functions, and packages as ``torch.*``."""
    counts_before = {name: calls for name, (calls, _) in before.functions.items()}
    counts_after = {name: calls for name, (calls, _) in after.functions.items()}
    counts_before.update({f"{package}.*": n for package, n in before.outside.items()})
    counts_after.update({f"{package}.*": n for package, n in after.outside.items()})
    return diff_counts(counts_before, counts_after)


def break_changes(before: GraphRecord, after: GraphRecord) -> tuple[BreakChange, ...]:
    """Per (frame, reason): breaks before and after, for every reason whose count moved."""
    old, new = before.by_key(), after.by_key()
    changes = []
    for key in sorted(set(old) | set(new)):
        n_old = old[key].count if key in old else 0
        n_new = new[key].count if key in new else 0
        if n_old != n_new:
            line = (new.get(key) or old[key]).line
            changes.append(BreakChange(key[0], key[1], n_old, n_new, line))
    changes.sort(key=lambda c: (-(c.after - c.before), c.frame, c.reason))
    return tuple(changes)
