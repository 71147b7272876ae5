"""The census's variant workloads made ready (``variants_table``): a masked model, a policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: token ids the masked models take (``inputs``' ``ids``: steps, vocabulary)
STEPS = 5
VOCABULARY = 6


def masked_model(layer: Any, how: str) -> Any:
    """``Input((5,), int32) -> Embedding(6, 4, mask_zero=True) -> layer`` as a Functional model,
    the embedding's output entering the layer as ``how`` says (``variants_table.MASKED``)."""
    import keras

    keras.utils.set_random_seed(1337)
    ids = keras.Input((STEPS,), dtype="int32")
    embedded = keras.layers.Embedding(VOCABULARY, 4, mask_zero=True)(ids)
    if how == "one":
        out = layer(embedded)
    elif how == "query_value":
        out = layer(embedded, embedded)
    elif how == "list":
        out = layer([embedded, embedded])
    else:
        raise ValueError(f"no masked input {how!r}: one, query_value or list")
    return keras.Model(ids, out)


#: the data the census's ``adapt`` workloads read (``variants_table.ADAPT``): numpy arrays,
#: as a user adapts a layer to a dataset held in memory
ADAPT_DATA = {
    "floats": "float32 (8, 3), evenly spaced in [0, 1]",
    "ints": "int64 (4, 2), ids 1 to 5",
    "strings": "str (4, 2), tokens 'a' to 'e'",
    "text": "str (4,), sentences of three words",
}


def adapt_data(key: str) -> Any:
    """The numpy array ``ADAPT_DATA[key]`` describes."""
    import numpy as np

    arrays: dict[str, Callable[[], Any]] = {
        "floats": lambda: np.linspace(0.0, 1.0, 24, dtype="float32").reshape(8, 3),
        "ints": lambda: np.array([[1, 2], [3, 1], [2, 2], [4, 5]], "int64"),
        "strings": lambda: np.array([["a", "b"], ["c", "a"], ["b", "b"], ["d", "e"]]),
        "text": lambda: np.array(["the cat sat", "a dog ran", "the dog sat", "a cat ran"]),
    }
    assert set(arrays) == set(ADAPT_DATA)
    return arrays[key]()


def feature_space() -> tuple[Any, Any, dict[str, Any]]:
    """``keras.utils.FeatureSpace`` of a normalized float and an integer category (concatenated),
    a ``tf.data`` dataset of four samples of both, and the samples as a batch."""
    import keras
    import numpy as np
    import tensorflow as tf

    space = keras.utils.FeatureSpace(
        features={"a": "float_normalized", "b": "integer_categorical"}, output_mode="concat"
    )
    batch = {"a": np.array([0.1, 0.2, 0.5, 0.9], "float32"), "b": np.array([1, 2, 1, 3], "int64")}
    return space, tf.data.Dataset.from_tensor_slices(batch), batch


def boxes(image: Any, channels_first: bool) -> dict[str, Any]:
    """What an object-detection or segmentation pipeline hands an image preprocessing layer:
    ``image`` (one image, ``inputs``' ``img``) with two ``xyxy`` bounding boxes in pixels and
    their labels, a segmentation mask of one channel, and its class labels, as backend
    tensors."""
    import numpy as np
    from keras import ops

    height, width = (image.shape[2], image.shape[3]) if channels_first else image.shape[1:3]
    mask = (1, 1, height, width) if channels_first else (1, height, width, 1)
    return {
        "images": image,
        "bounding_boxes": {
            "boxes": ops.convert_to_tensor(np.array([[[1, 1, 5, 5], [2, 3, 7, 6]]], "float32")),
            "labels": ops.convert_to_tensor(np.array([[0, 1]], "float32")),
        },
        "segmentation_masks": ops.convert_to_tensor(np.zeros(mask, "float32")),
        "labels": ops.convert_to_tensor(np.array([[0.0, 1.0]], "float32")),
    }


@contextmanager
def policy(name: str) -> Iterator[None]:
    """Keras's global dtype policy set to ``name`` inside, restored after (even on a failure)."""
    import keras

    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(before)
