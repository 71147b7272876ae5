"""The models and workloads of Keras issue #22561, exactly as the issue's script builds them.

The script is ``benchmarks/bench.py`` at keras-team/keras commit 00952e9e
(``refs/pull/22139/head``).  Everything that decides what Keras executes is
copied from it line for line: the layer calls and their arguments, the ``+``
residuals of the LM (Keras ops, not ``layers.Add``), numpy inputs handed to the
model, the forward closures (``lambda x: model(x, training=False)``), and the
greedy generate loop with its ``[:, -1:, :]`` slice.

Its deliberate differences (seeded, built under Keras's default config, a compiled mode on
tensorflow) change no Python call of a forward: docs/models.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pytest_kerasperf import backends

SEED = 1337
# The script's constants.
BATCH = 4
VOCAB = 1024
SEQ = 64
HDIM = 256
HEADS = 4
NLAYERS = 2
GEN = 32
IMAGE_SHAPE = (32, 32, 3)

CNN_INPUT_SHAPE = (BATCH, *IMAGE_SHAPE)
LM_PROMPT_SHAPE = (BATCH, SEQ)
CNN_PARAMS = 113_866
LM_PARAMS = 2_105_344

#: The script's Keras config: Keras's defaults, which it never changes.
ISSUE_CONFIG = {"image_data_format": "channels_last", "floatx": "float32"}

Forward = Callable[[Any], Any]


@contextlib.contextmanager
def issue_config(keras: Any) -> Iterator[None]:
    """Build under the script's config (Keras's defaults); restore the user's after."""
    config = keras.config
    saved = (config.image_data_format(), config.floatx(), config.dtype_policy())
    config.set_image_data_format(ISSUE_CONFIG["image_data_format"])
    config.set_floatx(ISSUE_CONFIG["floatx"])
    config.set_dtype_policy(ISSUE_CONFIG["floatx"])
    try:
        yield
    finally:
        config.set_image_data_format(saved[0])
        config.set_floatx(saved[1])
        config.set_dtype_policy(saved[2])


def build_cnn() -> Any:
    """The script's CNN: Conv64 -> Conv64 -> Pool -> Conv128 -> GAP -> Dense10, 113,866 params."""
    keras = backends.import_keras()
    keras.utils.set_random_seed(SEED)
    layers = keras.layers
    with issue_config(keras):
        inp = keras.Input((32, 32, 3))
        x = layers.Conv2D(64, 3, padding="same", activation="relu")(inp)
        x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D()(x)
        x = layers.Conv2D(128, 3, padding="same", activation="relu")(x)
        x = layers.GlobalAveragePooling2D()(x)
        x = layers.Dense(10)(x)
        return keras.Model(inp, x)


def build_lm() -> Any:
    """The script's LM: 2-layer causal transformer (256d, 4 heads, vocab 1024), 2,105,344 params.

    The residuals are ``+`` on Keras tensors, as in the script: Keras records
    them as ``keras.ops`` additions, not as ``layers.Add`` merge layers.
    """
    keras = backends.import_keras()
    keras.utils.set_random_seed(SEED)
    layers = keras.layers
    with issue_config(keras):
        inp = keras.Input((None,), dtype="int32")
        x = layers.Embedding(VOCAB, HDIM)(inp)
        for _ in range(NLAYERS):
            r = x
            x = layers.LayerNormalization()(x)
            x = layers.MultiHeadAttention(HEADS, HDIM // HEADS)(x, x, use_causal_mask=True)
            x = x + r
            r = x
            x = layers.LayerNormalization()(x)
            x = layers.Dense(HDIM * 4, activation="gelu")(x)
            x = layers.Dense(HDIM)(x) + r
        x = layers.Dense(VOCAB)(layers.LayerNormalization()(x))
        return keras.Model(inp, x)


def cnn_input() -> Any:
    """The script's images: a float32 numpy array (4, 32, 32, 3), here seeded."""
    import numpy as np

    return np.random.default_rng(SEED).standard_normal(CNN_INPUT_SHAPE).astype("float32")


def lm_prompt() -> Any:
    """The script's ids: ``np.ones((4, 64), dtype="int32")``."""
    import numpy as np

    return np.ones(LM_PROMPT_SHAPE, dtype="int32")


#: The train-step workloads' optimizer and loss (docs/models.md): what a Keras user writes for
#: these models (class ids and next-token ids, logits out).  The issue's script does not train.
LEARNING_RATE = 1e-3
CNN_CLASSES = 10


def cnn_labels() -> Any:
    """The CNN's class ids for a train step: seeded int32, shape (4,), in [0, 10)."""
    import numpy as np

    return np.random.default_rng(SEED).integers(0, CNN_CLASSES, size=(BATCH,)).astype("int32")


def lm_targets() -> Any:
    """The LM's next-token ids for a train step: the prompt shifted by one token.

    The prompt is all ones (the script's ``np.ones``), so the next tokens are
    ones too: an int32 array of shape (4, 64).
    """
    return lm_prompt()


def compile_for_training(model: Any, mode: str) -> None:
    """``model.compile`` as a user writes it: Adam, sparse categorical cross-entropy on logits.

    ``mode`` ``"eager"``: ``run_eagerly=True`` (no torch.compile, jax.jit or
    tf.function); ``"compiled"``: ``jit_compile=True`` (torch.compile on torch,
    XLA through jax.jit on jax and ``tf.function(jit_compile=True)`` on
    tensorflow).  Under the script's config, as the models are built.
    """
    keras = backends.import_keras()
    with issue_config(keras):
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate=LEARNING_RATE),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=mode == "compiled",
            run_eagerly=mode == "eager",
        )


def eager_forward(model: Any) -> Forward:
    """The script's eager call: ``lambda x: model(x, training=False)``."""
    return lambda x: model(x, training=False)


def generate(forward: Forward, prompt: Any, steps: int = GEN) -> Any:
    """The script's ``gen_keras``: greedy decoding over a fixed window of the prompt's length.

    ``forward`` is called with one argument, as the script's ``call_fn``: the
    eager closure, the torch-compiled closure or the jitted function.
    """
    # Keras is imported by now (``forward`` calls a Keras model); a module lookup
    # adds no profiled call, so the counts hold Keras's work and nothing of ours.
    ops = sys.modules["keras"].ops
    cur = ops.convert_to_tensor(prompt)
    for _ in range(steps):
        logits = forward(cur)
        nxt = ops.cast(ops.argmax(logits[:, -1:, :], axis=-1), "int32")
        cur = ops.concatenate([cur[:, 1:], nxt], axis=1)
    return cur
