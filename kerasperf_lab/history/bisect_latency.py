"""``kerasperf bisect --metric latency``: the first commit of GOOD..BAD that is slower than GOOD.

Latency is noisy, so no single measurement says "good" or "bad".  Each step
is an A/B: GOOD and the probed commit in interleaved fresh processes
(``history.interleave``), judged by the same rule as ``kerasperf ab``
(``history.stats``: the t interval over the pairs of processes of the
paired-round ratio, a minimum effect; stopping early once sure).  First BAD itself is
checked against GOOD: when BAD is not "slower", there is nothing to bisect
and it says so.  Then a binary search: a probe is *bad* when the A/B finds
it slower than GOOD, else *good*.  Commits that fail to run are skipped,
as ``git bisect skip``.

How sure the answer is, said from the steps themselves: a *bad* step is a
decision (p < alpha, the interval above 1, the effect at least the
minimum); a *good* step is *sure* when its interval's upper end is below
``1 + min_effect`` (the A/B rules out a slowdown of the minimum size), else
*unsure* (no slowdown shown, none ruled out).  The answer is "confident"
when every step is a decision or sure; else the unsure steps are named,
with the advice to rerun with more processes.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab import result as ab_result
from pytest_kerasperf.ab.abplan import ABSettings, stopper
from pytest_kerasperf.ab.commits import Commit, HistoryError, Sha
from pytest_kerasperf.ab.interleave import (
    measure_interleaved,
    prepare_side,
)
from pytest_kerasperf.ab.runner import Log, quiet
from pytest_kerasperf.ab.stats import (
    ABVerdict,
    decide_runs,
)
from pytest_kerasperf.ab.text import commit_line

Outcome = Literal["good", "bad", "skip"]


@dataclass(frozen=True)
class LatencyProbe:
    index: int
    commit: Commit
    outcome: Outcome
    verdict: ABVerdict | None  # None: skipped
    error: str | None

    @property
    def sure(self) -> bool:
        """A bad step is a decision; a good one is sure when it rules out the minimum slowdown."""
        if self.verdict is None:
            return False
        if self.outcome == "bad":
            return True
        return self.verdict.ci_high < 1.0 + self.verdict.min_effect


@dataclass(frozen=True)
class LatencyBisect:
    test: str
    backend: str
    processes: int
    rounds: int
    commits: tuple[Commit, ...]
    probes: tuple[LatencyProbe, ...]
    first_bad: Commit | None  # None: BAD is not slower than GOOD
    candidates: tuple[Commit, ...]

    @property
    def confident(self) -> bool:
        return self.first_bad is not None and all(
            p.sure for p in self.probes if p.outcome != "skip"
        )

    def unsure(self) -> list[LatencyProbe]:
        return [p for p in self.probes if p.outcome != "skip" and not p.sure]


def bisect_latency(
    repo: Any,
    good: str,
    bad: str,
    backend: str,
    test: str,
    settings: ABSettings | None = None,
    *,
    cwd: Path | None = None,
    log: Log = quiet,
) -> LatencyBisect:
    """Binary search of GOOD..BAD (first parent) for the first commit slower than GOOD; each
    step an A/B of up to ``settings.processes`` pairs, by the plan of ``kerasperf ab``."""
    settings = settings or ABSettings()
    plan = settings.plan()
    commits = history_commits.first_parent_commits(repo, f"{good}..{bad}")
    if len(commits) < 2:
        raise HistoryError(f"{good} and {bad} are the same commit")
    probes: list[LatencyProbe] = []
    where = cwd or Path.cwd()
    with tempfile.TemporaryDirectory(prefix="kerasperf-bisect-latency-") as name:
        scratch = Path(name)
        good_tree, good_targets = prepare_side(repo, commits[0].sha, "base", [test], scratch, where)

        def look(index: int) -> LatencyProbe:
            commit = commits[index]
            step = scratch / f"step-{index}"
            try:
                tree, targets = prepare_side(repo, commit.sha, "head", [test], step, where)
                measured = measure_interleaved(
                    {"base": good_tree, "head": tree},
                    {"base": good_targets, "head": targets},
                    backend,
                    settings.rounds,
                    settings.processes,
                    step,
                    timeout_s=settings.timeout_s,
                    log=lambda line: log(f"[{index}] {commit.short}: {line}"),
                    parallel=plan.wave,
                    stop=stopper(plan),
                    budget_s=settings.budget_s,
                )
                keys = measured.keys("base") & measured.keys("head")
                if len(keys) != 1:
                    raise HistoryError(f"{test} ran {len(keys)} tests on both: select one")
                verdict, _ = decide_runs(measured.runs(keys.pop()), plan)
            except HistoryError as error:
                probe = LatencyProbe(index, commit, "skip", None, str(error))
            else:
                outcome: Outcome = "bad" if verdict.decision == "slower" else "good"
                probe = LatencyProbe(index, commit, outcome, verdict, None)
            probes.append(probe)
            log(f"[{index}] {commit.short}: {probe.outcome}")
            return probe

        end = look(len(commits) - 1)
        if end.outcome == "skip":
            raise HistoryError(f"BAD {commits[-1].short} does not run: {end.error}")
        first_bad: Commit | None = None
        candidates: tuple[Commit, ...] = ()
        if end.outcome == "bad":
            low, high = history_commits.binary_search(
                len(commits) - 1, lambda index: look(index).outcome
            )
            first_bad = commits[high]
            candidates = tuple(commits[i] for i in range(low + 1, high + 1))
    return LatencyBisect(
        test,
        backend,
        settings.processes,
        settings.rounds,
        tuple(commits),
        tuple(probes),
        first_bad,
        candidates,
    )


def lines(result: LatencyBisect) -> list[str]:
    out = [
        f"kerasperf bisect: {len(result.commits)} first-parent commits "
        f"{result.commits[0].short}..{result.commits[-1].short}, {result.backend}, metric "
        f"latency of {result.test}: each step an A/B against GOOD, {result.processes} "
        f"process{'es' if result.processes != 1 else ''} × {result.rounds} rounds per side"
    ]
    for probe in result.probes:
        if probe.verdict is None:
            out.append(f"  [{probe.index}] {probe.commit.short} skip: {probe.error}")
            continue
        sure = "" if probe.sure else " (unsure: a slowdown of the minimum is not ruled out)"
        out.append(
            f"  [{probe.index}] {probe.commit.short} {probe.outcome}{sure}: "
            f"{probe.verdict.describe()}"
        )
    if result.first_bad is None:
        out.append("no slowdown: BAD is not slower than GOOD by the A/B rule; nothing to bisect")
        return out
    if len(result.candidates) == 1:
        out.append(f"first slower commit: {commit_line(result.first_bad)}")
    else:
        out.append(
            f"first slower commit: one of {len(result.candidates)} (skipped commits run into it):"
        )
        out += [f"  {commit_line(c)}" for c in result.candidates]
    if result.confident:
        min_effect = next(p.verdict.min_effect for p in result.probes if p.verdict is not None)
        out.append(
            "confidence: every step decided — each slower step at p < alpha with its interval "
            f"above 1, each good step's interval below +{min_effect:.0%}"
        )
    else:
        unsure = ", ".join(p.commit.short for p in result.unsure())
        out.append(
            f"confidence: NOT sure — the good step(s) {unsure} did not rule out a slowdown of "
            "the minimum; rerun with more --processes (or a larger --min-effect)"
        )
    return out


class ProbeFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One step as the JSON holds it: its verdict as files hold one (``ab.result``)."""

    index: int
    commit: Sha
    outcome: Outcome
    sure: bool
    verdict: ab_result.ABResult | None
    error: str | None


class LatencyBisectFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``kerasperf bisect --metric latency --json``."""

    test: str
    backend: str
    processes: int
    rounds: int
    commits: tuple[Commit, ...]
    probes: tuple[ProbeFile, ...]
    first_bad: Commit | None
    candidates: tuple[Commit, ...]
    confident: bool
    metric: Literal["latency"] = "latency"


def document(result: LatencyBisect) -> LatencyBisectFile:
    """The bisection as ``--json`` writes it."""
    return LatencyBisectFile(
        test=result.test,
        backend=result.backend,
        processes=result.processes,
        rounds=result.rounds,
        commits=result.commits,
        probes=tuple(
            ProbeFile(
                p.index,
                p.commit.sha,
                p.outcome,
                p.sure,
                None if p.verdict is None else p.verdict.result(),
                p.error,
            )
            for p in result.probes
        ),
        first_bad=result.first_bad,
        candidates=result.candidates,
        confident=result.confident,
    )
