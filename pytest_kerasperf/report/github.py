"""GitHub Actions: the step summary and ``::error`` annotations of a run.

Under ``GITHUB_ACTIONS=true`` a run appends its Markdown report to
``$GITHUB_STEP_SUMMARY`` and prints one ``::error`` line per failing perf test
on the test's own line.  GitHub shows ten annotations per step: the ten most
important are printed (regressions first, biggest first), then one notice
saying how many more there are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.outcome import CATEGORIES, Outcome

SHOWN_PER_STEP = 10


def active(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _importance(result: Outcome) -> tuple[int, int, str]:
    rank = min(CATEGORIES.index(result.category), 3)  # improved and unchanged alike
    calls = result.verdict.change(CallsChange)
    return (rank, -(calls.delta if calls else 0), result.key)


def error_lines(results: Sequence[Outcome], workspace: Path | None = None) -> list[str]:
    """``::error`` lines for the failing perf tests, the most important first."""
    failing = sorted((r for r in results if r.verdict.failures), key=_importance)
    lines = []
    for result in failing[:SHOWN_PER_STEP]:
        title = f"kerasperf {result.backend} {result.key}"
        where = ""
        location = result.location
        if location and workspace is not None:
            path = Path(location[0])
            try:
                relative = path.resolve().relative_to(workspace.resolve())
            except ValueError:
                relative = None
            if relative is not None:
                where = f"file={_property(relative.as_posix())},line={location[1]},"
        message = "\n".join(result.verdict.failure_lines)
        lines.append(f"::error {where}title={_property(title)}::{_data(message)}")
    hidden = len(failing) - SHOWN_PER_STEP
    if hidden > 0:
        lines.append(
            f"::notice title=kerasperf::{hidden} more failing perf tests are not annotated "
            "(GitHub shows 10 per step); see the step summary"
        )
    return lines


def append_step_summary(markdown: str, environ: Mapping[str, str] = os.environ) -> Path | None:
    """Append to ``$GITHUB_STEP_SUMMARY``; the file, or None when there is none."""
    target = environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown.rstrip("\n") + "\n\n")
    return path
