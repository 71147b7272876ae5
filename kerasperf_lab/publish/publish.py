"""``kerasperf publish``'s inputs as typed rows: results files, sweeps and per-PR tables.

Every input is untrusted (a CI artifact, a fork's run, a file passed around):
results files arrive here as the outcomes ``results_file.load_results``
already checked; a sweep (``kerasperf-sweep/1``) and a per-PR table
(``kerasperf-prs/1``) arrive as parsed JSON and are checked here, field by
field: numbers are numbers (never a bool or a string), counts are
non-negative integers, shas are hexadecimal, PR numbers are positive
integers, and no text holds a control character.  A bad field is a
:class:`PublishError` naming the file and the field, in one line.

``html_page`` renders only these rows; links are built here, from validated
numbers and shas only, and only into https://github.com/keras-team/keras/.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kerasperf_lab.publish import article
from pytest_kerasperf import untrusted
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.outcome import Outcome

SWEEP_SCHEMA = "kerasperf-sweep/1"
KERAS = "https://github.com/keras-team/keras"
#: Longer text is refused (titles, function names and errors are far shorter).
MAX_TEXT = 2000
#: What one page shows at most (docs/publish.md gives the time and size at these caps): the
#: results of all its results files, the workloads charted from them (two figures each, the
#: most of the time: about 50 ms a figure), and per sweep its commits and its series (a
#: backend's test; hover labels grow with commits × series).
MAX_PAGE_RESULTS = 2_000
MAX_PAGE_WORKLOADS = 40
MAX_SWEEP_COMMITS = 500
MAX_SWEEP_SERIES = 100
MAX_PAGE_SWEEP_POINTS = MAX_SWEEP_COMMITS * MAX_SWEEP_SERIES  # all sweeps of a page
_SHA = re.compile(r"[0-9a-f]{7,40}")
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")  # a backend
STEP_STATUS = ("first", "changed", "unchanged", "failed", "missing")


class PublishError(ValueError):
    """An input that cannot be published; one line naming the file and the field."""


# --- checks of untrusted values ------------------------------------------------------


def as_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise PublishError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def as_array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise PublishError(f"{where}: expected an array, got {type(value).__name__}")
    return value


def as_count(value: Any, where: str, *, signed: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PublishError(f"{where}: expected an integer, got {_shown(value)}")
    if not signed and value < 0:
        raise PublishError(f"{where}: expected a count (>= 0), got {value}")
    return value


def as_opt_count(value: Any, where: str, *, signed: bool = False) -> int | None:
    return None if value is None else as_count(value, where, signed=signed)


def as_opt_ms(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PublishError(f"{where}: expected a number, got {_shown(value)}")
    if value < 0:
        raise PublishError(f"{where}: expected a duration (>= 0), got {value}")
    return float(value)


def as_text(value: Any, where: str, *, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str):
        raise PublishError(f"{where}: expected a string, got {_shown(value)}")
    if len(value) > limit:
        raise PublishError(f"{where}: {len(value):,} characters, more than {limit:,}")
    if untrusted.UNPRINTABLE_RE.search(value):
        raise PublishError(f"{where}: a control character in {value[:60]!a}")
    return value


def as_opt_text(value: Any, where: str) -> str | None:
    return None if value is None else as_text(value, where)


def as_choice(value: Any, where: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise PublishError(f"{where}: expected one of {', '.join(choices)}, got {_shown(value)}")
    return str(value)


def as_backend(value: Any, where: str) -> str:
    text = as_text(value, where, limit=40)
    if not _NAME.fullmatch(text):
        raise PublishError(f"{where}: not a backend name: {text!a}")
    return text


def as_sha(value: Any, where: str) -> str:
    text = as_text(value, where, limit=40)
    if not _SHA.fullmatch(text):
        raise PublishError(f"{where}: not a commit sha (7 to 40 lowercase hex digits): {text!a}")
    return text


def as_pr_number(value: Any, where: str) -> int:
    number = as_count(value, where)
    if not 0 < number < 10**9:
        raise PublishError(f"{where}: not a pull request number: {number}")
    return number


def _shown(value: Any) -> str:
    return type(value).__name__ if isinstance(value, dict | list) else repr(value)[:60]


def pr_url(number: int) -> str:
    """The PR's page on GitHub, for a validated number only."""
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 10**9:
        raise PublishError(f"not a pull request number: {number!r}")
    return f"{KERAS}/pull/{number}"


def commit_url(sha: str) -> str:
    """The commit's page on GitHub, for a validated sha only."""
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise PublishError(f"not a commit sha: {sha!r}")
    return f"{KERAS}/commit/{sha}"


# --- results files: one point per test of each run -----------------------------------


@dataclass(frozen=True)
class PlainPoint:
    """The plain-framework twin of one test, timed in the same process and run."""

    name: str
    calls: int
    median_ms: float
    iqr_ms: float
    rounds: int


@dataclass(frozen=True)
class RunPoint:
    """One test of one results file (a run)."""

    run: str  # the results file's name
    backend: str
    mode: str
    workload: str  # the test without its file and mode: test_lm_forward
    key: str
    calls: int
    graph_breaks: int | None
    recompiles: int | None
    median_ms: float | None
    iqr_ms: float | None
    rounds: int | None
    status: str
    category: str
    passed: bool
    failures: tuple[str, ...]
    calls_delta: int | None
    #: the plain-framework twin timed in the same run (``--kerasperf-plain``), if any
    plain: PlainPoint | None = None

    @property
    def config(self) -> str:
        return article.config_label(self.backend, self.mode, self.workload)


def run_points(run: str, outcomes: Sequence[Outcome]) -> list[RunPoint]:
    points = []
    for outcome in outcomes:
        record = outcome.record
        latency = record.latency
        twin = record.plain_twin
        plain = None
        if twin is not None and twin.latency is not None:
            plain = PlainPoint(
                twin.name,
                twin.calls,
                twin.latency.median_ms,
                twin.latency.iqr_ms,
                twin.latency.rounds,
            )
        points.append(
            RunPoint(
                run=run,
                backend=record.backend,
                mode=record.mode,
                workload=article.workload_name(article.workload_of(outcome.key, record.mode)),
                key=outcome.key,
                calls=record.calls,
                graph_breaks=record.graph_breaks.breaks if record.graph_breaks else None,
                recompiles=record.recompiles,
                median_ms=latency.median_ms if latency else None,
                iqr_ms=latency.iqr_ms if latency else None,
                rounds=latency.rounds if latency else None,
                status=outcome.verdict.status,
                category=outcome.category,
                passed=outcome.passed,
                failures=outcome.verdict.failure_lines,
                calls_delta=calls.delta if (calls := outcome.verdict.change(CallsChange)) else None,
                plain=plain,
            )
        )
    return points


def failing_first(points: Sequence[RunPoint]) -> list[RunPoint]:
    """The gate's results: regressions first, then other failures, then the rest."""

    def rank(point: RunPoint) -> int:
        if point.category == "regression":
            return 0
        return 1 if not point.passed else 2

    return sorted(points, key=rank)  # stable: the runs' own order within each group


# --- a sweep (kerasperf sweep --json) ---------------------------------------------------


@dataclass(frozen=True)
class SweepCommit:
    index: int
    sha: str
    date: str
    pr: int | None
    title: str

    @property
    def label(self) -> str:
        return f"#{self.pr}" if self.pr is not None else self.sha[:10]


@dataclass(frozen=True)
class SweepPoint:
    index: int
    status: str
    calls: int | None
    graph_breaks: int | None
    latency_ms: float | None
    error: str | None


@dataclass(frozen=True)
class SweepSeries:
    backend: str
    test: str
    points: tuple[SweepPoint, ...]  # by commit index


@dataclass(frozen=True)
class Sweep:
    name: str  # the file's name
    spec: str
    commits: tuple[SweepCommit, ...]
    series: tuple[SweepSeries, ...]


def sweep_from_json(name: str, data: Any, where: str | None = None) -> Sweep:
    where = where or name
    doc = as_object(data, where)
    if doc.get("schema") != SWEEP_SCHEMA:
        raise PublishError(f"{where}: not a sweep ({SWEEP_SCHEMA})")
    commits = []
    listed = as_array(doc.get("commits"), f"{where}: commits")
    if len(listed) > MAX_SWEEP_COMMITS:
        raise PublishError(
            f"{where}: commits: {len(listed):,}, more than the {MAX_SWEEP_COMMITS:,} a page shows"
        )
    for i, value in enumerate(listed):
        at = f"{where}: commits/{i}"
        commit = as_object(value, at)
        pr = commit.get("pr")
        commits.append(
            SweepCommit(
                index=i,
                sha=as_sha(commit.get("sha"), f"{at}/sha"),
                date=as_text(commit.get("date"), f"{at}/date", limit=40),
                pr=None if pr is None else as_pr_number(pr, f"{at}/pr"),
                title=as_text(commit.get("title"), f"{at}/title"),
            )
        )
    by_test: dict[tuple[str, str], dict[int, SweepPoint]] = {}
    for i, value in enumerate(as_array(doc.get("rows"), f"{where}: rows")):
        at = f"{where}: rows/{i}"
        row = as_object(value, at)
        index = as_count(row.get("index"), f"{at}/index")
        if index >= len(commits):
            raise PublishError(f"{at}/index: {index}, but the sweep has {len(commits)} commits")
        test = as_opt_text(row.get("test"), f"{at}/test")
        backend = as_backend(row.get("backend"), f"{at}/backend")
        point = SweepPoint(
            index=index,
            status=as_choice(row.get("status"), f"{at}/status", STEP_STATUS),
            calls=as_opt_count(row.get("calls"), f"{at}/calls"),
            graph_breaks=as_opt_count(row.get("graph_breaks"), f"{at}/graph_breaks"),
            latency_ms=as_opt_ms(row.get("latency_ms"), f"{at}/latency_ms"),
            error=as_opt_text(row.get("error"), f"{at}/error"),
        )
        if test is None:  # a commit that failed or was not measured: no test to draw
            continue
        if (backend, test) not in by_test and len(by_test) == MAX_SWEEP_SERIES:
            raise PublishError(
                f"{at}: more than {MAX_SWEEP_SERIES} series (a backend's test), the most a page "
                "shows"
            )
        series = by_test.setdefault((backend, test), {})
        if index in series:
            raise PublishError(f"{at}: {test} ({backend}) at commit {index} twice")
        series[index] = point
    return Sweep(
        name=name,
        spec=as_text(doc.get("range"), f"{where}: range"),
        commits=tuple(commits),
        series=tuple(
            SweepSeries(backend, test, tuple(points[k] for k in sorted(points)))
            for (backend, test), points in by_test.items()
        ),
    )


def check_page(where: str, points: Sequence[RunPoint], sweeps: Sequence[Sweep]) -> None:
    """PublishError naming ``where`` (the input just read) when the inputs so far are more
    than a page shows."""
    workloads = len({point.workload for point in points})
    cells = sum(len(sweep.commits) * len(sweep.series) for sweep in sweeps)
    fewer = ": publish fewer results files"
    for count, limit, what, hint in (
        (len(points), MAX_PAGE_RESULTS, "results with the inputs before it", fewer),
        (workloads, MAX_PAGE_WORKLOADS, "workloads to chart with the inputs before it", fewer),
        (cells, MAX_PAGE_SWEEP_POINTS, "commits × series in the sweeps up to it", ""),
    ):
        if count > limit:
            raise PublishError(
                f"{where}: {count:,} {what}, more than the {limit:,} a page shows{hint}"
            )
