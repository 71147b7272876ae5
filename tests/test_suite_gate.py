"""The bundled standard suite, gated against the committed baselines.

These runs happen in a fresh process, so passing them also shows that call
counts repeat across processes: the baselines were measured in another one.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.realrun import BASELINES, require_backend

# All four backends by default; KERASPERF_TEST_BACKENDS="torch numpy" runs fewer.
GATED = os.environ.get("KERASPERF_TEST_BACKENDS", "torch jax tensorflow numpy").split()


@pytest.mark.parametrize("backend", ["torch", "jax", "tensorflow", "numpy"])
def test_standard_suite_passes_against_committed_baselines(
    backend: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend not in GATED:
        pytest.skip(f"{backend} not in KERASPERF_TEST_BACKENDS={' '.join(GATED)}")
    require_backend(backend)
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    committed = json.loads((BASELINES / f"{backend}.json").read_text())
    before = (BASELINES / f"{backend}.json").read_bytes()
    result = pytester.runpytest_subprocess(
        "--kerasperf",
        "--kerasperf-require-baseline",
        f"--kerasperf-baseline-dir={BASELINES}",
        "--kerasperf-json=results.json",
        "--kerasperf-rounds=3",
        "--kerasperf-warmup=1",
        "-p",
        "no:cacheprovider",
        "--pyargs",
        "pytest_kerasperf.suite",
        timeout=1200,
    )
    outcomes = result.parseoutcomes()
    compiled = backend != "numpy"
    assert outcomes.get("passed") == (6 if compiled else 3), result.stdout.str()[-4000:]
    assert result.ret == pytest.ExitCode.OK
    results = json.loads((pytester.path / "results.json").read_text())["results"]
    assert {r["key"] for r in results} <= set(committed["tests"])
    for r in results:
        assert r["verdict"]["status"] == "pass", r["verdict"]
        assert r["verdict"]["calls_delta"] == 0
        assert r["calls"] == committed["tests"][r["key"]]["calls"]
        assert r["calls_by_function"] == committed["tests"][r["key"]]["calls_by_function"]
    if backend == "torch":
        by_key = {r["key"]: r for r in results}
        assert by_key["test_standard.py::test_cnn_forward[compiled]"]["graph_breaks"] == 0
        assert by_key["test_standard.py::test_lm_forward[compiled]"]["graph_breaks"] > 0
    assert (BASELINES / f"{backend}.json").read_bytes() == before
