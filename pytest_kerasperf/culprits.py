"""Where new calls enter: source-level culprits from cProfile's caller -> callee edges.

A flat per-function diff says *what* grew (``isinstance +46``); a reviewer needs *where* the
new calls come from.  An edge ``caller -> callee`` whose count changed while the caller is
called as often as before is where a change enters; everything below it changes with it, so
only these topmost edges are reported, each with the change of the calls at and below it.

cProfile keeps edges, not paths, so that change is attributed as a flow: each function's change
of count is shared among the edges into it in proportion to how much each changed, passed up
from the bottom.  That is exact when the changed calls form a tree (a new helper, one more
layer); where calls only moved between callers, the edge is credited with the callee's average
calls per call (gprof's propagation), and recursion is cut where it closes a cycle.  Pure
functions of plain mappings: nothing here knows cProfile or Keras.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import msgspec

from pytest_kerasperf.formatting import signed

__all__ = ["OWN_CALLS", "EntryPoint", "entry_points", "function_entry_points", "signed"]

Counts = Mapping[str, int]
Edges = Mapping[str, Mapping[str, int]]
#: The ``callee`` of a function-level entry point: every call the function makes itself.
OWN_CALLS = "*"


class EntryPoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One topmost changed edge: ``caller`` calls ``callee`` ``before`` -> ``after`` times."""

    caller: str
    callee: str
    before: int
    after: int
    calls_delta: int  # calls at and below the edge: after - before (propagated)
    via: str | None = None  # the Python function that called ``caller`` when it is a builtin
    #: a function-level entry (``callee`` is OWN_CALLS): how often ``caller`` was called
    calls: int | None = None

    def describe(self) -> str:
        if self.callee == OWN_CALLS:
            times = f" ({self.calls:,}×)" if self.calls is not None else ""
            return (
                f"{self.caller}{times}: the calls it makes itself {self.before:,}→{self.after:,} "
                f"({signed(self.calls_delta)})"
            )
        where = f"{self.via} → {self.caller}" if self.via else self.caller
        return (
            f"{where} → {self.callee} {self.before:,}→{self.after:,}× "
            f"(≈{signed(self.calls_delta)} calls at and below)"
        )


def is_python_function(name: str) -> bool:
    """``path.py:qualname`` names Python code; builtins are ``isinstance``, ``list.append``."""
    return ":" in name


def subtree_sizes(counts: Counts, edges: Edges) -> dict[str, float]:
    """Average number of calls per call of each function, itself included (gprof-style)."""
    size: dict[str, float] = {}
    for root in sorted(counts):
        if root in size:
            continue
        on_stack = {root}
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, {}))))]
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if c not in size and c not in on_stack), None)
            if child is not None:
                on_stack.add(child)
                stack.append((child, iter(sorted(edges.get(child, {})))))
                continue
            stack.pop()
            on_stack.discard(node)
            own = counts.get(node, 0) or 1
            total = 1.0
            for callee, n in edges.get(node, {}).items():
                if callee != node:  # a cycle still open counts its calls only
                    total += n / own * size.get(callee, 1.0)
            size[node] = total
    return size


def _edge_delta(before: Edges, after: Edges, caller: str, callee: str) -> int:
    return after.get(caller, {}).get(callee, 0) - before.get(caller, {}).get(callee, 0)


def _strongly_connected(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's components of ``graph``, sinks first (reverse topological order), no recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def changes_below(
    before_counts: Counts, before_edges: Edges, after_counts: Counts, after_edges: Edges
) -> Callable[[str, str], float]:
    """``f(caller, callee)``: the change of calls at and below that edge (see module doc).

    The change flows up the edges whose counts changed.  A cycle among them (a
    wrapper such as Keras's traceback ``error_handler`` that both calls and is
    called by ``Layer.__call__``) is taken as one node, as gprof does.
    """
    sizes = subtree_sizes(after_counts, after_edges)
    names = set(before_counts) | set(after_counts)
    delta_n = {name: after_counts.get(name, 0) - before_counts.get(name, 0) for name in names}
    graph: dict[str, list[str]] = {}
    for caller in set(before_edges) | set(after_edges):
        callees = set(before_edges.get(caller, {})) | set(after_edges.get(caller, {}))
        moved = [c for c in callees if _edge_delta(before_edges, after_edges, caller, c)]
        if moved:
            graph[caller] = sorted(moved)
            for callee in moved:
                graph.setdefault(callee, [])
    component_of: dict[str, int] = {}
    entering: dict[int, int] = {}  # changed calls into a component from outside it
    below: dict[int, float] = {}

    def through(caller: str, callee: str) -> float:
        edge = _edge_delta(before_edges, after_edges, caller, callee)
        target = component_of.get(callee)
        if target is None or component_of.get(caller) == target or not entering.get(target):
            return edge * sizes.get(callee, 1.0)  # calls that only moved between callers
        return edge / entering[target] * below[target]

    components = _strongly_connected(graph)
    for number, members in enumerate(components):
        for member in members:
            component_of[member] = number
    for caller, moved_to in graph.items():
        for callee in moved_to:
            if component_of[caller] != component_of[callee]:
                target = component_of[callee]
                edge = _edge_delta(before_edges, after_edges, caller, callee)
                entering[target] = entering.get(target, 0) + edge
    for number, members in enumerate(components):  # sinks first
        below[number] = sum(delta_n.get(m, 0) for m in members) + sum(
            through(m, callee)
            for m in members
            for callee in graph[m]
            if component_of[callee] != number
        )
    return through


def entry_points(
    before_counts: Counts,
    before_edges: Edges,
    after_counts: Counts,
    after_edges: Edges,
) -> tuple[EntryPoint, ...]:
    """Topmost changed edges, Python callers first, biggest change of the calls below first."""
    through = changes_below(before_counts, before_edges, after_counts, after_edges)
    found: list[EntryPoint] = []
    for caller in sorted(set(before_edges) | set(after_edges)):
        calls_of_caller = before_counts.get(caller, 0)
        if calls_of_caller == 0 or calls_of_caller != after_counts.get(caller, 0):
            continue  # the caller itself changed: the change entered above it
        old = before_edges.get(caller, {})
        new = after_edges.get(caller, {})
        for callee in sorted(set(old) | set(new)):
            n_old, n_new = old.get(callee, 0), new.get(callee, 0)
            if n_old == n_new:
                continue
            via = None if is_python_function(caller) else _python_caller(caller, after_edges)
            found.append(
                EntryPoint(caller, callee, n_old, n_new, round(through(caller, callee)), via)
            )
    # Python callers first (a reviewer can act on them), then by size.
    found.sort(
        key=lambda e: (
            not (is_python_function(e.caller) or e.via),
            -abs(e.calls_delta),
            e.caller,
            e.callee,
        )
    )
    return tuple(found)


def _python_caller(builtin: str, edges: Edges) -> str | None:
    """The Python function that calls ``builtin`` most often (sorted's caller for its key=)."""
    callers = [
        (n, caller)
        for caller, callees in edges.items()
        if is_python_function(caller) and (n := callees.get(builtin, 0))
    ]
    return max(callers)[1] if callers else None


def function_entry_points(
    before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]]
) -> tuple[EntryPoint, ...]:
    """Where calls changed, from two profiles' summaries (``record.ProfileSummary.functions``:
    each Keras function's calls and the calls it makes itself, not every edge).

    A function called as often as before that now makes more (or fewer) calls itself is where a
    change enters, exactly (the delta is of the calls it makes); one whose own count changed is
    not (the change entered in a caller).  Biggest change first.
    """
    found = []
    for name in sorted(set(before) & set(after)):
        (calls_before, made_before), (calls_after, made_after) = before[name], after[name]
        if calls_before == calls_after and calls_before > 0 and made_before != made_after:
            delta = made_after - made_before
            found.append(
                EntryPoint(name, OWN_CALLS, made_before, made_after, delta, calls=calls_after)
            )
    found.sort(key=lambda e: (-abs(e.calls_delta), e.caller))
    return tuple(found)
