"""What torch dynamo says while it compiles, read from its logs.

``torch_log`` captures one of torch's logging artifacts for a block (the ``graph_breaks`` log
is read in ``measure.graph``, the ``recompiles`` log in ``measure.compile_health``).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

#: a frame of a user stack in dynamo's logs (its graph-break log: "Graph break in user code at
#: FILE:LINE\nGraph Break Reason: ...\nUser code traceback:\n  File "...", line N, in func ...")
USER_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)$', re.M)


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
def torch_log(artifact: str) -> Iterator[LogRecords]:
    """One of torch's logging artifacts (``graph_breaks``, ``recompiles``), captured (not
    printed) while the block runs.  torch's logging is left as found: its log settings and,
    for every torch logger that existed before the block, its level, propagation, handlers
    and ``disabled``; the structured trace quiet in the block (``quiet_trace``)."""
    import copy

    import torch._logging
    import torch._logging._internal as internal

    state = copy.deepcopy(internal._get_log_state())  # type: ignore[no-untyped-call]
    kept = _torch_loggers()
    saved = {
        name: (lg.level, lg.propagate, lg.disabled, list(lg.handlers)) for name, lg in kept.items()
    }
    handler = LogRecords()
    flags: dict[str, Any] = {artifact: True}
    try:
        with quiet_trace():
            torch._logging.set_logs(**flags)  # type: ignore[attr-defined]
            loggers = [
                lg for name, lg in _torch_loggers().items() if name.endswith(f"__{artifact}")
            ]
            for logger in loggers:
                logger.addHandler(handler)
                logger.propagate = False
            try:
                yield handler
            finally:
                for logger in loggers:
                    logger.removeHandler(handler)
                torch._logging.set_logs()  # type: ignore[attr-defined]
    finally:
        internal._set_log_state(state)
        for name, (level, propagate, disabled, handlers) in saved.items():
            logger = kept[name]
            logger.setLevel(level)
            logger.propagate = propagate
            logger.disabled = disabled
            logger.handlers = handlers
