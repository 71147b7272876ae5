"""Which perf tests a change can move: ``--kerasperf-changed INDEX``.

A test's counts follow only the code it executes (docs/exact-counts.md), so a change that
touches no function of a test's index entry (``measure.reach``) cannot move them.  The change
is ``git diff COMMIT`` from the index's commit to the work tree; each changed line of a library
file maps to the innermost function around it (``diffmap``), and the tests whose entry holds
one run.  Whatever cannot be mapped to functions runs every test, with the reason: the list is
docs/selection.md's.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_kerasperf.diffmap import (
    PLAIN_DIFF,
    Hunk,
    Span,
    function_spans,
    hunks,
    innermost,
    is_library_file,
)
from pytest_kerasperf.reach_index import IndexFile

#: Files no perf test imports or reads: documentation, examples, Keras's own unit tests.
#: A perf test module (``*perf_test.py``) is not one of them.
NOT_RUN = (
    "*.md",
    "*.rst",
    "*.ipynb",
    "docs/*",
    "examples/*",
    "guides/*",
    "integration_tests/*",
    "*_test.py",
    "tests/test_*.py",
    "LICENSE",
    ".gitignore",
    ".github/*",  # CI's files (its Keras configuration, KERAS_HOME, is not: below)
    ".kokoro/*",
)
#: Keras's configuration in CI (``KERAS_HOME=.github/workflows/config/<backend>``)
_CONFIG = ".github/workflows/config/"
_PERF_TEST = "*perf_test.py"
API = "keras/api/"


@dataclass(frozen=True)
class FileChange:
    """One changed file of the diff: git's status letter (A, D, M, T, ...) and its path."""

    status: str
    path: str


@dataclass(frozen=True)
class Diff:
    """What changed between the index's commit and the work tree."""

    files: tuple[FileChange, ...]
    diff: str  # ``git diff -U0`` of the library files
    before: Mapping[str, str]  # library file -> its source at the commit
    after: Mapping[str, str]  # library file -> its source in the work tree
    untracked: tuple[str, ...] = ()


@dataclass
class Changes:
    functions: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)  # a class's methods added or removed
    everything: list[str] = field(default_factory=list)  # why every test runs


@dataclass(frozen=True)
class Selection:
    run: frozenset[str]
    not_affected: tuple[str, ...]
    everything: tuple[str, ...]  # the reasons every test ran (empty: a selection)
    functions: tuple[str, ...]  # the changed functions of keras/src


def not_run(path: str) -> bool:
    if fnmatch.fnmatch(path, _PERF_TEST) or path.startswith(_CONFIG):
        return False
    return any(fnmatch.fnmatch(path, pattern) for pattern in NOT_RUN)


def changes(diff: Diff) -> Changes:
    """The changed functions of ``keras/src``, or why the change cannot be mapped to them (the
    files' reasons only, where one needs no parsing: the functions are then not read)."""
    found = Changes()
    for path in diff.untracked:  # a module a changed file may import (bytecode is not one)
        if path.startswith("keras/") and path.endswith(".py") and not not_run(path):
            found.everything.append(f"{path} is new and not committed (git add it)")
    modules = []
    for change in diff.files:  # what needs no parsing first: where it runs everything, no
        path = change.path  # file is parsed (a large refactor's selection stays quick)
        if is_library_file(path) and change.status in ("A", "D"):
            what = "added" if change.status == "A" else "deleted"
            found.everything.append(f"{path} was {what}")
        elif is_library_file(path) or _is_api(path):
            modules.append(path)
        elif not not_run(path):
            found.everything.append(f"{path} changed (not a function of keras/src)")
    if found.everything:
        return found
    by_file = hunks(diff.diff)
    for path in modules:
        _functions(path, by_file.get(path, []), diff, found)
    return found


def _is_api(path: str) -> bool:
    """Keras's generated public API (``keras/api``): modules of imports only."""
    return path.startswith(API) and path.endswith(".py")


def _functions(path: str, cut: list[Hunk], diff: Diff, found: Changes) -> None:
    """Each changed line, on the side it is on (a deleted one in the base, where the index's
    names come from; an added one in the change), as the function around it; what is not in
    a function: harmless (an import, a comment, a blank line, the module's docstring) or a
    reason to run every test."""
    try:
        sides = [_Side(diff.before[path]), _Side(diff.after[path])]
    except (KeyError, SyntaxError, ValueError, RecursionError, MemoryError):
        found.everything.append(f"{path} does not parse")
        return
    # a definition only one side has (a new op's class, a helper removed with its callers):
    # no test ran it before, and what calls it changed too
    only = sides[0].defined.keys() ^ sides[1].defined.keys()
    names = [{span.qualname for span in side.spans} for side in sides]
    for side, mine, theirs in zip(sides, names, names[::-1], strict=True):
        side.new = {name: lines for name, lines in side.defined.items() if name in only}
        side.fresh = mine - theirs
    methods = _methods(sides[1].spans) ^ _methods(sides[0].spans)
    if {m for m in methods if m.split(".", 1)[0] not in only}:
        found.files.add(path)  # dir() of its instances changes: every test running this file
    for old, old_count, new, new_count in cut:
        lines = [(sides[0], n) for n in range(old, old + old_count) if old_count] + [
            (sides[1], n) for n in range(new, new + new_count) if new_count
        ]
        for side, number in lines:
            why = side.classify(path, number, found)
            if why is not None:
                found.everything.append(why)
                return


def _methods(spans: Sequence[Span]) -> set[str]:
    """The functions defined directly in a class body (``Dense.call``, not ``f.<locals>.g``)."""
    names = {span.qualname for span in spans}
    return {
        name
        for name in names
        if "." in name and "<locals>" not in name and name.rsplit(".", 1)[0] not in names
    }


class _Side:
    """One side of a file's change: its functions and its harmless module-level lines."""

    def __init__(self, source: str) -> None:
        tree = ast.parse(source)
        self.spans = function_spans(tree)
        self.lines = source.splitlines()
        self.harmless: set[int] = set()
        #: top-level classes and functions: name -> their lines, decorators included
        self.defined: dict[str, range] = {}
        self.new: dict[str, range] = {}  # those the other side does not have
        self.fresh: set[str] = set()  # functions (by qualname) the other side does not have
        for index, node in enumerate(tree.body):
            first, last = node.lineno, (node.end_lineno or node.lineno)
            docstring = index == 0 and isinstance(node, ast.Expr)
            if isinstance(node, ast.Import | ast.ImportFrom) or docstring:
                self.harmless.update(range(first, last + 1))
            elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                decorated = min([first, *(d.lineno for d in node.decorator_list)])
                self.defined[node.name] = range(decorated, last + 1)

    def classify(self, path: str, number: int, found: Changes) -> str | None:
        span = innermost(self.spans, number)
        if any(number in lines for lines in self.new.values()):
            if span is not None:
                found.functions.add(f"{path}:{span.qualname}")  # in no index entry yet
            return None
        if span is not None:
            if span.first <= number < span.line and span.qualname not in self.fresh:
                return f"{path}:{number} is a decorator of {span.qualname}"
            found.functions.add(f"{path}:{span.qualname}")
            if span.in_signature(number) and span.qualname not in self.fresh:
                # what inspects it moves too, without running it (a layer's __init__ reads
                # its call's signature: docs/selection.md)
                found.files.add(path)
            return None
        text = self.lines[number - 1].strip() if 0 < number <= len(self.lines) else ""
        if number in self.harmless or not text or text.startswith("#"):
            return None
        return f"{path}:{number} is module-level code or a class body"


def usable(
    index: IndexFile, *, backend: str, fingerprint: Mapping[str, str | None], plugin: str
) -> list[str]:
    """Why the index does not describe this run (empty: it does)."""
    why: list[str] = []
    if index.backend != backend:
        why.append(f"the index is of {index.backend}, this run of {backend}")
    if index.plugin != plugin:
        why.append(f"the index was made by pytest-kerasperf {index.plugin}, this is {plugin}")
    moved = sorted(
        k
        for k in fingerprint.keys() | index.fingerprint.keys()
        if fingerprint.get(k) != index.fingerprint.get(k)
    )
    if moved:
        why.append(f"the index was made under another environment ({', '.join(moved[:3])})")
    if index.commit is None:
        why.append("the index names no commit (made outside a git work tree)")
    if index.dirty:
        why.append("the index was made from uncommitted changes")
    return why


def select(keys: Iterable[str], index: IndexFile, found: Changes) -> Selection:
    """The tests to run, of ``keys``: every one, or those whose entry holds a changed function
    (and those the index does not know or marks incomplete)."""
    keys = list(keys)
    process = {index.functions[p] for p in index.process}
    everything = list(found.everything)
    shared = sorted(found.functions & process)
    if shared:
        everything.append(f"{shared[0]} runs at import or in the session's set-up")
    if everything:
        return Selection(frozenset(keys), (), tuple(everything), tuple(sorted(found.functions)))
    position = {name: p for p, name in enumerate(index.functions)}
    changed = {position[name] for name in found.functions if name in position}
    changed.update(  # a class of the file lost or gained a method: everything that ran its code
        p for p, name in enumerate(index.functions) if name.split(":", 1)[0] in found.files
    )
    incomplete = set(index.incomplete)
    run = {
        key
        for key in keys
        if key not in index.tests or key in incomplete or changed.intersection(index.tests[key])
    }
    return Selection(
        frozenset(run),
        tuple(key for key in keys if key not in run),
        (),
        tuple(sorted(found.functions)),
    )


# ------------------------------------------------------------------ git


def read_diff(root: Path, commit: str, head: str | None = None) -> Diff:
    """The change from ``commit`` to the work tree of the repository at ``root`` (or to the
    commit ``head``: a history's step) (GitPython; no external diff driver or textconv
    runs); ``LookupError`` where git cannot say."""
    try:
        import git
    except ImportError as error:  # GitPython not installed, or no git executable
        raise LookupError(f"reading the change needs GitPython and git: {error}") from None
    try:
        repo = git.Repo(root, search_parent_directories=True)
        if head is not None:  # a bare mirror too (its config may not say core.bare)
            repo.git.update_environment(GIT_DIR=str(Path(repo.git_dir).resolve()))
        span = (commit,) if head is None else (commit, head)
        status = repo.git.diff("--name-status", *PLAIN_DIFF, *span)
        files = tuple(
            FileChange(line.split("\t", 1)[0][:1], line.split("\t", 1)[1])
            for line in status.splitlines()
            if "\t" in line
        )
        status_of = {f.path: f.status for f in files}
        library = [
            f.path
            for f in files
            if (is_library_file(f.path) and f.status == "M") or _is_api(f.path)
        ]
        text = repo.git.diff("-U0", *PLAIN_DIFF, *span, "--", *library) if library else ""
        before = {
            path: "" if status_of[path] == "A" else repo.git.show(f"{commit}:{path}")
            for path in library
        }
        work = Path(str(repo.working_tree_dir or "."))
        after = {
            path: ""
            if status_of[path] == "D"
            else (work / path).read_text(encoding="utf-8")
            if head is None
            else repo.git.show(f"{head}:{path}")
            for path in library
        }
        untracked = tuple(repo.untracked_files) if head is None else ()
    except Exception as error:  # git's own failure: a commit it does not have
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        other = "the work tree" if head is None else head[:12]
        raise LookupError(f"git cannot compare {commit[:12]} with {other}: {first}") from None
    return Diff(files, text, before, after, untracked)
