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

#: Functions that C code calls from hash-table probes, so how often they run
#: depends on where objects happen to sit in memory, not on the code under
#: test.  They are left out of every count (and listed in docs/exact-counts.md).
#: Seen: jax's pjit cache compares PjitInfo keys with ``__eq__`` 0-2 times per
#: eager LM forward, varying call to call in one process; jax's
#: ``issubdtype`` lru_cache compares keys holding jnp scalar types with
#: ``_ScalarMeta.__eq__`` on hash collisions (0 or 2 per jax LM eager forward,
#: depending on what ran earlier in the process); jax's ``FlatTree.__eq__``
#: from the pytree-keyed jit cache of ``_trace_for_jit`` (8 per jax LM eager
#: forward in a serial process, 10 in a pytest-xdist worker); jax's
#: ``SingleDeviceSharding.__eq__`` from the caches keyed by sharding (a jax eager
#: CNN train step: 383 calls alone in a process, 408 after the eager forwards and a
#: generate had run).  And one that C++ calls in an order kept by the process's
#: history: dynamo's guard-manager accessor lambdas, which the guard managers
#: re-sort by past guard failures (a torch compiled CNN forward: one call fewer
#: after an eager train step ran in the process, one more when it runs alone than
#: after the suite's eager tests).  And jax's interner of abstract values
#: (``ShapedArray._create``, behind a weak-value interner): it runs only when no live
#: object holds an equal value, so whether it runs follows what earlier tests left alive in
#: jax's caches (jax ``test_layer[layers.MelSpectrogram]``: 8,341 calls alone, 8,339 after
#: the census's ``keras.applications`` models had run in the process).
VOLATILE_FUNCTIONS = frozenset(
    {
        "jax/_src/core.py:ShapedArray._create",
        "jax/_src/pjit.py:PjitInfo.__eq__",
        "jax/_src/numpy/scalar_types.py:_ScalarMeta.__eq__",
        "jax/_src/tree_util.py:FlatTree.__eq__",
        "jax/_src/sharding_impls.py:SingleDeviceSharding.__eq__",
        "torch/_dynamo/guards.py:GuardBuilder.get_guard_manager_from_source.<locals>.<lambda>",
        # Keras dispatches batch-end callbacks to a thread pool on thread-safe backends (jax,
        # torch, numpy, openvino): how many futures are pending, and so how many checks,
        # removals, waits and worker threads the main thread makes, depends on timing.
        "keras/src/callbacks/callback_list.py:CallbackList._async_dispatch",
        "keras/src/callbacks/callback_list.py:CallbackList._flush_futures",
        "keras/src/callbacks/callback_list.py:CallbackList._on_end",
        "concurrent/futures/thread.py:ThreadPoolExecutor.shutdown",
        # tensorflow's graph building asks each control-dependency controller whether an op's
        # inputs are in it, stopping at the first that is: the inputs come from a set of
        # operations hashed by identity, so how many it asks follows memory addresses
        # (a model's tf_saved_model export: 241,418 and 241,420 calls in one process)
        "tensorflow/python/framework/ops.py:Graph._ControlDependenciesController.op_in_group",
        # OpenVINO's converter sends telemetry through a thread pool: how many worker threads it
        # starts, and so how many lock waits the main thread makes, depends on timing
        # (an openvino export on tensorflow: 91,917 calls, and 91,932 once)
        "openvino_telemetry/utils/sender.py:TelemetrySender.send",
        # Setting a logger's level clears the cache of every logger the process has made, so
        # its calls follow what ran before, not the code (`kerasperf audit`, tensorflow: a
        # tf_saved_model export 247,760 calls alone, 248,166 after the census's other Model
        # API tests, 2,814 and 3,066 of them isinstance calls in Manager._clear_cache)
        "logging/__init__.py:Manager._clear_cache",
    }
)

#: Pure pass-through wrappers whose presence in a call path depends on a cache on
#: disk, not on the code under test.  Each is left out of every count on its own,
#: and the calls it made are kept, as made by its caller (``passed_through``).
#: Seen: AOTAutograd wraps a compiled graph in ``SerializableCompiledFunction``
#: on every AOTAutograd cache hit, but on a miss only when it could save a cache
#: entry; the torch compiled LM forward made 18 of its calls with a new
#: ``TORCHINDUCTOR_CACHE_DIR`` (cold or warm) and 19 with a long-used one.
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
        callers = sorted(
            (
                (c[wrapper], caller)
                for caller, c in edges.items()
                if wrapper in c and caller != wrapper
            ),
            key=lambda found: (-found[0], found[1]),
        )
        callees = edges.pop(wrapper, {})
        callees.pop(wrapper, None)
        for c in edges.values():
            c.pop(wrapper, None)
        del counts[wrapper]
        if callers:
            heir = edges.setdefault(callers[0][1], {})
            for callee, n in callees.items():
                heir[callee] = heir.get(callee, 0) + n
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


def profile_once(
    fn: Callable[[], Any], ignore: frozenset[str] = VOLATILE_FUNCTIONS
) -> dict[str, int]:
    """Per-function call counts of one call of ``fn`` (the call itself included)."""
    return profile_call(fn, ignore).by_function


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

    The heap a process builds before its first workload (frameworks, Keras,
    pytest) is frozen (``gc.freeze``) after a full collection, so the collection
    before each profiled call scans only objects made since: a full collection
    of a process with tensorflow loaded took 0.13-0.24 s here, and three per
    test were most of a small workload's measuring cost.  It is frozen again
    whenever a collection found the unfrozen heap large again (imports made by
    later tests).  Only here, before a test, never inside one: frozen objects
    are never collected, and a freeze in the middle of a test's passes made
    what its warm-up calls left alive immortal, down to which objects a weak
    dictionary still held: tensorflow's ``ops.vectorized_map`` counted one
    ``list.pop`` more by whether a collection before its count pass had been
    slow, that is by what ran before it (found by ``kerasperf audit``).  What a
    freeze catches alive and that dies in a reference cycle later stays in
    memory until the process ends.  A process that froze objects itself is
    left alone (full collections).
    """
    global _FROZEN_HERE
    # _FROZEN_HERE first: gc.get_freeze_count() walks the whole frozen generation (5.7 ms for
    # the 201,178 objects of a process with Keras on numpy).
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
    if moved:
        detail = ", ".join(
            f"{name} {before.get(name, 0)}->{after.get(name, 0)}" for name in moved[:5]
        )
    else:
        detail = "the same functions, called from other callers"
    raise CountsUnstable(
        f"call counts did not repeat {stable} times in {max_passes} profiled calls; "
        f"still moving: {detail}"
    )
