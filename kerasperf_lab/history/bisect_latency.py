"""``kerasperf bisect --metric latency``: the first commit of GOOD..BAD that is slower than GOOD.

Each step an A/B of GOOD and the probed commit (``kerasperf ab``'s plan and rule), BAD first:
when BAD is not "slower" there is nothing to bisect.  A probe is *bad* when the A/B finds it
slower, else *good*; commits that fail to run are skipped.  A good step is *sure* when its
interval rules out the minimum slowdown; the answer is "confident" when every step is a
decision or sure (docs/history.md, "Latency bisection").
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Literal

import msgspec

from kerasperf_lab.history.ab import interleaved
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab import result as ab_result
from pytest_kerasperf.ab.abplan import ABSettings
from pytest_kerasperf.ab.commits import Commit, HistoryError, Sha
from pytest_kerasperf.ab.interleave import prepare_side
from pytest_kerasperf.ab.runner import Log, quiet
from pytest_kerasperf.ab.stats import ABVerdict, decide_runs
from pytest_kerasperf.ab.text import commit_line
from pytest_kerasperf.formatting import plural

Outcome = Literal["good", "bad", "skip"]


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
) -> tuple[LatencyBisectFile, dict[int, ABVerdict]]:
    """Binary search of GOOD..BAD (first parent) for the first commit slower than GOOD; each
    step an A/B of up to ``settings.processes`` pairs, by the plan of ``kerasperf ab``: the
    file ``--json`` writes, and each measured step's verdict by its index."""
    settings = settings or ABSettings()
    plan = settings.plan()
    commits = history_commits.first_parent_commits(repo, f"{good}..{bad}")
    if len(commits) < 2:
        raise HistoryError(f"{good} and {bad} are the same commit")
    probes: list[ProbeFile] = []
    verdicts: dict[int, ABVerdict] = {}
    where = cwd or Path.cwd()
    with tempfile.TemporaryDirectory(prefix="kerasperf-bisect-latency-") as name:
        scratch = Path(name)
        good_tree, good_targets = prepare_side(repo, commits[0].sha, "base", [test], scratch, where)

        def look(index: int) -> ProbeFile:
            commit = commits[index]
            step = scratch / f"step-{index}"
            try:
                tree, targets = prepare_side(repo, commit.sha, "head", [test], step, where)
                measured = interleaved(
                    {"base": good_tree, "head": tree},
                    {"base": good_targets, "head": targets},
                    backend,
                    settings,
                    step,
                    lambda line: log(f"[{index}] {commit.short}: {line}"),
                )
                keys = measured.keys("base") & measured.keys("head")
                if len(keys) != 1:
                    raise HistoryError(f"{test} ran {len(keys)} tests on both: select one")
                verdict, _ = decide_runs(measured.runs(keys.pop()), plan)
            except HistoryError as error:
                probe = ProbeFile(index, commit.sha, "skip", False, None, str(error))
            else:
                outcome: Outcome = "bad" if verdict.decision == "slower" else "good"
                # a bad step is a decision; a good one is sure when it rules out the minimum
                sure = outcome == "bad" or verdict.ci_high < 1.0 + verdict.min_effect
                probe = ProbeFile(index, commit.sha, outcome, sure, verdict.result(), None)
                verdicts[index] = verdict
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
    confident = first_bad is not None and all(p.sure for p in probes if p.outcome != "skip")
    bisection = LatencyBisectFile(
        test,
        backend,
        settings.processes,
        settings.rounds,
        tuple(commits),
        tuple(probes),
        first_bad,
        candidates,
        confident,
    )
    return bisection, verdicts


def lines(result: LatencyBisectFile, verdicts: dict[int, ABVerdict]) -> list[str]:
    out = [
        f"kerasperf bisect: {len(result.commits)} first-parent commits "
        f"{result.commits[0].short}..{result.commits[-1].short}, {result.backend}, metric "
        f"latency of {result.test}: each step an A/B against GOOD, "
        f"{plural(result.processes, 'process', 'processes')} × {result.rounds} rounds per side"
    ]
    for probe in result.probes:
        short = probe.commit[:10]
        if probe.outcome == "skip":
            out.append(f"  [{probe.index}] {short} skip: {probe.error}")
            continue
        sure = "" if probe.sure else " (unsure: a slowdown of the minimum is not ruled out)"
        out.append(
            f"  [{probe.index}] {short} {probe.outcome}{sure}: {verdicts[probe.index].describe()}"
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
        min_effect = next(iter(verdicts.values())).min_effect
        out.append(
            "confidence: every step decided — each slower step at p < alpha with its interval "
            f"above 1, each good step's interval below +{min_effect:.0%}"
        )
    else:
        unsure = ", ".join(
            p.commit[:10] for p in result.probes if p.outcome != "skip" and not p.sure
        )
        out.append(
            f"confidence: NOT sure — the good step(s) {unsure} did not rule out a slowdown of "
            "the minimum; rerun with more --processes (or a larger --min-effect)"
        )
    return out
