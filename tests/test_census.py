"""The census on a real backend: exact counts across processes, and a call planted in a
layer the two models never run (``LSTM.call``) fails that layer's census test alone."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.census import coverage
from pytest_kerasperf.cli import main as kerasperf_main
from pytest_kerasperf.formatting import escape
from tests.realrun import backend_env, require_backend, write_keras_json
from tests.test_keras_regression import copy_keras, patch

pytestmark = pytest.mark.slow

SELECTION = "layers.LSTM] or layers.Dense] or ops.add] or metrics.AUC] or optimizers.Adam]"
LSTM = "test_census_layers.py::test_layer[layers.LSTM]"
PLANTED = "keras/src/layers/rnn/lstm.py:_kerasperf_planted"


def run_census(
    tmp: Path,
    *args: str,
    pythonpath: Path | None = None,
    name: str = "run",
    # the variants module's LSTM and Dense workloads are its own, as are the Functional
    # module's ops.add and the serialized module's layers
    keyword: str = (
        f"({SELECTION}) and not test_census_variants and not test_census_functional "
        "and not test_census_serialized"
    ),
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    keras_home = tmp / "keras-home"
    write_keras_json(keras_home, "numpy", "channels_last")
    extra = {"PYTHONPATH": str(pythonpath)} if pythonpath else {}
    results = tmp / f"{name}.json"
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-q", "--pyargs", "pytest_kerasperf.census",
            "-k", keyword,
            f"--kerasperf-baseline-dir={tmp / 'baselines'}", f"--kerasperf-json={results}",
            *args,
        ],
        cwd=tmp, env=backend_env("numpy", keras_home, **extra),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    data = json.loads(results.read_text()) if results.exists() else {}
    return proc, data


def calls_of(data: dict[str, Any]) -> dict[str, int]:
    return {r["key"]: r["record"]["calls"] for r in data.get("results", []) if r.get("record")}


def test_census_counts_are_exact_across_processes_and_a_planted_lstm_call_fails(
    tmp_path: Path,
) -> None:
    require_backend("numpy")
    first, one = run_census(tmp_path, "--kerasperf-update-baseline", name="record")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    recorded = calls_of(one)
    assert len(recorded) == 5, recorded
    assert LSTM in recorded

    again, two = run_census(tmp_path, "--kerasperf", "--kerasperf-strict", name="gate")
    assert again.returncode == 0, again.stdout[-3000:]
    assert calls_of(two) == recorded  # another process: the same counts, each exactly
    assert "5 measured, 5 compared" in again.stdout

    keras_copy = copy_keras(tmp_path / "planted")
    lstm_py = keras_copy / "keras" / "src" / "layers" / "rnn" / "lstm.py"
    patch(
        lstm_py,
        "    def call(self, sequences, initial_state=None, mask=None, training=False):\n",
        "        _kerasperf_planted(self)\n",
    )
    lstm_py.write_text(
        lstm_py.read_text() + "\n\ndef _kerasperf_planted(layer):\n    return layer\n"
    )
    planted, three = run_census(tmp_path, "--kerasperf", pythonpath=keras_copy, name="planted")
    assert planted.returncode == 1, planted.stdout[-3000:]
    failed = [line for line in planted.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1, failed
    assert "layers.LSTM" in failed[0]
    assert calls_of(three)[LSTM] == recorded[LSTM] + 1
    assert f"calls: {recorded[LSTM] + 1:,} per call" in planted.stdout
    profile = next(r["record"] for r in three["results"] if r["key"] == LSTM)
    assert profile["calls_by_function"][PLANTED] == 1

    # Perf coverage of a diff, against the gate run's whole profiles: a change to LSTM.call is
    # watched by the LSTM census test; one to ops.kron by no perf test of these five.
    assert_coverage(tmp_path, tmp_path / "gate.json", capsys_lines=kerasperf_main)


ATTENTION = "test_census_layers.py::test_layer[layers.Attention]"
ATTENTION_SERIALIZED = "test_census_serialized.py::test_serialized[layers.Attention]"


def test_a_call_planted_in_a_constructor_fails_the_serialized_workload_alone(
    tmp_path: Path,
) -> None:
    """A layer's call runs no constructor; loading it does. One call planted in
    ``Attention.__init__`` moves ``test_serialized[layers.Attention]`` by one call and leaves
    ``test_layer[layers.Attention]`` exact."""
    require_backend("numpy")
    keyword = "layers.Attention] and (test_census_layers or test_census_serialized)"
    first, one = run_census(tmp_path, "--kerasperf-update-baseline", name="r", keyword=keyword)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    recorded = calls_of(one)
    assert set(recorded) == {ATTENTION, ATTENTION_SERIALIZED}, recorded

    keras_copy = copy_keras(tmp_path / "planted")
    attention_py = keras_copy / "keras" / "src" / "layers" / "attention" / "attention.py"
    patch(attention_py, "        super().__init__(**kwargs)\n        self.use_scale = use_scale\n",
          "        _kerasperf_planted(self)\n")  # fmt: skip
    attention_py.write_text(
        attention_py.read_text() + "\n\ndef _kerasperf_planted(layer):\n    return layer\n"
    )
    planted, two = run_census(
        tmp_path, "--kerasperf", pythonpath=keras_copy, name="p", keyword=keyword
    )
    assert planted.returncode == 1, planted.stdout[-3000:]
    failed = [line for line in planted.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1, failed
    assert "test_serialized[layers.Attention]" in failed[0]
    measured = calls_of(two)
    assert measured[ATTENTION] == recorded[ATTENTION]
    assert measured[ATTENTION_SERIALIZED] == recorded[ATTENTION_SERIALIZED] + 1
    record = next(r["record"] for r in two["results"] if r["key"] == ATTENTION_SERIALIZED)
    planted_name = "keras/src/layers/attention/attention.py:_kerasperf_planted"
    assert record["calls_by_function"][planted_name] == 1


def assert_coverage(tmp_path: Path, results: Path, capsys_lines: Any) -> None:
    import git

    spec = importlib.util.find_spec("keras")
    assert spec is not None
    assert spec.submodule_search_locations
    installed = Path(next(iter(spec.submodule_search_locations)))
    repo_dir = tmp_path / "keras-repo"
    files = ("src/layers/rnn/lstm.py", "src/ops/numpy.py")
    for name in files:
        (repo_dir / "keras" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(installed / name, repo_dir / "keras" / name)
    repo = git.Repo.init(repo_dir)
    repo.index.add([f"keras/{name}" for name in files])
    repo.index.commit("base")
    patch(
        repo_dir / "keras/src/layers/rnn/lstm.py",
        "    def call(self, sequences, initial_state=None, mask=None, training=False):\n",
        "        sequences = sequences\n",
    )
    patch(repo_dir / "keras/src/ops/numpy.py", "def kron(x1, x2):\n", "    x1 = x1\n")
    numpy_py = repo_dir / "keras/src/ops/numpy.py"
    numpy_py.write_text("KERASPERF_PLANTED = 1\n" + numpy_py.read_text())
    repo.index.add([f"keras/{name}" for name in files])
    repo.index.commit("head")
    out = tmp_path / "coverage.txt"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = capsys_lines(
            ["coverage", str(results), "--repo", str(repo_dir), "--range", "HEAD~1..HEAD"]
        )
    out.write_text(buffer.getvalue())
    text = buffer.getvalue()
    assert status == 0, text
    assert "2 changed functions of keras/src, 1 watched, 1 not watched by any perf test" in text
    unwatched = text.split("not watched by any perf test:\n", 1)[1].split("\n\n", 1)[0]
    assert unwatched.strip() == "keras/src/ops/numpy.py:kron"
    assert f"keras/src/layers/rnn/lstm.py:LSTM.call: {LSTM} (numpy)" in text
    assert (
        "module-level code changed (runs at import, not a function):\n  keras/src/ops/numpy.py"
        in (text)
    )
    # The same coverage as a section of the report (what the PR comment shows).
    markdown = tmp_path / "report.md"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = capsys_lines(
            ["report", str(results), "--coverage", "HEAD~1..HEAD", "--repo", str(repo_dir),
             "--markdown", str(markdown)]
        )  # fmt: skip
    assert status == 0, buffer.getvalue()
    assert "1 watched, 1 not watched by any perf test" in buffer.getvalue()
    section = markdown.read_text().split("#### Perf coverage of this diff\n", 1)[1]
    assert "- <code>keras/src/ops/numpy.py:kron</code>" in section
    watched = f"- <code>keras/src/layers/rnn/lstm.py:LSTM.call</code>: {escape(LSTM)} (numpy)"
    assert watched in section


def test_the_census_covers_every_public_symbol_of_the_installed_keras(tmp_path: Path) -> None:
    """The census's own coverage tests, run as the gate runs them (numpy)."""
    require_backend("numpy")
    keras_home = tmp_path / "keras-home"
    write_keras_json(keras_home, "numpy", "channels_last")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--pyargs",
         "pytest_kerasperf.census", "-k", "coverage"],
        cwd=tmp_path, env=backend_env("numpy", keras_home),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    # every coverage test ran and passed (none skipped): two a family, and the others
    summary = re.search(r"^(\d+) passed, \d+ deselected in ", proc.stdout, re.MULTILINE)
    assert summary is not None, proc.stdout[-3000:]
    assert int(summary[1]) > 2 * len(coverage.TABLES), proc.stdout[-3000:]
