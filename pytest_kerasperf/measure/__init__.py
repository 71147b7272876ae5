"""Measurements: each returns plain data and knows nothing about baselines."""

from __future__ import annotations

from pytest_kerasperf.measure.calls import CallCounts, CountsUnstable, count_calls
from pytest_kerasperf.measure.graph import GraphBreak, GraphBreaks, graph_breaks
from pytest_kerasperf.measure.latency import Latency

__all__ = [
    "CallCounts",
    "CountsUnstable",
    "GraphBreak",
    "GraphBreaks",
    "Latency",
    "count_calls",
    "graph_breaks",
]
