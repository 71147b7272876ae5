"""The metrics, one module each; the rest of the plugin loops over ``METRICS``.

Adding a metric is one module (its marker, budget check, measuring pass,
``compare``, rules, merge rule and account), its record part under ``parts/``
and one line in ``REGISTRY`` (kept in ``budget.py``, the light vocabulary below
every metric).  The order is the order of measuring, of comparing, and of the
lines a verdict prints.

Light: the plugin loads this in every pytest process, so the metric modules
(and msgspec) are imported on first use of ``METRICS`` and the names below
(PEP 562), not when a run only needs the markers' names.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_kerasperf.budget import FAILURE_KINDS, MARKER_NAMES, REGISTRY

if TYPE_CHECKING:
    from pytest_kerasperf.budget import Budget
    from pytest_kerasperf.metrics.base import Metric


@functools.cache
def _loaded() -> tuple[Metric, ...]:
    return tuple(importlib.import_module(f"{__name__}.{name}").METRIC for name, _ in REGISTRY)


def marker(name: str) -> Callable[..., Budget]:
    """The typed function of the marker ``name`` (``max_calls`` -> ``calls.max_calls``)."""
    return _markers()[name]


@functools.cache
def _by_name() -> dict[str, Metric]:
    return {metric.name: metric for metric in _loaded()}


@functools.cache
def _markers() -> dict[str, Callable[..., Budget]]:
    return {
        metric.marker_name: function
        for metric in _loaded()
        if metric.marker_name and (function := metric.marker_function) is not None
    }


_LAZY: dict[str, Callable[[], Any]] = {"METRICS": _loaded, "BY_NAME": _by_name, "MARKERS": _markers}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    METRICS: tuple[Metric, ...]
    BY_NAME: dict[str, Metric]
    MARKERS: dict[str, Callable[..., Budget]]

__all__ = [
    "BY_NAME",
    "FAILURE_KINDS",
    "MARKERS",
    "MARKER_NAMES",
    "METRICS",
    "REGISTRY",
    "marker",
]
