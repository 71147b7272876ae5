"""Measurements: each returns plain data and knows nothing about baselines."""

from __future__ import annotations

from pytest_kerasperf.measure.calls import count_calls

__all__ = ["count_calls"]
