"""What a verdict, a baseline update and the run's account are made under, and the defaults of
the gate's tolerances, written once: the options' defaults, ``kerasperf accept`` and the
judging all read them here.

Light (a dataclass, nothing of ours): the options module that every pytest process loads
names these defaults, and the metrics that judge under a ``Settings`` stand above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: The default relative tolerance of a latency (``--kerasperf-latency-tolerance``): 0.10 fails
#: a median 10 % above the baseline entry.
LATENCY_TOLERANCE = 0.10
#: The default tolerance of an instruction count (``--kerasperf-instructions-tolerance``) and
#: absolute floor (``--kerasperf-instructions-floor``): a count moves only by more than
#: ``max(tolerance * recorded, floor)``; both set by experiment (docs/instructions.md).
INSTRUCTIONS_TOLERANCE = 0.001
INSTRUCTIONS_FLOOR = 100_000

Environment = Mapping[str, str | None]
#: (baseline environment, measured environment) -> "field old -> new" per differing field.
Mismatch = Callable[[Environment, Environment], tuple[str, ...]]


def _no_mismatch(baseline: Environment, measured: Environment) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Settings:
    """What a verdict, a baseline update and the run's account are made under (one build:
    ``Settings.of``)."""

    #: count-relevant fields that differ between two environments
    mismatch: Mismatch = _no_mismatch
    latency_tolerance: float = LATENCY_TOLERANCE  # relative: 0.10 fails a median 10% above
    #: relative: a count of instructions this far above the baseline entry's fails
    instructions_tolerance: float = INSTRUCTIONS_TOLERANCE
    #: absolute: a count moves only by more than max(tolerance * entry, floor) instructions
    instructions_floor: int = INSTRUCTIONS_FLOOR
    gate_latency_on_cpu: bool = False
    instructions: bool = False  # --kerasperf-instructions: this run counts instructions
    updating: bool = False  # --kerasperf-update-baseline: the baseline is being replaced
    strict: bool = False  # --kerasperf-strict: not comparing is a failure
    against: str = "baseline"  # what the counts are compared with, in failure lines ("REF")
    variant: str | None = None  # the baseline variant the run's records belong to
    recorded_variants: tuple[str, ...] = ()  # the variants with entries, for "no baseline" lines
    #: the pinned perf environment file (ini kerasperf_requirements), named on a mismatch
    requirements: str | None = None
    #: the one command that re-records every perf test of the run's selection
    rerecord_all: str | None = None
    #: why there is nothing to compare with, when that is not "no baseline entry" (REF)
    missing: str | None = None
    #: --kerasperf-ratchet: a win not recorded in the baseline entry fails the test
    ratchet: bool = False
    #: the command that records this test's entry (named by a win not recorded)
    record_win: str | None = None
    #: the results file of this job, for ``kerasperf accept`` (named by a win not recorded)
    accept_from: str | None = None
    #: the test's name, for the ``-k`` of a command that names it (a census table's failure)
    test: str | None = None
