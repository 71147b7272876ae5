"""The census's variants (``variants_table``): the layers whose Python path a setting users run
changes, measured as the setting makes Keras run them: a padding mask from a ``mask_zero``
embedding, a mixed-precision policy (layers and the Model API, with ``LossScaleOptimizer``),
``training=True`` with dropout, images with bounding boxes and masks, and a second input shape
(eager and compiled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import model_api, runner, variants
from pytest_kerasperf.census.layers_table import LAYERS, RESEEDED, parts
from pytest_kerasperf.census.variants_table import (
    ADAPT,
    BOXES,
    BROKEN,
    COMPILE_BROKEN,
    DYNAMIC,
    FEATURE_SPACE,
    MASKED,
    MASKS,
    MIXED,
    MIXED_MODEL,
    POLICIES,
    TRAINING,
    WRAPPED,
)

pytestmark = pytest.mark.kerasperf(latency=False)


def _layer(name: str, made: str, backend: str) -> Any:
    public = runner.public(name)
    args, kwargs = runner.arguments(name, made, backend, parts())
    return public(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(MASKED))
def test_masked(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    made, how = MASKED[name]
    model = variants.masked_model(_layer(name, made, kerasperf_backend), how)
    (ids,), _ = runner.arguments(name, "ids", kerasperf_backend)
    ready = runner.trial(f"{name} (masked)", kerasperf_backend, model, (ids,), {}, BROKEN)
    kerasperf(ready.call, *ready.args)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed(kerasperf: KerasPerf, kerasperf_backend: str, name: str, policy: str) -> None:
    made, call = MIXED[name]
    with variants.policy(policy):
        layer = _layer(name, made, kerasperf_backend)
        args, kwargs = runner.arguments(name, call, kerasperf_backend)
        ready = runner.trial(f"{name} ({policy})", kerasperf_backend, layer, args, kwargs, BROKEN)
        kerasperf(ready.call, *ready.args, **ready.kwargs)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("what", MIXED_MODEL)
def test_mixed_model(
    kerasperf: KerasPerf, kerasperf_backend: str, what: str, policy: str, tmp_path: Path
) -> None:
    with variants.policy(policy):
        model = model_api.build("sequential")
        workload = model_api.call("sequential", what, model, tmp_path)
        label = f"Model.{what} ({policy})"
        ready = runner.trial(label, kerasperf_backend, workload, (), {}, BROKEN)
        kerasperf(ready.call)


@pytest.mark.parametrize("name", sorted(TRAINING))
def test_training(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    made, call = TRAINING[name]
    layer = _layer(name, made, kerasperf_backend)
    args, kwargs = runner.arguments(name, call, kerasperf_backend)
    ready = runner.trial(f"{name} (training)", kerasperf_backend, layer, args, kwargs, BROKEN)
    kerasperf(ready.call, *ready.args, **ready.kwargs)


@pytest.mark.parametrize("name", BOXES)
def test_boxes(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    """An image preprocessing layer on images with bounding boxes, a segmentation mask and
    labels (``variants_table.BOXES``)."""
    made, _call = LAYERS[name]
    made = f"{made}, bounding_box_format='xyxy'" if made else "bounding_box_format='xyxy'"
    layer = _layer(name, made, kerasperf_backend)
    (image,), _ = runner.arguments(name, "img", kerasperf_backend)
    data = variants.boxes(image, runner.data_format() == "channels_first")

    def call() -> Any:
        if name in RESEEDED:  # its chain of augmentations drawn in Python (layers_table)
            import keras

            keras.utils.set_random_seed(1337)
        return layer(data)

    ready = runner.trial(f"{name} (boxes)", kerasperf_backend, call, (), {}, BROKEN)
    kerasperf(ready.call)


@pytest.mark.parametrize("name", MASKS)
def test_masks(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    """An image preprocessing layer that refuses bounding boxes on images with a segmentation
    mask and labels (``variants_table.MASKS``)."""
    made, _call = LAYERS[name]
    layer = _layer(name, made, kerasperf_backend)
    (image,), _ = runner.arguments(name, "img", kerasperf_backend)
    data = variants.boxes(image, runner.data_format() == "channels_first")
    del data["bounding_boxes"]
    ready = runner.trial(f"{name} (masks)", kerasperf_backend, layer, (data,), {}, BROKEN)
    kerasperf(ready.call, *ready.args)


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_wrapped(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    """A wrapper layer around another inner layer than its own entry's
    (``variants_table.WRAPPED``)."""
    public, made, call = WRAPPED[name]
    layer = runner.public(public)(*runner.arguments(name, made, kerasperf_backend, parts())[0])
    args, kwargs = runner.arguments(name, call, kerasperf_backend)
    ready = runner.trial(name, kerasperf_backend, layer, args, kwargs, BROKEN)
    kerasperf(ready.call, *ready.args, **ready.kwargs)


@pytest.mark.parametrize("name", sorted(ADAPT))
def test_adapt(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    """A preprocessing layer's ``adapt`` to data held in memory (``variants_table.ADAPT``)."""
    made, key = ADAPT[name]
    layer = _layer(name, made, kerasperf_backend)
    data = variants.adapt_data(key)
    label = f"{name}.adapt"
    ready = runner.trial(label, kerasperf_backend, layer.adapt, (data,), {}, BROKEN)
    kerasperf(ready.call, *ready.args)


@pytest.mark.parametrize("name", FEATURE_SPACE)
def test_feature_space(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    """``keras.utils.FeatureSpace``: its ``adapt`` to a ``tf.data`` dataset, and its call."""
    pytest.importorskip("tensorflow", reason="kerasperf census: FeatureSpace adapts to tf.data")
    space, dataset, batch = variants.feature_space()
    if name.endswith(".adapt"):
        ready = runner.trial(name, kerasperf_backend, space.adapt, (dataset,), {}, BROKEN)
    else:
        space.adapt(dataset)
        ready = runner.trial(name, kerasperf_backend, space, (batch,), {}, BROKEN)
    kerasperf(ready.call, *ready.args)


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_dynamic(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    made, first, second = DYNAMIC[name]
    layer = _layer(name, made, kerasperf_backend)
    a, _ = runner.arguments(name, first, kerasperf_backend)
    b, _ = runner.arguments(name, second, kerasperf_backend)

    def both() -> Any:
        layer(*a)
        return layer(*b)

    ready = runner.trial(f"{name} (dynamic)", kerasperf_backend, both, (), {}, BROKEN)
    kerasperf(ready.call)


SINGLE = sorted(n for n, (_, first, _) in DYNAMIC.items() if "," not in first)


@pytest.mark.kerasperf(mode="compiled", latency=False)
@pytest.mark.parametrize("name", SINGLE)
def test_dynamic_compiled(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    if kerasperf_backend not in ("torch", "jax", "tensorflow"):
        pytest.skip(f"kerasperf census: the {kerasperf_backend} backend has no compiled mode")
    made, first, second = DYNAMIC[name]
    layer = _layer(name, made, kerasperf_backend)
    (a,), _ = runner.arguments(name, first, kerasperf_backend)
    (b,), _ = runner.arguments(name, second, kerasperf_backend)
    label = f"{name} (dynamic)"
    runner.trial(label, kerasperf_backend, lambda: (layer(a), layer(b)), (), {}, BROKEN)
    forward = kerasperf.compile(layer, a)

    def both() -> Any:
        forward(a)
        return forward(b)

    ready = runner.trial(label, kerasperf_backend, both, (), {}, COMPILE_BROKEN)
    kerasperf(ready.call)
