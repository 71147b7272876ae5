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

``gave_up`` watches every call of a test, from the first: a frame torch dynamo
recompiles until it hits ``recompile_limit`` (8 in torch 2.13) runs eagerly
from then on, so the calls after warm-up compile nothing and would read as
perfect health.  dynamo says so once, in a warning ("torch._dynamo hit
config.recompile_limit (8)", the frame, the last guard that failed and the
user stack); the handler sees only that warning (no artifact log is turned
on, so the counted calls are dynamo's as in any run).  jax and tensorflow have
no such limit: they trace again on every call, and ``watch`` counts it
(docs/reference.md#compile-health).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_kerasperf.measure.dynamo import USER_FRAME, LogRecords, quiet_trace, torch_log
from pytest_kerasperf.measure.names import relative_path

#: jax's event for one trace of a jitted function (jax/_src/dispatch.py).
JAX_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
MAX_CAUSES = 5

#: dynamo's warning when a frame hits a recompile limit (torch/_dynamo/convert_frame.py).
_GAVE_UP = re.compile(
    r"hit config\.(?P<limit>\w*recompile_limit) \((?P<value>\d+)\)\s*\n"
    r"\s*function: '(?P<function>[^']+)' \((?P<where>[^)]+)\)\s*\n"
    r"\s*last reason: (?:\d+/\d+: )?(?P<reason>[^\n]*)"
)
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


@contextlib.contextmanager
def _watch_torch() -> Iterator[CompileEvents]:
    from torch._dynamo.utils import counters

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
            f"dynamo recompiled {relative_path(file or where)}:{match['name']}"
            + (f" (line {line})" if line.isdigit() else "")
            + (f": guard failed: {guard['guard'].strip()}" if guard else "")
        ] += 1
    unexplained = events.count - sum(events.causes.values())
    if unexplained > 0:
        events.causes["dynamo compiled a graph it had not seen (no recompile logged)"] += (
            unexplained
        )


@functools.cache
def _qualname(path: str, line: int, name: str) -> str:
    """``Counter.call`` for the function ``call`` at path:line, read from its source."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return name
    found = name

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                end = child.end_lineno or child.lineno
                if child.lineno <= line <= end:
                    dotted = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef) and child.name == name:
                        found = dotted
                    visit(child, f"{dotted}.")

    visit(tree, "")
    return found


def gave_up_line(message: str) -> str | None:
    """One line for dynamo's recompile-limit warning: the user's frame that kept
    recompiling, where, the guard that failed last, and how many compiles it took.

    dynamo names the frame it compiles (with traceback filtering on, Keras's
    ``error_handler``); the user's frame is the last of the warning's user stack.
    """
    match = _GAVE_UP.search(message)
    if match is None:
        return None
    frames = list(USER_FRAME.finditer(message))
    if frames:
        last = frames[-1]
        frame = _qualname(last["file"], int(last["line"]), last["name"])
        at = f"{relative_path(last['file'])}:{last['line']}"
    else:
        frame, at = match["function"], relative_path(match["where"])
    guard, _, source = match["reason"].partition("#")
    source = source.split("#", 1)[0].strip()
    said = f"guard failed: {' '.join(guard.split())}" + (f" (`{source}`)" if source else "")
    return (
        f"{frame} ({at}) recompiled until dynamo gave up: {match['value']} compiles "
        f"({match['limit']} {match['value']}), then it runs eagerly; {said}"
    )


@dataclass
class GaveUp:
    """The frames dynamo stopped compiling during a block (its ``gave_up_line``s)."""

    frames: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _gave_up_torch() -> Iterator[GaveUp]:
    found = GaveUp()
    handler = LogRecords()
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("torch._dynamo.convert_frame")
    logger.addHandler(handler)
    try:
        with quiet_trace():  # the workload's own compiles: no trace in pytest's log capture
            yield found
    finally:
        logger.removeHandler(handler)
        lines = (gave_up_line(r.getMessage()) for r in handler.records)
        found.frames.extend(dict.fromkeys(line for line in lines if line))


def gave_up_watcher(backend: str) -> Callable[[], contextlib.AbstractContextManager[GaveUp]]:
    """A ``watch()`` for frames a compiler gave up on (torch dynamo's recompile limit)."""
    if backend == "torch":
        return _gave_up_torch
    return lambda: contextlib.nullcontext(GaveUp())


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
    return f"{reason} (called at {relative_path(where)})" if reason else f"called at {where}"


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
