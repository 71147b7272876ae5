"""Running the suite at a commit: what is measured, the measuring process, and its outcome.

One commit's tree is exported into a temporary directory (``commits.export``) and the selection
run against it for one backend in a fresh ``pytest`` process (``measuring_env``: exact counts,
the backend, the export first on ``PYTHONPATH``), with the probe plugin (``ab.probe``) saying
where Keras was really imported from.  The sweep, bisect and A/B all start their processes from
here (``measuring_argv``) and read them back the same way (``error_line``, ``outputs``).
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from pytest_kerasperf import backends, environment
from pytest_kerasperf.ab import commits as history_commits
from pytest_kerasperf.ab import probe as probe_plugin
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.ab.outputs import MeasuredTest, read_probe, read_results
from pytest_kerasperf.codec import to_data

if TYPE_CHECKING:
    import git

#: The format of a measurement's JSON (``Measurement``), the sweep cache's files.
CACHE_FORMAT: Literal[1] = 1
DEFAULT_TIMEOUT_S = 3600.0
ERROR_CHARS = 300
#: The bundled suite's directory (``pytest_kerasperf/suite``)
SUITE = Path(__file__).resolve().parent.parent / "suite"

Log = Callable[[str], None]


def quiet(_: str) -> None:
    """A ``Log`` that says nothing."""


# --------------------------------------------------------------------------- what is measured


class Selection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Which tests run at each commit: the bundled suite (no ``tests``) or node ids, ``-k``."""

    tests: tuple[str, ...] = ()
    keyword: str | None = None
    rounds: int = 0  # --kerasperf-rounds: 0 measures counts only

    def digest(self) -> str:
        return digest(to_data(self))

    def describe(self) -> str:
        what = " ".join(self.tests) if self.tests else "the bundled suite"
        keyword = f" -k {self.keyword!r}" if self.keyword else ""
        return f"{what}{keyword}, rounds {self.rounds}"


def digest(data: object) -> str:
    """12 hex digits of the SHA-256 of ``data`` as canonical JSON (cache file names)."""
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


class Measurement(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One (commit, backend): every selected test's record, or why the commit failed; as
    JSON, a sweep cache's file (``format``: ``CACHE_FORMAT``)."""

    commit: str
    backend: str
    selection: Selection
    fingerprint: dict[str, str | None]
    ok: bool
    error: str | None = None
    keras: str | None = None  # the version of the Keras imported from the commit's tree
    seconds: float = 0.0
    runs: tuple[MeasuredTest, ...] = msgspec.field(default=(), name="results")
    format: Literal[1] = CACHE_FORMAT


# --------------------------------------------------------------------------- the tests of a tree


def resolve_tests(tests: Sequence[str], tree: Path, cwd: Path) -> tuple[list[str], list[str]]:
    """Pytest arguments for ``tests``, each file looked up in the commit's tree, in ``cwd``, and
    in the bundled suite (in that order); the node ids found nowhere."""
    found: list[str] = []
    missing: list[str] = []
    for nodeid in tests:
        path, sep, rest = nodeid.partition("::")
        for base in (tree, cwd, SUITE):
            candidate = base / path
            if candidate.exists():
                found.append(f"{candidate}{sep}{rest}")
                break
        else:
            missing.append(nodeid)
    return found, missing


# --------------------------------------------------------------------------- a measuring process


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
        **{probe_plugin.PROBE_VARIABLE: str(probe)},
    )
    return env


def measuring_argv(
    python: str,
    scratch: Path,
    rounds: int,
    targets: Sequence[str],
    *,
    keyword: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The command of a measuring process: pytest with the probe plugin, the records written to
    ``scratch / "results.json"``, baselines to a scratch directory; ``extra`` options before
    ``-k`` and the targets."""
    return [
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        probe_plugin.__name__,
        "-q",
        "-rs",
        "--kerasperf-update-baseline",
        f"--kerasperf-baseline-dir={scratch / 'baselines'}",
        f"--kerasperf-json={scratch / 'results.json'}",
        f"--kerasperf-rounds={rounds}",
        *extra,
        *(["-k", keyword] if keyword else []),
        *targets,
    ]


_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[[0-9;]*m")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b:?")
_SKIPPED = re.compile(r"^SKIPPED \[\d+\] \S+?:\d+: (?P<reason>.+)$")


def error_line(stdout: str, stderr: str, returncode: int) -> str:
    """The last line saying what went wrong in a measuring process's output.

    In order: pytest's ``E`` lines (the last two that name an exception, or the
    last one), a skip reason (the plugin
    skips a test whose backend or Keras cannot be imported), an ``ERROR`` line
    (usage), else the last line of output.
    """
    if returncode == 5:
        return "no test collected: check --tests and -k"
    out = stdout.splitlines()
    e_lines = [
        _ANSI.sub("", line[1:]).strip()
        for line in out
        if line.startswith("E ") and line[1:].strip()
    ]
    raised = [line for line in e_lines if _EXCEPTION.match(line)]
    if raised:  # Keras chains "RuntimeError: Exception encountered when calling X" and the cause
        return " ".join(raised[-2:])[:ERROR_CHARS]
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


# --------------------------------------------------------------------------- a commit


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
    argv = measuring_argv(
        settings.python, scratch, selection.rounds, targets, keyword=selection.keyword
    )
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
    probed = read_probe(probe)
    version = probed.get("keras_version")
    keras_file = probed.get("keras_file")
    runs = read_results(out)
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
        runs=tuple(runs),  # a failed commit keeps the tests that did pass
    )
