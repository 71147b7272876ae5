"""The README's perf test, run as written against the committed baselines on torch and numpy.

The example is written to ``test_standard.py`` so that its keys are the
committed suite's keys: it measures what the suite's ``test_lm_forward``
measures, so it must compare equal, and its scoped budgets must hold on the
committed counts of both backends and both modes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import readresult
from tests.inner import VARIANT
from tests.realrun import BASELINES, require_backend
from tests.test_keras_regression import snapshot

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## A perf test", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README: no python block under '## A perf test'"
    return match.group(1)


def run_example(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, backend: str, source: str
) -> tuple[pytest.RunResult, list[dict[str, object]]]:
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    pytester.makepyfile(test_standard=source)
    result = pytester.runpytest_subprocess(
        "--kerasperf",
        f"--kerasperf-baseline-dir={BASELINES}",
        "--kerasperf-rounds=0",
        "--kerasperf-json=out.json",
        "-p",
        "no:cacheprovider",
        timeout=900,
    )
    results = json.loads((pytester.path / "out.json").read_text())["results"]
    return result, results


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_the_readme_example_passes_against_the_committed_baselines(
    backend: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_backend(backend)
    before = snapshot(BASELINES / backend)
    result, results = run_example(pytester, monkeypatch, backend, readme_example())
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    modes = ["eager", "compiled"] if backend == "torch" else ["eager"]
    assert [r["record"]["mode"] for r in results] == modes  # type: ignore[index]
    for found in results:
        verdict = found["verdict"]
        assert verdict["compared"], verdict  # type: ignore[index]
        assert readresult.calls_delta(found) == 0, verdict
        assert not any("not checked" in note for note in verdict["notes"])  # type: ignore[index]
        assert found["variant"] == VARIANT
    assert snapshot(BASELINES / backend) == before


def test_the_readme_budgets_are_checked_where_they_are_scoped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every number set to 0: each budget scoped to torch fails in its own mode only."""
    require_backend("torch")
    tight = re.sub(r"max_(calls|graph_breaks)\([\d_]+", r"max_\1(0", readme_example())
    result, results = run_example(pytester, monkeypatch, "torch", tight)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    by_mode = {r["record"]["mode"]: readresult.failures(r) for r in results}  # type: ignore[index]
    assert sorted(line.split(":")[0] for line in by_mode["eager"]) == [
        "max_calls(0, backend='torch', mode='eager')",
        "max_calls(0, function='isinstance', backend='torch', mode='eager')",
    ]
    assert [line.split(":")[0] for line in by_mode["compiled"]] == [
        "max_graph_breaks(0, backend='torch', mode='compiled')",
    ]
