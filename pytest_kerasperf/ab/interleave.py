"""Interleaved processes: a base and a head pytest process per pair, timed in lockstep.

The Keras of each side is in a tree (``commits.export``, no work tree
touched, or the Keras under test); then up to ``processes`` pairs of fresh
pytest processes, a base and a head started together and timed in lockstep
(``measure.lockstep``: one round of each side per cycle, in a random order,
never both at once, both pinned to one CPU), so that drift of the machine
hits both sides alike.  Pairs run in waves, one pair per allowed CPU
(``parallel``); after each wave a ``stop`` callback may end the measurement
(a sequential test, ``stats.Plan``).  Every round's time comes
from pytest-benchmark's own ``--benchmark-json`` with
``--benchmark-save-data`` (``benchmarks[i].stats.data``); the records from
``--kerasperf-json``.  The verdict on what they measured is
``stats``'s.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.processes import (
    AB_WARMUP,
    ProcessOutput,
    allowed_cpus,
    launch_for,
    run_pair,
)
from pytest_kerasperf.ab.runner import DEFAULT_TIMEOUT_S, Log, quiet, resolve_tests
from pytest_kerasperf.ab.stats import ProcessRun, Side
from pytest_kerasperf.ab.text import short_test


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
            side: launch_for(
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
            if wave.stop >= processes or (stop is not None and stop(measured)):
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
