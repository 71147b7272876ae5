"""An isolated inner pytest project for the plugin's own tests.

Every inner run uses the numpy backend and a tiny pure-Python workload, so it
is cheap and its cProfile counts are exact; no count is hard-coded: runs are
compared with each other or with the baseline files the plugin wrote.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.baseline import relative_file

KEY = "test_x.py::test_work"
#: The baseline variant of an inner run here: this Python's minor version, on the CPU.
VARIANT = f"py{sys.version_info.major}.{sys.version_info.minor}-cpu"
FAST = ("--kerasperf-rounds", "3", "--kerasperf-warmup", "1", "-p", "no:cacheprovider")
TIMEOUT = 300.0


def workload_source(*, size: int = 50, helper: bool = False, test: str = "test_work") -> str:
    """A test module measuring ``sorted(str(i) for i in range(size))``.

    ``helper=True`` adds one call to ``helper`` per workload call; a smaller
    ``size`` makes the generator yield fewer times (fewer calls).
    """
    extra = "    helper()\n" if helper else ""
    return (
        "def helper():\n"
        "    return 0\n"
        "\n"
        "\n"
        "def work():\n"
        f"{extra}"
        f"    return sorted(str(i) for i in range({size}))\n"
        "\n"
        "\n"
        f"def {test}(kerasperf):\n"
        "    kerasperf(work)\n"
    )


@dataclass
class Inner:
    """One isolated project: a test file, a baseline directory, runs of pytest."""

    pytester: pytest.Pytester
    baseline_dir: Path

    @property
    def baseline_file(self) -> Path:
        """The directory of the numpy entries of this machine's variant."""
        return self.baseline_dir / "numpy" / VARIANT

    def entry_file(self, key: str = KEY) -> Path:
        """The file of one entry of this variant (``baseline.relative_file``)."""
        return self.baseline_file / relative_file(key)

    def write(self, source: str, name: str = "test_x") -> Path:
        return self.pytester.makepyfile(**{name: source})

    def run(self, *args: str, fresh: bool = False) -> pytest.RunResult:
        """pytest on the project: in this process where it can be, else a fresh one.

        In-process saves a Python, pytest and Keras start per run, which made
        most of the suite's time.  A fresh process is used where in-process
        cannot be the same: when asked (``fresh``: what a fresh process does is
        the point), with string hashing randomised in this process (the plugin
        refuses to count then), when Keras is (to be) imported with another
        backend than numpy here (one backend per process), or when the test
        changed what Keras reads at import (another Keras on ``PYTHONPATH``,
        another ``KERAS_HOME``).
        """
        argv = (*FAST, f"--kerasperf-baseline-dir={self.baseline_dir}", *args)
        if fresh or not in_process_possible():
            return self.pytester.runpytest_subprocess(*argv, timeout=TIMEOUT)
        with pytest.MonkeyPatch.context() as patch:
            # A test file rewritten within a second must never be read from a stale .pyc.
            patch.setattr(sys, "dont_write_bytecode", True)
            return self.pytester.runpytest_inprocess(*argv)

    def baseline(self) -> dict[str, Any]:
        """``{"tests": {key: entry}}``: every entry of the variant, as its files hold them."""
        tests: dict[str, Any] = {}
        for path in sorted(self.baseline_file.rglob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            tests[data["key"]] = data["entry"]
        return {"backend": "numpy", "variant": VARIANT, "tests": tests}

    def snapshot(self) -> dict[str, bytes]:
        """Every baseline file's bytes, by its path under the baseline directory."""
        return {
            str(path.relative_to(self.baseline_dir)): path.read_bytes()
            for path in sorted(self.baseline_dir.rglob("*"))
            if path.is_file()
        }

    def results(self, name: str = "out.json") -> list[dict[str, Any]]:
        data = json.loads((self.pytester.path / name).read_text(encoding="utf-8"))
        results: list[dict[str, Any]] = data["results"]
        return results


#: What Keras reads when it is imported: an inner run that changes one needs its own process.
IMPORT_TIME_VARIABLES = ("PYTHONPATH", "KERAS_HOME", "KERAS_NNX_ENABLED")
_AT_START = {name: os.environ.get(name) for name in IMPORT_TIME_VARIABLES}


def in_process_possible() -> bool:
    """Can an inner numpy run share this process?  (See ``Inner.run``.)"""
    if sys.flags.hash_randomization or os.environ.get("KERAS_BACKEND") != "numpy":
        return False
    if any(os.environ.get(name) != value for name, value in _AT_START.items()):
        return False  # another Keras (PYTHONPATH), another keras.json, NNX
    keras = sys.modules.get("keras")
    return keras is None or keras.config.backend() == "numpy"


def make_inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Inner:
    """The ``inner`` fixture (tests/conftest.py)."""
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    # An inner run is not an xdist worker even when the outer run is one
    # (pytest-benchmark would stop timing).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    # A test file rewritten within a second must never be read from a stale .pyc.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return Inner(pytester, pytester.path / "perf-baselines")
