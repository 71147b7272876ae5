"""An isolated inner pytest project for the plugin's own tests.

Every inner run uses the numpy backend and a tiny pure-Python workload, so it
is cheap and its cProfile counts are exact; no count is hard-coded: runs are
compared with each other or with the baseline file the plugin wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

KEY = "test_x.py::test_work"
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
        return self.baseline_dir / "numpy.json"

    def write(self, source: str, name: str = "test_x") -> Path:
        return self.pytester.makepyfile(**{name: source})

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(
            *FAST, f"--kerasperf-baseline-dir={self.baseline_dir}", *args, timeout=TIMEOUT
        )

    def baseline(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.baseline_file.read_text(encoding="utf-8"))
        return data

    def results(self, name: str = "out.json") -> list[dict[str, Any]]:
        data = json.loads((self.pytester.path / name).read_text(encoding="utf-8"))
        results: list[dict[str, Any]] = data["results"]
        return results


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
