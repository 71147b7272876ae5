"""The shared vocabulary: plain records of what was measured and what was asked.

A Record is what a baseline entry holds and what a run produces; a Budget is
what a marker asks for.  This module imports nothing of ours, so measuring,
judging and reporting can all speak it without importing each other.
"""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_kerasperf.budget import BACKENDS, MODES, Budget, BudgetKind

__all__ = ["BACKENDS", "MODES", "Budget", "BudgetKind", "Record"]

LATENCY_DECIMALS = 3  # milliseconds in baselines: microsecond resolution

#: caller -> callee -> number of calls (cProfile's caller/callee edges).
CallEdges = Mapping[str, Mapping[str, int]]
#: Where Keras's own functions live in profiled names (``keras/src/ops/core.py:cond``).
KERAS_PREFIX = "keras/"
#: The bucket of C functions that belong to no package (``isinstance``, ``list.append``).
BUILTINS = "builtins"


def test_key(nodeid: str) -> str:
    """The node id without the file's directory, so moving the suite keeps its baselines."""
    path, sep, rest = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}{sep}{rest}"


def is_detailed(name: str) -> bool:
    """Is ``name`` a function a baseline entry keeps by itself (``ProfileSummary.functions``)?

    Keras's Python functions (``keras/src/layers/layer.py:Layer.__call__``), and
    those of a test module outside any package (``test_perf.py:work``): the code
    a reviewer acts on.  Everything else is totalled by package.
    """
    if ":" not in name or name.startswith("<"):
        return False
    path = name.split(":", 1)[0]
    if path.startswith(KERAS_PREFIX):
        return True
    return "/" not in path and path.removesuffix(".py") not in sys.stdlib_module_names


def package_of(name: str) -> str:
    """The bucket a profiled function's calls go to in the outside-Keras totals.

    Python functions (``path:qualname``) go to their top-level package
    (``torch/nn/modules/module.py:Module._call_impl`` -> ``torch``), C functions
    (dotted) to their module's (``torch._C._nn.linear`` -> ``torch``).  Python's
    builtins and their types' methods (``isinstance``, ``list.append``) are
    ``builtins``; the standard library, frozen or not, ``stdlib``; generated code
    ``<string>`` (dataclass methods, dynamo's guards) and ``<hash>`` (torch
    inductor's kernels); anything else unnamed ``other``.
    """
    if name.startswith("<frozen"):
        return STDLIB
    if name.startswith(("<string>", "<hash>")):
        return name[: name.index(">") + 1]
    if name.startswith("<"):  # a C function shown by its repr: <jaxlib.utils.safe_map>
        inner = name.strip("<>")
        if inner.startswith("function "):
            return OTHER
        return _module_bucket(inner.split(".", 1)[0]) if "." in inner else OTHER
    if ":" in name:
        path = name.split(":", 1)[0]
        top = path.split("/", 1)[0].removesuffix(".py")
        return STDLIB if top in sys.stdlib_module_names else top
    if "." not in name:
        return BUILTINS
    return _module_bucket(name.split(".", 1)[0])


STDLIB = "stdlib"
OTHER = "other"
_BUILTIN_NAMES = frozenset(dir(builtins)) | {
    t.__name__ for t in vars(types).values() if isinstance(t, type)
}


def _module_bucket(head: str) -> str:
    if head in _BUILTIN_NAMES:
        return BUILTINS
    if head in sys.stdlib_module_names:
        return STDLIB
    return head


def profile_digest(calls_by_function: Mapping[str, int], call_edges: CallEdges) -> str:
    """sha256 of a profile's every function count and caller -> callee edge, canonical JSON."""
    import hashlib
    import json

    data = {
        "call_edges": _plain_edges(call_edges),
        "calls_by_function": {k: int(v) for k, v in sorted(calls_by_function.items())},
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ProfileSummary:
    """What a committed baseline entry keeps of a call profile (docs/baselines.md).

    ``functions``: each Keras function's calls, and the calls it makes itself
    (the sum of its caller -> callee edges), and the same for the functions of
    a test module outside any package (``is_detailed``); ``outside``: every
    other call, totalled by top-level package (``package_of``); ``sha256``: the
    digest of the whole profile, every function and edge, so that a change
    anywhere is seen even where the totals stay the same.  ``calls`` equals the
    sum of ``functions`` calls and ``outside``.
    """

    functions: Mapping[str, tuple[int, int]]  # function -> (calls, calls it makes)
    outside: Mapping[str, int]  # package -> calls
    sha256: str

    @classmethod
    def of(cls, calls_by_function: Mapping[str, int], call_edges: CallEdges) -> ProfileSummary:
        functions: dict[str, tuple[int, int]] = {}
        outside: dict[str, int] = {}
        for name, count in calls_by_function.items():
            if is_detailed(name):
                made = sum(int(n) for n in call_edges.get(name, {}).values())
                functions[name] = (int(count), made)
            else:
                package = package_of(name)
                outside[package] = outside.get(package, 0) + int(count)
        return cls(
            functions=dict(sorted(functions.items())),
            outside=dict(sorted(outside.items())),
            sha256=profile_digest(calls_by_function, call_edges),
        )

    @property
    def calls(self) -> int:
        return sum(calls for calls, _ in self.functions.values()) + sum(self.outside.values())

    def to_json(self) -> dict[str, Any]:
        """Functions grouped by file (``{"keras/src/layers/layer.py": {"Layer.__call__":
        [7, 91]}}``): a diff of a baseline file then names the file once."""
        grouped: dict[str, dict[str, list[int]]] = {}
        for name, (calls, made) in sorted(self.functions.items()):
            path, qualname = name.split(":", 1)
            grouped.setdefault(path, {})[qualname] = [calls, made]
        return {
            "calls_by_package": dict(sorted(self.outside.items())),
            "functions": grouped,
            "profile_sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProfileSummary:
        functions: dict[str, tuple[int, int]] = {}
        for path, in_file in data["functions"].items():
            for qualname, (calls, made) in in_file.items():
                functions[f"{path}:{qualname}"] = (int(calls), int(made))
        return cls(
            functions=dict(sorted(functions.items())),
            outside={str(k): int(v) for k, v in sorted(data["calls_by_package"].items())},
            sha256=str(data["profile_sha256"]),
        )


@dataclass(frozen=True)
class BreakReason:
    """One reason dynamo broke a graph for, at one Keras function, and how often.

    ``count`` is how many times dynamo broke there (on distinct call paths)
    while tracing one forward, from its graph-break log.  A break is keyed by
    its reason and its frame (``file:function``), not by the line: an
    unrelated edit above it must not turn into "break gone + break new".
    ``line`` is where it was seen, for the reader.
    """

    reason: str
    frame: str  # "keras/src/layers/core/dense.py:call"
    count: int = 1
    line: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.frame, self.reason)

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "frame": self.frame, "line": self.line, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BreakReason:
        return cls(
            reason=str(data["reason"]),
            frame=str(data["frame"]),
            count=int(data["count"]),
            line=int(data.get("line", 0)),
        )


@dataclass(frozen=True)
class GraphRecord:
    graphs: int
    breaks: int
    reasons: tuple[BreakReason, ...] = ()

    def by_key(self) -> dict[tuple[str, str], BreakReason]:
        return {r.key: r for r in self.reasons}

    def same_breaks(self, other: GraphRecord) -> bool:
        """Equal graphs, breaks and (reason, frame) -> count; lines may differ."""
        mine = {k: r.count for k, r in self.by_key().items()}
        theirs = {k: r.count for k, r in other.by_key().items()}
        return (self.graphs, self.breaks, mine) == (other.graphs, other.breaks, theirs)

    def to_json(self) -> dict[str, Any]:
        return {
            "breaks": self.breaks,
            "graphs": self.graphs,
            "reasons": [r.to_json() for r in sorted(self.reasons, key=lambda r: r.key)],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GraphRecord:
        return cls(
            graphs=int(data["graphs"]),
            breaks=int(data["breaks"]),
            reasons=tuple(BreakReason.from_json(r) for r in data.get("reasons", ())),
        )


@dataclass(frozen=True)
class LatencyRecord:
    median_ms: float
    iqr_ms: float
    rounds: int
    device: str
    accelerator: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "device": self.device,
            "iqr": round(self.iqr_ms, LATENCY_DECIMALS),
            "median": round(self.median_ms, LATENCY_DECIMALS),
            "rounds": self.rounds,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LatencyRecord:
        return cls(
            median_ms=float(data["median"]),
            iqr_ms=float(data["iqr"]),
            rounds=int(data["rounds"]),
            device=str(data["device"]),
            accelerator=bool(data["accelerator"]),
        )


@dataclass(frozen=True)
class InstructionsRecord:
    """Instructions per workload call, counted under callgrind (``--kerasperf-instructions``):
    the median of ``rounds`` calls after warm-up, their range, and the valgrind that counted."""

    median: int
    low: int
    high: int
    rounds: int
    tool: str

    def to_json(self) -> dict[str, Any]:
        return {
            "high": self.high,
            "low": self.low,
            "median": self.median,
            "rounds": self.rounds,
            "tool": self.tool,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InstructionsRecord:
        return cls(
            median=int(data["median"]),
            low=int(data["low"]),
            high=int(data["high"]),
            rounds=int(data["rounds"]),
            tool=str(data["tool"]),
        )


@dataclass(frozen=True)
class PlainTwinRecord:
    """The same workload in the plain framework, without Keras, measured in the same run.

    ``framework`` is ``"torch"`` (an ``nn.Module`` under ``torch.no_grad``) or
    ``"jax"`` (``jax.numpy`` functions over a parameter pytree); ``name`` says
    which plain workload (``"plain torch LM generate 32 compiled"``).
    """

    framework: str
    name: str
    calls: int
    latency: LatencyRecord | None

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "framework": self.framework,
            "latency_ms": self.latency.to_json() if self.latency else None,
            "name": self.name,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlainTwinRecord:
        latency = data.get("latency_ms")
        return cls(
            framework=str(data["framework"]),
            name=str(data["name"]),
            calls=int(data["calls"]),
            latency=LatencyRecord.from_json(latency) if latency is not None else None,
        )


@dataclass(frozen=True)
class Record:
    """Everything measured for one test, and where it was measured.

    A measured record holds the whole call profile (``calls_by_function``,
    ``call_edges``); a committed baseline entry holds its ``summary`` instead
    (``compact()``), with both mappings empty.  ``recompiles``: compile events
    per workload call after warm-up (torch dynamo graph compiles, ``jax.jit``
    traces, ``tf.function`` traces), None where nothing compiles.
    ``plain_twin`` (``reference`` in JSON, kept for files already written): the
    workload's plain twin, when the test named one.
    """

    backend: str
    mode: str
    calls: int
    calls_by_function: Mapping[str, int]
    graph_breaks: GraphRecord | None
    latency: LatencyRecord | None
    environment: Mapping[str, str | None] = field(default_factory=dict)
    call_edges: CallEdges = field(default_factory=dict)
    recompiles: int | None = None
    plain_twin: PlainTwinRecord | None = None
    recompile_causes: tuple[str, ...] = ()  # "3× jax.jit traced <lambda>", most frequent first
    summary: ProfileSummary | None = None  # a baseline entry's profile, in place of the whole
    instructions: InstructionsRecord | None = None  # counted under callgrind, when asked
    #: a baseline entry's counts under other valgrinds or CPU models (``instructions`` is the
    #: one recorded last): a count is compared only with one taken under the same tool
    instructions_elsewhere: tuple[InstructionsRecord, ...] = ()

    def instructions_under(self, tool: str) -> InstructionsRecord | None:
        """The count this record holds for ``tool`` (valgrind and CPU model), or None."""
        for count in self.instruction_counts():
            if count.tool == tool:
                return count
        return None

    def instruction_counts(self) -> tuple[InstructionsRecord, ...]:
        """Every count this record holds, the one recorded last first."""
        return (*([self.instructions] if self.instructions else []), *self.instructions_elsewhere)

    @property
    def is_compact(self) -> bool:
        """A baseline entry: the profile's summary, not every function and edge."""
        return self.summary is not None

    def profile(self) -> ProfileSummary:
        """The summary of the call profile (computed from the whole one when measured)."""
        if self.summary is not None:
            return self.summary
        return ProfileSummary.of(self.calls_by_function, self.call_edges)

    def compact(self) -> Record:
        """The form a baseline entry commits: the profile's summary, no plain twin."""
        return replace(
            self, calls_by_function={}, call_edges={}, summary=self.profile(), plain_twin=None
        )

    @property
    def calls_overhead(self) -> float | None:
        """Keras calls / plain-framework calls per workload call."""
        if self.plain_twin is None or self.plain_twin.calls <= 0:
            return None
        return self.calls / self.plain_twin.calls

    @property
    def latency_overhead(self) -> float | None:
        """Keras median latency / plain-framework median latency, same process and run."""
        ref = self.plain_twin.latency if self.plain_twin else None
        if self.latency is None or ref is None or ref.median_ms <= 0:
            return None
        return self.latency.median_ms / ref.median_ms

    def same_counts(self, other: Record) -> bool:
        """Equal calls of every function and edge (by the profile's digest), graph breaks and
        recompiles (latency and environment aside)."""
        graphs_equal = (self.graph_breaks is None and other.graph_breaks is None) or bool(
            self.graph_breaks is not None
            and other.graph_breaks is not None
            and self.graph_breaks.same_breaks(other.graph_breaks)
        )
        return (
            self.mode == other.mode
            and self.calls == other.calls
            and self.profile() == other.profile()
            and graphs_equal
            and self.recompiles == other.recompiles
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "backend": self.backend,
            "calls": self.calls,
            "environment": dict(sorted(self.environment.items())),
            "graph_breaks": self.graph_breaks.to_json() if self.graph_breaks else None,
            "latency_ms": self.latency.to_json() if self.latency else None,
            "mode": self.mode,
            "recompile_causes": list(self.recompile_causes),
            "recompiles": self.recompiles,
            "reference": self.plain_twin.to_json() if self.plain_twin else None,
        }
        if self.instructions is not None:  # only where counted: entries of old keep their bytes
            data["instructions"] = self.instructions.to_json()
        if self.instructions_elsewhere:
            data["instructions_elsewhere"] = [c.to_json() for c in self.instructions_elsewhere]
        if self.summary is not None:
            data.update(self.summary.to_json())
        else:
            data["call_edges"] = _plain_edges(self.call_edges)
            data["calls_by_function"] = dict(sorted(self.calls_by_function.items()))
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        graph = data.get("graph_breaks")
        latency = data.get("latency_ms")
        ref = data.get("reference")
        counted = data.get("instructions")
        compact = "profile_sha256" in data
        return cls(
            backend=str(data["backend"]),
            mode=str(data["mode"]),
            calls=int(data["calls"]),
            calls_by_function={}
            if compact
            else {str(k): int(v) for k, v in data["calls_by_function"].items()},
            graph_breaks=GraphRecord.from_json(graph) if graph is not None else None,
            latency=LatencyRecord.from_json(latency) if latency is not None else None,
            environment=dict(data.get("environment", {})),
            call_edges={} if compact else _plain_edges(data.get("call_edges", {})),
            recompiles=None if data.get("recompiles") is None else int(data["recompiles"]),
            recompile_causes=tuple(str(c) for c in data.get("recompile_causes", ())),
            plain_twin=PlainTwinRecord.from_json(ref) if ref is not None else None,
            summary=ProfileSummary.from_json(data) if compact else None,
            instructions=InstructionsRecord.from_json(counted) if counted is not None else None,
            instructions_elsewhere=tuple(
                InstructionsRecord.from_json(c) for c in data.get("instructions_elsewhere", ())
            ),
        )


def _plain_edges(edges: CallEdges) -> dict[str, dict[str, int]]:
    return {
        caller: {callee: int(n) for callee, n in sorted(callees.items())}
        for caller, callees in sorted(edges.items())
    }
