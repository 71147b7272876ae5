"""The eager forwards' Python calls counted without the plugin: a plain script, as the article did.

    PYTHONHASHSEED=0 KERAS_BACKEND=torch python benchmarks/independent_count.py [--tensorflow]

Builds the issue's CNN and LM with the code of ``benchmarks/bench.py`` (keras-team/keras
00952e9e) typed out here, nothing imported from ``pytest_kerasperf``, calls each forward until
``cProfile``'s total repeats, and prints the total of one forward: the independent check of the
suite's ``test_cnn_forward[eager]`` and ``test_lm_forward[eager]`` baselines
(docs/exact-counts.md).  ``--tensorflow`` imports tensorflow first (after torch), as the
plugin's canonical process does, to show that it moves no count of these forwards.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import sys
from typing import Any


def cnn(keras: Any) -> Any:
    layers = keras.layers
    inp = keras.Input((32, 32, 3))
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(inp)
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(128, 3, padding="same", activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(10)(x)
    return keras.Model(inp, x)


def lm(keras: Any) -> Any:
    layers = keras.layers
    inp = keras.Input((None,), dtype="int32")
    x = layers.Embedding(1024, 256)(inp)
    for _ in range(2):
        r = x
        x = layers.LayerNormalization()(x)
        x = layers.MultiHeadAttention(4, 64)(x, x, use_causal_mask=True)
        x = x + r
        r = x
        x = layers.LayerNormalization()(x)
        x = layers.Dense(1024, activation="gelu")(x)
        x = layers.Dense(256)(x) + r
    x = layers.Dense(1024)(layers.LayerNormalization()(x))
    return keras.Model(inp, x)


def calls(forward: Any, argument: Any) -> int:
    """One forward's total calls, once two profiled calls in a row agree."""
    totals: list[int] = []
    while len(totals) < 2 or totals[-1] != totals[-2]:
        profile = cProfile.Profile()
        profile.enable()
        forward(argument)
        profile.disable()
        # every entry by code object (pstats keys by file, line and name, and keeps one of the
        # namedtuples' `<string>:1:<lambda>` constructors), but the profiler's own disable()
        totals.append(
            sum(
                entry.callcount
                for entry in profile.getstats()
                if "_lsprof.Profiler" not in str(entry.code)
            )
        )
        if len(totals) > 20:
            raise SystemExit(f"counts never repeated: {totals}")
    return totals[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorflow", action="store_true", help="import tensorflow first")
    args = parser.parse_args()
    if args.tensorflow:
        for name in ("torch", "tensorflow"):  # torch first in one process
            importlib.import_module(name)
    import keras
    import numpy as np

    keras.config.enable_traceback_filtering()  # as a user has it (the plugin forces it on)
    images = np.random.default_rng(1337).standard_normal((4, 32, 32, 3)).astype("float32")
    ids = np.ones((4, 64), dtype="int32")
    model_cnn, model_lm = cnn(keras), lm(keras)
    report = {
        "backend": keras.backend.backend(),
        "tensorflow imported": "tensorflow" in sys.modules,
        "cnn forward": calls(lambda x: model_cnn(x, training=False), images),
        "lm forward": calls(lambda x: model_lm(x, training=False), ids),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
