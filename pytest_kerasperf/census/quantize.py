"""The census's quantization workloads made ready (``quantize_table``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.census import runner
from pytest_kerasperf.census.quantize_table import BROKEN, RANK


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
    elif layer == "Conv2D":
        made = keras.layers.Conv2D(8, 3)
        shape = (
            (1, 5, 5, 2) if keras.config.image_data_format() == "channels_last" else (1, 2, 5, 5)
        )
        x = np.linspace(0.0, 1.0, 50, dtype="float32").reshape(shape)
    else:
        raise ValueError(f"no census quantized layer {layer!r}")
    made(x)
    return made, x


def _quantized(what: str, backend: str, quantize: Callable[[], Any]) -> None:
    """``quantize()``, or a skip with Keras's reason where it cannot quantize so (or where
    ``quantize_table.BROKEN`` names the error it fails with)."""
    runner.attempt(what, backend, BROKEN, quantize)


def _trained(made: Any, x: Any, quantize: Callable[[Any], None] | None = None) -> Callable[[], Any]:
    """One ``train_on_batch`` of a ``Sequential`` holding ``made`` (SGD, mean squared error),
    the model given to ``quantize`` before it compiles."""
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input(x.shape[1:], dtype=str(x.dtype)), made])
    if quantize is not None:
        quantize(model)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mean_squared_error")
    target = np.zeros(made.compute_output_shape(x.shape), "float32")
    return lambda: model.train_on_batch(x, target)


def _saved(model: Any) -> Callable[[], Any]:
    """``model`` saved to a ``.keras`` file, named relative to the working directory (the
    test's ``tmp_path``: ``runner.work_in``), and loaded back."""
    import keras

    path = Path("quantized.keras")

    def save_load() -> Any:
        model.save(path)
        return keras.saving.load_model(path)

    return save_load


def _with_lora(layer: str, mode: str) -> tuple[Any, Any]:
    """The census's ``layer``, quantized to ``mode`` unless it is "float", with LoRA."""
    made, x = built(layer)
    if mode != "float":
        made.quantize(mode)
    made.enable_lora(RANK)
    return made, x


def workload(what: str, layer: str, mode: str, kind: str, backend: str) -> Callable[[], Any]:
    """The workload ``kind`` of ``layer`` in ``mode`` (``quantize_table``)."""
    import keras

    if kind in ("enable_lora", "lora", "lora_train_on_batch"):
        made, x = runner.attempt(what, backend, BROKEN, lambda: _with_lora(layer, mode))
        if kind == "enable_lora":
            return lambda: _with_lora(layer, mode)[0]
        return (lambda: made(x)) if kind == "lora" else _trained(made, x)
    made, x = built(layer)
    if kind == "forward":
        _quantized(what, backend, lambda: made.quantize(mode))
        return lambda: made(x)
    if kind == "train_on_batch":
        return _trained(
            made, x, lambda model: _quantized(what, backend, lambda: model.quantize(mode))
        )
    if kind == "save_load":
        _quantized(what, backend, lambda: made.quantize(mode))
        return _saved(keras.Sequential([keras.Input(x.shape[1:], dtype=str(x.dtype)), made]))
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
    if kind == "save_load":
        return _saved(made[0])
    raise ValueError(f"no census calibrated workload {kind!r}")
