"""The index's profile of a test (measure/reach.py): what it keeps, what it leaves to the gate's
own profiler, what goes to the process's set, and a test another profiler displaced."""

from __future__ import annotations

import cProfile
import functools
import importlib.util
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_kerasperf.measure import reach

LIBRARY = """
import functools


def helper(x):
    return x + 1


def work(x):
    return helper(x) * 2


def measured(x):
    return helper(x) - 1


@functools.lru_cache
def cached(x):
    return x * 3
"""


@pytest.fixture
def fake_keras(tmp_path: Path) -> types.ModuleType:
    """A module at ``keras/src/fake.py`` (so profiles name it as Keras's), imported under a
    name of its own."""
    package = tmp_path / "keras" / "src"
    package.mkdir(parents=True)
    (tmp_path / "keras" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "fake.py").write_text(LIBRARY)
    spec = importlib.util.spec_from_file_location("kerasperf_fake_keras", package / "fake.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _on_a_thread(target: object) -> None:
    """Run ``target`` on a thread of its own, as the plugin runs a perf test."""
    thread = threading.Thread(target=target)  # type: ignore[arg-type]
    thread.start()
    thread.join()


def test_a_test_keeps_what_it_ran_and_not_what_the_gate_profiled(
    fake_keras: types.ModuleType,
) -> None:
    index = reach.Reach()

    def test() -> None:
        with reach.watching(index, "t.py::test"):
            fake_keras.work(1)
            with reach.paused():  # the count pass: its own profiler
                gate = cProfile.Profile()
                gate.enable()
                fake_keras.measured(1)
                gate.disable()

    _on_a_thread(test)
    assert index.tests["t.py::test"] == {"keras/src/fake.py:work", "keras/src/fake.py:helper"}
    assert index.incomplete == set()


def test_a_wider_fixture_goes_to_the_process(fake_keras: types.ModuleType) -> None:
    index = reach.Reach()

    def test() -> None:
        with reach.watching(index, "t.py::test"):
            with reach.for_the_process():
                fake_keras.measured(1)
            fake_keras.work(1)

    _on_a_thread(test)
    assert index.tests["t.py::test"] == {"keras/src/fake.py:work", "keras/src/fake.py:helper"}
    assert {"keras/src/fake.py:measured", "keras/src/fake.py:helper"} <= index.process


def test_a_displaced_profiler_marks_the_test_incomplete(fake_keras: types.ModuleType) -> None:
    index = reach.Reach()

    def test() -> None:
        with reach.watching(index, "t.py::test"):
            fake_keras.work(1)
            sys.setprofile(None)  # a library that takes the thread's profile for itself
            fake_keras.measured(1)

    _on_a_thread(test)
    assert "t.py::test" in index.incomplete


def test_keras_caches_and_lazy_modules_are_found(fake_keras: types.ModuleType) -> None:
    class LazyModule:  # Keras's module_utils.LazyModule, as a test can have it
        def __init__(self) -> None:
            self.module: object = None
            self._available: object = None

    lazy = LazyModule()
    fake_keras.__dict__["lazy"] = lazy
    lazy.module, lazy._available = (sys, True)  # initialized by an earlier test
    sys.modules["keras.kerasperf_fake"] = fake_keras
    try:
        caches, lazies = reach.keras_caches(), reach.lazy_modules()
    finally:
        del sys.modules["keras.kerasperf_fake"]
    assert fake_keras.cached in caches
    assert all(isinstance(cache, functools._lru_cache_wrapper) for cache in caches)
    assert lazy in lazies
    reach.uninitialize(lazy)
    assert vars(lazy) == {"module": None, "_available": None}


@pytest.fixture
def scratch_keras(tmp_path: Path) -> Iterator[Path]:
    """An empty ``keras/src`` package under ``tmp_path``, imported in place of Keras's own while
    the test runs (its modules written by the test); Keras's modules put back after."""
    package = tmp_path / "keras" / "src"
    package.mkdir(parents=True)
    (tmp_path / "keras" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "keras"}
    try:
        yield package
    finally:
        sys.path.remove(str(tmp_path))
        for name in [k for k in sys.modules if k.split(".")[0] == "keras"]:
            del sys.modules[name]
        sys.modules.update(saved)


def test_what_an_import_runs_goes_to_the_process(scratch_keras: Path) -> None:
    """Module code (and what it calls) runs once per process, in whichever test imports it
    first: the process's set, never that test's."""
    package = scratch_keras
    (package / "registry.py").write_text("def register(f):\n    return f\n")
    (package / "late.py").write_text(
        "from keras.src.registry import register\n\n\n@register\ndef op():\n    return 1\n"
    )
    index = reach.Reach()

    def test() -> None:
        with reach.watching(index, "t.py::test"):
            importlib.import_module("keras.src.late").op()

    _on_a_thread(test)
    assert index.tests["t.py::test"] == {"keras/src/late.py:op"}
    assert "keras/src/registry.py:register" in index.process
    assert "keras/src/late.py:<module>" in index.process


def test_equal_code_in_two_files_keeps_both_names(scratch_keras: Path) -> None:
    """Code objects compare by value, not by file: two modules of the same text (Keras's empty
    ``__init__.py`` files) and the equal functions they call are still two names each, all of
    them the process's (an import ran them)."""
    for name in ("one", "two"):
        (scratch_keras / f"{name}.py").write_text("def same(x):\n    return x\n\n\nsame(1)\n")
    index = reach.Reach()

    def test() -> None:
        with reach.watching(index, "t.py::test"):
            one, two = (importlib.import_module(f"keras.src.{n}") for n in ("one", "two"))
            assert one.same.__code__ == two.same.__code__  # what the index must not conflate

    _on_a_thread(test)
    assert index.tests["t.py::test"] == set()
    both = {f"keras/src/{name}.py:{f}" for name in ("one", "two") for f in ("same", "<module>")}
    assert both <= index.process
