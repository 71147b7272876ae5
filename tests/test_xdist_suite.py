"""The standard suite under pytest-xdist as Keras runs its tests (``-n``, ``--dist``).

Workers measure, the controller writes each baseline entry once, and the counts
are those of the committed baselines, which were measured without xdist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kerasperf.baseline import Baselines, relative_file
from tests.inner import VARIANT
from tests.realrun import require_backend, suite_entries


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_update_then_gate_under_xdist_equal_the_serial_counts(
    backend: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_backend(backend)
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    directory = pytester.path / "b"
    common = (
        "-p",
        "no:cacheprovider",
        f"--kerasperf-baseline-dir={directory}",
        "--pyargs",
        "pytest_kerasperf.suite",
    )
    update = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--kerasperf-update-baseline", *common, timeout=1200
    )
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()[-3000:]
    written = Baselines(directory, backend, VARIANT).load()
    committed = suite_entries(backend, VARIANT)
    assert sorted(written) == sorted(committed)
    assert update.stdout.str().count("  added   ") == len(committed)  # each entry written once
    # One file per entry, at its key's path, and nothing else in the directory.
    assert sorted(p.relative_to(directory) for p in directory.rglob("*") if p.is_file()) == sorted(
        Path(backend, VARIANT, relative_file(key)) for key in committed
    )
    for key, entry in written.items():
        # Every function and edge (the profile's digest) as committed, measured serially.
        assert entry.profile() == committed[key].profile(), key
        assert entry.calls == committed[key].calls, key
        assert entry.latency is None  # not timed under xdist

    # The gate compares exactly, every test.
    gate = pytester.runpytest_subprocess(
        "-n",
        "2",
        "--dist",
        "load",
        "--kerasperf",
        "--kerasperf-strict",
        *common,
        timeout=1200,
    )
    assert gate.ret == pytest.ExitCode.OK, gate.stdout.str()[-3000:]
    n = len(committed)
    # numpy cannot train: its two train steps skip, with Keras's reason, and are counted so
    skips = 2 if backend == "numpy" else 0
    not_measured = (
        ", 2 not measured (kerasperf: Keras cannot train on the numpy backend: "
        "train_on_batch not implemented for NumPy backend.: 2)"
        if skips
        else ""
    )
    gate.stdout.fnmatch_lines(
        [
            f"kerasperf: {n + skips} perf tests: {n} measured, {n} compared{not_measured}; "
            "0 stale baseline entries *",
            "kerasperf latency: 0 measured; not measured (pytest-benchmark does not time under "
            f"pytest-xdist: {n})",
        ]
    )
