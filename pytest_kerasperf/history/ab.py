"""``kerasperf ab``: is HEAD slower than BASE?  The parsers and the command.

BASE and HEAD exported (``interleave.prepare_side``), one test timed in pairs
of interleaved processes (``interleave.measure_interleaved``), and judged by
``stats`` (latency: Mann-Whitney U, the t interval of the ratio over the
pairs, a minimum effect; counts: exact).  ``add_statistics_arguments`` and
``statistics_of`` serve ``kerasperf bisect --metric latency`` as well.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_kerasperf.history import commits as history_commits
from pytest_kerasperf.history.commits import HistoryError
from pytest_kerasperf.history.interleave import measure_interleaved, prepare_side
from pytest_kerasperf.history.runner import DEFAULT_TIMEOUT_S, Log, quiet
from pytest_kerasperf.history.stats import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    DEFAULT_PROCESSES,
    DEFAULT_ROUNDS,
    ABVerdict,
    CountsDiff,
    ProcessRun,
    Side,
    decide_runs,
)
from pytest_kerasperf.record import BACKENDS

AB_SCHEMA = "kerasperf-ab/2"


@dataclass(frozen=True)
class ABResult:
    base: str
    head: str
    test: str
    backend: str
    rounds: int
    processes: int
    runs: tuple[ProcessRun, ...]
    verdict: ABVerdict
    counts: CountsDiff
    keras: dict[str, str | None] = field(default_factory=dict)

    def side(self, side: Side) -> list[tuple[float, ...]]:
        return [run.times_ms for run in self.runs if run.side == side]

    def lines(self) -> list[str]:
        v = self.verdict
        per_process = {
            side: ", ".join(f"{statistics.median(times):.2f}" for times in self.side(side))
            for side in ("base", "head")
        }
        return [
            f"kerasperf ab {self.base[:10]}..{self.head[:10]}: {self.test} on {self.backend}, "
            f"{self.processes} processes × {self.rounds} rounds per side, interleaved",
            f"base median {v.base_median:.3f} ms (per process: {per_process['base']})",
            f"head median {v.head_median:.3f} ms (per process: {per_process['head']})",
            f"latency: {v.describe()}",
            *self.counts.lines(),
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": AB_SCHEMA,
            "base": self.base,
            "head": self.head,
            "test": self.test,
            "backend": self.backend,
            "rounds": self.rounds,
            "processes": self.processes,
            "keras": self.keras,
            "verdict": self.verdict.to_json(),
            "counts": self.counts.to_json(),
            "runs": [{"side": run.side, "times_ms": list(run.times_ms)} for run in self.runs],
        }


def measure(
    repo: Any,
    base: str,
    head: str,
    test: str,
    backend: str,
    *,
    rounds: int = DEFAULT_ROUNDS,
    processes: int = DEFAULT_PROCESSES,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    cwd: Path | None = None,
    log: Log = quiet,
) -> ABResult:
    """Export ``base`` and ``head`` of ``repo`` (a ``git.Repo``), time ``test`` interleaved."""
    if rounds < 2 or processes < 1:
        raise HistoryError("give --rounds-per-process >= 2 and --processes >= 1")
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
        measured = measure_interleaved(
            trees, targets, backend, rounds, processes, scratch, timeout_s=timeout_s, log=log
        )
    keys = measured.keys("base") | measured.keys("head")
    if len(keys) != 1:
        raise HistoryError(
            f"{test} ran {len(keys)} tests: select exactly one "
            "(e.g. test_standard.py::test_lm_forward[eager])"
        )
    runs = measured.runs(keys.pop())
    verdict, counts = decide_runs(runs, alpha=alpha, min_effect=min_effect)
    return ABResult(
        base=shas["base"],
        head=shas["head"],
        test=test,
        backend=backend,
        rounds=rounds,
        processes=processes,
        runs=runs,
        verdict=verdict,
        counts=counts,
        keras=measured.keras,
    )


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
        help=f"{what}processes per side ({DEFAULT_PROCESSES})",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"{what}p-value level ({DEFAULT_ALPHA})",
    )
    parser.add_argument(
        "--min-effect",
        type=float,
        default=DEFAULT_MIN_EFFECT,
        metavar="FRACTION",
        help=f"{what}smallest relative change that counts ({DEFAULT_MIN_EFFECT})",
    )


def statistics_of(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``measure`` / ``bisect_latency`` that the arguments above give."""
    return {
        "rounds": args.rounds_per_process,
        "processes": args.processes,
        "alpha": args.alpha,
        "min_effect": args.min_effect,
        "timeout_s": args.timeout,
    }


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "ab",
        help="time one test at BASE and HEAD in interleaved processes; a statistical verdict",
        description="Export BASE and HEAD of a Keras repository, run one test in P pairs of "
        "fresh pytest processes, a base and a head timed in lockstep (one round each in "
        "turn), each timing R rounds, and judge latency: slower/faster only when a two-sided "
        "Mann-Whitney U test of the rounds gives p < alpha, the 95 %% t interval of the "
        "head/base ratio over the pairs' medians excludes 1, and the change is at least "
        "--min-effect. Call counts are compared exactly. Exit 1 when HEAD is slower "
        "(docs/history.md).",
    )
    parser.add_argument("base", metavar="BASE")
    parser.add_argument("head", metavar="HEAD")
    parser.add_argument(
        "--repo", type=Path, default=Path("."), help="the Keras repository, bare or not (.)"
    )
    parser.add_argument(
        "--test",
        required=True,
        metavar="NODEID",
        help="one test, found in the commit's tree, in ., or in the bundled suite "
        "(e.g. test_standard.py::test_lm_forward[eager])",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help="the backend (default: $KERAS_BACKEND, else Keras's default)",
    )
    add_statistics_arguments(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="give up on one process after this long",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the result as JSON")


def _log(line: str) -> None:
    print(f"kerasperf ab: {line}", file=sys.stderr, flush=True)


def main(args: argparse.Namespace) -> int:
    from pytest_kerasperf import backends
    from pytest_kerasperf.baseline import write_atomic

    try:
        repo = history_commits.open_repo(args.repo)
        result = measure(
            repo,
            args.base,
            args.head,
            args.test,
            args.backend or backends.active_backend(),
            log=_log,
            **statistics_of(args),
        )
    except (HistoryError, ValueError) as error:
        print(f"kerasperf ab: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(result.lines()))
    if args.json is not None:
        write_atomic(args.json, json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
    return 1 if result.verdict.decision == "slower" else 0
