"""torch.compile graph breaks of a model, from ``torch._dynamo.explain`` and dynamo's
graph-break log."""

from __future__ import annotations

import logging
import os
import re
import sysconfig
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pytest_kerasperf.measure.dynamo import USER_FRAME, torch_log
from pytest_kerasperf.measure.names import relative_path
from pytest_kerasperf.parts.graph_breaks import BreakReason, GraphRecord

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_FOLLOW_UPS = (
    "Encountered graph break when attempting to trace",
    "Failed to handle graph break gracefully",
)
_STDLIB = os.path.join(sysconfig.get_paths()["stdlib"], "")


def _one_line_reason(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "<no reason given>"
    reason = lines[0]
    for line in lines[1:]:
        if line.startswith("Explanation:"):
            explanation = line[len("Explanation:") :].strip()
            first_sentence = explanation.split(". ", 1)[0].rstrip(".")
            reason = f"{reason}: {first_sentence}"
            break
    return _ADDRESS.sub("", reason)


def _reason(text: str, filename: str, function: str, line: int) -> BreakReason:
    """One break: its reason on one line, at its frame (``file:function``)."""
    frame = f"{relative_path(filename)}:{function}"
    return BreakReason(reason=_one_line_reason(text), frame=frame, line=line)


def _break_events(records: Sequence[logging.LogRecord], torch_dir: str) -> list[BreakReason]:
    """One event per distinct (root reason, user stack) dynamo broke on.

    dynamo logs a break again at each frame it unwinds and once more when it
    gives up on the frame; those repeats share the root reason and the user
    stack, and repeats of a break already shown carry no stack at all.
    """
    events: dict[tuple[str, str], BreakReason] = {}
    for record in records:
        message = record.getMessage()
        head, _, rest = message.partition("Graph Break Reason: ")
        frames = [m for m in USER_FRAME.finditer(rest) if not m["file"].startswith(torch_dir)]
        if not rest or "suppressed" in head or not frames:
            continue
        # The frame a reviewer can act on: the deepest outside torch and the standard
        # library (a break in inspect.Signature.bind is Keras's call of it).
        own = [m for m in frames if not m["file"].startswith(_STDLIB)] or frames
        reason = rest.partition("\nUser code traceback:")[0]
        for prefix in _FOLLOW_UPS:
            if reason.startswith(prefix) and "\n\n" in reason:
                reason = reason.split("\n\n", 1)[1]
        reason = reason.split("\n\n*** While handling this graph break", 1)[0]
        frame = own[-1]
        stack = "\n".join(m.group(0) for m in frames)
        events.setdefault(
            (reason, stack), _reason(reason, frame["file"], frame["name"], int(frame["line"]))
        )
    return list(events.values())


def _by_key(pairs: Sequence[tuple[BreakReason, int]]) -> tuple[BreakReason, ...]:
    """One reason per (frame, reason), counts summed, the first line seen kept."""
    counts: Counter[tuple[str, str]] = Counter()
    lines: dict[tuple[str, str], int] = {}
    for reason, n in pairs:
        counts[reason.key] += n
        lines.setdefault(reason.key, reason.line)
    return tuple(
        BreakReason(reason=reason, frame=frame, count=n, line=lines[(frame, reason)])
        for (frame, reason), n in sorted(counts.items())
    )


def graph_breaks(model: Any, args: Sequence[object], kwargs: dict[str, object]) -> GraphRecord:
    """Graphs, breaks and, per (reason, Keras function), how many breaks it caused.

    The graphs and breaks are ``torch._dynamo.explain``'s.  The reasons come from
    dynamo's graph-break log, which has every break dynamo hit, with its user
    stack: explain's own ``break_reasons`` leave out the breaks in frames dynamo
    gave up on and ran eagerly (seen: a planted ``graph_break()`` in a layer's
    ``call`` with a numpy input: 5 breaks, no ``break_reasons``).  explain()
    resets dynamo's caches: run it before compiling.
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
                _reason(
                    str(reason.reason),
                    frame.filename if frame else "<unknown>",
                    str(frame.name) if frame else "<unknown>",
                    int(frame.lineno or 0) if frame else 0,
                )
            )
    seen = [(b, 1) for b in breaks]
    return GraphRecord(int(output.graph_count), int(output.graph_break_count), _by_key(seen))


def combine(records: Sequence[GraphRecord]) -> GraphRecord | None:
    """One record for a test that used several compiled forwards: graphs, breaks, reasons summed.

    ``explain`` says -1 breaks for a forward that made no graph (its graph count less one): such
    a forward adds no break, and the sum is -1 only where no forward made a graph, as explain
    says of one (never -2: a value the record's own bounds refuse)."""
    if not records:
        return None
    made = [r for r in records if r.graphs > 0]
    return GraphRecord(
        graphs=sum(r.graphs for r in records),
        breaks=sum(r.breaks for r in made) if made else min(min(r.breaks for r in records), 0),
        reasons=_by_key([(reason, reason.count) for r in records for reason in r.reasons]),
    )
