"""``kerasperf prs``: each PR measured before and after, on every backend, in one table.

The commits from ``pulls``, measured through ``cache`` (a rerun or another shard measures only
what is missing), the rows from ``prs_table``, rendered by ``prs_render`` (docs/history.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kerasperf_lab.history.cache import Cache, parse_shard, run_sweep, write_json
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
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.runner import Measurement, RunSettings, local_fingerprint
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
    cache = Cache(args.cache)
    ordered = list({c.sha: c for pair in pairs for c in (pair.before, pair.after)}.values())
    obtained: dict[tuple[str, str], Measurement] = {}
    if not args.merge_only:
        run, obtained = run_sweep(
            repo,
            ordered,
            backends_,
            selection,
            cache,
            RunSettings(timeout_s=args.timeout),
            shard=shard,
            retry_failed=args.retry_failed,
            log=_stderr,
            where="[{position}/{total}] ",
        )
        print(
            f"kerasperf prs: {len(pairs)} PRs, {len(ordered)} commits × {len(backends_)} "
            f"backends: measured {run.measured}, from cache {run.from_cache}"
        )
    found: dict[tuple[str, str], Measurement] = {}
    missing: list[str] = []
    for commit in ordered:
        for backend in backends_:
            # measured now, else this machine's measurement, else the only one the caches hold
            measurement = obtained.get((commit.sha, backend)) or cache.get(
                commit.sha, backend, local_fingerprint(backend), selection
            )
            if measurement is None:
                candidates = cache.candidates(commit.sha, backend, selection)
                measurement = candidates[0] if len(candidates) == 1 else None
            if measurement is None:
                missing.append(f"{commit.short} ({backend})")
            else:
                found[(commit.sha, backend)] = measurement
    if missing:
        listed = ", ".join(missing)
        if shard:
            print(f"kerasperf prs: the table needs the other shards: merge the caches ({listed})")
            return 0
        raise HistoryError(f"missing from the caches {', '.join(map(str, args.cache))}: {listed}")
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
