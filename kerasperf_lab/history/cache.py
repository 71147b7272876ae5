"""The sweep's cache: one JSON file per (commit, backend, environment, selection).

An interrupted or extended sweep, a bisect, or another shard measures only
what is missing (``obtain``, ``run_sweep``); a merge job reads the shards'
caches and measures nothing (``gather``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from pytest_kerasperf import shards
from pytest_kerasperf.ab import runner
from pytest_kerasperf.ab.commits import Commit, HistoryError
from pytest_kerasperf.ab.runner import (
    Log,
    Measurement,
    RunSettings,
    Selection,
    describe_fingerprint,
    digest,
    local_fingerprint,
    quiet,
)
from pytest_kerasperf.baseline import write_atomic
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.formatting import plural
from pytest_kerasperf.shards import in_shard as in_shard

if TYPE_CHECKING:
    import git

DEFAULT_CACHE = Path(".kerasperf") / "sweep-cache"


def write_json(path: Path, value: object) -> None:
    """A lab file (a sweep, a bisection, an A/B result, a per-PR table) as its type encodes it."""
    write_atomic(path, json.dumps(to_data(value), indent=2, sort_keys=True) + "\n")


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
        return f"{commit}-{backend}-{digest(dict(fingerprint))}-{selection.digest()}.json"

    def get(
        self,
        commit: str,
        backend: str,
        fingerprint: Mapping[str, str | None],
        selection: Selection,
    ) -> Measurement | None:
        name = self.name(commit, backend, fingerprint, selection)
        loaded = (self._load(directory / name) for directory in self.directories)
        return next((found for found in loaded if found is not None), None)

    def candidates(self, commit: str, backend: str, selection: Selection) -> list[Measurement]:
        """Every cached measurement of (commit, backend, selection), in any environment."""
        pattern = f"{commit}-{backend}-*-{selection.digest()}.json"
        loaded = (self._load(path) for d in self.directories for path in sorted(d.glob(pattern)))
        return [measurement for measurement in loaded if measurement is not None]

    def put(self, measurement: Measurement) -> Path:
        path = self.directories[0] / self.name(
            measurement.commit, measurement.backend, measurement.fingerprint, measurement.selection
        )
        write_atomic(path, json.dumps(to_data(measurement), sort_keys=True) + "\n")
        return path

    @staticmethod
    def _load(path: Path) -> Measurement | None:
        try:
            return msgspec.convert(json.loads(path.read_text(encoding="utf-8")), Measurement)
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
    log: Log = quiet,
    where: str = "",
) -> tuple[Measurement, bool]:
    """The measurement of (commit, backend) from the cache, else measured and cached; measured?"""
    local = local_fingerprint(backend)
    cached = cache.get(commit.sha, backend, local, selection)
    if cached is not None and (cached.ok or not retry_failed):
        return cached, False
    log(f"{where}{commit.short} {commit.label()} {backend}: measuring ...")
    measurement = runner.measure(repo, commit.sha, backend, selection, settings)
    cache.put(measurement)
    if dict(measurement.fingerprint) != local:
        log(
            f"{where}{commit.short} {backend}: measured with "
            f"{describe_fingerprint(measurement.fingerprint)}, not this machine's "
            f"{describe_fingerprint(local)} (check {settings.python})"
        )
    if measurement.ok:
        log(
            f"{where}{commit.short} {backend}: {plural(len(measurement.runs), 'test')}, keras "
            f"{measurement.keras}, {measurement.seconds:.0f} s"
        )
    else:
        log(f"{where}{commit.short} {backend}: failed: {measurement.error}")
    return measurement, True


# --------------------------------------------------------------------------- shards and merging


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N), 1 <= K <= N."""
    try:
        return shards.parse(text)
    except ValueError:
        raise HistoryError(f"--shard {text}: give K/N with 1 <= K <= N, e.g. 2/4") from None


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
    log: Log = quiet,
    where: str = "[{number}/{mine}, commit {index}] ",
) -> tuple[SweepRun, dict[tuple[str, str], Measurement]]:
    """Measure what the cache lacks of the shard's commits on every backend (``where``: the log
    lines' prefix): the account and the measurements."""
    account = SweepRun()
    obtained: dict[tuple[str, str], Measurement] = {}
    mine = [(i, c) for i, c in enumerate(commits) if in_shard(i, shard)]
    for number, (index, commit) in enumerate(mine, start=1):
        at = where.format(
            number=number, mine=len(mine), index=index, position=index + 1, total=len(commits)
        )
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
                where=at,
            )
            obtained[(commit.sha, backend)] = measurement
            account.measured += measured
            account.from_cache += not measured
            account.failed += not measurement.ok
    return account, obtained


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
                environment = digest(dict(measurement.fingerprint))
                fingerprints[environment] = measurement.fingerprint
                by_environment.setdefault(environment, {})[commit.sha] = measurement
        chosen = digest(dict(local))
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
