"""Committed baseline files: load, validate, update atomically.

One JSON file per backend (``<dir>/<backend>.json``), sorted keys, one entry
per test, latencies rounded, so a diff of it reads well in code review.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_kerasperf.record import Record

SCHEMA_VERSION = 1


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
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "<top level>"
        raise BaselineError(
            f"{path}: not a pytest-kerasperf baseline (schema version {SCHEMA_VERSION}): "
            f"at {where}: {first.message}"
        )
    if data["backend"] != backend:
        raise BaselineError(
            f"{path}: holds backend {data['backend']!r} but this run uses {backend!r}"
        )
    return {key: Record.from_json(entry) for key, entry in data["tests"].items()}


def dumps(backend: str, entries: Mapping[str, Record]) -> str:
    document = {
        "backend": backend,
        "schema_version": SCHEMA_VERSION,
        "tests": {key: entries[key].to_json() for key in sorted(entries)},
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


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


@dataclass(frozen=True)
class Change:
    key: str
    kind: str  # "added" | "updated" | "unchanged"
    before: Record | None
    after: Record


def update(path: Path, backend: str, measured: Mapping[str, Record]) -> list[Change]:
    """Rewrite the entries of the tests that ran; every other entry stays as it was.

    The file is re-read (and re-validated) here, so an entry written by anyone
    since the session started is not lost.
    """
    entries = load(path, backend)
    changes = []
    for key in sorted(measured):
        before = entries.get(key)
        after = measured[key]
        if before is None:
            kind = "added"
        elif before.to_json() == after.to_json():
            kind = "unchanged"
        else:
            kind = "updated"
        changes.append(Change(key, kind, before, after))
        entries[key] = after
    if any(change.kind != "unchanged" for change in changes):
        write_atomic(path, dumps(backend, entries))
    return changes
