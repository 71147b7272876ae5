"""Interleaved processes: a base and a head pytest process per pair, timed in lockstep.

The Keras of each side is in a tree (``commits.export``, no work tree
touched, or the Keras under test); then ``processes`` pairs of fresh pytest
processes, a base and a head started together and timed in lockstep
(``measure.lockstep``: base round, head round, base round, ..., never both at
once, both pinned to one CPU), so that drift of the machine hits both sides
alike.  Every round's time comes from pytest-benchmark's own
``--benchmark-json`` with ``--benchmark-save-data``
(``benchmarks[i].stats.data``); the records from ``--kerasperf-json``.  The
verdict on what they measured is ``history.stats``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
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
from pytest_kerasperf.history.stats import ProcessRun, Side
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
    env = measuring_env(backend, tree, scratch, scratch / "probe.json")
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
    timeout_s: float = DEFAULT_TIMEOUT_S,
    log: Log = quiet,
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
                f"{short_test(key)} {statistics.median(t):.2f} ms"
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
