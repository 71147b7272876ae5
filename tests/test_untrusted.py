"""Results files are untrusted input: ``kerasperf accept`` and ``kerasperf report`` on tampered
copies of a real run's ``--kerasperf-json``.

A results file comes from a CI artifact, possibly of a fork's run, so every byte of it may be
chosen by someone else.  Each bad input below must end in one line on stderr naming the file,
exit status 2, nothing on stdout and nothing written: no baseline file created or changed (the
baseline directory is compared file by file before and after), no Markdown file.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import msgspec
import pytest

from pytest_kerasperf import baseline, results_file, untrusted
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import Record, record_data
from pytest_kerasperf.report import github, markdown
from tests.inner import KEY, VARIANT, Inner, workload_source

GENEXPR = "test_x.py:work.<locals>.<genexpr>"  # the workload's generator, called by sorted

# ------------------------------------------------------------------ real results files

#: The bytes of the real results files made in this process (an inner run takes seconds; every
#: test gets its own copy, written into its own project).
_MADE: dict[str, bytes] = {}


def clean_results(inner: Inner) -> dict[str, Any]:
    """The results of a real run of ``workload_source()`` (one test, ``KEY``), as parsed JSON.

    The test file is written into ``inner``'s project, so a later gate run there measures the
    same test.
    """
    inner.write(workload_source())
    if "clean" not in _MADE:
        done = inner.run("--kerasperf", "--kerasperf-json", "made.json")
        assert done.ret == pytest.ExitCode.OK
        _MADE["clean"] = (inner.pytester.path / "made.json").read_bytes()
    data: dict[str, Any] = json.loads(_MADE["clean"])
    [result] = data["results"]
    assert result["key"] == KEY
    assert result["variant"] == VARIANT
    assert result["record"]["latency_ms"] is not None  # the latency cases damage it
    assert GENEXPR in result["record"]["calls_by_function"]
    return data


#: A test whose workload is a local function, with a parameter id a reviewer would misread in
#: Markdown: its failure line names ``test_local.<locals>.work``.
LOCAL_ID = "@someone `x` | y"


def local_source(*, planted: bool) -> str:
    extra = "        helper()\n" if planted else ""
    return (
        "import pytest\n\n\n"
        "def helper():\n"
        "    return 0\n\n\n"
        f'@pytest.mark.parametrize("who", [1], ids=[{LOCAL_ID!r}])\n'
        "def test_local(kerasperf, who):\n"
        "    def work():\n"
        f"{extra}"
        "        return sorted(str(i) for i in range(50))\n\n"
        "    kerasperf(work)\n"
    )


LOCAL_KEY = f"test_x.py::test_local[{LOCAL_ID}]"


def failing_results(inner: Inner) -> dict[str, Any]:
    """A real run where ``test_local`` regressed by one planted call against its baseline."""
    if "failing" not in _MADE:
        inner.write(local_source(planted=False))
        assert inner.run("--kerasperf-update-baseline", "--kerasperf-rounds", "0").ret == 0
        inner.write(local_source(planted=True))
        done = inner.run("--kerasperf", "--kerasperf-json", "failing.json")
        assert done.ret == pytest.ExitCode.TESTS_FAILED
        _MADE["failing"] = (inner.pytester.path / "failing.json").read_bytes()
    data: dict[str, Any] = json.loads(_MADE["failing"])
    [result] = data["results"]
    assert result["key"] == LOCAL_KEY
    assert result["verdict"]["status"] == "regressed"
    return data


# ------------------------------------------------------------------ the bad inputs


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True)


def first(data: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = data["results"][0]
    return result


def record(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = first(data)["record"]
    return found


def with_placeholder(data: dict[str, Any], text: str) -> str:
    """The document with the placeholder string ``"@@"`` replaced by raw JSON ``text``."""
    written = dumps(data)
    assert written.count('"@@"') == 1
    return written.replace('"@@"', text)


def nan_latency(data: dict[str, Any]) -> str:
    record(data)["latency_ms"]["median"] = float("nan")
    return json.dumps(data)  # Python writes NaN, which JSON does not have


def infinite_latency(data: dict[str, Any]) -> str:
    record(data)["latency_ms"]["iqr"] = float("inf")
    return json.dumps(data)


def overflowing_latency(data: dict[str, Any]) -> str:
    record(data)["latency_ms"]["median"] = "@@"
    return with_placeholder(data, "1e999")  # a JSON number that parses to inf


def duplicate_key(data: dict[str, Any]) -> str:
    # Parsers disagree on which of two keys wins: the schema may see another value than a reader.
    record(data)["mode"] = "@@"
    return with_placeholder(data, '"compiled", "mode": "eager"')


def forty_digits(data: dict[str, Any]) -> str:
    record(data)["calls"] = 10**39
    return dumps(data)


def deep_nesting(data: dict[str, Any]) -> str:
    first(data)["profile"] = "@@"
    return with_placeholder(data, "[" * 100_000 + "]" * 100_000)


def newline_in_key(data: dict[str, Any]) -> str:
    first(data)["key"] = KEY + "\n::error::injected"
    return dumps(data)


def injection_in_nodeid(data: dict[str, Any]) -> str:
    first(data)["nodeid"] = "test_x.py::test_work\n::error file=README.md,line=1::owned"
    return dumps(data)


def newline_in_failure(data: dict[str, Any]) -> str:
    first(data)["verdict"]["failures"] = [
        {"kind": "calls", "text": "calls: fine\n::error::injected"}
    ]
    return dumps(data)


def escape_in_stale_key(data: dict[str, Any]) -> str:
    assert data["summary"] is not None
    data["summary"]["stale"] = ["test_x.py::gone\x1b]8;;https://example.com\x07"]
    return dumps(data)


def lone_surrogate(data: dict[str, Any]) -> str:
    first(data)["nodeid"] = first(data)["key"] = KEY + "\ud800"
    return dumps(data)  # written as the escape \ud800, which parses to half a character


def csi_in_key(data: dict[str, Any]) -> str:
    first(data)["nodeid"] = first(data)["key"] = KEY + "\x9b2J"  # C1 CSI: clear the screen
    return dumps(data)


def bidi_override_in_function(data: dict[str, Any]) -> str:
    # Shown as "...genexpr>" then reversed text: a reviewer reads another function's name.
    counts = record(data)["calls_by_function"]
    counts["test_x.py:\u202ekrow"] = counts.pop(GENEXPR)
    for callees in record(data)["call_edges"].values():
        if GENEXPR in callees:
            callees["test_x.py:\u202ekrow"] = callees.pop(GENEXPR)
    return dumps(data)


def isolate_in_failure(data: dict[str, Any]) -> str:
    first(data)["verdict"]["failures"] = [{"kind": "calls", "text": "calls: \u2067fine\u2069"}]
    return dumps(data)


def next_line_in_stale_key(data: dict[str, Any]) -> str:
    assert data["summary"] is not None
    data["summary"]["stale"] = ["test_x.py::gone\x85::error::x"]  # U+0085 NEL: a line break
    return dumps(data)


def workflow_command_key(data: dict[str, Any]) -> str:
    # Printed first on a line of the report: a workflow command in a GitHub Actions log.
    first(data)["nodeid"] = first(data)["key"] = "::add-mask::x"
    return dumps(data)


def stop_commands_stale_key(data: dict[str, Any]) -> str:
    assert data["summary"] is not None
    data["summary"]["stale"] = ["::stop-commands::token"]
    return dumps(data)


def inflated_function(data: dict[str, Any]) -> str:
    record(data)["calls_by_function"][GENEXPR] += 1_000
    return dumps(data)


def result_level_calls(data: dict[str, Any]) -> str:
    first(data)["calls"] = record(data)["calls"] + 1_000  # a second copy, as version 3 wrote
    return dumps(data)


def edge_over_count(data: dict[str, Any]) -> str:
    counts = record(data)["calls_by_function"]
    for callees in record(data)["call_edges"].values():
        if GENEXPR in callees:
            callees[GENEXPR] = counts[GENEXPR] + 1
    return dumps(data)


def edge_from_nowhere(data: dict[str, Any]) -> str:
    record(data)["call_edges"]["elsewhere.py:ghost"] = {GENEXPR: 1}
    return dumps(data)


def key_of_another_test(data: dict[str, Any]) -> str:
    first(data)["key"] = "test_x.py::test_other"
    return dumps(data)


def variant_mismatch(data: dict[str, Any]) -> str:
    first(data)["variant"] = "py3.11-gpu"
    return dumps(data)


def ab_not_a_verdict(data: dict[str, Any]) -> str:
    """An A/B verdict (``--kerasperf-compare-ref``) with a decision the engine never makes."""
    first(data)["ab"] = {"decision": "slower; rm -rf /", "sure": True}
    return dumps(data)


def schema_version_2(data: dict[str, Any]) -> str:
    data["schema_version"] = 2
    return dumps(data)


Damage = Callable[[dict[str, Any]], str]

#: (damage, what the error says after "FILE: "), for accept and report alike.
BAD_INPUTS: dict[str, tuple[Damage, str]] = {
    "nan": (nan_latency, "NaN is not a JSON number"),
    "infinity": (infinite_latency, "Infinity is not a JSON number"),
    "overflow": (overflowing_latency, "1e999 overflows a float"),
    "duplicate-key": (duplicate_key, "duplicate key 'mode'"),
    "forty-digits": (forty_digits, "an integer of 40 digits"),
    "deep-nesting": (deep_nesting, f"nested deeper than {untrusted.MAX_DEPTH} levels"),
    "newline-in-key": (
        newline_in_key,
        "not a pytest-kerasperf results file (--kerasperf-json, schema version 4): "
        "at results/0/key: *matching regex*",
    ),
    "error-injection-in-nodeid": (
        injection_in_nodeid,
        "not a pytest-kerasperf results file (*): at results/0/nodeid: *matching regex*",
    ),
    "newline-in-failure": (
        newline_in_failure,
        "results/0/verdict: a control character in 'calls: fine\\\\n::error::injected'",
    ),
    "escape-in-stale-key": (
        escape_in_stale_key,
        "summary: a control character in 'test_x.py::gone\\\\x1b]8;;https://example.com\\\\x07'",
    ),
    "lone-surrogate": (
        lone_surrogate,
        "a lone surrogate (not Unicode text) in 'test_x.py::test_work\\ud800'",
    ),
    "c1-csi-in-key": (
        csi_in_key,
        "not a pytest-kerasperf results file (*): at results/0/key: *matching regex*",
    ),
    "bidi-override-in-function": (
        bidi_override_in_function,
        "results/0/record: a control character in 'test_x.py:\\\\u202ekrow'",
    ),
    "isolate-in-failure": (
        isolate_in_failure,
        "results/0/verdict: a control character in 'calls: \\\\u2067fine\\\\u2069'",
    ),
    "next-line-in-stale-key": (
        next_line_in_stale_key,
        "summary: a control character in 'test_x.py::gone\\\\x85::error::x'",
    ),
    "workflow-command-key": (
        workflow_command_key,
        "results/0 (::add-mask::x): '::add-mask::x': not a test key (file.py::test)",
    ),
    "stop-commands-stale-key": (
        stop_commands_stale_key,
        "summary/stale/0: '::stop-commands::token': not a test key (file.py::test)",
    ),
    "inflated-function": (
        inflated_function,
        f"results/0 ({KEY}): calls * but calls_by_function adds up to *",
    ),
    "result-level-calls": (
        result_level_calls,
        "not a pytest-kerasperf results file (*): at results/0: Object contains unknown field "
        "`calls`",
    ),
    "edge-over-count": (
        edge_over_count,
        f"results/0 ({KEY}): '{GENEXPR}' is called * times by its callers but * times in all",
    ),
    "ab-not-a-verdict": (
        ab_not_a_verdict,
        "not a pytest-kerasperf results file (*): at results/0/ab/decision: Invalid enum value *",
    ),
    "edge-from-nowhere": (
        edge_from_nowhere,
        f"results/0 ({KEY}): call_edges names 'elsewhere.py:ghost', which was never called",
    ),
    "key-of-another-test": (
        key_of_another_test,
        "not a pytest-kerasperf results file (*): at results/0: key 'test_x.py::test_other' is "
        f"not the test key of nodeid '{KEY}'",
    ),
    "variant-mismatch": (
        variant_mismatch,
        f"results/0 ({KEY}): variant 'py3.11-gpu', but its record's environment is '{VARIANT}'",
    ),
    "schema-version-2": (
        schema_version_2,
        "not a pytest-kerasperf results file of schema version 4: it is of version 2 *",
    ),
}


# ------------------------------------------------------------------ running the command


def kerasperf(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_kerasperf", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


Tree = dict[str, bytes | None]  # path under the root -> a file's bytes, None for a directory


def tree(root: Path) -> Tree | None:
    """Everything under ``root``, or None when it does not exist."""
    if not root.exists():
        return None
    return {
        path.relative_to(root).as_posix(): path.read_bytes() if path.is_file() else None
        for path in sorted(root.rglob("*"))
    }


def existing_baseline(inner: Inner, data: dict[str, Any]) -> None:
    """The entry of ``KEY`` written as the gate writes it (the baseline the attack aims at)."""
    store = baseline.Baselines(inner.baseline_dir, "numpy", VARIANT)
    store.update({KEY: msgspec.convert(record(data), Record)})
    assert inner.entry_file().is_file()


def assert_one_line_error(done: subprocess.CompletedProcess[str], command: str, path: Path) -> str:
    """Exit 2, nothing on stdout, one line on stderr naming ``path``; the line's reason."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.split("\n")
    assert lines[-1] == "", done.stderr
    [line] = lines[:-1]
    prefix = f"kerasperf {command}: error: {path}: "
    assert line.startswith(prefix), line
    assert "\r" not in line
    return line.removeprefix(prefix)


@pytest.mark.parametrize("baseline_exists", [False, True], ids=["no-baseline", "baseline"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_accept_refuses_a_bad_results_file_and_writes_nothing(
    inner: Inner, case: str, baseline_exists: bool
) -> None:
    data = clean_results(inner)
    if baseline_exists:
        existing_baseline(inner, data)
    damage, reason = BAD_INPUTS[case]
    bad = inner.pytester.path / "bad.json"
    bad.write_text(damage(copy.deepcopy(data)), encoding="utf-8")
    before = tree(inner.baseline_dir)

    done = kerasperf("accept", bad, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    said = assert_one_line_error(done, "accept", bad)
    assert fnmatch.fnmatchcase(said, reason), said
    assert tree(inner.baseline_dir) == before
    assert (before is None) == (not baseline_exists)


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_report_refuses_a_bad_results_file_and_writes_no_markdown(inner: Inner, case: str) -> None:
    data = clean_results(inner)
    damage, reason = BAD_INPUTS[case]
    good, bad = inner.pytester.path / "good.json", inner.pytester.path / "bad.json"
    good.write_text(dumps(data), encoding="utf-8")
    bad.write_text(damage(copy.deepcopy(data)), encoding="utf-8")
    report = inner.pytester.path / "report.md"

    # A bad file among good ones: the good ones are not reported alone.
    done = kerasperf(
        "report", good, bad, "--expect", "numpy", "--markdown", report, cwd=inner.pytester.path
    )
    said = assert_one_line_error(done, "report", bad)
    assert fnmatch.fnmatchcase(said, reason), said
    assert not report.exists()


def sparse_file(path: Path, size: int) -> None:
    """A file of ``size`` bytes that takes no room on disk (it is refused unread)."""
    with path.open("wb") as handle:
        handle.truncate(size)


@pytest.mark.parametrize("baseline_exists", [False, True], ids=["no-baseline", "baseline"])
def test_a_file_over_the_size_limit_is_refused_unread(inner: Inner, baseline_exists: bool) -> None:
    data = clean_results(inner)
    if baseline_exists:
        existing_baseline(inner, data)
    huge = inner.pytester.path / "huge.json"
    sparse_file(huge, untrusted.MAX_BYTES + 1)
    before = tree(inner.baseline_dir)
    reason = f"{untrusted.MAX_BYTES + 1:,} bytes, more than the {untrusted.MAX_BYTES:,} read"

    accepted = kerasperf(
        "accept", huge, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path
    )
    assert assert_one_line_error(accepted, "accept", huge) == reason
    assert tree(inner.baseline_dir) == before

    report = inner.pytester.path / "report.md"
    reported = kerasperf("report", huge, "--markdown", report, cwd=inner.pytester.path)
    assert assert_one_line_error(reported, "report", huge) == reason
    assert not report.exists()


# ------------------------------------------------------------------ files that are not files

LINK_REASON = "a symbolic link, not a regular file (links are not followed)"


def not_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Paths a results "file" from an unzipped artifact can be, and the reason each gets."""
    good = tmp_path / "good.json"
    good.write_text('{"schema_version": 4}', encoding="utf-8")
    made: dict[str, tuple[Path, str]] = {}
    for name, target in (("zero", "/dev/zero"), ("good", str(good))):
        link = tmp_path / f"link-to-{name}.json"
        link.symlink_to(target)
        made[f"link-to-{name}"] = (link, LINK_REASON)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would wait forever
    made["fifo"] = (fifo, "a FIFO, not a regular file")
    made["device"] = (Path("/dev/zero"), "a character device, not a regular file")
    folder = tmp_path / "folder.json"
    folder.mkdir()
    made["directory"] = (folder, "a directory, not a regular file")
    return made


@pytest.mark.parametrize("case", ["link-to-zero", "link-to-good", "fifo", "device", "directory"])
def test_read_refuses_what_is_not_a_regular_file_without_blocking(
    tmp_path: Path, case: str
) -> None:
    path, reason = not_files(tmp_path)[case]
    with pytest.raises(untrusted.UntrustedInputError) as refused:
        untrusted.read(path)
    assert str(refused.value) == f"{path}: {reason}"


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_read_stops_one_byte_past_the_limit_whatever_the_size_says() -> None:
    """A /proc file says it has 0 bytes and has more: the size is not trusted, the read is cut."""
    path = Path("/proc/self/status")
    assert path.stat().st_size == 0
    with pytest.raises(untrusted.UntrustedInputError) as refused:
        untrusted.read(path, max_bytes=100)
    assert str(refused.value) == f"{path}: more than the 100 bytes read"


def test_accept_and_report_refuse_a_link_and_a_fifo_in_one_line(tmp_path: Path) -> None:
    made = not_files(tmp_path)
    baselines = tmp_path / "baselines"
    for case in ("link-to-zero", "fifo"):
        path, reason = made[case]
        accepted = kerasperf("accept", path, "--baseline-dir", baselines, cwd=tmp_path)
        assert assert_one_line_error(accepted, "accept", path) == reason
        report = tmp_path / "report.md"
        reported = kerasperf("report", path, "--markdown", report, cwd=tmp_path)
        assert assert_one_line_error(reported, "report", path) == reason
        assert not report.exists()
    assert not baselines.exists()


def test_read_refuses_a_real_results_file_over_a_smaller_limit(inner: Inner) -> None:
    path = inner.pytester.path / "ci.json"
    path.write_text(dumps(clean_results(inner)), encoding="utf-8")
    size = path.stat().st_size
    assert untrusted.read(path)["schema_version"] == 4
    assert untrusted.read(path, max_bytes=size)["schema_version"] == 4
    with pytest.raises(untrusted.UntrustedInputError) as refused:
        untrusted.read(path, max_bytes=size - 1)
    assert str(refused.value) == f"{path}: {size:,} bytes, more than the {size - 1:,} read"


def test_accept_refuses_a_record_that_would_write_outside_the_variant_layout(
    inner: Inner,
) -> None:
    """The variant directory comes from the record's environment: it must name a variant."""
    data = clean_results(inner)
    first(data)["variant"] = None  # results of before variants were recorded
    record(data)["environment"]["python"] = "3/escape"
    bad = inner.pytester.path / "bad.json"
    bad.write_text(dumps(data), encoding="utf-8")
    done = kerasperf("accept", bad, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    said = assert_one_line_error(done, "accept", bad)
    assert said == (
        f"results/0 ({KEY}): record/environment/python: '3/escape' is not a Python version"
    )
    assert not inner.baseline_dir.exists()


# ------------------------------------------------------------------ the inflated entry


def test_an_inflated_entry_is_refused_and_a_real_regression_still_fails_the_gate(
    inner: Inner,
) -> None:
    """The attack: a results file whose counts all add up except one function's, inflated so
    that the entry it makes leaves room for a later regression to pass as an improvement."""
    data = clean_results(inner)
    crafted = copy.deepcopy(data)
    counts = record(crafted)["calls_by_function"]
    counts[GENEXPR] += 10_000  # everything else (calls, edges, the result's calls) as measured
    path = inner.pytester.path / "crafted.json"
    path.write_text(dumps(crafted), encoding="utf-8")
    done = kerasperf("accept", path, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    calls = record(data)["calls"]
    assert assert_one_line_error(done, "accept", path) == (
        f"results/0 ({KEY}): calls {calls:,} but calls_by_function adds up to {calls + 10_000:,}"
    )
    assert not inner.baseline_dir.exists()

    legitimate = inner.pytester.path / "ci.json"
    legitimate.write_text(dumps(data), encoding="utf-8")
    accepted = kerasperf(
        "accept", legitimate, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path
    )
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.splitlines() == [
        f"baseline {inner.baseline_file}:",
        f"  added     {KEY}: {calls:,} calls",
    ]
    entry = json.loads(inner.entry_file().read_text(encoding="utf-8"))["entry"]
    assert entry == record_data(msgspec.convert(record(data), Record).compact())

    inner.write(workload_source(helper=True))  # one planted call per workload call
    gate = inner.run("--kerasperf", "--kerasperf-rounds", "0")
    assert gate.ret == pytest.ExitCode.TESTS_FAILED
    gate.stdout.fnmatch_lines(
        [f"*kerasperf calls: {calls + 1:,} per call, baseline {calls:,} (+1)*"]
    )


# ------------------------------------------------------------------ kerasperf report


def test_report_exits_1_on_a_regression_with_the_markdown_written(inner: Inner) -> None:
    path = inner.pytester.path / "failing.json"
    path.write_text(dumps(failing_results(inner)), encoding="utf-8")
    report = inner.pytester.path / "report.md"
    done = kerasperf(
        "report", path, "--expect", "numpy", "--markdown", report, cwd=inner.pytester.path
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == "kerasperf report: not green: 1 regression\n"
    assert done.stdout.splitlines()[-1] == (
        "kerasperf: ❌ 1 regression · 0 improvements · 0 unchanged · 0 not compared"
    )
    text = report.read_text(encoding="utf-8")
    assert text.startswith(markdown.MARKER + "\n")
    assert "**kerasperf:** ❌ 1 regression · 0 improvements · 0 unchanged · 0 not compared" in text


def test_report_exits_1_when_an_expected_run_has_no_results(inner: Inner) -> None:
    path = inner.pytester.path / "numpy.json"
    path.write_text(dumps(clean_results(inner)), encoding="utf-8")
    report = inner.pytester.path / "report.md"
    done = kerasperf(
        "report", path, "--expect", "numpy", "jax", "--markdown", report, cwd=inner.pytester.path
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == "kerasperf report: not green: no results for jax\n"
    *table, verdict, missing = done.stdout.splitlines()
    assert any(line.startswith(f"{KEY}  numpy ({VARIANT})") for line in table), table
    assert verdict.startswith("kerasperf: ✅ 0 regressions")
    assert missing == "kerasperf report: no results for jax (expected)"
    text = report.read_text(encoding="utf-8")
    assert "❌ **No results for jax** (expected)." in text
    assert "<code>test&#95;work</code>" in text  # the numpy results are reported all the same


def test_report_exits_0_when_every_expected_run_is_there_and_nothing_regressed(
    inner: Inner,
) -> None:
    path = inner.pytester.path / "numpy.json"
    path.write_text(dumps(clean_results(inner)), encoding="utf-8")
    report = inner.pytester.path / "report.md"
    done = kerasperf(
        "report", path, "--expect", "numpy", "--markdown", report, cwd=inner.pytester.path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "No results for" not in report.read_text(encoding="utf-8")


def test_report_markdown_shows_untrusted_text_as_text(inner: Inner) -> None:
    """``<locals>`` from a real local workload, a mention, backticks and a pipe from the test's
    id, and the same in a failure line edited by whoever produced the file."""
    data = failing_results(inner)
    [failure] = first(data)["verdict"]["failures"]
    assert "made by (sums to +1): test_x.py:test_local.<locals>.work +1" in failure["text"]
    failure["text"] += " cc @someone `x` | y"
    path = inner.pytester.path / "failing.json"
    path.write_text(dumps(data), encoding="utf-8")
    report = inner.pytester.path / "report.md"
    done = kerasperf("report", path, "--markdown", report, cwd=inner.pytester.path)
    assert done.returncode == 1, done.stderr
    text = report.read_text(encoding="utf-8")

    key_cell = "<code>test&#95;local&#91;&#64;\u200bsomeone &#96;x&#96; &#124; y&#93;</code>"
    assert f"| numpy ({VARIANT}) | {key_cell} | eager |" in text
    item = (
        "- <code>numpy</code> <code>test&#95;x.py::test&#95;local&#91;&#64;\u200bsomeone "
        "&#96;x&#96; &#124; y&#93;</code>: calls: "
    )
    assert item in text
    assert "made by (sums to +1): test&#95;x.py:test&#95;local.&lt;locals&gt;.work +1" in text
    assert text.count(" cc &#64;\u200bsomeone &#96;x&#96; &#124; y") == 1
    assert "<locals>" not in text
    assert "@someone" not in text
    assert "`" not in text
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows
    assert all(row.count("|") == len(markdown.HEADER) + 1 for row in rows), rows


def test_error_lines_of_a_real_failure_stay_one_line_whatever_its_text(inner: Inner) -> None:
    data = failing_results(inner)
    result = first(data)
    location = Path(result["location"][0])
    [line] = github.error_lines([msgspec.convert(result, Outcome)], location.parent)
    assert line.startswith(f"::error file=test_x.py,line={result['location'][1]},title=")
    assert "test_local.<locals>.work" in line

    # A key with a control character is refused when a file is read; the annotation escapes
    # whatever it is given all the same (an outcome made in process is not read from a file).
    key = "test_x.py::t[a,b]\n::error::title"
    result["verdict"]["failures"] = [
        {"kind": "calls", "text": "calls: 100% more\n::error file=README.md,line=1::owned"},
        {"kind": "calls", "text": "second\r::warning::also owned"},
    ]
    result["location"][0] = str(location.parent / "dir\n::error::x" / "test_x.py")
    hostile = msgspec.structs.replace(msgspec.convert(result, Outcome), nodeid=key, key=key)
    [line] = github.error_lines([hostile], location.parent)
    assert "\n" not in line
    assert "\r" not in line
    assert line == (
        "::error file=dir%0A%3A%3Aerror%3A%3Ax/test_x.py,line="
        f"{result['location'][1]},title=kerasperf numpy "
        "test_x.py%3A%3At[a%2Cb]%0A%3A%3Aerror%3A%3Atitle"
        "::calls: 100%25 more%0A::error file=README.md,line=1::owned"
        "%0Asecond%0D::warning::also owned"
    )


def test_report_that_cannot_write_its_markdown_is_one_line(inner: Inner) -> None:
    path = inner.pytester.path / "numpy.json"
    path.write_text(dumps(clean_results(inner)), encoding="utf-8")
    report = inner.pytester.path / "missing-dir" / "report.md"
    done = kerasperf("report", path, "--markdown", report, cwd=inner.pytester.path)
    assert done.returncode == 2
    assert done.stderr == (
        f"kerasperf report: error: {report}: cannot write: No such file or directory\n"
    )


def test_openvino_results_are_reported_and_accepted(inner: Inner) -> None:
    """The gate's matrix runs openvino: its results file is one the report and accept read."""
    data = clean_results(inner)
    record(data)["backend"] = record(data)["environment"]["backend"] = "openvino"
    del record(data)["environment"]["jax.device_count"]  # a fact only jax and numpy record
    rerecord = first(data)["rerecord"]
    first(data)["rerecord"] = rerecord and rerecord.replace("=numpy ", "=openvino ")
    path = inner.pytester.path / "openvino.json"
    path.write_text(dumps(data), encoding="utf-8")
    done = kerasperf("report", path, "--expect", "openvino", cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr
    assert any(line.startswith(f"{KEY}  openvino ({VARIANT})") for line in done.stdout.splitlines())
    accepted = kerasperf(
        "accept", path, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path
    )
    assert accepted.returncode == 0, accepted.stderr
    assert list(tree(inner.baseline_dir) or {}) == [
        "openvino",
        f"openvino/{VARIANT}",
        f"openvino/{VARIANT}/test_x.py",
        f"openvino/{VARIANT}/test_x.py/test_work.json",
    ]


# ------------------------------------------------------------------ keys and their files


def test_accept_gives_a_long_key_and_one_spelled_like_its_file_name_two_files(inner: Inner) -> None:
    """A 300-character key is written to a shortened name; a short key spelled like that name,
    and one starting with ``.``, are other files, each read back by the gate's loader."""
    data = clean_results(inner)
    long_key = f"test_x.py::test_work[{'p' * 300}]"
    spelled = "test_x.py::" + unquote(baseline.relative_file(long_key).stem)
    keys = [long_key, spelled, "test_x.py::.hidden"]
    data["results"] = [copy.deepcopy(first(data)) for _ in keys]
    for result, key in zip(data["results"], keys, strict=True):
        result["key"] = result["nodeid"] = key
    data["summary"] = None  # the run's account counted one result
    path = inner.pytester.path / "ci.json"
    path.write_text(dumps(data), encoding="utf-8")
    done = kerasperf("accept", path, "--baseline-dir", inner.baseline_dir, cwd=inner.pytester.path)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[1:]] == ["added"] * 3
    store = baseline.Baselines(inner.baseline_dir, "numpy", VARIANT)
    assert sorted(store.load()) == sorted(keys)
    assert len({store.file(key) for key in keys}) == 3


def test_a_skip_reason_with_terminal_escapes_is_written_as_text_its_reader_accepts(
    inner: Inner,
) -> None:
    """jax colours its errors (``\\x1b[1m``), and a census skip quotes Keras's error: the
    results file this package writes must be one its own reader (``kerasperf report``,
    ``kerasperf audit``) accepts, the reason readable."""
    reason = "Keras fails: \x1b[1mEncountered an unexpected tracer.\x1b[0m\nsee\x07 \u202eabove"
    inner.write(f"import pytest\n\n\ndef test_skips(kerasperf):\n    pytest.skip({reason!r})\n")
    done = inner.run("--kerasperf", "--kerasperf-json", "skips.json")
    assert done.ret == pytest.ExitCode.OK
    shown = "Keras fails: Encountered an unexpected tracer. see\\u0007 \\u202eabove"
    done.stdout.fnmatch_lines([f"*1 not measured ({shown}: 1)*"])
    loaded = results_file.load_results(inner.pytester.path / "skips.json")
    assert loaded.summary is not None
    assert loaded.summary.not_measured == {shown: 1}
    assert not untrusted.UNPRINTABLE_RE.search(shown)
