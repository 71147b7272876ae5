"""One perf test per public op: ``keras.ops`` and ``keras.ops.image``, called as users call
them, on backend tensors (``ops_table.OPS``)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import runner
from pytest_kerasperf.census.ops_table import BROKEN, OPS

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(OPS))
def test_op(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    op = runner.public(name)
    args, kwargs = runner.arguments(name, OPS[name], kerasperf_backend)
    ready = runner.trial(name, kerasperf_backend, op, args, kwargs, BROKEN)
    kerasperf(ready.call, *ready.args, **ready.kwargs)
