"""torch.compile graph breaks of the compiled forwards a test used (``torch._dynamo.explain``).

Taken once per compiled function, before it is compiled (``before_compile``; the handle
keeps it with the compiled function) and reported for every test that uses it; exact,
like calls.  Each break is kept
by its reason and its Keras frame, with how often dynamo broke there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from pytest_kerasperf.budget import Budget
from pytest_kerasperf.formatting import signed
from pytest_kerasperf.metrics.base import NOTHING, Change, Metric, count, noted, scoped
from pytest_kerasperf.parts.graph_breaks import GraphRecord

if TYPE_CHECKING:
    from pytest_kerasperf.measure.context import Measuring, ToCompile
    from pytest_kerasperf.metrics.base import Judgement
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings


def max_graph_breaks(n: int, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_graph_breaks(n, *, backend=None, mode=None): fail if torch.compile breaks
    the compiled model's forward into more than n+1 graphs (torch._dynamo.explain);
    backend= / mode= limit it to that backend / mode."""
    return scoped("graph_breaks", count(n, "n"), backend, mode)


#: Why a torch compiled test has no graph breaks: only the plugin's own compiles are explained.
NOT_MEASURED = (
    "graph breaks are measured only for forwards built with the `kerasperf_compile` fixture "
    "(and the `kerasperf_*_train_step` fixtures), not for a model the test compiles itself "
    "(`jit_compile=True`)"
)


class BreakChange(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Graph breaks of one reason at one Keras function, baseline -> measured."""

    frame: str
    reason: str
    before: int
    after: int
    line: int

    def describe(self) -> str:
        return f"{self.frame} (line {self.line}): {self.before}→{self.after}× {self.reason}"


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


#: The page that lists the graph breaks Keras has had and how each was removed.
PAGE = "docs/reading-a-failure.md#common-graph-breaks"

#: Reasons named in a failure's line; the rest are counted.
SHOWN = 2


def unexplained(breaks: int, by_reason: int) -> str:
    """Words for breaks (or a change of them) that their reasons do not add up to: explain
    counts a break dynamo's log gave no reason for, and the log can name a break explain
    does not count."""
    if breaks > by_reason:
        return f"; {breaks - by_reason} without a reason in dynamo's graph-break log"
    if breaks < by_reason:
        return (
            f"; the reasons count {by_reason - breaks} more "
            "(dynamo's log names breaks explain does not count)"
        )
    return ""


class GraphBreaksChange(Change, frozen=True, tag="graph_breaks"):
    before: int
    after: int
    changes: tuple[BreakChange, ...] = ()  # per reason, the biggest growth first

    @property
    def delta(self) -> int:
        return self.after - self.before

    @property
    def counts_moved(self) -> bool:
        return bool(self.delta or self.changes)

    def where(self, short: Callable[[str], str]) -> tuple[str, ...]:
        return tuple(
            f"graph break {short(c.frame)} {c.before}→{c.after}× {c.reason}" for c in self.changes
        )


class GraphBreaks(
    Metric,
    name="graph_breaks",
    marker=max_graph_breaks,
    exact=True,
    change=GraphBreaksChange,
    column="graph breaks (Δ)",
    series="graph breaks per forward",
):
    next_step = (
        "next: each break's frame and reason are listed with the breaks measured; "
        f"{PAGE} lists the common ones and how Keras removed them"
    )
    next_step_on_budget = True
    junit_property = "kerasperf_graph_breaks"

    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        graph = measured.graph_breaks
        if graph is None:
            compiled = (measured.backend, measured.mode) == ("torch", "compiled")
            why = NOT_MEASURED if compiled else "graph breaks are measured in torch compiled mode"
            return self.not_checked(budget, why)
        return self.over_budget(budget, graph.breaks, f"measured {graph.breaks}")

    def counts_gave_up(self, measured: Record) -> str | None:
        """dynamo compiles the code between graph breaks as frames of their own (seen: Keras's
        ``TorchLayer._setattr_hook``, once per attribute name, until its recompile limit):
        those frames are the graph breaks' cost, counted and gated as graph breaks."""
        breaks = measured.graph_breaks.breaks if measured.graph_breaks else 0
        if not breaks:
            return None
        return f"after {breaks} graph breaks: counted as graph breaks, not compile health"

    def before_compile(self, backend: str, target: ToCompile) -> GraphRecord | None:
        """torch, compiled: ``torch._dynamo.explain`` of the function (it resets dynamo, so it
        runs before the compile)."""
        if (backend, target.mode) != ("torch", "compiled"):
            return None
        from pytest_kerasperf.measure.graph import graph_breaks

        fn, args, kwargs = target.make()
        return graph_breaks(fn, args, kwargs)

    def measure(self, run: Measuring) -> None:
        """The breaks of the compiled functions the test used, taken before their compiles,
        summed."""
        from pytest_kerasperf.measure.graph import combine

        taken = [graph for graph in run.taken(self.name) if isinstance(graph, GraphRecord)]
        run.fields["graph_breaks"] = combine(taken)

    def compare(self, before: Record, after: Record) -> GraphBreaksChange | None:
        then, now = before.graph_breaks, after.graph_breaks
        if then is None or now is None:
            return None
        return GraphBreaksChange(then.breaks, now.breaks, break_changes(then, now))

    def judge(
        self, change: Change, measured: Record, baseline: Record, settings: Settings
    ) -> Judgement:
        assert isinstance(change, GraphBreaksChange)
        grown = [c for c in change.changes if c.after > c.before]
        named = "; ".join(c.describe() for c in grown[:SHOWN])
        if len(grown) > SHOWN:
            rest = sum(c.after - c.before for c in grown[SHOWN:])
            named += f"; {len(grown) - SHOWN} more reasons ({signed(rest)})"
        if change.delta > 0:
            moved = sum(c.after - c.before for c in change.changes)
            said = (f"; grew: {named}" if named else "") + unexplained(change.delta, moved)
            return self.more("graph breaks", "", change.before, change.after, settings, said)
        if change.delta == 0 and change.changes:
            return noted(f"graph breaks unchanged in total but their reasons moved: {named}")
        if change.delta < 0:
            return self.fewer("graph breaks", change.before, change.after)
        return NOTHING

    def details(self, change: Change | None, record: Record | None) -> list[str]:
        lines = []
        if isinstance(change, GraphBreaksChange) and change.changes:
            lines.append("graph breaks that changed (baseline→measured per reason):")
            lines += [f"  {moved.describe()}" for moved in change.changes]
        graph = record.graph_breaks if record is not None else None
        if graph is not None and graph.reasons:
            lines.append(
                f"graph breaks measured: {graph.breaks} ({graph.graphs} graphs); where dynamo "
                "broke, by reason (times per forward):"
            )
            lines += [
                f"  {r.count}× {r.frame} (line {r.line}): {r.reason}"
                for r in sorted(graph.reasons, key=lambda r: (-r.count, r.key))
            ]
            if missing := unexplained(graph.breaks, sum(r.count for r in graph.reasons)):
                lines.append(f"  ({missing.removeprefix('; ')})")
        return lines

    def value(self, record: Record) -> int | None:
        return None if record.graph_breaks is None else record.graph_breaks.breaks

    def text(self, value: int | float, change: Change | None) -> str:
        delta = change.delta if isinstance(change, GraphBreaksChange) else 0
        return f"{value}" + (f" ({signed(delta)})" if delta else "")

    def counts_moved(self, before: Record, after: Record) -> bool:
        then, now = before.graph_breaks, after.graph_breaks
        if then is None or now is None:
            return (then is None) != (now is None)
        return not then.same_breaks(now)

    def moved_words(self, before: Record, after: Record) -> list[str]:
        then, now = before.graph_breaks, after.graph_breaks
        if then and now and then.breaks != now.breaks:
            return [f"graph breaks {signed(now.breaks - then.breaks)}"]
        return ["graph-break reasons"] if self.counts_moved(before, after) else []


METRIC = GraphBreaks()
