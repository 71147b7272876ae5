"""One perf test per public activation, loss, metric, optimizer, initializer, regularizer and
constraint, each called as ``fit`` or a user calls it (``api_table.ENTRIES``)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import api
from pytest_kerasperf.census.api_table import ENTRIES

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_api(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    ready = api.ready(name, kerasperf_backend)
    kerasperf(ready.call, *ready.args, **ready.kwargs)
