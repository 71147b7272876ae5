"""Compile health: compile events per workload call after warm-up, gated like graph breaks.

A compiled forward that traces again on every call (a shape that changes each
call) is the JAX/TF twin of a graph break: the baseline says 0, the planted
retrace measures 1 per call, and the failure names what jax saw change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.inner import VARIANT
from tests.realrun import require_backend

STEADY = """
import numpy as np
import pytest
import keras

MODEL = keras.Sequential([keras.Input((None, 8)), keras.layers.Dense(8)])
X = np.ones((2, 4, 8), dtype="float32")


@pytest.mark.kerasperf(mode="compiled")
def test_forward(kerasperf, kerasperf_compile):
    forward = kerasperf_compile(MODEL, X)
    kerasperf(lambda: forward(X))
"""

#: The planted retrace: the sequence grows by one on every call, so the
#: compiled forward never sees a shape twice.
RETRACING = """
import itertools

import numpy as np
import pytest
import keras

MODEL = keras.Sequential([keras.Input((None, 8)), keras.layers.Dense(8)])
X = np.ones((2, 4, 8), dtype="float32")
LENGTH = itertools.count(5)


@pytest.mark.kerasperf(mode="compiled")
def test_forward(kerasperf, kerasperf_compile):
    forward = kerasperf_compile(MODEL, X)
    kerasperf(lambda: forward(np.ones((2, next(LENGTH), 8), dtype="float32")))
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--kerasperf-rounds=0",
        f"--kerasperf-baseline-dir={pytester.path / 'b'}",
        *args,
        timeout=600,
    )


@pytest.fixture(params=["jax", "tensorflow"])
def backend(
    request: pytest.FixtureRequest, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> str:
    name = str(request.param)
    require_backend(name)
    monkeypatch.setenv("KERAS_BACKEND", name)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    return name


def test_a_planted_retrace_fails_with_its_cause_named(
    pytester: pytest.Pytester, backend: str
) -> None:
    pytester.makepyfile(test_health=STEADY)
    update = run(pytester, "--kerasperf-update-baseline")
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()[-3000:]
    [path] = (pytester.path / "b" / backend / VARIANT).rglob("*.json")
    record = json.loads(path.read_text())["entry"]
    assert record["recompiles"] == 0
    assert record["recompile_causes"] == []

    pytester.makepyfile(test_health=RETRACING)
    gate = run(pytester, "--kerasperf", "--kerasperf-json=out.json")
    assert gate.ret == pytest.ExitCode.TESTS_FAILED, gate.stdout.str()[-3000:]
    if backend == "jax":
        # Each trace makes the same calls: counts repeat, the recompile count is gated.
        gate.stdout.re_match_lines(
            [
                r".*recompiles: 1 per call after warm-up, baseline 0 \(\+1\); cause: "
                r"jax\.jit traced <lambda>: at x, now f32\[2,\d+,8\] and before f32\[2,\d+,8\]"
            ]
        )
        (result,) = json.loads((pytester.path / "out.json").read_text())["results"]
        assert result["record"]["recompiles"] == 1
        assert result["verdict"]["status"] == "regressed"
    else:
        # tf.function's tracing costs grow with its cache: counts never repeat, and
        # the failure says why.
        gate.stdout.re_match_lines(
            [
                r".*call counts did not repeat .*; the workload compiles again on every call "
                r"after warm-up \(1 in the last call: tf\.function traced "
                r"compile_forward\.<locals>\.<lambda>\)"
            ]
        )


def test_max_recompiles_is_a_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On jax, where a retrace's counts repeat, the budget fails with the cause."""
    require_backend("jax")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(
        test_health=RETRACING.replace(
            "def test_forward", "@pytest.mark.max_recompiles(0, mode='compiled')\ndef test_forward"
        )
    )
    result = run(pytester, "--kerasperf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(
        [
            "*max_recompiles(0, mode='compiled'): 1 per call after warm-up (+1 over budget); "
            "cause: jax.jit traced <lambda>: at x, now *"
        ]
    )


TORCH_RECOMPILE = """
import json
import numpy as np
from pytest_kerasperf import backends
from pytest_kerasperf.measure import compile_health
keras = backends.import_keras()
model = keras.Sequential([keras.Input((4, 8)), keras.layers.Dense(8)])
forward = backends.compile_forward(model, "torch")
forward(np.ones((2, 4, 8), "float32"))
watch = compile_health.watcher("torch", [forward])
with watch() as steady:
    forward(np.ones((2, 4, 8), "float32"))
with watch() as batch:
    forward(np.ones((3, 4, 8), "float32"))  # another batch size: dynamo's guards fail
print(json.dumps([steady.count, batch.count, list(batch.top_causes())]))
"""


def test_torch_counts_dynamo_recompiles_and_names_the_failed_guard(tmp_path: Path) -> None:
    require_backend("torch")
    env = {**os.environ, "KERAS_BACKEND": "torch", "PYTHONHASHSEED": "0"}
    env["KERAS_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", TORCH_RECOMPILE],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    steady, recompiled, causes = json.loads(done.stdout.strip().splitlines()[-1])
    assert steady == 0
    assert recompiled >= 1
    assert any(
        cause.startswith("dynamo recompiled keras/src/layers/layer.py:__call__")
        and "size mismatch at index 0. expected 2, actual 3" in cause
        for cause in causes
    ), causes


#: A layer that changes a Python attribute on every call: torch dynamo guards on the
#: integer, so every call compiles again, until the frame hits dynamo's recompile limit
#: and runs eagerly.  Two models, one per test: a frame dynamo gave up on stays given up.
COUNTER = """
import numpy as np
import pytest
import keras


class Counter(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.n = 0

    def call(self, x):
        self.n += 1
        return x * float(self.n)


def model():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(8), Counter()])


BUDGETED, UNMARKED = model(), model()
X = np.ones((2, 8), dtype="float32")


@pytest.mark.kerasperf(mode="compiled")
@pytest.mark.max_recompiles(0)
def test_budgeted(kerasperf, kerasperf_compile):
    forward = kerasperf_compile(BUDGETED, X)
    kerasperf(lambda: forward(X))


@pytest.mark.kerasperf(mode="compiled")
def test_unmarked(kerasperf, kerasperf_compile):
    forward = kerasperf_compile(UNMARKED, X)
    kerasperf(lambda: forward(X))
"""


def test_a_frame_dynamo_gives_up_on_fails_with_its_frame_guard_and_compiles(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After warm-up such a frame compiles nothing (it runs eagerly): counted from the first
    call, it fails ``max_recompiles`` and, without a marker, compile health."""
    require_backend("torch")
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_counter=COUNTER)
    result = run(pytester, "--kerasperf", "--kerasperf-json=out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    # torch stays out of this process (the workers' module cleanup cannot unload it): the
    # limit is read from the line, as many compiles as the limit dynamo names.
    said = (
        r"Counter\.call \(test_counter\.py:12\) recompiled until dynamo gave up: "
        r"([1-9]\d*) compiles \(recompile_limit \1\), then it runs eagerly; "
        r"guard failed: .*\.n == \d+ \(`self\.n \+= 1`\)"
    )
    result.stdout.re_match_lines(
        [rf"FAIL max_recompiles\(0\): {said}", rf"FAIL compile health: {said}"],
        consecutive=False,
    )
    results = json.loads((pytester.path / "out.json").read_text())["results"]
    for outcome in results:
        assert outcome["verdict"]["status"] == "over-budget"
        assert outcome["record"]["recompiles"] == 0  # after warm-up: eager, nothing compiles
        [line] = outcome["record"]["gave_up"]
        assert "Counter.call" in line
