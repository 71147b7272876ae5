"""torch.compile graph breaks of a model, from ``torch._dynamo.explain``."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pytest_kerasperf.measure import dynamo
from pytest_kerasperf.measure.names import relative_path
from pytest_kerasperf.parts.graph_breaks import BreakReason, GraphRecord

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


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

    Resets dynamo's caches (``explain`` does): run it before compiling.
    """
    raw = dynamo.explain(model, args, kwargs)
    seen = [
        (
            BreakReason(
                reason=_one_line_reason(b.reason),
                frame=f"{relative_path(b.filename)}:{b.function}",
                line=b.lineno,
            ),
            1,
        )
        for b in raw.breaks
    ]
    return GraphRecord(raw.graph_count, raw.graph_break_count, _by_key(seen))


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
