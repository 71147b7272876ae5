"""``kerasperf sweep``: measure a range of Keras commits, cache them, and say what each merge did.

Three separate layers, each usable alone:

- measuring (``measure``): one commit's tree exported into a temporary
  directory, the suite run against it for one backend in a fresh ``pytest``
  process with ``PYTHONPATH`` pointing at the export, and a check that Keras
  was really imported from there;
- the cache (``Cache``): one JSON file per (commit, backend, count-relevant
  environment, tests selection), so an interrupted or extended sweep, or
  another shard, measures only what is missing;
- judging and reporting (``build_table``, ``terminal_lines``, ``markdown``,
  ``to_json``): per step, the change of calls, graph breaks and latency
  against the previous commit measured, where the calls changed
  (``culprits.entry_points``), and where a test's latency series changes
  level (``changepoints.e_divisive``).

This module is also a pytest plugin, loaded with ``-p`` into each measuring
process only: its ``pytest_sessionfinish`` writes where ``keras`` came from,
and its ``pytest_collection_modifyitems`` keeps the tests an A/B selected.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_kerasperf import backends, environment
from pytest_kerasperf.baseline import test_key, write_atomic
from pytest_kerasperf.culprits import EntryPoint, entry_points, signed
from pytest_kerasperf.formatting import code, escape
from pytest_kerasperf.history import changepoints
from pytest_kerasperf.history import commits as history_commits
from pytest_kerasperf.history.commits import Commit, HistoryError
from pytest_kerasperf.record import BACKENDS, Record
from pytest_kerasperf.verdict import BreakChange, break_changes

if TYPE_CHECKING:
    import git
    import pytest

CACHE_FORMAT = 1
SWEEP_SCHEMA = "kerasperf-sweep/1"
DEFAULT_CACHE = Path(".kerasperf") / "sweep-cache"
DEFAULT_TIMEOUT_S = 3600.0
#: The measuring process writes where keras was imported from to this file.
PROBE_VARIABLE = "KERASPERF_SWEEP_PROBE"
#: In a measuring process: a JSON file listing the test keys to run (the others deselected).
SELECT_VARIABLE = "KERASPERF_SELECT_KEYS"
ERROR_CHARS = 300

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


# --------------------------------------------------------------------------- what is measured


@dataclass(frozen=True)
class Selection:
    """Which tests run at each commit: the bundled suite (no ``tests``) or node ids, ``-k``."""

    tests: tuple[str, ...] = ()
    keyword: str | None = None
    rounds: int = 0  # --kerasperf-rounds: 0 measures counts only

    def to_json(self) -> dict[str, Any]:
        return {"tests": list(self.tests), "keyword": self.keyword, "rounds": self.rounds}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Selection:
        keyword = data.get("keyword")
        return cls(
            tests=tuple(str(t) for t in data.get("tests", ())),
            keyword=None if keyword is None else str(keyword),
            rounds=int(data.get("rounds", 0)),
        )

    def digest(self) -> str:
        return _digest(self.to_json())

    def describe(self) -> str:
        what = " ".join(self.tests) if self.tests else "the bundled suite"
        keyword = f" -k {self.keyword!r}" if self.keyword else ""
        return f"{what}{keyword}, rounds {self.rounds}"


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def local_fingerprint(backend: str) -> dict[str, str | None]:
    """The count-relevant environment a measurement here would run under (no import of Keras)."""
    env: dict[str, str | None] = {"python": platform.python_version()}
    env.update(backends.framework_versions())
    for name in environment.RECORDED_VARIABLES:
        env[f"env.{name}"] = os.environ.get(name)
    return environment.count_fingerprint(env, backend)


def describe_fingerprint(fingerprint: Mapping[str, str | None]) -> str:
    return ", ".join(f"{name} {value}" for name, value in fingerprint.items())


@dataclass(frozen=True)
class MeasuredTest:
    """One test's measurement at one commit (``key``: the baseline key, e.g. with ``[eager]``)."""

    key: str
    nodeid: str
    record: Record

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "nodeid": self.nodeid, "record": self.record.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasuredTest:
        return cls(
            key=str(data["key"]),
            nodeid=str(data["nodeid"]),
            record=Record.from_json(data["record"]),
        )


@dataclass(frozen=True)
class Measurement:
    """One (commit, backend): every selected test's record, or why the commit failed."""

    commit: str
    backend: str
    selection: Selection
    fingerprint: Mapping[str, str | None]
    ok: bool
    error: str | None = None
    keras: str | None = None  # the version of the Keras imported from the commit's tree
    seconds: float = 0.0
    runs: tuple[MeasuredTest, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CACHE_FORMAT,
            "commit": self.commit,
            "backend": self.backend,
            "selection": self.selection.to_json(),
            "fingerprint": dict(self.fingerprint),
            "ok": self.ok,
            "error": self.error,
            "keras": self.keras,
            "seconds": round(self.seconds, 1),
            "results": [run.to_json() for run in self.runs],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Measurement:
        if data.get("format") != CACHE_FORMAT:
            raise ValueError(f"cache format {data.get('format')!r}, expected {CACHE_FORMAT}")
        return cls(
            commit=str(data["commit"]),
            backend=str(data["backend"]),
            selection=Selection.from_json(data["selection"]),
            fingerprint={str(k): v for k, v in data["fingerprint"].items()},
            ok=bool(data["ok"]),
            error=data.get("error"),
            keras=data.get("keras"),
            seconds=float(data.get("seconds", 0.0)),
            runs=tuple(MeasuredTest.from_json(r) for r in data.get("results", ())),
        )


# --------------------------------------------------------------------------- measuring


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a measuring process only (``-p``): record where ``keras`` was imported from."""
    target = os.environ.get(PROBE_VARIABLE)
    if not target:
        return
    keras = sys.modules.get("keras")
    probe = {
        "keras_file": getattr(keras, "__file__", None),
        "keras_version": getattr(keras, "__version__", None),
    }
    Path(target).write_text(json.dumps(probe), encoding="utf-8")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a measuring process only: keep the tests whose keys the select file lists.

    By key (the file name and the test), so one list selects the same tests
    in any tree; a listed test that a tree lacks is simply not measured there.
    """
    select = os.environ.get(SELECT_VARIABLE)
    if not select:
        return
    wanted = set(json.loads(Path(select).read_text(encoding="utf-8")))
    kept = [item for item in items if test_key(item.nodeid) in wanted]
    dropped = [item for item in items if test_key(item.nodeid) not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def suite_dir() -> Path:
    """The bundled suite's directory (``pytest_kerasperf/suite``)."""
    return Path(__file__).resolve().parent.parent / "suite"


def resolve_tests(tests: Sequence[str], tree: Path, cwd: Path) -> tuple[list[str], list[str]]:
    """Pytest arguments for ``tests``, each file looked up in the commit's tree, in ``cwd``, and
    in the bundled suite (in that order); the node ids found nowhere."""
    found: list[str] = []
    missing: list[str] = []
    for nodeid in tests:
        path, sep, rest = nodeid.partition("::")
        for base in (tree, cwd, suite_dir()):
            candidate = base / path
            if candidate.exists():
                found.append(f"{candidate}{sep}{rest}")
                break
        else:
            missing.append(nodeid)
    return found, missing


_SKIPPED = re.compile(r"^SKIPPED \[\d+\] \S+?:\d+: (?P<reason>.+)$")


def error_line(stdout: str, stderr: str, returncode: int) -> str:
    """The last line saying what went wrong in a measuring process's output.

    In order: pytest's ``E`` lines (an exception), a skip reason (the plugin
    skips a test whose backend or Keras cannot be imported), an ``ERROR`` line
    (usage), else the last line of output.
    """
    if returncode == 5:
        return "no test collected: check --tests and -k"
    out = stdout.splitlines()
    e_lines = [line[1:].strip() for line in out if line.startswith("E ") and line[1:].strip()]
    if e_lines:
        return e_lines[-1][:ERROR_CHARS]
    skipped = [m["reason"] for line in out if (m := _SKIPPED.match(line))]
    if skipped:
        return f"skipped: {skipped[-1]}"[:ERROR_CHARS]
    for text in (stderr, stdout):
        marked = [line.strip() for line in text.splitlines() if line.startswith("ERROR")]
        if marked:
            return marked[-1][:ERROR_CHARS]
    for text in (stdout, stderr):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1][:ERROR_CHARS]
    return f"pytest exited with code {returncode}"


@dataclass(frozen=True)
class RunSettings:
    python: str = sys.executable
    timeout_s: float = DEFAULT_TIMEOUT_S
    cwd: Path = field(default_factory=Path.cwd)  # where --tests paths not in the tree are found


def measuring_env(backend: str, tree: Path, scratch: Path, probe: Path) -> dict[str, str]:
    """The environment of a process measuring the Keras exported at ``tree``: exact counts
    (``PYTHONHASHSEED=0``), the backend, an empty ``KERAS_HOME`` (Keras's default config),
    the export first on ``PYTHONPATH``, the import probe's output path; no ``PYTEST_*``
    variable of the calling pytest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(
        PYTHONHASHSEED="0",
        KERAS_BACKEND=backend,
        KERAS_HOME=str(scratch / "keras-home"),
        PYTHONPATH=os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])]),
        **{PROBE_VARIABLE: str(probe)},
    )
    return env


def run_suite(
    tree: Path, backend: str, selection: Selection, settings: RunSettings, scratch: Path
) -> tuple[bool, str | None, str | None, list[MeasuredTest]]:
    """Run the selection against the Keras in ``tree``: (ok, error, keras version, results)."""
    if not history_commits.has_keras_package(tree):
        return False, "no keras/__init__.py at the top of the commit's tree", None, []
    targets = ["--pyargs", "pytest_kerasperf.suite"]
    if selection.tests:
        targets, missing = resolve_tests(selection.tests, tree, settings.cwd)
        if missing:
            return False, f"test not found in this commit: {', '.join(missing)}", None, []
    out, probe = scratch / "results.json", scratch / "probe.json"
    argv = [
        settings.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        __name__,
        "-q",
        "-rs",
        "--kerasperf-update-baseline",
        f"--kerasperf-baseline-dir={scratch / 'baselines'}",
        f"--kerasperf-json={out}",
        f"--kerasperf-rounds={selection.rounds}",
        *(["-k", selection.keyword] if selection.keyword else []),
        *targets,
    ]
    env = measuring_env(backend, tree, scratch, probe)
    try:
        proc = subprocess.run(
            argv,
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=settings.timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {settings.timeout_s:g} s", None, []
    probed: dict[str, Any] = {}
    if probe.is_file():
        probed = json.loads(probe.read_text(encoding="utf-8"))
    version = probed.get("keras_version")
    keras_file = probed.get("keras_file")
    runs = []
    if out.is_file():
        for result in json.loads(out.read_text(encoding="utf-8"))["results"]:
            if not result["test_failed"]:
                runs.append(
                    MeasuredTest(
                        str(result["key"]),
                        str(result["nodeid"]),
                        Record.from_json(result["record"]),
                    )
                )
    if proc.returncode != 0 or not runs:
        return False, error_line(proc.stdout, proc.stderr, proc.returncode), version, runs
    inside = keras_file is not None and Path(keras_file).resolve().is_relative_to(tree.resolve())
    if not inside:
        return (
            False,
            f"keras was imported from {keras_file}, not from the commit's tree",
            version,
            runs,
        )
    runs.sort(key=lambda run: run.key)
    return True, None, version, runs


def measure(
    repo: git.Repo,
    commit: str,
    backend: str,
    selection: Selection,
    settings: RunSettings,
) -> Measurement:
    """Export ``commit``'s tree into a temporary directory and measure it on ``backend``."""
    fingerprint = local_fingerprint(backend)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kerasperf-sweep-") as scratch_name:
        scratch = Path(scratch_name)
        outcome: tuple[bool, str | None, str | None, list[MeasuredTest]]
        try:
            tree = history_commits.export(repo, commit, scratch / "tree")
        except HistoryError as error:
            outcome = (False, str(error), None, [])
        else:
            outcome = run_suite(tree, backend, selection, settings, scratch)
    ok, error_text, version, runs = outcome
    if runs:  # where the process says it measured, not where this one thinks it would
        fingerprint = environment.count_fingerprint(runs[0].record.environment, backend)
    return Measurement(
        commit=commit,
        backend=backend,
        selection=selection,
        fingerprint=fingerprint,
        ok=ok,
        error=error_text,
        keras=version,
        seconds=time.monotonic() - started,
        runs=tuple(runs) if ok else (),
    )


# --------------------------------------------------------------------------- the cache


class Cache:
    """Measurements as JSON files ``<sha>-<backend>-<environment>-<selection>.json``.

    Written into the first directory, read from all of them (shards' caches).
    """

    def __init__(self, directories: Sequence[Path]) -> None:
        if not directories:
            raise ValueError("a cache needs a directory")
        self.directories = tuple(directories)

    @staticmethod
    def name(
        commit: str, backend: str, fingerprint: Mapping[str, str | None], selection: Selection
    ) -> str:
        return f"{commit}-{backend}-{_digest(dict(fingerprint))}-{selection.digest()}.json"

    def get(
        self,
        commit: str,
        backend: str,
        fingerprint: Mapping[str, str | None],
        selection: Selection,
    ) -> Measurement | None:
        name = self.name(commit, backend, fingerprint, selection)
        for directory in self.directories:
            found = self._load(directory / name)
            if found is not None:
                return found
        return None

    def candidates(self, commit: str, backend: str, selection: Selection) -> list[Measurement]:
        """Every cached measurement of (commit, backend, selection), in any environment."""
        found = []
        for directory in self.directories:
            for path in sorted(directory.glob(f"{commit}-{backend}-*-{selection.digest()}.json")):
                measurement = self._load(path)
                if measurement is not None:
                    found.append(measurement)
        return found

    def put(self, measurement: Measurement) -> Path:
        path = self.directories[0] / self.name(
            measurement.commit, measurement.backend, measurement.fingerprint, measurement.selection
        )
        write_atomic(path, json.dumps(measurement.to_json(), sort_keys=True) + "\n")
        return path

    @staticmethod
    def _load(path: Path) -> Measurement | None:
        try:
            return Measurement.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise HistoryError(f"{path}: not a sweep cache file ({error})") from None


def obtain(
    repo: git.Repo,
    commit: Commit,
    backend: str,
    selection: Selection,
    cache: Cache,
    settings: RunSettings,
    *,
    retry_failed: bool = False,
    log: Log = _quiet,
    where: str = "",
) -> tuple[Measurement, bool]:
    """The measurement of (commit, backend) from the cache, else measured and cached; measured?"""
    local = local_fingerprint(backend)
    cached = cache.get(commit.sha, backend, local, selection)
    if cached is not None and (cached.ok or not retry_failed):
        return cached, False
    log(f"{where}{commit.short} {commit.label()} {backend}: measuring ...")
    measurement = measure(repo, commit.sha, backend, selection, settings)
    cache.put(measurement)
    if dict(measurement.fingerprint) != local:
        log(
            f"{where}{commit.short} {backend}: measured with "
            f"{describe_fingerprint(measurement.fingerprint)}, not this machine's "
            f"{describe_fingerprint(local)} (check {settings.python})"
        )
    if measurement.ok:
        tests = len(measurement.runs)
        log(
            f"{where}{commit.short} {backend}: {tests} test{'s' if tests != 1 else ''}, keras "
            f"{measurement.keras}, {measurement.seconds:.0f} s"
        )
    else:
        log(f"{where}{commit.short} {backend}: failed: {measurement.error}")
    return measurement, True


# --------------------------------------------------------------------------- shards and merging


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N), 1 <= K <= N."""
    k, sep, n = text.partition("/")
    try:
        shard, shards = int(k), int(n)
    except ValueError:
        shard = shards = 0
    if not sep or shards < 1 or not 1 <= shard <= shards:
        raise HistoryError(f"--shard {text}: give K/N with 1 <= K <= N, e.g. 2/4")
    return shard, shards


def in_shard(index: int, shard: tuple[int, int] | None) -> bool:
    """Commit ``index`` (0: the range's start) belongs to shard K/N when index % N == K - 1."""
    return shard is None or index % shard[1] == shard[0] - 1


@dataclass
class SweepRun:
    measured: int = 0
    from_cache: int = 0
    failed: int = 0


def run_sweep(
    repo: git.Repo,
    commits: Sequence[Commit],
    backends_: Sequence[str],
    selection: Selection,
    cache: Cache,
    settings: RunSettings,
    *,
    shard: tuple[int, int] | None = None,
    retry_failed: bool = False,
    log: Log = _quiet,
) -> SweepRun:
    """Measure what the cache lacks of the shard's commits on every backend."""
    account = SweepRun()
    mine = [(i, c) for i, c in enumerate(commits) if in_shard(i, shard)]
    for number, (index, commit) in enumerate(mine, start=1):
        for backend in backends_:
            measurement, measured = obtain(
                repo,
                commit,
                backend,
                selection,
                cache,
                settings,
                retry_failed=retry_failed,
                log=log,
                where=f"[{number}/{len(mine)}, commit {index}] ",
            )
            account.measured += measured
            account.from_cache += not measured
            account.failed += not measurement.ok
    return account


def gather(
    commits: Sequence[Commit],
    backends_: Sequence[str],
    selection: Selection,
    cache: Cache,
) -> tuple[dict[tuple[str, str], Measurement], dict[str, Mapping[str, str | None]], list[str]]:
    """Every (commit, backend) measurement of one environment per backend: found, the
    environments, what is missing (``<sha> (<backend>)``).

    A backend's environment is this machine's when the caches hold it, else
    the only one they hold (a merge job needs no frameworks installed).
    """
    found: dict[tuple[str, str], Measurement] = {}
    environments: dict[str, Mapping[str, str | None]] = {}
    missing: list[str] = []
    for backend in backends_:
        local = local_fingerprint(backend)
        by_environment: dict[str, dict[str, Measurement]] = {}
        fingerprints: dict[str, Mapping[str, str | None]] = {}
        for commit in commits:
            for measurement in cache.candidates(commit.sha, backend, selection):
                digest = _digest(dict(measurement.fingerprint))
                fingerprints[digest] = measurement.fingerprint
                by_environment.setdefault(digest, {})[commit.sha] = measurement
        chosen = _digest(dict(local))
        if chosen not in by_environment and len(by_environment) == 1:
            chosen = next(iter(by_environment))
        elif chosen not in by_environment and len(by_environment) > 1:
            listed = "; ".join(describe_fingerprint(f) for f in fingerprints.values())
            raise HistoryError(
                f"the caches hold {backend} measurements of several environments ({listed}) "
                "and none is this machine's: merge the caches of one environment"
            )
        environments[backend] = fingerprints.get(chosen, local)
        for commit in commits:
            picked = by_environment.get(chosen, {}).get(commit.sha)
            if picked is None:
                missing.append(f"{commit.short} ({backend})")
            else:
                found[(commit.sha, backend)] = picked
    return found, environments, missing


# --------------------------------------------------------------------------- judging

Status = Literal["first", "changed", "unchanged", "failed", "missing"]


@dataclass(frozen=True)
class Step:
    """One row: a test's numbers at one commit against the previous commit that measured it."""

    index: int  # the commit's position in the range (0: the start)
    commit: Commit
    backend: str
    status: Status
    key: str | None = None
    against: str | None = None  # the sha compared with
    keras: str | None = None
    calls: int | None = None
    calls_delta: int | None = None
    graph_breaks: int | None = None
    graph_breaks_delta: int | None = None
    latency_ms: float | None = None
    latency_delta_pct: float | None = None
    #: E-divisive: the latency series of this test changes level here (segment medians)
    latency_change: changepoints.ChangePoint | None = None
    entry_points: tuple[EntryPoint, ...] = ()
    break_changes: tuple[BreakChange, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "commit": self.commit.sha,
            "pr": self.commit.pr,
            "title": self.commit.title,
            "date": self.commit.date,
            "backend": self.backend,
            "status": self.status,
            "test": self.key,
            "against": self.against,
            "keras": self.keras,
            "calls": self.calls,
            "calls_delta": self.calls_delta,
            "graph_breaks": self.graph_breaks,
            "graph_breaks_delta": self.graph_breaks_delta,
            "latency_ms": self.latency_ms,
            "latency_delta_pct": self.latency_delta_pct,
            "latency_change_point": None
            if self.latency_change is None
            else {
                "before_ms": self.latency_change.before,
                "after_ms": self.latency_change.after,
                "relative": self.latency_change.relative,
                "p_value": self.latency_change.p_value,
            },
            "entry_points": [p.to_json() for p in self.entry_points],
            "graph_break_changes": [
                {
                    "frame": c.frame,
                    "reason": c.reason,
                    "before": c.before,
                    "after": c.after,
                    "line": c.line,
                }
                for c in self.break_changes
            ],
            "error": self.error,
        }


def compare(before: Record, after: Record, top: int) -> dict[str, Any]:
    """What moved between two records of one test: deltas, entry points, break changes."""
    moved: dict[str, Any] = {"calls_delta": after.calls - before.calls}
    if dict(before.calls_by_function) != dict(after.calls_by_function) or dict(
        before.call_edges
    ) != dict(after.call_edges):
        moved["entry_points"] = entry_points(
            before.calls_by_function, before.call_edges, after.calls_by_function, after.call_edges
        )[:top]
    if before.graph_breaks is not None and after.graph_breaks is not None:
        moved["graph_breaks_delta"] = after.graph_breaks.breaks - before.graph_breaks.breaks
        moved["break_changes"] = break_changes(before.graph_breaks, after.graph_breaks)
    if before.latency is not None and after.latency is not None and before.latency.median_ms:
        moved["latency_delta_pct"] = round(
            (after.latency.median_ms / before.latency.median_ms - 1) * 100, 1
        )
    return moved


def build_steps(
    commits: Sequence[Commit],
    backends_: Sequence[str],
    measurements: Mapping[tuple[str, str], Measurement],
    top: int = 3,
) -> list[Step]:
    """Every commit x backend x test, each against the previous commit that measured the test."""
    steps: list[Step] = []
    previous: dict[tuple[str, str], tuple[str, Record]] = {}  # (backend, key) -> (sha, record)
    for index, commit in enumerate(commits):
        for backend in backends_:
            measurement = measurements.get((commit.sha, backend))
            if measurement is None:
                steps.append(Step(index, commit, backend, "missing"))
                continue
            if not measurement.ok:
                steps.append(
                    Step(
                        index,
                        commit,
                        backend,
                        "failed",
                        keras=measurement.keras,
                        error=measurement.error,
                    )
                )
                continue
            for run in measurement.runs:
                record = run.record
                graph = record.graph_breaks.breaks if record.graph_breaks else None
                latency = record.latency.median_ms if record.latency else None
                before = previous.get((backend, run.key))
                previous[(backend, run.key)] = (commit.sha, record)
                base = Step(
                    index,
                    commit,
                    backend,
                    "first",
                    key=run.key,
                    keras=measurement.keras,
                    calls=record.calls,
                    graph_breaks=graph,
                    latency_ms=latency,
                )
                if before is None:
                    steps.append(base)
                    continue
                moved = compare(before[1], record, top)
                changed = bool(
                    moved["calls_delta"]
                    or moved.get("entry_points")
                    or moved.get("graph_breaks_delta")
                    or moved.get("break_changes")
                )
                status: Status = "changed" if changed else "unchanged"
                steps.append(replace(base, status=status, against=before[0], **moved))
    return mark_latency_changes(steps)


def mark_latency_changes(steps: Sequence[Step]) -> list[Step]:
    """Mark where each test's latency series changes level, by E-divisive means.

    Per (backend, test), the medians of the commits that measured latency, in
    commit order, go to ``changepoints.e_divisive`` (minimum segment 3 commits,
    minimum magnitude 5 %, permutation test at 5 %); the first commit of each
    new level gets the change point and counts as changed.  Fewer than 6
    measured commits: no change point can be found, none is marked.
    """
    series: dict[tuple[str, str], list[int]] = {}  # (backend, key) -> positions in steps
    for position, step in enumerate(steps):
        if step.key is not None and step.latency_ms is not None:
            series.setdefault((step.backend, step.key), []).append(position)
    marked = list(steps)
    for positions in series.values():
        values = [steps[i].latency_ms or 0.0 for i in positions]
        for point in changepoints.e_divisive(values):
            position = positions[point.index]
            marked[position] = replace(marked[position], latency_change=point, status="changed")
    return marked


@dataclass(frozen=True)
class SweepTable:
    spec: str
    commits: tuple[Commit, ...]
    backends: tuple[str, ...]
    selection: Selection
    environments: Mapping[str, Mapping[str, str | None]]
    steps: tuple[Step, ...]


def build_table(
    spec: str,
    commits: Sequence[Commit],
    backends_: Sequence[str],
    selection: Selection,
    measurements: Mapping[tuple[str, str], Measurement],
    environments: Mapping[str, Mapping[str, str | None]],
    top: int = 3,
) -> SweepTable:
    return SweepTable(
        spec=spec,
        commits=tuple(commits),
        backends=tuple(backends_),
        selection=selection,
        environments=environments,
        steps=tuple(build_steps(commits, backends_, measurements, top)),
    )


# --------------------------------------------------------------------------- reporting

HEADER = (
    "commit",
    "merged",
    "PR",
    "title",
    "backend",
    "test",
    "calls",
    "Δ calls",
    "graph breaks (Δ)",
    "latency ms (Δ %)",
    "where it changed",
)
TITLE_CHARS = 60


def short_test(key: str | None) -> str:
    return "" if key is None else key.split("::", 1)[-1]


def short_function(name: str) -> str:
    """``keras/src/layers/layer.py:Layer.__call__`` -> ``layers/layer.py:Layer.__call__``."""
    return name.removeprefix("keras/src/")


def entry_text(point: EntryPoint) -> str:
    where = short_function(point.caller)
    if point.via:
        where = f"{short_function(point.via)} → {where}"
    return (
        f"{where} → {short_function(point.callee)} {point.before:,}→{point.after:,}× "
        f"(≈{signed(point.calls_delta)})"
    )


def _cells(step: Step, commits: Sequence[Commit]) -> tuple[str, ...]:
    commit = step.commit
    title = (
        commit.title if len(commit.title) <= TITLE_CHARS else commit.title[: TITLE_CHARS - 1] + "…"
    )
    head = (
        commit.short,
        commit.day,
        f"#{commit.pr}" if commit.pr is not None else "",
        title,
        step.backend,
    )
    if step.status in ("failed", "missing"):
        reason = f"failed: {step.error}" if step.status == "failed" else "not measured"
        return (*head, "", "", "", "", "", reason)
    delta = (
        "" if step.calls_delta is None else signed(step.calls_delta) if step.calls_delta else "0"
    )
    if step.against is not None and step.index > 0 and step.against != commits[step.index - 1].sha:
        delta += f" (vs {step.against[:10]})"
    graph = ""
    if step.graph_breaks is not None:
        graph = str(step.graph_breaks)
        if step.graph_breaks_delta:
            graph += f" ({signed(step.graph_breaks_delta)})"
    latency = ""
    if step.latency_ms is not None:
        latency = f"{step.latency_ms:.3f}"
        if step.latency_delta_pct is not None:
            latency += f" ({step.latency_delta_pct:+.1f}%)"
        if step.latency_change is not None:
            latency += (
                f"; change point {step.latency_change.relative:+.1%} "
                f"(p {step.latency_change.p_value:.2g})"
            )
    where = [entry_text(p) for p in step.entry_points] + [
        f"graph break {short_function(c.frame)} {c.before}→{c.after}× {c.reason}"
        for c in step.break_changes
    ]
    calls = "" if step.calls is None else f"{step.calls:,}"
    return (*head, short_test(step.key), calls, delta, graph, latency, "; ".join(where))


def shown_steps(table: SweepTable, changed_only: bool) -> list[Step]:
    if not changed_only:
        return list(table.steps)
    return [s for s in table.steps if s.status != "unchanged"]


def terminal_lines(table: SweepTable, *, changed_only: bool = False) -> list[str]:
    from pytest_kerasperf.report.terminal import table as text_table

    rows = [_cells(step, table.commits) for step in shown_steps(table, changed_only)]
    lines = [f"kerasperf sweep {table.spec}: {table.selection.describe()}", ""]
    lines += text_table(rows, HEADER)
    lines += ["", *_environment_lines(table)]
    return lines


def _environment_lines(table: SweepTable) -> list[str]:
    return [
        f"{backend} measured with: {describe_fingerprint(table.environments.get(backend, {}))}"
        for backend in table.backends
    ]


def markdown(table: SweepTable, *, changed_only: bool = False, charts: Sequence[str] = ()) -> str:
    """The per-PR table as GitHub Markdown (step summary, docs)."""
    failed = sum(s.status == "failed" for s in table.steps)
    lines = [
        f"### kerasperf sweep {code(table.spec)} ({escape(', '.join(table.backends))})",
        "",
        f"{len(table.commits)} first-parent commits; {table.selection.describe()}; each Δ is "
        "against the previous commit measured"
        + (f"; {failed} commit × backend failed to run" if failed else "")
        + ".",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" for _ in HEADER) + "|",
    ]
    for step in shown_steps(table, changed_only):
        cells = [escape(c) for c in _cells(step, table.commits)]
        if step.commit.pr is not None:
            cells[2] = f"#{step.commit.pr}"  # an int: GitHub links the pull request
        cells[5] = f"<code>{cells[5]}</code>" if cells[5] else ""
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + [f"- {escape(line)}" for line in _environment_lines(table)]
    if charts:
        lines += ["", *(f"![{Path(c).stem}]({c})" for c in charts)]
    return "\n".join(lines) + "\n"


def to_json(
    table: SweepTable, run: SweepRun | None = None, repo: str | None = None
) -> dict[str, Any]:
    return {
        "schema": SWEEP_SCHEMA,
        "range": table.spec,
        "repo": repo,
        "backends": list(table.backends),
        "selection": table.selection.to_json(),
        "environments": {b: dict(f) for b, f in table.environments.items()},
        "commits": [c.to_json() for c in table.commits],
        "rows": [s.to_json() for s in table.steps],
        "run": None if run is None else run.__dict__.copy(),
    }


# --------------------------------------------------------------------------- the command


def add_parsers(commands: Any) -> None:
    """``sweep`` and ``sweep-merge`` on the ``kerasperf`` command's sub-parsers."""
    sweep = commands.add_parser(
        "sweep",
        help="measure the first-parent commits A..B of a Keras repository, one table per PR",
        description="Measure each first-parent commit of A..B (and A) of a Keras repository on "
        "each backend, each in its own pytest process with the commit's Keras on PYTHONPATH, "
        "and print per commit the change of calls, graph breaks and latency and where the "
        "calls changed (docs/history.md). Measurements are cached: a rerun measures only "
        "what is new.",
    )
    _common_arguments(sweep)
    sweep.add_argument(
        "--shard",
        metavar="K/N",
        help="measure only the commits i (0: A) with i %% N == K-1, into the cache; merge the "
        "shards' caches with `kerasperf sweep-merge`",
    )
    sweep.add_argument(
        "--merge-only",
        action="store_true",
        help="measure nothing: build the table from the caches (as sweep-merge)",
    )
    sweep.add_argument(
        "--retry-failed", action="store_true", help="measure again the commits cached as failed"
    )
    sweep.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up on one (commit, backend) after this long ({DEFAULT_TIMEOUT_S:g})",
    )
    merge = commands.add_parser(
        "sweep-merge",
        help="build a sweep's table from the caches of its shards, measuring nothing",
        description="Build the table of `kerasperf sweep` from cache directories (e.g. one per "
        "shard) without measuring; an error lists what is missing.",
    )
    _common_arguments(merge)


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("range", metavar="A..B", help="the commits: A and A..B, first parent")
    parser.add_argument(
        "--repo", type=Path, default=Path("."), help="the Keras repository, bare or not (.)"
    )
    parser.add_argument(
        "--backend",
        nargs="+",
        choices=BACKENDS,
        metavar="BACKEND",
        help=f"backends to measure, among {', '.join(BACKENDS)} (default: $KERAS_BACKEND, "
        "else Keras's default)",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        metavar="NODEID",
        default=[],
        help="tests to run at each commit, found in the commit's tree, in ., or in the "
        "bundled suite (default: the bundled suite)",
    )
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k at each commit")
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        metavar="N",
        help="timed calls per test (--kerasperf-rounds; default 0: counts only, no latency)",
    )
    parser.add_argument(
        "--cache",
        nargs="+",
        type=Path,
        default=[DEFAULT_CACHE],
        metavar="DIR",
        help=f"cache directories; measurements are written into the first ({DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--markdown", metavar="PATH", help="also write the table as Markdown ('-': stdout)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the table as JSON")
    parser.add_argument("--charts", type=Path, metavar="DIR", help="draw PNG charts into DIR")
    parser.add_argument(
        "--changed-only", action="store_true", help="show only rows where something changed"
    )
    parser.add_argument(
        "--entry-points",
        type=int,
        default=3,
        metavar="N",
        help="entry points of a calls change shown per row (3)",
    )


def selection_of(args: argparse.Namespace) -> Selection:
    if args.rounds < 0:
        raise HistoryError(f"--rounds {args.rounds}: give a non-negative number")
    return Selection(tests=tuple(args.tests), keyword=args.keyword, rounds=args.rounds)


def backends_of(args: argparse.Namespace) -> tuple[str, ...]:
    chosen = args.backend or [backends.active_backend()]
    return tuple(dict.fromkeys(chosen))


def _stderr(line: str) -> None:
    print(f"kerasperf sweep: {line}", file=sys.stderr, flush=True)


def main(args: argparse.Namespace) -> int:
    command = f"kerasperf {args.command}"
    try:
        return _main(args)
    except HistoryError as error:
        print(f"{command}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"{command}: error: {error.filename}: {error.strerror}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    from pytest_kerasperf.history import charts

    merge_only = args.command == "sweep-merge" or args.merge_only
    shard = parse_shard(args.shard) if getattr(args, "shard", None) else None
    if shard and merge_only:
        raise HistoryError("--shard measures; --merge-only and sweep-merge do not")
    selection = selection_of(args)
    backends_ = backends_of(args)
    repo = history_commits.open_repo(args.repo)
    commits = history_commits.first_parent_commits(repo, args.range)
    cache = Cache(args.cache)
    run = None
    if not merge_only:
        settings = RunSettings(timeout_s=args.timeout)
        run = run_sweep(
            repo,
            commits,
            backends_,
            selection,
            cache,
            settings,
            shard=shard,
            retry_failed=args.retry_failed,
            log=_stderr,
        )
    found, environments, missing = gather(commits, backends_, selection, cache)
    scope = f"{len(commits)} commits × {len(backends_)} backend{'s' if len(backends_) > 1 else ''}"
    if shard:
        scope += f" (shard {shard[0]}/{shard[1]})"
    if run is not None:
        print(
            f"kerasperf sweep: {scope}: measured: {run.measured}, from cache: "
            f"{run.from_cache}, failed: {run.failed}"
        )
    if missing:
        listed = ", ".join(missing)
        if shard:
            print(f"kerasperf sweep: the table needs the other shards: merge the caches ({listed})")
            return 0
        raise HistoryError(f"missing from the caches {', '.join(map(str, args.cache))}: {listed}")
    table = build_table(
        args.range, commits, backends_, selection, found, environments, top=args.entry_points
    )
    written: list[Path] = []
    if args.charts is not None:
        try:
            written = charts.write(table, args.charts)
        except charts.ChartsUnavailable as error:
            raise HistoryError(str(error)) from None
    shown = [p.as_posix() for p in written]
    if args.markdown and args.markdown != "-":
        where = Path(args.markdown).resolve().parent
        shown = [Path(os.path.relpath(p.resolve(), where)).as_posix() for p in written]
    text = markdown(table, changed_only=args.changed_only, charts=shown)
    if args.markdown == "-":
        print(text)
    else:
        print("\n".join(terminal_lines(table, changed_only=args.changed_only)))
        if args.markdown:
            write_atomic(Path(args.markdown), text)
    for path in written:
        print(f"chart: {path}", file=sys.stderr if args.markdown == "-" else sys.stdout)
    if args.json is not None:
        document = to_json(table, run, str(args.repo))
        write_atomic(args.json, json.dumps(document, indent=2, sort_keys=True) + "\n")
    return 0
