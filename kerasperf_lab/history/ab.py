"""``kerasperf ab``: is HEAD slower than BASE?  The parsers and the command.

BASE and HEAD exported (``interleave.prepare_side``), one test timed in pairs
of interleaved processes (``interleave.measure_interleaved``: one pair per
CPU at a time), and judged by ``stats`` (latency: the t
interval over the pairs of the paired-round ratio, a minimum effect, applied
after each wave of pairs by a sequential ``stats.Plan``; counts: exact).
``add_statistics_arguments`` and ``statistics_of`` serve ``kerasperf bisect
--metric latency`` as well.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from kerasperf_lab.history.cache import write_json
from kerasperf_lab.history.sweep import add_backend, add_repo, add_timeout, logger
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab import result as ab_result
from pytest_kerasperf.ab.abplan import ABSettings, stopper
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.interleave import Interleaved, measure_interleaved, prepare_side
from pytest_kerasperf.ab.runner import Log, quiet
from pytest_kerasperf.ab.stats import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET_S,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_PAIRS,
    DEFAULT_PROCESSES,
    DEFAULT_ROUNDS,
    ABVerdict,
    CountsDiff,
    ProcessRun,
    Side,
    decide_runs,
)
from pytest_kerasperf.formatting import plural

AB_SCHEMA: Literal["kerasperf-ab/3"] = "kerasperf-ab/3"


@dataclass(frozen=True)
class ABResult:
    """What ``measure`` found: the file ``--json`` writes, the verdict, and each process's run
    with its record."""

    file: ABFile
    verdict: ABVerdict
    runs: tuple[ProcessRun, ...]

    def lines(self) -> list[str]:
        f, v = self.file, self.verdict
        per_process = {
            side: ", ".join(
                f"{statistics.median(run.times_ms):.2f}" for run in f.runs if run.side == side
            )
            for side in ("base", "head")
        }
        stopped = (
            f", stopped early (at most {f.max_processes})" if f.processes < f.max_processes else ""
        )
        return [
            f"kerasperf ab {f.base[:10]}..{f.head[:10]}: {f.test} on {f.backend}, "
            f"{plural(f.processes, 'pair')} of processes × {f.rounds} rounds, in lockstep, "
            f"{plural(f.parallel, 'pair')} at once{stopped}, {f.seconds:.0f} s",
            f"base median {v.base_median:.3f} ms (per process: {per_process['base']})",
            f"head median {v.head_median:.3f} ms (per process: {per_process['head']})",
            f"latency: {v.describe()}",
            *f.counts.lines(),
        ]


class TimedRun(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One process's times (its record stays out of the file)."""

    side: Side
    pair: int | None
    times_ms: tuple[float, ...]


class ABFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``kerasperf ab --json`` (schema ``kerasperf-ab/3``)."""

    base: str
    head: str
    test: str
    backend: str
    rounds: int
    processes: int  # pairs measured
    max_processes: int
    min_pairs: int
    sequential: bool
    parallel: int
    seconds: float
    keras: dict[str, str | None]
    verdict: ab_result.ABResult
    counts: CountsDiff
    runs: tuple[TimedRun, ...]
    schema: Literal["kerasperf-ab/3"] = AB_SCHEMA


def interleaved(
    trees: Mapping[Side, Path],
    targets: Mapping[Side, Sequence[str]],
    backend: str,
    settings: ABSettings,
    scratch: Path,
    log: Log,
    *,
    seed: int | None = None,
) -> Interleaved:
    """``measure_interleaved`` by ``settings`` and their plan (``measure``, ``bisect_latency``)."""
    plan = settings.plan()
    return measure_interleaved(
        trees,
        targets,
        backend,
        settings.rounds,
        settings.processes,
        scratch,
        timeout_s=settings.timeout_s,
        log=log,
        parallel=plan.wave,
        stop=stopper(plan),
        seed=seed,
        budget_s=settings.budget_s,
    )


def measure(
    repo: Any,
    base: str,
    head: str,
    test: str,
    backend: str,
    settings: ABSettings | None = None,
    *,
    seed: int | None = None,
    cwd: Path | None = None,
    log: Log = quiet,
) -> ABResult:
    """Export ``base`` and ``head`` of ``repo`` (a ``git.Repo``), time ``test`` in up to
    ``settings.processes`` pairs of processes, ``settings.parallel`` pairs at once, stopping
    early where the sequential rule allows."""
    settings = settings or ABSettings()
    plan = settings.plan()
    shas: dict[Side, str] = {
        "base": history_commits.resolve(repo, base),
        "head": history_commits.resolve(repo, head),
    }
    with tempfile.TemporaryDirectory(prefix="kerasperf-ab-") as scratch_name:
        scratch = Path(scratch_name)
        trees: dict[Side, Path] = {}
        targets: dict[Side, list[str]] = {}
        for side, sha in shas.items():
            trees[side], targets[side] = prepare_side(
                repo, sha, side, [test], scratch, cwd or Path.cwd()
            )
        measured = interleaved(trees, targets, backend, settings, scratch, log, seed=seed)
    keys = measured.keys("base") | measured.keys("head")
    if len(keys) != 1:
        raise HistoryError(
            f"{test} ran {len(keys)} tests: select exactly one "
            "(e.g. test_standard.py::test_lm_forward[eager])"
        )
    runs = measured.runs(keys.pop())
    verdict, counts = decide_runs(runs, plan)
    file = ABFile(
        base=shas["base"],
        head=shas["head"],
        test=test,
        backend=backend,
        rounds=settings.rounds,
        processes=measured.pairs,
        max_processes=plan.max_pairs,
        min_pairs=plan.min_pairs,
        sequential=plan.sequential,
        parallel=measured.parallel,
        seconds=measured.seconds,
        keras=measured.keras,
        verdict=verdict.result(),
        counts=counts,
        runs=tuple(TimedRun(run.side, run.pair, run.times_ms) for run in runs),
    )
    return ABResult(file, verdict, runs)


# --------------------------------------------------------------------------- the command


def add_statistics_arguments(parser: argparse.ArgumentParser, what: str = "") -> None:
    """--rounds-per-process, --processes, --alpha, --min-effect (``ab`` and latency bisect)."""
    parser.add_argument(
        "--rounds-per-process",
        type=int,
        default=DEFAULT_ROUNDS,
        metavar="R",
        help=f"{what}timed rounds in each process ({DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=DEFAULT_PROCESSES,
        metavar="P",
        help=f"{what}the most pairs of processes ({DEFAULT_PROCESSES}); fewer where the "
        "sequential rule stops early",
    )
    parser.add_argument(
        "--min-pairs",
        type=int,
        default=DEFAULT_MIN_PAIRS,
        metavar="N",
        help=f"{what}pairs before the first look ({DEFAULT_MIN_PAIRS})",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=None,
        metavar="W",
        help=f"{what}pairs at once, each on its own CPU (default: one per allowed CPU)",
    )
    parser.add_argument(
        "--fixed",
        action="store_true",
        help=f"{what}measure all P pairs and decide once (no early stop)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help=f"{what}no wave of pairs starts that would end past this many seconds of "
        f"measuring, at the pace of the slowest wave so far ({DEFAULT_BUDGET_S:g}; 0: none)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"{what}the chance of a wrong verdict over all looks ({DEFAULT_ALPHA})",
    )
    parser.add_argument(
        "--min-effect",
        type=float,
        default=DEFAULT_MIN_EFFECT,
        metavar="FRACTION",
        help=f"{what}smallest relative change that counts ({DEFAULT_MIN_EFFECT})",
    )


def statistics_of(args: argparse.Namespace) -> ABSettings:
    """The settings of ``measure`` / ``bisect_latency`` that the arguments above give."""
    return ABSettings(
        rounds=args.rounds_per_process,
        processes=args.processes,
        alpha=args.alpha,
        min_effect=args.min_effect,
        parallel=args.parallel,
        sequential=not args.fixed,
        min_pairs=args.min_pairs,
        budget_s=args.budget or None,
        timeout_s=args.timeout,
    )


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "ab",
        help="time one test at BASE and HEAD in interleaved processes; a statistical verdict",
        description="Export BASE and HEAD of a Keras repository, run one test in up to P "
        "pairs of fresh pytest processes, a base and a head timed in lockstep (one round of "
        "each per cycle, in a random order, both on one CPU; one pair per CPU at once), each "
        "timing R rounds, and judge latency: slower/faster only when the t interval over the "
        "pairs of the median paired-round ratio excludes 1 at confidence 1 - alpha/looks and "
        "the change is at least --min-effect. After each wave of pairs (from --min-pairs on) "
        "it stops once the verdict is decided or the interval rules out --min-effect. Call "
        "counts are compared exactly. Exit 1 when HEAD is slower (docs/history.md).",
    )
    parser.add_argument("base", metavar="BASE")
    parser.add_argument("head", metavar="HEAD")
    add_repo(parser)
    parser.add_argument(
        "--test",
        required=True,
        metavar="NODEID",
        help="one test, found in the commit's tree, in ., or in the bundled suite "
        "(e.g. test_standard.py::test_lm_forward[eager])",
    )
    add_backend(parser)
    add_statistics_arguments(parser)
    add_timeout(parser, "give up on one process after this long")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the result as JSON")


_log = logger("kerasperf ab")


def main(args: argparse.Namespace) -> int:
    from pytest_kerasperf import backends

    try:
        result = measure(
            history_commits.open_repo(args.repo),
            args.base,
            args.head,
            args.test,
            args.backend or backends.active_backend(),
            statistics_of(args),
            log=_log,
        )
    except (HistoryError, ValueError) as error:
        print(f"kerasperf ab: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(result.lines()))
    if args.json is not None:
        write_json(args.json, result.file)
    return 1 if result.verdict.decision == "slower" else 0
