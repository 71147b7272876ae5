"""``kerasperf ab``: is HEAD slower than BASE?  Interleaved processes and a statistical verdict.

Two layers:

- the statistics (``compare``), pure and typed: two samples of per-round
  latencies, the two-sided Mann-Whitney U p-value, the effect as the ratio
  of medians head / base with a 95 % percentile-bootstrap confidence
  interval (resampling each sample independently, fixed seed), and asv's
  rule for a decision: "slower" or "faster" only when BOTH p < ``alpha``
  and the effect is at least ``min_effect`` (relative), else "no change";
- the measurement (``measure``): both commits exported once from the
  repository (``commits.export``, no work tree touched), then ``processes``
  fresh pytest processes per side run the one test with
  ``--kerasperf-rounds=R``, alternating base, head, base, head, ... so that
  drift of the machine hits both sides.  Every round's time comes from
  pytest-benchmark's own ``--benchmark-json`` with ``--benchmark-save-data``
  (``benchmarks[i].stats.data``); the counts come from ``--kerasperf-json``
  and are compared exactly (Δ calls and the entry points of the change).

Rounds of all processes of one side are pooled into one sample, as asv does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from pytest_kerasperf.culprits import EntryPoint, entry_points, signed
from pytest_kerasperf.history import commits as history_commits
from pytest_kerasperf.history import sweep
from pytest_kerasperf.history.commits import HistoryError
from pytest_kerasperf.record import BACKENDS, Record

Decision = Literal["slower", "faster", "no change"]
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_EFFECT = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
DEFAULT_ROUNDS = 25
DEFAULT_PROCESSES = 3
AB_SCHEMA = "kerasperf-ab/1"

Log = Callable[[str], None]


# --------------------------------------------------------------------------- the statistics


@dataclass(frozen=True)
class ABVerdict:
    """The comparison of two latency samples (any unit, the same for both)."""

    base_n: int
    head_n: int
    base_median: float
    head_median: float
    ratio: float  # head median / base median
    ci_low: float  # of the ratio
    ci_high: float
    confidence: float
    p_value: float  # Mann-Whitney U, two-sided
    alpha: float
    min_effect: float  # relative, 0.05: 5 %
    decision: Decision

    @property
    def effect(self) -> float:
        """The relative change of the median, head against base: +0.10 is 10 % slower."""
        return self.ratio - 1.0

    def describe(self) -> str:
        pct = self.confidence * 100
        return (
            f"{self.decision}: head/base median {self.ratio:.3f} ({self.effect:+.1%}), "
            f"{pct:g} % CI [{self.ci_low:.3f}, {self.ci_high:.3f}], "
            f"Mann-Whitney p = {self.p_value:.2g} (decides at p < {self.alpha:g} and "
            f"|effect| ≥ {self.min_effect:.0%}; n = {self.base_n} base, {self.head_n} head)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "base_n": self.base_n,
            "head_n": self.head_n,
            "base_median": self.base_median,
            "head_median": self.head_median,
            "ratio": self.ratio,
            "effect": self.effect,
            "ci": [self.ci_low, self.ci_high],
            "confidence": self.confidence,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "decision": self.decision,
        }


def bootstrap_ratio_ci(
    base: Sequence[float],
    head: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of median(head) / median(base), each sample resampled alone."""
    rng = np.random.default_rng(seed)
    a = np.asarray(base, dtype=float)
    b = np.asarray(head, dtype=float)
    base_medians = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    head_medians = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    ratios = head_medians / base_medians
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(low), float(high)


def compare(
    base: Sequence[float],
    head: Sequence[float],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ABVerdict:
    """Is ``head`` slower or faster than ``base``?  Both p < alpha and |effect| >= min_effect."""
    if len(base) < 2 or len(head) < 2:
        raise ValueError("each sample needs at least 2 timings")
    if min(min(base), min(head)) <= 0:
        raise ValueError("latencies must be positive")
    if not 0 < alpha < 1 or min_effect < 0 or not 0 < confidence < 1:
        raise ValueError("alpha and confidence in (0, 1), min_effect >= 0")
    base_median = float(np.median(base))
    head_median = float(np.median(head))
    ratio = head_median / base_median
    p_value = float(stats.mannwhitneyu(head, base, alternative="two-sided").pvalue)
    low, high = bootstrap_ratio_ci(
        base, head, confidence=confidence, resamples=resamples, seed=seed
    )
    decision: Decision = "no change"
    if p_value < alpha and abs(ratio - 1.0) >= min_effect:
        decision = "slower" if ratio > 1.0 else "faster"
    return ABVerdict(
        base_n=len(base),
        head_n=len(head),
        base_median=base_median,
        head_median=head_median,
        ratio=ratio,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        p_value=p_value,
        alpha=alpha,
        min_effect=min_effect,
        decision=decision,
    )


# --------------------------------------------------------------------------- exact counts


@dataclass(frozen=True)
class CountsDiff:
    base_calls: int
    head_calls: int
    entry_points: tuple[EntryPoint, ...]

    @property
    def calls_delta(self) -> int:
        return self.head_calls - self.base_calls

    def lines(self, top: int = 5) -> list[str]:
        if not self.calls_delta and not self.entry_points:
            return [f"calls per call: {self.base_calls:,} on both (exact)"]
        lines = [
            f"calls per call: {self.base_calls:,} → {self.head_calls:,} "
            f"({signed(self.calls_delta)}, exact)"
        ]
        lines += [f"  {point.describe()}" for point in self.entry_points[:top]]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "base_calls": self.base_calls,
            "head_calls": self.head_calls,
            "calls_delta": self.calls_delta,
            "entry_points": [asdict(point) for point in self.entry_points],
        }


def counts_diff(base: Record, head: Record) -> CountsDiff:
    points = entry_points(
        base.calls_by_function, base.call_edges, head.calls_by_function, head.call_edges
    )
    return CountsDiff(base.calls, head.calls, points)


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class ProcessRun:
    """One pytest process on one side: every round's time (ms) and the test's record."""

    side: Literal["base", "head"]
    times_ms: tuple[float, ...]
    record: Record


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

    def samples(self, side: str) -> list[float]:
        return [t for run in self.runs if run.side == side for t in run.times_ms]

    def lines(self) -> list[str]:
        v = self.verdict
        per_process = {
            side: ", ".join(
                f"{float(np.median(run.times_ms)):.2f}" for run in self.runs if run.side == side
            )
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


def _quiet(_: str) -> None:
    return None


def run_process(
    tree: Path,
    target: str,
    backend: str,
    rounds: int,
    scratch: Path,
    *,
    timeout_s: float = sweep.DEFAULT_TIMEOUT_S,
    python: str = sys.executable,
) -> tuple[list[float], Record, str | None]:
    """One fresh pytest process timing ``target`` against the Keras in ``tree``.

    Returns every round's time in ms, the test's record and the Keras version.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    results, timings, probe = (
        scratch / "results.json",
        scratch / "benchmark.json",
        scratch / "probe.json",
    )
    argv = [
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        sweep.__name__,
        "-q",
        "-rs",
        "--kerasperf-update-baseline",
        f"--kerasperf-baseline-dir={scratch / 'baselines'}",
        f"--kerasperf-json={results}",
        f"--kerasperf-rounds={rounds}",
        f"--benchmark-json={timings}",
        "--benchmark-save-data",
        target,
    ]
    env = sweep.measuring_env(backend, tree, scratch, probe)
    try:
        proc = subprocess.run(
            argv,
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise HistoryError(f"{target}: timed out after {timeout_s:g} s") from None
    if proc.returncode != 0 or not results.is_file() or not timings.is_file():
        raise HistoryError(sweep.error_line(proc.stdout, proc.stderr, proc.returncode))
    probed = json.loads(probe.read_text(encoding="utf-8")) if probe.is_file() else {}
    keras_file = probed.get("keras_file")
    if keras_file is None or not Path(keras_file).resolve().is_relative_to(tree.resolve()):
        raise HistoryError(f"keras was imported from {keras_file}, not from the commit's tree")
    measured = json.loads(results.read_text(encoding="utf-8"))["results"]
    benchmarks = json.loads(timings.read_text(encoding="utf-8"))["benchmarks"]
    if len(measured) != 1 or len(benchmarks) != 1:
        raise HistoryError(
            f"{target} ran {len(measured)} tests and timed {len(benchmarks)}: select exactly one "
            "(e.g. test_standard.py::test_lm_forward[eager])"
        )
    data = benchmarks[0]["stats"].get("data") or []
    if len(data) < 2:
        raise HistoryError(f"{target}: fewer than 2 timed rounds (is --rounds > 1?)")
    record = Record.from_json(measured[0]["record"])
    version = probed.get("keras_version")
    return [float(t) * 1000.0 for t in data], record, None if version is None else str(version)


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
    timeout_s: float = sweep.DEFAULT_TIMEOUT_S,
    cwd: Path | None = None,
    log: Log = _quiet,
) -> ABResult:
    """Export ``base`` and ``head`` of ``repo`` (a ``git.Repo``), time ``test`` interleaved."""
    if rounds < 2 or processes < 1:
        raise HistoryError("give --rounds-per-process >= 2 and --processes >= 1")
    base_sha = history_commits.resolve(repo, base)
    head_sha = history_commits.resolve(repo, head)
    runs: list[ProcessRun] = []
    keras: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="kerasperf-ab-") as scratch_name:
        scratch = Path(scratch_name)
        trees: dict[str, Path] = {}
        targets: dict[str, str] = {}
        for side, sha in (("base", base_sha), ("head", head_sha)):
            tree = history_commits.export(repo, sha, scratch / side / "tree")
            if not history_commits.has_keras_package(tree):
                raise HistoryError(f"{sha[:10]}: no keras/__init__.py at the top of the tree")
            found, missing = sweep.resolve_tests([test], tree, cwd or Path.cwd())
            if missing:
                raise HistoryError(f"test not found in {side} {sha[:10]}: {test}")
            trees[side], targets[side] = tree, found[0]
        for index in range(processes):
            for side in ("base", "head"):
                times, record, version = run_process(
                    trees[side],
                    targets[side],
                    backend,
                    rounds,
                    scratch / side / f"run-{index}",
                    timeout_s=timeout_s,
                )
                keras[side] = version
                runs.append(ProcessRun("base" if side == "base" else "head", tuple(times), record))
                log(f"{side} process {index + 1}/{processes}: median {np.median(times):.2f} ms")
    base_runs = [run for run in runs if run.side == "base"]
    head_runs = [run for run in runs if run.side == "head"]
    verdict = compare(
        [t for run in base_runs for t in run.times_ms],
        [t for run in head_runs for t in run.times_ms],
        alpha=alpha,
        min_effect=min_effect,
    )
    return ABResult(
        base=base_sha,
        head=head_sha,
        test=test,
        backend=backend,
        rounds=rounds,
        processes=processes,
        runs=tuple(runs),
        verdict=verdict,
        counts=counts_diff(base_runs[0].record, head_runs[0].record),
        keras=keras,
    )


# --------------------------------------------------------------------------- the command


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "ab",
        help="time one test at BASE and HEAD in interleaved processes; a statistical verdict",
        description="Export BASE and HEAD of a Keras repository, run one test in P fresh "
        "pytest processes per side alternating base, head, base, head, ..., each timing R "
        "rounds, and judge latency with a two-sided Mann-Whitney U test and the ratio of "
        "medians with a 95 %% bootstrap interval: slower/faster only when p < alpha AND the "
        "change is at least --min-effect (as asv). Call counts are compared exactly. Exit 1 "
        "when HEAD is slower (docs/history.md).",
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
    parser.add_argument(
        "--rounds-per-process",
        type=int,
        default=DEFAULT_ROUNDS,
        metavar="R",
        help=f"timed rounds in each process ({DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=DEFAULT_PROCESSES,
        metavar="P",
        help=f"processes per side ({DEFAULT_PROCESSES})",
    )
    parser.add_argument(
        "--alpha", type=float, default=DEFAULT_ALPHA, help=f"p-value level ({DEFAULT_ALPHA})"
    )
    parser.add_argument(
        "--min-effect",
        type=float,
        default=DEFAULT_MIN_EFFECT,
        metavar="FRACTION",
        help=f"smallest relative change reported ({DEFAULT_MIN_EFFECT})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=sweep.DEFAULT_TIMEOUT_S,
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
            rounds=args.rounds_per_process,
            processes=args.processes,
            alpha=args.alpha,
            min_effect=args.min_effect,
            timeout_s=args.timeout,
            log=_log,
        )
    except (HistoryError, ValueError) as error:
        print(f"kerasperf ab: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(result.lines()))
    if args.json is not None:
        write_atomic(args.json, json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
    return 1 if result.verdict.decision == "slower" else 0
