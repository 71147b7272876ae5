"""Committed baselines: one small file per test and environment variant.

Layout: ``<baseline dir>/<backend>/<variant>/<test file>/<test name>.json``,
e.g. ``baselines/torch/py3.11-cpu/test_standard.py/test_lm_forward[eager].json``.
A variant (``py3.11-cpu``, ``py3.11-cpu-nnx``, ``py3.11-gpu``) is chosen from
the run's environment (``environment.variant_of``), so one test keeps one
entry per Python minor, device kind and NNX setting, and recording one
variant never touches another's files.  One file per test keeps two branches
that re-record two different tests from ever touching the same file, so git
merges them cleanly.  An entry holds the profile's summary, not every function
and edge (``record.ProfileSummary``): about 15 KB at most for the bundled
suite, keys sorted, numbers rounded, so a diff of it reads well in review.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from pytest_kerasperf import untrusted
from pytest_kerasperf.codec import validation_text
from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.record import VARIANT_PATTERN as RECORD_VARIANT_PATTERN
from pytest_kerasperf.record import Backend, Key, Record, Variant, test_key
from pytest_kerasperf.verdict import Settings

__all__ = ["BaselineError", "BaselineFile", "Baselines", "Change", "test_key"]

SCHEMA_VERSION = 3
#: A baseline file larger than this is refused unread (the bundled suite's are under 16 KB).
MAX_FILE_BYTES = 1024 * 1024
VARIANT_PATTERN = re.compile(RECORD_VARIANT_PATTERN)
#: Characters kept as they are in a file name made from a test key; others are %XX.
_SAFE = re.compile(r"[A-Za-z0-9_.\-\[\]=,+]")
_MAX_NAME = 180  # bytes of a file name before it is shortened with a hash
#: Joins a shortened name to its hash: ``~`` is never left raw by ``_pieces`` (it is ``%7E``),
#: so no key's own file name can be spelled like another key's shortened one.
_HASH_SEPARATOR = "~"


class BaselineError(Exception):
    """A baseline that cannot be used; the message names the file and the fix."""


def _pieces(text: str) -> list[str]:
    """Each character of ``text`` as a file name holds it: unsafe ones ``%XX``, and a leading
    ``.`` too (``Baselines.load`` skips dot-files, and ``.`` and ``..`` name no file)."""
    pieces = [
        char if _SAFE.fullmatch(char) else "".join(f"%{b:02X}" for b in char.encode("utf-8"))
        for char in text
    ]
    if pieces[:1] == ["."]:
        pieces[0] = "%2E"
    return pieces


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _file_name(text: str, key: str) -> str:
    """``text`` encoded; when longer than ``_MAX_NAME``, its first whole characters, then
    ``~`` and a hash of ``key``."""
    pieces = _pieces(text)
    name = "".join(pieces)
    if len(name) <= _MAX_NAME:
        return name
    kept, size = [], 0
    for piece in pieces:
        if size + len(piece) > _MAX_NAME - 18:
            break
        kept.append(piece)
        size += len(piece)
    return f"{''.join(kept)}{_HASH_SEPARATOR}{_digest(key)}"


def relative_file(key: str) -> Path:
    """The file of a test's entry, relative to its variant's directory.

    ``test_standard.py::test_lm_forward[eager]`` ->
    ``test_standard.py/test_lm_forward[eager].json``.

    Classes are joined with ``.`` (``TestLM.test_forward``); characters a file
    name cannot safely hold, and a leading ``.``, are ``%XX``; a long name ends in
    ``~`` and a hash of the key.  The key is stored in the file too, and a file
    whose key does not name it back is refused.
    """
    module, _, name = key.partition("::")
    if not module or not name:
        raise BaselineError(f"{key!r}: not a test key (file.py::test)")
    head, bracket, params = name.partition("[")
    name = head.replace("::", ".") + bracket + params
    return Path(_file_name(module, module)) / f"{_file_name(name, key)}.json"


def shared_file(keys: Iterable[str]) -> tuple[str, str, Path] | None:
    """Two of ``keys`` whose entries would be one file, and that file; None when none are."""
    seen: dict[Path, str] = {}
    for key in sorted(set(keys)):
        path = relative_file(key)
        other = seen.setdefault(path, key)
        if other != key:
            return other, key, path
    return None


def check_variant(variant: str) -> str:
    if not VARIANT_PATTERN.match(variant):
        raise BaselineError(
            f"{variant!r}: not a baseline variant (py3.11-cpu, py3.11-cpu-nnx, ...)"
        )
    return variant


class BaselineFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One baseline file: one test's entry for one backend and variant (schemas/baseline.schema.json
    is generated from this type)."""

    backend: Backend
    entry: Record
    key: Key
    schema_version: Literal[3]
    variant: Variant


_WHOLE_PROFILE = {"calls_by_function", "call_edges"}


def decode(data: Any, where: str) -> BaselineFile:
    """A baseline file's parsed JSON, checked against its type; BaselineError naming ``where``."""
    problem = None
    entry = data.get("entry") if isinstance(data, dict) else None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and version != SCHEMA_VERSION:
        problem = f"at schema_version: {SCHEMA_VERSION} was expected, not {version!r}"
    elif isinstance(entry, dict) and (
        whole := sorted({"calls_by_function", "call_edges"} & set(entry))
    ):
        problem = (
            f"at entry: a baseline entry holds its profile's summary, not {', '.join(whole)} "
            "(`kerasperf accept` and --kerasperf-update-baseline write that form)"
        )
    else:
        try:
            stored = msgspec.convert(data, BaselineFile)
        except msgspec.ValidationError as error:
            problem = validation_text(error)
        else:
            counted = stored.entry.count_problem()
            if counted is None:
                return stored
            raise BaselineError(f"{where}: {counted}")
    raise BaselineError(
        f"{where}: not a pytest-kerasperf baseline file (schema version {SCHEMA_VERSION}): "
        f"{problem}"
    )


def _inline_lists(text: str) -> str:
    """Keep lists of numbers on one line (``[7, 91]``): json.dumps spreads them over four."""
    return re.sub(
        r"\[\s+([-0-9.,\s]*?)\s+\]",
        lambda m: "[" + ", ".join(part.strip() for part in m.group(1).split(",")) + "]",
        text,
    )


def dumps(backend: str, variant: str, key: str, record: Record) -> str:
    """A baseline file's text: the compact entry, keys sorted, lists of numbers inline."""
    data = {  # a BaselineFile
        "backend": backend,
        "entry": record.compact().to_json(whole=False),
        "key": key,
        "schema_version": SCHEMA_VERSION,
        "variant": variant,
    }
    return _inline_lists(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Create-then-rename: a reader sees the old file or the new one, never half of one.

    The temporary file (``.<name>.<random>.tmp``, next to ``path``) is removed
    when the write fails; one a killed process leaves behind is ignored by git
    (``.gitignore``) and by every reader.
    """
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


def merge(before: Record | None, after: Record, settings: Settings) -> tuple[ChangeKind, Record]:
    """The entry to store for a new measurement ``after`` of an entry ``before``.

    A baseline entry is Keras's measurement, in its compact form.  An entry whose
    exact counts (calls, profile, graph breaks, recompiles) are unchanged, measured
    under the same count-relevant environment, keeps its bytes unless a noisy
    metric (latency, instructions) moved beyond its tolerance; what each metric
    keeps of the stored entry is its own rule (``Metric.merge``), so diffs show
    only what moved.
    """
    after = after.compact()
    if before is None:
        return "added", after
    counts_moved = (
        before.backend != after.backend
        or before.mode != after.mode
        or any(metric.counts_moved(before, after) for metric in METRICS if metric.exact)
        or bool(settings.mismatch(before.environment, after.environment))
    )
    if not counts_moved and not any(metric.moved(before, after, settings) for metric in METRICS):
        return "unchanged", before
    for metric in METRICS:
        after = metric.merge(before, after, counts_moved, settings)
    if not counts_moved:  # only a latency or an instruction count: where the counts were taken
        after = msgspec.structs.replace(after, environment=before.environment)
    if after.to_json(whole=False) == before.to_json(whole=False):
        return "unchanged", before
    return "updated", after


def recorded_variants(root: Path, backend: str) -> list[str]:
    """The variants that have a directory of entries for ``backend`` under ``root``."""
    backend_dir = root / backend
    if not backend_dir.is_dir():
        return []
    return sorted(
        p.name for p in backend_dir.iterdir() if p.is_dir() and VARIANT_PATTERN.match(p.name)
    )


def refuse_legacy(root: Path, backend: str) -> None:
    """BaselineError when ``root`` holds a one-file-per-backend baseline of version 0.1."""
    legacy = root / f"{backend}.json"
    if legacy.is_file():
        raise BaselineError(
            f"{legacy}: a baseline of an older pytest-kerasperf (one file per backend, "
            f"schema version 2); this version keeps one file per test and variant under "
            f"{root / backend}/: delete it and re-record with `--kerasperf-update-baseline` "
            "(docs/baselines.md)"
        )


def load_all(root: Path, backend: str) -> dict[str, dict[str, Record]]:
    """variant -> key -> entry, for every variant of ``backend``; each file validated."""
    refuse_legacy(root, backend)
    return {
        variant: Baselines(root, backend, variant).load()
        for variant in recorded_variants(root, backend)
    }


@dataclass(frozen=True)
class Baselines:
    """The entries of one backend and variant under a baseline directory."""

    root: Path  # the baseline directory (``baselines``)
    backend: str
    variant: str

    @property
    def directory(self) -> Path:
        return self.root / self.backend / self.variant

    def file(self, key: str) -> Path:
        return self.directory / relative_file(key)

    def describe(self) -> str:
        return f"{self.directory} ({self.backend}, {self.variant})"

    def load_file(self, path: Path) -> tuple[str, Record]:
        """(key, entry) of one baseline file, validated; BaselineError naming the file."""
        try:
            data = untrusted.read(path, MAX_FILE_BYTES)
        except untrusted.UntrustedInputError as error:
            raise BaselineError(
                f"{error}; fix it or restore it from git (`git checkout -- {path}`)"
            ) from None
        stored = decode(data, str(path))
        key = stored.key
        if stored.backend != self.backend or stored.entry.backend != self.backend:
            raise BaselineError(f"{path}: holds backend {stored.backend!r}, not {self.backend!r}")
        if stored.variant != self.variant:
            raise BaselineError(f"{path}: holds variant {stored.variant!r}, not {self.variant!r}")
        if self.file(key) != path:
            raise BaselineError(
                f"{path}: holds the entry of {key!r}, whose file is {self.file(key)}: move it there"
            )
        return key, stored.entry

    def refuse_shared_files(self, keys: Iterable[str]) -> None:
        """BaselineError when two of ``keys`` would have one file (one entry would be lost)."""
        shared = shared_file(keys)
        if shared is not None:
            first, second, path = shared
            raise BaselineError(
                f"{self.directory / path}: would hold the entries of both {first!r} and "
                f"{second!r}; nothing written (rename one of the tests)"
            )

    def load(self) -> dict[str, Record]:
        """Every entry of this variant; {} when it has none yet.  Each file is validated."""
        refuse_legacy(self.root, self.backend)
        if not self.directory.is_dir():
            return {}
        entries: dict[str, Record] = {}
        for path in sorted(self.directory.rglob("*.json")):
            if path.name.startswith("."):
                continue
            key, record = self.load_file(path)
            entries[key] = record
        return entries

    def _lock(self) -> Any:
        """A lock held while entries are rewritten, outside the repository's tree."""
        import filelock

        digest = hashlib.sha256(str(self.directory.resolve()).encode()).hexdigest()[:16]
        return filelock.FileLock(Path(tempfile.gettempdir()) / f"kerasperf-{digest}.lock")

    def update(
        self,
        measured: Mapping[str, Record],
        settings: Settings | None = None,
        *,
        remove: Iterable[str] = (),
    ) -> list[Change]:
        """Rewrite the files of the tests that ran, only where something moved.

        ``remove`` names stale entries to delete (their tests no longer exist).
        Every other file stays as it was, and no other variant's.  Every entry
        is read and validated under the lock before the first file is written,
        so a bad file stops the update with nothing written, and an entry
        written by a concurrent update is never lost.
        """
        settings = settings or Settings()
        for record in measured.values():
            if record.backend != self.backend:
                raise BaselineError(f"a {record.backend} record cannot go into {self.describe()}")
        with self._lock():
            entries = self.load()
            self.refuse_shared_files([*entries, *measured])
            changes: list[Change] = []
            writes: list[tuple[Path, str]] = []
            for key in sorted(measured):
                path = self.file(key)
                before = entries.get(key)
                kind, stored = merge(before, measured[key], settings)
                changes.append(Change(key, kind, before, stored))
                if kind != "unchanged":
                    writes.append((path, dumps(self.backend, self.variant, key, stored)))
            removals = [key for key in sorted(set(remove) - set(measured)) if key in entries]
            for path, text in writes:
                write_atomic(path, text)
            for key in removals:
                path = self.file(key)
                path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    path.parent.rmdir()  # the test file's directory, once empty
                changes.append(Change(key, "removed", entries[key], None))
        return changes
