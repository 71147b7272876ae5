"""Perf coverage of a diff: which changed functions of ``keras/src`` a perf test executes.

``kerasperf coverage RESULTS... --repo KERAS BASE..HEAD`` (or ``--pr N``) reads
the changed lines of each non-test file under ``keras/src`` (``git diff -U0``),
maps each to the innermost ``def`` that holds it in the new file (``ast``, by
the qualified name the profiles use: ``keras/src/layers/core/dense.py:Dense.call``,
``outer.<locals>.inner``), and looks each function up in the whole call profiles
of the results files (``--kerasperf-json``): a function no record executed is
"not watched by any perf test"; for each watched one, the tests that execute it.
A deletion is mapped to the function around the place it was cut from; a
changed line outside every function is module-level code (it runs at import),
listed on its own; a removed file's functions are gone, not unwatched.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_kerasperf.ab.commits import HistoryError, open_repo, resolve, split_range
from pytest_kerasperf.diffmap import (
    LIBRARY,
    PLAIN_DIFF,
    changed_lines,
    function_spans,
    innermost,
    is_library_file,
)
from pytest_kerasperf.results_file import InputError, load_results

__all__ = ["LIBRARY", "changed_lines", "function_spans", "innermost", "is_library_file"]


@dataclass
class Coverage:
    """What a diff changed, and which perf tests execute it."""

    watched: dict[str, list[str]] = field(default_factory=dict)  # function -> tests
    unwatched: list[str] = field(default_factory=list)
    module_level: list[str] = field(default_factory=list)  # files with changed module code
    unparsable: list[str] = field(default_factory=list)

    @property
    def functions(self) -> int:
        return len(self.watched) + len(self.unwatched)


def changed_functions(
    lines: Mapping[str, set[int]], sources: Mapping[str, str]
) -> tuple[set[str], set[str], set[str]]:
    """(changed functions as profile names, files with changed module-level code, files whose
    new source does not parse), for the library files of ``lines``."""
    functions: set[str] = set()
    module_level: set[str] = set()
    unparsable: set[str] = set()
    for path, numbers in lines.items():
        if not is_library_file(path) or path not in sources:
            continue
        try:
            spans = function_spans(sources[path])
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # a fork's file
            unparsable.add(path)
            continue
        for number in numbers:
            span = innermost(spans, number)
            if span is None:
                module_level.add(path)
            else:
                functions.add(f"{path}:{span.qualname}")
    return functions, module_level, unparsable


def watchers(records: Iterable[tuple[str, str, Mapping[str, int]]]) -> dict[str, set[str]]:
    """Function -> ``test key (backend)`` of every record whose whole profile executed it."""
    found: dict[str, set[str]] = defaultdict(set)
    for key, backend, by_function in records:
        for name in by_function:
            if name.startswith(LIBRARY):
                found[name].add(f"{key} ({backend})")
    return found


def measure(
    lines: Mapping[str, set[int]],
    sources: Mapping[str, str],
    watched_by: Mapping[str, set[str]],
) -> Coverage:
    functions, module_level, unparsable = changed_functions(lines, sources)
    result = Coverage(module_level=sorted(module_level), unparsable=sorted(unparsable))
    for name in sorted(functions):
        tests = watched_by.get(name)
        if tests:
            result.watched[name] = sorted(tests)
        else:
            result.unwatched.append(name)
    return result


def render(coverage: Coverage, what: str, *, markdown: bool = False, tests: int = 3) -> str:
    """The coverage as text (or Markdown): counts first, then what no perf test watches.

    In Markdown every name (a diff's paths and functions, a results file's test keys: a fork's
    text) is escaped: no markup, mention or link of its own."""
    from pytest_kerasperf.formatting import code as monospace
    from pytest_kerasperf.formatting import escape

    head = (
        f"perf coverage of {what}: {coverage.functions} changed functions of keras/src, "
        f"{len(coverage.watched)} watched, {len(coverage.unwatched)} not watched by any perf test"
    )
    bullet = "- " if markdown else "  "
    code: Any = monospace if markdown else str
    plain: Any = escape if markdown else str

    def listed(title: str, names: Sequence[str]) -> list[str]:
        return ["", title, *(f"{bullet}{code(name)}" for name in names)] if names else []

    out = [plain(head), *listed("not watched by any perf test:", coverage.unwatched)]
    if coverage.watched:
        out += ["", "watched:"]
        for name, keys in coverage.watched.items():
            more = f" and {len(keys) - tests} more" if len(keys) > tests else ""
            out.append(f"{bullet}{code(name)}: {plain(', '.join(keys[:tests]))}{more}")
    modules = "module-level code changed (runs at import, not a function):"
    out += listed(modules, coverage.module_level)
    out += listed("not read (does not parse):", coverage.unparsable)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ the command


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "coverage",
        help="which changed functions of keras/src no perf test executes",
        description="For a git range (or a pull request) of a Keras repository: the changed "
        "functions of keras/src that no perf test of the results files executes, and for each "
        "watched one the tests that execute it (docs/census.md#perf-coverage-of-a-diff).",
    )
    parser.add_argument("results", nargs="+", type=Path, help="results files (--kerasperf-json)")
    parser.add_argument("--repo", type=Path, default=Path("."), help="the Keras repository")
    parser.add_argument("--range", dest="span", metavar="BASE..HEAD", help="the commits")
    parser.add_argument("--pr", type=int, help="a pull request: refs/pull/N/head")
    parser.add_argument("--target", default="master", help="a PR's target branch (master)")
    parser.add_argument("--markdown", action="store_true", help="Markdown, not text")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        print(render_command(args), end="")
    except (HistoryError, InputError) as error:
        print(f"kerasperf coverage: error: {error}", file=sys.stderr)
        return 2
    return 0


def render_command(args: argparse.Namespace) -> str:
    if (args.span is None) == (args.pr is None):
        raise HistoryError("give one of --range BASE..HEAD and --pr N")
    outcomes = [o for path in args.results for o in load_results(path).outcomes]
    if args.pr is not None:
        repo = open_repo(args.repo)
        head = resolve(repo, f"refs/pull/{args.pr}/head")
        base = str(repo.git.merge_base(resolve(repo, args.target), head))
        coverage = diff_coverage(repo, base, head, watchers(profiles(outcomes)))
        what = f"PR #{args.pr} ({base[:10]}..{head[:10]})"
    else:
        coverage, what = of_range(args.repo, args.span, outcomes)
    return render(coverage, what, markdown=args.markdown)


def profiles(outcomes: Iterable[Any]) -> list[tuple[str, str, Mapping[str, int]]]:
    """(test key, backend, whole profile) of each outcome; an error where none has a profile."""
    records = [(o.key, o.backend, o.record.calls_by_function) for o in outcomes]
    if not any(by_function for _, _, by_function in records):
        raise HistoryError(
            "the results files hold no call profile (a results file of --kerasperf-json has "
            "every record's whole profile)"
        )
    return records


def of_range(repo_dir: Path, span: str, outcomes: Iterable[Any]) -> tuple[Coverage, str]:
    """The coverage of ``BASE..HEAD`` of the repository at ``repo_dir`` by the outcomes'
    profiles, and the range as ``base..head`` (ten hex digits each)."""
    repo = open_repo(repo_dir)
    first, last = split_range(span)
    base, head = resolve(repo, first), resolve(repo, last)
    watched_by = watchers(profiles(outcomes))
    try:
        coverage = diff_coverage(repo, base, head, watched_by)
    except Exception as error:  # git's own failure (GitCommandError), one line
        raise HistoryError(f"git could not read {base[:10]}..{head[:10]}: {error}") from None
    return coverage, f"{base[:10]}..{head[:10]}"


def diff_coverage(repo: Any, base: str, head: str, watched_by: Mapping[str, set[str]]) -> Coverage:
    """``measure`` for ``base..head`` of a GitPython repository."""
    diff = repo.git.diff("-U0", *PLAIN_DIFF, base, head, "--", LIBRARY)
    lines = {p: n for p, n in changed_lines(diff).items() if is_library_file(p)}
    sources = {path: repo.git.show(f"{head}:{path}") for path in lines}
    return measure(lines, sources, watched_by)
