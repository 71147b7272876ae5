"""Is ``--kerasperf-changed`` sound on real history?  Each commit measured, then each selected.

``measure``: every first-parent commit of ``A..B`` of a Keras repository (and ``A``), each in a
fresh process with the commit's Keras on ``PYTHONPATH`` (exported with ``git archive``), runs
the perf tests with ``--kerasperf-update-baseline`` (and ``--kerasperf-rounds 0``: latency is
not what is compared) into a scratch directory, writing its results (``--kerasperf-json``), its
index (``--kerasperf-index-out``) and its test times (``--junitxml``) into ``OUT``.  A commit
already measured there is skipped (``--shard K/N``: two processes side by side).  Commits whose
library (``keras/`` but Keras's own ``*_test.py`` files, which no perf test imports) is the
same blob for blob as an earlier commit's are measured once: the first of them stands for the
rest (the counts follow only the code).

``table``: for each commit and its parent, the perf tests whose counts moved (the gate's
numbers: calls, graph breaks, recompiles; and, stricter, the calls of any function) against the
tests that ``--kerasperf-changed`` with the parent's index selects for the change: a moved test
not selected is a miss (each one explained on stderr: the functions whose calls moved, and
whether the parent's index has them).  Prints a Markdown table and a summary: misses, the share
of tests selected (median, largest), and the selected tests' own time per commit beside the
whole run's::

    .venv/bin/python benchmarks/selection_history.py measure --repo KERAS --backend numpy \\
        --out sel-numpy 3422977a5e~100..3422977a5e
    .venv/bin/python benchmarks/selection_history.py table --repo KERAS sel-numpy \\
        3422977a5e~100..3422977a5e
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import msgspec

from pytest_kerasperf import reach_index, selection, shards
from pytest_kerasperf.ab.commits import export, first_parent_commits, open_repo

SUITES = ("pytest_kerasperf.suite", "pytest_kerasperf.census")


class Meta(msgspec.Struct):
    sha: str
    status: int
    cpu_s: float
    wall_s: float
    last: str = ""


def _library(repo: Any, sha: str) -> str:
    """The blobs of ``keras/`` at ``sha`` but Keras's own tests (``*_test.py``): one line each."""
    listing = repo.git.ls_tree("-r", sha, "--", "keras").splitlines()
    return "\n".join(line for line in listing if not line.endswith("_test.py"))


def representatives(repo: Any, commits: list[Any]) -> dict[str, str]:
    """sha -> the sha of the first commit whose library is the same (itself where none)."""
    first: dict[str, str] = {}
    return {c.sha: first.setdefault(_library(repo, c.sha), c.sha) for c in commits}


def measure(args: argparse.Namespace) -> int:
    repo = open_repo(args.repo)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    snapshot = Path(tempfile.mkdtemp(prefix="kerasperf-plugin-"))
    # the plugin as it is now, whatever is edited while the commits run
    shutil.copytree(Path(__file__).parents[1] / "pytest_kerasperf", snapshot / "pytest_kerasperf")
    commits = first_parent_commits(repo, args.span)
    stands_for = representatives(repo, commits)
    distinct = [c for c in commits if stands_for[c.sha] == c.sha]
    print(f"{len(commits)} commits, {len(distinct)} distinct libraries to measure")
    for position, commit in enumerate(distinct):
        if args.shard and not shards.in_shard(position, args.shard):
            continue
        if (out / f"{commit.sha}.meta.json").exists():
            continue
        with tempfile.TemporaryDirectory(prefix="kerasperf-sel-") as scratch:
            tree = export(repo, commit.sha, Path(scratch) / "tree")
            home = Path(scratch) / "home"
            home.mkdir()
            env = dict(
                os.environ,
                PYTHONHASHSEED="0",
                KERAS_BACKEND=args.backend,
                KERAS_HOME=str(home),
                PYTHONPATH=f"{tree}{os.pathsep}{snapshot}",
            )
            command = [
                sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                "--kerasperf-update-baseline", f"--kerasperf-baseline-dir={scratch}/baselines",
                f"--kerasperf-json={out}/{commit.sha}.json",
                f"--kerasperf-index-out={out}/{commit.sha}.index.json",
                f"--junitxml={out}/{commit.sha}.xml", f"--kerasperf-rounds={args.rounds}",
                "--pyargs", *args.suites,
            ]  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                command, env=env, cwd=scratch, capture_output=True, text=True,
                timeout=args.timeout, check=False,
            )  # fmt: skip
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            tail = (done.stdout + done.stderr).strip().splitlines()
            meta = Meta(commit.sha, done.returncode, cpu, time.perf_counter() - started)
            meta.last = tail[-1] if tail else ""
            (out / f"{commit.sha}.meta.json").write_bytes(msgspec.json.encode(meta))
            print(
                f"{position:3} {commit.sha[:10]} rc={done.returncode} {cpu:.0f} CPU-s {meta.last}"
            )
    return 0


class _Graphs(msgspec.Struct):
    breaks: int


class _Record(msgspec.Struct):
    calls: int
    calls_by_function: dict[str, int] = {}
    graph_breaks: _Graphs | None = None
    recompiles: int | None = None
    gave_up: tuple[str, ...] = ()


class _Outcome(msgspec.Struct):
    key: str
    record: _Record


class _Results(msgspec.Struct):
    results: list[_Outcome]


def _numbers(path: Path) -> dict[str, tuple[Any, ...]]:
    """test key -> (calls, graph breaks, recompiles, gave up, calls by function).

    Only these fields are decoded: the files are the benchmark's own (written by the measure
    step's ``--kerasperf-json``), and a pair's two files are tens of MB.
    """
    found: dict[str, tuple[Any, ...]] = {}
    for outcome in msgspec.json.decode(path.read_bytes(), type=_Results).results:
        record = outcome.record
        breaks = record.graph_breaks.breaks if record.graph_breaks else None
        found[outcome.key] = (
            record.calls,
            breaks,
            record.recompiles,
            record.gave_up,
            record.calls_by_function,
        )
    return found


def _times(path: Path) -> dict[str, float]:
    """test name (as the results key ends) -> seconds, from pytest's junit XML."""
    times: dict[str, float] = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        module = (case.get("classname") or "").rsplit(".", 1)[-1]  # a module's test functions
        name = f"{module}.py::{case.get('name')}"
        times[name] = times.get(name, 0.0) + float(case.get("time") or 0)
    return times


def _explain(
    sha: str,
    key: str,
    before: tuple[Any, ...] | None,
    after: tuple[Any, ...] | None,
    index: reach_index.IndexFile,
    chosen: selection.Selection,
) -> None:
    """A miss, on stderr: the functions whose calls moved, and where the parent's index has
    them (the test's entry, the process's set, nowhere), beside the changed functions."""
    print(f"missed at {sha[:10]}: {key}", file=sys.stderr)
    if before is None or after is None:
        print(f"    only {'after' if before is None else 'before'} the change", file=sys.stderr)
        return
    print(f"    numbers {before[:4]} -> {after[:4]}", file=sys.stderr)
    entry = {index.functions[i] for i in index.tests.get(key, [])}
    process = {index.functions[i] for i in index.process}
    functions = before[4].keys() | after[4].keys()
    for name in sorted(f for f in functions if before[4].get(f) != after[4].get(f)):
        where = "test" if name in entry else "process" if name in process else "nowhere"
        print(
            f"    {name}: {before[4].get(name)} -> {after[4].get(name)} ({where})", file=sys.stderr
        )
    print(f"    changed: {', '.join(chosen.functions) or '-'}", file=sys.stderr)


def table(args: argparse.Namespace) -> int:
    repo = open_repo(args.repo)
    out: Path = args.out
    commits = first_parent_commits(repo, args.span)
    stands_for = representatives(repo, commits)
    numbers = functools.lru_cache(maxsize=4)(_numbers)
    rows, shares, chosen_times, full_times, selection_times = [], [], [], [], []
    misses = strict_misses = pairs = everything = 0
    for parent, commit in itertools.pairwise(commits):
        measured_p, measured_c = stands_for[parent.sha], stands_for[commit.sha]
        meta_p, meta_c = (out / f"{sha}.meta.json" for sha in (measured_p, measured_c))
        if not (meta_p.exists() and meta_c.exists()):
            continue
        results_p, results_c = out / f"{measured_p}.json", out / f"{measured_c}.json"
        index_p = out / f"{measured_p}.index.json"
        if not (results_p.exists() and results_c.exists() and index_p.exists()):
            rows.append(f"| {commit.sha[:10]} | {commit.subject[:60]} | did not run | | | |")
            continue
        pairs += 1
        before, after = numbers(results_p), numbers(results_c)
        keys = sorted(after.keys() | before.keys())
        moved = {k for k in keys if (before.get(k) or ())[:4] != (after.get(k) or ())[:4]}
        moved_any = {k for k in keys if before.get(k) != after.get(k)}
        started = time.perf_counter()
        index = reach_index.load(index_p)
        chosen = selection.select(
            keys, index, selection.changes(selection.read_diff(args.repo, parent.sha, commit.sha))
        )
        selection_times.append(time.perf_counter() - started)
        missed, missed_any = moved - chosen.run, moved_any - chosen.run
        misses += len(missed)
        strict_misses += len(missed_any)
        everything += bool(chosen.everything)
        share = len(chosen.run) / len(keys) if keys else 0.0
        shares.append(share)
        times = _times(out / f"{measured_c}.xml")
        full_times.append(sum(times.values()))
        chosen_times.append(sum(t for k, t in times.items() if k in chosen.run))
        why = "everything: " + chosen.everything[0] if chosen.everything else ""
        same = " (library unchanged)" if measured_p == measured_c else ""
        rows.append(
            f"| {commit.sha[:10]} | {commit.subject[:60]} | {len(chosen.run)} of {len(keys)}"
            f"{same} {why[:90]} | {len(moved)} ({len(moved_any)}) | {len(missed)} "
            f"({len(missed_any)}) | {selection_times[-1]:.2f} s |"
        )
        for key in sorted(missed_any):
            _explain(commit.sha, key, before.get(key), after.get(key), index, chosen)
    print("| commit | subject | selected | moved (any function) | missed | selection |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    if pairs:
        print(
            f"\n{pairs} commits compared ({len(set(stands_for.values()))} libraries measured); "
            f"misses {misses} (any function's calls: {strict_misses}); everything selected at "
            f"{everything}; share selected median {statistics.median(shares):.1%}, largest "
            f"{max(shares):.1%}; the selected tests' own time (while indexing) median "
            f"{statistics.median(chosen_times):.1f} s of {statistics.median(full_times):.0f} s; "
            f"selection median {statistics.median(selection_times):.2f} s, largest "
            f"{max(selection_times):.2f} s"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure")
    run.add_argument("--repo", type=Path, required=True)
    run.add_argument("--backend", default="numpy")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--suites", nargs="+", default=list(SUITES))
    run.add_argument("--shard", type=shards.parse)
    run.add_argument("--timeout", type=float, default=3600)
    # no timing by default: latency is not what moves here, and on CPU the suite's eager
    # generate spends most of a commit's time in its five timed calls
    run.add_argument("--rounds", type=int, default=0)
    run.add_argument("span", metavar="A..B")
    show = commands.add_parser("table")
    show.add_argument("--repo", type=Path, required=True)
    show.add_argument("out", type=Path)
    show.add_argument("span", metavar="A..B")
    args = parser.parse_args()
    return measure(args) if args.command == "measure" else table(args)


if __name__ == "__main__":
    sys.exit(main())
