"""The census's ``keras.applications`` workloads made ready (``applications_table``): each model
built by the test that measures it, its input made, the call bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_kerasperf.census import runner
from pytest_kerasperf.census.applications_table import BROKEN, MODELS


def images(side: int, batch: int) -> Any:
    """``batch`` RGB images of ``side`` x ``side`` with values in [0, 255], laid out as the Keras
    config's ``image_data_format`` says."""
    import numpy as np

    shape = (
        (batch, 3, side, side)
        if runner.data_format() == "channels_first"
        else (batch, side, side, 3)
    )
    return np.linspace(0.0, 255.0, int(np.prod(shape)), dtype="float32").reshape(shape)


def model(name: str) -> Any:
    """``name`` built (``weights=None``, 4 classes, seeded), by each test that measures it: a
    model kept for the process keeps its arrays' abstract values alive, and jax interns those
    (``ShapedArray._create``, a weak-value interner), so a later test that makes one of the
    same shape and dtype found it alive and counted 2 calls fewer (jax
    ``test_layer[layers.MelSpectrogram]``: 8,341 alone, 8,339 after the models of this module
    were built once and kept)."""
    import keras

    keras.utils.set_random_seed(1337)
    side = MODELS[name]
    shape = (3, side, side) if runner.data_format() == "channels_first" else (side, side, 3)
    return runner.public(name)(weights=None, input_shape=shape, classes=4)


def ready(name: str, kind: str, backend: str) -> runner.Ready:
    """``name``'s ``kind`` workload, its first two calls made (a skip, with Keras's reason,
    where Keras refuses to build the model on this backend and ``BROKEN`` says so)."""
    label = f"{name}.{kind}"
    try:
        built = model(name)
    except Exception as error:
        known = next(
            (
                BROKEN[key]
                for key in ((s, label) for s in runner.settings(backend))
                if key in BROKEN
            ),
            None,
        )
        if known is None:
            raise
        pytest.skip(
            f"kerasperf census: Keras fails {label} on {backend} ({known}): "
            f"{runner.describe(error)}"
        )
    if kind == "forward":
        x = images(MODELS[name], 1)
        call: Callable[[], Any] = lambda: built(x)  # noqa: E731
    else:
        batch = images(MODELS[name], 2)
        call = lambda: built.predict(batch, verbose=0)  # noqa: E731
    return runner.trial(label, backend, call, (), {}, BROKEN)


def preprocess(module: str, backend: str) -> runner.Ready:
    """``keras.applications.<module>.preprocess_input`` on the census's batch of 32 x 32 images."""
    function = runner.public(f"applications.{module}.preprocess_input")
    batch = images(32, 2)
    label = f"applications.{module}.preprocess_input"
    return runner.trial(label, backend, lambda: function(batch.copy()), (), {}, BROKEN)
