"""Over a window of real Keras history: how many commits change a function no perf test executes.

For each of the last N first-parent commits of a Keras repository (default
400, to its HEAD), the commit's diff against its first parent is read as
``kerasperf coverage`` reads a pull request's (``history.coverage``: changed
lines of non-test files of ``keras/src`` mapped to the innermost function of
the new file), and its changed functions are looked up in the whole call
profiles of the results files given (e.g. the standard suite's
``kerasperf-results-<backend>.json`` and the census's).  Printed: how many
commits change library code, how many of those change no function any perf
test executes, and how many change at least one function none executes.

    .venv/bin/python benchmarks/diff_coverage_history.py --repo KERAS_GIT_DIR \\
        --label suite kerasperf-results-*.json --label census census-*.json

Each ``--label NAME FILES...`` group is counted on its own, and the union of
all groups as ``all`` (the functions one name is watched by: any of its files).

A changed function that the measured Keras does not define (added or renamed
after it) cannot be in any of its profiles: ``--keras-source DIR`` (the
directory holding the measured Keras's ``keras/``; the installed Keras by
default) counts those apart, so the figures say what the results files could
have watched.  ``--exclude GLOB`` (repeatable, ``fnmatch`` on the file's path)
counts apart the changed functions of files no code path reaches (dead code,
e.g. files a revert left behind): they are printed, never hidden.
``--unwatched N`` prints the N files with most changed functions that Keras
defines and no perf test executes.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from pytest_kerasperf.diff_coverage import (
    LIBRARY,
    changed_functions,
    changed_lines,
    function_spans,
    is_library_file,
)


def executed(paths: list[Path]) -> set[str]:
    names: set[str] = set()
    for path in paths:
        for result in json.loads(path.read_text()).get("results", []):
            record = result.get("record") or {}
            names.update(n for n in record.get("calls_by_function", {}) if n.startswith(LIBRARY))
    return names


def installed_keras() -> Path:
    spec = importlib.util.find_spec("keras")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no Keras is importable here: pass --keras-source")
    return Path(next(iter(spec.submodule_search_locations))).parent


def defined(root: Path) -> set[str]:
    """Every function of ``root``'s ``keras/src``, named as the profiles name it."""
    names: set[str] = set()
    for path in (root / LIBRARY).rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        try:
            spans = function_spans(path.read_text(encoding="utf-8"))
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue
        names.update(f"{rel}:{span.qualname}" for span in spans)
    return names


def commit_functions(repo: object, sha: str) -> tuple[set[str], set[str]]:
    """(changed functions, the library files whose code the commit changes)."""
    git = repo.git  # type: ignore[attr-defined]
    diff = git.diff("-U0", "--no-color", "--no-renames", f"{sha}^", sha, "--", LIBRARY)
    lines = {p: n for p, n in changed_lines(diff).items() if is_library_file(p)}
    sources = {path: git.show(f"{sha}:{path}") for path in lines}
    functions, _module_level, _unparsable = changed_functions(lines, sources)
    return functions, set(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument(
        "--label", nargs="+", action="append", metavar=("NAME", "FILES"), required=True
    )
    parser.add_argument("--json", type=Path, help="write every commit's figures here")
    parser.add_argument("--keras-source", type=Path, help="the measured Keras (holds keras/)")
    parser.add_argument("--unwatched", type=int, default=0, metavar="N")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    args = parser.parse_args()
    source = args.keras_source or installed_keras()
    if not (source / LIBRARY).is_dir():
        raise SystemExit(f"{source} holds no {LIBRARY}: pass the directory holding keras/")
    known = defined(source)
    from pytest_kerasperf.ab.commits import open_repo

    repo = open_repo(args.repo)
    groups: dict[str, set[str]] = {
        label[0]: executed([Path(p) for p in label[1:]]) for label in args.label
    }
    groups["all"] = set().union(*groups.values())
    shas = repo.git.rev_list("--first-parent", f"-n{args.commits}", "HEAD").split()
    library = 0
    absent_functions = 0
    absent_commits = 0
    excluded_functions = 0
    excluded_commits = 0
    left: Counter[str] = Counter()
    counts: Mapping[str, dict[str, int]] = {
        name: {"none_watched": 0, "some_unwatched": 0, "functions": 0, "watched": 0}
        for name in groups
    }
    rows = []
    for sha in shas:
        functions, paths = commit_functions(repo, sha)
        live = {p for p in paths if not any(fnmatch.fnmatch(p, g) for g in args.exclude)}
        dead = {f for f in functions if f.partition(":")[0] not in live}
        excluded_functions += len(dead)
        excluded_commits += bool(dead)
        functions -= dead
        if not live:
            continue
        library += 1
        absent = functions - known
        absent_functions += len(absent)
        absent_commits += bool(absent)
        left.update(f.partition(":")[0] for f in functions - absent - groups["all"])
        row: dict[str, object] = {
            "commit": sha,
            "functions": sorted(functions),
            "absent": sorted(absent),
        }
        for name, watched in groups.items():
            hit = functions & watched
            figures = counts[name]
            figures["functions"] += len(functions)
            figures["watched"] += len(hit)
            figures["none_watched"] += not hit
            figures["some_unwatched"] += bool(functions - watched)
            row[name] = sorted(hit)
        rows.append(row)
    print(f"{len(shas)} first-parent commits to {shas[0][:10]}; {library} change keras/src code")
    print(
        f"the measured Keras ({source}) does not define {absent_functions} of the changed "
        f"functions (added or renamed after it), changed by {absent_commits} commits"
    )
    if args.exclude:
        print(
            f"excluded ({', '.join(args.exclude)}): {excluded_functions} changed functions of "
            f"{excluded_commits} commits; a commit that changes only such files is not counted"
        )
    for name, figures in counts.items():
        print(
            f"{name:>8}: {len(groups[name])} keras/src functions executed; "
            f"{figures['none_watched']} of {library} commits change no function it executes, "
            f"{figures['some_unwatched']} change at least one it does not; changed functions "
            f"watched {figures['watched']} of {figures['functions']}"
        )
    for file, number in left.most_common(args.unwatched):
        print(f"  unwatched, defined: {number:5d}  {file}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
