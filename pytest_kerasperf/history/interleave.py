"""Interleaved processes: a base and a head pytest process per pair, timed in lockstep.

The Keras of each side is in a tree (``commits.export``, no work tree
touched, or the Keras under test); then up to ``processes`` pairs of fresh
pytest processes, a base and a head started together and timed in lockstep
(``measure.lockstep``: one round of each side per cycle, in a random order,
never both at once, both pinned to one CPU), so that drift of the machine
hits both sides alike.  Pairs run in waves, one pair per allowed CPU
(``parallel``); after each wave a ``stop`` callback may end the measurement
(a sequential test, ``history.stats.Plan``).  Every round's time comes
from pytest-benchmark's own ``--benchmark-json`` with
``--benchmark-save-data`` (``benchmarks[i].stats.data``); the records from
``--kerasperf-json``.  The verdict on what they measured is
``history.stats``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kerasperf.history import commits as history_commits
from pytest_kerasperf.history import probe as probe_plugin
from pytest_kerasperf.history.commits import HistoryError
from pytest_kerasperf.history.runner import (
    DEFAULT_TIMEOUT_S,
    Log,
    error_line,
    measuring_argv,
    measuring_env,
    quiet,
    read_probe,
    read_results,
    resolve_tests,
)
from pytest_kerasperf.history.stats import (
    ProcessRun,
    Side,
)
from pytest_kerasperf.history.text import short_test
from pytest_kerasperf.measure import lockstep
from pytest_kerasperf.record import Record, test_key


@dataclass(frozen=True)
class ProcessOutput:
    """What one measuring process produced: per test key, its round times and its record."""

    times_ms: dict[str, tuple[float, ...]]
    records: dict[str, Record]
    keras_version: str | None


@dataclass(frozen=True)
class Interleaved:
    """Every process of both sides, pair by pair (base, then head), and what they measured."""

    outputs: tuple[tuple[Side, ProcessOutput], ...]
    keras: dict[str, str | None]
    seconds: float = 0.0  # wall time of the pairs
    parallel: int = 1  # pairs at once, one per CPU

    @property
    def pairs(self) -> int:
        return len(self.outputs) // 2

    def runs(self, key: str) -> tuple[ProcessRun, ...]:
        """The processes that measured ``key``, with its times (empty when not timed) and the
        index of their pair."""
        return tuple(
            ProcessRun(side, out.times_ms.get(key, ()), out.records[key], pair=index // 2)
            for index, (side, out) in enumerate(self.outputs)
            if key in out.records
        )

    def keys(self, side: Side) -> set[str]:
        found = [set(out.records) for s, out in self.outputs if s == side]
        return set.intersection(*found) if found else set()


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
            raise HistoryError(error_line(stdout, stderr, returncode))
        # Exit 1 (a test failed) is fine where the test measured: the test's own assertions
        # are the head's business, not a reason to lose its numbers; a failed test has no record.
        records = {run.key: run.record for run in read_results(self.results)}
        if not records:
            raise HistoryError(error_line(stdout, stderr, returncode))
        probed = read_probe(self.probe)
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


#: glibc's malloc in a timed process: every block from the heap, and the heap never given
#: back.  With glibc's defaults, a large block (a CNN's activations) is an mmap of its own, or
#: the heap's top is trimmed after it is freed, so the next call faults its pages in again, at
#: a cost that moves with the heap's state: the numpy CNN forward's median differed by up to
#: 19 % between six processes of one program (7.2-8.6 ms, and up to 14 % between the quarters
#: of one process); with these, by 2.5 % (6.9-7.1 ms), and 14 % faster (docs/history.md).
TIMING_MALLOC = {
    "glibc.malloc.mmap_threshold": "1073741824",
    "glibc.malloc.trim_threshold": "1073741824",
}
#: Untimed calls before a timed process's first round (in lockstep too): the issue script's
#: WARMUP (docs/history.md: what trimming the first rounds after them changed).
AB_WARMUP = 10
#: A timed process runs on one CPU: one thread in each pool (OpenMP, OpenBLAS, MKL).
TIMING_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def timing_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a timed process: ``TIMING_MALLOC`` added to ``GLIBC_TUNABLES`` and
    ``TIMING_THREADS``, each where ``env`` does not set it already (its own setting wins)."""
    out = dict(env)
    tunables = [t for t in out.get("GLIBC_TUNABLES", "").split(":") if t]
    named = {t.split("=", 1)[0] for t in tunables}
    tunables += [f"{name}={value}" for name, value in TIMING_MALLOC.items() if name not in named]
    out["GLIBC_TUNABLES"] = ":".join(tunables)
    for name, value in TIMING_THREADS.items():
        out.setdefault(name, value)
    return out


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
    extra = [
        *([f"--kerasperf-warmup={warmup}"] if warmup is not None else []),
        f"--benchmark-json={scratch / 'benchmark.json'}",
        "--benchmark-save-data",
    ]
    argv = measuring_argv(python, scratch, rounds, targets, keyword=keyword, extra=extra)
    env = timing_env(measuring_env(backend, tree, scratch, scratch / "probe.json"))
    if only is not None:
        select = scratch / "select.json"
        select.write_text(json.dumps(sorted(only)), encoding="utf-8")
        env[probe_plugin.SELECT_VARIABLE] = str(select)
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
    timeout_s: float = DEFAULT_TIMEOUT_S,
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


def allowed_cpus() -> Sequence[int | None]:
    """The CPUs this process may run on ([None] where the platform cannot pin a process)."""
    if not hasattr(os, "sched_getaffinity"):
        return [None]
    return sorted(os.sched_getaffinity(0))


def pair_cpu(index: int) -> int | None:
    """The CPU both processes of pair ``index`` run on: the allowed CPUs in turn (None where
    the platform cannot pin a process)."""
    cpus = allowed_cpus()
    return cpus[index % len(cpus)]


@contextlib.contextmanager
def _pinned(cpu: int | None) -> Iterator[None]:
    """The calling thread (pid 0 is the thread on Linux) on ``cpu`` only, for the block."""
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _exit_waiter(process: Any, side: str) -> Callable[[float], object]:
    def wait(seconds: float) -> object:
        try:
            return process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise lockstep.LockstepError(
                f"the {side} process closed its end but did not exit in time"
            ) from None

    return wait


def run_pair(
    launches: Mapping[Side, _Launch],
    timeout_s: float,
    cpu: int | None = None,
    seed: int | None = None,
) -> tuple[dict[Side, ProcessOutput], dict[Side, int]]:
    """A base and a head process started together and timed in lockstep: (outputs, rounds).

    Both are pinned to ``cpu`` from their first instruction (this thread is
    pinned to it before they are started, and a child inherits its parent
    thread's affinity, as do its threads): they never run at once, and one CPU of a
    machine can be slower than another for minutes (here the numpy LM forward
    took 65-73 ms on one core and 50-54 ms on the other), which must slow
    both sides of a pair alike, not one.  ``seed`` draws which side starts
    first and the order of the sides in each cycle.
    """
    controller = lockstep.Controller(list(launches), seed=seed)
    processes: dict[Side, Any] = {}
    first = list(launches)
    random.Random(seed).shuffle(first)  # which side starts first: drawn too
    try:
        with _pinned(cpu):  # this thread, while it starts them: the children inherit it
            for side in first:
                launch = launches[side]
                fd = controller.child_fd(side)
                processes[side] = launch.start({lockstep.LOCKSTEP_FD: str(fd)}, (fd,))
        controller.started()
        try:
            controller.serve(
                timeout_s,
                exited={side: _exit_waiter(process, side) for side, process in processes.items()},
            )
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
    warmup: int | None = AB_WARMUP,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    log: Log = quiet,
    parallel: int | None = 1,
    stop: Callable[[Interleaved], bool] | None = None,
    seed: int | None = None,
    budget_s: float | None = None,
) -> Interleaved:
    """Up to ``processes`` pairs of a base and a head process, each pair timed in lockstep
    (one round of each side per cycle): drift of the machine hits both sides alike.

    ``parallel`` pairs run at once, each on its own allowed CPU (None: one per
    allowed CPU); after each such wave, ``stop(measured so far)`` may end the
    measurement.  ``seed`` makes the order of the sides in each cycle
    repeatable (None: a fresh draw).  With ``budget_s``, no wave starts that
    would end past the budget at the pace of the slowest wave so far.
    """
    cpus = allowed_cpus()
    width = max(1, min(len(cpus) if parallel is None else parallel, len(cpus), processes))
    outputs: list[tuple[Side, ProcessOutput]] = []
    keras: dict[str, str | None] = {}
    sides: tuple[Side, Side] = ("base", "head")
    started = time.monotonic()

    def one(index: int, cpu: int | None) -> tuple[dict[Side, ProcessOutput], dict[Side, int]]:
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
        return run_pair(launches, timeout_s, cpu, None if seed is None else seed + index)

    with ThreadPoolExecutor(max_workers=width) as pool:
        slowest = 0.0
        for first in range(0, processes, width):
            wave_started = time.monotonic() - started
            wave = range(first, min(first + width, processes))
            futures = [pool.submit(one, index, cpus[k % len(cpus)]) for k, index in enumerate(wave)]
            results = [future.result() for future in futures]
            for index, (pair, turns) in zip(wave, results, strict=True):
                for side in sides:
                    keras[side] = pair[side].keras_version
                    outputs.append((side, pair[side]))
                log(_pair_line(index, processes, pair, turns, cpus[(index - first) % len(cpus)]))
            elapsed = time.monotonic() - started
            slowest = max(slowest, elapsed - wave_started)
            measured = Interleaved(tuple(outputs), dict(keras), elapsed, width)
            if wave.stop >= processes:
                break
            if stop is not None and stop(measured):
                break
            if budget_s is not None and elapsed + slowest > budget_s:
                log(
                    f"stopped after {wave.stop} pairs: another wave ({slowest:.0f} s) would end "
                    f"past the budget of {budget_s:g} s"
                )
                break
    return Interleaved(tuple(outputs), keras, time.monotonic() - started, width)


def _pair_line(
    index: int,
    processes: int,
    pair: Mapping[Side, ProcessOutput],
    turns: Mapping[Side, int],
    cpu: int | None,
) -> str:
    medians = "; ".join(
        f"{side} "
        + ", ".join(
            f"{short_test(key)} {statistics.median(t):.2f} ms"
            for key, t in sorted(pair[side].times_ms.items())
            if t
        )
        for side in ("base", "head")
    )
    on = "" if cpu is None else f" on CPU {cpu}"
    return (
        f"pair {index + 1}/{processes} ({turns['base']} + {turns['head']} rounds in lockstep"
        f"{on}): {medians}"
    )


def prepare_side(
    repo: Any, sha: str, side: Side, tests: Sequence[str], scratch: Path, cwd: Path
) -> tuple[Path, list[str]]:
    """Export ``sha`` for ``side`` and find ``tests`` in it (else in ``cwd``, the suite)."""
    tree = history_commits.export(repo, sha, scratch / side / "tree")
    if not history_commits.has_keras_package(tree):
        raise HistoryError(f"{sha[:10]}: no keras/__init__.py at the top of the tree")
    found, missing = resolve_tests(tests, tree, cwd)
    if missing:
        raise HistoryError(f"test not found in {side} {sha[:10]}: {', '.join(missing)}")
    return tree, found
