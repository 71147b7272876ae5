"""Behaviour of the plugin, driven through real pytest runs in subprocesses.

Every inner run uses the numpy backend and a tiny pure-Python workload, so it
is cheap and its cProfile counts are exact; no count is hard-coded here: runs
are compared with each other or with the baseline files the plugin wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pytest_kerasperf import baseline
from pytest_kerasperf.record import ProfileSummary, Record, profile_digest, record_data
from tests import readresult
from tests.inner import KEY, VARIANT, Inner, workload_source

REPO = Path(__file__).resolve().parent.parent
RESULTS_SCHEMA = REPO / "pytest_kerasperf" / "schemas" / "results.schema.json"


def by_nodeid(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["nodeid"]: r for r in results}


def summary_of(record: dict[str, Any]) -> ProfileSummary:
    """What a baseline entry keeps of a results record's profile (its compact form)."""
    return msgspec.convert(record, Record).compact().profile()


def sorted_keys(text: str) -> bool:
    """Is every object of the JSON ``text`` written with its keys sorted?"""
    ordered = True

    def check(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal ordered
        keys = [key for key, _ in pairs]
        ordered = ordered and keys == sorted(keys)
        return dict(pairs)

    json.loads(text, object_pairs_hook=check)
    return ordered


# ------------------------------------------------------------- opting in


def test_perf_tests_are_skipped_without_the_option(inner: Inner) -> None:
    inner.write(
        workload_source() + "\n\nimport pytest\n\n\n"
        "@pytest.mark.max_calls(10)\n"
        "def test_marker_only():\n"
        "    pass\n\n\n"
        "def test_normal():\n"
        "    pass\n"
    )
    result = inner.run("-rs")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=2)
    skipped = "SKIPPED [[]1[]] test_x.py*: perf test: run with --kerasperf to measure and gate it"
    result.stdout.fnmatch_lines([skipped, skipped])
    result.stdout.no_fnmatch_line("*= kerasperf =*")
    assert not inner.baseline_dir.exists()


def test_update_creates_a_sorted_baseline_keyed_without_directory(inner: Inner) -> None:
    inner.pytester.mkpydir("perf")  # a package: the node id is perf/test_x.py::test_work
    (inner.pytester.path / "perf" / "test_x.py").write_text(workload_source())
    result = inner.run("--kerasperf-update-baseline")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [f"*baseline {inner.baseline_file}:", f"  added     {KEY}: * calls"]
    )

    # One file, for this test and this variant, at the path its key names.
    path = inner.entry_file(KEY)
    assert path == inner.baseline_dir / "numpy" / VARIANT / "test_x.py" / "test_work.json"
    assert list(inner.snapshot()) == [f"numpy/{VARIANT}/test_x.py/test_work.json"]
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert sorted_keys(text)
    assert text.endswith("}\n")
    assert (data["schema_version"], data["backend"], data["variant"], data["key"]) == (
        baseline.SCHEMA_VERSION,
        "numpy",
        VARIANT,
        KEY,
    )
    entry = data["entry"]
    assert text == baseline.dumps("numpy", VARIANT, KEY, msgspec.convert(entry, Record))
    assert entry["backend"] == "numpy"
    assert entry["mode"] == "eager"
    functions = [calls for in_file in entry["functions"].values() for calls, _ in in_file.values()]
    assert entry["calls"] == sum(functions) + sum(entry["calls_by_package"].values())
    # The test module is in a package (perf/): its functions are totalled under its name,
    # as everything outside Keras is; ``sorted`` is a builtin.
    assert entry["functions"] == {}
    assert entry["calls_by_package"] == {"builtins": 1, "perf": entry["calls"] - 1}
    assert "calls_by_function" not in entry
    assert "call_edges" not in entry
    assert entry["latency_ms"]["rounds"] == 3

    # A second update that measures no latency: the counts repeat exactly in a new
    # process, so the entry keeps its bytes (and its stored latency).
    before = inner.snapshot()
    again = inner.run("--kerasperf-update-baseline", "--kerasperf-rounds", "0")
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines([f"  unchanged {KEY}"])
    assert inner.snapshot() == before


def test_update_with_k_rewrites_only_the_selected_entry(inner: Inner) -> None:
    inner.write(
        workload_source(test="test_a") + "\n\n" + "def test_b(kerasperf):\n    kerasperf(work)\n"
    )
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    before = inner.baseline()["tests"]
    assert sorted(before) == ["test_x.py::test_a", "test_x.py::test_b"]
    files = inner.snapshot()
    b_file = str(inner.entry_file("test_x.py::test_b").relative_to(inner.baseline_dir))
    a_file = str(inner.entry_file("test_x.py::test_a").relative_to(inner.baseline_dir))
    assert sorted(files) == [a_file, b_file]

    # test_a now measures a bigger workload; only test_a is re-measured.
    inner.write(
        "def helper():\n    return 0\n\n\n"
        "def work():\n    return sorted(str(i) for i in range(50))\n\n\n"
        "def bigger():\n    helper()\n    return work()\n\n\n"
        "def test_a(kerasperf):\n    kerasperf(bigger)\n\n\n"
        "def test_b(kerasperf):\n    kerasperf(work)\n"
    )
    result = inner.run("--kerasperf-update-baseline", "-k", "test_a")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["  updated   test_x.py::test_a: calls * -> * (+2)*"])
    result.stdout.no_fnmatch_line("*test_x.py::test_b*")

    after = inner.baseline()["tests"]
    assert sorted(after) == ["test_x.py::test_a", "test_x.py::test_b"]  # deselected: not stale
    assert after["test_x.py::test_a"]["calls"] == before["test_x.py::test_a"]["calls"] + 2
    assert after["test_x.py::test_b"] == before["test_x.py::test_b"]
    now = inner.snapshot()
    assert sorted(now) == [a_file, b_file]
    assert now[b_file] == files[b_file]  # the entry's bytes are those written before
    assert now[a_file] != files[a_file]


def test_a_test_that_fails_on_its_own_is_not_recorded(inner: Inner) -> None:
    inner.write(
        workload_source()
        + "\n\ndef test_broken(kerasperf):\n    kerasperf(work)\n    assert False, 'own failure'\n"
    )
    result = inner.run("--kerasperf-update-baseline")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: own failure*"])
    assert list(inner.baseline()["tests"]) == [KEY]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_two_files_sharing_a_baseline_key_are_a_usage_error(inner: Inner, xdist: list[str]) -> None:
    for package in ("one", "two"):
        inner.pytester.mkpydir(package)
        (inner.pytester.path / package / "test_x.py").write_text(workload_source())
    result = inner.run("--kerasperf", *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: one/test_x.py::test_work and two/test_x.py::test_work share the baseline "
            f"key '{KEY}' (keys drop the file's directory): rename one of the test files"
        ]
    )
    assert not inner.baseline_dir.exists()
    assert inner.run().ret == pytest.ExitCode.OK  # only perf runs need unique keys


# ----------------------------------------------------------------- gating


def test_gate_passes_then_fails_on_more_calls_then_notes_fewer(inner: Inner) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    recorded = inner.snapshot()
    base = msgspec.convert(inner.baseline()["tests"][KEY], Record)
    assert base.is_compact

    gate = inner.run("--kerasperf", "--kerasperf-json", "out.json")
    assert gate.ret == pytest.ExitCode.OK
    gate.stdout.fnmatch_lines(
        [
            "test * backend * mode * calls (Δ) * graph breaks (Δ) * latency (Δ %) * verdict",
            f"{KEY} * numpy ({VARIANT}) * eager * {base.calls:,} * - * ms * pass*",
        ]
    )
    [first] = inner.results()
    assert first["verdict"]["status"] == "pass"
    assert first["variant"] == VARIANT
    assert summary_of(first["record"]) == base.profile()

    # Exactness across processes: a second gate run counts the same calls.
    assert inner.run("--kerasperf", "--kerasperf-json", "again.json").ret == pytest.ExitCode.OK
    [second] = inner.results("again.json")
    assert second["record"]["calls_by_function"] == first["record"]["calls_by_function"]
    assert second["record"]["call_edges"] == first["record"]["call_edges"]
    assert second["record"]["calls"] == first["record"]["calls"]

    # More calls: one call of a new helper per workload call.  Against a compact
    # baseline the culprit is the function whose own calls grew, called as often.
    inner.write(workload_source(helper=True))
    grown = inner.run("--kerasperf", "--kerasperf-json", "grown.json")
    assert grown.ret == pytest.ExitCode.TESTS_FAILED
    grown.assert_outcomes(failed=1)
    [measured] = inner.results("grown.json")
    assert measured["record"]["calls"] == base.calls + 1
    assert measured["verdict"]["status"] == "regressed"
    work_calls, made = base.profile().functions["test_x.py:work"]
    assert work_calls == 1
    # A module outside any package keeps its functions one by one, two numbers on a line.
    assert f'"work": [1, {made}],' in inner.entry_file().read_text(encoding="utf-8")
    culprit = f"test_x.py:work +1 (calls it makes {made}→{made + 1})"
    line = (
        f"kerasperf calls: {base.calls + 1:,} per call, baseline {base.calls:,} (+1); "
        f"made by (sums to +1): {culprit}; grew: test_x.py:helper (+1)"
    )
    grown.stdout.fnmatch_lines(
        [
            line,
            "*- kerasperf -*",
            f"FAIL {line.removeprefix('kerasperf ')}",
            "where calls changed (per workload call; the groups sum exactly to the change):",
            "  +1 calls = the sum of these (the calls each Keras function makes itself, *",
            f"    +1  test_x.py:work (calls it makes {made}→{made + 1})",
            "calls by function vs baseline (changed only, biggest change first):",
            "  +1  test_x.py:helper  (0 -> 1)",
            "next: find the new calls ('made by' names each caller whose own calls changed, "
            "the biggest first); if the change is meant, re-record this test's entry (below) "
            "and say why in the pull request",
            "re-record this test's baseline entry: PYTHONHASHSEED=0 KERAS_BACKEND=numpy pytest "
            f"--kerasperf-baseline-dir={inner.baseline_dir} --kerasperf-update-baseline "
            f"{KEY}",
        ]
    )
    grown.stdout.fnmatch_lines([f"{KEY} * {base.calls + 1:,} (+1) * regressed*"])
    grown.stdout.fnmatch_lines([f"FAILED {KEY} - kerasperf calls:*"])
    assert inner.snapshot() == recorded  # a gate run never writes

    # Fewer calls: the generator yields 30 fewer times; passes with a note.  The
    # generator is resumed by ``sorted`` (a builtin, totalled by package), so no
    # function called as often makes fewer calls itself: the diff names it, and the
    # explanation gives the 30 to code outside Keras (the builtin), summing exactly.
    inner.write(workload_source(size=20))
    fewer = inner.run("--kerasperf", "-rP", "--kerasperf-json", "fewer.json")
    assert fewer.ret == pytest.ExitCode.OK
    [smaller] = inner.results("fewer.json")
    delta = smaller["record"]["calls"] - base.calls
    assert delta == -30
    assert smaller["verdict"]["status"] == "improved"
    calls = readresult.change(smaller, "calls")
    assert calls is not None
    assert calls["entry_points"] == []
    genexpr = "test_x.py:work.<locals>.<genexpr>"
    assert [tuple(row) for row in calls["function_diff"]] == [(genexpr, 51, 21)]
    fewer.stdout.fnmatch_lines(
        [
            "note: \u221230 calls (made by (sums to \u221230): (code outside Keras) \u221230): "
            "record the win (`--kerasperf-update-baseline`)",
            "where calls changed (per workload call; the groups sum exactly to the change):",
            "  \u221230 calls = the sum of these (*",
            "    \u221230  (code outside Keras)",
            "calls by function vs baseline (changed only, biggest change first):",
            f"  \u221230  {genexpr}  (51 -> 21)",
            f"{KEY} * {smaller['record']['calls']:,} (\u221230) * improved*",
        ]
    )
    assert inner.snapshot() == recorded


def test_an_improvement_not_recorded_is_said_in_the_default_output(inner: Inner) -> None:
    """A pass with fewer calls than its entry: without ``-rP`` its note is not shown, so the
    kerasperf summary names the test, the win and how to record it."""
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    inner.write(workload_source(size=20))
    fewer = inner.run("--kerasperf")
    assert fewer.ret == pytest.ExitCode.OK
    fewer.stdout.fnmatch_lines(
        [
            "*= kerasperf =*",
            "kerasperf: 1 perf test improved on the baseline, not recorded; record the win: "
            "`--kerasperf-update-baseline`",
            f"  {KEY}: \u221230 calls (made by *)",
        ]
    )
    fewer.stdout.no_fnmatch_line("note: *")  # the pass's own section stays -rP's
    # Recorded, it is no longer a win to record.
    updated = inner.run("--kerasperf-update-baseline")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.no_fnmatch_line("*improved on the baseline, not recorded*")


def test_a_missing_entry_is_a_note_and_fails_under_strict(inner: Inner) -> None:
    inner.write(workload_source())
    lenient = inner.run("--kerasperf", "-rP", "--kerasperf-json", "out.json")
    assert lenient.ret == pytest.ExitCode.OK
    lenient.stdout.fnmatch_lines(
        [
            f"note: no baseline for {VARIANT}: record one with `--kerasperf-update-baseline`",
            f"{KEY} * numpy ({VARIANT}) * eager * new*",
            "kerasperf: 1 perf test: 1 measured, 0 compared, 1 not compared (no baseline "
            f"for {VARIANT}: 1); 0 stale baseline entries [[]{inner.baseline_file}[]]",
        ]
    )
    [result] = inner.results()
    assert result["verdict"]["status"] == "new"
    assert result["verdict"]["compared"] is False
    assert result["verdict"]["not_compared"] == f"no baseline for {VARIANT}"
    assert result["baseline"] is None
    assert not inner.baseline_dir.exists()

    strict = inner.run("--kerasperf", "--kerasperf-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        [
            f"kerasperf no baseline for {VARIANT} (--kerasperf-strict): record one with "
            "`--kerasperf-update-baseline` or `kerasperf accept`",
            "kerasperf --kerasperf-strict: run FAILED: 1 not compared",
        ]
    )


def test_strict_from_the_ini_file(inner: Inner) -> None:
    inner.write(workload_source())
    inner.pytester.makeini("[pytest]\nkerasperf_strict = true\n")
    result = inner.run("--kerasperf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["kerasperf --kerasperf-strict: run FAILED: 1 not compared"])


def test_a_gate_that_measured_nothing_says_so_and_fails_under_strict(inner: Inner) -> None:
    inner.write("def test_plain():\n    pass\n")
    result = inner.run("--kerasperf")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["kerasperf: 0 perf tests: 0 measured, 0 compared; *"])
    strict = inner.run("--kerasperf", "--kerasperf-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        ["kerasperf --kerasperf-strict: run FAILED: no perf test was measured"]
    )


def test_perf_tests_not_run_are_counted_without_the_option(inner: Inner) -> None:
    inner.write(workload_source())
    result = inner.run()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["kerasperf: 1 perf test not run (pass --kerasperf to measure and gate them)"]
    )


def test_a_workload_whose_counts_never_repeat_fails_with_one_line(inner: Inner) -> None:
    inner.write(
        "import itertools\n\nCALLS = itertools.count()\n\n\n"
        "def drifting():\n    for _ in range(next(CALLS)):\n        abs(1)\n\n\n"
        "def test_drift(kerasperf):\n    kerasperf(drifting)\n"
    )
    result = inner.run("--kerasperf-update-baseline")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "kerasperf: call counts did not repeat 3 times in 25 profiled calls; still moving: "
            "abs *->*"
        ]
    )
    assert not inner.baseline_file.exists()


# ---------------------------------------------------------- stale entries


TWO_TESTS = workload_source(test="test_a") + "\n\ndef test_b(kerasperf):\n    kerasperf(work)\n"


def test_an_entry_whose_test_is_gone_is_stale_and_fails_under_strict(inner: Inner) -> None:
    inner.write(TWO_TESTS)
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    inner.write(workload_source(test="test_a"))  # test_b deleted
    result = inner.run("--kerasperf")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "kerasperf: 1 perf test: 1 measured, 1 compared; 1 stale baseline entry "
            "(test_x.py::test_b) *"
        ]
    )
    strict = inner.run("--kerasperf", "--kerasperf-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.assert_outcomes(passed=1)
    strict.stdout.fnmatch_lines(
        ["kerasperf --kerasperf-strict: run FAILED: 1 stale baseline entry"]
    )

    # Updating removes it and says so.
    update = inner.run("--kerasperf-update-baseline", "--kerasperf-rounds", "0")
    assert update.ret == pytest.ExitCode.OK
    update.stdout.fnmatch_lines(
        ["  removed   test_x.py::test_b: stale (its test no longer exists)"]
    )
    assert list(inner.baseline()["tests"]) == ["test_x.py::test_a"]
    assert inner.run("--kerasperf", "--kerasperf-strict").ret == pytest.ExitCode.OK


@pytest.mark.parametrize(
    "selection",
    [
        ["-k", "test_a"],
        ["-m", "not slow"],
        ["--deselect", "test_x.py::test_b"],
        ["test_x.py::test_a"],
    ],
    ids=["k", "m", "deselect", "nodeid"],
)
def test_an_entry_whose_test_was_not_selected_is_not_stale(
    inner: Inner, selection: list[str]
) -> None:
    inner.write(TWO_TESTS.replace("def test_b", "import pytest\n\n\n@pytest.mark.slow\ndef test_b"))
    inner.pytester.makeini("[pytest]\nmarkers = slow\n")
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    result = inner.run("--kerasperf", "--kerasperf-strict", *selection)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["kerasperf: 1 perf test: 1 measured, 1 compared; 0 stale baseline entries *"]
    )
    update = inner.run("--kerasperf-update-baseline", *selection)
    assert update.ret == pytest.ExitCode.OK
    assert sorted(inner.baseline()["tests"]) == ["test_x.py::test_a", "test_x.py::test_b"]


# ------------------------------------------------------------------ budgets


def test_marker_budgets(inner: Inner) -> None:
    inner.write(
        "import pytest\n\n\n"
        "def work():\n    return sorted(str(i) for i in range(50))\n\n\n"
        "@pytest.mark.max_calls(1)\n"
        "def test_total(kerasperf):\n    kerasperf(work)\n\n\n"
        "@pytest.mark.max_calls(10**6, function='sorted')\n"
        "def test_function(kerasperf):\n    kerasperf(work)\n\n\n"
        "@pytest.mark.max_calls(10, function='sortd')\n"
        "def test_misspelt(kerasperf):\n    kerasperf(work)\n\n\n"
        "@pytest.mark.max_calls(5)\n"
        "def test_never_measures():\n    pass\n"
    )
    result = inner.run("--kerasperf", "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=3)
    results = by_nodeid(inner.results())
    total = results["test_x.py::test_total"]
    assert total["verdict"]["status"] == "over-budget"
    assert results["test_x.py::test_function"]["passed"] is True
    result.stdout.fnmatch_lines(
        [
            f"kerasperf max_calls(1): measured {total['record']['calls']:,} "
            f"(+{total['record']['calls'] - 1:,} over budget)",
            "kerasperf max_calls(10, function='sortd'): no function named 'sortd' was called; "
            "did you mean 'sorted'?",
            "kerasperf: this test has budget markers but never called kerasperf()",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED test_x.py::test_total - kerasperf max_calls(1)*"])
    assert "test_x.py::test_never_measures" not in results
    # A budget is in the test's source: the next step names where its markers start, and no
    # re-record command is offered (a re-recorded baseline would fail the same way).
    result.stdout.fnmatch_lines(
        [
            "*- kerasperf -*",
            f"FAIL max_calls(1): measured {total['record']['calls']:,} *",
            "next: bring the count under the budget, or change the budget in the test's marker "
            "(test_x.py:8) and say why; re-recording the baseline does not change a budget",
        ]
    )
    assert "re-record this test's baseline entry" not in result.stdout.str()


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("max_calls('x')", "n must be a non-negative int, got 'x'"),
        ("max_calls(-1)", "n must be a non-negative int, got -1"),
        ("max_calls(5, fn='x')", "*unexpected keyword argument 'fn'"),
        ("max_latency(0)", "ms must be a positive number of milliseconds, got 0"),
    ],
)
@pytest.mark.parametrize("enabled", [False, True], ids=["plain", "kerasperf"])
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_bad_marker_is_a_usage_error(
    inner: Inner, marker: str, message: str, enabled: bool, xdist: list[str]
) -> None:
    """One clean line, also when an xdist worker finds it (no worker crash)."""
    inner.write(
        f"import pytest\n\n\n@pytest.mark.{marker}\ndef test_bad():\n    pass\n\n\n"
        "def test_fine():\n    pass\n"
    )
    result = inner.run(*(["--kerasperf"] if enabled else []), *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: test_x.py::test_bad: bad marker @pytest.mark.{marker}: {message}"]
    )
    result.stdout.no_fnmatch_line("*passed*")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not inner.baseline_dir.exists()


def test_typos_in_markers_get_a_did_you_mean(inner: Inner) -> None:
    """A function named by its method name alone, a misspelt keyword and a misspelt marker
    name: each failure or usage error names what was likely meant."""
    inner.write(
        "import pytest\n\n\n"
        "class MeanAbsLogit:\n"
        "    def update_state(self, values):\n"
        "        return sorted(abs(v) for v in values)\n\n\n"
        "def work():\n    return MeanAbsLogit().update_state(range(-5, 5))\n\n\n"
        "@pytest.mark.max_calls(10, function='update_state')\n"
        "def test_method(kerasperf):\n    kerasperf(work)\n"
    )
    result = inner.run("--kerasperf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "kerasperf max_calls(10, function='update_state'): no function named "
            "'update_state' was called; did you mean 'test_x.py:MeanAbsLogit.update_state'?"
        ]
    )
    for marker, message in [
        (
            "max_calls(5, functon='sorted')",
            "bad marker @pytest.mark.max_calls(5, functon='sorted'): *unexpected keyword "
            "argument 'functon'; did you mean function=?",
        ),
        (
            "max_call(5)",
            "unknown marker @pytest.mark.max_call: did you mean @pytest.mark.max_calls?",
        ),
    ]:
        inner.write(f"import pytest\n\n\n@pytest.mark.{marker}\ndef test_bad():\n    pass\n")
        result = inner.run("--kerasperf")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: test_x.py::test_bad: {message}"])


# ----------------------------------------------------------- bad baselines


def _valid_baseline_text(key: str = KEY) -> str:
    record = Record(
        backend="numpy",
        mode="eager",
        calls=3,
        calls_by_function={"sorted": 1, "test_x.py:work": 2},
        graph_breaks=None,
        latency=None,
        environment={"python": "3.11.7"},
        call_edges={"test_x.py:work": {"sorted": 1}},
    )
    return baseline.dumps("numpy", VARIANT, key, record)


BAD_BASELINES = {
    "corrupt": ("{not json", "not valid JSON (line 1, column 2: *)*"),
    "truncated": (
        _valid_baseline_text()[: len(_valid_baseline_text()) // 2],
        "not valid JSON (line *",
    ),
    "wrong-schema": (
        _valid_baseline_text().replace('"calls": 3', '"calls": "many"'),
        "not a pytest-kerasperf baseline file (schema version 3): at entry/calls*",
    ),
    "wrong-backend": (
        _valid_baseline_text().replace('"backend": "numpy"', '"backend": "torch"'),
        "holds backend 'torch', not 'numpy'",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_BASELINES))
@pytest.mark.parametrize("option", ["--kerasperf", "--kerasperf-update-baseline"])
def test_bad_baseline_is_a_usage_error_and_is_never_overwritten(
    inner: Inner, kind: str, option: str
) -> None:
    content, message = BAD_BASELINES[kind]
    path = inner.entry_file(KEY)
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    before = inner.snapshot()
    inner.write(workload_source())
    result = inner.run(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {path}: {message}"])
    assert inner.snapshot() == before  # the file as it was, and nothing written next to it
    assert sorted(p.name for p in path.parent.iterdir()) == ["test_work.json"]


def test_bad_baseline_is_not_read_without_the_option(inner: Inner) -> None:
    path = inner.entry_file(KEY)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    inner.write(workload_source())
    result = inner.run()
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=1)


# ------------------------------------------------------------------- xdist


THREE_TESTS = (
    workload_source(test="test_a")
    + "\n\ndef test_b(kerasperf):\n    kerasperf(work)\n\n\n"
    + "def test_c(kerasperf):\n    kerasperf(helper)\n"
)
THREE_KEYS = ["test_x.py::test_a", "test_x.py::test_b", "test_x.py::test_c"]


@pytest.mark.parametrize(
    "xdist", [["-n", "2"], ["--tx", "2*popen", "--dist", "loadfile"]], ids=["n", "tx"]
)
def test_update_baseline_under_xdist_writes_every_entry_once(
    inner: Inner, xdist: list[str]
) -> None:
    inner.write(THREE_TESTS)
    result = inner.run("--kerasperf-update-baseline", *xdist)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=3)
    for key in THREE_KEYS:
        result.stdout.fnmatch_lines([f"  added     {key}: * calls"])
    assert result.stdout.str().count("  added   ") == 3
    assert sorted(inner.baseline()["tests"]) == THREE_KEYS
    # Workers measure; latency is not timed under xdist and says why.
    result.stdout.fnmatch_lines(
        [
            "kerasperf latency: 0 measured; not measured (pytest-benchmark does not time under "
            "pytest-xdist: 3)"
        ]
    )
    serial = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-json", "serial.json")
    assert serial.ret == pytest.ExitCode.OK
    for found in inner.results("serial.json"):
        assert readresult.calls_delta(found) == 0


def test_gate_under_xdist_collects_every_result_and_finds_stale_entries(inner: Inner) -> None:
    inner.write(THREE_TESTS + "\n\ndef test_d(kerasperf):\n    kerasperf(work)\n")
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    recorded = inner.baseline()["tests"]
    before = inner.snapshot()
    inner.write(THREE_TESTS)  # test_d deleted

    result = inner.run("--kerasperf", "-n", "2", "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=3)
    results = by_nodeid(inner.results())
    assert sorted(results) == THREE_KEYS
    for nodeid, found in results.items():
        assert found["verdict"]["status"] == "pass", found["verdict"]
        assert summary_of(found["record"]) == msgspec.convert(recorded[nodeid], Record).profile()
    result.stdout.fnmatch_lines(
        [
            "*calls (Δ)*",
            "test_x.py::test_* pass*",
            "kerasperf: 3 perf tests: 3 measured, 3 compared; 1 stale baseline entry "
            "(test_x.py::test_d) *",
        ]
    )
    assert inner.snapshot() == before
    deselected = inner.run("--kerasperf", "-n", "2", "-k", "not test_c", "--kerasperf-strict")
    deselected.stdout.fnmatch_lines(["*; 1 stale baseline entry (test_x.py::test_d) *"])


# ---------------------------------------------------------- pytest-benchmark


def test_benchmark_only_runs_perf_tests(inner: Inner) -> None:
    inner.write(workload_source() + "\n\ndef test_plain():\n    pass\n")
    result = inner.run("--kerasperf", "--benchmark-only", "-rs", "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] test_x.py: Skipping non-benchmark (--benchmark-only active)."]
    )
    [found] = inner.results()
    latency = readresult.latency(found)
    assert latency is not None
    assert latency["rounds"] == 3


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ("--benchmark-skip", "--benchmark-skip"),
        ("--benchmark-disable", "--benchmark-disable"),
        ("--kerasperf-rounds=0", "--kerasperf-rounds=0"),
    ],
)
def test_no_timing_still_measures_and_gates_counts(inner: Inner, option: str, reason: str) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    inner.write(workload_source(helper=True))
    result = inner.run("--kerasperf", option, "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "kerasperf calls: * (+1); *",
            f"kerasperf latency: 0 measured; not measured ({reason}: 1)",
        ]
    )
    [found] = inner.results()
    assert readresult.latency(found) is None
    assert found["latency_not_measured"] == reason


# -------------------------------------------------------------- JSON report


def test_json_report(inner: Inner) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    result = inner.run("--kerasperf", "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.OK
    document = json.loads((inner.pytester.path / "out.json").read_text(encoding="utf-8"))
    [found] = document["results"]
    entry = inner.baseline()["tests"][KEY]
    assert found["nodeid"] == KEY
    assert found["key"] == KEY
    assert found["record"]["backend"] == "numpy"
    assert found["record"]["mode"] == "eager"
    assert found["variant"] == VARIANT
    assert found["record"]["calls"] == entry["calls"]
    compact = record_data(msgspec.convert(found["record"], Record).compact())
    for field in ("calls", "functions", "calls_by_package", "profile_sha256", "environment"):
        assert compact[field] == entry[field], field
    assert compact["profile_sha256"] == profile_digest(
        found["record"]["calls_by_function"], found["record"]["call_edges"]
    )
    assert found["baseline"]["calls"] == entry["calls"]
    assert found["verdict"]["status"] == "pass"
    assert found["passed"] is True
    assert found["verdict"]["compared"] is True
    assert readresult.failures(found) == []
    assert found["rerecord"] is None
    summary = document["summary"]
    assert (summary["measured"], summary["compared"], summary["stale"]) == (1, 1, [])
    leftovers = [p.name for p in inner.pytester.path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_json_report_matches_the_results_schema(inner: Inner) -> None:
    import jsonschema

    inner.write(
        workload_source() + "\n\nimport pytest\n\n\n@pytest.mark.max_calls(1)\n"
        "def test_over(kerasperf):\n    kerasperf(work)\n"
    )
    assert inner.run("--kerasperf-update-baseline", "-k", "test_work").ret == pytest.ExitCode.OK
    inner.write(
        workload_source(helper=True) + "\n\ndef test_new(kerasperf):\n    kerasperf(work)\n"
    )
    result = inner.run("--kerasperf", "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    document = json.loads((inner.pytester.path / "out.json").read_text(encoding="utf-8"))
    assert {r["verdict"]["status"] for r in document["results"]} == {"regressed", "new"}
    schema = json.loads(RESULTS_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)
    regressed = next(r for r in document["results"] if r["verdict"]["status"] == "regressed")
    grown = readresult.change(regressed, "calls")
    assert grown is not None
    [point] = grown["entry_points"]
    assert (point["caller"], point["callee"], point["calls"], point["calls_delta"]) == (
        "test_x.py:work",
        "*",
        1,
        1,
    )
    assert point["after"] == point["before"] + 1
    assert regressed["rerecord"].endswith(f"--kerasperf-update-baseline {KEY}")


# --------------------------------------------------- a baseline write fails


def test_a_failed_baseline_write_is_a_usage_error_with_the_message(inner: Inner) -> None:
    """The file is broken while the run measures: nothing is written, exit code 4."""
    path = inner.entry_file(KEY)
    inner.write(
        workload_source() + "\n\ndef test_breaks_the_file():\n"
        f"    open({str(path)!r}, 'w').write('{{broken')\n"
    )
    path.parent.mkdir(parents=True)
    path.write_text(_valid_baseline_text(), encoding="utf-8")
    result = inner.run("--kerasperf-update-baseline", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [f"kerasperf: baseline NOT updated: {path}: not valid JSON (line 1, *"]
    )
    assert path.read_text(encoding="utf-8") == "{broken"
    assert list(inner.snapshot()) == [str(path.relative_to(inner.baseline_dir))]


# ------------------------------------------------------------------- help


def test_markers_are_documented(inner: Inner) -> None:
    result = inner.pytester.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.max_calls(n, *, function=None, backend=None, mode=None): *",
            "@pytest.mark.max_graph_breaks(n, *, backend=None, mode=None): *",
            "@pytest.mark.max_latency(ms, *, backend=None, mode=None): *",
        ],
        consecutive=False,
    )


def test_options_are_documented(inner: Inner) -> None:
    result = inner.pytester.runpytest_subprocess("--help", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["Keras performance gate (pytest-kerasperf):", "  --kerasperf *"])
    text = result.stdout.str()
    for option in (
        "--kerasperf-update-baseline",
        "--kerasperf-strict",
        "--kerasperf-baseline-dir",
        "--kerasperf-json",
        "--kerasperf-latency-tolerance",
        "--kerasperf-gate-latency-on-cpu",
        "--kerasperf-warmup",
        "--kerasperf-rounds",
    ):
        assert f"  {option}" in text, option
    for ini in (
        "kerasperf_strict",
        "kerasperf_baseline_dir",
        "kerasperf_latency_tolerance",
        "kerasperf_gate_latency_on_cpu",
        "kerasperf_warmup",
        "kerasperf_rounds",
    ):
        assert f"  {ini} " in text, ini
