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


#: the calibration model's sequence length and vocabulary
SEQUENCE = 8
VOCABULARY = 16


def calibration_model() -> tuple[Any, dict[str, list[Any]]]:
    """The census's token classifier for GPTQ and AWQ, seeded, and its layer structure (the
    ``Embedding`` before the block, the block Keras quantizes layer by layer)."""
    import keras

    keras.utils.set_random_seed(1337)
    embedding = keras.layers.Embedding(VOCABULARY, 8)
    block = keras.Sequential(
        [keras.layers.Dense(16, activation="relu"), keras.layers.Dense(8)], name="block"
    )
    ids = keras.Input((SEQUENCE,), dtype="int32")
    pooled = keras.layers.GlobalAveragePooling1D()(block(embedding(ids)))
    model = keras.Model(ids, keras.layers.Dense(3)(pooled))
    return model, {"pre_block_layers": [embedding], "sequential_blocks": [block]}


def calibration_data() -> list[Any]:
    """Two samples of token ids ``(1, SEQUENCE)``, already tokenized."""
    import numpy as np

    ids = np.arange(SEQUENCE, dtype="int32").reshape(1, SEQUENCE)
    return [ids % VOCABULARY, (ids * 3) % VOCABULARY]


def _calibrate(mode: str) -> Any:
    """A new calibration model quantized in ``mode``; what Keras prints (its progress bar over
    the blocks) goes to a buffer, so that the code it runs does not depend on pytest's output."""
    import contextlib
    import io

    import keras

    model, structure = calibration_model()
    data = calibration_data()
    common: dict[str, Any] = {
        "dataset": data,
        "tokenizer": _tokens,
        "num_samples": len(data),
        "sequence_length": SEQUENCE,
        "group_size": 8,
        "quantization_layer_structure": structure,
    }
    if mode == "gptq":
        config = keras.quantizers.GPTQConfig(weight_bits=4, **common)
    elif mode == "awq":
        config = keras.quantizers.AWQConfig(num_grid_points=4, **common)
    else:
        raise ValueError(f"no census calibrated mode {mode!r}")
    with contextlib.redirect_stdout(io.StringIO()):
        model.quantize(mode, config=config)
    return model


def _tokens(sample: Any) -> Any:
    """The calibration data is token ids already."""
    return sample


def calibrated(what: str, mode: str, kind: str, backend: str) -> Callable[[], Any]:
    """The ``CALIBRATED`` workload ``kind`` in ``mode``: a skip naming what this Keras lacks
    (the mode's config) or Keras's own ``NotImplementedError``."""
    import keras

    config = {"gptq": "GPTQConfig", "awq": "AWQConfig"}[mode]
    if not hasattr(keras.quantizers, config):
        pytest.skip(f"kerasperf census: keras.quantizers.{config}: not in this Keras")
    made: list[Any] = []
    _quantized(what, backend, lambda: made.append(_calibrate(mode)))
    if kind == "quantize":
        return lambda: _calibrate(mode)
    if kind == "forward":
        model, ids = made[0], calibration_data()[0]
        return lambda: model(ids)
    raise ValueError(f"no census calibrated workload {kind!r}")
