"""One perf test per public op: ``keras.ops`` and ``keras.ops.image``, called as users call
them, on backend tensors (``ops_table.OPS``)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import op_modes_table, runner
from pytest_kerasperf.census.ops_table import BROKEN, OPS

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(OPS))
def test_op(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    op = runner.public(name)
    args, kwargs = runner.arguments(name, OPS[name], kerasperf_backend)
    ready = runner.trial(name, kerasperf_backend, op, args, kwargs, BROKEN)
    kerasperf(ready.call, *ready.args, **ready.kwargs)


@pytest.mark.parametrize("name", sorted(op_modes_table.OP_MODES))
def test_op_mode(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    """An op in a mode whose code its default call never runs (``op_modes_table.OP_MODES``)."""
    public, spec = op_modes_table.OP_MODES[name]
    op = runner.public(public)
    args, kwargs = runner.arguments(name, spec, kerasperf_backend)
    ready = runner.trial(name, kerasperf_backend, op, args, kwargs, op_modes_table.BROKEN)
    kerasperf(ready.call, *ready.args, **ready.kwargs)
