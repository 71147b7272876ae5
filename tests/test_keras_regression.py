"""A regression planted in a copy of Keras fails the gate and names its culprit.

The installed Keras is copied into a temporary directory and put first on
PYTHONPATH; the standard suite then runs against the committed baselines.
The unpatched copy passes, so what fails is the planted change alone.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from tests.realrun import BASELINES, require_backend


def copy_keras(dest: Path) -> Path:
    spec = importlib.util.find_spec("keras")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("keras is not installed")
    source = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(source, dest / "keras", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def patch(path: Path, anchor: str, insert_after: str) -> None:
    text = path.read_text()
    assert text.count(anchor) == 1, f"{path}: anchor not found once: {anchor!r}"
    path.write_text(text.replace(anchor, anchor + insert_after))


def gate(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    keras_root: Path,
    select: str,
) -> tuple[pytest.RunResult, list[dict[str, object]]]:
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.setenv("PYTHONPATH", str(keras_root))
    out = pytester.path / f"results-{keras_root.name}.json"
    result = pytester.runpytest_subprocess(
        "--kerasperf",
        "--kerasperf-require-baseline",
        f"--kerasperf-baseline-dir={BASELINES}",
        f"--kerasperf-json={out}",
        "--kerasperf-rounds=0",
        "-p",
        "no:cacheprovider",
        "-k",
        select,
        "--pyargs",
        "pytest_kerasperf.suite",
        timeout=900,
    )
    results = json.loads(out.read_text())["results"] if out.exists() else []
    return result, results


def test_extra_call_in_layer_call_fails_and_names_the_function(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("numpy")
    before = (BASELINES / "numpy.json").read_bytes()
    clean = copy_keras(tmp_path / "clean")
    planted = copy_keras(tmp_path / "planted")
    layer_py = planted / "keras" / "src" / "layers" / "layer.py"
    patch(
        layer_py,
        "    def __call__(self, *args, **kwargs):\n        self._check_super_called()\n",
        "        _kerasperf_planted_check(self)\n",
    )
    layer_py.write_text(
        layer_py.read_text() + "\n\ndef _kerasperf_planted_check(layer):\n    return layer\n"
    )

    result, results = gate(pytester, monkeypatch, "numpy", clean, "cnn_forward")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert [r["verdict"]["status"] for r in results] == ["pass"]  # type: ignore[index]

    result, results = gate(pytester, monkeypatch, "numpy", planted, "cnn_forward")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*kerasperf calls: * per call, baseline * (+*); grew: "
            "keras/src/layers/layer.py:_kerasperf_planted_check (+*)*",
        ]
    )
    # The report section lists the per-function diff with the planted function first.
    result.stdout.fnmatch_lines(
        [
            "*calls by function vs baseline (changed only, biggest change first):",
            "*+* *keras/src/layers/layer.py:_kerasperf_planted_check *(0 -> *)",
        ]
    )
    (only,) = results
    assert only["verdict"]["status"] == "regressed"  # type: ignore[index]
    assert (BASELINES / "numpy.json").read_bytes() == before


def test_graph_break_in_a_layer_call_fails_and_names_the_break(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("torch")
    clean = copy_keras(tmp_path / "clean")
    planted = copy_keras(tmp_path / "planted")
    dense_py = planted / "keras" / "src" / "layers" / "core" / "dense.py"
    patch(
        dense_py,
        "    def call(self, inputs, training=None):\n",
        "        import torch._dynamo\n\n        torch._dynamo.graph_break()\n",
    )
    lineno = dense_py.read_text().splitlines().index("        torch._dynamo.graph_break()") + 1
    select = "cnn_forward and compiled"

    result, results = gate(pytester, monkeypatch, "torch", clean, select)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert [r["graph_breaks"] for r in results] == [0]

    result, results = gate(pytester, monkeypatch, "torch", planted, select)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*kerasperf graph breaks: *, baseline 0 (+*); new: "
            "Call to `torch._dynamo.graph_break()`* at "
            f"keras/src/layers/core/dense.py:{lineno}"
        ]
    )
    result.stdout.fnmatch_lines(
        ["*new graph breaks:", f"*keras/src/layers/core/dense.py:{lineno}: *graph_break*"]
    )
    (only,) = results
    assert int(str(only["graph_breaks"])) >= 1  # one planted break; dynamo may add more
    assert only["verdict"]["new_graph_breaks"][0]["frame"] == (  # type: ignore[index]
        f"keras/src/layers/core/dense.py:{lineno}"
    )
