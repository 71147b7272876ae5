"""``kerasperf sweep`` and ``kerasperf sweep-merge``: the parsers and the command.

Measure each first-parent commit of a range of a Keras repository on each
backend, cache it, and say what each merge did (docs/history.md).  The
layers it connects, each usable alone: ``runner`` (a commit's suite in a
fresh pytest process, with ``probe`` loaded there), ``cache`` (what is
measured, shards), ``steps`` (what moved, pure), ``render`` (terminal,
Markdown, JSON) and ``charts`` (PNG, imported only for ``--charts``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from kerasperf_lab.history.cache import (
    DEFAULT_CACHE,
    Cache,
    gather,
    parse_shard,
    run_sweep,
    write_json,
)
from kerasperf_lab.history.render import markdown, terminal_lines
from kerasperf_lab.history.steps import build_table
from pytest_kerasperf import backends
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.runner import DEFAULT_TIMEOUT_S, RunSettings, Selection
from pytest_kerasperf.baseline import write_atomic
from pytest_kerasperf.record import BACKENDS


def add_parsers(commands: Any) -> None:
    """``sweep`` and ``sweep-merge`` on the ``kerasperf`` command's sub-parsers."""
    sweep = commands.add_parser(
        "sweep",
        help="measure the first-parent commits A..B of a Keras repository, one table per PR",
        description="Measure each first-parent commit of A..B (and A) of a Keras repository on "
        "each backend, each in its own pytest process with the commit's Keras on PYTHONPATH, "
        "and print per commit the change of calls, graph breaks and latency and where the "
        "calls changed (docs/history.md). Measurements are cached: a rerun measures only "
        "what is new.",
    )
    _common_arguments(sweep)
    sweep.add_argument(
        "--shard",
        metavar="K/N",
        help="measure only the commits i (0: A) with i %% N == K-1, into the cache; merge the "
        "shards' caches with `kerasperf sweep-merge`",
    )
    sweep.add_argument(
        "--merge-only",
        action="store_true",
        help="measure nothing: build the table from the caches (as sweep-merge)",
    )
    add_retry_and_timeout(sweep)
    merge = commands.add_parser(
        "sweep-merge",
        help="build a sweep's table from the caches of its shards, measuring nothing",
        description="Build the table of `kerasperf sweep` from cache directories (e.g. one per "
        "shard) without measuring; an error lists what is missing.",
    )
    _common_arguments(merge)


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("range", metavar="A..B", help="the commits: A and A..B, first parent")
    add_repo_and_backends(parser)
    add_measuring_arguments(
        parser,
        tests_help="tests to run at each commit, found in the commit's tree, in ., or in the "
        "bundled suite (default: the bundled suite)",
    )
    add_output_arguments(parser)
    parser.add_argument("--charts", type=Path, metavar="DIR", help="draw PNG charts into DIR")
    parser.add_argument(
        "--changed-only", action="store_true", help="show only rows where something changed"
    )
    parser.add_argument(
        "--entry-points",
        type=int,
        default=3,
        metavar="N",
        help="entry points of a calls change shown per row (3)",
    )


def add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo", type=Path, default=Path("."), help="the Keras repository, bare or not (.)"
    )


def add_backend(parser: argparse.ArgumentParser) -> None:
    """The one ``--backend`` of bisect and ab."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help="the backend (default: $KERAS_BACKEND, else Keras's default)",
    )


def add_timeout(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS", help=help
    )


def add_repo_and_backends(parser: argparse.ArgumentParser) -> None:
    """``--repo`` and ``--backend``, as sweep and prs take them."""
    add_repo(parser)
    parser.add_argument(
        "--backend",
        nargs="+",
        choices=BACKENDS,
        metavar="BACKEND",
        help=f"backends to measure, among {', '.join(BACKENDS)} (default: $KERAS_BACKEND, "
        "else Keras's default)",
    )


def add_measuring_arguments(parser: argparse.ArgumentParser, *, tests_help: str) -> None:
    """What is measured at each commit (``selection_of``) and where it is cached."""
    parser.add_argument("--tests", nargs="+", metavar="NODEID", default=[], help=tests_help)
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k at each commit")
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        metavar="N",
        help="timed calls per test (--kerasperf-rounds; default 0: counts only, no latency)",
    )
    add_cache(
        parser, f"cache directories; measurements are written into the first ({DEFAULT_CACHE})"
    )


def add_cache(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument(
        "--cache", nargs="+", type=Path, default=[DEFAULT_CACHE], metavar="DIR", help=help
    )


def add_retry_and_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retry-failed", action="store_true", help="measure again what is cached as failed"
    )
    add_timeout(parser, f"give up on one (commit, backend) after this long ({DEFAULT_TIMEOUT_S:g})")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--markdown", metavar="PATH", help="also write the table as Markdown ('-': stdout)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the table as JSON")


def selection_of(args: argparse.Namespace) -> Selection:
    if args.rounds < 0:
        raise HistoryError(f"--rounds {args.rounds}: give a non-negative number")
    return Selection(tests=tuple(args.tests), keyword=args.keyword, rounds=args.rounds)


def backends_of(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(dict.fromkeys(args.backend or [backends.active_backend()]))


def logger(command: str) -> Callable[[str], None]:
    """A command's progress lines, on stderr: ``kerasperf sweep: ...``."""
    return lambda line: print(f"{command}: {line}", file=sys.stderr, flush=True)


def run_command(command: str, body: Callable[[argparse.Namespace], int], args: Any) -> int:
    """``body(args)``; a HistoryError or an OSError is one line on stderr and exit 2."""
    try:
        return body(args)
    except HistoryError as error:
        print(f"{command}: error: {error}", file=sys.stderr)
    except OSError as error:
        print(f"{command}: error: {error.filename}: {error.strerror}", file=sys.stderr)
    return 2


_stderr = logger("kerasperf sweep")


def main(args: argparse.Namespace) -> int:
    return run_command(f"kerasperf {args.command}", _main, args)


def _main(args: argparse.Namespace) -> int:
    from kerasperf_lab.history import charts

    merge_only = args.command == "sweep-merge" or args.merge_only
    shard = parse_shard(args.shard) if getattr(args, "shard", None) else None
    if shard and merge_only:
        raise HistoryError("--shard measures; --merge-only and sweep-merge do not")
    selection = selection_of(args)
    backends_ = backends_of(args)
    repo = history_commits.open_repo(args.repo)
    commits = history_commits.first_parent_commits(repo, args.range)
    cache = Cache(args.cache)
    run = None
    if not merge_only:
        run, _ = run_sweep(
            repo,
            commits,
            backends_,
            selection,
            cache,
            RunSettings(timeout_s=args.timeout),
            shard=shard,
            retry_failed=args.retry_failed,
            log=_stderr,
        )
    found, environments, missing = gather(commits, backends_, selection, cache)
    scope = f"{len(commits)} commits × {len(backends_)} backend{'s' if len(backends_) > 1 else ''}"
    if shard:
        scope += f" (shard {shard[0]}/{shard[1]})"
    if run is not None:
        print(
            f"kerasperf sweep: {scope}: measured: {run.measured}, from cache: "
            f"{run.from_cache}, failed: {run.failed}"
        )
    if missing:
        listed = ", ".join(missing)
        if shard:
            print(f"kerasperf sweep: the table needs the other shards: merge the caches ({listed})")
            return 0
        raise HistoryError(f"missing from the caches {', '.join(map(str, args.cache))}: {listed}")
    table = build_table(
        args.range, commits, backends_, selection, found, environments, top=args.entry_points
    )
    written: list[Path] = []
    if args.charts is not None:
        try:
            written = charts.write(table, args.charts)
        except charts.ChartsUnavailable as error:
            raise HistoryError(str(error)) from None
    shown = [p.as_posix() for p in written]
    if args.markdown and args.markdown != "-":
        where = Path(args.markdown).resolve().parent
        shown = [Path(os.path.relpath(p.resolve(), where)).as_posix() for p in written]
    text = markdown(table, changed_only=args.changed_only, charts=shown)
    if args.markdown == "-":
        print(text)
    else:
        print("\n".join(terminal_lines(table, changed_only=args.changed_only)))
        if args.markdown:
            write_atomic(Path(args.markdown), text)
    for path in written:
        print(f"chart: {path}", file=sys.stderr if args.markdown == "-" else sys.stdout)
    if args.json is not None:
        write_json(args.json, replace(table, run=run, repo=str(args.repo)))
    return 0
