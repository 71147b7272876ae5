"""The instructions metric's part of a record: a count under callgrind, and the tool that
counted it (a count repeats only under the same valgrind on the same CPU model)."""

from __future__ import annotations

import msgspec

from pytest_kerasperf.codec import Count, PositiveCount


class InstructionsRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Instructions per workload call, counted under callgrind (``--kerasperf-instructions``):
    the median of ``rounds`` calls after warm-up, their range, and the valgrind that counted."""

    median: Count
    low: Count
    high: Count
    rounds: PositiveCount
    tool: str
