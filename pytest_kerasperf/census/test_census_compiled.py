"""Compile health per layer: each layer of ``layers_table.LAYERS`` called on one input, compiled
as the issue's script compiles a model (``torch.compile`` / ``jax.jit`` / ``tf.function``), with
its torch graph breaks and reasons (``torch._dynamo.explain``) and its recompiles / retraces
on calls with the same shapes, gated like the suite's compiled tests.  Layers called with
several positional inputs (attention's query and value, a cell's states) are measured eager only
(``test_census_layers``)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import inputs, runner
from pytest_kerasperf.census.layers_table import (
    COMPILE_BROKEN,
    COMPILE_KNOWN,
    LAYERS,
    RESEEDED,
    parts,
)

pytestmark = pytest.mark.kerasperf(mode="compiled", latency=False)


def _one_input(spec: str | None) -> bool:
    if spec is None:
        return False
    args, kwargs = inputs.parse(spec)
    return len(args) == 1 and set(kwargs) <= {"training"}


COMPILED = sorted(n for n, (_, call) in LAYERS.items() if _one_input(call) and n not in RESEEDED)


@pytest.mark.parametrize("name", COMPILED)
def test_layer_compiled(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    from keras import ops

    if kerasperf_backend not in ("torch", "jax", "tensorflow"):
        pytest.skip(f"kerasperf census: the {kerasperf_backend} backend has no compiled mode")
    public = runner.public(name)
    made, call = LAYERS[name]
    assert call is not None
    args, kwargs = inputs.bind(made, ops.convert_to_tensor, runner.data_format(), parts())
    (x,), _ = runner.arguments(name, call.split(", training=")[0], kerasperf_backend)
    layer: Any = public(*args, **kwargs)
    eager = runner.trial(name, kerasperf_backend, layer, (x,), {}, {})
    forward = kerasperf.compile(eager.call, x)
    ready = runner.trial(name, kerasperf_backend, forward, (x,), {}, COMPILE_BROKEN)
    record = kerasperf(ready.call, x)
    known = COMPILE_KNOWN.get((kerasperf_backend, name))
    if known is not None and record.gave_up:
        pytest.skip(
            f"kerasperf census: a known compile-health failure ({known}): {record.gave_up[0]}"
        )
    if known is not None:
        pytest.fail(
            f"kerasperf census: {name} now compiles without a frame dynamo gives up on, on "
            f"{kerasperf_backend}: remove its COMPILE_KNOWN entry ({known!r})",
            pytrace=False,
        )
