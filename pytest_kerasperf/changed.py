"""The wiring of ``--kerasperf-index-out`` (each perf test's functions, written at the end)
and ``--kerasperf-changed`` (the perf tests a change can move, kept at collection).

The index is measured by ``measure.reach``, read by ``reach_index`` and judged by
``selection``; this module only hooks them into pytest (docs/selection.md).
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from pytest_kerasperf.items import is_perf_test, item_key

if TYPE_CHECKING:
    from pytest_kerasperf.measure.reach import Reach
    from pytest_kerasperf.outcome import Outcome
    from pytest_kerasperf.state import PluginState


class Indexing:
    """The plugin of a run that writes an index: each perf test profiled whole."""

    def __init__(self) -> None:
        from pytest_kerasperf.measure import reach

        self.reach: Reach = reach.Reach()
        self.caches: list[Any] = []
        self.lazy: list[object] = []
        self.modules = 0  # Keras's modules imported when the caches were last looked for
        self.imported = 0  # all modules imported then (counted first: a cheaper check)
        reach.COLLECTOR = self.reach

    def prepared(self, config: pytest.Config, backend: str) -> None:
        """After the canonical state: Keras's caches and lazy modules, emptied before each
        test, and the environment every record carries, read now (the process's work, not the
        first test's; what it sets in Keras's global state, ``canonical.restore`` undoes)."""
        from pytest_kerasperf import environment, handle

        self._find()
        config.stash[handle.ENVIRONMENT] = environment.capture(backend)

    @pytest.hookimpl(tryfirst=True)  # before the test's fixtures
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        from pytest_kerasperf.measure import reach

        if is_perf_test(item):
            self._find()
            for cache in self.caches:
                cache.cache_clear()
            for lazy in self.lazy:
                reach.uninitialize(lazy)

    def _find(self) -> None:
        """Keras's caches and lazy modules, looked for again when a test imported more of
        Keras (a module imported after the first test has its own)."""
        from pytest_kerasperf.measure import reach

        if len(sys.modules) == self.imported:
            return
        self.imported = len(sys.modules)
        modules = sum(1 for name in list(sys.modules) if name.startswith("keras"))
        if modules != self.modules:
            self.modules = modules
            self.caches = reach.keras_caches()
            self.lazy = reach.lazy_modules()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
        if fixturedef.scope == "function":
            return (yield)
        from pytest_kerasperf.measure import reach

        with reach.for_the_process():
            return (yield)

    def worker_output(self) -> _Part:
        return _Part(
            tests={key: sorted(names) for key, names in self.reach.tests.items()},
            process=sorted(self.reach.process),
            incomplete=sorted(self.reach.incomplete),
        )

    def merge_worker(self, data: object) -> None:
        part = msgspec.convert(data, _Part)
        for key, names in part.tests.items():
            self.reach.tests.setdefault(key, set()).update(names)
        self.reach.process.update(part.process)
        self.reach.incomplete.update(part.incomplete)

    def write(self, path: Path, root: Path, backend: str, outcomes: Sequence[Outcome]) -> None:
        """The index file: each test's profile with its record's functions (the count pass ran
        under the gate's own profiler), the commit and environment it describes."""
        from pytest_kerasperf import __version__, environment, reach_index
        from pytest_kerasperf.baseline import write_atomic
        from pytest_kerasperf.measure.reach import LIBRARY

        for outcome in outcomes:
            names = self.reach.tests.setdefault(outcome.key, set())
            names.update(n for n in outcome.record.calls_by_function if n.startswith(LIBRARY))
        commit, dirty = _head(repository(root))
        fingerprint = environment.count_fingerprint(environment.capture(backend), backend)
        text = reach_index.encode(
            backend=backend,
            commit=commit,
            dirty=dirty,
            plugin=__version__,
            fingerprint=fingerprint,
            process=self.reach.process,
            tests=self.reach.tests,
            incomplete=self.reach.incomplete,
        )
        write_atomic(path, text)


class _Part(msgspec.Struct, frozen=True):
    tests: dict[str, list[str]]
    process: list[str]
    incomplete: list[str]


def repository(root: Path) -> Path:
    """The work tree a change is read from: the Keras checkout the run imports Keras from
    (a Keras pull request), else the one around rootdir (this plugin's own repository)."""
    from pytest_kerasperf import backends, environment

    try:
        found = environment.keras_checkout(backends.import_keras())
    except (backends.FrameworkMissing, ImportError):
        found = None
    return root if found is None else Path(str(found[0].working_tree_dir))


def _head(root: Path) -> tuple[str | None, bool]:
    """The HEAD commit of the work tree at ``root``, and whether tracked files differ."""
    try:
        import git

        repo = git.Repo(root, search_parent_directories=True)
        return str(repo.head.commit.hexsha), repo.is_dirty(untracked_files=False)
    except Exception:  # no GitPython, no repository, no commit: the index names none
        return None, False


def keep_changed(config: pytest.Config, state: PluginState, items: list[pytest.Item]) -> None:
    """``--kerasperf-changed INDEX``: deselect the perf tests the change cannot move."""
    path = state.options.changed
    if path is None:
        return
    perf = [item for item in items if is_perf_test(item)]
    keys = [item_key(item) for item in perf]
    from pytest_kerasperf import environment
    from pytest_kerasperf.accounting import ChangedAccount

    measured = _environment(state.backend)
    commit, run, everything, functions = _select(
        path, config.rootpath, state.backend, keys, measured
    )
    dropped = [item for item, key in zip(perf, keys, strict=True) if key not in run]
    if dropped:
        gone = {id(item) for item in dropped}
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if id(item) not in gone]
    variant = environment.variant_of(measured, state.backend)
    name = "-".join([state.backend, *variant.split("-")[2:]])
    kept = len(perf) - len(dropped)
    state.perf_tests = min(state.perf_tests, kept)
    state.changed = ChangedAccount(name, commit, kept, len(dropped), functions, tuple(everything))


def _environment(backend: str) -> dict[str, str | None]:
    """The run's environment, read at collection; what reading it sets in Keras's global
    state (the dtype policy) put back, so the canonical state is what it is without it."""
    from pytest_kerasperf import backends, environment
    from pytest_kerasperf.measure import canonical

    try:
        backends.import_keras()
    except (backends.FrameworkMissing, ImportError):
        return {}  # its tests skip
    kept = canonical.keras_state()
    try:
        return environment.capture(backend)
    finally:
        canonical.restore(kept)


def _select(
    path: Path, root: Path, backend: str, keys: list[str], measured: Mapping[str, str | None]
) -> tuple[str, frozenset[str], list[str], int]:
    """(the index's commit, the keys to run, why all of them run, changed functions)."""
    from pytest_kerasperf import __version__, environment, reach_index, selection

    try:
        index = reach_index.load(path)
    except reach_index.UnusableIndex as error:
        return "", frozenset(keys), [f"no usable index: {error}"], 0
    fingerprint = environment.count_fingerprint(measured, backend)
    why = selection.usable(index, backend=backend, fingerprint=fingerprint, plugin=__version__)
    if why or index.commit is None:
        return index.commit or "", frozenset(keys), why, 0
    try:
        diff = selection.read_diff(repository(root), index.commit)
    except LookupError as error:
        return index.commit, frozenset(keys), [str(error)], 0
    chosen = selection.select(keys, index, selection.changes(diff))
    return index.commit, chosen.run, list(chosen.everything), len(chosen.functions)
