"""The census's quantization workloads made ready (``quantize_table``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_kerasperf.census import runner


def built(layer: str) -> tuple[Any, Any]:
    """The census's ``layer``, seeded and built on its input; and the input."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(1337)
    if layer == "Dense":
        made = keras.layers.Dense(8)
        x = np.linspace(0.0, 1.0, 8, dtype="float32").reshape(2, 4)
    elif layer == "EinsumDense":
        made = keras.layers.EinsumDense("ab,bc->ac", output_shape=8, bias_axes="c")
        x = np.linspace(0.0, 1.0, 8, dtype="float32").reshape(2, 4)
    elif layer == "Embedding":
        made = keras.layers.Embedding(10, 8)
        x = np.array([[1, 2, 3], [4, 5, 6]], dtype="int32")
    else:
        raise ValueError(f"no census quantized layer {layer!r}")
    made(x)
    return made, x


def _quantized(what: str, backend: str, quantize: Callable[[], Any]) -> None:
    """``quantize()``, or a skip with Keras's reason where it cannot quantize so."""
    try:
        quantize()
    except NotImplementedError as error:
        pytest.skip(
            f"kerasperf census: Keras cannot run {what} on {backend}: {runner.describe(error)}"
        )


def workload(what: str, layer: str, mode: str, kind: str, backend: str) -> Callable[[], Any]:
    """The workload ``kind`` of ``layer`` in ``mode`` (``quantize_table``)."""
    import keras
    import numpy as np

    if kind == "forward":
        made, x = built(layer)
        _quantized(what, backend, lambda: made.quantize(mode))
        return lambda: made(x)
    if kind == "train_on_batch":
        made, x = built(layer)
        model = keras.Sequential([keras.Input(x.shape[1:], dtype=str(x.dtype)), made])
        _quantized(what, backend, lambda: model.quantize(mode))
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mean_squared_error")
        target = np.zeros((*x.shape, 8) if layer == "Embedding" else (x.shape[0], 8), "float32")
        return lambda: model.train_on_batch(x, target)
    if kind == "quantize":
        _quantized(what, backend, lambda: built(layer)[0].quantize(mode))

        def quantize() -> Any:
            fresh, _ = built(layer)
            fresh.quantize(mode)
            return fresh

        return quantize
    raise ValueError(f"no census quantization workload {kind!r}")
