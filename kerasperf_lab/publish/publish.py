"""``kerasperf publish``'s inputs as typed rows: results files, sweeps and per-PR tables.

Every input is untrusted (docs/publish.md, Untrusted input): a sweep and a per-PR table are read
into the very types the commands write them from (``typed``); a bad field is a
:class:`PublishError` naming the file and the field, in one line.  ``html_page`` renders only
these rows; links are built here, from validated numbers and shas only."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from kerasperf_lab.history.steps import FOLLOWED, MAX_TEXT, Step, SweepTable
from kerasperf_lab.history.steps import SWEEP_SCHEMA as SWEEP_SCHEMA
from kerasperf_lab.publish import article
from pytest_kerasperf import untrusted
from pytest_kerasperf.codec import printable_key, validation_text
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import PlainTwinRecord

#: the sweep files publish recognises: this version, and older ones it refuses by name
SWEEP_SCHEMAS = ("kerasperf-sweep/1", SWEEP_SCHEMA)
KERAS = "https://github.com/keras-team/keras"
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
T = TypeVar("T")


class PublishError(ValueError):
    """An input that cannot be published; one line naming the file and the field."""


def _texts(data: Any, at: str = "") -> Iterator[tuple[str, str]]:
    """Every string of parsed JSON, keys included, with its place (``commits/3/title``)."""
    if isinstance(data, str):
        yield at, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield at, key
            yield from _texts(value, f"{at}/{printable_key(key)}")
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _texts(value, f"{at}/{index}")


def typed(data: Any, type_: type[T], where: str) -> T:
    """Parsed JSON of an untrusted file as ``type_``: no text with a control character or over
    :data:`MAX_TEXT` characters, then the types and their limits; PublishError if not."""
    for at, text in _texts(data):
        place = f"{where}: {at.lstrip('/') or '<top level>'}"
        if len(text) > MAX_TEXT:
            raise PublishError(f"{place}: {len(text):,} characters, more than {MAX_TEXT:,}")
        if untrusted.UNPRINTABLE_RE.search(text):
            raise PublishError(f"{place}: a control character in {text[:60]!a}")
    try:
        return msgspec.convert(data, type_)
    except msgspec.ValidationError as error:
        raise PublishError(f"{where}: {validation_text(error, data, type_)}") from None


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
class RunPoint:
    """One test of one results file (a run)."""

    run: str  # the results file's name
    backend: str
    mode: str
    workload: str  # the test without its file and mode: test_lm_forward
    key: str
    calls: int
    values: dict[str, int | float]  # each followed metric's value, by its name, where measured
    recompiles: int | None
    median_ms: float | None
    iqr_ms: float | None
    rounds: int | None
    status: str
    category: str
    passed: bool
    failures: tuple[str, ...]
    calls_delta: int | None
    #: the plain-framework twin timed in the same run (``--kerasperf-plain``), where timed
    plain: PlainTwinRecord | None = None

    @property
    def config(self) -> str:
        return article.config_label(self.backend, self.mode, self.workload)


def run_points(run: str, outcomes: Sequence[Outcome]) -> list[RunPoint]:
    points = []
    for outcome in outcomes:
        record = outcome.record
        latency = record.latency
        twin = record.plain_twin
        points.append(
            RunPoint(
                run=run,
                backend=record.backend,
                mode=record.mode,
                workload=article.workload_name(article.workload_of(outcome.key, record.mode)),
                key=outcome.key,
                calls=record.calls,
                values={m.name: v for m in FOLLOWED if (v := m.value(record)) is not None},
                recompiles=record.recompiles,
                median_ms=latency.median_ms if latency else None,
                iqr_ms=latency.iqr_ms if latency else None,
                rounds=latency.rounds if latency else None,
                status=outcome.verdict.status,
                category=outcome.category,
                passed=outcome.passed,
                failures=outcome.verdict.failure_lines,
                calls_delta=calls.delta if (calls := outcome.verdict.change(CallsChange)) else None,
                plain=twin if twin is not None and twin.latency is not None else None,
            )
        )
    return points


def failing_first(points: Sequence[RunPoint]) -> list[RunPoint]:
    """The gate's results: regressions first, then other failures, then the rest (stable: the
    runs' own order within each group)."""
    return sorted(points, key=lambda p: 0 if p.category == "regression" else 2 if p.passed else 1)


# --- a sweep (kerasperf sweep --json) ---------------------------------------------------


@dataclass(frozen=True)
class SweepSeries:
    backend: str
    test: str
    points: tuple[Step, ...]  # by commit index


@dataclass(frozen=True)
class Sweep:
    name: str  # the file's name
    table: SweepTable
    series: tuple[SweepSeries, ...]


def sweep_from_json(name: str, data: Any, where: str | None = None) -> Sweep:
    """The sweep a file holds, checked as untrusted input; PublishError (one line) if not."""
    where = where or name
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != SWEEP_SCHEMA:
        raise PublishError(
            f"{where}: a sweep of {str(schema)[:40]!a}, not {SWEEP_SCHEMA}: run kerasperf "
            "sweep-merge with this version to write it again from the sweep's cache"
        )
    table = typed(data, SweepTable, where)
    commits = len(table.commits)
    if commits > MAX_SWEEP_COMMITS:
        raise PublishError(
            f"{where}: commits: {commits:,}, more than the {MAX_SWEEP_COMMITS:,} a page shows"
        )
    by_test: dict[tuple[str, str], dict[int, Step]] = {}
    for i, step in enumerate(table.steps):
        at = f"{where}: rows/{i}"
        if step.index >= commits:
            raise PublishError(f"{at}/index: {step.index}, but the sweep has {commits} commits")
        if step.key is None:  # a commit that failed or was not measured: no test to draw
            continue
        if (step.backend, step.key) not in by_test and len(by_test) == MAX_SWEEP_SERIES:
            raise PublishError(
                f"{at}: more than {MAX_SWEEP_SERIES} series (a backend's test), the most a page "
                "shows"
            )
        series = by_test.setdefault((step.backend, step.key), {})
        if step.index in series:
            raise PublishError(f"{at}: {step.key} ({step.backend}) at commit {step.index} twice")
        series[step.index] = step
    return Sweep(
        name=name,
        table=table,
        series=tuple(
            SweepSeries(backend, test, tuple(points[k] for k in sorted(points)))
            for (backend, test), points in by_test.items()
        ),
    )


def check_page(where: str, points: Sequence[RunPoint], sweeps: Sequence[Sweep]) -> None:
    """PublishError naming ``where`` (the input just read) when the inputs so far are more
    than a page shows."""
    workloads = len({point.workload for point in points})
    cells = sum(len(sweep.table.commits) * len(sweep.series) for sweep in sweeps)
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
