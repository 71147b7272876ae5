"""The graph-breaks metric's part of a record: the graphs and breaks of the compiled forwards
a test used, each break by its reason and its Keras frame (``torch._dynamo.explain``)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from pytest_kerasperf.codec import MAX_COUNT, Count


class BreakReason(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
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


#: Graph breaks: torch's explain says -1 where it made no graph (``graphs`` 0), and entries
#: keep it; never less.
Breaks = Annotated[int, msgspec.Meta(ge=-1, le=MAX_COUNT)]


class GraphRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Graphs, breaks and the reasons of the compiled forwards (reasons sorted by key)."""

    graphs: Count
    breaks: Breaks
    reasons: tuple[BreakReason, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.reasons, key=lambda r: r.key))
        if ordered != self.reasons:
            msgspec.structs.force_setattr(self, "reasons", ordered)

    def by_key(self) -> dict[tuple[str, str], BreakReason]:
        return {r.key: r for r in self.reasons}

    def same_breaks(self, other: GraphRecord) -> bool:
        """Equal graphs, breaks and (reason, frame) -> count; lines may differ."""
        mine = {k: r.count for k, r in self.by_key().items()}
        theirs = {k: r.count for k, r in other.by_key().items()}
        return (self.graphs, self.breaks, mine) == (other.graphs, other.breaks, theirs)
