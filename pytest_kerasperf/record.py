"""A record: everything measured for one test, and where it was measured.

One typed shape (a ``msgspec.Struct``; its JSON codec and schema generated), a committed
baseline entry's and a measured record's.  Every record holds the summary of its call profile
(``calls_by_package``, ``functions``, ``profile_sha256``), computed once when it is made; a
measured record also holds the whole profile (``calls_by_function``, ``call_edges``), which a
baseline entry leaves out (``compact()``).  Each metric's part is its own type, under ``parts/``.
"""

from __future__ import annotations

import functools
from typing import Annotated

import msgspec

from pytest_kerasperf.budget import BACKENDS, MODES, Budget
from pytest_kerasperf.codec import Count, to_data
from pytest_kerasperf.parts.calls import ProfileSummary, plain_edges, profile_digest
from pytest_kerasperf.parts.graph_breaks import BreakReason, GraphRecord
from pytest_kerasperf.parts.instructions import InstructionsRecord
from pytest_kerasperf.parts.latency import LATENCY_DECIMALS, LatencyRecord
from pytest_kerasperf.parts.overhead import PlainTwinRecord
from pytest_kerasperf.untrusted import UNPRINTABLE

__all__ = [
    "BACKENDS",
    "LATENCY_DECIMALS",
    "MODES",
    "BreakReason",
    "Budget",
    "Count",
    "GraphRecord",
    "InstructionsRecord",
    "LatencyRecord",
    "PlainTwinRecord",
    "ProfileSummary",
    "Record",
    "profile_digest",
    "record_data",
    "test_key",
]

#: a Keras backend's name, and a mode (checked where a record is read from a file)
Backend = Annotated[str, msgspec.Meta(pattern=f"^({'|'.join(BACKENDS)})$")]
Mode = Annotated[str, msgspec.Meta(pattern=f"^({'|'.join(MODES)})$")]
#: One line of text, no control character (Cc) or bidirectional control (a node id, a test
#: key's parts).
_LINE = f"[^{UNPRINTABLE}]"
NodeId = Annotated[str, msgspec.Meta(pattern=f"^{_LINE}+$", max_length=2000)]
Key = Annotated[str, msgspec.Meta(pattern=f"^{_LINE}+::{_LINE}+$", max_length=1000)]
VARIANT_PATTERN = r"^py[0-9]+\.[0-9]+-[a-z0-9]+(-[a-z0-9]+)*$"
Variant = Annotated[str, msgspec.Meta(pattern=VARIANT_PATTERN)]


def test_key(nodeid: str) -> str:
    """The node id without the file's directory, so moving the suite keeps its baselines."""
    path, sep, rest = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}{sep}{rest}"


class Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True, dict=True):
    """Everything measured for one test, and where it was measured.

    ``recompiles``: compile events per workload call after warm-up (torch
    dynamo graph compiles, ``jax.jit`` traces, ``tf.function`` traces), None
    where nothing compiles; ``gave_up``: the frames torch dynamo stopped
    compiling during the test's calls, from the first (its recompile limit:
    ``measure.compile_health``).  ``plain_twin`` (``reference`` in JSON, kept for
    files already written): the workload's plain twin, when the test named
    one.  ``instructions``: counted under callgrind, when asked;
    ``instructions_elsewhere``: an entry's counts under other valgrinds or CPU
    models (a count is compared only with one taken under the same tool).
    """

    backend: Backend
    mode: Mode
    calls: Count
    # the whole call profile, where measured (a baseline entry leaves it out)
    calls_by_function: dict[str, Count] = {}
    graph_breaks: GraphRecord | None = None
    latency: LatencyRecord | None = msgspec.field(default=None, name="latency_ms")
    environment: dict[str, str | None] = {}
    call_edges: dict[str, dict[str, Count]] = {}
    recompiles: Count | None = None
    plain_twin: PlainTwinRecord | None = msgspec.field(default=None, name="reference")
    recompile_causes: tuple[str, ...] = ()  # "3× jax.jit traced <lambda>", most frequent first
    # the summary of the call profile (what an entry keeps); computed when not given
    calls_by_package: dict[str, Count] = {}
    functions: dict[str, dict[str, tuple[Count, Count]]] = {}
    profile_sha256: str = ""
    instructions: InstructionsRecord | None = None
    instructions_elsewhere: tuple[InstructionsRecord, ...] = ()
    # frames a compiler gave up on during the test's calls (torch dynamo's recompile limit)
    gave_up: tuple[str, ...] = ()
    # an entry of a census table (``baseline_table``): totals and the digest, no functions
    totals_only: bool = False

    def __post_init__(self) -> None:
        if self.calls_by_function or not self.profile_sha256:
            # the summary is always the whole profile's, where the record holds it
            if not isinstance(self.calls_by_function, dict) or not isinstance(
                self.call_edges, dict
            ):
                # made from a measurement's read-only mappings: kept as plain sorted dicts
                msgspec.structs.force_setattr(
                    self, "calls_by_function", dict(sorted(self.calls_by_function.items()))
                )
                msgspec.structs.force_setattr(self, "call_edges", plain_edges(self.call_edges))
            summary = ProfileSummary.of(self.calls_by_function, self.call_edges)
            msgspec.structs.force_setattr(self, "calls_by_package", dict(summary.outside))
            msgspec.structs.force_setattr(self, "functions", summary.grouped())
            msgspec.structs.force_setattr(self, "profile_sha256", summary.sha256)

    def count_problem(self) -> str | None:
        """What a record read from a file must satisfy and its types cannot say: its parts add
        up to ``calls`` (checked where files are read: ``baseline``, ``results_file``); a
        totals-only entry holds no parts to add up."""
        if self.totals_only:
            if self.calls_by_function or self.functions or self.calls_by_package:
                return "a totals-only entry holds calls and its digest, not its functions"
            return None
        if self.calls_by_function and sum(self.calls_by_function.values()) != self.calls:
            # the whole profile, where held: its summary is made from it
            return (
                f"calls {self.calls:,} but calls_by_function adds up to "
                f"{sum(self.calls_by_function.values()):,}"
            )
        summed = sum(calls for f in self.functions.values() for calls, _ in f.values())
        summed += sum(self.calls_by_package.values())
        if summed != self.calls:
            return f"calls {self.calls:,} but its functions add up to {summed:,}"
        return None

    # ------------------------------------------------------------- the profile

    @functools.cached_property
    def _summary(self) -> ProfileSummary:
        return ProfileSummary.from_grouped(
            self.functions, self.calls_by_package, self.profile_sha256
        )

    def profile(self) -> ProfileSummary:
        """The summary of the call profile (what a baseline entry keeps)."""
        return self._summary

    @property
    def is_compact(self) -> bool:
        """A baseline entry: the profile's summary, not every function and edge."""
        return not self.calls_by_function

    def compact(self) -> Record:
        """The form a baseline entry commits: the profile's summary, no plain twin."""
        return msgspec.structs.replace(self, calls_by_function={}, call_edges={}, plain_twin=None)

    def totals(self) -> Record:
        """The form a census table entry keeps (``baseline_table``): the counts in total and
        the profile's digest, no function, no package total, no latency, no plain twin."""
        return msgspec.structs.replace(
            self.compact(),
            calls_by_package={},
            functions={},
            profile_sha256=self.profile().sha256,
            latency=None,
            totals_only=True,
        )

    # ------------------------------------------------------------ instructions

    def instructions_under(self, tool: str) -> InstructionsRecord | None:
        """The count this record holds for ``tool`` (valgrind and CPU model), or None."""
        return next(
            (counted for counted in self.instruction_counts() if counted.tool == tool), None
        )

    def instruction_counts(self) -> tuple[InstructionsRecord, ...]:
        """Every count this record holds, the one recorded last first."""
        return (*([self.instructions] if self.instructions else []), *self.instructions_elsewhere)

    @property
    def calls_overhead(self) -> float | None:
        """Keras calls / plain-framework calls per workload call (``overhead``)."""
        twin = self.plain_twin
        if twin is None or twin.calls <= 0:
            return None
        return self.calls / twin.calls

    @property
    def latency_overhead(self) -> float | None:
        """Keras median latency / plain-framework median latency, same process and run."""
        ref = self.plain_twin.latency if self.plain_twin else None
        if self.latency is None or ref is None or ref.median_ms <= 0:
            return None
        return self.latency.median_ms / ref.median_ms


def record_data(record: Record, whole: bool | None = None) -> dict[str, object]:
    """A record as JSON data, in one of its two file forms: a baseline entry's keeps the
    profile's summary; the whole form (a results file's) the whole profile, the summary made
    again when read.  ``whole`` says which (None: the whole form where the record holds a whole
    profile); a form is chosen per file, not per type, so it is no option of the Struct's.
    Read either form back with ``msgspec.convert(data, Record)``.
    """
    data: dict[str, object] = to_data(record)
    if whole is None:
        whole = not record.is_compact
    leave_out = ["calls_by_package", "functions", "profile_sha256"]
    if not whole:
        leave_out = ["calls_by_function", "call_edges"]
    # only where measured (or a table's): entries of old keep their bytes
    optional = ("instructions", "instructions_elsewhere", "gave_up", "totals_only")
    leave_out += [name for name in optional if not getattr(record, name)]
    for name in leave_out:
        data.pop(name, None)
    if whole:  # an empty profile (a jitted workload's 0 calls) is still the whole form
        data.setdefault("calls_by_function", {})
        data.setdefault("call_edges", {})
    return data
