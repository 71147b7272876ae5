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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, TypeVar, Union

import msgspec

from pytest_kerasperf.baseline_names import module_of
from pytest_kerasperf.codec import Count
from pytest_kerasperf.formatting import plural
from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.metrics.base import MetricAccount
from pytest_kerasperf.shards import MAX_SHARDS

if TYPE_CHECKING:
    from pytest_kerasperf.outcome import Outcome
    from pytest_kerasperf.settings import Settings

    AnyAccount = MetricAccount
else:  # the tagged union of every metric's account type, for the codec
    AnyAccount = Union[tuple(m.account_type for m in METRICS if m.account_type is not None)]  # noqa: UP007

A = TypeVar("A", bound=MetricAccount)


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


ShardNumber = Annotated[int, msgspec.Meta(ge=1, le=MAX_SHARDS)]
Reason = Annotated[str, msgspec.Meta(max_length=1000)]


class ChangedAccount(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """--kerasperf-changed: the perf tests the change could move ran, the others did not."""

    run: Annotated[str, msgspec.Meta(max_length=100)]  # ``numpy``, ``jax-nnx``
    commit: Annotated[str, msgspec.Meta(max_length=40)]  # the index's commit ("": none)
    ran: Count
    not_affected: Count  # perf tests the change cannot move: not run, never passed
    functions: Count  # changed functions of keras/src
    everything: tuple[Reason, ...] = ()  # why every perf test ran (empty: a selection)


class RunAccount(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    measured: Count
    compared: Count
    not_compared: dict[str, Count]  # reason -> perf tests
    not_measured: dict[str, Count]  # skip reason -> perf tests
    framework_missing: Count
    stale: tuple[str, ...]
    updating: bool = False  # --kerasperf-update-baseline: what was not compared is recorded now
    #: --kerasperf-compare-ref: perf tests compared whose latency the A/B could not judge
    ab_not_judged: Count = 0
    #: each metric's part (``Metric.account``), in the registry's order
    metrics: tuple[AnyAccount, ...] = ()
    #: --kerasperf-shard K/N: (K, N), this run measured shard K of N (``kerasperf report
    #: --expect`` then wants every shard of the run)
    shard: tuple[ShardNumber, ShardNumber] | None = None
    changed: ChangedAccount | None = None

    def __post_init__(self) -> None:
        if self.shard is not None and self.shard[0] > self.shard[1]:
            raise ValueError(f"shard {self.shard[0]} of {self.shard[1]}: K must not exceed N")

    def metric(self, kind: type[A]) -> A | None:
        """One metric's part of the account (``account.metric(LatencyAccount)``), or None."""
        return next((part for part in self.metrics if isinstance(part, kind)), None)

    def strict_problems(self) -> list[str]:
        """What fails a --kerasperf-strict run (the tests not compared fail on their own too)."""
        problems = []
        if self.measured == 0 and not (self.changed and self.changed.not_affected):
            problems.append("no perf test was measured")
        not_compared = sum(self.not_compared.values())
        if not_compared and not self.updating:
            problems.append(f"{not_compared} not compared")
        if self.stale:
            problems.append(
                plural(len(self.stale), "stale baseline entry", "stale baseline entries")
            )
        if self.framework_missing:
            problems.append(f"{self.framework_missing} skipped for a missing framework")
        if self.ab_not_judged:
            problems.append(f"{self.ab_not_judged} latency A/B not judged")
        for part in self.metrics:
            problems += part.strict_problems(self.updating)
        return problems


def account(
    outcomes: Sequence[Outcome],
    skips: Sequence[Skip],
    stale: Sequence[str],
    settings: Settings,
    *,
    ab_not_judged: int = 0,
    shard: tuple[int, int] | None = None,
    changed: ChangedAccount | None = None,
) -> RunAccount:
    verdicts = [outcome.verdict for outcome in outcomes]
    not_compared = Counter(
        str(verdict.not_compared) for verdict in verdicts if not verdict.compared
    )
    parts = [metric.account(outcomes, settings) for metric in METRICS]
    return RunAccount(
        measured=len(outcomes),
        compared=sum(verdict.compared for verdict in verdicts),
        not_compared=dict(sorted(not_compared.items())),
        not_measured=dict(sorted(Counter(skip.reason for skip in skips).items())),
        framework_missing=sum(skip.framework_missing for skip in skips),
        stale=tuple(stale),
        updating=settings.updating,
        ab_not_judged=ab_not_judged,
        metrics=tuple(part for part in parts if part is not None),
        shard=shard,
        changed=changed,
    )
