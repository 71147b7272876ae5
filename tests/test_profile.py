"""A profile on every latency failure, and on demand: pyinstrument, in real inner runs.

A ``time.sleep`` planted in ``Dense.call`` of a copy of Keras put first on
PYTHONPATH slows a tiny Keras model down; gated on the CPU against a baseline
the installed (unpatched) Keras recorded in the same test, the latency fails,
and the profile taken of the failing workload names the planted frame.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.inner import Inner, workload_source
from tests.realrun import require_backend
from tests.test_keras_regression import copy_keras, patch

REPO = Path(__file__).resolve().parent.parent
RESULTS_SCHEMA = REPO / "pytest_kerasperf" / "schemas" / "results.schema.json"

MODEL_TEST = """
import keras
import numpy as np


def build():
    keras.utils.set_random_seed(1)
    inputs = keras.Input((16,))
    x = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(4)(x))


MODEL = build()
X = np.ones((4, 16), dtype="float32")


def test_dense(kerasperf):
    kerasperf(lambda: MODEL(X, training=False))
"""
HTML = "profile-numpy-test_x.py__test_dense[eager].html"
GATED = ("--kerasperf-gate-latency-on-cpu", "--kerasperf-rounds=5", "--kerasperf-warmup=2")


def _failure_line(result: pytest.RunResult, start: str) -> str:
    """The failure line starting with ``start``: in the failure's longrepr and, where
    pytest does not truncate the short summary (``CI`` set), there too: the same line."""
    lines = {text for text in result.stdout.lines if text.startswith(start)}
    assert len(lines) == 1, lines
    return lines.pop()


@pytest.fixture
def model_test(inner: Inner, monkeypatch: pytest.MonkeyPatch) -> Inner:
    require_backend("numpy")
    monkeypatch.setenv("KERAS_HOME", str(inner.pytester.path / "keras-home"))
    inner.write(MODEL_TEST)
    return inner


def test_a_planted_slowdown_fails_latency_with_a_profile_naming_it(
    model_test: Inner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    planted = copy_keras(tmp_path / "planted")
    dense_py = planted / "keras" / "src" / "layers" / "core" / "dense.py"
    patch(
        dense_py,
        "    def call(self, inputs, training=None):\n",
        "        import time\n\n        time.sleep(0.02)\n",
    )
    sleep_line = dense_py.read_text().splitlines().index("        time.sleep(0.02)") + 1

    recorded = model_test.run("--kerasperf-update-baseline", *GATED)
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()[-3000:]
    assert not (model_test.pytester.path / ".kerasperf").exists()  # nothing failed: no profile

    monkeypatch.setenv("PYTHONPATH", str(planted))
    result = model_test.run("--kerasperf", *GATED)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    shown = f".kerasperf/profiles/{HTML}"  # the default directory, under the rootdir
    line = _failure_line(result, "kerasperf latency: median ")
    assert line.endswith(f" — profile: {shown}"), line
    html = model_test.pytester.path / shown
    assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html>")

    frame = "keras/src/layers/core/dense.py:Dense.call"
    lines = result.stdout.lines
    start = next(i for i, text in enumerate(lines) if text.strip("- ") == "kerasperf profile")
    assert lines[start + 1] == f"profile: {shown}"
    assert lines[start + 2].startswith("pyinstrument: "), lines[start + 2]
    assert lines[start + 2].endswith("hottest frames by self time:"), lines[start + 2]
    hottest = lines[start + 3]  # the planted sleep is nearly all of the time
    assert hottest.endswith(f"sleep (built-in) in {frame} line {sleep_line}"), hottest
    assert float(hottest.split("%")[0]) > 50, hottest
    section = "\n".join(lines[start:])
    assert f"Dense.call  keras/src/layers/core/dense.py:{sleep_line - 3}" in section


def test_kerasperf_profile_attaches_a_profile_to_a_passing_test(model_test: Inner) -> None:
    import jsonschema

    assert model_test.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    result = model_test.run("--kerasperf", "--kerasperf-profile", "--kerasperf-json=out/r.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["kerasperf: 1 pyinstrument profile (HTML) in out"])

    document = json.loads((model_test.pytester.path / "out" / "r.json").read_text("utf-8"))
    jsonschema.validate(document, json.loads(RESULTS_SCHEMA.read_text(encoding="utf-8")))
    [only] = document["results"]
    assert only["verdict"]["status"] == "pass"
    profile = only["profile"]
    assert profile["html"] == f"out/{HTML}"  # next to the JSON results file
    html = model_test.pytester.path / profile["html"]
    assert "<html" in html.read_text(encoding="utf-8").lower()
    assert profile["text"].startswith("pyinstrument: ")
    assert "keras/src/layers/core/dense.py" in profile["text"]


def test_profiles_travel_from_xdist_workers(model_test: Inner) -> None:
    """Profiled on the worker; its section and JSON travel on the report to the controller."""
    result = model_test.run(
        "-n",
        "1",
        "-rP",
        "--kerasperf",
        "--kerasperf-profile",
        "--kerasperf-profile-dir=profiles",
        "--kerasperf-json=out.json",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*kerasperf profile*", f"profile: profiles/{HTML}"])
    [only] = model_test.results()
    assert only["profile"]["html"] == f"profiles/{HTML}"
    assert (model_test.pytester.path / "profiles" / HTML).is_file()


def test_a_max_latency_budget_over_on_a_gated_cpu_is_profiled(inner: Inner) -> None:
    """The ini key names the directory, and wins over the JSON file's."""
    inner.pytester.makeini("[pytest]\nkerasperf_profile_dir = prof\n")
    inner.write(
        "import pytest\n\n"
        + workload_source(size=2000).replace(
            "def test_work", "@pytest.mark.max_latency(0.0001)\ndef test_work"
        )
    )
    result = inner.run("--kerasperf", "--kerasperf-gate-latency-on-cpu", "--kerasperf-json=o.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    html = "prof/profile-numpy-test_x.py__test_work[eager].html"
    line = _failure_line(result, "kerasperf max_latency(")
    assert line.startswith("kerasperf max_latency(0.0001 ms): median "), line
    assert line.endswith(f" over budget) — profile: {html}"), line
    [only] = inner.results("o.json")
    assert only["verdict"]["status"] == "over-budget"
    assert only["profile"]["html"] == html
    assert "test_x.py:work" in only["profile"]["text"]
    assert (inner.pytester.path / html).is_file()


def test_the_profile_options_are_in_the_help(inner: Inner) -> None:
    result = inner.pytester.runpytest_subprocess("--help", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str()
    for name in (
        "  --kerasperf-profile ",
        "  --kerasperf-profile-dir=DIR",
        "  kerasperf_profile_dir ",
    ):
        assert name in text, name
