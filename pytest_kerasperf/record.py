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


@dataclass(frozen=True, order=True)
class BreakReason:
    reason: str
    frame: str

    def to_json(self) -> dict[str, str]:
        return {"frame": self.frame, "reason": self.reason}


@dataclass(frozen=True)
class GraphRecord:
    graphs: int
    breaks: int
    reasons: tuple[BreakReason, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "breaks": self.breaks,
            "graphs": self.graphs,
            "reasons": [r.to_json() for r in self.reasons],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GraphRecord:
        return cls(
            graphs=int(data["graphs"]),
            breaks=int(data["breaks"]),
            reasons=tuple(BreakReason(r["reason"], r["frame"]) for r in data.get("reasons", ())),
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
class Record:
    """Everything measured for one test, and where it was measured."""

    backend: str
    mode: str
    calls: int
    calls_by_function: Mapping[str, int]
    graph_breaks: GraphRecord | None
    latency: LatencyRecord | None
    environment: Mapping[str, str | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "calls": self.calls,
            "calls_by_function": dict(sorted(self.calls_by_function.items())),
            "environment": dict(sorted(self.environment.items())),
            "graph_breaks": self.graph_breaks.to_json() if self.graph_breaks else None,
            "latency_ms": self.latency.to_json() if self.latency else None,
            "mode": self.mode,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        graph = data.get("graph_breaks")
        latency = data.get("latency_ms")
        return cls(
            backend=str(data["backend"]),
            mode=str(data["mode"]),
            calls=int(data["calls"]),
            calls_by_function={str(k): int(v) for k, v in data["calls_by_function"].items()},
            graph_breaks=GraphRecord.from_json(graph) if graph is not None else None,
            latency=LatencyRecord.from_json(latency) if latency is not None else None,
            environment=dict(data.get("environment", {})),
        )


BudgetKind = Literal["calls", "graph_breaks", "latency"]


@dataclass(frozen=True)
class Budget:
    """A limit a marker puts on one metric (``function`` only for calls)."""

    kind: BudgetKind
    limit: float
    function: str | None = None

    def describe(self) -> str:
        if self.kind == "calls":
            extra = f", function={self.function!r}" if self.function else ""
            return f"max_calls({int(self.limit):,}{extra})"
        if self.kind == "graph_breaks":
            return f"max_graph_breaks({int(self.limit)})"
        return f"max_latency({self.limit:g} ms)"
