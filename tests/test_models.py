"""The suite's models are the issue's models, exactly, and their counts are exact.

The issue's script (keras-team/keras 00952e9e, benchmarks/bench.py) builds a
CNN and a 2-layer transformer LM; the expected structure below is written from
that script's code and constants (BATCH=4, VOCAB=1024, SEQ=64, HDIM=256,
HEADS=4, NLAYERS=2), each parameter count as its formula.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.realrun import probe, write_keras_json

ALL_BACKENDS = ("torch", "jax", "tensorflow", "numpy")
VOCAB, HDIM, HEADS = 1024, 256, 4


def conv(filters: int, channels_in: int) -> dict[str, Any]:
    return {
        "class": "Conv2D",
        "filters": filters,
        "kernel_size": [3, 3],
        "strides": [1, 1],
        "padding": "same",
        "activation": "relu",
        "data_format": "channels_last",
        "params": 3 * 3 * channels_in * filters + filters,
    }


def dense(units: int, units_in: int, activation: str = "linear") -> dict[str, Any]:
    return {
        "class": "Dense",
        "units": units,
        "activation": activation,
        "params": units_in * units + units,
    }


LAYER_NORM = {"class": "LayerNormalization", "params": 2 * HDIM}
# query, key and value projections (HDIM -> HEADS x key_dim, with bias) and the output one.
ATTENTION = {
    "class": "MultiHeadAttention",
    "num_heads": HEADS,
    "key_dim": HDIM // HEADS,
    "params": 3 * (HDIM * HDIM + HDIM) + (HDIM * HDIM + HDIM),
}
# `x + r` on Keras tensors: a keras.ops addition, not a layers.Add merge layer.
PLUS = {"class": "Add", "module": "keras.src.ops.numpy", "params": 0}

CNN = [
    {"class": "InputLayer", "dtype": "float32", "params": 0},
    conv(64, 3),
    conv(64, 64),
    {
        "class": "MaxPooling2D",
        "pool_size": [2, 2],
        "strides": [2, 2],
        "padding": "valid",
        "data_format": "channels_last",
    },
    conv(128, 64),
    {"class": "GlobalAveragePooling2D", "data_format": "channels_last", "params": 0},
    dense(10, 128),
]
BLOCK = [
    LAYER_NORM,
    ATTENTION,
    PLUS,
    LAYER_NORM,
    dense(4 * HDIM, HDIM, "gelu"),
    dense(HDIM, 4 * HDIM),
    PLUS,
]
LM = [
    {"class": "InputLayer", "dtype": "int32", "params": 0},
    {"class": "Embedding", "input_dim": VOCAB, "output_dim": HDIM, "params": VOCAB * HDIM},
    *BLOCK,
    *BLOCK,
    LAYER_NORM,
    dense(VOCAB, HDIM),
]


def matches(found: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert [op["class"] for op in found] == [op["class"] for op in expected]
    for index, (op, want) in enumerate(zip(found, expected, strict=True)):
        assert {k: op.get(k) for k in want} == want, (index, op)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_models_are_the_issues_models(backend: str, tmp_path: Path) -> None:
    # Keras CI's torch config says channels_first; a float16 floatx would make
    # the script's keras.Input((32, 32, 3)) a float16 model.  Neither may leak in.
    write_keras_json(tmp_path, backend, "channels_first", floatx="float16")
    found = probe(backend, "models", tmp_path)
    assert found["image_data_format"] == "channels_first"  # the user's config is restored
    assert found["floatx"] == "float16"
    matches(found["cnn_ops"], CNN)
    matches(found["lm_ops"], LM)
    assert found["cnn_params"] == sum(op.get("params", 0) for op in CNN) == 113_866
    assert found["lm_params"] == sum(op.get("params", 0) for op in LM) == 2_105_344
    merging = [op for op in found["lm_ops"] if "merging" in op["module"]]
    assert merging == [], "the LM adds residuals with +, not with merge layers"
    assert all(op["dtype"] in ("float32", "None") for op in found["cnn_ops"])
    assert found["cnn_input_dtype"] == "float32"
    assert found["lm_input_dtype"] == "int32"
    assert found["lm_input_shape"] == [None, None]
    assert found["inputs"] == ["numpy", "numpy"]  # the script hands numpy arrays to the model
    assert found["cnn_output"] == [4, 10]
    assert found["lm_output"] == [4, 64, VOCAB]
    assert found["generated"] == [4, 64]
    assert found["generated_dtype"] == "int32"


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_counts_repeat_exactly(backend: str, tmp_path: Path) -> None:
    found = probe(backend, "repeat-counts", tmp_path)
    for name, result in found.items():
        assert result["repeats_identical"], (name, result)
        assert result["repeat_totals"] == [result["calls"]] * 10, name
        assert result["passes"] >= 3, name
        assert result["isinstance"] > 0, name
    # A forward of the LM makes more Python calls than one of the CNN.
    assert found["lm_forward[eager]"]["calls"] > found["cnn_forward[eager]"]["calls"]


def test_torch_lm_has_graph_breaks_and_cnn_has_none(tmp_path: Path) -> None:
    found = probe("torch", "torch-graph-breaks", tmp_path)
    assert found["cnn"]["breaks"] == 0
    assert found["cnn"]["graphs"] == 1
    # dynamo still breaks on the numpy input's dtype, in a frame it then runs eagerly
    assert [r["frame"] for r in found["cnn"]["reasons"]] == [
        "keras/src/backend/torch/core.py:convert_to_tensor"
    ]
    lm = found["lm"]
    assert lm["breaks"] > 0
    assert lm["graphs"] == lm["breaks"] + 1
    assert lm["reasons"], "each break must come with a reason"
    frames = {reason["frame"] for reason in lm["reasons"]}
    # the attention check (#23327) and the tree code's identity checks (#23647) of the article
    assert "keras/src/backend/torch/nn.py:_can_use_flash_attention" in frames
    assert "keras/src/tree/torchtree_impl.py:<lambda>" in frames
    for reason in lm["reasons"]:
        # The frame is the Keras function (the user frame), not dynamo's polyfills,
        # keyed by file and function, not by line.
        path, function = reason["frame"].split(":")
        assert path.startswith("keras/src/"), reason
        assert function.isidentifier() or function == "<lambda>", reason
        assert reason["line"] > 0
        assert "\n" not in reason["reason"]
