"""Compile health: how often a compiled workload compiles again after warm-up.

A generate loop that retraces every step is the JAX/TF twin of a graph break:
each call pays for tracing (and compiling) again.  Counted per backend as the
framework itself counts it:

- torch: dynamo graph compiles (``torch._dynamo.utils.counters["stats"]
  ["unique_graphs"]``, one per graph dynamo compiles, recompiles included), the
  cause from dynamo's ``recompiles`` log ("Recompiling function X ... triggered
  by the following guard failure(s)");
- jax: ``jax.jit`` traces (the ``/jax/core/compile/jaxpr_trace_duration``
  monitoring event, one per cache miss that traces), the cause the traced
  function's name;
- tensorflow: ``tf.function`` traces of the compiled forwards the test used
  (``experimental_get_tracing_count``), the cause the function's name.

``watch`` counts the events of one block.  The handle runs one extra,
unprofiled workload call inside it after the count pass (the listeners are
Python code: inside a profiled call they would add calls of ours to Keras's).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_kerasperf.backends import LogRecords

#: jax's event for one trace of a jitted function (jax/_src/dispatch.py).
JAX_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
MAX_CAUSES = 5

_RECOMPILING = re.compile(r"Recompiling function (?P<name>\S+) in (?P<where>\S+)")
_GUARD = re.compile(r"^\s*-\s*\S+:\s*(?P<guard>.+)$", re.MULTILINE)


@dataclass
class CompileEvents:
    """Compile events seen in one block, and what caused them (most frequent first)."""

    count: int = 0
    causes: Counter[str] = field(default_factory=Counter)

    def top_causes(self, limit: int = MAX_CAUSES) -> tuple[str, ...]:
        return tuple(
            f"{n}× {cause}" if n > 1 else cause for cause, n in self.causes.most_common(limit)
        )


def _relative(path: str) -> str:
    from pytest_kerasperf.measure.names import relative_path

    return relative_path(path)


@contextlib.contextmanager
def _watch_torch() -> Iterator[CompileEvents]:
    from torch._dynamo.utils import counters

    from pytest_kerasperf.backends import torch_log

    events = CompileEvents()
    with torch_log("recompiles") as log:
        before = int(counters["stats"]["unique_graphs"])
        try:
            yield events
        finally:
            events.count = int(counters["stats"]["unique_graphs"]) - before
    for record in log.records:
        message = record.getMessage()
        match = _RECOMPILING.search(message)
        if match is None:
            continue
        where = match["where"]
        file, _, line = where.rpartition(":")
        guard = _GUARD.search(message)
        events.causes[
            f"dynamo recompiled {_relative(file or where)}:{match['name']}"
            + (f" (line {line})" if line.isdigit() else "")
            + (f": guard failed: {guard['guard'].strip()}" if guard else "")
        ] += 1
    unexplained = events.count - sum(events.causes.values())
    if unexplained > 0:
        events.causes["dynamo compiled a graph it had not seen (no recompile logged)"] += (
            unexplained
        )


def _jax_miss(message: str) -> str | None:
    """One line from jax's "TRACING CACHE MISS" explanation: what changed, and where.

    ``TRACING CACHE MISS at t.py:9:11 (work):`` / ``for <lambda> defined at ...`` /
    ``all previously seen cache keys differ ...`` / ``* at x, now f32[2,4,8] and
    before f32[2,1,8]`` -> ``at x, now f32[2,4,8] and before f32[2,1,8] (called at
    t.py:9:11 (work))``: the ``*`` lines when there are any, else the reason lines.
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("TRACING CACHE MISS"):
        return None
    where = lines[0].removeprefix("TRACING CACHE MISS at").rstrip(":").strip()
    body = [line for line in lines[1:] if not line.startswith("for ")]
    starred = [line.lstrip("* ").strip() for line in body if line.startswith("*")]
    reason = "; ".join((starred or body)[:2])
    return f"{reason} (called at {_relative(where)})" if reason else f"called at {where}"


@contextlib.contextmanager
def _watch_jax() -> Iterator[CompileEvents]:
    import jax
    from jax import monitoring

    events = CompileEvents()
    traced: list[str] = []

    def on_event(event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == JAX_TRACE_EVENT:
            traced.append(str(kwargs.get("fun_name", "<unknown function>")))

    handler = LogRecords()
    logger = logging.getLogger("jax._src.interpreters.partial_eval")
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    monitoring.register_event_duration_secs_listener(on_event)
    try:
        with jax.explain_cache_misses(True):
            yield events
    finally:
        monitoring.unregister_event_duration_listener(on_event)
        logger.removeHandler(handler)
        logger.propagate = propagate
        misses = [m for m in (_jax_miss(r.getMessage()) for r in handler.records) if m]
        events.count = len(traced)
        for i, name in enumerate(traced):
            why = f": {misses[i]}" if i < len(misses) else ""
            events.causes[f"jax.jit traced {name}{why}"] += 1


@contextlib.contextmanager
def _watch_tensorflow(functions: Sequence[Any]) -> Iterator[CompileEvents]:
    events = CompileEvents()
    traced = [f for f in functions if hasattr(f, "experimental_get_tracing_count")]
    before = [int(f.experimental_get_tracing_count()) for f in traced]
    try:
        yield events
    finally:
        for function, n in zip(traced, before, strict=True):
            grew = int(function.experimental_get_tracing_count()) - n
            if grew > 0:
                events.count += grew
                python = getattr(function, "python_function", function)
                name = getattr(python, "__qualname__", repr(python))
                events.causes[f"tf.function traced {name}"] += grew


def watcher(
    backend: str, compiled: Sequence[Any]
) -> Callable[[], contextlib.AbstractContextManager[CompileEvents]] | None:
    """A ``watch()`` for the backend's compile events, or None where nothing compiles.

    ``compiled``: the compiled forwards the test used (tensorflow counts their
    traces; torch and jax count every compile in the process).
    """
    if not compiled:
        return None
    if backend == "torch":
        return _watch_torch
    if backend == "jax":
        return _watch_jax
    if backend == "tensorflow":
        return lambda: _watch_tensorflow(compiled)
    return None
