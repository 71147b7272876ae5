"""``pytest --kerasperf-compare-ref REF``: the gate against a base commit measured in the job.

A real git history is built from the installed Keras source (the unpatched
copy, then a commit planting an extra call in ``Layer.__call__``) and checked
out; pytest runs the bundled suite's CNN forward against that work tree with
``--kerasperf-compare-ref`` naming the unpatched commit.  The base and head
processes really run (one each, interleaved), the counts are compared exactly
and the planted call is named; compared against itself, the same tree passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import readresult
from tests.realrun import require_backend
from tests.test_keras_regression import commit_all, copy_keras, new_repo, plant_layer_check

SELECT = "cnn_forward"
RESULTS_SCHEMA = (
    Path(__file__).parent.parent / "pytest_kerasperf" / "schemas" / "results.schema.json"
)


def _history(root: Path) -> tuple[Path, str, str]:
    """A Keras work tree: ``Initial (#1)``, then ``Add a check (#2)`` (checked out)."""
    work = copy_keras(root / "keras-repo")
    repo = new_repo(work)
    base = commit_all(repo, "Initial (#1)")
    plant_layer_check(work)
    head = commit_all(repo, "Add a check (#2)")
    # A branch "broken" off Initial whose Keras does not import, then back to the head.
    repo.git.checkout("-q", "-b", "broken", base)
    init = work / "keras" / "__init__.py"
    init.write_text('raise ImportError("kerasperf planted: this Keras does not import")\n')
    repo.git.commit("-q", "-am", "Break the import (#3)")
    repo.git.checkout("-q", head)
    return work, base, head


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, work: Path, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.setenv("PYTHONPATH", str(work))
    out = pytester.path / "results.json"
    out.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        f"--kerasperf-json={out}",
        "--kerasperf-ab-processes=1",
        "--kerasperf-rounds=3",
        "-k",
        SELECT,
        *args,
        "--pyargs",
        "pytest_kerasperf.suite",
        timeout=900,
    )
    document = json.loads(out.read_text()) if out.exists() else {}
    return result, document


def test_compare_ref_names_the_planted_call_and_passes_against_itself(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("numpy")
    work, base, head = _history(tmp_path)

    result, document = _run(pytester, monkeypatch, work, f"--kerasperf-compare-ref={base[:12]}")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    jsonschema.validate(document, json.loads(RESULTS_SCHEMA.read_text(encoding="utf-8")))
    # One pair, timed in lockstep: 10 warm-up and 3 timed rounds on each side, taking turns.
    assert "kerasperf compare-ref: pair 1/1 (13 + 13 rounds in lockstep on CPU " in text
    assert "_kerasperf_planted_check" in text
    assert f"per call, REF {base[:10]} " in text
    assert f"compared against REF {base[:12]}" in text
    assert "not against the committed baselines" in text
    (cnn,) = [r for r in document["results"] if r["key"].endswith("test_cnn_forward[eager]")]
    assert cnn["compared_with"] == {"ref": base[:12], "commit": base}
    assert cnn["verdict"]["status"] == "regressed"
    delta = readresult.calls_delta(cnn)
    assert delta is not None
    assert delta > 0
    assert cnn["baseline"]["calls"] == cnn["record"]["calls"] - delta
    ab = cnn["ab"]
    assert ab["base_processes"] == ab["head_processes"] == 1
    assert ab["base_n"] == ab["head_n"] == 3
    # 3 rounds a side cannot reach p < 0.01: the latency part cannot decide.
    assert ab["decision"] == "no change"

    result, document = _run(pytester, monkeypatch, work, f"--kerasperf-compare-ref={head}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    (cnn,) = [r for r in document["results"] if r["key"].endswith("test_cnn_forward[eager]")]
    assert cnn["verdict"]["status"] == "pass"
    assert readresult.calls_delta(cnn) == 0
    assert cnn["ab"]["decision"] == "no change"


def test_compare_ref_usage_errors_are_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("numpy")
    work, base, _ = _history(tmp_path)
    result, _ = _run(pytester, monkeypatch, work, "--kerasperf-compare-ref=no-such-ref")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --kerasperf-compare-ref: unknown ref 'no-such-ref'" in result.stderr.str()
    result, _ = _run(
        pytester,
        monkeypatch,
        work,
        f"--kerasperf-compare-ref={base}",
        "--kerasperf-update-baseline",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "drop --kerasperf-update-baseline" in result.stderr.str()
    # A REF whose Keras does not import: not compared, and the reason says why.
    result, document = _run(
        pytester, monkeypatch, work, "--kerasperf-compare-ref=broken", "--kerasperf-strict"
    )
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    (cnn,) = document["results"]
    assert cnn["verdict"]["compared"] is False
    assert "kerasperf planted: this Keras does not import" in cnn["verdict"]["not_compared"]
    assert "not compared: REF broken" in text
    assert "1 not compared" in text
    # A Keras that is not at the top of a work tree needs the repository named.
    monkeypatch.setenv("PYTHONPATH", str(copy_keras(tmp_path / "plain-copy")))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--kerasperf-compare-ref={base}", "--pyargs", "pytest_kerasperf"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "give --kerasperf-compare-repo PATH" in result.stderr.str()


def _compare_with(head_rounds: tuple[float, ...]) -> tuple[Any, str, Any]:
    """A CompareRef whose one pair measured a test: base timed 3 rounds, head ``head_rounds``."""
    from pytest_kerasperf.ab.interleave import Interleaved
    from pytest_kerasperf.ab.processes import ProcessOutput
    from pytest_kerasperf.compare_ref import CompareRef
    from pytest_kerasperf.record import Record

    record = Record(
        backend="numpy",
        mode="eager",
        calls=3,
        calls_by_function={"test_x.py:work": 1, "len": 2},
        graph_breaks=None,
        latency=None,
        environment={"python": "3.11.7", "numpy": "2.4.6", "device": "cpu: X"},
        call_edges={"test_x.py:work": {"len": 2}},
    )
    key = "test_x.py::test_work"
    return (
        CompareRef(
            ref="main",
            sha="0" * 40,
            repo=None,
            head_tree=Path("."),
            processes=1,
            rounds=3,
            measured=Interleaved(
                outputs=(
                    ("base", ProcessOutput({key: (1.0, 1.1, 1.2)}, {key: record}, "3.15.1")),
                    ("head", ProcessOutput({key: head_rounds}, {key: record}, "3.15.1")),
                ),
                keras={},
            ),
        ),
        key,
        record,
    )


@pytest.mark.parametrize("strict", [False, True])
def test_a_latency_ab_that_cannot_be_judged_fails_under_strict(strict: bool) -> None:
    """One side timed fewer than 2 rounds: compared counts, no A/B; strict fails the test."""
    from pytest_kerasperf import compare_ref
    from pytest_kerasperf.accounting import account
    from pytest_kerasperf.settings import Settings

    compare, key, record = _compare_with((1.0,))
    settings = Settings(strict=strict)
    result, base, ab_verdict = compare_ref.judge(compare, key, record, [], settings)
    assert ab_verdict is None
    assert base == record
    assert result.compared
    line = (
        "latency not compared with REF main (0000000000): fewer than 2 timed rounds in a "
        "process (is --rounds > 1?)"
    )
    if strict:
        assert result.failure_lines == (f"{line} (--kerasperf-strict)",)
        assert not result.passed
    else:
        assert result.failures == ()
        assert line in result.notes
    summary = account([], [], (), Settings(), ab_not_judged=1)
    assert "1 latency A/B not judged" in summary.strict_problems()

    timed, timed_key, _ = _compare_with((1.0, 1.1, 1.2))
    judged, _, decided = compare_ref.judge(timed, timed_key, record, [], settings)
    assert decided is not None
    assert judged.passed
