"""``--kerasperf-shard K/N``: one CI job runs every Nth collected test, from the Kth.

Real inner runs of a census-style module (its entries in one table file): the shards
together measure each test once, none of them makes another shard's entries stale or
rewrites them, a growth is caught by the shard that holds the test, ``-k`` is applied
first, xdist workers agree on the shard, and a bad K/N is one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.inner import Inner

SIZES = (10, 20, 30, 40, 50)
NAMES = [f"test_census_demo.py::test_w{i}" for i in range(1, len(SIZES) + 1)]


def module(sizes: tuple[int, ...] = SIZES) -> str:
    """Five perf tests, ``test_w1`` ... ``test_w5``, each sorting its own number of strings."""
    tests = "".join(
        f"\n\ndef test_w{i}(kerasperf):\n    kerasperf(lambda: work({size}))\n"
        for i, size in enumerate(sizes, start=1)
    )
    return "def work(n):\n    return sorted(str(i) for i in range(n))\n" + tests


def measured(inner: Inner, name: str) -> list[str]:
    return sorted(result["key"] for result in inner.results(name))


def report(inner: Inner, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_kerasperf", "report", *args],
        cwd=inner.pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_shards_measure_each_test_once_and_leave_the_others_entries_alone(
    inner: Inner,
) -> None:
    inner.write(module(), "test_census_demo")
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    table = inner.baseline_file / "test_census_demo.py.table.json"
    assert sorted(json.loads(table.read_text(encoding="utf-8"))["entries"]) == NAMES
    recorded = inner.snapshot()

    first = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-shard", "1/2",
                      "--kerasperf-json", "s1.json")  # fmt: skip
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    first.stdout.fnmatch_lines(
        [
            "kerasperf: shard 1/2: 3 of the 5 selected tests ran here (positions 1, 3, 5, ...)*",
            "kerasperf: 3 perf tests: 3 measured, 3 compared; 0 stale baseline entries *",
        ]
    )
    second = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-shard", "2/2",
                       "--kerasperf-json", "s2.json")  # fmt: skip
    assert second.ret == pytest.ExitCode.OK, second.stdout.str()
    second.stdout.fnmatch_lines(["kerasperf: 2 perf tests: 2 measured, 2 compared; 0 stale *"])
    one, two = measured(inner, "s1.json"), measured(inner, "s2.json")
    assert not set(one) & set(two)
    assert sorted(one + two) == NAMES
    assert json.loads((inner.pytester.path / "s2.json").read_text())["summary"]["shard"] == [2, 2]

    # The report wants every shard of an expected run: one shard alone is not green.
    run = inner.results("s1.json")[0]["record"]["backend"]
    alone = report(inner, "s1.json", "--expect", run)
    assert alone.returncode == 1, alone.stderr
    assert (
        alone.stdout.splitlines()[-1]
        == f"kerasperf report: no results for {run} shard 2/2 (expected)"
    )
    assert report(inner, "s1.json", "s2.json", "--expect", run).returncode == 0

    # Re-recording one shard rewrites nothing, and drops no entry of the other shard.
    assert inner.run("--kerasperf-update-baseline", "--kerasperf-shard", "2/2").ret == 0
    assert inner.snapshot() == recorded

    # test_w2 (shard 2/2) grows: shard 1/2 does not run it, shard 2/2 fails on it alone.
    inner.write(module((10, 25, 30, 40, 50)), "test_census_demo")
    assert inner.run("--kerasperf", "--kerasperf-shard", "1/2").ret == pytest.ExitCode.OK
    grown = inner.run("--kerasperf", "--kerasperf-shard", "2/2")
    assert grown.ret == pytest.ExitCode.TESTS_FAILED
    grown.assert_outcomes(passed=1, failed=1, deselected=3)
    grown.stdout.fnmatch_lines(["FAILED test_census_demo.py::test_w2*"])


def test_the_shard_is_of_the_selection_and_xdist_workers_agree(inner: Inner) -> None:
    inner.write(module(), "test_census_demo")
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK

    selected = inner.run("--kerasperf", "-k", "w2 or w3 or w4", "--kerasperf-shard", "2/2",
                         "--kerasperf-json", "k.json")  # fmt: skip
    assert selected.ret == pytest.ExitCode.OK, selected.stdout.str()
    selected.stdout.fnmatch_lines(["kerasperf: shard 2/2: 1 of the 3 selected tests ran here *"])
    assert measured(inner, "k.json") == ["test_census_demo.py::test_w3"]

    workers = inner.run("--kerasperf", "--kerasperf-strict", "-n", "2", "--kerasperf-shard",
                        "1/2", "--kerasperf-json", "x.json", fresh=True)  # fmt: skip
    assert workers.ret == pytest.ExitCode.OK, workers.stdout.str()
    workers.stdout.fnmatch_lines(
        [
            "kerasperf: shard 1/2: 3 of the 5 selected tests ran here *",
            "kerasperf: 3 perf tests: 3 measured, 3 compared; 0 stale *",
        ]
    )
    assert measured(inner, "x.json") == [NAMES[0], NAMES[2], NAMES[4]]


@pytest.mark.parametrize("value", ["3/2", "0/2", "1/0", "2", "a/b", "1/1001"])
def test_a_bad_shard_is_one_line(inner: Inner, value: str) -> None:
    inner.write(module(), "test_census_demo")
    result = inner.run("--kerasperf", f"--kerasperf-shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--kerasperf-shard: expected K/N with 1 <= K <= N <= 1000 such as 2/4, got '{value}'"]
    )


COLLECT = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"]
COLLECT += ["--kerasperf", "--pyargs", "pytest_kerasperf.suite", "pytest_kerasperf.census"]


def test_four_shards_split_the_suite_and_census_by_position() -> None:
    """No test shares a model or a compile with another (each counts as alone), so 4 shards
    take every 4th test of the collection each: every test in exactly one shard, the suite's
    10 spread over them as the census is."""
    found = {}
    for k in range(1, 5):
        run = subprocess.run(
            [*COLLECT, f"--kerasperf-shard={k}/4"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0", "KERAS_BACKEND": "torch"},
            timeout=300,
            check=False,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        found[k] = [line for line in run.stdout.splitlines() if "::" in line]
    suite = [[t for t in tests if "/suite/" in t] for tests in found.values()]
    assert sorted(len(tests) for tests in suite) == [2, 2, 3, 3]
    census = [t for tests in found.values() for t in tests if "/census/" in t]
    assert len(census) == len(set(census)) > 900
