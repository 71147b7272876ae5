"""A results file's claims about itself are held to what it carries (issue 39).

Each case takes a real run's ``--kerasperf-json`` (``test_untrusted``'s: a clean run, and a
run that regressed by one planted call against its baseline) and edits one claim: a summary
in place of the profile, a backend, variant, device or Python relabelled, a status that the
counts contradict, a count out of bounds, a document of the wrong shape.  ``kerasperf
accept``, ``report`` and ``publish`` each refuse it in one line naming the file and the field,
exit 2, with nothing written; the real file is accepted.
"""

from __future__ import annotations

import copy
import fnmatch
import glob
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pytest_kerasperf import baseline, baseline_table
from pytest_kerasperf.ab import outputs
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.codec import MAX_COUNT
from tests.inner import KEY, VARIANT, Inner
from tests.test_untrusted import (
    GENEXPR,
    LOCAL_KEY,
    assert_one_line_error,
    clean_results,
    dumps,
    failing_results,
    first,
    kerasperf,
    record,
    tree,
)

Damage = Callable[[dict[str, Any]], str]
FAILING = glob.escape(f"results/0 ({LOCAL_KEY})")  # a pattern: its key holds [ ]
CLEAN = f"results/0 ({KEY})"
OTHER_PYTHON = "3.99"


def edited(change: Callable[[dict[str, Any]], None]) -> Damage:
    def damage(data: dict[str, Any]) -> str:
        change(data)
        return dumps(data)

    return damage


def summary_claim(data: dict[str, Any]) -> None:
    """A record calling itself a census table's totals, with no profile to add up."""
    record(data).update(totals_only=True, calls=999_999, calls_by_function={}, call_edges={})


def calls_without_profile(data: dict[str, Any]) -> None:
    record(data).update(calls=999_999, calls_by_function={}, call_edges={})


def as_torch(data: dict[str, Any]) -> None:
    record(data)["backend"] = "torch"


def as_torch_throughout(data: dict[str, Any]) -> None:
    record(data)["backend"] = record(data)["environment"]["backend"] = "torch"


def as_torch_without_jax_facts(data: dict[str, Any]) -> None:
    as_torch_throughout(data)
    del record(data)["environment"]["jax.device_count"]


def as_jax_nnx(data: dict[str, Any]) -> None:
    as_torch_throughout(data)
    record(data)["backend"] = record(data)["environment"]["backend"] = "jax"
    record(data)["environment"]["keras.nnx_enabled"] = "True"
    first(data)["variant"] = f"{VARIANT}-nnx"


def as_gpu(data: dict[str, Any]) -> None:
    record(data)["environment"]["device"] = "cuda: NVIDIA H100"
    first(data)["variant"] = VARIANT.replace("-cpu", "-gpu")


def as_gpu_with_accelerator(data: dict[str, Any]) -> None:
    as_gpu(data)
    record(data)["environment"]["accelerator"] = "yes"


def as_other_python(data: dict[str, Any]) -> None:
    record(data)["environment"]["python"] = f"{OTHER_PYTHON}.0"
    first(data)["variant"] = VARIANT.replace(VARIANT.split("-")[0], f"py{OTHER_PYTHON}")


def passing_regression(data: dict[str, Any]) -> None:
    """The planted regression marked as passing: the counts say otherwise."""
    first(data)["verdict"].update(status="pass", failures=[])
    first(data)["passed"] = True


def unknown_failure_kind(data: dict[str, Any]) -> None:
    first(data)["verdict"]["failures"][0]["kind"] = "cosmic_rays"


def negative_not_measured(data: dict[str, Any]) -> None:
    data["summary"]["not_measured"] = {"hidden": -5}


def summary_miscounted(data: dict[str, Any]) -> None:
    data["summary"]["measured"] += 1


def huge_calls(data: dict[str, Any]) -> None:
    record(data)["calls"] = 10**17  # 18 digits: the most the JSON reader lets through


def negative_latency(data: dict[str, Any]) -> None:
    record(data)["latency_ms"]["median"] = -1.0


def zero_rounds(data: dict[str, Any]) -> None:
    record(data)["latency_ms"]["rounds"] = 0


def negative_function(data: dict[str, Any]) -> None:
    record(data)["calls_by_function"][GENEXPR] = -5


def negative_edge(data: dict[str, Any]) -> None:
    """A count below zero on one edge into the generator: the place names both keys."""
    edges = record(data)["call_edges"]
    caller = next(caller for caller, callees in edges.items() if GENEXPR in callees)
    edges[caller][GENEXPR] = -1


def results_not_a_list(data: dict[str, Any]) -> str:
    return json.dumps({"schema_version": 4, "summary": None, "results": 1})


SHAPE = "not a pytest-kerasperf results file (--kerasperf-json, schema version 4)"

#: (which real run, damage, the error after "FILE: ")
CASES: dict[str, tuple[str, Damage, str]] = {
    "summary-claim": (
        "clean",
        edited(summary_claim),
        "results/0/record/totals_only: a census table's totals where the whole profile belongs: *",
    ),
    "calls-without-profile": (
        "clean",
        edited(calls_without_profile),
        f"{CLEAN}: calls 999,999 but its functions add up to 0",
    ),
    "relabelled-torch": (
        "clean",
        edited(as_torch),
        f"{CLEAN}: record/backend: 'torch', but its record/environment/backend is 'numpy': *",
    ),
    "relabelled-torch-throughout": (
        "clean",
        edited(as_torch_throughout),
        f"{CLEAN}: record/backend: 'torch', but its environment holds 'jax.device_count', *",
    ),
    "relabelled-torch-without-jax-facts": (
        "clean",
        edited(as_torch_without_jax_facts),
        f"{CLEAN}: record/backend: 'torch', but rerecord runs KERAS_BACKEND=numpy",
    ),
    "relabelled-jax-nnx": (
        "clean",
        edited(as_jax_nnx),
        f"{CLEAN}: record/backend: 'jax', but rerecord runs KERAS_BACKEND=numpy",
    ),
    "relabelled-gpu": (
        "clean",
        edited(as_gpu),
        f"{CLEAN}: record/environment/device: 'cuda: NVIDIA H100' (gpu), but its accelerator "
        "is 'no'",
    ),
    "relabelled-gpu-with-accelerator": (
        "clean",
        edited(as_gpu_with_accelerator),
        f"{CLEAN}: record/environment/device: 'cuda: NVIDIA H100', but record/latency_ms was "
        "timed on *",
    ),
    "relabelled-python": (
        "failing",
        edited(as_other_python),
        f"{FAILING}: variant 'py{OTHER_PYTHON}-cpu', but it was compared with an entry of "
        f"variant '{VARIANT}'",
    ),
    "regression-marked-pass": (
        "failing",
        edited(passing_regression),
        f"{FAILING}: verdict/status: 'pass', but record/calls * is +1 over its baseline's *: "
        "more calls regress",
    ),
    "unknown-failure-kind": (
        "failing",
        edited(unknown_failure_kind),
        f"{SHAPE}: at results/0/verdict/failures/0/kind: Expected `str` matching regex *",
    ),
    "negative-not-measured": (
        "clean",
        edited(negative_not_measured),
        f"{SHAPE}: at summary/not_measured/*: Expected `int` >= 0",
    ),
    "summary-miscounted": ("clean", edited(summary_miscounted), "summary/measured: 2, *"),
    "calls-1e17": (
        "clean",
        edited(huge_calls),
        f"{SHAPE}: at results/0/record/calls: Expected `int` <= {MAX_COUNT}",
    ),
    "negative-latency": (
        "clean",
        edited(negative_latency),
        f"{SHAPE}: at results/0/record/latency_ms/median: Expected `float` >= 0.0",
    ),
    "zero-rounds": (
        "clean",
        edited(zero_rounds),
        f"{SHAPE}: at results/0/record/latency_ms/rounds: Expected `int` >= 1",
    ),
    "negative-function-count": (
        "clean",
        edited(negative_function),
        f"{SHAPE}: at results/0/record/calls_by_function/{GENEXPR}: Expected `int` >= 0",
    ),
    "negative-edge-count": (
        "clean",
        edited(negative_edge),
        f"{SHAPE}: at results/0/record/call_edges/[!<]*/{GENEXPR}: Expected `int` >= 0",
    ),
    "results-not-a-list": (
        "clean",
        results_not_a_list,
        f"{SHAPE}: at results: Expected `array`, got `int`",
    ),
}


def real(inner: Inner, run: str) -> dict[str, Any]:
    return failing_results(inner) if run == "failing" else clean_results(inner)


@pytest.mark.parametrize("case", list(CASES))
def test_accept_report_and_publish_refuse_a_false_claim(inner: Inner, case: str) -> None:
    run, damage, reason = CASES[case]
    data = real(inner, run)
    bad = inner.pytester.path / "bad.json"
    bad.write_text(damage(copy.deepcopy(data)), encoding="utf-8")
    before = tree(inner.baseline_dir)
    page, markdown = inner.pytester.path / "page.html", inner.pytester.path / "report.md"
    commands = {
        "accept": ("--baseline-dir", inner.baseline_dir),
        "report": ("--markdown", markdown),
        "publish": ("-o", page),
    }
    for command, args in commands.items():
        done = kerasperf(command, bad, *args, cwd=inner.pytester.path)
        said = assert_one_line_error(done, command, bad)
        assert fnmatch.fnmatchcase(said, reason), (command, said)
    assert tree(inner.baseline_dir) == before
    assert not page.exists()
    assert not markdown.exists()


@pytest.mark.parametrize("run", ["clean", "failing"])
def test_the_real_results_are_accepted_and_reported(inner: Inner, run: str) -> None:
    """The checks hold every real file: the same runs, unedited, pass all three commands."""
    path = inner.pytester.path / "real.json"
    path.write_text(dumps(real(inner, run)), encoding="utf-8")
    report = kerasperf("report", path, cwd=inner.pytester.path)
    assert report.returncode == (1 if run == "failing" else 0), report.stderr
    done = kerasperf("accept", path, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr


def test_accept_refuses_an_entry_the_gate_could_not_read_back(inner: Inner) -> None:
    """A record whose entry file would be over ``baseline.MAX_FILE_BYTES``: every part adds
    up, so only its size is wrong, and the gate would stop on it (pytest exit 4)."""
    data = clean_results(inner)
    functions = record(data)["calls_by_function"]
    many = 40_000
    for index in range(many):
        functions[f"test_x.py:padding_function_{index:06d}_{'x' * 20}"] = 1
    record(data)["calls"] += many
    bad = inner.pytester.path / "big.json"
    bad.write_text(dumps(data), encoding="utf-8")
    done = kerasperf("accept", bad, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert fnmatch.fnmatchcase(
        line,
        f"kerasperf accept: error: {inner.entry_file()}: would be * bytes, more than the "
        f"{baseline.MAX_FILE_BYTES:,} the gate reads back; nothing written",
    ), line
    assert not inner.baseline_dir.exists()


def test_a_table_over_its_limit_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """The size rule covers a census table as well (``baseline_table.MAX_TABLE_BYTES``)."""
    table = tmp_path / f"test_census.py{baseline_table.TABLE_SUFFIX}"
    entry = tmp_path / "test_x.py" / "test_work.json"
    big = "x" * (baseline_table.MAX_TABLE_BYTES + 1)
    baseline_table.refuse_oversized([(entry, "{}"), (table, None)], baseline.MAX_FILE_BYTES)
    with pytest.raises(baseline.BaselineError, match="more than the 4,194,304 the gate reads"):
        baseline_table.refuse_oversized([(table, big)], baseline.MAX_FILE_BYTES)
    with pytest.raises(baseline.BaselineError, match="more than the 1,048,576 the gate reads"):
        baseline_table.refuse_oversized([(entry, big[: 2 * 2**20])], baseline.MAX_FILE_BYTES)


def test_a_budget_failure_without_a_baseline_is_a_claim_that_holds() -> None:
    """``over-budget`` may have compared or not (a budget needs no baseline): both are real."""
    from pytest_kerasperf import results_claims
    from pytest_kerasperf.metrics.base import Failure
    from pytest_kerasperf.verdict import Verdict
    from tests.test_reports import fake_result

    new = fake_result("test_x.py::test_budget", "new")
    over = Verdict("over-budget", failures=(Failure("calls", "calls: over budget"),))
    assert results_claims.verdict(msgspec.structs.replace(new, verdict=over), False) is None
    unfailed = Verdict("over-budget")
    said = results_claims.verdict(msgspec.structs.replace(new, verdict=unfailed), False)
    assert said == "verdict/status: 'over-budget' with no failure"


def test_ab_refuses_what_a_measuring_process_wrote_when_it_is_not_a_results_file(
    inner: Inner, tmp_path: Path
) -> None:
    """A/B and sweep processes run the commit's code (a fork's, in a pull request), so their
    results file is read as ``accept`` reads a CI artifact: a real one gives its record, one
    as large as a census run writes (35 to 85 MB, docs/github.md) gives all of them, and one
    past the reader's cap or of another shape is refused in one line, in well under a
    second."""
    real = tmp_path / "real.json"
    real.write_text(dumps(clean_results(inner)), encoding="utf-8")
    [measured] = outputs.read_results(real)
    assert (measured.key, measured.record.calls) == (KEY, record(clean_results(inner))["calls"])

    # The real result as many tests of one run, past the 16 MiB that refused every sweep of
    # the census (a tensorflow census commit's file was 57.5 MB).
    census = clean_results(inner)
    [result] = census["results"]
    copies = 1 + (16 * 2**20) // len(dumps(result))
    census["results"] = [
        {**copy.deepcopy(result), "key": f"{KEY}{i}", "nodeid": f"{result['nodeid']}{i}"}
        for i in range(copies)
    ]
    summary = census["summary"]  # the run's account, of every copy
    summary.update(
        measured=copies,
        compared=summary["compared"] * copies,
        not_compared={why: n * copies for why, n in summary["not_compared"].items()},
    )
    large = tmp_path / "census.json"
    large.write_text(dumps(census), encoding="utf-8")
    assert large.stat().st_size > 16 * 2**20
    assert len(outputs.read_results(large)) == copies

    huge = tmp_path / "huge.json"
    with huge.open("wb") as sparse:  # past the cap: refused before a byte is read
        sparse.truncate(outputs.MAX_RESULTS_BYTES + 1)
    started = time.perf_counter()
    with pytest.raises(HistoryError, match=r"^the measuring process's results: .*more than"):
        outputs.read_results(huge)
    assert time.perf_counter() - started < 1.0

    relabelled = tmp_path / "relabelled.json"
    relabelled.write_text(edited(as_torch)(clean_results(inner)), encoding="utf-8")
    with pytest.raises(HistoryError) as refused:
        outputs.read_results(relabelled)
    assert "record/backend: 'torch'" in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ({"benchmarks": [{"fullname": "t.py::t", "stats": {"data": [-0.5]}}]}, ">= 0"),
        ({"benchmarks": {"t.py::t": 1}}, "Expected `array`"),
        (
            {"benchmarks": [{"fullname": "t.py::t", "stats": {"data": [1e400]}}]},
            "1e400 overflows a float",
        ),
    ],
)
def test_ab_refuses_timings_a_measuring_process_should_not_have_written(
    tmp_path: Path, written: dict[str, Any], reason: str
) -> None:
    path = tmp_path / "timings.json"
    path.write_text(json.dumps(written).replace("Infinity", "1e400"), encoding="utf-8")
    with pytest.raises(HistoryError, match=f"^{path}: not pytest-benchmark's JSON: ") as refused:
        outputs.read_timings(path)
    assert reason in str(refused.value)
