"""Perf tests written as Keras writes its tests: methods of ``keras.src.testing.TestCase``.

Such methods take no fixtures; a budget or ``kerasperf`` marker gives them
``self.kerasperf``, with the same counting, baseline and verdict as the fixture.
``TestCase.setUp`` turns Keras's traceback filtering off; the handle measures
with it on, as users run Keras.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from pytest_kerasperf.baseline import Baselines
from pytest_kerasperf.record import Record
from tests.inner import VARIANT
from tests.realrun import require_backend
from tests.test_keras_regression import copy_keras, plant_layer_check, planted_failure_line

SOURCE = """
import numpy as np
import pytest
import keras
from keras.src.testing import TestCase

from pytest_kerasperf.measure import count_calls

MODEL = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(2)])
X = np.ones((2, 8), dtype="float32")


def forward():
    return MODEL(X, training=False)


def test_function_style(kerasperf):
    kerasperf(forward)


class DenseTest(TestCase):
    @pytest.mark.max_calls(100_000)
    def test_forward(self):
        record = self.kerasperf(forward)
        # What TestCase's own set-up would have measured: filtering off, fewer calls.
        assert not keras.config.is_traceback_filtering_enabled()
        assert count_calls(forward).calls < record.calls

    @pytest.mark.kerasperf(mode="compiled")
    def test_marked_compiled(self):
        self.kerasperf(forward)

    def test_not_a_perf_test(self):
        assert not hasattr(self, "kerasperf")
"""

KEY = "test_unit.py::DenseTest::test_forward"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--kerasperf-rounds=0",
        f"--kerasperf-baseline-dir={pytester.path / 'b'}",
        *args,
        timeout=600,
    )


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    require_backend("numpy")
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_unit=SOURCE)
    return pytester


def test_a_testcase_method_is_measured_gated_and_recorded(project: pytest.Pytester) -> None:
    update = run(project, "--kerasperf-update-baseline", "--kerasperf-json=out.json")
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()[-3000:]
    update.assert_outcomes(passed=4)
    store = Baselines(project.path / "b", "numpy", VARIANT)
    entries = store.load()
    assert sorted(entries) == [
        "test_unit.py::DenseTest::test_forward",
        "test_unit.py::DenseTest::test_marked_compiled",
        "test_unit.py::test_function_style",
    ]
    # A method's file is named by its class and name.
    assert store.file(KEY) == store.directory / "test_unit.py" / "DenseTest.test_forward.json"
    assert store.file(KEY).is_file()
    # The same workload counts the same as a TestCase method and as a plain function:
    # every function and edge (the profile's digest), not only the totals.
    [result] = [
        r for r in json.loads((project.path / "out.json").read_text())["results"] if r["key"] == KEY
    ]
    assert entries[KEY].profile() == entries["test_unit.py::test_function_style"].profile()
    assert entries[KEY].profile() == msgspec.convert(result["record"], Record).compact().profile()
    assert entries[KEY].mode == "eager"
    assert entries["test_unit.py::DenseTest::test_marked_compiled"].mode == "compiled"

    gate = run(project, "--kerasperf", "--kerasperf-strict")
    assert gate.ret == pytest.ExitCode.OK
    gate.stdout.fnmatch_lines(["kerasperf: 3 perf tests: 3 measured, 3 compared; 0 stale *"])


def test_a_testcase_method_fails_on_a_planted_keras_change(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert run(project, "--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    base = Baselines(project.path / "b", "numpy", VARIANT).load()[KEY]
    planted = copy_keras(tmp_path / "planted")
    plant_layer_check(planted)
    monkeypatch.setenv("PYTHONPATH", str(planted))
    result = run(project, "--kerasperf", "-k", "DenseTest and test_forward")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([planted_failure_line(base)])


def test_the_kerasperf_marker_selects_perf_tests(project: pytest.Pytester) -> None:
    perf = run(project, "--kerasperf", "-m", "kerasperf")
    perf.assert_outcomes(passed=3, deselected=1)
    other = run(project, "--kerasperf", "-m", "not kerasperf")
    other.assert_outcomes(passed=1, deselected=3)
    listed = project.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    listed.stdout.fnmatch_lines(
        ["@pytest.mark.kerasperf(*, mode=None, latency=True): a perf test. *"]
    )


def test_a_bad_mode_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="import pytest\n\n\n@pytest.mark.kerasperf(mode='jit')\ndef test_x():\n    pass\n"
    )
    result = run(project, "test_bad.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: test_bad.py::test_x: bad marker @pytest.mark.kerasperf: mode must be one of "
            "'eager', 'compiled', got 'jit'"
        ]
    )
