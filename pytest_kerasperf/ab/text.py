"""How the history commands name tests, functions and commits in their text."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_kerasperf.ab.commits import Commit


def short_test(key: str | None) -> str:
    return "" if key is None else key.split("::", 1)[-1]


def short_function(name: str) -> str:
    """``keras/src/layers/layer.py:Layer.__call__`` -> ``layers/layer.py:Layer.__call__``."""
    return name.removeprefix("keras/src/")


def commit_line(commit: Commit) -> str:
    """``<short sha> (<day>) #<pr> <title>``: one commit on one line (bisect's answers)."""
    pr = f" #{commit.pr}" if commit.pr is not None else ""
    return f"{commit.short} ({commit.day}){pr} {commit.title}"
