"""One workload being measured: what each metric's pass (``Metric.measure``) works with.

The handle makes one ``Measuring`` per perf test, runs each metric's pass over
it in the registry's order, and builds the record from ``fields``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict

import pytest

if TYPE_CHECKING:
    from pytest_kerasperf.measure.compile_health import CompileEvents
    from pytest_kerasperf.options import Options
    from pytest_kerasperf.parts.graph_breaks import GraphRecord
    from pytest_kerasperf.parts.instructions import InstructionsRecord
    from pytest_kerasperf.parts.latency import LatencyRecord
    from pytest_kerasperf.parts.overhead import PlainTwinRecord
    from pytest_kerasperf.twins import PlainWorkload

Watch = Callable[[], contextlib.AbstractContextManager["CompileEvents"]]


@dataclass(frozen=True)
class ToCompile:
    """A function a test is about to compile, as a metric's ``before_compile`` sees it.

    ``make()`` gives the function to look at and its example arguments and keywords; it is
    called only by a metric that wants them (a train step's is another model, built the same
    way, so that the measured one compiles as in a fresh process)."""

    mode: str
    make: Callable[[], tuple[Callable[..., Any], tuple[object, ...], dict[str, object]]]


class RecordFields(TypedDict, total=False):
    """The record's fields the passes measure (``record.Record`` has the same names)."""

    calls: int
    calls_by_function: dict[str, int]
    call_edges: dict[str, dict[str, int]]
    graph_breaks: GraphRecord | None
    latency: LatencyRecord | None
    recompiles: int | None
    recompile_causes: tuple[str, ...]
    instructions: InstructionsRecord
    plain_twin: PlainTwinRecord | None
    gave_up: tuple[str, ...]


@dataclass
class Measuring:
    request: pytest.FixtureRequest
    options: Options
    backend: str
    workload: Callable[[], Any]  # the workload call, arguments bound
    sync: Callable[[Any], Any]  # waits for the device: sync(workload()) is one timed call
    environment: Callable[[], dict[str, str | None]]  # this process's, captured once
    #: metric name -> what the metric took before each compile of a function this test used
    #: (``Metric.before_compile``)
    taken: Callable[[str], Sequence[object]]
    compiled: Callable[[], Sequence[Callable[..., Any]]]  # the compiled functions it used
    plain_workload: Callable[[], PlainWorkload | None]  # its plain twin, where this run wants it
    #: the record's fields each pass puts here (``calls``, ``latency``, ...)
    fields: RecordFields = field(default_factory=lambda: RecordFields())
    latency_not_measured: str | None = None  # why the timing pass did not run

    @property
    def config(self) -> pytest.Config:
        return self.request.config

    @property
    def nodeid(self) -> str:
        return str(self.request.node.nodeid)

    def call(self) -> None:
        """One synced workload call."""
        self.sync(self.workload())

    def fail(self, message: str) -> NoReturn:
        pytest.fail(message, pytrace=False)

    def compile_watch(self) -> Watch | None:
        """A context manager counting compile events, where the workload compiles (else None)."""
        from pytest_kerasperf.measure import compile_health

        return compile_health.watcher(self.backend, list(self.compiled()))

    def why_unstable(self) -> str:
        """Why counts may not repeat: the workload compiles again on every call (a retrace)."""
        watch = self.compile_watch()
        if watch is None:
            return ""
        with watch() as events:
            self.call()
        if not events.count:
            return ""
        return (
            f"; the workload compiles again on every call after warm-up ({events.count} in the "
            f"last call: {'; '.join(events.top_causes(2))}), and tracing costs move call counts"
        )
