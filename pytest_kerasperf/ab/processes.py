"""The measuring processes of an interleaved run: how one is started (its environment for
timing: glibc's malloc, one thread per pool), pinned to a CPU and waited for, and a base and a
head process timed in lockstep (``run_pair``).  ``interleave`` plans the pairs and reads
what they measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kerasperf.ab import probe as probe_plugin
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.outputs import read_probe, read_results, read_timings
from pytest_kerasperf.ab.runner import error_line, measuring_argv, measuring_env
from pytest_kerasperf.ab.stats import Side
from pytest_kerasperf.measure import lockstep
from pytest_kerasperf.record import Record, test_key


@dataclass(frozen=True)
class ProcessOutput:
    """What one measuring process produced: per test key, its round times and its record."""

    times_ms: dict[str, tuple[float, ...]]
    records: dict[str, Record]
    keras_version: str | None


@dataclass(frozen=True)
class Launch:
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

    def start(self, fd: int) -> Any:
        """The process, started with ``fd`` its end of the lockstep."""
        with (
            (self.scratch / "stdout.txt").open("w") as out,
            (self.scratch / "stderr.txt").open("w") as err,
        ):
            return subprocess.Popen(
                self.argv,
                cwd=self.scratch,
                env={**self.env, lockstep.LOCKSTEP_FD: str(fd)},
                stdout=out,
                stderr=err,
                text=True,
                pass_fds=(fd,),
            )

    def output(self, returncode: int) -> ProcessOutput:
        """What the process measured, or HistoryError with the line that says what went wrong."""
        stdout = (self.scratch / "stdout.txt").read_text(errors="replace")
        stderr = (self.scratch / "stderr.txt").read_text(errors="replace")
        # Exit 1 (a test failed) is fine where the test measured: the test's own assertions
        # are the head's business, not a reason to lose its numbers; a failed test has no record.
        measured = read_results(self.results) if returncode in (0, 1) else []
        records = {run.key: run.record for run in measured}
        if not records:
            raise HistoryError(error_line(stdout, stderr, returncode))
        probed = read_probe(self.probe)
        keras_file = probed.get("keras_file")
        if keras_file is None or not Path(keras_file).resolve().is_relative_to(self.tree.resolve()):
            raise HistoryError(f"keras was imported from {keras_file}, not from {self.tree}")
        times: dict[str, tuple[float, ...]] = {}
        if self.timings.is_file():
            for bench in read_timings(self.timings).benchmarks:
                times[test_key(bench.fullname)] = tuple(t * 1000.0 for t in bench.stats.data)
        version = probed.get("keras_version")
        return ProcessOutput(times, records, None if version is None else str(version))


#: glibc's malloc in a timed process: every block from the heap, and the heap never given
#: back.  With glibc's defaults, a large block (a CNN's activations) is an mmap of its own, or
#: the heap's top is trimmed after it is freed, so the next call faults its pages in again, at
#: a cost that moves with the heap's state (measured: docs/history.md).
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


def launch_for(
    tree: Path,
    targets: Sequence[str],
    backend: str,
    rounds: int,
    scratch: Path,
    *,
    keyword: str | None = None,
    only: Sequence[str] | None = None,
    warmup: int | None = None,
) -> Launch:
    scratch.mkdir(parents=True, exist_ok=True)
    extra = [
        *([f"--kerasperf-warmup={warmup}"] if warmup is not None else []),
        f"--benchmark-json={scratch / 'benchmark.json'}",
        "--benchmark-save-data",
    ]
    argv = measuring_argv(sys.executable, scratch, rounds, targets, keyword=keyword, extra=extra)
    env = timing_env(measuring_env(backend, tree, scratch, scratch / "probe.json"))
    if only is not None:
        select = scratch / "select.json"
        select.write_text(json.dumps(sorted(only)), encoding="utf-8")
        env[probe_plugin.SELECT_VARIABLE] = str(select)
    return Launch(argv, env, scratch, tree)


def _wait(process: Any, timeout_s: float, what: str) -> int:
    try:
        return int(process.wait(timeout=timeout_s))
    except subprocess.TimeoutExpired:  # run_pair kills it
        raise HistoryError(f"{what}: timed out after {timeout_s:g} s") from None


def allowed_cpus() -> Sequence[int | None]:
    """The CPUs this process may run on ([None] where the platform cannot pin a process)."""
    if not hasattr(os, "sched_getaffinity"):
        return [None]
    return sorted(os.sched_getaffinity(0))


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
    launches: Mapping[Side, Launch],
    timeout_s: float,
    cpu: int | None = None,
    seed: int | None = None,
) -> tuple[dict[Side, ProcessOutput], dict[Side, int]]:
    """A base and a head process started together and timed in lockstep: (outputs, rounds).

    Both are pinned to ``cpu`` from their first instruction (this thread is pinned to it before
    they are started, and a child inherits its parent thread's affinity, as do its threads):
    they never run at once, and a CPU slower than another for minutes (docs/history.md) slows
    both sides of a pair alike.  ``seed`` draws which side starts first and the order of the
    sides in each cycle.
    """
    controller = lockstep.Controller(list(launches), seed=seed)
    processes: dict[Side, Any] = {}
    first = list(launches)
    random.Random(seed).shuffle(first)  # which side starts first: drawn too
    try:
        with _pinned(cpu):  # this thread, while it starts them: the children inherit it
            for side in first:
                processes[side] = launches[side].start(controller.child_fd(side))
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
