"""The shared vocabulary: plain records of what was measured and what was asked.

A Record is what a baseline entry holds and what a run produces; a Budget is
what a marker asks for.  This module imports nothing of ours, so measuring,
judging and reporting can all speak it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

LATENCY_DECIMALS = 3  # milliseconds in baselines: microsecond resolution
BACKENDS = ("torch", "jax", "tensorflow", "numpy")
MODES = ("eager", "compiled")

#: caller -> callee -> number of calls (cProfile's caller/callee edges).
CallEdges = Mapping[str, Mapping[str, int]]


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
class ReferenceRecord:
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
    def from_json(cls, data: Mapping[str, Any]) -> ReferenceRecord:
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

    ``recompiles``: compile events per workload call after warm-up (torch
    dynamo graph compiles, ``jax.jit`` traces, ``tf.function`` traces), None
    where nothing compiles.  ``reference``: the plain-framework twin of the
    workload, when the test named one.
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
    reference: ReferenceRecord | None = None
    recompile_causes: tuple[str, ...] = ()  # "3× jax.jit traced <lambda>", most frequent first

    @property
    def calls_overhead(self) -> float | None:
        """Keras calls / plain-framework calls per workload call."""
        if self.reference is None or self.reference.calls <= 0:
            return None
        return self.calls / self.reference.calls

    @property
    def latency_overhead(self) -> float | None:
        """Keras median latency / plain-framework median latency, same process and run."""
        ref = self.reference.latency if self.reference else None
        if self.latency is None or ref is None or ref.median_ms <= 0:
            return None
        return self.latency.median_ms / ref.median_ms

    def same_counts(self, other: Record) -> bool:
        """Equal calls per function, call edges and graph breaks (latency and env aside)."""
        graphs_equal = (self.graph_breaks is None and other.graph_breaks is None) or bool(
            self.graph_breaks is not None
            and other.graph_breaks is not None
            and self.graph_breaks.same_breaks(other.graph_breaks)
        )
        return (
            self.mode == other.mode
            and dict(self.calls_by_function) == dict(other.calls_by_function)
            and _plain_edges(self.call_edges) == _plain_edges(other.call_edges)
            and graphs_equal
            and self.recompiles == other.recompiles
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "call_edges": _plain_edges(self.call_edges),
            "calls": self.calls,
            "calls_by_function": dict(sorted(self.calls_by_function.items())),
            "environment": dict(sorted(self.environment.items())),
            "graph_breaks": self.graph_breaks.to_json() if self.graph_breaks else None,
            "latency_ms": self.latency.to_json() if self.latency else None,
            "mode": self.mode,
            "recompile_causes": list(self.recompile_causes),
            "recompiles": self.recompiles,
            "reference": self.reference.to_json() if self.reference else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        graph = data.get("graph_breaks")
        latency = data.get("latency_ms")
        ref = data.get("reference")
        return cls(
            backend=str(data["backend"]),
            mode=str(data["mode"]),
            calls=int(data["calls"]),
            calls_by_function={str(k): int(v) for k, v in data["calls_by_function"].items()},
            graph_breaks=GraphRecord.from_json(graph) if graph is not None else None,
            latency=LatencyRecord.from_json(latency) if latency is not None else None,
            environment=dict(data.get("environment", {})),
            call_edges=_plain_edges(data.get("call_edges", {})),
            recompiles=None if data.get("recompiles") is None else int(data["recompiles"]),
            recompile_causes=tuple(str(c) for c in data.get("recompile_causes", ())),
            reference=ReferenceRecord.from_json(ref) if ref is not None else None,
        )


def _plain_edges(edges: CallEdges) -> dict[str, dict[str, int]]:
    return {
        caller: {callee: int(n) for callee, n in sorted(callees.items())}
        for caller, callees in sorted(edges.items())
    }


BudgetKind = Literal["calls", "graph_breaks", "latency", "overhead", "recompiles"]


@dataclass(frozen=True)
class Budget:
    """A limit a marker puts on one metric, optionally scoped to a backend and a mode.

    ``function`` only for calls.  An unscoped budget applies everywhere; a
    scoped one only where its backend and mode match.
    """

    kind: BudgetKind
    limit: float
    function: str | None = None
    backend: str | None = None
    mode: str | None = None
    metric: str = "latency"  # overhead only: "latency" or "calls" (Keras / plain framework)

    def applies(self, backend: str, mode: str) -> bool:
        return self.backend in (None, backend) and self.mode in (None, mode)

    def describe(self) -> str:
        scope = "".join(
            f", {name}={value!r}"
            for name, value in (("backend", self.backend), ("mode", self.mode))
            if value is not None
        )
        if self.kind == "calls":
            extra = f", function={self.function!r}" if self.function else ""
            return f"max_calls({int(self.limit):,}{extra}{scope})"
        if self.kind == "graph_breaks":
            return f"max_graph_breaks({int(self.limit)}{scope})"
        if self.kind == "overhead":
            metric = ", metric='calls'" if self.metric == "calls" else ""
            return f"max_overhead({self.limit:g}{metric}{scope})"
        if self.kind == "recompiles":
            return f"max_recompiles({int(self.limit)}{scope})"
        return f"max_latency({self.limit:g} ms{scope})"
