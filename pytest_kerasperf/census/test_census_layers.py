"""One perf test per public layer of ``keras.layers``: built, called once (it builds its
weights), then the call a user makes measured, ``layer(*inputs)`` (``layers_table.LAYERS``).
A public function (``keras.layers.add``) or a construction (``keras.Input``) is measured as
that call."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import runner
from pytest_kerasperf.census.layers_table import BROKEN, LAYERS, RESEEDED, parts

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    public = runner.public(name)
    made, call = LAYERS[name]
    args, kwargs = runner.arguments(name, made, kerasperf_backend, parts())
    if call is None:
        ready = runner.trial(name, kerasperf_backend, public, args, kwargs, BROKEN)
    else:
        call_args, call_kwargs = runner.arguments(name, call, kerasperf_backend)
        layer: Any = public(*args, **kwargs)
        if name in RESEEDED:
            import keras

            built = public(*args, **kwargs)

            def layer(*inputs: Any, **options: Any) -> Any:
                keras.utils.set_random_seed(1337)
                return built(*inputs, **options)

        ready = runner.trial(name, kerasperf_backend, layer, call_args, call_kwargs, BROKEN)
    kerasperf(ready.call, *ready.args, **ready.kwargs)
