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
#: so 3,000,000 would take hours; a linear one takes milliseconds.
BUDGET_S = 1.0
LONG = 3_000_000

HOSTILE = {
    "letters": "a" * LONG,
    "scheme characters": "a.1-" * (LONG // 4),
    "digits before a letter": "1" * LONG + "a",
    "a URL at the end": "ab" * (LONG // 2) + "://x",
    "mentions": "@a " * (LONG // 3),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_escaping_a_hostile_line_is_linear_in_its_length(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formatting, "MAX_CELL", LONG * 3)  # the whole text escaped, not cut
    text = HOSTILE[case]
    started = time.perf_counter()
    escaped = escape(text)
    took = time.perf_counter() - started
    assert took < BUDGET_S, f"{case}: {took:.2f} s"
    assert len(escaped) >= len(text.split()[0])


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
