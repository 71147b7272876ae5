"""What a test's judgement says: its status, its failures (each with a kind), its notes.

Plain typed values with ``to_json``/``from_json`` for the results file; the
judging itself is ``judging.judge``, a pure function of records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pytest_kerasperf.changes import BreakChange
from pytest_kerasperf.culprits import EntryPoint
from pytest_kerasperf.explain import Explanation

__all__ = ["FAILURE_KINDS", "Failure", "FailureKind", "Settings", "Status", "Verdict"]

Status = Literal["pass", "improved", "regressed", "over-budget", "new", "mismatch"]
#: What a failure is about: the metric, or that nothing could be compared.
FailureKind = Literal[
    "calls", "graph_breaks", "recompiles", "latency", "overhead", "instructions", "not_compared"
]
FAILURE_KINDS: tuple[FailureKind, ...] = (
    "calls",
    "graph_breaks",
    "recompiles",
    "latency",
    "overhead",
    "instructions",
    "not_compared",
)
#: The default tolerance of an instruction count (``--kerasperf-instructions-tolerance``):
#: counts repeat to about 0.001 % across processes and to 0.03 % call to call, and one
#: redundant copy of a conv's input costs about 0.3 % of the torch CNN forward
#: (docs/instructions.md).
INSTRUCTIONS_TOLERANCE = 0.001
Environment = Mapping[str, str | None]
#: (baseline environment, measured environment) -> "field old -> new" per differing field.
Mismatch = Callable[[Environment, Environment], tuple[str, ...]]


def _no_mismatch(baseline: Environment, measured: Environment) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Settings:
    #: count-relevant fields that differ between two environments
    mismatch: Mismatch = _no_mismatch
    latency_tolerance: float = 0.10  # relative: 0.10 fails a median 10% above the baseline
    #: relative: a count of instructions this far above the baseline entry's fails
    instructions_tolerance: float = INSTRUCTIONS_TOLERANCE
    gate_latency_on_cpu: bool = False
    updating: bool = False  # --kerasperf-update-baseline: the baseline is being replaced
    strict: bool = False  # --kerasperf-strict: not comparing is a failure
    against: str = "baseline"  # what the counts are compared with, in failure lines ("REF")
    variant: str | None = None  # the baseline variant the run's records belong to
    recorded_variants: tuple[str, ...] = ()  # the variants with entries, for "no baseline" lines
    #: the pinned perf environment file (ini kerasperf_requirements), named on a mismatch
    requirements: str | None = None
    #: the one command that re-records every perf test of the run's selection
    rerecord_all: str | None = None


@dataclass(frozen=True)
class Failure:
    """One failing metric or budget: what it is about, and the line that says it.

    The kind, not the text, is what code looks at (a latency failure gets a
    profile); the text is for the reader.
    """

    kind: FailureKind
    text: str  # one line, without the ``kerasperf `` prefix of the report

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Verdict:
    status: Status
    failures: tuple[Failure, ...] = ()
    notes: tuple[str, ...] = ()
    compared: bool = False  # counts were compared with a baseline entry
    not_compared: str | None = None  # why not: "no baseline entry", "environment differs: ..."
    calls_delta: int | None = None
    graph_breaks_delta: int | None = None
    latency_delta_pct: float | None = None
    instructions_delta_pct: float | None = None
    #: why a counted instruction count was not compared ("no count in the baseline entry")
    instructions_not_compared: str | None = None
    entry_points: tuple[EntryPoint, ...] = ()  # where calls changed, biggest first
    #: the change of calls, exactly: own-count changes by caller, summing to calls_delta
    explanation: Explanation | None = None
    function_diff: tuple[tuple[str, int, int], ...] = ()  # (function, baseline, measured)
    break_changes: tuple[BreakChange, ...] = ()
    mismatched: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failure_lines(self) -> tuple[str, ...]:
        return tuple(failure.text for failure in self.failures)

    def failed_on(self, kind: FailureKind) -> bool:
        return any(failure.kind == kind for failure in self.failures)

    def to_json(self, passed: bool) -> dict[str, Any]:
        """The ``verdict`` of a result (schemas/results.schema.json); ``passed``: the test's
        pytest outcome after the verdict (False also when it failed on its own)."""
        return {
            "status": self.status,
            "passed": passed,
            "failures": list(self.failure_lines),
            "failure_kinds": [failure.kind for failure in self.failures],
            "notes": list(self.notes),
            "compared": self.compared,
            "not_compared": self.not_compared,
            "mismatched": list(self.mismatched),
            "calls_delta": self.calls_delta,
            "graph_breaks_delta": self.graph_breaks_delta,
            "latency_delta_pct": self.latency_delta_pct,
            "instructions_delta_pct": self.instructions_delta_pct,
            "instructions_not_compared": self.instructions_not_compared,
            "entry_points": [asdict(point) for point in self.entry_points],
            "explanation": None if self.explanation is None else self.explanation.to_json(),
            "calls_by_function_diff": [
                {"function": name, "baseline": old, "measured": new}
                for name, old, new in self.function_diff
            ],
            "graph_break_changes": [change.to_json() for change in self.break_changes],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        lines = [str(line) for line in data["failures"]]
        kinds = list(data["failure_kinds"])
        if len(kinds) != len(lines) or any(kind not in FAILURE_KINDS for kind in kinds):
            raise ValueError("failure_kinds: one known kind per failure line")
        return cls(
            status=data["status"],
            failures=tuple(Failure(kind, line) for kind, line in zip(kinds, lines, strict=True)),
            notes=tuple(str(note) for note in data["notes"]),
            compared=bool(data["compared"]),
            not_compared=data["not_compared"],
            calls_delta=data["calls_delta"],
            graph_breaks_delta=data["graph_breaks_delta"],
            latency_delta_pct=data["latency_delta_pct"],
            instructions_delta_pct=data.get("instructions_delta_pct"),
            instructions_not_compared=data.get("instructions_not_compared"),
            entry_points=tuple(EntryPoint.from_json(p) for p in data["entry_points"]),
            explanation=None
            if data.get("explanation") is None
            else Explanation.from_json(data["explanation"]),
            function_diff=tuple(
                (str(row["function"]), int(row["baseline"]), int(row["measured"]))
                for row in data["calls_by_function_diff"]
            ),
            break_changes=tuple(
                BreakChange.from_json(change) for change in data["graph_break_changes"]
            ),
            mismatched=tuple(str(field) for field in data["mismatched"]),
        )
