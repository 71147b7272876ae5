"""Exact Python call counts per workload call, from cProfile.

A count is exact when it repeats: the workload is called until ``stable``
consecutive profiled calls give identical per-function counts (the first
calls warm caches and may differ by a few calls), with the garbage collector
off while profiling so that finalizers never land inside a count.  The
garbage is collected before each profiled call, scanning only the heap not
frozen (``settle_heap``, before each perf test).
"""

from __future__ import annotations

import cProfile
import gc
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_kerasperf.measure import reach
from pytest_kerasperf.measure.names import function_name

_PROFILER_DISABLE = "<method 'disable' of '_lsprof.Profiler' objects>"

#: Functions that C code calls from hash-table probes, or in an order kept by the process's
#: history, so how often they run follows where objects sit in memory or what ran before, not
#: the code under test: left out of every count with the calls below them (``without``).  Each,
#: and the experiment that found it: docs/exact-counts.md ("dropped entries" and "One
#: canonical process").
VOLATILE_FUNCTIONS = frozenset(
    {
        "jax/_src/core.py:ShapedArray._create",
        "jax/_src/pjit.py:PjitInfo.__eq__",
        "jax/_src/numpy/scalar_types.py:_ScalarMeta.__eq__",
        "jax/_src/tree_util.py:FlatTree.__eq__",
        "jax/_src/sharding_impls.py:SingleDeviceSharding.__eq__",
        "torch/_dynamo/guards.py:GuardBuilder.get_guard_manager_from_source.<locals>.<lambda>",
        "keras/src/callbacks/callback_list.py:CallbackList._async_dispatch",
        "keras/src/callbacks/callback_list.py:CallbackList._flush_futures",
        "keras/src/callbacks/callback_list.py:CallbackList._on_end",
        "concurrent/futures/thread.py:ThreadPoolExecutor.shutdown",
        "tensorflow/python/framework/ops.py:Graph._ControlDependenciesController.op_in_group",
        "openvino_telemetry/utils/sender.py:TelemetrySender.send",
        "logging/__init__.py:Manager._clear_cache",
    }
)

#: Pure pass-through wrappers whose presence in a call path follows a cache on disk, not the
#: code under test: each is left out alone, the calls it made kept as made by its caller
#: (``passed_through``; docs/exact-counts.md: AOTAutograd's wrapper on a cache hit).
PASS_THROUGH_FUNCTIONS = frozenset(
    {
        "torch/_functorch/_aot_autograd/runtime_wrappers.py:SerializableCompiledFunction.__call__",
    }
)


class CountsUnstable(Exception):
    """Call counts kept changing; the message names the functions that moved."""


@dataclass(frozen=True)
class CallCounts:
    calls: int
    calls_by_function: Mapping[str, int]
    passes: int  # profiled calls it took to see ``stable`` identical ones
    call_edges: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    """One profiled call: calls per function and per caller -> callee edge."""

    by_function: dict[str, int]
    edges: dict[str, dict[str, int]]


def without(
    counts: Mapping[str, int], edges: Mapping[str, Mapping[str, int]], ignore: frozenset[str]
) -> Profile:
    """``counts`` and ``edges`` less the functions in ``ignore`` and the calls made below them.

    The calls a dropped function made (its edges) are taken off its callees'
    counts; a callee left with none (every call it got came from below a
    dropped function) is dropped too, and so on down.  cProfile keeps edges,
    not paths: what a callee that is also called elsewhere called in turn on
    behalf of a dropped caller cannot be told apart, and stays counted.
    """
    removed: Counter[str] = Counter()
    dropped = {name for name in counts if name in ignore}
    queue = sorted(dropped)
    while queue:
        caller = queue.pop()
        for callee, n in edges.get(caller, {}).items():
            if callee in dropped:
                continue
            removed[callee] += n
            if removed[callee] >= counts.get(callee, 0):
                dropped.add(callee)
                queue.append(callee)
    return Profile(
        by_function={
            name: count - removed[name] for name, count in counts.items() if name not in dropped
        },
        edges={
            caller: {callee: n for callee, n in callees.items() if callee not in dropped}
            for caller, callees in edges.items()
            if caller not in dropped and any(callee not in dropped for callee in callees)
        },
    )


def passed_through(profile: Profile, through: frozenset[str]) -> Profile:
    """``profile`` less the pass-through functions in ``through``, their calls kept.

    A pass-through's own calls leave the counts; what it called is credited to
    its caller: to its only caller exactly, or, when several called it, to the
    one that called it most (ties: the first by name), as cProfile keeps edges,
    not paths.  A pass-through that calls a pass-through hands its callees on.
    """
    counts = dict(profile.by_function)
    edges = {caller: dict(callees) for caller, callees in profile.edges.items()}
    for wrapper in sorted(name for name in counts if name in through):
        heir = min(
            (
                (-c[wrapper], caller)
                for caller, c in edges.items()
                if wrapper in c and caller != wrapper
            ),
            default=None,
        )
        callees = edges.pop(wrapper, {})
        callees.pop(wrapper, None)
        for c in edges.values():
            c.pop(wrapper, None)
        del counts[wrapper]
        if heir is not None:
            into = edges.setdefault(heir[1], {})
            for callee, n in callees.items():
                into[callee] = into.get(callee, 0) + n
    return Profile(
        by_function=counts,
        edges={caller: callees for caller, callees in edges.items() if callees},
    )


def profile_call(
    fn: Callable[[], Any],
    ignore: frozenset[str] = VOLATILE_FUNCTIONS,
    through: frozenset[str] = PASS_THROUGH_FUNCTIONS,
) -> Profile:
    """Per-function counts and caller -> callee edges of one call of ``fn``.

    Functions named in ``ignore`` are left out with the calls made below them
    (``without``), and every edge that touches what was left out; the
    pass-through functions in ``through`` are left out alone (``passed_through``).
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    profiler = cProfile.Profile()
    try:
        with reach.paused():  # an index's profiler of the whole test, if any, meanwhile
            profiler.enable()
            try:
                fn()
            finally:
                profiler.disable()
    finally:
        if was_enabled:
            gc.enable()
    counts: Counter[str] = Counter()
    edges: dict[str, Counter[str]] = {}
    for entry in profiler.getstats():
        if entry.code == _PROFILER_DISABLE:
            continue
        name = function_name(entry.code)
        counts[name] += entry.callcount
        for sub in entry.calls or ():
            if sub.code == _PROFILER_DISABLE:
                continue
            edges.setdefault(name, Counter())[function_name(sub.code)] += sub.callcount
    return passed_through(without(counts, edges, ignore), through)


#: A collection slower than this before a count pass freezes the heap it leaves (``gc.freeze``).
FREEZE_AFTER_SECONDS = 0.01
_FROZEN_HERE = False  # whether this module froze the heap (a process may freeze its own)


def freeze_heap() -> None:
    """Collect, then freeze what is left (``gc.freeze``), as a count pass would: a process
    about to fork children for isolated tests does it once, so that no child collects (and
    so copies) the heap they share."""
    global _FROZEN_HERE
    gc.collect()
    gc.freeze()
    _FROZEN_HERE = True


def settle_heap() -> None:
    """Collect the garbage before a perf test; freeze the heap when that was slow.

    The heap a process builds before its first workload (frameworks, Keras, pytest) is
    frozen (``gc.freeze``) after a full collection, so the collection before each profiled
    call scans only objects made since, and frozen again whenever a collection found the
    unfrozen heap large again.  Only here, before a test, never inside one: a freeze in the
    middle of a test's passes made what its warm-up left alive immortal, and so its counts
    follow what ran before it (docs/census.md, "Cost"; docs/exact-counts.md).  A process that
    froze objects itself is left alone (full collections; ``_FROZEN_HERE`` is asked first, as
    ``gc.get_freeze_count()`` walks the whole frozen generation).
    """
    global _FROZEN_HERE
    if not _FROZEN_HERE and gc.get_freeze_count():
        gc.collect()
        return
    started = time.perf_counter()
    gc.collect()
    if time.perf_counter() - started > FREEZE_AFTER_SECONDS:
        gc.freeze()
        _FROZEN_HERE = True


def count_calls(
    fn: Callable[[], Any],
    *,
    stable: int = 3,
    max_passes: int = 25,
    ignore: frozenset[str] = VOLATILE_FUNCTIONS,
) -> CallCounts:
    """Profile ``fn`` until ``stable`` consecutive calls give identical counts and edges."""
    if stable < 2:
        raise ValueError("stable must be at least 2: one pass proves nothing")
    previous: Profile | None = None
    last: Profile | None = None
    streak = 0
    for passes in range(1, max_passes + 1):
        current = profile_call(fn, ignore)
        streak = streak + 1 if current == previous else 1
        if streak >= stable:
            return CallCounts(
                calls=sum(current.by_function.values()),
                calls_by_function=MappingProxyType(dict(sorted(current.by_function.items()))),
                passes=passes,
                call_edges=MappingProxyType(
                    {c: dict(sorted(e.items())) for c, e in sorted(current.edges.items())}
                ),
            )
        last, previous = previous, current
    before = last.by_function if last else {}
    after = previous.by_function if previous else {}
    moved = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    detail = ", ".join(f"{name} {before.get(name, 0)}->{after.get(name, 0)}" for name in moved[:5])
    raise CountsUnstable(
        f"call counts did not repeat {stable} times in {max_passes} profiled calls; "
        f"still moving: {detail or 'the same functions, called from other callers'}"
    )
