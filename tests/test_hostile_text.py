"""Text from a results file costs a report time and room in proportion to what it shows.

``formatting.escape`` once took 78.6 s on a 60,000-letter failure line (its link pattern tried
every letter as the start of a URL scheme and scanned the rest of the run from each); a
3,000,000-character line did not end in 300 s.  One fork's artifact could tie up the comment
job.  Each escape is linear and each rendered cell bounded (``formatting.MAX_CELL``).
"""

from __future__ import annotations

import time

import pytest

from pytest_kerasperf import formatting
from pytest_kerasperf.formatting import MAX_CELL, escape
from tests.inner import Inner
from tests.test_untrusted import dumps, failing_results, first, kerasperf

#: What a hostile line may cost: the quadratic escape took about 0.65 s on 10,000 letters here,
#: so 3,000,000 would take hours; the linear one takes 0.1 to 2.2 s of CPU by case (mentions the
#: most: 2.10 and 2.20 s on an idle machine, 2026-12-07, over the 2 s this bound was), so the
#: bound sits well above the slowest linear case and far below the quadratic (CPU time: a
#: loaded machine's wall clock is not the code's cost).  The growth check below is the test of
#: linearity; this one only bounds what one line may cost.
BUDGET_S = 10.0
LONG = 3_000_000
#: Four times the text may cost at most this many times as much: 4 for linear code, 16 for
#: quadratic (with room for the noise of timing a fraction of a second).
MAX_GROWTH = 8.0


def hostile(case: str, length: int) -> str:
    return {
        "letters": "a" * length,
        "scheme characters": "a.1-" * (length // 4),
        "digits before a letter": "1" * length + "a",
        "a URL at the end": "ab" * (length // 2) + "://x",
        "mentions": "@a " * (length // 3),
    }[case]


HOSTILE = ("letters", "scheme characters", "digits before a letter", "a URL at the end", "mentions")


def cpu_seconds(text: str) -> tuple[float, str]:
    """The CPU time of escaping ``text``, the fastest of three, and the escaped text."""
    times = []
    for _ in range(3):
        started = time.process_time()
        escaped = escape(text)
        times.append(time.process_time() - started)
    return min(times), escaped


@pytest.mark.parametrize("case", HOSTILE)
def test_escaping_a_hostile_line_is_linear_in_its_length(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formatting, "MAX_CELL", LONG * 3)  # the whole text escaped, not cut
    quarter, _ = cpu_seconds(hostile(case, LONG // 4))
    took, escaped = cpu_seconds(hostile(case, LONG))
    assert took < BUDGET_S, f"{case}: {took:.2f} s of CPU"
    assert took < MAX_GROWTH * max(quarter, 0.005), f"{case}: {quarter:.3f} s -> {took:.3f} s"
    assert len(escaped) >= len(hostile(case, LONG).split()[0])


def test_a_long_cell_shows_its_start_and_says_how_much_it_left_out() -> None:
    text = "calls: " + "x" * (MAX_CELL * 3)
    escaped = escape(text)
    assert escaped.startswith("calls: xxx")
    assert escaped.endswith(f"… ({len(text) - MAX_CELL:,} characters more)")
    assert len(escaped) < MAX_CELL + 40
    assert escape("https://example.org") == "https\u200b://example.org"  # still no link


def test_report_on_a_three_million_character_failure_line_is_quick_and_bounded(
    inner: Inner,
) -> None:
    data = failing_results(inner)
    [failure] = first(data)["verdict"]["failures"]
    failure["text"] += " " + "a" * LONG
    path = inner.pytester.path / "failing.json"
    path.write_text(dumps(data), encoding="utf-8")
    report = inner.pytester.path / "report.md"
    started = time.perf_counter()
    done = kerasperf("report", path, "--markdown", report, cwd=inner.pytester.path)
    took = time.perf_counter() - started
    assert done.returncode == 1, done.stderr
    # A fresh process that reads and checks 3 MB of JSON: seconds here, against hours before.
    assert took < 20, took
    text = report.read_text(encoding="utf-8")
    [item] = [line for line in text.splitlines() if line.startswith("- <code>numpy</code>")]
    assert len(item) < MAX_CELL + 300
    assert item.endswith("characters more)")
    assert max(len(line) for line in done.stdout.splitlines()) < MAX_CELL + 300
