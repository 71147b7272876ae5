"""Committed baseline files: load, validate, update atomically.

One JSON file per backend (``<dir>/<backend>.json``), sorted keys, one entry
per test, latencies rounded, so a diff of it reads well in code review.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import filelock

from pytest_kerasperf.record import Record

SCHEMA_VERSION = 2


class BaselineError(Exception):
    """A baseline file that cannot be used; the message names the file and the fix."""


@cache
def schema() -> dict[str, Any]:
    text = resources.files("pytest_kerasperf").joinpath("schemas/baseline.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def baseline_path(baseline_dir: Path, backend: str) -> Path:
    return baseline_dir / f"{backend}.json"


def test_key(nodeid: str) -> str:
    """The node id without the file's directory, so moving the suite keeps its baselines."""
    path, sep, rest = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}{sep}{rest}"


def load(path: Path, backend: str) -> dict[str, Record]:
    """The entries of ``path``; {} when the file does not exist yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise BaselineError(f"{path}: cannot read baseline: {error.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise BaselineError(
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
            "fix it or restore it from git (`git checkout -- {path}`)".replace("{path}", str(path))
        ) from None
    if isinstance(data, dict) and data.get("schema_version") == 1:
        raise BaselineError(
            f"{path}: written by an older pytest-kerasperf (schema version 1, no call edges); "
            "delete it and re-record its tests with `--kerasperf-update-baseline`"
        )
    _validate(data, str(path))
    if data["backend"] != backend:
        raise BaselineError(
            f"{path}: holds backend {data['backend']!r} but this run uses {backend!r}"
        )
    return {key: Record.from_json(entry) for key, entry in data["tests"].items()}


def _validate(data: Any, where: str) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        at = "/".join(str(p) for p in first.absolute_path) or "<top level>"
        raise BaselineError(
            f"{where}: not a pytest-kerasperf baseline (schema version {SCHEMA_VERSION}): "
            f"at {at}: {first.message}"
        )


def document(backend: str, entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {"backend": backend, "schema_version": SCHEMA_VERSION, "tests": dict(entries)}


def check_entries(backend: str, entries: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """Validate entries from elsewhere (a results file) as a baseline load validates them."""
    _validate(document(backend, entries), where)


def dumps(backend: str, entries: Mapping[str, Record]) -> str:
    data = document(backend, {key: entries[key].to_json() for key in sorted(entries)})
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Create-then-rename: a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


ChangeKind = Literal["added", "updated", "unchanged", "removed"]


@dataclass(frozen=True)
class Change:
    key: str
    kind: ChangeKind
    before: Record | None
    after: Record | None  # what the file holds for ``key`` now (None: removed)


@dataclass(frozen=True)
class UpdatePolicy:
    """What counts as "moved" when an entry is re-recorded.

    An entry whose counts, call edges and graph breaks are unchanged, measured
    under the same count-relevant environment, keeps its bytes unless its
    latency moved beyond ``latency_tolerance`` on the same device.  A changed
    entry keeps the stored latency when the new run did not measure one or
    when it moved less than the tolerance, so diffs show only what moved.
    """

    latency_tolerance: float = 0.10
    #: count-relevant fields that differ between two environments
    mismatch: Callable[[Mapping[str, str | None], Mapping[str, str | None]], tuple[str, ...]] = (
        lambda before, after: ()
    )


def _latency_moved(before: Record, after: Record, tolerance: float) -> bool:
    old, new = before.latency, after.latency
    if new is None:
        return False
    if old is None or old.device != new.device or old.median_ms <= 0:
        return True
    return abs(new.median_ms / old.median_ms - 1) > tolerance


def merge(before: Record | None, after: Record, policy: UpdatePolicy) -> tuple[ChangeKind, Record]:
    """The entry to store for a new measurement ``after`` of an entry ``before``.

    A baseline entry is Keras's measurement: the plain-framework twin (measured
    only with ``--kerasperf-plain`` or a ``max_overhead`` budget) is left out.
    """
    after = replace(after, reference=None)
    if before is None:
        return "added", after
    latency_moved = _latency_moved(before, after, policy.latency_tolerance)
    counts_moved = (
        before.backend != after.backend
        or not before.same_counts(after)
        or bool(policy.mismatch(before.environment, after.environment))
    )
    if not counts_moved and not latency_moved:
        return "unchanged", before
    if not latency_moved:
        after = replace(after, latency=before.latency)
    if after.to_json() == before.to_json():
        return "unchanged", before
    return "updated", after


def lock_path(path: Path) -> Path:
    """The lock file next to a baseline file (``baselines/.torch.json.lock``)."""
    return path.with_name(f".{path.name}.lock")


def update(
    path: Path,
    backend: str,
    measured: Mapping[str, Record],
    policy: UpdatePolicy | None = None,
    *,
    remove: Iterable[str] = (),
) -> list[Change]:
    """Rewrite the entries of the tests that ran, only where something moved.

    ``remove`` names stale entries to drop (their tests no longer exist).
    Every other entry stays as it was.  The file is re-read (and re-validated)
    under a lock held until the new file is in place, so an entry written by a
    concurrent update is never lost.
    """
    policy = policy or UpdatePolicy()
    path.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(lock_path(path)):
        entries = load(path, backend)
        changes = []
        for key in sorted(measured):
            before = entries.get(key)
            kind, stored = merge(before, measured[key], policy)
            changes.append(Change(key, kind, before, stored))
            entries[key] = stored
        for key in sorted(set(remove) - set(measured)):
            if key in entries:
                changes.append(Change(key, "removed", entries.pop(key), None))
        if any(change.kind != "unchanged" for change in changes):
            write_atomic(path, dumps(backend, entries))
    return changes
