"""``kerasperf accept``: baseline entries from --kerasperf-json results, e.g. of a CI run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pytest_kerasperf.cli import ini_options
from pytest_kerasperf.record import Record, record_data
from tests.inner import KEY, VARIANT, Inner, workload_source


def accept(*args: str | Path, cwd: Path, script: bool = False) -> subprocess.CompletedProcess[str]:
    command = (
        [str(Path(sys.executable).with_name("kerasperf"))]
        if script
        else [sys.executable, "-m", "pytest_kerasperf"]
    )
    return subprocess.run(
        [*command, "accept", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def from_another_machine(path: Path) -> None:
    """What a CI runner's results differ in: device, CPU, commit; counts identical."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for result in data["results"]:
        env = result["record"]["environment"]
        env.update(
            device="cpu: a GitHub-hosted runner", keras_commit="0123abc", platform=env["platform"]
        )
        if result["record"]["latency_ms"]:
            result["record"]["latency_ms"]["device"] = env["device"]
    path.write_text(json.dumps(data), encoding="utf-8")


def test_accept_turns_ci_results_into_entries_that_then_pass(inner: Inner) -> None:
    inner.write(workload_source() + "\n\ndef test_b(kerasperf):\n    kerasperf(work)\n")
    ci = inner.run("--kerasperf", "--kerasperf-json", "ci.json")
    assert ci.ret == pytest.ExitCode.OK
    from_another_machine(inner.pytester.path / "ci.json")

    done = accept("ci.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr
    calls = {r["key"]: r["record"]["calls"] for r in inner.results("ci.json")}
    assert done.stdout.splitlines() == [
        f"baseline {inner.baseline_file}:",
        f"  added     test_x.py::test_b: {calls['test_x.py::test_b']:,} calls",
        f"  added     {KEY}: {calls[KEY]:,} calls",
    ]
    entries = inner.baseline()["tests"]
    assert entries[KEY]["environment"]["device"] == "cpu: a GitHub-hosted runner"
    measured = next(r["record"] for r in inner.results("ci.json") if r["key"] == KEY)
    assert entries[KEY] == record_data(msgspec.convert(measured, Record).compact())

    gate = inner.run("--kerasperf", "--kerasperf-strict")
    assert gate.ret == pytest.ExitCode.OK
    gate.stdout.fnmatch_lines(["kerasperf: 2 perf tests: 2 measured, 2 compared; 0 stale *"])


def test_accepting_unchanged_results_keeps_every_byte(inner: Inner) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    before = inner.snapshot()
    assert list(before) == [f"numpy/{VARIANT}/test_x.py/test_work.json"]
    assert inner.run("--kerasperf", "--kerasperf-json", "again.json").ret == 0
    # Latency of a tiny workload on a busy CPU moves; a tolerance that covers it keeps the bytes.
    done = accept(
        "again.json",
        "--baseline-dir",
        inner.baseline_dir,
        "--latency-tolerance",
        "9",
        cwd=inner.pytester.path,
        script=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"baseline {inner.baseline_file}:", f"  unchanged {KEY}"]
    assert inner.snapshot() == before


def test_accept_reads_the_baseline_dir_from_the_ini_and_lists_what_moved(inner: Inner) -> None:
    inner.pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nkerasperf_baseline_dir = "perf-baselines"\n'
    )
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    inner.write(workload_source(helper=True))
    assert inner.run("--kerasperf", "--kerasperf-json", "grown.json").ret == 1
    done = accept("grown.json", cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr
    [head, line] = done.stdout.splitlines()
    assert head == f"baseline {inner.baseline_file}:"
    assert line.startswith(f"  updated   {KEY}: calls ")
    assert "(+1)" in line
    assert inner.run("--kerasperf", "--kerasperf-strict").ret == pytest.ExitCode.OK


def test_accept_records_a_win_the_ratchet_failed(inner: Inner) -> None:
    """A results file that holds only an improvement (a win not recorded under the ratchet)
    is accepted like any other, and the ratchet passes after it."""
    inner.write(workload_source(helper=True))
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    inner.write(workload_source())  # one call fewer: a win
    ratchet = inner.run("--kerasperf", "--kerasperf-ratchet", "--kerasperf-json", "win.json")
    assert ratchet.ret == pytest.ExitCode.TESTS_FAILED
    [result] = inner.results("win.json")
    assert result["verdict"]["status"] == "win-not-recorded"
    done = accept("win.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr
    [_, line] = done.stdout.splitlines()
    calls = result["record"]["calls"]
    assert line.startswith(f"  updated   {KEY}: calls {calls + 1} -> {calls} (\u22121)"), line
    assert inner.run("--kerasperf", "--kerasperf-ratchet").ret == pytest.ExitCode.OK


def test_a_test_that_failed_on_its_own_is_left_out(inner: Inner) -> None:
    inner.write(
        workload_source()
        + "\n\ndef test_broken(kerasperf):\n    kerasperf(work)\n    assert False\n"
    )
    inner.run("--kerasperf", "--kerasperf-json", "ci.json")
    done = accept("ci.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "ci.json: test_x.py::test_broken: the test failed on its own; not accepted"
    )
    assert list(inner.baseline()["tests"]) == [KEY]


def results_file(inner: Inner, name: str = "ci.json") -> dict[str, Any]:
    inner.write(workload_source())
    assert inner.run("--kerasperf", "--kerasperf-json", name).ret == 0
    data: dict[str, Any] = json.loads((inner.pytester.path / name).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: "{not json", "ci.json: not valid JSON (line 1, column 2: *"),
        (
            lambda text: text.replace('"schema_version": 4', '"schema_version": 3'),
            "ci.json: not a pytest-kerasperf results file of schema version 4: it is of version 3*",
        ),
        (
            lambda text: text.replace('"mode": "eager"', '"mode": ""', 1),
            "ci.json: not a pytest-kerasperf * at *",
        ),
    ],
    ids=["not-json", "old-schema", "bad-record"],
)
def test_bad_results_are_one_line_and_touch_nothing(
    inner: Inner, damage: Any, message: str
) -> None:
    results_file(inner)
    path = inner.pytester.path / "ci.json"
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    done = accept("ci.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("kerasperf accept: error: ")
    from fnmatch import fnmatch

    assert fnmatch(line.removeprefix("kerasperf accept: error: "), message), line
    assert not inner.baseline_dir.exists()


def test_the_same_test_in_two_results_files_is_refused(inner: Inner) -> None:
    results_file(inner, "one.json")
    assert inner.run("--kerasperf", "--kerasperf-json", "two.json").ret == 0
    done = accept(
        "one.json", "two.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"kerasperf accept: error: two.json: {KEY} (numpy, {VARIANT}) is also in one.json: "
        "accept one results file per backend and run"
    )
    assert not inner.baseline_dir.exists()


def test_a_broken_baseline_file_is_never_overwritten(inner: Inner) -> None:
    results_file(inner)
    entry = inner.entry_file()
    entry.parent.mkdir(parents=True)
    entry.write_text("{broken", encoding="utf-8")
    done = accept("ci.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"kerasperf accept: error: {entry}: not valid JSON (line 1, column 2")
    assert done.stdout == ""
    assert inner.snapshot() == {f"numpy/{VARIANT}/test_x.py/test_work.json": b"{broken"}


def test_results_of_several_backends_go_to_their_own_files(inner: Inner) -> None:
    data = results_file(inner)
    # The same measurement as if a jax job had produced it (another backend's file).
    other = json.loads(json.dumps(data))
    for result in other["results"]:
        result["record"]["backend"] = result["record"]["environment"]["backend"] = "jax"
        rerecord = result["rerecord"]
        result["rerecord"] = rerecord and rerecord.replace("=numpy ", "=jax ")
    (inner.pytester.path / "jax.json").write_text(json.dumps(other), encoding="utf-8")
    done = accept(
        "ci.json", "jax.json", "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path
    )
    assert done.returncode == 0, done.stderr
    assert sorted(inner.snapshot()) == [
        f"jax/{VARIANT}/test_x.py/test_work.json",
        f"numpy/{VARIANT}/test_x.py/test_work.json",
    ]
    jax = json.loads(
        (inner.baseline_dir / "jax" / VARIANT / "test_x.py" / "test_work.json").read_text()
    )
    assert (jax["backend"], jax["variant"], jax["entry"]["backend"]) == ("jax", VARIANT, "jax")
    assert done.stdout.splitlines() == [
        f"baseline {inner.baseline_dir / 'jax' / VARIANT}:",
        f"  added     {KEY}: {data['results'][0]['record']['calls']:,} calls",
        f"baseline {inner.baseline_file}:",
        f"  added     {KEY}: {data['results'][0]['record']['calls']:,} calls",
    ]


def test_help_names_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_kerasperf", "accept", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("usage: kerasperf accept [-h] [--baseline-dir DIR]")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\nkerasperf_baseline_dir = perf/baselines\n"),
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\nkerasperf_baseline_dir = "perf/baselines"\n',
        ),
        ("tox.ini", "[pytest]\nkerasperf_baseline_dir = perf/baselines\n"),
        ("setup.cfg", "[tool:pytest]\nkerasperf_baseline_dir = perf/baselines\n"),
    ],
)
def test_accept_finds_the_baseline_dir_where_pytest_finds_its_ini(
    tmp_path: Path, name: str, text: str
) -> None:
    """``kerasperf accept`` without --baseline-dir uses pytest's own ini lookup: any of pytest's
    ini files, in the directory it runs in or above it, the path relative to the rootdir."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    below = tmp_path / "tests" / "deeper"
    below.mkdir(parents=True)
    assert ini_options(below).baseline_dir == tmp_path / "perf" / "baselines"
    assert ini_options(tmp_path).baseline_dir == tmp_path / "perf" / "baselines"


def test_accept_keeps_a_latency_under_the_ini_tolerance_and_the_flag_overrides_it(
    inner: Inner,
) -> None:
    """``kerasperf accept`` judges a moved latency as ``--kerasperf-update-baseline`` would:
    under the ini's ``kerasperf_latency_tolerance``; ``--latency-tolerance`` overrides it."""
    inner.pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nkerasperf_latency_tolerance = "9"\n'
        'kerasperf_baseline_dir = "perf-baselines"\n'
    )
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    before = inner.snapshot()
    assert inner.run("--kerasperf", "--kerasperf-json", "slow.json").ret == pytest.ExitCode.OK
    path = inner.pytester.path / "slow.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    stored = inner.baseline()["tests"][KEY]["latency_ms"]["median"]
    for result in data["results"]:  # five times the stored median: within 9, not within 0.1
        result["record"]["latency_ms"]["median"] = round(stored * 5, 3)
    path.write_text(json.dumps(data), encoding="utf-8")

    kept = accept("slow.json", cwd=inner.pytester.path)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.splitlines() == [f"baseline {inner.baseline_file}:", f"  unchanged {KEY}"]
    assert inner.snapshot() == before

    moved = accept("slow.json", "--latency-tolerance", "0.1", cwd=inner.pytester.path)
    assert moved.returncode == 0, moved.stderr
    [_, line] = moved.stdout.splitlines()
    assert line.startswith(f"  updated   {KEY}: "), line
    assert "latency" in line, line
