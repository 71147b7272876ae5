"""The models and workloads of Keras issue #22561, in Keras code only.

Built for the active backend with seeded weights and ``channels_last`` data
whatever ``keras.json`` says.
"""

from __future__ import annotations

import sys
from typing import Any

from pytest_kerasperf import backends

SEED = 1337
CNN_INPUT_SHAPE = (4, 32, 32, 3)
LM_VOCAB = 1024
LM_WIDTH = 256
LM_HEADS = 4
LM_KEY_DIM = 64
LM_HIDDEN = 1024
LM_LAYERS = 2
LM_PROMPT_SHAPE = (4, 64)
GENERATE_STEPS = 32


def build_cnn() -> Any:
    """The issue's CNN: 113,866 parameters, input float32 (4, 32, 32, 3)."""
    keras = backends.import_keras()
    keras.utils.set_random_seed(SEED)
    layers = keras.layers
    fmt = "channels_last"
    inputs = keras.Input(shape=CNN_INPUT_SHAPE[1:], dtype="float32")
    x = layers.Conv2D(64, 3, padding="same", activation="relu", data_format=fmt)(inputs)
    x = layers.Conv2D(64, 3, padding="same", activation="relu", data_format=fmt)(x)
    x = layers.MaxPooling2D(2, data_format=fmt)(x)
    x = layers.Conv2D(128, 3, padding="same", activation="relu", data_format=fmt)(x)
    x = layers.GlobalAveragePooling2D(data_format=fmt)(x)
    outputs = layers.Dense(10)(x)
    return keras.Model(inputs, outputs, name="kerasperf_cnn")


def build_lm() -> Any:
    """The issue's 2-layer transformer LM: 2,105,344 parameters, int32 ids (batch, None)."""
    keras = backends.import_keras()
    keras.utils.set_random_seed(SEED)
    layers = keras.layers
    ids = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(LM_VOCAB, LM_WIDTH)(ids)
    for _ in range(LM_LAYERS):
        h = layers.LayerNormalization()(x)
        h = layers.MultiHeadAttention(num_heads=LM_HEADS, key_dim=LM_KEY_DIM)(
            h, h, use_causal_mask=True
        )
        x = layers.Add()([x, h])
        h = layers.LayerNormalization()(x)
        h = layers.Dense(LM_HIDDEN, activation="gelu")(h)
        h = layers.Dense(LM_WIDTH)(h)
        x = layers.Add()([x, h])
    x = layers.LayerNormalization()(x)
    logits = layers.Dense(LM_VOCAB)(x)
    return keras.Model(ids, logits, name="kerasperf_lm")


def cnn_input() -> Any:
    """Seeded float32 images of shape (4, 32, 32, 3) as a backend tensor."""
    import numpy as np

    keras = backends.import_keras()
    data = np.random.default_rng(SEED).standard_normal(CNN_INPUT_SHAPE).astype("float32")
    return keras.ops.convert_to_tensor(data)


def lm_prompt() -> Any:
    """The prompt: all ones, int32, shape (4, 64)."""
    keras = backends.import_keras()
    return keras.ops.ones(LM_PROMPT_SHAPE, dtype="int32")


def generate(forward: Any, prompt: Any, steps: int = GENERATE_STEPS) -> Any:
    """Greedy decoding over a fixed window: argmax of the last position, shift, append.

    ``forward`` is the model or its compiled forward; it is called once per step
    on a window of the prompt's shape, so a compiled forward never retraces.
    """
    # Keras is imported by now (``forward`` is a Keras model); a module lookup
    # adds no profiled call, so the counts hold Keras's work and nothing of ours.
    ops = sys.modules["keras"].ops
    window = prompt
    for _ in range(steps):
        logits = forward(window, training=False)
        token = ops.cast(ops.argmax(logits[:, -1, :], axis=-1), "int32")
        window = ops.concatenate([window[:, 1:], ops.expand_dims(token, 1)], axis=1)
    return window
