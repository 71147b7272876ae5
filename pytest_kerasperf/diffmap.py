"""A diff's changed lines, and the functions that hold them (pure: no git, no import).

``hunks`` reads ``git diff -U0`` (``changed_lines``: the new side's lines of its hunks);
``function_spans`` names each function of a module as the profiles do (``co_qualname``:
``Dense.call``, ``outer.<locals>.inner``) with its lines; ``innermost`` finds the function
around a line.  The perf coverage of a diff
(``history.coverage``) and the selection of ``--kerasperf-changed`` (``selection``) read
diffs through them.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

_HUNK = re.compile(r"^@@ -(?P<old>\d+)(?:,(?P<oc>\d+))? \+(?P<new>\d+)(?:,(?P<nc>\d+))? @@")
LIBRARY = "keras/src/"
#: ``git diff``'s options for commits that are data (a fork's): no diff driver or textconv runs
PLAIN_DIFF = ("--no-color", "--no-renames", "--no-ext-diff", "--no-textconv")


def is_library_file(path: str) -> bool:
    """A non-test Python file of ``keras/src`` (tests are not what a perf test watches)."""
    return (
        path.startswith(LIBRARY)
        and path.endswith(".py")
        and not path.endswith("_test.py")
        and "/testing/" not in path
        and "/tests/" not in path
    )


class Hunk(NamedTuple):
    """A hunk of ``git diff -U0``: its old and new line ranges (a count of 0: lines cut or
    added after ``start``)."""

    old: int
    old_count: int
    new: int
    new_count: int


def hunks(diff: str) -> dict[str, list[Hunk]]:
    """New-file path -> its hunks, from a ``git diff -U0`` text.  Removed files are left out."""
    found: dict[str, list[Hunk]] = {}
    path: str | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            path = None if target == "/dev/null" else target.removeprefix("b/")
            continue
        match = _HUNK.match(line)
        if match is not None and path is not None:
            old_count, new_count = (1 if match[c] is None else int(match[c]) for c in ("oc", "nc"))
            found.setdefault(path, []).append(
                Hunk(int(match["old"]), old_count, int(match["new"]), new_count)
            )
    return found


def changed_lines(diff: str) -> dict[str, set[int]]:
    """New-file path -> its changed line numbers, from a ``git diff -U0`` text.

    An added or changed line is itself; a deletion is the line before the cut (the
    line after it where the cut is the file's start).  Removed files are left out.
    """
    lines: dict[str, set[int]] = defaultdict(set)
    for path, found in hunks(diff).items():
        for hunk in found:
            if hunk.new_count:
                lines[path].update(range(hunk.new, hunk.new + hunk.new_count))
            else:
                lines[path].add(max(hunk.new, 1))
    return dict(lines)


@dataclass(frozen=True)
class Span:
    qualname: str
    first: int  # its first decorator's line, or its def's
    last: int
    line: int = 0  # its def's line (after its decorators)
    body: int = 0  # its body's first line: the lines from ``line`` to it are its signature

    def in_signature(self, number: int) -> bool:
        """Is line ``number`` its signature (the def line, parameters, defaults, annotations),
        which ``inspect`` reads without running it?"""
        return self.line <= number and (number < self.body or number == self.line)


def function_spans(source: str | ast.Module) -> list[Span]:
    """Every function of a module (its source, or its tree), by its qualified name
    (``co_qualname``), with its lines."""
    spans: list[Span] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        # a def is a statement: only statements' bodies hold one (not expressions: a lambda
        # is no FunctionDef), so only they are walked
        for child in body:
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                qualname = prefix + child.name
                last = child.end_lineno or child.lineno
                spans.append(Span(qualname, first, last, child.lineno, child.body[0].lineno))
                visit(child.body, f"{qualname}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child.body, f"{prefix}{child.name}.")
            else:
                for inner in _bodies(child):
                    visit(inner, prefix)

    tree = ast.parse(source) if isinstance(source, str) else source
    visit(tree.body, "")
    return spans


def _bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside a compound statement (if, for, while, with, try, match)."""
    found: list[list[ast.stmt]] = []
    for name in ("body", "handlers", "cases", "orelse", "finalbody"):  # the source's order
        value = getattr(statement, name, None)
        if not isinstance(value, list):
            continue
        if name in ("handlers", "cases"):  # except clauses, match cases: each has a body
            found.extend(holder.body for holder in value)
        else:
            found.append(value)
    return found


def innermost(spans: Sequence[Span], line: int) -> Span | None:
    holding = [s for s in spans if s.first <= line <= s.last]
    return min(holding, key=lambda s: s.last - s.first) if holding else None
