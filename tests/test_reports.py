"""Reports where Keras maintainers look: GitHub step summary and annotations, Markdown,
and one cross-backend table from several runs' results (``kerasperf report``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kerasperf import formatting
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import Record
from pytest_kerasperf.report import github, markdown
from pytest_kerasperf.verdict import Failure, Verdict
from tests.inner import VARIANT, Inner, workload_source
from tests.replacing import replace

FAILING = workload_source(helper=True)


def recorded(inner: Inner, source: str) -> None:
    inner.write(source)
    assert inner.run("--kerasperf-update-baseline", "--kerasperf-rounds", "0").ret == 0


def test_a_failing_run_under_github_actions_writes_a_summary_and_error_lines(
    inner: Inner, monkeypatch: pytest.MonkeyPatch
) -> None:
    two = workload_source() + "\n\ndef test_fine(kerasperf):\n    kerasperf(helper)\n"
    recorded(inner, two)
    inner.write(FAILING + "\n\ndef test_fine(kerasperf):\n    kerasperf(helper)\n")
    summary = inner.pytester.path / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(inner.pytester.path))
    result = inner.run("--kerasperf", "--kerasperf-markdown=comment.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line = 1 + inner.pytester.path.joinpath("test_x.py").read_text().splitlines().index(
        "def test_work(kerasperf):"
    )
    result.stdout.fnmatch_lines(
        [
            f"::error file=test_x.py,line={line},title=kerasperf numpy test_x.py%3A%3Atest_work"
            "::calls: * (+1); made by (sums to +1): test_x.py:work +1 (calls it makes 1→2); "
            "grew: test_x.py:helper (+1)"
        ]
    )
    assert sum(text.startswith("::error") for text in result.stdout.lines) == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n")  # appended, not overwritten
    assert markdown.MARKER in text
    assert "**kerasperf:** ❌ 1 regression · 0 improvements · 1 unchanged · 0 not compared" in text
    changed = text.split("<details open>")[0]
    assert f"| numpy ({VARIANT}) | <code>test&#95;work</code> | eager |" in changed
    assert "test&#95;fine" not in changed  # unchanged rows only in the folded full table
    assert f"| numpy ({VARIANT}) | <code>test&#95;fine</code> | eager |" in text
    assert "<summary>All 2 results</summary>" in text
    comment = (inner.pytester.path / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith(markdown.MARKER + "\n")
    assert comment.rstrip("\n") == text.split("earlier step\n", 1)[1].rstrip("\n")


def test_ten_annotations_at_most_and_a_notice_for_the_rest(
    inner: Inner, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = "".join(f"\n\ndef test_{i}(kerasperf):\n    kerasperf(work)\n" for i in range(12))
    recorded(inner, workload_source() + tests)
    inner.write(FAILING + tests)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = inner.run("--kerasperf", "--kerasperf-rounds", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = [text for text in result.stdout.lines if text.startswith("::error")]
    assert len(errors) == github.SHOWN_PER_STEP
    result.stdout.fnmatch_lines(
        ["::notice title=kerasperf::3 more failing perf tests are not annotated *"]
    )


def test_no_github_output_outside_github_actions(
    inner: Inner, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded(inner, workload_source())
    inner.write(FAILING)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = inner.run("--kerasperf", "--kerasperf-rounds", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert not any(text.startswith("::") for text in result.stdout.lines)


def fake_result(key: str, status: str, *, backend: str = "numpy", delta: int = 0) -> Outcome:
    """An outcome with the given verdict status and calls delta (reports read nothing else)."""
    failures = (Failure("calls", "calls: ..."),) if status == "regressed" else ()
    return Outcome(
        nodeid=key,
        key=key,
        record=Record(backend, "eager", 100 + delta, {"f.py:f": 100 + delta}, None, None),
        verdict=Verdict(
            status,  # type: ignore[arg-type]
            failures=failures,
            compared=status != "new",
            changes=(CallsChange(100, 100 + delta),) if status != "new" else (),
        ),
        passed=status != "regressed",
    )


def test_markdown_stays_under_the_size_limit() -> None:
    results = [fake_result(f"test_x.py::test_{i:04d}", "pass") for i in range(2000)]
    results.append(fake_result("test_x.py::test_slow", "regressed", delta=5))
    text = markdown.render(results, limit=20_000)
    assert len(text.encode()) <= 20_000
    assert "more rows not shown (GitHub's size limit); see the JSON results." in text
    # changed rows come first
    assert (
        "| numpy | <code>test&#95;slow</code> | eager |" in text.split("<details><summary>All")[0]
    )


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_kerasperf", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_kerasperf_report_merges_two_backends(
    inner: Inner, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded(inner, workload_source())
    inner.write(FAILING)
    assert inner.run("--kerasperf", "--kerasperf-json", "numpy.json").ret == 1
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    inner.write(workload_source())
    assert inner.run("--kerasperf", "--kerasperf-json", "jax.json").ret == 0
    numpy_file, jax_file = inner.pytester.path / "numpy.json", inner.pytester.path / "jax.json"

    done = run_cli("report", numpy_file, jax_file)
    assert done.returncode == 1, done.stderr  # the table shows a regression
    assert done.stderr == "kerasperf report: not green: 1 regression\n"
    rows = [line for line in done.stdout.splitlines() if line.startswith("test_x.py::")]
    assert [row.split()[1] for row in rows] == ["jax", "numpy"]
    assert rows[0].split()[-1] == "new"
    assert rows[1].split()[-1] == "regressed"
    assert done.stdout.splitlines()[-1] == (
        "kerasperf: ❌ 1 regression · 0 improvements · 0 unchanged · ⚠️ 1 not compared"
    )

    as_markdown = run_cli("report", numpy_file, jax_file, "--markdown", "-")
    assert as_markdown.returncode == 1
    assert as_markdown.stdout.startswith(markdown.MARKER + "\n### kerasperf (jax, numpy)")
    assert f"| jax ({VARIANT}) | <code>test&#95;work</code> |" in as_markdown.stdout
    assert f"| numpy ({VARIANT}) | <code>test&#95;work</code> |" in as_markdown.stdout

    bad = inner.pytester.path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 2}), encoding="utf-8")
    refused = run_cli("report", bad)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"kerasperf report: error: {bad}: not a pytest-kerasperf")
    assert len(refused.stderr.splitlines()) == 1
    assert refused.stdout == ""


def test_error_lines_escape_what_github_would_misread() -> None:
    fake = fake_result("test_x.py::test_a[p,q]", "regressed", delta=3)
    result = replace(
        fake,
        verdict=replace(
            fake.verdict, failures=(Failure("calls", "calls: 100% more\nsecond line"),)
        ),
        location=("/repo/tests/test_x.py", 7),
    )
    [line] = github.error_lines([result], Path("/repo"))
    assert line == (
        "::error file=tests/test_x.py,line=7,title=kerasperf numpy test_x.py%3A%3Atest_a[p%2Cq]"
        "::calls: 100%25 more%0Asecond line"
    )
    [outside] = github.error_lines([result], Path("/elsewhere"))
    assert outside.startswith("::error title=")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cc @octocat", "cc &#64;\u200boctocat"),
        ("@keras-team/owners", "&#64;\u200bkeras-team/owners"),
        ("fixes #12", "fixes &#35;\u200b12"),
        ("keras-team/keras#34", "keras-team/keras&#35;\u200b34"),
        ("GH-56", "GH-\u200b56"),
        (
            "https://github.com/keras-team/keras/issues/7",
            "https\u200b://github.com/keras-team/keras/issues/7",
        ),
        ("www.example.com", "www\u200b.example.com"),
        ("test_x.py:work", "test&#95;x.py:work"),
    ],
)
def test_escaped_text_mentions_references_and_links_nothing(text: str, shown: str) -> None:
    """GitHub is reported to mention through ``&#64;``: a zero-width space breaks each."""
    assert formatting.escape(text) == shown


def test_the_measured_breaks_section_says_when_reasons_and_breaks_differ() -> None:
    """Four breaks, reasons for three: the section of a failure says one came without one."""
    from pytest_kerasperf.record import BreakReason, GraphRecord
    from pytest_kerasperf.report.terminal import detail_section

    reasons = (BreakReason("print", "a.py:f", 2, 1), BreakReason("branch", "b.py:g", 1, 2))
    graph = GraphRecord(graphs=5, breaks=4, reasons=reasons)
    record = Record("torch", "compiled", 1, {"f.py:f": 1}, graph)
    lines = detail_section(Verdict("new"), record).splitlines()
    at = lines.index(
        "graph breaks measured: 4 (5 graphs); where dynamo broke, by reason (times per forward):"
    )
    assert lines[at + 1 : at + 4] == [
        "  2× a.py:f (line 1): print",
        "  1× b.py:g (line 2): branch",
        "  (1 without a reason in dynamo's graph-break log)",
    ]
