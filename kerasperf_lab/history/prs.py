"""``kerasperf prs``: each PR measured before and after, on every backend, in one table.

For each PR number: the merge on the target branch and its first parent
when the PR is merged there, else ``refs/pull/N/head`` and its merge base
(``pulls``); both commits measured on each backend in fresh processes
(``cache.obtain``: cached, so a rerun or another shard measures only what is
missing); the rows (``prs_table``) rendered for the terminal, Markdown and
JSON (``prs_render``, schema ``kerasperf-prs/1``).  docs/history.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kerasperf_lab.history.cache import Cache, in_shard, obtain, parse_shard, write_json
from kerasperf_lab.history.prs_render import markdown, terminal_lines
from kerasperf_lab.history.prs_table import build
from kerasperf_lab.history.pulls import resolve_all
from kerasperf_lab.history.sweep import (
    add_measuring_arguments,
    add_output_arguments,
    add_repo_and_backends,
    add_retry_and_timeout,
    backends_of,
    logger,
    run_command,
    selection_of,
)
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab.commits import Commit, HistoryError
from pytest_kerasperf.ab.runner import Measurement, RunSettings, Selection
from pytest_kerasperf.baseline import write_atomic


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "prs",
        help="measure pull requests before and after (merge or head), one row per PR",
        description="Measure each PR on two commits, on each backend, each in its own pytest "
        "process: a PR merged on the target's first-parent line on its merge and that "
        "commit's first parent; otherwise refs/pull/N/head and its merge base with the target. "
        "Prints the change of calls per backend, graph breaks before -> after, recompiles, "
        "latency where timed, what else a head holds, and where the calls changed, exactly "
        "(docs/history.md). Measurements are cached, shared with `kerasperf sweep`.",
    )
    parser.add_argument("prs", nargs="+", type=int, metavar="PR", help="pull request numbers")
    add_repo_and_backends(parser)
    parser.add_argument("--target", default="master", help="the branch PRs merge into (master)")
    add_measuring_arguments(
        parser, tests_help="tests to run at each commit (default: the bundled suite)"
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="measure only the commits i with i %% N == K-1 (in the order the PRs list "
        "them, before then after), into the cache; then run again with --merge-only",
    )
    parser.add_argument(
        "--merge-only", action="store_true", help="measure nothing: build from the caches"
    )
    add_retry_and_timeout(parser)
    add_output_arguments(parser)
    parser.add_argument(
        "--families",
        type=Path,
        metavar="PATH",
        help="the hot-function families (default: the bundled families.toml)",
    )


_stderr = logger("kerasperf prs")


def main(args: argparse.Namespace) -> int:
    return run_command("kerasperf prs", _main, args)


def _main(args: argparse.Namespace) -> int:
    from kerasperf_lab.publish.families import FamiliesError, load_families

    if args.merge_only and args.shard:
        raise HistoryError("--shard measures; --merge-only does not")
    if any(pr <= 0 for pr in args.prs):
        raise HistoryError("PR numbers are positive integers")
    shard = parse_shard(args.shard) if args.shard else None
    selection = selection_of(args)
    backends_ = backends_of(args)
    try:
        mapping = load_families(args.families)
    except FamiliesError as error:
        raise HistoryError(str(error)) from None
    repo = history_commits.open_repo(args.repo)
    pairs = resolve_all(repo, args.prs, args.target)
    for pair in pairs:
        also = pair.also_line()
        _stderr(pair.describe() + (f"; {also}" if also else ""))
    commits: dict[str, Commit] = {}
    for pair in pairs:
        commits.setdefault(pair.before.sha, pair.before)
        commits.setdefault(pair.after.sha, pair.after)
    cache = Cache(args.cache)
    settings = RunSettings(timeout_s=args.timeout)
    found: dict[tuple[str, str], Measurement] = {}
    missing: list[str] = []
    measured = from_cache = 0
    ordered = list(commits.values())
    for index, commit in enumerate(ordered):
        mine = in_shard(index, shard) and not args.merge_only
        for backend in backends_:
            measurement: Measurement | None
            if mine:
                measurement, was_measured = obtain(
                    repo,
                    commit,
                    backend,
                    selection,
                    cache,
                    settings,
                    retry_failed=args.retry_failed,
                    log=_stderr,
                    where=f"[{index + 1}/{len(ordered)}] ",
                )
                measured += was_measured
                from_cache += not was_measured
            else:
                measurement = _cached(cache, commit.sha, backend, selection)
            if measurement is None:
                missing.append(f"{commit.short} ({backend})")
            else:
                found[(commit.sha, backend)] = measurement
    if not args.merge_only:
        print(
            f"kerasperf prs: {len(pairs)} PRs, {len(ordered)} commits × {len(backends_)} "
            f"backends: measured {measured}, from cache {from_cache}"
        )
    if missing and shard:
        print(
            "kerasperf prs: the table needs the other shards: merge the caches "
            f"({', '.join(missing)})"
        )
        return 0
    if missing:
        raise HistoryError(
            f"missing from the caches {', '.join(map(str, args.cache))}: {', '.join(missing)}"
        )
    environments = {
        backend: next((m.fingerprint for (sha, b), m in found.items() if b == backend and m.ok), {})
        for backend in backends_
    }
    table = build(
        str(args.repo), args.target, pairs, backends_, selection, found, environments, mapping
    )
    text = markdown(table)
    if args.markdown == "-":
        print(text)
    else:
        print("\n".join(terminal_lines(table)))
        if args.markdown:
            write_atomic(Path(args.markdown), text)
    if args.json is not None:
        write_json(args.json, table)
    return 0


def _cached(cache: Cache, sha: str, backend: str, selection: Selection) -> Measurement | None:
    """This machine's measurement of (commit, backend), else the only one the caches hold."""
    from pytest_kerasperf.ab.runner import local_fingerprint

    hit = cache.get(sha, backend, local_fingerprint(backend), selection)
    if hit is not None:
        return hit
    candidates = cache.candidates(sha, backend, selection)
    return candidates[0] if len(candidates) == 1 else None
