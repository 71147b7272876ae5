"""Shared set-up for the project's tests, and their tiers.

Tests are sorted by what they use, the way pytest's own ``testing/conftest.py``
sorts them: a test that starts a process (pytester, ``subprocess``, a
virtualenv, git), or imports a framework, is marked ``slow``; the rest are
the fast tier (``make test-fast``: ``-m "not slow"``), pure functions of
plain data.  What a test uses is read from its code and its fixtures' code,
following the helpers it calls in its own module and in ``tests/``; nothing
is listed by hand.  Fast tests run first, so a broken rule fails in seconds.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.inner import Inner, in_process_possible, make_inner

#: Names whose use means a process or a framework: the modules, and pytester's runners.
STARTS_A_PROCESS = frozenset(
    {
        "subprocess",
        "venv",
        "git",
        "pytester",
        "runpytest",
        "runpytest_subprocess",
        "runpytest_inprocess",
        "runpython",
        "inline_run",
        "import_keras",
        "importorskip",
        "keras",
        "torch",
        "jax",
        "tensorflow",
        "openvino",
        "require_backend",
        "node",
    }
)
#: Fixtures of pytest's own that start processes.
PROCESS_FIXTURES = frozenset({"pytester", "testdir"})


def _code_of(function: Any) -> types.CodeType | None:
    function = getattr(function, "__wrapped__", function)
    function = getattr(function, "__func__", function)
    return getattr(function, "__code__", None)


def _names(code: types.CodeType) -> Iterator[str]:
    """Every global and attribute name ``code`` and the code nested in it refer to."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


#: Where helpers the tests call live: followed into (the package itself is not: its
#: functions are what the fast tier tests).
HELPER_PACKAGES = ("tests", "adoption", "benchmarks")


def _is_helper_module(name: str) -> bool:
    return name.split(".", 1)[0] in HELPER_PACKAGES


def _is_ours(value: Any) -> bool:
    return callable(value) and _is_helper_module(getattr(value, "__module__", "") or "")


class _Uses:
    """Does a function (or what it calls among the tests' helpers) start a process?"""

    def __init__(self) -> None:
        self._seen: dict[types.CodeType, bool] = {}

    def __call__(self, function: Any, namespace: dict[str, Any]) -> bool:
        code = _code_of(function)
        if code is None:
            return False
        if code in self._seen:
            return self._seen[code]
        self._seen[code] = False  # recursion: assume not, until shown
        names = set(_names(code))
        found = bool(names & STARTS_A_PROCESS)
        for name in sorted(names):
            if found:
                break
            helper = namespace.get(name)
            if isinstance(helper, types.ModuleType) and _is_helper_module(helper.__name__):
                # ``apply.add_ini_lines(...)``: only the attributes the code names
                found = any(
                    self(value, vars(helper))
                    for value in (getattr(helper, n, None) for n in names)
                    if _is_ours(value)
                )
            elif isinstance(helper, type) and _is_ours(helper):
                found = any(
                    self(member, namespace)
                    for member in vars(helper).values()
                    if callable(member) or isinstance(member, property)
                )
            elif _is_ours(helper):
                module = sys.modules.get(helper.__module__)
                found = self(helper, vars(module) if module else namespace)
        self._seen[code] = found
        return found


def starts_a_process(item: pytest.Item, uses: _Uses) -> bool:
    """What the test and its fixtures use, from their code (not from a list of tests)."""
    if not isinstance(item, pytest.Function):
        return True
    if PROCESS_FIXTURES & set(item.fixturenames):
        return True
    namespace = vars(item.module) if item.module is not None else {}
    if uses(item.function, namespace):
        return True
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for fixture in defs:
            module = sys.modules.get(getattr(fixture.func, "__module__", ""), None)
            if (
                module is not None
                and _is_helper_module(module.__name__)
                and uses(fixture.func, vars(module))
            ):
                return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    # The suite starts hundreds of processes that import Keras from trees a test
    # copied or exported (no __pycache__) and this package: where the environment
    # says PYTHONDONTWRITEBYTECODE (this machine's does), every one of them would
    # compile the same sources again (a numpy adoption variant: 19.6 s -> 15.4 s
    # with bytecode written).  Bytecode changes no count: imports are not measured.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    config.addinivalue_line(
        "markers",
        "slow: starts a process (pytester, subprocess, a virtualenv) or imports a framework; "
        "set at collection from what the test uses (tests/conftest.py)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fast tests first, then the slow ones in collection order.

    (Sorting the slow tier longest first was measured and dropped: test by
    test, each return to a module set its module-scoped fixtures up again, a
    clean-clone run 14 -> 19 minutes; module by module, 15:06 against 14:15.)
    """
    uses = _Uses()
    fast, slow = [], []
    for item in items:
        if starts_a_process(item, uses):
            item.add_marker(pytest.mark.slow)
            slow.append(item)
        else:
            fast.append(item)
    items[:] = fast + slow


@pytest.fixture(autouse=True)
def fixed_hash_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs measure exact counts, which need PYTHONHASHSEED=0."""
    monkeypatch.setenv("PYTHONHASHSEED", "0")


@pytest.fixture(scope="session")
def _inner_runs_share_this_process() -> None:
    """Import, once, what an inner numpy run imports, so inner runs can share this process.

    pytester removes the modules an in-process run imported when the test
    ends, and extension modules (torch's, jsonschema's rpds, pyinstrument's)
    cannot be imported twice in one process: so they are imported here, before
    any test's pytester takes its snapshot of ``sys.modules``.  Only where
    in-process runs can be at all (``tests.inner.in_process_possible``).
    """
    saved = os.environ.get("KERAS_BACKEND")
    os.environ["KERAS_BACKEND"] = "numpy"
    try:
        if not in_process_possible():
            return
        import pyinstrument.profiler  # noqa: F401

        import pytest_kerasperf.gate
        import pytest_kerasperf.results_file  # noqa: F401
        from pytest_kerasperf import backends

        backends.import_keras()
    finally:
        if saved is None:
            del os.environ["KERAS_BACKEND"]
        else:
            os.environ["KERAS_BACKEND"] = saved


@pytest.fixture
def inner(
    _inner_runs_share_this_process: None,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
) -> Inner:
    """An isolated project on the numpy backend with its own baseline directory."""
    return make_inner(pytester, monkeypatch)
