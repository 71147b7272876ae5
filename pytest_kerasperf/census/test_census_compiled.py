"""Compile health per layer: each layer of ``layers_table.LAYERS`` called on one input, compiled
as the issue's script compiles a model (``torch.compile`` / ``jax.jit`` / ``tf.function``), with
its torch graph breaks and reasons (``torch._dynamo.explain``) and its recompiles / retraces
on calls with the same shapes, gated like the suite's compiled tests.  Layers called with
several positional inputs (attention's query and value, a cell's states) are measured eager only
(``test_census_layers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf import KerasPerf, backends
from pytest_kerasperf.census import inputs, model_api, runner
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
    runner.judge_known(COMPILE_KNOWN, name, kerasperf_backend, record.gave_up)


@pytest.fixture
def fresh_compiler(kerasperf_backend: str) -> Iterator[None]:
    """dynamo forgets what it compiled before the test and after it: Keras's train, test and
    predict steps are the same code for every model, and dynamo keeps its compiles on the
    code, so a step compiled by an earlier test would be a recompile of this one's."""
    backends.reset_compiler(kerasperf_backend)
    yield
    backends.reset_compiler(kerasperf_backend)


@pytest.mark.parametrize("call", ["fit", "evaluate", "predict"])
def test_model_compiled(
    kerasperf: KerasPerf,
    kerasperf_backend: str,
    call: str,
    tmp_path: Path,
    fresh_compiler: None,
) -> None:
    """The census's Sequential compiled with ``jit_compile=True`` on torch, where Keras then
    compiles its step with ``torch.compile`` (its default there is eager), and one ``fit``,
    ``evaluate`` or ``predict`` as ``test_model`` measures them.  On jax and tensorflow
    ``jit_compile=True`` is Keras's default, measured by ``test_model``; numpy and openvino have
    no compiled mode."""
    if kerasperf_backend != "torch":
        pytest.skip(
            f"kerasperf census: jit_compile=True is Keras's default step on {kerasperf_backend} "
            "(test_model) or not a compiled mode there"
        )
    name = f"Model.{call}[jit_compile=True]"
    model = model_api.build("sequential", jit_compile=True)
    ready = runner.trial(
        name, kerasperf_backend, model_api.call("sequential", call, model, tmp_path), (), {}, {}
    )
    steps = (model.train_function, model.test_function, model.predict_function)
    kerasperf.compiled_by_keras(*(step for step in steps if step is not None))
    kerasperf(ready.call)
