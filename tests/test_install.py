"""Installing the plugin costs nothing where it is not used.

The pytest11 entry point loads ``pytest_kerasperf.plugin`` in every pytest
process of an environment.  These tests fail when loading it, or running a
pytest session that does not ask for perf tests, imports a heavy module; and
they prove the install in fresh virtualenvs: one with only the package, keras
and torch (no jax, no scipy, no GitPython, no ``git`` on PATH), one with only
the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Modules a pytest process that does not measure perf tests must never import.
HEAVY = (
    "numpy",
    "scipy",
    "git",
    "matplotlib",
    "torch",
    "jax",
    "tensorflow",
    "keras",
    "openvino",
    "jsonschema",
    "filelock",
    "pyinstrument",
    "pytest_kerasperf.gate",
    "pytest_kerasperf.handle",
    "pytest_kerasperf.ab",
    "kerasperf_lab",
    "msgspec",
    "pytest_kerasperf.metrics.base",
)
#: What checking a collected perf test's budget markers loads (each metric's module owns its
#: marker, and its module its record types): light, but only where a perf test is collected.
MARKER_CHECK = ("msgspec", "pytest_kerasperf.metrics.base")

#: A plugin that writes the heavy modules imported by the end of the session.
RECORDER = """
import json, os, sys

HEAVY = {heavy!r}


def pytest_unconfigure(config):
    found = sorted(
        name for name in list(sys.modules)
        if any(name == h or name.startswith(h + ".") for h in HEAVY)
    )
    with open(os.environ["KERASPERF_IMPORTED"], "w") as handle:
        json.dump(found, handle)
"""


def heavy_in(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    code = "import sys, json, pytest_kerasperf.plugin; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert heavy_in(json.loads(done.stdout)) == []


@pytest.mark.parametrize("perf_tests", [False, True], ids=["plain-test", "perf-test-collected"])
def test_a_session_without_kerasperf_imports_nothing_heavy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, perf_tests: bool
) -> None:
    """A run that does not ask for perf tests, even one that collects (and skips) them."""
    pytester.makepyfile(recorder=RECORDER.format(heavy=HEAVY))
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    if perf_tests:
        pytester.makepyfile(
            test_perf=(
                "import pytest\n\n\n@pytest.mark.max_calls(10)\n"
                "def test_work(kerasperf):\n    kerasperf(lambda: None)\n"
            )
        )
    out = pytester.path / "imported.json"
    monkeypatch.setenv("KERASPERF_IMPORTED", str(out))
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    result = pytester.runpytest_subprocess("-p", "recorder", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    imported = json.loads(out.read_text())
    if perf_tests:
        result.stdout.fnmatch_lines(["kerasperf: 1 perf test not run (pass --kerasperf *)"])
        imported = [
            m for m in imported if not any(m == c or m.startswith(c + ".") for c in MARKER_CHECK)
        ]
    assert imported == []


def make_venv(path: Path) -> Path:
    """A new virtualenv at ``path`` with pip; its python."""
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin" / "python"


def pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def bare_environment(python: Path) -> dict[str, str]:
    """Only the venv's bin on PATH: no git, no system tools."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "KERASPERF_", "VIRTUAL_ENV", "PYTHONPATH"))
    }
    env["PATH"] = str(python.parent)
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@pytest.mark.slow
def test_a_fresh_venv_with_the_package_keras_and_torch_only(tmp_path: Path) -> None:
    """No jax (so no scipy), no GitPython, no git on PATH: plain runs pass, a perf run measures,
    and ``kerasperf report`` works in a venv with only the package."""
    python = make_venv(tmp_path / "venv")
    pip(python, str(ROOT), "keras==3.15.1", "torch==2.13.0")
    env = bare_environment(python)
    absent = subprocess.run(
        [str(python), "-c", "import importlib.util as u; "
         "print([m for m in ('jax', 'scipy', 'git', 'matplotlib') if u.find_spec(m)])"],
        capture_output=True, text=True, env=env, check=True, timeout=120,
    )  # fmt: skip
    assert absent.stdout.strip() == "[]"
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_plain.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (project / "test_perf.py").write_text(
        textwrap.dedent(
            """
            import keras
            import numpy as np


            def test_dense(kerasperf):
                layer = keras.layers.Dense(4)
                x = np.ones((2, 3), "float32")
                layer(x)
                kerasperf(layer, x)
            """
        )
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=project,
            capture_output=True,
            text=True,
            env={**env, "KERAS_BACKEND": "torch"},
            timeout=900,
            check=False,
        )

    plain = run("test_plain.py", "test_perf.py")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "1 passed, 1 skipped" in plain.stdout

    perf = run("--kerasperf", "--kerasperf-json=results.json", "test_perf.py")
    assert perf.returncode == 0, perf.stdout + perf.stderr
    assert "kerasperf: 1 perf test: 1 measured, 0 compared, 1 not compared (no baseline" in (
        perf.stdout
    )
    results = json.loads((project / "results.json").read_text())["results"]
    assert results[0]["record"]["backend"] == "torch"
    assert results[0]["record"]["calls"] > 0

    only = make_venv(tmp_path / "only-the-package")
    pip(only, str(ROOT))
    report = subprocess.run(
        [str(only.parent / "kerasperf"), "report", str(project / "results.json")],
        capture_output=True,
        text=True,
        env=bare_environment(only),
        timeout=300,
        check=False,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    assert "test_perf.py::test_dense" in report.stdout
