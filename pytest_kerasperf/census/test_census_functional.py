"""Two perf tests per public op that takes a tensor, as a Functional model uses it: the op
inside a model, ``model(inputs)`` of ``keras.Model(Input(s), op(Input(s)))``, which runs its
``Operation.call``; and the op called on ``Input``s, as building the model calls it, which runs
its ``compute_output_spec`` (``functional_table``)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import functional
from pytest_kerasperf.census.ops_table import OPS

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_in_model(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    ready = functional.model_of(name, OPS[name], kerasperf_backend)
    kerasperf(ready.call, *ready.args, **ready.kwargs)


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_symbolic(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    ready = functional.symbolic_of(name, OPS[name], kerasperf_backend)
    kerasperf(ready.call, *ready.args, **ready.kwargs)
