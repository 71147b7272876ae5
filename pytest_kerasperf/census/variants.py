"""The census's variant workloads made ready (``variants_table``): a masked model, a policy."""

from __future__ import annotations

from collections.abc import Iterator
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
