"""Exact Python call counts per workload call, from cProfile.

A count is exact when it repeats: the workload is called until ``stable``
consecutive profiled calls give identical per-function counts (the first
calls warm caches and may differ by a few calls), with the garbage collector
off while profiling so that finalizers never land inside a count.
"""

from __future__ import annotations

import cProfile
import gc
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pytest_kerasperf.measure.names import function_name

_PROFILER_DISABLE = "<method 'disable' of '_lsprof.Profiler' objects>"

#: Functions that C code calls from hash-table probes, so how often they run
#: depends on where objects happen to sit in memory, not on the code under
#: test.  They are left out of every count (and listed in docs/exact-counts.md).
#: Seen: jax's pjit cache compares PjitInfo keys with ``__eq__`` 0-2 times per
#: eager LM forward, varying call to call in one process.
VOLATILE_FUNCTIONS = frozenset({"jax/_src/pjit.py:PjitInfo.__eq__"})


class CountsUnstable(Exception):
    """Call counts kept changing; the message names the functions that moved."""


@dataclass(frozen=True)
class CallCounts:
    calls: int
    calls_by_function: Mapping[str, int]
    passes: int  # profiled calls it took to see ``stable`` identical ones


def profile_once(
    fn: Callable[[], Any], ignore: frozenset[str] = VOLATILE_FUNCTIONS
) -> dict[str, int]:
    """Per-function call counts of one call of ``fn`` (the call itself included).

    Functions named in ``ignore`` are left out.
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    profiler = cProfile.Profile()
    try:
        profiler.enable()
        try:
            fn()
        finally:
            profiler.disable()
    finally:
        if was_enabled:
            gc.enable()
    counts: Counter[str] = Counter()
    for entry in profiler.getstats():
        if entry.code == _PROFILER_DISABLE:
            continue
        name = function_name(entry.code)
        if name not in ignore:
            counts[name] += entry.callcount
    return dict(counts)


def count_calls(
    fn: Callable[[], Any],
    *,
    stable: int = 3,
    max_passes: int = 25,
    ignore: frozenset[str] = VOLATILE_FUNCTIONS,
) -> CallCounts:
    """Profile ``fn`` until ``stable`` consecutive calls give identical counts."""
    if stable < 2:
        raise ValueError("stable must be at least 2: one pass proves nothing")
    previous: dict[str, int] | None = None
    streak = 0
    for passes in range(1, max_passes + 1):
        current = profile_once(fn, ignore)
        streak = streak + 1 if current == previous else 1
        if streak >= stable:
            return CallCounts(
                calls=sum(current.values()),
                calls_by_function=MappingProxyType(dict(sorted(current.items()))),
                passes=passes,
            )
        last, previous = previous, current
    before, after = last or {}, previous or {}
    moved = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    detail = ", ".join(f"{name} {before.get(name, 0)}->{after.get(name, 0)}" for name in moved[:5])
    raise CountsUnstable(
        f"call counts did not repeat {stable} times in {max_passes} profiled calls; "
        f"still moving: {detail}"
    )
