"""--kerasperf-changed on a real Keras checkout: a change planted in one Keras function runs
exactly the census workloads whose index entry executes it, and they fail; a change that
cannot be mapped runs them all; a change no workload can see runs none, and says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.ab.commits import commit_installed_keras
from tests.realrun import backend_env, require_backend

#: A few ops' workloads: some execute numpy's ``absolute``, the others do not
SELECT = "ops.absolute or ops.abs or ops.add or ops.mean or ops.sum"
PLANTED = "keras/src/backend/numpy/numpy.py:absolute"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=k@p", "-c", "user.name=kerasperf", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _run(repo: Path, *options: str) -> tuple[int, str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--pyargs",
            "pytest_kerasperf.census.test_census_ops",
            "-k",
            SELECT,
            f"--kerasperf-baseline-dir={repo.parent / 'baselines'}",
            *options,
        ],
        cwd=repo,
        env=backend_env("numpy", repo.parent / "home", PYTHONPATH=str(repo)),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _results(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture
def keras_checkout(tmp_path: Path) -> Path:
    """The installed Keras, committed to a git repository of its own (as a Keras clone)."""
    require_backend("numpy")
    (tmp_path / "home").mkdir()
    return commit_installed_keras(tmp_path / "keras-repo")


def test_a_planted_change_runs_exactly_the_workloads_that_execute_it(
    keras_checkout: Path,
) -> None:
    repo, index = keras_checkout, keras_checkout.parent / "index.json"
    code, out = _run(repo, "--kerasperf-update-baseline", f"--kerasperf-index-out={index}")
    assert code == 0, out
    data = json.loads(index.read_text())
    assert data["commit"] == _git(repo, "rev-parse", "HEAD").strip()
    assert not data["dirty"]
    position = data["functions"].index(PLANTED)
    executing = {key for key, names in data["tests"].items() if position in names}
    assert executing, "no workload executes the planted function"
    assert executing < set(data["tests"]), executing  # some, not all

    source = repo / "keras/src/backend/numpy/numpy.py"
    text = source.read_text()
    source.write_text(
        text.replace("def absolute(x):\n", "def absolute(x):\n    x = convert_to_tensor(x)\n", 1)
    )
    results = repo.parent / "results.json"
    options = ("--kerasperf", "--kerasperf-strict", f"--kerasperf-json={results}")
    code, out = _run(repo, *options, f"--kerasperf-changed={index}")
    assert code == 1, out
    document = _results(results)
    ran = {result["key"] for result in document["results"]}
    assert ran == executing, out
    assert all(result["verdict"]["status"] == "regressed" for result in document["results"])
    changed = document["summary"]["changed"]
    assert changed["ran"] == len(executing)
    assert changed["not_affected"] == len(data["tests"]) - len(executing)
    assert changed["functions"] == 1
    assert changed["everything"] == []
    assert f"{len(executing)} perf tests ran, {changed['not_affected']} not affected" in out

    # module-level code cannot be mapped to functions: every workload runs, saying why
    source.write_text(text + "\nPLANTED = 1\n")
    code, out = _run(repo, *options, f"--kerasperf-changed={index}")
    assert code == 0, out
    assert {r["key"] for r in _results(results)["results"]} == set(data["tests"])
    assert "every perf test ran: keras/src/backend/numpy/numpy.py:" in out
    assert "is module-level code or a class body" in out

    # a change no workload can see: none runs, the run says so and passes
    source.write_text(text)
    (repo / "NOTES.md").write_text("# notes\n")
    _git(repo, "add", "NOTES.md")
    code, out = _run(repo, *options, f"--kerasperf-changed={index}")
    assert code == 0, out
    assert _results(results)["results"] == []
    assert f"0 perf tests ran, {len(data['tests'])} not affected by the change since" in out
