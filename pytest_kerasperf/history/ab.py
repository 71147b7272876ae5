"""``kerasperf ab``: is HEAD slower than BASE?  Interleaved processes and a statistical verdict.

Two layers:

- the statistics (``compare``), pure and typed, on the per-round latencies
  of each process of each side (a two-level sample: processes, then rounds
  inside a process).  Each process contributes its median; the effect is
  the geometric mean of head / base over the pairs of processes, and its
  confidence interval the paired t interval of the pairs' log ratios (with
  3 pairs, t has 2 degrees of freedom: 4.30 at 95 %).  The process, not
  the round, is the unit: rounds of one process share its speed, and
  treating 3 x 20 rounds as 60 independent timings raised an alarm in 4 of
  20 A/A runs, and a bootstrap of processes then rounds in 1 of 14 here.
  The decision is "slower" or "faster" only when all three hold: the
  two-sided Mann-Whitney U test of the pooled rounds gives p < ``alpha``
  (asv's test), the interval excludes 1, and the effect is at least
  ``min_effect`` (asv's minimum);
- the measurement (``measure_interleaved``): the Keras of each side in a
  tree (``commits.export``, no work tree touched, or the Keras under test),
  then ``processes`` pairs of fresh pytest processes, a base and a head
  started together and timed in lockstep (``measure.lockstep``: base round,
  head round, base round, ..., never both at once), so that drift of the
  machine hits both sides alike.  Every round's time comes from
  pytest-benchmark's own ``--benchmark-json`` with ``--benchmark-save-data``
  (``benchmarks[i].stats.data``); the counts come from ``--kerasperf-json``
  and are compared exactly (Δ calls and the entry points of the change).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_kerasperf.baseline import test_key
from pytest_kerasperf.culprits import EntryPoint, entry_points, signed
from pytest_kerasperf.history import commits as history_commits
from pytest_kerasperf.history import sweep
from pytest_kerasperf.history.commits import HistoryError
from pytest_kerasperf.measure import lockstep
from pytest_kerasperf.record import BACKENDS, Record

Decision = Literal["slower", "faster", "no change"]
Side = Literal["base", "head"]
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_EFFECT = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_ROUNDS = 20
DEFAULT_PROCESSES = 3
AB_SCHEMA = "kerasperf-ab/2"

Log = Callable[[str], None]
Samples = Sequence[Sequence[float]]  # per process, its rounds


# --------------------------------------------------------------------------- the statistics


@dataclass(frozen=True)
class ABVerdict:
    """The comparison of two two-level latency samples (any unit, the same for both)."""

    base_n: int  # rounds, all processes
    head_n: int
    base_processes: int
    head_processes: int
    base_median: float  # pooled
    head_median: float
    ratio: float  # geometric mean of the pairs' head / base process medians
    ci_low: float  # of the ratio: t interval over the processes
    ci_high: float
    confidence: float
    p_value: float  # Mann-Whitney U of the pooled rounds, two-sided
    alpha: float
    min_effect: float  # relative, 0.05: 5 %
    decision: Decision

    @property
    def effect(self) -> float:
        """The relative change, head against base: +0.10 is 10 % slower."""
        return self.ratio - 1.0

    @property
    def interval_excludes_one(self) -> bool:
        return self.ci_low > 1.0 or self.ci_high < 1.0

    def describe(self) -> str:
        pct = self.confidence * 100
        return (
            f"{self.decision}: head/base {self.ratio:.3f} ({self.effect:+.1%}), "
            f"{pct:g} % CI [{self.ci_low:.3f}, {self.ci_high:.3f}] over the processes, "
            f"Mann-Whitney p = {self.p_value:.2g}; decides when p < {self.alpha:g}, the CI "
            f"excludes 1 and |effect| ≥ {self.min_effect:.0%} (n = {self.base_processes}×"
            f"{self.base_n // max(self.base_processes, 1)} base, {self.head_processes}×"
            f"{self.head_n // max(self.head_processes, 1)} head)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "base_n": self.base_n,
            "head_n": self.head_n,
            "base_processes": self.base_processes,
            "head_processes": self.head_processes,
            "base_median": self.base_median,
            "head_median": self.head_median,
            "ratio": self.ratio,
            "effect": self.effect,
            "ci": [self.ci_low, self.ci_high],
            "ci_method": "t interval of the log ratios of process medians (paired by pair)",
            "confidence": self.confidence,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "decision": self.decision,
        }


def process_ratio_ci(
    base: Samples, head: Samples, *, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float]:
    """(ratio, low, high): head / base from the processes' medians, with a t interval.

    Each process contributes its median, and the logs are compared: with as
    many processes a side, the i-th base and i-th head ran as a pair (in
    lockstep), so the interval is the paired t interval of the pairs' log
    ratios; otherwise Welch's.  The ratio is exp(mean log ratio): the
    geometric mean of the pairs' ratios.  One process a side leaves the
    spread between processes unknown: the interval is (0, inf).
    """
    import numpy as np
    from scipy import stats  # type: ignore[import-untyped]

    b = np.log([float(np.median(run)) for run in base])
    h = np.log([float(np.median(run)) for run in head])
    if b.size == h.size:
        d = h - b
        mean = float(d.mean())
        if d.size < 2:
            return float(np.exp(mean)), 0.0, float("inf")
        se = float(d.std(ddof=1)) / np.sqrt(d.size)
        df = float(d.size - 1)
    else:
        mean = float(h.mean() - b.mean())
        if b.size < 2 or h.size < 2:
            return float(np.exp(mean)), 0.0, float("inf")
        vb, vh = float(b.var(ddof=1)) / b.size, float(h.var(ddof=1)) / h.size
        se = float(np.sqrt(vb + vh))
        df = (vb + vh) ** 2 / (vb**2 / (b.size - 1) + vh**2 / (h.size - 1)) if se else 1.0
    t = float(stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, df))
    return float(np.exp(mean)), float(np.exp(mean - t * se)), float(np.exp(mean + t * se))


def compare(
    base: Samples,
    head: Samples,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = DEFAULT_CONFIDENCE,
) -> ABVerdict:
    """Is ``head`` slower or faster than ``base``?  Each is a list of processes' rounds.

    "slower"/"faster" only when p < alpha, the interval excludes 1 and
    |effect| >= min_effect.
    """
    if not base or not head or any(len(run) < 2 for run in (*base, *head)):
        raise ValueError("each side needs at least one process with at least 2 timings each")
    pooled_base = [float(t) for run in base for t in run]
    pooled_head = [float(t) for run in head for t in run]
    if min(min(pooled_base), min(pooled_head)) <= 0:
        raise ValueError("latencies must be positive")
    if not 0 < alpha < 1 or min_effect < 0 or not 0 < confidence < 1:
        raise ValueError("alpha and confidence in (0, 1), min_effect >= 0")
    from scipy import stats

    base_median = statistics.median(pooled_base)
    head_median = statistics.median(pooled_head)
    p_value = float(stats.mannwhitneyu(pooled_head, pooled_base, alternative="two-sided").pvalue)
    ratio, low, high = process_ratio_ci(base, head, confidence=confidence)
    decision: Decision = "no change"
    if p_value < alpha and abs(ratio - 1.0) >= min_effect and (low > 1.0 or high < 1.0):
        decision = "slower" if ratio > 1.0 else "faster"
    return ABVerdict(
        base_n=len(pooled_base),
        head_n=len(pooled_head),
        base_processes=len(base),
        head_processes=len(head),
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
    """One pytest process on one side, for one test: every round's time (ms) and its record."""

    side: Side
    times_ms: tuple[float, ...]
    record: Record


@dataclass(frozen=True)
class ProcessOutput:
    """What one measuring process produced: per test key, its round times and its record."""

    times_ms: dict[str, tuple[float, ...]]
    records: dict[str, Record]
    keras_version: str | None


@dataclass(frozen=True)
class Interleaved:
    """Every process of both sides, in the order they ran, and what they measured."""

    outputs: tuple[tuple[Side, ProcessOutput], ...]
    keras: dict[str, str | None]

    def runs(self, key: str) -> tuple[ProcessRun, ...]:
        """The processes that measured ``key``, with its times (empty when not timed)."""
        return tuple(
            ProcessRun(side, out.times_ms.get(key, ()), out.records[key])
            for side, out in self.outputs
            if key in out.records
        )

    def keys(self, side: Side) -> set[str]:
        found = [set(out.records) for s, out in self.outputs if s == side]
        return set.intersection(*found) if found else set()


def _quiet(_: str) -> None:
    return None


@dataclass(frozen=True)
class _Launch:
    """One measuring process's command, environment and files (its output goes to files, so a
    process waiting for its turn never blocks on a full pipe)."""

    argv: list[str]
    env: dict[str, str]
    scratch: Path
    tree: Path

    @property
    def results(self) -> Path:
        return self.scratch / "results.json"

    @property
    def timings(self) -> Path:
        return self.scratch / "benchmark.json"

    @property
    def probe(self) -> Path:
        return self.scratch / "probe.json"

    def start(self, extra_env: Mapping[str, str] | None = None, fds: tuple[int, ...] = ()) -> Any:
        with (
            (self.scratch / "stdout.txt").open("w") as out,
            (self.scratch / "stderr.txt").open("w") as err,
        ):
            return subprocess.Popen(
                self.argv,
                cwd=self.scratch,
                env={**self.env, **(extra_env or {})},
                stdout=out,
                stderr=err,
                text=True,
                pass_fds=fds,
            )

    def output(self, returncode: int) -> ProcessOutput:
        """What the process measured, or HistoryError with the line that says what went wrong."""
        stdout = (self.scratch / "stdout.txt").read_text(errors="replace")
        stderr = (self.scratch / "stderr.txt").read_text(errors="replace")
        if returncode not in (0, 1) or not self.results.is_file():
            raise HistoryError(sweep.error_line(stdout, stderr, returncode))
        # Exit 1 (a test failed) is fine where the test measured: the test's own assertions
        # are the head's business, not a reason to lose its numbers; a failed test has no record.
        records = {
            str(result["key"]): Record.from_json(result["record"])
            for result in json.loads(self.results.read_text(encoding="utf-8"))["results"]
            if not result["test_failed"]
        }
        if not records:
            raise HistoryError(sweep.error_line(stdout, stderr, returncode))
        probed = json.loads(self.probe.read_text(encoding="utf-8")) if self.probe.is_file() else {}
        keras_file = probed.get("keras_file")
        if keras_file is None or not Path(keras_file).resolve().is_relative_to(self.tree.resolve()):
            raise HistoryError(f"keras was imported from {keras_file}, not from {self.tree}")
        times: dict[str, tuple[float, ...]] = {}
        if self.timings.is_file():
            for bench in json.loads(self.timings.read_text(encoding="utf-8"))["benchmarks"]:
                data = bench["stats"].get("data") or []
                times[test_key(str(bench["fullname"]))] = tuple(float(t) * 1000.0 for t in data)
        version = probed.get("keras_version")
        return ProcessOutput(times, records, None if version is None else str(version))


def _launch(
    tree: Path,
    targets: Sequence[str],
    backend: str,
    rounds: int,
    scratch: Path,
    *,
    keyword: str | None = None,
    only: Sequence[str] | None = None,
    warmup: int | None = None,
    python: str = sys.executable,
) -> _Launch:
    scratch.mkdir(parents=True, exist_ok=True)
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
        f"--kerasperf-json={scratch / 'results.json'}",
        f"--kerasperf-rounds={rounds}",
        *([f"--kerasperf-warmup={warmup}"] if warmup is not None else []),
        f"--benchmark-json={scratch / 'benchmark.json'}",
        "--benchmark-save-data",
        *(["-k", keyword] if keyword else []),
        *targets,
    ]
    env = sweep.measuring_env(backend, tree, scratch, scratch / "probe.json")
    if only is not None:
        select = scratch / "select.json"
        select.write_text(json.dumps(sorted(only)), encoding="utf-8")
        env[sweep.SELECT_VARIABLE] = str(select)
    return _Launch(argv, env, scratch, tree)


def _wait(process: Any, timeout_s: float, what: str) -> int:
    try:
        return int(process.wait(timeout=timeout_s))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise HistoryError(f"{what}: timed out after {timeout_s:g} s") from None


def run_process(
    tree: Path,
    targets: Sequence[str],
    backend: str,
    rounds: int,
    scratch: Path,
    *,
    timeout_s: float = sweep.DEFAULT_TIMEOUT_S,
    **launch_options: Any,
) -> ProcessOutput:
    """One fresh pytest process measuring ``targets`` against the Keras in ``tree``, alone.

    Every round's time comes from pytest-benchmark's saved data (ms), every
    record from ``--kerasperf-json``; a Keras imported from anywhere but
    ``tree`` is an error, never a number.  ``launch_options``: ``keyword``,
    ``only``, ``warmup``, ``python`` (as ``measure_interleaved``).
    """
    launch = _launch(tree, targets, backend, rounds, scratch, **launch_options)
    return launch.output(_wait(launch.start(), timeout_s, " ".join(targets)))


def pair_cpu(index: int) -> int | None:
    """The CPU both processes of pair ``index`` run on: the allowed CPUs in turn (None where
    the platform cannot pin a process)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[index % len(cpus)]


def run_pair(
    launches: Mapping[Side, _Launch], timeout_s: float, cpu: int | None = None
) -> tuple[dict[Side, ProcessOutput], dict[Side, int]]:
    """A base and a head process started together and timed in lockstep: (outputs, rounds).

    Both are pinned to ``cpu``: they never run at once, and one CPU of a
    machine can be slower than another for minutes (here the numpy LM forward
    took 65-73 ms on one core and 50-54 ms on the other), which must slow
    both sides of a pair alike, not one.
    """
    controller = lockstep.Controller(list(launches))
    processes: dict[Side, Any] = {}
    try:
        for side, launch in launches.items():
            fd = controller.child_fd(side)
            processes[side] = launch.start({lockstep.LOCKSTEP_FD: str(fd)}, (fd,))
            if cpu is not None:
                with contextlib.suppress(OSError):  # it may have exited already
                    os.sched_setaffinity(processes[side].pid, {cpu})
        controller.started()
        try:
            controller.serve(timeout_s)
        except lockstep.LockstepError as error:
            raise HistoryError(str(error)) from None
        codes = {side: _wait(process, timeout_s, side) for side, process in processes.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        controller.close()
    outputs = {side: launches[side].output(code) for side, code in codes.items()}
    return outputs, {side: controller.rounds[side] for side in launches}


def measure_interleaved(
    trees: Mapping[Side, Path],
    targets: Mapping[Side, Sequence[str]],
    backend: str,
    rounds: int,
    processes: int,
    scratch: Path,
    *,
    keyword: str | None = None,
    only: Sequence[str] | None = None,
    warmup: int | None = None,
    timeout_s: float = sweep.DEFAULT_TIMEOUT_S,
    log: Log = _quiet,
) -> Interleaved:
    """``processes`` pairs of a base and a head process, each pair timed in lockstep (base
    round, head round, base round, ...): drift of the machine hits both sides alike."""
    outputs: list[tuple[Side, ProcessOutput]] = []
    keras: dict[str, str | None] = {}
    sides: tuple[Side, Side] = ("base", "head")
    for index in range(processes):
        launches = {
            side: _launch(
                trees[side],
                targets[side],
                backend,
                rounds,
                scratch / side / f"run-{index}",
                keyword=keyword,
                only=only,
                warmup=warmup,
            )
            for side in sides
        }
        cpu = pair_cpu(index)
        pair, turns = run_pair(launches, timeout_s, cpu)
        for side in sides:
            keras[side] = pair[side].keras_version
            outputs.append((side, pair[side]))
        medians = "; ".join(
            f"{side} "
            + ", ".join(
                f"{sweep.short_test(key)} {statistics.median(t):.2f} ms"
                for key, t in sorted(pair[side].times_ms.items())
                if t
            )
            for side in sides
        )
        on = "" if cpu is None else f" on CPU {cpu}"
        log(
            f"pair {index + 1}/{processes} ({turns['base']} + {turns['head']} rounds in "
            f"lockstep{on}): {medians}"
        )
    return Interleaved(tuple(outputs), keras)


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


def judge_runs(
    runs: Sequence[ProcessRun],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[ABVerdict, CountsDiff]:
    """The latency verdict and the exact counts diff of one test's interleaved runs."""
    base = [run for run in runs if run.side == "base"]
    head = [run for run in runs if run.side == "head"]
    if not base or not head:
        raise HistoryError("the test ran on one side only")
    if any(len(run.times_ms) < 2 for run in runs):
        raise HistoryError("fewer than 2 timed rounds in a process (is --rounds > 1?)")
    verdict = compare(
        [run.times_ms for run in base],
        [run.times_ms for run in head],
        alpha=alpha,
        min_effect=min_effect,
        confidence=confidence,
    )
    return verdict, counts_diff(base[0].record, head[0].record)


def prepare_side(
    repo: Any, sha: str, side: Side, tests: Sequence[str], scratch: Path, cwd: Path
) -> tuple[Path, list[str]]:
    """Export ``sha`` for ``side`` and find ``tests`` in it (else in ``cwd``, the suite)."""
    tree = history_commits.export(repo, sha, scratch / side / "tree")
    if not history_commits.has_keras_package(tree):
        raise HistoryError(f"{sha[:10]}: no keras/__init__.py at the top of the tree")
    found, missing = sweep.resolve_tests(tests, tree, cwd)
    if missing:
        raise HistoryError(f"test not found in {side} {sha[:10]}: {', '.join(missing)}")
    return tree, found


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
    verdict, counts = judge_runs(runs, alpha=alpha, min_effect=min_effect)
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
