"""Explaining a change of calls exactly: own-count changes, grouped by caller, that add up.

``culprits.entry_points`` answers "where do the new calls enter?" with the change of the calls
*at and below* an edge, totals that overlap where calls moved below a removed wrapper
(docs/history.md reads Keras #23183 both ways).  Here a change is explained by the functions
whose *own* call counts changed, each change split over the callers that made it (cProfile's
caller → callee edges) and grouped under the Keras function it was called from: every changed
call counts once, so the groups' deltas **sum exactly to the total**.  A function called as
often as before, but from another caller, is listed as *moved* and adds nothing.

- A caller outside Keras (torch's ``Module._call_impl``, a builtin such as ``sorted`` calling
  its ``key=``) is grouped under the nearest Keras function above it, the caller that calls it
  most, followed upwards (a best guess: cProfile keeps edges, not paths; the deltas are exact).
- Calls with no profiled caller (the workload's own function) go to the group ``TOP``.

From two baseline summaries, ``explain_summaries.from_summaries`` explains by caller only.
Pure: mappings in, dataclasses out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated

import msgspec

from pytest_kerasperf.formatting import signed
from pytest_kerasperf.parts.calls import is_detailed as is_keras

__all__ = ["OUTSIDE", "TOP", "Explanation", "Group", "Item", "Move", "explain"]

Counts = Mapping[str, int]
Edges = Mapping[str, Mapping[str, int]]
#: The group of calls no profiled function made (the workload's own call).
TOP = "(top level)"
#: From summaries: the calls made by functions outside Keras, in one group.
OUTSIDE = "(code outside Keras)"
#: The most callers outside Keras a group names.
MAX_CALLERS = 20
#: How far up a non-Keras caller's callers are followed to find a Keras function.
MAX_CLIMB = 12


class ExplanationError(AssertionError, ValueError):
    """An explanation whose groups do not add up to its total: an invariant of ours broken
    (AssertionError), or a file that says so (ValueError: refused as its type's check)."""


class Item(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``callee`` was called ``before`` → ``after`` times by the group's caller (own count)."""

    callee: str
    before: int
    after: int
    #: the direct caller, where it is not the group's Keras function (a builtin, torch)
    via: str | None = None

    @property
    def delta(self) -> int:
        return self.after - self.before


class Group(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The changes of the own counts of the functions called from one Keras function."""

    caller: str
    items: tuple[Item, ...]
    #: from summaries (no items): the change of the calls the caller makes itself
    made: int | None = None
    made_before: int | None = None  # and how many it made before
    #: the calls made outside Keras: the user's own functions that now call a Keras function
    #: whose count changed (from the measured profile; a baseline keeps no such edge)
    callers: Annotated[tuple[str, ...], msgspec.Meta(max_length=MAX_CALLERS)] = ()

    @property
    def delta(self) -> int:
        return self.made if self.made is not None else sum(i.delta for i in self.items)


class Move(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``callee`` is called as often as before; ``calls`` of its calls moved from one caller
    to another (``source`` → ``target``)."""

    callee: str
    calls: int
    source: str
    target: str


class Explanation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    total: int
    groups: tuple[Group, ...]  # the causes first, then biggest first; they sum to ``total``
    moves: tuple[Move, ...] = ()
    by_caller_only: bool = False  # from summaries: no items, no moves

    def __post_init__(self) -> None:
        summed = sum(group.delta for group in self.groups)
        if summed != self.total:  # an invariant, not input validation
            raise ExplanationError(f"explanation sums to {summed}, not {self.total}")

    # ------------------------------------------------------------------ text

    def group_text(self, group: Group, name: Callable[[str], str], items: int = 3) -> str:
        """``layers/layer.py:Layer.__call__ −52 (error_handler 26→0 −26, ...)``."""
        where = name(group.caller)
        if not group.items:
            if group.callers:
                shown_callers = ", ".join(name(c) for c in group.callers[:items])
                more = len(group.callers) - items
                extra = f" and {more} more" if more > 0 else ""
                return f"{where} {signed(group.delta)} (from {shown_callers}{extra})"
            if group.made_before is None or group.made is None:
                return f"{where} {signed(group.delta)}"
            after = group.made_before + group.made
            return f"{where} {signed(group.delta)} (calls it makes {group.made_before:,}→{after:,})"
        shown = sorted(group.items, key=lambda i: (-abs(i.delta), i.callee))
        parts = [
            f"{name(i.callee)} {i.before:,}→{i.after:,}" + (f" via {name(i.via)}" if i.via else "")
            for i in shown[:items]
        ]
        rest = shown[items:]
        if rest:
            parts.append(f"{len(rest)} more {_net(sum(i.delta for i in rest))}")
        return f"{where} {signed(group.delta)} ({', '.join(parts)})"

    def move_text(self, move: Move, name: Callable[[str], str]) -> str:
        return (
            f"{name(move.callee)} {move.calls:,}× from {name(move.source)} to {name(move.target)}"
        )

    def line(
        self,
        name: Callable[[str], str] = str,
        groups: int = 3,
        moves: int = 2,
        separator: str = "; ",
    ) -> str:
        """One line: the biggest groups, how many more (their sum), and the moves."""
        shown = [self.group_text(g, name) for g in self.groups[:groups]]
        rest = self.groups[groups:]
        if rest:
            shown.append(f"{len(rest)} more {_net(sum(g.delta for g in rest))}")
        text = separator.join(shown)
        if self.moves:
            listed = [self.move_text(m, name) for m in self.moves[:moves]]
            if len(self.moves) > moves:
                listed.append(f"{len(self.moves) - moves} more")
            text += f"{separator}moved: " + ", ".join(listed)
        return text

    def lines(self, name: Callable[[str], str] = str, items: int = 5) -> list[str]:
        """Every group on its own line (they sum to the total), then the moves."""
        how = (
            "the calls each Keras function makes itself, and the rest"
            if self.by_caller_only
            else "own call counts, under the Keras function that called them"
        )
        out = [f"{signed(self.total)} calls = the sum of these ({how}):"]
        width = max((len(signed(g.delta)) for g in self.groups), default=1)
        for group in self.groups:
            text = "".join(self.group_text(group, name, items).rsplit(f" {signed(group.delta)}", 1))
            out.append(f"  {signed(group.delta):>{width}}  {text}")
        out += [
            f"  moved (same count, another caller): {self.move_text(m, name)}" for m in self.moves
        ]
        return out


def _net(n: int) -> str:
    """What the listed-as-more add up to: ``+14``, ``−3``, ``±0``."""
    return "±0" if n == 0 else signed(n)


def _anchor(caller: str, edges_by_callee: Mapping[str, Mapping[str, int]]) -> str | None:
    """The nearest Keras function above ``caller``: its most frequent caller, upwards."""
    seen = {caller}
    current = caller
    for _ in range(MAX_CLIMB):
        callers = edges_by_callee.get(current, {})
        if not callers:
            return None
        current = max(callers.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if is_keras(current):
            return current
        if current in seen:
            return None
        seen.add(current)
    return None


def _inverse(*edge_maps: Edges) -> dict[str, dict[str, int]]:
    inverse: dict[str, dict[str, int]] = {}
    for edges in edge_maps:
        for caller, callees in edges.items():
            for callee, n in callees.items():
                into = inverse.setdefault(callee, {})
                into[caller] = max(into.get(caller, 0), int(n))
    return inverse


def explain(
    before_counts: Counts, before_edges: Edges, after_counts: Counts, after_edges: Edges
) -> Explanation:
    """The change from ``before`` to ``after`` (full profiles), exactly (see the module doc)."""
    names = set(before_counts) | set(after_counts)
    total = sum(after_counts.get(n, 0) for n in names) - sum(before_counts.get(n, 0) for n in names)
    into_before, into_after = _inverse(before_edges), _inverse(after_edges)
    upwards = _inverse(after_edges, before_edges)
    by_group: dict[str, list[Item]] = {}
    moves: list[Move] = []

    @functools.cache
    def group_of(caller: str) -> tuple[str, str | None]:
        above = None if caller == TOP or is_keras(caller) else _anchor(caller, upwards)
        return (above, caller) if above else (caller, None)

    for callee in sorted(names):
        old_in, new_in = into_before.get(callee, {}), into_after.get(callee, {})
        per_caller: dict[str, tuple[int, int]] = {}
        for caller in set(old_in) | set(new_in):
            pair = (old_in.get(caller, 0), new_in.get(caller, 0))
            if pair[0] != pair[1]:
                per_caller[caller] = pair
        own_delta = after_counts.get(callee, 0) - before_counts.get(callee, 0)
        top_before = before_counts.get(callee, 0) - sum(old_in.values())
        top_after = after_counts.get(callee, 0) - sum(new_in.values())
        if top_before != top_after:
            per_caller[TOP] = (top_before, top_after)
        if not per_caller:
            continue
        if own_delta == 0:
            moves += _moves(callee, per_caller)
            continue
        for caller, (old, new) in per_caller.items():
            anchor, via = group_of(caller)
            by_group.setdefault(anchor, []).append(Item(callee, old, new, via))
    groups = [
        Group(caller, tuple(sorted(items, key=lambda i: (-abs(i.delta), i.callee, i.via or ""))))
        for caller, items in by_group.items()
    ]

    def unchanged(caller: str) -> bool:  # called as often as before: the change is its own
        return caller == TOP or before_counts.get(caller, 0) == after_counts.get(caller, 0)

    groups.sort(key=lambda g: (not unchanged(g.caller), -abs(g.delta), g.caller))
    moves.sort(key=lambda m: (-m.calls, m.callee, m.source, m.target))
    return Explanation(total, tuple(groups), tuple(moves))


def _moves(callee: str, per_caller: Mapping[str, tuple[int, int]]) -> list[Move]:
    """Pair the callers that lost calls with those that gained them, biggest first."""
    # each side's calls negated, so that sorting puts the biggest first, then by name
    losses = sorted((new - old, c) for c, (old, new) in per_caller.items() if old > new)
    gains = sorted((old - new, c) for c, (old, new) in per_caller.items() if new > old)
    out: list[Move] = []
    while losses and gains:
        moved = -max(losses[0][0], gains[0][0])
        out.append(Move(callee, moved, losses[0][1], gains[0][1]))
        for side in (losses, gains):
            side[0] = (side[0][0] + moved, side[0][1])
            if not side[0][0]:
                side.pop(0)
    return out
