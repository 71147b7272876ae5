"""The bundled standard suite, gated against the committed baselines.

These runs happen in a fresh process, so passing them also shows that call
counts repeat across processes: the baselines were measured in another one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pytest_kerasperf.record import ProfileSummary, Record, record_data
from tests import readresult
from tests.inner import VARIANT
from tests.realrun import BASELINES, ROOT, backend_env, require_backend, suite_entries
from tests.test_keras_regression import snapshot

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
    committed = suite_entries(backend, VARIANT)
    before = snapshot(BASELINES / backend)
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
    if backend == "numpy":  # three forwards; Keras cannot train on numpy: its train steps skip
        assert outcomes == {"passed": 3, "skipped": 2}, result.stdout.str()[-4000:]
        closing = (
            "kerasperf: 5 perf tests: 3 measured, 3 compared, 2 not measured (kerasperf: Keras "
            "cannot train on the numpy backend: train_on_batch not implemented for NumPy "
            "backend.: 2); 0 stale baseline entries *"
        )
    else:  # three forwards and two train steps, eager and compiled
        assert outcomes == {"passed": 10}, result.stdout.str()[-4000:]
        closing = "kerasperf: 10 perf tests: 10 measured, 10 compared; 0 stale baseline entries *"
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([closing])
    results = json.loads((pytester.path / "results.json").read_text())["results"]
    assert {r["key"] for r in results} == set(committed)
    for r in results:
        entry = committed[r["key"]]
        assert r["variant"] == VARIANT
        assert r["verdict"]["status"] == "pass", r["verdict"]
        assert readresult.calls_delta(r) == 0
        assert r["record"]["calls"] == entry.calls
        # Every function and edge as committed (the profile's digest), not only the totals.
        assert msgspec.convert(r["record"], Record).compact().profile() == entry.profile(), r["key"]
        assert r["record"]["graph_breaks"] == record_data(entry)["graph_breaks"]
    by_key = {r["key"]: r for r in results}
    if backend == "torch":
        cnn = by_key["test_standard.py::test_cnn_forward[compiled]"]
        lm = by_key["test_standard.py::test_lm_forward[compiled]"]
        assert readresult.graph_breaks(cnn) == 0
        assert (readresult.graph_breaks(lm) or 0) > 0
        # A compiled train step breaks at least at loss.backward(), which dynamo does not trace.
        for model in ("cnn", "lm"):
            step = by_key[f"test_standard.py::test_{model}_train_step[compiled]"]
            assert (readresult.graph_breaks(step) or 0) > 0
            reasons = step["record"]["graph_breaks"]["reasons"]
            assert any("backward" in r["reason"] for r in reasons), reasons
    if backend != "numpy":  # a train step is more Python than a forward, in both modes
        for model in ("cnn", "lm"):
            for mode in ("eager", "compiled"):
                step = by_key[f"test_standard.py::test_{model}_train_step[{mode}]"]
                forward = by_key[f"test_standard.py::test_{model}_forward[{mode}]"]
                assert step["record"]["calls"] > forward["record"]["calls"], (model, mode)
                assert step["record"]["recompiles"] == (0 if mode == "compiled" else None)
    assert snapshot(BASELINES / backend) == before


#: The suite's eager forwards (and on torch its eager train steps) counted in a plain process,
#: as tests/probe.py calls them,
#: with their whole profile summarized as a baseline entry keeps it.
PLAIN_COUNTS = f"""
import json, sys, warnings
sys.path.insert(0, {str(ROOT)!r})
from pytest_kerasperf import backends
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.measure import count_calls
from pytest_kerasperf.record import ProfileSummary
from tests.probe import _workloads

backend = backends.active_backend()
keras = backends.import_keras()
keras.config.enable_traceback_filtering()
warnings.simplefilter("ignore")  # as the plugin measures: warnings cost what users pay
out = {{}}
for name, fn in _workloads(backend).items():
    fn()
    stable = count_calls(fn)
    summary = ProfileSummary.of(stable.calls_by_function, stable.call_edges)
    out[name] = {{"calls": stable.calls, "profile": to_data(summary)}}
print("KERASPERF-PROBE " + json.dumps(out))
"""


def plain_counts(backend: str, keras_home: Path) -> dict[str, Any]:
    require_backend(backend)
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_COUNTS],
        env=backend_env(backend, keras_home),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    for line in done.stdout.splitlines():
        if line.startswith("KERASPERF-PROBE "):
            found: dict[str, Any] = json.loads(line.split(" ", 1)[1])
            return found
    raise AssertionError(f"plain counts on {backend} failed:\n{done.stderr[-3000:]}")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_pytest_adds_nothing_to_the_counts(backend: str, tmp_path: Path) -> None:
    """The committed counts (measured inside pytest) equal counts taken in a plain process.

    The plain process calls the suite's forwards as the issue's script does,
    with warnings as Python's defaults leave them in steady state: pytest's
    warning capture, fixtures and hooks contribute no call, and no edge.
    """
    committed = suite_entries(backend, VARIANT)
    found = plain_counts(backend, tmp_path)
    names = ["cnn_forward[eager]", "lm_forward[eager]"]
    if backend == "torch":
        names += ["cnn_train_step[eager]", "lm_train_step[eager]"]
    for name in names:
        entry = committed[f"test_standard.py::test_{name}"]
        assert found[name]["calls"] == entry.calls, name
        assert msgspec.convert(found[name]["profile"], ProfileSummary) == entry.profile(), name
