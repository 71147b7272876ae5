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
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from pytest_kerasperf.history.coverage import (
    LIBRARY,
    changed_functions,
    changed_lines,
    is_library_file,
)


def executed(paths: list[Path]) -> set[str]:
    names: set[str] = set()
    for path in paths:
        for result in json.loads(path.read_text()).get("results", []):
            record = result.get("record") or {}
            names.update(n for n in record.get("calls_by_function", {}) if n.startswith(LIBRARY))
    return names


def commit_functions(repo: object, sha: str) -> tuple[set[str], bool]:
    """(changed functions, whether the commit changes library code at all)."""
    git = repo.git  # type: ignore[attr-defined]
    diff = git.diff("-U0", "--no-color", "--no-renames", f"{sha}^", sha, "--", LIBRARY)
    lines = {p: n for p, n in changed_lines(diff).items() if is_library_file(p)}
    sources = {path: git.show(f"{sha}:{path}") for path in lines}
    functions, _module_level, _unparsable = changed_functions(lines, sources)
    return functions, bool(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument(
        "--label", nargs="+", action="append", metavar=("NAME", "FILES"), required=True
    )
    parser.add_argument("--json", type=Path, help="write every commit's figures here")
    args = parser.parse_args()
    from pytest_kerasperf.history.commits import open_repo

    repo = open_repo(args.repo)
    groups: dict[str, set[str]] = {
        label[0]: executed([Path(p) for p in label[1:]]) for label in args.label
    }
    groups["all"] = set().union(*groups.values())
    shas = repo.git.rev_list("--first-parent", f"-n{args.commits}", "HEAD").split()
    library = 0
    counts: Mapping[str, dict[str, int]] = {
        name: {"none_watched": 0, "some_unwatched": 0, "functions": 0, "watched": 0}
        for name in groups
    }
    rows = []
    for sha in shas:
        functions, touches = commit_functions(repo, sha)
        if not touches:
            continue
        library += 1
        row: dict[str, object] = {"commit": sha, "functions": sorted(functions)}
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
    for name, figures in counts.items():
        print(
            f"{name:>8}: {len(groups[name])} keras/src functions executed; "
            f"{figures['none_watched']} of {library} commits change no function it executes, "
            f"{figures['some_unwatched']} change at least one it does not; changed functions "
            f"watched {figures['watched']} of {figures['functions']}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
