"""The ratchet on the real suite: a baseline entry left loose after a win fails
``--kerasperf-ratchet`` (and passes, as before, without it), so a later regression smaller
than the looseness cannot hide under it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from msgspec.structs import replace

from pytest_kerasperf import baseline
from pytest_kerasperf.baseline import Baselines
from tests import readresult
from tests.inner import VARIANT
from tests.realrun import BASELINES, require_backend
from tests.test_keras_regression import copy_keras, plant_layer_check, planted_culprit

CNN = "test_standard.py::test_cnn_forward[eager]"
#: calls the loosened entry holds above what the suite makes: a win of 500 calls, not recorded
LOOSENESS = 500


def loosened(root: Path) -> int:
    """Copy the committed numpy entries under ``root``, the CNN's ``LOOSENESS`` calls looser (as
    if a pull request had removed that many and merged without re-recording); its real calls."""
    shutil.copytree(BASELINES / "numpy", root / "numpy")
    store = Baselines(root, "numpy", VARIANT)
    entry = store.load()[CNN]
    outside = dict(entry.calls_by_package)
    outside["builtins"] += LOOSENESS
    loose = replace(entry, calls=entry.calls + LOOSENESS, calls_by_package=outside)
    baseline.write_atomic(store.file(CNN), baseline.dumps("numpy", VARIANT, CNN, loose))
    assert store.load()[CNN].calls == entry.calls + LOOSENESS
    return entry.calls


def gate(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    keras_root: Path,
    *args: str,
) -> tuple[pytest.RunResult, dict[str, object]]:
    """The suite's numpy CNN forward against the entries under ``root``, on a Keras copy."""
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.setenv("PYTHONPATH", str(keras_root))
    out = pytester.path / "results.json"
    out.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(
        f"--kerasperf-baseline-dir={root}",
        f"--kerasperf-json={out}",
        "--kerasperf-rounds=0",
        "-p",
        "no:cacheprovider",
        "-k",
        "cnn_forward and eager",
        *args,
        "--pyargs",
        "pytest_kerasperf.suite",
        timeout=900,
    )
    [found] = json.loads(out.read_text())["results"]
    return result, found


def test_a_loose_entry_fails_the_ratchet_and_a_smaller_regression_cannot_hide_under_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("numpy")
    root = tmp_path / "baselines"
    real = loosened(root)
    clean = copy_keras(tmp_path / "clean")
    planted = copy_keras(tmp_path / "planted")
    plant_layer_check(planted)
    added, _ = planted_culprit(Baselines(BASELINES, "numpy", VARIANT).load()[CNN])
    assert 0 < added < LOOSENESS

    # Without the ratchet the loose entry passes as an improvement, as it always did.
    result, found = gate(pytester, monkeypatch, root, clean, "--kerasperf")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert found["verdict"]["status"] == "improved"  # type: ignore[index]
    # With it, the win not recorded fails the test, with the command that records it.
    result, found = gate(pytester, monkeypatch, root, clean, "--kerasperf", "--kerasperf-ratchet")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert found["verdict"]["status"] == "win-not-recorded"  # type: ignore[index]
    record = (
        f"`PYTHONHASHSEED=0 KERAS_BACKEND=numpy pytest --kerasperf-baseline-dir={root} "
        f"--kerasperf-update-baseline *{CNN.split('::')[1]}*`"
    )
    line = (
        f"kerasperf calls {real + LOOSENESS:,} → {real:,} (\u2212{LOOSENESS}): a win not "
        f"recorded (--kerasperf-ratchet); record it: {record}, or `kerasperf accept "
        "results.json` with this job's results"
    )
    result.stdout.fnmatch_lines([line.replace("[", "[[]")])
    result.stdout.fnmatch_lines([f"{CNN.replace('[', '[[]')} * win-not-recorded*"])

    # A regression smaller than the looseness: it passes without the ratchet (it hides under
    # the loose entry), and fails with it, the net win still not recorded.
    result, found = gate(pytester, monkeypatch, root, planted, "--kerasperf")
    assert result.ret == pytest.ExitCode.OK
    assert found["verdict"]["status"] == "improved"  # type: ignore[index]
    assert readresult.calls_delta(found) == added - LOOSENESS
    result, found = gate(pytester, monkeypatch, root, planted, "--kerasperf", "--kerasperf-ratchet")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert readresult.failure_kinds(found) == ["win_not_recorded"]

    # Record the win, as the line says: the same regression now fails as a regression.
    result, _ = gate(pytester, monkeypatch, root, clean, "--kerasperf-update-baseline")
    assert result.ret == pytest.ExitCode.OK
    assert Baselines(root, "numpy", VARIANT).load()[CNN].calls == real
    result, found = gate(pytester, monkeypatch, root, planted, "--kerasperf", "--kerasperf-ratchet")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert found["verdict"]["status"] == "regressed"  # type: ignore[index]
    assert readresult.calls_delta(found) == added
