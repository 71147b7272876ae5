"""The latency metric's part of a record: the device-synced median of one workload call."""

from __future__ import annotations

import msgspec

from pytest_kerasperf.codec import Milliseconds, PositiveCount

LATENCY_DECIMALS = 3  # milliseconds in records: microsecond resolution


class LatencyRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Median and spread (ms, rounded to microseconds), rounds, and the device timed on."""

    median_ms: Milliseconds = msgspec.field(name="median")
    iqr_ms: Milliseconds = msgspec.field(name="iqr")
    rounds: PositiveCount
    device: str
    accelerator: bool

    def __post_init__(self) -> None:
        for name in ("median_ms", "iqr_ms"):
            value = getattr(self, name)
            if round(value, LATENCY_DECIMALS) != value:
                msgspec.structs.force_setattr(self, name, round(value, LATENCY_DECIMALS))
