"""``kerasperf bisect``: the first commit of GOOD..BAD whose exact count differs from GOOD's.

The exact metrics the lab follows (``steps.FOLLOWED``: calls, graph breaks) need
one measurement to decide whether a commit is "good" (its counts equal GOOD's)
or "bad": a true binary search over the first-parent commits.  A commit that
fails to run is skipped, as ``git bisect skip`` does; when skipped commits sit
right before the first bad one, the answer is the range of candidates, and it
says so.  Measurements come from, and go into, the sweep's cache.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec.structs import replace

from kerasperf_lab.history import ab, bisect_latency
from kerasperf_lab.history.cache import DEFAULT_CACHE, Cache, obtain, write_json
from kerasperf_lab.history.steps import FOLLOWED
from kerasperf_lab.history.sweep import (
    add_backend,
    add_cache,
    add_repo,
    add_timeout,
    logger,
    run_command,
)
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab.commits import Commit, HistoryError, Sha
from pytest_kerasperf.ab.runner import (
    Log,
    Measurement,
    RunSettings,
    Selection,
    quiet,
)
from pytest_kerasperf.ab.text import commit_line, short_function, short_test
from pytest_kerasperf.changes import diff
from pytest_kerasperf.culprits import signed
from pytest_kerasperf.formatting import count
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.verdict import AnyChange

if TYPE_CHECKING:
    import git

#: the metrics bisected by one measurement per commit: the followed exact ones
METRICS = {m.name: m for m in FOLLOWED if m.exact}
Values = Mapping[str, int | None]  # test key -> the metric


def values_of(measurement: Measurement, metric: str) -> dict[str, int | None]:
    value = METRICS[metric].value
    return {
        run.key: None if (v := value(run.record)) is None else int(v) for run in measurement.runs
    }


class Probe(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One commit bisect looked at: good (as GOOD), bad (differs) or skip (failed to run)."""

    index: int
    commit: Sha
    outcome: Literal["good", "bad", "skip"]
    values: dict[str, int | None]  # test key -> the metric
    error: str | None
    measured: bool


class Change(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One test's metric across the first change, with where it changed: the metric's change
    (a verdict's, tagged by its ``metric``; the calls' with their first entry points only)."""

    key: str = msgspec.field(name="test")
    before: int | None = None
    after: int | None = None
    change: AnyChange | None = None


class BisectResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``kerasperf bisect --json`` (schema ``kerasperf-bisect/2``; version 1 kept the calls'
    entry points and the graph breaks' changes in fields of their own)."""

    metric: str  # one of METRICS (the parser's choices)
    backend: str
    commits: tuple[Commit, ...]  # GOOD, ..., BAD (first parent)
    probes: tuple[Probe, ...]  # in the order they were looked at
    last_good: Commit | None = None  # None: GOOD and BAD do not differ
    first_bad: Commit | None = None
    candidates: tuple[Commit, ...] = ()  # more than one: skipped commits hide the first bad one
    changes: tuple[Change, ...] = ()
    exact: bool = False  # one candidate: the first bad commit is known
    measured: int = 0  # probes measured (the others came from the cache)
    schema: Literal["kerasperf-bisect/2"] = "kerasperf-bisect/2"

    def __post_init__(self) -> None:
        exact = self.first_bad is not None and len(self.candidates) == 1
        msgspec.structs.force_setattr(self, "exact", exact)
        msgspec.structs.force_setattr(self, "measured", sum(p.measured for p in self.probes))


def bisect(
    repo: git.Repo,
    good: str,
    bad: str,
    backend: str,
    selection: Selection,
    metric: str,
    cache: Cache,
    settings: RunSettings,
    *,
    top: int = 3,
    log: Log = quiet,
) -> BisectResult:
    """Binary search of GOOD..BAD (first parent) for the first commit whose metric differs."""
    commits = history_commits.first_parent_commits(repo, f"{good}..{bad}")
    if len(commits) < 2:
        raise HistoryError(f"{good} and {bad} are the same commit")
    probes: list[Probe] = []
    measurements: dict[int, Measurement] = {}

    def look(index: int, reference: Values | None) -> Probe:
        commit = commits[index]
        measurement, measured = obtain(
            repo, commit, backend, selection, cache, settings, log=log, where=f"[{index}] "
        )
        values = values_of(measurement, metric) if measurement.ok else {}
        if not measurement.ok:
            outcome: Literal["good", "bad", "skip"] = "skip"
        elif reference is None or values == reference:
            outcome = "good"
        else:
            outcome = "bad"
        probe = Probe(index, commit.sha, outcome, values, measurement.error, measured)
        probes.append(probe)
        if measurement.ok:
            measurements[index] = measurement
        return probe

    start = look(0, None)
    if start.outcome == "skip":
        raise HistoryError(f"GOOD {commits[0].short} does not run: {start.error}")
    if all(v is None for v in start.values.values()):
        raise HistoryError(f"no selected test measures {METRICS[metric].label} on {backend}")
    reference = start.values
    end = look(len(commits) - 1, reference)
    if end.outcome == "skip":
        raise HistoryError(f"BAD {commits[-1].short} does not run: {end.error}")
    if end.outcome == "good":
        return BisectResult(metric, backend, tuple(commits), tuple(probes))
    low, high = history_commits.binary_search(
        len(commits) - 1, lambda index: look(index, reference).outcome
    )
    candidates = tuple(commits[i] for i in range(low + 1, high + 1))
    changes = _changes(measurements[low], measurements[high], metric, top)
    return BisectResult(
        metric,
        backend,
        tuple(commits),
        tuple(probes),
        commits[low],
        commits[high],
        candidates,
        changes,
    )


def _changes(before: Measurement, after: Measurement, metric: str, top: int) -> tuple[Change, ...]:
    old = {run.key: run.record for run in before.runs}
    found = []
    for run in after.runs:
        then = old.get(run.key)
        value_then = values_of(before, metric).get(run.key)
        value_now = values_of(after, metric).get(run.key)
        if then is None or value_then == value_now:
            continue
        change = next(
            (c for c in diff(then, run.record).changes if c.__struct_config__.tag == metric), None
        )
        if isinstance(change, CallsChange):  # where: its first entry points (no explanation)
            points = change.entry_points[:top]
            change = replace(change, entry_points=points, function_diff=(), explanation=None)
        found.append(Change(run.key, value_then, value_now, change))
    return tuple(found)


# --------------------------------------------------------------------------- reporting


def lines(result: BisectResult) -> list[str]:
    out = [
        f"kerasperf bisect: {len(result.commits)} first-parent commits "
        f"{result.commits[0].short}..{result.commits[-1].short}, {result.backend}, "
        f"metric {result.metric}"
    ]
    for probe in result.probes:
        shown = ", ".join(f"{short_test(k)} {count(v)}" for k, v in sorted(probe.values.items()))
        how = "measured" if probe.measured else "cached"
        detail = f"failed: {probe.error}" if probe.outcome == "skip" else shown
        out.append(f"  [{probe.index}] {probe.commit[:10]} {probe.outcome} ({how}): {detail}")
    if result.first_bad is None:
        out.append(f"no change: the {result.metric} of GOOD and BAD are the same")
        return out
    if result.exact:
        out.append(f"first changed commit: {commit_line(result.first_bad)}")
    else:
        out.append(
            f"first changed commit: one of {len(result.candidates)} (skipped commits run into it):"
        )
        out += [f"  {commit_line(c)}" for c in result.candidates]
    for change in result.changes:
        delta = ""
        if change.before is not None and change.after is not None:
            delta = f" ({signed(change.after - change.before)})"
        out.append(
            f"  {short_test(change.key)}: {result.metric} {count(change.before)} → "
            f"{count(change.after)}{delta}"
        )
        where = change.change.where(short_function) if change.change else ()
        out += [f"    where: {line}" for line in where]
    skipped = [p for p in result.probes if p.outcome == "skip"]
    if skipped:
        out.append("skipped (failed to run, as git bisect skip):")
        out += [f"  {commit_line(result.commits[p.index])}: {p.error}" for p in skipped]
    return out


# --------------------------------------------------------------------------- the command


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "bisect",
        help="find the first commit of GOOD..BAD where a test's calls, graph breaks or "
        "latency change",
        description="Binary search of the first-parent commits GOOD..BAD of a Keras "
        "repository for the first commit whose exact count differs from GOOD's, or (--metric "
        "latency) that an interleaved A/B finds slower than GOOD, with how sure each step "
        "is; commits that fail to run are skipped (docs/history.md).",
    )
    parser.add_argument("good", metavar="GOOD")
    parser.add_argument("bad", metavar="BAD")
    add_repo(parser)
    parser.add_argument(
        "--test",
        nargs="+",
        required=True,
        metavar="NODEID",
        help="the test(s) whose metric is compared, found in the commit's tree, in ., or in "
        "the bundled suite (e.g. test_standard.py::test_cnn_forward)",
    )
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k at each commit")
    add_backend(parser)
    parser.add_argument(
        "--metric",
        choices=(*METRICS, "latency"),
        default="calls",
        help=f"{', '.join(METRICS)} (exact: one measurement per step; calls by default), or "
        "latency (one --test; each step an interleaved A/B against GOOD, as `kerasperf ab`)",
    )
    ab.add_statistics_arguments(parser, "latency: ")
    add_cache(parser, f"cache directories, shared with sweep ({DEFAULT_CACHE})")
    add_timeout(parser, "give up on one commit after this long")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the result as JSON")


def main(args: argparse.Namespace) -> int:
    return run_command("kerasperf bisect", _main, args)


_log = logger("kerasperf bisect")


def _main(args: argparse.Namespace) -> int:
    from pytest_kerasperf import backends

    repo = history_commits.open_repo(args.repo)
    if args.metric == "latency" and (len(args.test) != 1 or args.keyword):
        raise HistoryError("--metric latency bisects one test: give one --test NODEID, no -k")
    backend = args.backend or backends.active_backend()
    result: BisectResult | bisect_latency.LatencyBisectFile
    if args.metric == "latency":
        result, verdicts = bisect_latency.bisect_latency(
            repo, args.good, args.bad, backend, args.test[0], ab.statistics_of(args), log=_log
        )
        shown = bisect_latency.lines(result, verdicts)
    else:
        result = bisect(
            repo,
            args.good,
            args.bad,
            backend,
            Selection(tests=tuple(args.test), keyword=args.keyword, rounds=0),
            args.metric,
            Cache(args.cache),
            RunSettings(timeout_s=args.timeout),
            log=_log,
        )
        shown = lines(result)
    print("\n".join(shown))
    if args.json is not None:
        write_json(args.json, result)
    return 0 if result.first_bad is not None else 1
