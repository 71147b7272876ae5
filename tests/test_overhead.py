"""Keras / plain framework: both ratios measured in one process and run, and a budget on them.

The plain twin is the issue script's plain-JAX LM, measured right after the
Keras workload with the same passes.  The call ratio is exact, so a
``max_overhead(..., metric="calls")`` below it fails every time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from pytest_kerasperf.outcome import Outcome
from tests.realrun import require_backend

SOURCE = """
import pytest


@pytest.mark.max_overhead({limit}, metric="calls", mode="eager")
@pytest.mark.max_overhead(1000, mode="eager")
def test_lm(kerasperf, kerasperf_lm, kerasperf_lm_prompt):
    kerasperf.against_plain("lm_forward")(kerasperf_lm, kerasperf_lm_prompt)


def test_no_reference(kerasperf, kerasperf_cnn, kerasperf_cnn_input):
    kerasperf(kerasperf_cnn, kerasperf_cnn_input)
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    require_backend("jax")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--kerasperf",
        "-k",
        "eager",
        "--kerasperf-warmup=1",
        "--kerasperf-rounds=3",
        f"--kerasperf-baseline-dir={pytester.path / 'b'}",
        "--kerasperf-json=out.json",
        *args,
        timeout=600,
    )


def recipe_output(project: pytest.Pytester, results: str) -> list[str]:
    """What the overhead recipe of docs/json-output.md prints for ``results``."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "json-output.md").read_text()
    [block] = [
        block.split("```", 1)[0]
        for block in text.split("```python\n")[1:]
        if 'twin = record["reference"]' in block
    ]
    script = project.path / "recipe.py"
    script.write_text(block.replace("kerasperf-results-jax.json", results), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=project.path, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_overhead_ratios_are_recorded_and_gated(project: pytest.Pytester) -> None:
    project.makepyfile(test_lm=SOURCE.format(limit=1000))
    passing = run(project)
    assert passing.ret == pytest.ExitCode.OK, passing.stdout.str()[-3000:]
    results = {
        r["nodeid"]: r for r in json.loads((project.path / "out.json").read_text())["results"]
    }
    lm = results["test_lm.py::test_lm[eager]"]["record"]
    ref = lm["reference"]
    assert ref["framework"] == "jax"
    assert ref["name"] == "plain jax LM forward (eager)"
    assert 0 < ref["calls"] < lm["calls"]
    assert ref["latency_ms"]["rounds"] == 3
    overhead = msgspec.convert(results["test_lm.py::test_lm[eager]"], Outcome).overhead_json()
    assert overhead is not None
    assert overhead["reference"] == ref["name"]
    assert overhead["calls"] == pytest.approx(lm["calls"] / ref["calls"], abs=1e-4)
    assert overhead["latency"] == pytest.approx(
        lm["latency_ms"]["median"] / ref["latency_ms"]["median"], rel=1e-2
    )
    assert (
        msgspec.convert(results["test_lm.py::test_no_reference[eager]"], Outcome).overhead_json()
        is None
    )
    # docs/json-output.md's recipe for the ratios, run on this file, prints the same ratios.
    printed = recipe_output(project, "out.json")
    assert printed == [
        f"test_lm.py::test_lm[eager] {ref['name']} {lm['calls'] / ref['calls']} "
        f"{lm['latency_ms']['median'] / ref['latency_ms']['median']}"
    ]
    # Without a max_overhead budget and without --kerasperf-plain, no twin is measured.
    assert results["test_lm.py::test_no_reference[eager]"]["record"]["reference"] is None

    ratio = lm["calls"] / ref["calls"]
    limit = round(ratio / 2, 2)  # half the measured ratio: exceeded by construction
    project.makepyfile(test_lm=SOURCE.format(limit=limit))
    failing = run(project)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED, failing.stdout.str()[-3000:]
    # The line states this run's own counts: an eager jax forward's count can differ between
    # processes by the few calls of jax's compile-time rule (docs/census.md).
    again = {
        r["nodeid"]: r for r in json.loads((project.path / "out.json").read_text())["results"]
    }["test_lm.py::test_lm[eager]"]["record"]
    ratio = again["calls"] / again["reference"]["calls"]
    failing.stdout.fnmatch_lines(
        [
            f"*max_overhead({limit:g}, metric='calls', mode='eager'): Keras {ratio:.2f}× "
            f"plain jax LM forward (eager) ({again['calls']:,} calls vs "
            f"{again['reference']['calls']:,})*"
        ]
    )


def test_kerasperf_plain_measures_every_named_twin(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_cnn="""
def test_cnn(kerasperf, kerasperf_cnn, kerasperf_cnn_input):
    kerasperf.against_plain("cnn_forward")(kerasperf_cnn, kerasperf_cnn_input)
"""
    )
    result = run(project, "--kerasperf-plain")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    (only,) = json.loads((project.path / "out.json").read_text())["results"]
    assert only["record"]["reference"]["name"] == "plain jax CNN forward (eager)"


def test_an_unknown_twin_is_a_clear_error(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="""
def test_bad_eager(kerasperf):
    kerasperf.against_plain("resnet")(lambda: None)
"""
    )
    result = run(project)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*ValueError: no plain workload 'resnet'; one of cnn_forward, lm_forward, lm_generate_32"]
    )


def test_a_jitted_twin_makes_no_python_calls_and_its_results_file_reads_back(
    project: pytest.Pytester,
) -> None:
    """Under jax.jit neither the Keras model nor the plain JAX twin runs Python after its first
    call: the twin's 0 calls are a measurement (``make article`` writes them), and the reports
    read the file back with no ratio of calls rather than refusing it."""
    from kerasperf_lab.publish import article
    from kerasperf_lab.publish.families import load_families
    from pytest_kerasperf.results_file import load_results

    project.makepyfile(
        test_cnn="""
def test_cnn(kerasperf, kerasperf_cnn, kerasperf_cnn_input):
    kerasperf.against_plain("cnn_forward")(kerasperf_cnn, kerasperf_cnn_input)
"""
    )
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kerasperf", "--kerasperf-plain", "-k", "compiled",
        "--kerasperf-warmup=1", "--kerasperf-rounds=3",
        f"--kerasperf-baseline-dir={project.path / 'b'}", "--kerasperf-json=out.json",
        timeout=600,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    (only,) = json.loads((project.path / "out.json").read_text())["results"]
    twin = only["record"]["reference"]
    assert twin["name"] == "plain jax CNN forward (jax.jit)"
    assert (only["record"]["calls"], twin["calls"]) == (0, 0)
    assert twin["latency_ms"]["median"] > 0
    [outcome] = load_results(project.path / "out.json").outcomes
    assert outcome.record.plain_twin is not None
    assert outcome.record.plain_twin.calls == 0
    [row] = article.build([outcome], load_families()).calls
    assert (row.calls, row.plain_calls, row.overhead) == (0, 0, None)
