"""The census's test bodies without the plugin: ``benchmarks/census_cost.py overhead``'s baseline.

A pytest plugin (``-p no:kerasperf -p census_bare`` with ``benchmarks/`` on ``PYTHONPATH``)
that gives the census tests the two fixtures they take from pytest-kerasperf, doing none of
its work: ``kerasperf(fn, *args, **kwargs)`` calls the workload once and waits for its device
(as a user's call does), and nothing is profiled, digested, compared or reported.  So a census
test under it costs what the test costs by itself: finding the symbol, making its inputs,
building it, the two trial calls and one call.  Each call's seconds go, one JSON line per test,
to the file named by ``KERASPERF_BARE_LOG``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import pytest

LOG = "KERASPERF_BARE_LOG"


class BareCall:
    """Calls the workload once, timed; what the ``kerasperf`` fixture is to a census test."""

    def __init__(self, nodeid: str, sync: Callable[[Any], None]) -> None:
        self._nodeid = nodeid
        self._sync = sync

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        self._sync(fn(*args, **kwargs))
        seconds = time.perf_counter() - start
        path = os.environ.get(LOG)
        if path:
            with open(path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"test": self._nodeid, "call_s": seconds}) + "\n")

    def compile(self, model: Any, example_input: Any) -> Any:
        raise NotImplementedError("census_bare measures the counts census only (-k 'not compiled')")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kerasperf: the census's marker (no effect here)")


@pytest.fixture(scope="session")
def kerasperf_backend() -> str:
    from pytest_kerasperf import backends

    try:
        backends.import_keras()
    except backends.FrameworkMissing as error:
        pytest.skip(f"census_bare: {error}")
    return backends.active_backend()


@pytest.fixture
def kerasperf(request: pytest.FixtureRequest, kerasperf_backend: str) -> BareCall:
    from pytest_kerasperf import backends

    return BareCall(request.node.nodeid, backends.make_sync(kerasperf_backend))
