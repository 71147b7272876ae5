"""Compile health: how often a compiled workload compiles again per call after warm-up,
and whether the compiler gave up on a frame.

torch dynamo graph compiles, ``jax.jit`` traces, ``tf.function`` traces
(``measure.compile_health``), counted over one unprofiled call after the
count pass, with their causes.  Exact, like graph breaks; None where nothing
compiles (eager mode, numpy).  A frame dynamo recompiled until its recompile
limit, watched from the test's first call, fails the test with or without a
``max_recompiles`` marker: it runs eagerly from then on, so "0 per call after
warm-up" would report the worst compile health as perfect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_kerasperf.budget import Budget
from pytest_kerasperf.metrics.base import (
    NOTHING,
    Change,
    Failure,
    Judgement,
    Metric,
    count,
    noted,
    scoped,
)

if TYPE_CHECKING:
    from pytest_kerasperf.measure.context import Measuring
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings


def max_recompiles(n: int, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_recompiles(n, *, backend=None, mode=None): fail if one workload call after
    warm-up compiles more than n times (torch dynamo graph compiles, jax.jit traces,
    tf.function traces of the compiled forwards); backend= / mode= limit it to that
    backend / mode."""
    return scoped("recompiles", count(n, "n"), backend, mode)


class RecompilesChange(Change, frozen=True, tag="recompiles"):
    before: int
    after: int


def _causes(measured: Record) -> str:
    if not measured.recompile_causes:
        return ""
    return f"; cause: {'; '.join(measured.recompile_causes[:2])}"


class Recompiles(
    Metric, name="recompiles", marker=max_recompiles, exact=True, change=RecompilesChange
):
    next_step = (
        "next: the recompiles' causes name the guard that failed (a shape, a Python value "
        "or an attribute set in the forward); docs/reference.md#compile-health"
    )

    def health(self, measured: Record, budgets: Sequence[Budget]) -> Judgement:
        """A frame the compiler gave up on fails the test, unless another metric counts it
        (``Metric.counts_gave_up``)."""
        if not measured.gave_up:
            return NOTHING
        from pytest_kerasperf.metrics import METRICS

        if why := next(filter(None, (m.counts_gave_up(measured) for m in METRICS)), None):
            return noted(*(f"{frame} ({why})" for frame in measured.gave_up))
        name = self.describe(budgets[0]) if budgets else "compile health"
        return Judgement(
            failures=tuple(Failure(self.name, f"{name}: {frame}") for frame in measured.gave_up)
        )

    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        if (n := measured.recompiles) is None:
            return self.not_checked(budget, "recompiles are counted in compiled mode")
        return self.over_budget(budget, n, f"{n} per call after warm-up", _causes(measured))

    def measure(self, run: Measuring) -> None:
        """One unprofiled call under the compile watcher (its listeners are Python code)."""
        watch = run.compile_watch()
        if watch is None:
            run.fields.update({"recompiles": None, "recompile_causes": ()})
            return
        with watch() as events:
            run.call()
        run.fields.update({"recompiles": events.count, "recompile_causes": events.top_causes()})

    def compare(self, before: Record, after: Record) -> RecompilesChange | None:
        if before.recompiles is None or after.recompiles is None:
            return None
        return RecompilesChange(before.recompiles, after.recompiles)

    def judge(
        self, change: Change, measured: Record, baseline: Record, settings: Settings
    ) -> Judgement:
        assert isinstance(change, RecompilesChange)
        now, then = change.after, change.before
        if now > then:
            per, said = " per call after warm-up", _causes(measured)
            return self.more("recompiles", per, then, now, settings, said)
        return self.fewer("recompiles per call", then, now) if now < then else NOTHING

    def judge_missing(self, measured: Record, baseline: Record, settings: Settings) -> Judgement:
        if measured.recompiles and baseline.recompiles is None:
            return noted(
                f"{measured.recompiles} recompiles per call after warm-up; the baseline entry "
                "has no count" + _causes(measured)
            )
        return NOTHING

    def counts_moved(self, before: Record, after: Record) -> bool:
        return before.recompiles != after.recompiles

    def moved_words(self, before: Record, after: Record) -> list[str]:
        if before.recompiles != after.recompiles:
            return [f"recompiles {before.recompiles} -> {after.recompiles}"]
        return []


METRIC = Recompiles()
