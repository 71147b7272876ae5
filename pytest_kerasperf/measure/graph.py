"""torch.compile graph breaks of a model, from ``torch._dynamo.explain``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pytest_kerasperf import backends
from pytest_kerasperf.measure.names import relative_path
from pytest_kerasperf.record import BreakReason, GraphRecord

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _one_line_reason(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "<no reason given>"
    reason = lines[0]
    for line in lines[1:]:
        if line.startswith("Explanation:"):
            reason = f"{reason}: {line[len('Explanation:') :].strip()}"
            break
    return _ADDRESS.sub("", reason)


def _user_frame(filename: str, lineno: int) -> str:
    return f"{relative_path(filename)}:{lineno}"


def graph_breaks(model: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> GraphRecord:
    """Graphs, breaks and each break's reason for one forward of ``model``.

    Resets dynamo's caches (``explain`` does): run it before compiling.
    """
    raw = backends.explain(model, args, kwargs)
    reasons = {
        BreakReason(_one_line_reason(b.reason), _user_frame(b.filename, b.lineno))
        for b in raw.breaks
    }
    return GraphRecord(raw.graph_count, raw.graph_break_count, tuple(sorted(reasons)))
