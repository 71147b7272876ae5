"""What a run measured, compared and could not compare: the closing line's numbers.

A gate that compares nothing must never look green, so every run accounts for
each perf test: measured and compared, measured but not compared (and why),
or not measured at all (and why); and for each baseline entry whose test no
longer exists (stale).  An entry is stale only when its test module was
collected whole and the test is not in it, selected or deselected: ``-k``,
``-m``, ``--deselect``, a node id on the command line, or a module left out
never make an entry stale (syrupy's rule for unused snapshots).

Pure functions of plain data, so every rule is unit-tested without pytest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_kerasperf.outcome import Outcome


@dataclass(frozen=True)
class Skip:
    """A perf test that was not measured."""

    key: str
    reason: str
    framework_missing: bool = False


@dataclass
class Collection:
    """Which tests this run collected, for stale-entry detection (merged across xdist workers)."""

    keys: set[str] = field(default_factory=set)  # selected and deselected
    modules: set[str] = field(default_factory=set)  # module part of each key
    partial_modules: set[str] = field(default_factory=set)  # named by node id: not collected whole

    def add(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.keys.add(key)
            self.modules.add(module_of(key))

    def merge(self, other: Collection) -> None:
        self.keys |= other.keys
        self.modules |= other.modules
        self.partial_modules |= other.partial_modules

    def to_json(self) -> dict[str, list[str]]:
        return {
            "keys": sorted(self.keys),
            "modules": sorted(self.modules),
            "partial_modules": sorted(self.partial_modules),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Sequence[str]]) -> Collection:
        return cls(set(data["keys"]), set(data["modules"]), set(data["partial_modules"]))


def module_of(key: str) -> str:
    return key.split("::", 1)[0]


def stale_entries(baseline_keys: Iterable[str], collection: Collection) -> tuple[str, ...]:
    """Entries whose module was collected whole and whose test is not in it."""
    return tuple(
        sorted(
            key
            for key in baseline_keys
            if module_of(key) in collection.modules
            and module_of(key) not in collection.partial_modules
            and key not in collection.keys
        )
    )


@dataclass(frozen=True)
class RunAccount:
    measured: int
    compared: int
    not_compared: Mapping[str, int]  # reason -> perf tests
    not_measured: Mapping[str, int]  # skip reason -> perf tests
    framework_missing: int
    stale: tuple[str, ...]
    latency_measured: int
    latency_not_measured: Mapping[str, int]  # reason -> perf tests
    latency_gated: int  # measured on an accelerator or with --kerasperf-gate-latency-on-cpu
    updating: bool = False  # --kerasperf-update-baseline: what was not compared is recorded now
    #: --kerasperf-compare-ref: perf tests compared whose latency the A/B could not judge
    ab_not_judged: int = 0
    #: --kerasperf-instructions: counted under callgrind, compared, and why not (reason -> n)
    instructions: bool = False
    instructions_counted: int = 0
    instructions_compared: int = 0
    instructions_not_compared: Mapping[str, int] = field(default_factory=dict)

    def strict_problems(self) -> list[str]:
        """What fails a --kerasperf-strict run (the tests not compared fail on their own too)."""
        problems = []
        if self.measured == 0:
            problems.append("no perf test was measured")
        not_compared = sum(self.not_compared.values())
        if not_compared and not self.updating:
            problems.append(f"{not_compared} not compared")
        if self.stale:
            problems.append(f"{len(self.stale)} stale baseline entr{_ies(len(self.stale))}")
        if self.framework_missing:
            problems.append(f"{self.framework_missing} skipped for a missing framework")
        if self.ab_not_judged:
            problems.append(f"{self.ab_not_judged} latency A/B not judged")
        if self.instructions and not self.updating:
            skipped = sum(self.instructions_not_compared.values())
            if skipped:
                problems.append(f"{skipped} instruction counts not compared")
            if self.measured and not self.instructions_counted:
                problems.append("no instructions were counted")
        return problems


def _ies(n: int) -> str:
    return "y" if n == 1 else "ies"


def account(
    outcomes: Sequence[Outcome],
    skips: Sequence[Skip],
    stale: Sequence[str],
    *,
    gate_latency_on_cpu: bool,
    updating: bool = False,
    ab_not_judged: int = 0,
    instructions: bool = False,
) -> RunAccount:
    not_compared: Counter[str] = Counter()
    latency_not_measured: Counter[str] = Counter()
    compared = latency_measured = latency_gated = counted = counts_compared = 0
    instructions_skipped: Counter[str] = Counter()
    for outcome in outcomes:
        if outcome.record.instructions is not None:
            counted += 1
            if outcome.verdict.instructions_delta_pct is not None:
                counts_compared += 1
            else:
                why = outcome.verdict.instructions_not_compared or "not compared"
                instructions_skipped[why] += 1
        if outcome.verdict.compared:
            compared += 1
        else:
            not_compared[str(outcome.verdict.not_compared)] += 1
        latency = outcome.record.latency
        if latency is None:
            latency_not_measured[outcome.latency_not_measured or "not measured"] += 1
        else:
            latency_measured += 1
            latency_gated += bool(latency.accelerator or gate_latency_on_cpu)
    return RunAccount(
        measured=len(outcomes),
        compared=compared,
        not_compared=dict(sorted(not_compared.items())),
        not_measured=dict(sorted(Counter(skip.reason for skip in skips).items())),
        framework_missing=sum(skip.framework_missing for skip in skips),
        stale=tuple(stale),
        latency_measured=latency_measured,
        latency_not_measured=dict(sorted(latency_not_measured.items())),
        latency_gated=latency_gated,
        updating=updating,
        ab_not_judged=ab_not_judged,
        instructions=instructions,
        instructions_counted=counted,
        instructions_compared=counts_compared,
        instructions_not_compared=dict(sorted(instructions_skipped.items())),
    )
