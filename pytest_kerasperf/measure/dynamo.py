"""What torch dynamo says while it compiles, read from its logs.

``torch_log`` captures one of torch's logging artifacts for a block;
``explain`` runs ``torch._dynamo.explain`` and takes each graph break's reason
and user frame from the ``graph_breaks`` log (explain's own ``break_reasons``
leave some out).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawGraphBreak:
    reason: str
    filename: str
    function: str
    lineno: int


@dataclass(frozen=True)
class RawExplain:
    graph_count: int
    graph_break_count: int
    breaks: tuple[RawGraphBreak, ...]


#: dynamo's graph-break log: "Graph break in user code at FILE:LINE\nGraph Break Reason: ...\n
#: User code traceback:\n  File "...", line N, in func ...".
_USER_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)$', re.M)


@functools.cache
def _stdlib() -> str:
    return os.path.join(sysconfig.get_paths()["stdlib"], "")


_FOLLOW_UPS = (
    "Encountered graph break when attempting to trace",
    "Failed to handle graph break gracefully",
)


class LogRecords(logging.Handler):
    """A handler that keeps the records it gets, for reading after the block."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


#: dynamo's structured trace (tlparse's input): it logs at DEBUG whenever it has a handler.
TRACE_LOGGER = "torch.__trace"


def _torch_loggers() -> dict[str, logging.Logger]:
    return {
        name: logger
        for name, logger in list(logging.root.manager.loggerDict.items())
        if name.startswith("torch") and isinstance(logger, logging.Logger)
    }


@contextlib.contextmanager
def quiet_trace() -> Iterator[None]:
    """dynamo's structured trace kept from handlers not torch's own while the block runs.

    pytest attaches its log capture to every non-propagating logger, torch's
    trace among them, and the trace then logs every compile step at DEBUG:
    thousands of lines in a failure's "Captured log" section.  torch's own
    handler (``TORCH_TRACE``) stays.
    """
    trace = logging.getLogger(TRACE_LOGGER)
    saved = list(trace.handlers)
    for handler in saved:
        if not type(handler).__module__.startswith("torch"):
            trace.removeHandler(handler)
    try:
        yield
    finally:
        trace.handlers = [h for h in trace.handlers if h not in saved] + saved


@contextlib.contextmanager
def torch_logging_kept() -> Iterator[None]:
    """torch's logging left as found: its log settings and, for every torch logger that
    existed before the block, its level, propagation, handlers and ``disabled``; the
    structured trace quiet in the block (``quiet_trace``)."""
    import copy

    import torch._logging._internal as internal

    state = copy.deepcopy(internal._get_log_state())  # type: ignore[no-untyped-call]
    loggers = _torch_loggers()
    saved = {
        name: (lg.level, lg.propagate, lg.disabled, list(lg.handlers))
        for name, lg in loggers.items()
    }
    try:
        with quiet_trace():
            yield
    finally:
        internal._set_log_state(state)
        for name, (level, propagate, disabled, handlers) in saved.items():
            logger = loggers[name]
            logger.setLevel(level)
            logger.propagate = propagate
            logger.disabled = disabled
            logger.handlers = handlers


@contextlib.contextmanager
def torch_log(artifact: str) -> Iterator[LogRecords]:
    """One of torch's logging artifacts (``graph_breaks``, ``recompiles``), captured (not
    printed) while the block runs; torch's logging is left as found (``torch_logging_kept``)."""
    import torch._logging

    handler = LogRecords()
    flags: dict[str, Any] = {artifact: True}
    with torch_logging_kept():
        torch._logging.set_logs(**flags)  # type: ignore[attr-defined]
        loggers = [lg for name, lg in _torch_loggers().items() if name.endswith(f"__{artifact}")]
        for logger in loggers:
            logger.addHandler(handler)
            logger.propagate = False
        try:
            yield handler
        finally:
            for logger in loggers:
                logger.removeHandler(handler)
            torch._logging.set_logs()  # type: ignore[attr-defined]


def _break_events(records: Sequence[logging.LogRecord], torch_dir: str) -> list[RawGraphBreak]:
    """One event per distinct (root reason, user stack) dynamo broke on.

    dynamo logs a break again at each frame it unwinds and once more when it
    gives up on the frame; those repeats share the root reason and the user
    stack, and repeats of a break already shown carry no stack at all.
    """
    events: dict[tuple[str, str], RawGraphBreak] = {}
    for record in records:
        message = record.getMessage()
        head, _, rest = message.partition("Graph Break Reason: ")
        frames = [m for m in _USER_FRAME.finditer(rest) if not m["file"].startswith(torch_dir)]
        if not rest or "suppressed" in head or not frames:
            continue
        # The frame a reviewer can act on: the deepest outside torch and the standard
        # library (a break in inspect.Signature.bind is Keras's call of it).
        own = [m for m in frames if not m["file"].startswith(_stdlib())] or frames
        reason = rest.partition("\nUser code traceback:")[0]
        for prefix in _FOLLOW_UPS:
            if reason.startswith(prefix) and "\n\n" in reason:
                reason = reason.split("\n\n", 1)[1]
        reason = reason.split("\n\n*** While handling this graph break", 1)[0]
        frame = own[-1]
        stack = "\n".join(m.group(0) for m in frames)
        events.setdefault(
            (reason, stack),
            RawGraphBreak(reason, frame["file"], frame["name"], int(frame["line"])),
        )
    return list(events.values())


def explain(model: Any, args: Sequence[object], kwargs: dict[str, object]) -> RawExplain:
    """Run ``torch._dynamo.explain`` on the eager model: graphs, breaks, and why.

    ``graph_count`` and ``graph_break_count`` are explain's.  The reasons come
    from dynamo's graph-break log, which has every break dynamo hit, with its
    user stack: explain's own ``break_reasons`` leave out the breaks in frames
    dynamo gave up on and ran eagerly (seen: a planted ``graph_break()`` in a
    layer's ``call`` with a numpy input: 5 breaks, no ``break_reasons``).
    explain() resets dynamo's caches, so callers run it before compiling.
    """
    import torch
    import torch._dynamo

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    with torch_log("graph_breaks") as log:
        output = torch._dynamo.explain(model)(*args, **kwargs)
    breaks = _break_events(log.records, torch_dir)
    if not breaks:  # a torch whose log says nothing: explain's own reasons
        for reason in output.break_reasons:
            stack = list(reason.user_stack or ())
            # The user frame is the deepest one outside torch itself (dynamo's
            # polyfills sit below Keras's frame in the stack).
            outside_torch = [f for f in stack if not f.filename.startswith(torch_dir)]
            frame = (outside_torch or stack)[-1] if stack else None
            breaks.append(
                RawGraphBreak(
                    reason=str(reason.reason),
                    filename=frame.filename if frame else "<unknown>",
                    function=str(frame.name) if frame else "<unknown>",
                    lineno=int(frame.lineno or 0) if frame else 0,
                )
            )
    return RawExplain(
        graph_count=int(output.graph_count),
        graph_break_count=int(output.graph_break_count),
        breaks=tuple(breaks),
    )
