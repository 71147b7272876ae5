"""The bundled standard suite, gated against the committed baselines.

These runs happen in a fresh process, so passing them also shows that call
counts repeat across processes: the baselines were measured in another one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.realrun import BASELINES, probe, require_backend

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
        "--kerasperf-strict",
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
    outcomes = {k: v for k, v in result.parseoutcomes().items() if k not in ("warning", "warnings")}
    compiled = backend != "numpy"
    assert outcomes == {"passed": 6 if compiled else 3}, result.stdout.str()[-4000:]
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            f"kerasperf: {6 if compiled else 3} perf tests: {6 if compiled else 3} measured, "
            f"{6 if compiled else 3} compared; 0 stale baseline entries *"
        ]
    )
    results = json.loads((pytester.path / "results.json").read_text())["results"]
    assert {r["key"] for r in results} == set(committed["tests"])
    for r in results:
        entry = committed["tests"][r["key"]]
        assert r["verdict"]["status"] == "pass", r["verdict"]
        assert r["verdict"]["calls_delta"] == 0
        assert r["calls"] == entry["calls"]
        assert r["record"]["calls_by_function"] == entry["calls_by_function"]
        assert r["record"]["call_edges"] == entry["call_edges"]
        assert r["record"]["graph_breaks"] == entry["graph_breaks"]
    if backend == "torch":
        by_key = {r["key"]: r for r in results}
        assert by_key["test_standard.py::test_cnn_forward[compiled]"]["graph_breaks"] == 0
        assert by_key["test_standard.py::test_lm_forward[compiled]"]["graph_breaks"] > 0
    assert (BASELINES / f"{backend}.json").read_bytes() == before


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_pytest_adds_nothing_to_the_counts(backend: str, tmp_path: Path) -> None:
    """The committed counts (measured inside pytest) equal counts taken in a plain process.

    The plain process calls the suite's forwards as the issue's script does,
    with warnings as Python's defaults leave them in steady state: pytest's
    warning capture, fixtures and hooks contribute no call.
    """
    committed = json.loads((BASELINES / f"{backend}.json").read_text())["tests"]
    found = probe(backend, "repeat-counts", tmp_path)
    for name in ("cnn_forward[eager]", "lm_forward[eager]"):
        entry = committed[f"test_standard.py::test_{name}"]
        assert found[name]["calls"] == entry["calls"], name
        assert found[name]["calls_by_function"] == entry["calls_by_function"], name
