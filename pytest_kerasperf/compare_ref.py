"""A/B in the gate: ``pytest --kerasperf --kerasperf-compare-ref REF``.

Instead of the committed baseline, each perf test is compared with REF of the
Keras repository under test (e.g. the PR's merge base), measured in the same
job on the same machine:

- before the first test runs, REF is exported from the repository (no work
  tree touched) and the selected perf tests run in pairs of fresh pytest
  processes, one against it and one against the Keras under test, timed in
  lockstep (``--kerasperf-rounds`` timed rounds each, one pair per CPU at
  once, up to ``--kerasperf-ab-processes`` pairs, stopping early once every
  test's verdict is sure: ``ab.stats.Plan``): drift of the machine hits
  both sides;
- each test's counts (calls, calls per function and edge, graph breaks,
  recompiles), measured in this process, are compared exactly with REF's, as
  with a baseline entry, culprits included;
- its latency is judged by ``ab.stats`` on the pairs' rounds
  (the t interval over the pairs of the paired-round ratio, a minimum
  effect): "slower" fails the test on any device, since
  the verdict is statistical and both sides ran here; the committed baseline's
  latency is not used.

A test that REF cannot run (missing there, or REF does not import) is "not
compared", with the reason, and fails under ``--kerasperf-strict``.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pytest_kerasperf import judging
from pytest_kerasperf import verdict as verdicts
from pytest_kerasperf.ab import abplan, interleave, runner, stats
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.probe import PROBE_VARIABLE
from pytest_kerasperf.items import item_key
from pytest_kerasperf.metrics.base import NOT_COMPARED, Failure
from pytest_kerasperf.metrics.latency import LatencyChange
from pytest_kerasperf.record import Budget, Record


@dataclass
class CompareRef:
    """REF, the trees and, once measured, every process of both sides."""

    ref: str
    sha: str
    repo: Any  # git.Repo
    head_tree: Path  # the directory holding the Keras under test (``keras/`` inside)
    processes: int  # the most pairs
    rounds: int
    plan: stats.Plan = field(default_factory=stats.Plan)
    measured: interleave.Interleaved | None = None
    error: str | None = None  # why nothing was measured at REF
    seconds: float = 0.0
    verdicts: dict[str, stats.ABVerdict] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.ref} ({self.sha[:10]})" if not self.sha.startswith(self.ref) else self.ref

    def base_record(self, key: str) -> Record | None:
        runs = self.measured.runs(key) if self.measured else ()
        return next((run.record for run in runs if run.side == "base"), None)

    def why_not(self, key: str) -> str:
        if self.error is not None:
            return f"REF {self.label} not measured: {self.error}"
        return f"not measured at REF {self.label}"


def in_measuring_process() -> bool:
    """Is this pytest one of the processes an A/B (or a sweep) started?  It never starts one."""
    return bool(os.environ.get(PROBE_VARIABLE))


def keras_tree() -> Path:
    """The directory the ``keras`` package is imported from (without importing it)."""
    spec = importlib.util.find_spec("keras")
    if spec is None or not spec.submodule_search_locations:
        raise pytest.UsageError("--kerasperf-compare-ref: keras cannot be imported here")
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def configure(ref: str, repo_path: Path | None, processes: int, rounds: int | None) -> CompareRef:
    """Open the repository and resolve REF; every problem is one usage-error line."""
    head = keras_tree()
    try:
        if repo_path is None:
            try:
                repo = history_commits.open_repo(head)
            except HistoryError:
                repo = None
            if repo is None or repo.bare or Path(repo.working_tree_dir or "").resolve() != head:
                raise HistoryError(
                    f"the keras imported here ({head / 'keras'}) is not at the top of a git "
                    "work tree: give --kerasperf-compare-repo PATH, the Keras repository "
                    "REF belongs to"
                )
        else:
            repo = history_commits.open_repo(repo_path)
        sha = history_commits.resolve(repo, ref)
    except HistoryError as error:
        raise pytest.UsageError(f"--kerasperf-compare-ref: {error}") from None
    if processes < 1:
        raise pytest.UsageError("--kerasperf-ab-processes: at least 1")
    if rounds is not None and rounds < 2:
        raise pytest.UsageError(
            "--kerasperf-compare-ref needs --kerasperf-rounds >= 2 (the A/B statistics "
            f"compare rounds; default {stats.DEFAULT_ROUNDS})"
        )
    return CompareRef(
        ref=ref,
        sha=sha,
        repo=repo,
        head_tree=head,
        processes=processes,
        rounds=rounds if rounds is not None else stats.DEFAULT_ROUNDS,
        plan=abplan.plan_for(processes),
    )


def _targets(items: Sequence[pytest.Item], repo: Any) -> tuple[list[str], list[str]]:
    """(paths relative to the repository's work tree where inside it, else absolute; keys)."""
    top = None if repo.bare or not repo.working_tree_dir else Path(repo.working_tree_dir)
    paths = [Path(item.path).resolve() for item in items]
    shown = [str(p.relative_to(top)) if top and p.is_relative_to(top) else str(p) for p in paths]
    return list(dict.fromkeys(shown)), [item_key(item) for item in items]


def measure(
    compare: CompareRef, items: Sequence[pytest.Item], backend: str, log: runner.Log
) -> None:
    """Run the interleaved processes for ``items``; keep what they measured, or why not."""
    if not items:
        return
    started = time.monotonic()
    files, keys = _targets(items, compare.repo)
    try:
        with tempfile.TemporaryDirectory(prefix="kerasperf-compare-ref-") as name:
            scratch = Path(name)
            base_tree = history_commits.export(compare.repo, compare.sha, scratch / "base-tree")
            if not history_commits.has_keras_package(base_tree):
                raise HistoryError("no keras/__init__.py at the top of its tree")
            cwd = Path(compare.repo.working_tree_dir or Path.cwd())
            # Each file from REF's tree where it is there (Keras's perf tests as of REF, with
            # REF's conftest), else the file under test; the same keys are selected in both.
            base_files, missing = runner.resolve_tests(files, base_tree, cwd)
            head_files, _ = runner.resolve_tests(files, compare.head_tree, cwd)
            if missing:
                raise HistoryError(f"test files not found: {', '.join(missing)}")
            compare.measured = interleave.measure_interleaved(
                {"base": base_tree, "head": compare.head_tree},
                {"base": base_files, "head": head_files},
                backend,
                compare.rounds,
                compare.processes,
                scratch,
                only=keys,
                log=log,
                parallel=compare.plan.wave,
                stop=abplan.stopper(compare.plan, keys),
            )
    except HistoryError as error:
        compare.error = str(error)
    compare.seconds = time.monotonic() - started


def judge(
    compare: CompareRef,
    key: str,
    record: Record,
    budgets: Sequence[Budget],
    settings: verdicts.Settings,
) -> tuple[verdicts.Verdict, Record | None, stats.ABVerdict | None]:
    """The verdict against REF: counts exact as against a baseline, latency by A/B statistics."""
    base = compare.base_record(key)
    if base is None:
        missing = replace(settings, missing=compare.why_not(key))
        return judging.judge(record, None, budgets, missing), None, None
    # Latency is judged below, from both sides' processes, not from one median each.
    against = replace(settings, against=f"REF {compare.sha[:10]}")
    result = judging.judge(record, msgspec.structs.replace(base, latency=None), budgets, against)
    assert compare.measured is not None
    runs = compare.measured.runs(key)
    try:
        latency, _ = stats.decide_runs(runs, compare.plan)
    except (HistoryError, ValueError) as error:
        line = f"latency not compared with REF {compare.label}: {error}"
        if settings.strict:
            failed = (*result.failures, Failure(NOT_COMPARED, f"{line} (--kerasperf-strict)"))
            return msgspec.structs.replace(result, failures=failed), base, None
        return msgspec.structs.replace(result, notes=(*result.notes, line)), base, None
    compare.verdicts[key] = latency
    line = f"latency vs REF {compare.label}: {latency.describe()}"
    change = LatencyChange(round(latency.effect * 100, 1), None, record.latency)
    changes = (*(c for c in result.changes if not isinstance(c, LatencyChange)), change)
    if latency.decision == "slower":
        failures = (*result.failures, Failure("latency", line))
        result = msgspec.structs.replace(result, status="regressed", failures=failures)
    else:
        result = msgspec.structs.replace(result, notes=(*result.notes, line))
    return msgspec.structs.replace(result, changes=changes), base, latency


def summary_lines(compare: CompareRef) -> list[str]:
    """What the A/B measured, for the end of the run."""
    pairs = compare.measured.pairs if compare.measured else 0
    at_once = compare.measured.parallel if compare.measured else compare.plan.wave
    head = (
        f"kerasperf: compared against REF {compare.label}, measured in this job "
        f"({pairs} pair{'s' if pairs != 1 else ''} of processes of at most "
        f"{compare.processes} × {compare.rounds} rounds, in lockstep, {at_once} at once, "
        f"{compare.seconds:.0f} s), not against the committed baselines"
    )
    if compare.error is not None:
        return [head, f"kerasperf: REF not measured: {compare.error}"]
    decided = [v.decision for v in compare.verdicts.values()]
    counts = ", ".join(
        f"{decided.count(d)} {d}" for d in ("slower", "faster", "no change") if decided.count(d)
    )
    keras = compare.measured.keras if compare.measured else {}
    return [
        head,
        f"kerasperf latency vs REF: {len(decided)} judged ({counts or 'none'}); Keras "
        f"{keras.get('base')} at REF, {keras.get('head')} under test",
    ]
