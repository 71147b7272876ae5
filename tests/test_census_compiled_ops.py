"""The compiled census of ops on torch: a graph break planted in one Keras backend function
fails the compiled tests of the ops that run it, and those alone, with the break's reason and
the Keras function where it happens."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.realrun import backend_env, require_backend, write_keras_json
from tests.test_keras_regression import copy_keras, patch

pytestmark = pytest.mark.slow

KEYWORD = "test_op_compiled and not second_shape and (ops.abs] or ops.absolute] or ops.add])"
ABS = "test_census_compiled_ops.py::test_op_compiled[ops.abs]"
ABSOLUTE = "test_census_compiled_ops.py::test_op_compiled[ops.absolute]"
ADD = "test_census_compiled_ops.py::test_op_compiled[ops.add]"


def run(
    tmp: Path, *args: str, name: str, pythonpath: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    keras_home = tmp / "keras-home"
    write_keras_json(keras_home, "torch", "channels_first")
    extra = {"PYTHONPATH": str(pythonpath)} if pythonpath else {}
    results = tmp / f"{name}.json"
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-q", "--pyargs", "pytest_kerasperf.census.test_census_compiled_ops", "-k", KEYWORD,
            f"--kerasperf-baseline-dir={tmp / 'baselines'}", f"--kerasperf-json={results}",
            *args,
        ],
        cwd=tmp, env=backend_env("torch", keras_home, **extra),
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    data = json.loads(results.read_text()) if results.exists() else {}
    return proc, data


def breaks_of(data: dict[str, Any]) -> dict[str, int]:
    return {
        r["key"]: r["record"]["graph_breaks"]["breaks"]
        for r in data.get("results", [])
        if r.get("record") and r["record"].get("graph_breaks")
    }


def test_a_graph_break_planted_in_torch_absolute_fails_the_ops_that_run_it(
    tmp_path: Path,
) -> None:
    require_backend("torch")
    first, recorded = run(tmp_path, "--kerasperf-update-baseline", name="record")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    before = breaks_of(recorded)
    assert set(before) == {ABS, ABSOLUTE, ADD}, before
    assert before == {ABS: 0, ABSOLUTE: 0, ADD: 0}

    keras_copy = copy_keras(tmp_path / "planted")
    numpy_py = keras_copy / "keras" / "src" / "backend" / "torch" / "numpy.py"
    # a data-dependent Python branch: dynamo cannot trace Tensor.item() (by default) and
    # breaks the graph there
    patch(
        numpy_py,
        "def absolute(x):\n    x = convert_to_tensor(x)\n",
        "    if x.sum().item() < -1.0:\n        x = x + 0\n",
    )
    planted, gated = run(tmp_path, "--kerasperf", pythonpath=keras_copy, name="planted")
    assert planted.returncode == 1, planted.stdout[-3000:]
    failed = sorted(line for line in planted.stdout.splitlines() if line.startswith("FAILED"))
    assert len(failed) == 2, failed
    assert "ops.abs]" in failed[0], failed
    assert "ops.absolute]" in failed[1], failed
    after = breaks_of(gated)
    assert after[ADD] == 0
    assert after[ABS] > 0, after
    assert after[ABSOLUTE] > 0, after
    assert "backend/torch/numpy.py:absolute" in planted.stdout
    assert "item()" in planted.stdout
