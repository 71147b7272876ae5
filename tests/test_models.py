"""The issue's models and the exactness of their counts, on real backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realrun import probe, write_keras_json

ALL_BACKENDS = ("torch", "jax", "tensorflow", "numpy")


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_models_are_the_issues_models(backend: str, tmp_path: Path) -> None:
    # Keras CI's torch config says channels_first; the CNN must not follow it.
    write_keras_json(tmp_path, backend, "channels_first")
    found = probe(backend, "models", tmp_path)
    assert found["image_data_format"] == "channels_first"  # global config left alone
    assert found["conv_formats"] == ["channels_last"]
    assert found["cnn_params"] == 113_866
    assert found["lm_params"] == 2_105_344
    assert found["cnn_output"] == [4, 10]
    assert found["lm_output"] == [4, 64, 1024]
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
    assert found["cnn"]["reasons"] == []
    lm = found["lm"]
    assert lm["breaks"] > 0
    assert lm["graphs"] == lm["breaks"] + 1
    assert lm["reasons"], "each break must come with a reason"
    for reason in lm["reasons"]:
        # The frame is Keras code (the user frame), not dynamo's polyfills.
        assert reason["frame"].startswith("keras/src/"), reason
        assert "\n" not in reason["reason"]
