"""What a perf test can be moved by: every Keras function its whole protocol executes.

``--kerasperf-index-out PATH`` writes, for each perf test, the functions of ``keras/src`` that
its setup, call and teardown executed (fixtures, the layer's ``__init__`` and ``build``, the
compile, the trial and warm-up calls, the measured call), and the process's own set: what ran
before the first test (Keras's import, the canonical state) and in every fixture of a wider
scope than the test (built once, for every test that uses it), and what any import ran.  A
diff that changes no function of a test's set cannot move its counts (counts follow only the
code a test executes: docs/exact-counts.md); ``--kerasperf-changed`` selects by it
(``selection``).

Measured with cProfile over each test's own thread (``protocol.on_own_thread``), paused
while the gate's own profilers run (``paused``: the count pass's cProfile, pyinstrument),
whose functions the test's record adds.  What would make a set too small is made to select
the test instead: a profiler that another library put in place of this one (the test is
marked incomplete), a cached function another test filled (Keras's ``functools`` caches are
emptied before each test while indexing, so each test runs what it needs), a function only
an import calls (the process's set, from every ``<module>`` frame's callees).
"""

from __future__ import annotations

import contextlib
import cProfile
import functools
import inspect
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pytest_kerasperf.measure.names import function_name

#: The library's functions, as the profiles name them (``keras/src/ops/numpy.py:add``)
LIBRARY = "keras/src/"

_thread = threading.local()


@dataclass
class Reach:
    """The functions each perf test executed, and the process's own set."""

    tests: dict[str, set[str]] = field(default_factory=dict)
    process: set[str] = field(default_factory=set)
    incomplete: set[str] = field(default_factory=set)  # a profiler was replaced mid-test
    # each code object's name, made once (most of a test's functions ran in earlier tests);
    # by identity, the object kept with it: code objects of two files compare equal where
    # their bodies do (two empty ``__init__.py`` modules)
    names: dict[int, tuple[types.CodeType, str]] = field(default_factory=dict)

    def name(self, code: types.CodeType) -> str:
        found = self.names.get(id(code))
        if found is None:
            found = self.names[id(code)] = (code, function_name(code))
        return found[1]


class _Thread:
    """One thread's profiler and where what it sees goes."""

    def __init__(self, reach: Reach, sink: set[str]) -> None:
        self.reach = reach
        self.sink = sink
        self.profiler = cProfile.Profile()

    def flush(self, into: set[str]) -> None:
        """What the profiler saw so far goes to ``into`` (library functions; an import's
        callees to the process's set); the profiler starts again, empty."""
        self.profiler.disable()
        # by identity (the profile holds the objects meanwhile): code objects compare by value
        callees: dict[int, list[types.CodeType]] = {}
        roots: list[types.CodeType] = []
        mine: set[str] = set()
        for entry in self.profiler.getstats():
            code = entry.code
            if not isinstance(code, types.CodeType):
                continue
            name = self.reach.name(code)
            body = not code.co_flags & inspect.CO_NEWLOCALS  # a module's or a class's body
            if name.startswith(LIBRARY):
                (self.reach.process if body else mine).add(name)
            subs = [s.code for s in entry.calls or () if isinstance(s.code, types.CodeType)]
            callees[id(code)] = subs
            if body:  # an import (or a class statement) runs it once per process
                roots.append(code)
        # what an import ran is the process's, whoever imported
        imported = _below(roots, callees, self.reach.name)
        self.reach.process.update(imported)
        into.update(mine - imported)
        self.profiler.clear()


def _below(
    roots: list[types.CodeType],
    callees: dict[int, list[types.CodeType]],
    name_of: Callable[[types.CodeType], str],
) -> set[str]:
    """The library functions reachable from ``roots`` over the profile's edges (code objects
    by identity)."""
    seen: set[int] = set()
    stack = list(roots)
    found: set[str] = set()
    while stack:
        code = stack.pop()
        for sub in callees.get(id(code), ()):
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            name = name_of(sub)
            if name.startswith(LIBRARY):
                found.add(name)
            stack.append(sub)
    return found


#: The run's index while --kerasperf-index-out makes one (``changed.Indexing``): each perf
#: test's protocol is watched on its own thread (``protocol.on_own_thread``)
COLLECTOR: Reach | None = None


def _ours(state: _Thread) -> bool:
    """Is this thread's profiler still the one in place (not replaced by another)?"""
    active: object = sys.getprofile()
    return active is state.profiler


@contextlib.contextmanager
def watching(reach: Reach, key: str | None) -> Iterator[None]:
    """Profile this thread into the test ``key``'s set (None: the process's set)."""
    sink = reach.process if key is None else reach.tests.setdefault(key, set())
    state = _Thread(reach, sink)
    _thread.active = state
    state.profiler.enable()
    try:
        yield
    finally:
        if not _ours(state) and key is not None:
            reach.incomplete.add(key)  # another profiler took this thread's place
        state.flush(sink)
        _thread.active = None


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The gate's own profiler runs here: this thread's reach profiler stops meanwhile."""
    state: _Thread | None = getattr(_thread, "active", None)
    if state is None:
        yield
        return
    replaced = not _ours(state)  # before the gate's own took its place
    state.profiler.disable()
    try:
        yield
    finally:
        if not replaced:
            state.profiler.enable()  # else left off: the test is then marked incomplete


@contextlib.contextmanager
def for_the_process() -> Iterator[None]:
    """A fixture of a wider scope than the test: what it runs goes to the process's set (it
    is built once, for every test that uses it)."""
    state: _Thread | None = getattr(_thread, "active", None)
    if state is None:
        yield
        return
    state.flush(state.sink)
    state.profiler.enable()
    try:
        yield
    finally:
        state.flush(state.reach.process)
        state.profiler.enable()


def _keras_globals() -> Iterator[list[object]]:
    """Each of Keras's imported modules' globals."""
    for name, module in list(sys.modules.items()):
        if (name == "keras" or name.startswith("keras.")) and module is not None:
            yield list(getattr(module, "__dict__", {}).values())


def keras_caches() -> list[functools._lru_cache_wrapper[object]]:
    """Keras's ``functools`` caches (module functions and class attributes): emptied before
    each test while indexing, so a test runs the cached functions it needs itself."""
    found: dict[int, functools._lru_cache_wrapper[object]] = {}
    for values in _keras_globals():
        values += [v for c in values if isinstance(c, type) for v in vars(c).values()]
        found.update((id(v), v) for v in values if isinstance(v, functools._lru_cache_wrapper))
    return list(found.values())


def lazy_modules() -> list[object]:
    """Keras's lazily imported modules (``module_utils.LazyModule``: ``initialize`` on first
    use): put back to uninitialized before each test while indexing, so each test that uses
    one initializes it itself (else the first test of a run did, and the others did not)."""
    found = {
        id(value): value
        for values in _keras_globals()
        for value in values
        if any(c.__name__ == "LazyModule" for c in type(value).__mro__)
    }
    return list(found.values())


def uninitialize(lazy: object) -> None:
    state = vars(lazy)
    for attribute in ("module", "_available"):
        if attribute in state:
            state[attribute] = None
