"""Instructions per workload call, counted under callgrind (``--kerasperf-instructions``).

The C-level cost that call counts cannot see (a copy, another kernel).  A
count repeats only under the same valgrind on the same CPU model (its
``tool``), so an entry keeps one count per tool and a run is compared with
the count of its own tool, within a relative tolerance (docs/instructions.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from pytest_kerasperf.budget import Budget
from pytest_kerasperf.codec import Count
from pytest_kerasperf.formatting import signed
from pytest_kerasperf.metrics.base import (
    NOTHING,
    Change,
    Metric,
    MetricAccount,
    count,
    counted,
    noted,
    scoped,
)
from pytest_kerasperf.parts.instructions import InstructionsRecord

if TYPE_CHECKING:
    from pytest_kerasperf.measure.context import Measuring
    from pytest_kerasperf.metrics.base import Judged, Judgement
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings


def threshold(recorded: int, settings: Settings) -> float:
    """How far a count may move from ``recorded`` and still be unchanged."""
    return max(settings.instructions_tolerance * recorded, settings.instructions_floor)


def allowance(settings: Settings) -> str:
    """``tolerance 0.100% or 20,000 instructions``, as failure lines say it."""
    text = f"tolerance {settings.instructions_tolerance:.3%}"
    if settings.instructions_floor:
        text += f" or {settings.instructions_floor:,} instructions, the larger"
    return text


RECORD_COMMAND = "kerasperf callgrind -- pytest --kerasperf-update-baseline ..."


def max_instructions(n: int, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_instructions(n, *, backend=None, mode=None): fail if one workload call executes
    more than n instructions, counted under callgrind (--kerasperf-instructions, run as
    `kerasperf callgrind -- pytest ...`); backend= / mode= limit it to that backend / mode."""
    return scoped("instructions", count(n, "n"), backend, mode)


class InstructionsChange(Change, frozen=True, tag="instructions"):
    """The count's change in percent, or why it was not compared (``skip``)."""

    pct: float | None
    skip: str | None = None


class InstructionsAccount(MetricAccount, frozen=True, tag="instructions"):
    measured: Count  # perf tests measured in the run
    counted: Count
    compared: Count
    not_compared: dict[str, Count]  # reason -> perf tests

    def closing_line(self) -> tuple[str, bool] | None:
        line = (
            f"kerasperf instructions: {self.counted} counted under callgrind, "
            f"{self.compared} compared"
        )
        skipped = sum(self.not_compared.values())
        if skipped:
            line += f", {skipped} not compared ({counted(self.not_compared)})"
        return line, bool(skipped) or not self.counted

    def strict_problems(self, updating: bool) -> list[str]:
        if updating:
            return []
        problems = []
        skipped = sum(self.not_compared.values())
        if skipped:
            problems.append(f"{skipped} instruction counts not compared")
        if self.measured and not self.counted:
            problems.append("no instructions were counted")
        return problems


def _tool(count: InstructionsRecord) -> str:
    return count.tool


class Instructions(
    Metric,
    name="instructions",
    marker=max_instructions,
    ratchet=True,
    change=InstructionsChange,
    account=InstructionsAccount,
):
    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        if measured.instructions is None:
            why = "instructions are counted under callgrind (--kerasperf-instructions)"
            return self.not_checked(budget, why)
        median = measured.instructions.median
        return self.over_budget(budget, median, f"measured {median:,}")

    def measure(self, run: Measuring) -> None:
        """Instructions of one synced call under callgrind, when asked (else none)."""
        options = run.options
        if not options.instructions:
            return
        from pytest_kerasperf.measure.instructions import (
            InstructionsUnavailable,
            count_instructions,
        )

        try:
            counts = count_instructions(
                run.call,
                label=run.nodeid,
                warmup=options.instructions_warmup,
                rounds=options.instructions_rounds,
            )
        except InstructionsUnavailable as error:
            run.fail(f"kerasperf: {error}")
        # The same valgrind on another CPU may show the program other instructions (CPUID).
        device = run.environment().get("device") or "an unknown CPU"
        run.fields["instructions"] = InstructionsRecord(
            median=counts.median,
            low=counts.low,
            high=counts.high,
            rounds=counts.rounds,
            tool=counted_under(counts.tool, device),
        )

    def compare(self, before: Record, after: Record) -> InstructionsChange | None:
        now = after.instructions
        if now is None:
            return None
        recorded = before.instruction_counts()
        if not recorded:
            return InstructionsChange(None, "no count in the baseline entry")
        then = before.instructions_under(now.tool)
        if then is None:
            tools = ", ".join(c.tool for c in recorded)
            return InstructionsChange(None, f"counted under {tools} in the baseline entry")
        if then.median <= 0:
            return InstructionsChange(None)
        return InstructionsChange((now.median / then.median - 1) * 100)

    def judge(
        self, change: Change, measured: Record, baseline: Record, settings: Settings
    ) -> Judgement:
        assert isinstance(change, InstructionsChange)
        now = measured.instructions
        assert now is not None
        if change.pct is None:
            recorded = baseline.instruction_counts()
            if not recorded:
                return noted(
                    f"instructions not compared: {now.median:,} per call; the baseline entry has "
                    f"no count (record one with `{RECORD_COMMAND}`)"
                )
            if baseline.instructions_under(now.tool) is None:
                tools = ", ".join(c.tool for c in recorded)
                return noted(
                    f"instructions not compared: baseline counted under {tools}, this run under "
                    f"{now.tool} (record this machine's count with `{RECORD_COMMAND}`: the entry "
                    "keeps the others)"
                )
            return NOTHING
        then = baseline.instructions_under(now.tool)
        assert then is not None
        delta = measured.calls - baseline.calls
        calls = "calls unchanged" if delta == 0 else f"calls {signed(delta)}"
        line = (
            f"instructions: {now.median:,} per call, {settings.against} {then.median:,} "
            f"({change.pct:+.3f}%, {allowance(settings)}); {calls}"
        )
        limit = threshold(then.median, settings)
        if now.median - then.median > limit:
            return self.failed(line)
        if then.median - now.median > limit:
            win = f"instructions {then.median:,} → {now.median:,} ({change.pct:+.3f}%)"
            return self.won(line, win)
        return NOTHING

    def not_compared(self, measured: Record, change: Change | None) -> str | None:
        if measured.instructions is None:
            return None
        if not isinstance(change, InstructionsChange):
            return ""  # the test itself was not compared: the verdict says why
        return None if change.pct is not None else change.skip or "not compared"

    def moved(self, before: Record, after: Record, settings: Settings) -> bool:
        new = after.instructions
        if new is None:
            return False
        old = before.instructions_under(new.tool)
        if old is None or old.median <= 0:
            return True
        return abs(new.median - old.median) > threshold(old.median, settings)

    def merge(
        self, before: Record, after: Record, counts_moved: bool, settings: Settings
    ) -> Record:
        """A run that counted no instructions keeps the entry's counts where the calls did
        not move, and drops them where they did (a count of other code would mislead the
        next callgrind run).  Counting on another machine adds its count; where the calls
        moved, only the new count stays."""
        if counts_moved:
            return after
        if after.instructions is None:  # nothing counted: the entry's counts stay
            return msgspec.structs.replace(
                after,
                instructions=before.instructions,
                instructions_elsewhere=before.instructions_elsewhere,
            )
        counts = before.instruction_counts()
        if self.moved(before, after, settings):
            tool = after.instructions.tool
            counts = tuple(c for c in counts if c.tool != tool)
            if before.instructions is None or before.instructions.tool == tool:
                counts = (after.instructions, *counts)
            else:
                counts = (counts[0], *sorted((*counts[1:], after.instructions), key=_tool))
        return msgspec.structs.replace(
            after, instructions=counts[0] if counts else None, instructions_elsewhere=counts[1:]
        )

    def moved_words(self, before: Record, after: Record) -> list[str]:
        words = []
        for kept in after.instruction_counts():  # one per tool (valgrind and CPU model)
            old = before.instructions_under(kept.tool)
            if old != kept:
                was = f"{old.median:,}" if old else "-"
                words.append(f"instructions {was} -> {kept.median:,} ({kept.tool})")
        tools = {c.tool for c in after.instruction_counts()}
        dropped = [c for c in before.instruction_counts() if c.tool not in tools]
        if dropped:
            words.append(f"instructions dropped (the calls moved): {len(dropped)}")
        return words

    def account(self, outcomes: Sequence[Judged], settings: Settings) -> InstructionsAccount | None:
        if not settings.instructions:
            return None
        counted_ = compared = 0
        skipped: Counter[str] = Counter()
        for outcome in outcomes:
            if outcome.record.instructions is None:
                continue
            counted_ += 1
            why = self.not_compared(outcome.record, outcome.verdict.change(InstructionsChange))
            if why is None:
                compared += 1
            else:
                skipped[why or outcome.verdict.not_compared or "not compared"] += 1
        return InstructionsAccount(len(outcomes), counted_, compared, dict(sorted(skipped.items())))


METRIC = Instructions()


def counted_under(tool: str, device: str) -> str:
    """What a count is recorded under: the tool (``callgrind.tool_name``) on the device (the
    same valgrind on another CPU model may show the program other instructions)."""
    return f"{tool} on {device}"
