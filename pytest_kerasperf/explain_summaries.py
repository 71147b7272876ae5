"""Explaining a change of calls between two baseline summaries (``record.ProfileSummary``):
by the Keras function that made the calls, exactly, with one group for the calls made outside
Keras (``explain`` explains whole profiles; this module, what an entry keeps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_kerasperf.explain import MAX_CALLERS, OUTSIDE, Edges, Explanation, Group

if TYPE_CHECKING:
    from pytest_kerasperf.parts.calls import ProfileSummary


def from_summaries(
    before: ProfileSummary,
    after: ProfileSummary,
    outside_edges: Edges | None = None,
) -> Explanation:
    """The change between two baseline summaries, by the Keras function that made the calls.

    Each Keras function's change of the calls it makes itself is exact; the
    remainder (calls made by code outside Keras, and the workload's own call)
    is one group, so that the groups sum to the total.  ``outside_edges``: the measured
    profile's edges from the user's own code outside Keras (caller -> callee -> calls); those
    callers that call a Keras function whose count changed are named in that group.
    """
    total = after.calls - before.calls
    groups = []
    for name in sorted(set(before.functions) | set(after.functions)):
        made_before = before.functions.get(name, (0, 0))[1]
        made_after = after.functions.get(name, (0, 0))[1]
        if made_before != made_after:
            groups.append(Group(name, (), made=made_after - made_before, made_before=made_before))

    def called(name: str) -> tuple[int, int]:
        return before.functions.get(name, (0, 0))[0], after.functions.get(name, (0, 0))[0]

    rest = total - sum(g.delta for g in groups)
    if rest:
        groups.append(Group(OUTSIDE, (), made=rest, callers=_callers(outside_edges, called)))

    causes = {g.caller for g in groups if g.caller != OUTSIDE and len(set(called(g.caller))) == 1}
    groups.sort(key=lambda g: (_root_rank(g.caller, causes), -abs(g.delta), g.caller))
    return Explanation(total, tuple(groups), (), by_caller_only=True)


def _callers(edges: Edges | None, called: Callable[[str], tuple[int, int]]) -> tuple[str, ...]:
    """The callers in ``edges`` of a function whose count changed, most calls first."""
    made: dict[str, int] = {}
    for caller, callees in (edges or {}).items():
        into_changed = sum(int(n) for callee, n in callees.items() if len(set(called(callee))) > 1)
        if into_changed:
            made[caller] = into_changed
    return tuple(sorted(made, key=lambda caller: (-made[caller], caller))[:MAX_CALLERS])


def _root_rank(caller: str, causes: set[str]) -> int:
    """Where a group goes in the line: the caller whose own calls changed leads.

    ``causes``: the Keras functions called as often as before that make more (or fewer) calls
    themselves, the change being in their own code: rank 0.  1: the calls made outside Keras
    (a contributor's layer in a package of their own, a library), when no Keras function is a
    cause: the change came from there.  2: a function called more (or less) often, and so making
    more calls: a consequence of a cause.  3: the calls made outside Keras, when a cause is in
    Keras.
    """
    if caller == OUTSIDE:
        return 3 if causes else 1
    return 0 if caller in causes else 2
