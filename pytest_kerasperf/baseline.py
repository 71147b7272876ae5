"""Committed baselines: one small file per test and environment variant (docs/baselines.md).

Layout: ``<baseline dir>/<backend>/<variant>/<test file>/<test name>.json``, the variant
(``py3.11-cpu``, ``py3.11-cpu-nnx``) chosen from the run's environment
(``environment.variant_of``): recording one variant never touches another's files, and two
branches that re-record different tests never touch the same file.  An entry holds the
profile's summary (``record.ProfileSummary``), keys sorted, numbers rounded, so its diff reads
well in review.  The modules ``kerasperf_table_baselines`` names (the census suite's) keep one
table file each instead, of totals only (``baseline_table``).
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

from pytest_kerasperf import baseline_table
from pytest_kerasperf.baseline_names import (
    DEFAULT_TABLES,
    BaselineError,
    in_table,
    module_in_table,
    module_of,
    read_json,
    relative_file,
    shared_file,
)
from pytest_kerasperf.codec import validation_text
from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.record import VARIANT_PATTERN as RECORD_VARIANT_PATTERN
from pytest_kerasperf.record import Backend, Key, Record, Variant, record_data, test_key
from pytest_kerasperf.settings import Settings

__all__ = [
    "BaselineError",
    "BaselineFile",
    "Baselines",
    "EntryChange",
    "relative_file",
    "shared_file",
    "test_key",
]

SCHEMA_VERSION = 3
#: A baseline file larger than this is refused unread (the bundled suite's are under 16 KB).
MAX_FILE_BYTES = 1024 * 1024
VARIANT_PATTERN = re.compile(RECORD_VARIANT_PATTERN)


class BaselineFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One baseline file: one test's entry for one backend and variant (schemas/baseline.schema.json
    is generated from this type)."""

    backend: Backend
    entry: Record
    key: Key
    schema_version: Literal[3]
    variant: Variant


def decode(data: Any, where: str) -> BaselineFile:
    """A baseline file's parsed JSON, checked against its type; BaselineError naming ``where``."""
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
            problem = validation_text(error, data, BaselineFile)
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
        "entry": record_data(record.compact(), whole=False),
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
class EntryChange:
    key: str
    kind: ChangeKind
    before: Record | None
    after: Record | None  # what the file holds for ``key`` now (None: removed)


def merge(before: Record | None, after: Record, settings: Settings) -> tuple[ChangeKind, Record]:
    """The entry to store for a new measurement ``after`` of an entry ``before``.

    An entry whose exact counts are unchanged, under the same count-relevant environment, keeps
    its bytes unless a noisy metric (latency, instructions) moved beyond its tolerance; what each
    metric keeps of the stored entry is its own rule (``Metric.merge``), so diffs show only what
    moved.
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
    if record_data(after, whole=False) == record_data(before, whole=False):
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


def load_all(
    root: Path, backend: str, tables: tuple[str, ...] = DEFAULT_TABLES
) -> dict[str, dict[str, Record]]:
    """variant -> key -> entry, for every variant of ``backend``; each file validated."""
    refuse_legacy(root, backend)
    return {
        variant: Baselines(root, backend, variant, tables).load()
        for variant in recorded_variants(root, backend)
    }


@dataclass(frozen=True)
class Baselines:
    """The entries of one backend and variant under a baseline directory: one file per test,
    and one table file per module that ``tables`` names (``baseline_table``)."""

    root: Path  # the baseline directory (``baselines``)
    backend: str
    variant: str
    #: globs of the test modules kept in table files (ini ``kerasperf_table_baselines``)
    tables: tuple[str, ...] = DEFAULT_TABLES

    @property
    def directory(self) -> Path:
        return self.root / self.backend / self.variant

    def in_table(self, key: str) -> bool:
        return in_table(key, self.tables)

    def file(self, key: str) -> Path:
        """The file that holds the entry of ``key``: its own, or its module's table."""
        if self.in_table(key):
            return self.directory / baseline_table.table_name(module_of(key))
        return self.directory / relative_file(key)

    def describe(self) -> str:
        return f"{self.directory} ({self.backend}, {self.variant})"

    def load_file(self, path: Path) -> tuple[str, Record]:
        """(key, entry) of one baseline file, validated; BaselineError naming the file."""
        data = read_json(path, MAX_FILE_BYTES)
        stored = decode(data, str(path))
        key = stored.key
        if stored.backend != self.backend or stored.entry.backend != self.backend:
            raise BaselineError(f"{path}: holds backend {stored.backend!r}, not {self.backend!r}")
        if stored.variant != self.variant:
            raise BaselineError(f"{path}: holds variant {stored.variant!r}, not {self.variant!r}")
        if self.in_table(key):
            raise BaselineError(
                f"{path}: holds the entry of {key!r}, which kerasperf_table_baselines "
                f"({', '.join(self.tables)}) keeps in {self.file(key)}: delete this file and "
                "re-record the test with --kerasperf-update-baseline"
            )
        if self.file(key) != path:
            raise BaselineError(
                f"{path}: holds the entry of {key!r}, whose file is {self.file(key)}: move it there"
            )
        return key, stored.entry

    def load_table(self, path: Path) -> dict[str, Record]:
        """The entries of one table file, validated; BaselineError naming the file."""
        module, entries = baseline_table.load(path, self.backend, self.variant)
        if not module_in_table(module, self.tables):
            raise BaselineError(
                f"{path}: a table of {module!r}, which kerasperf_table_baselines "
                f"({', '.join(self.tables) or 'empty'}) does not name: add the module to it, "
                "or delete the file and re-record its tests with --kerasperf-update-baseline"
            )
        return entries

    def refuse_shared_files(self, keys: Iterable[str]) -> None:
        """BaselineError when two of ``keys`` would have one file (one entry would be lost);
        the entries of a table share its file by design."""
        shared = shared_file(key for key in keys if not self.in_table(key))
        if shared is not None:
            first, second, path = shared
            raise BaselineError(
                f"{self.directory / path}: would hold the entries of both {first!r} and "
                f"{second!r}; nothing written (rename one of the tests)"
            )

    def load(self) -> dict[str, Record]:
        """Every entry of this variant, of both forms; {} when it has none yet.  Each file is
        validated."""
        refuse_legacy(self.root, self.backend)
        if not self.directory.is_dir():
            return {}
        entries: dict[str, Record] = {}
        for path in sorted(self.directory.rglob("*.json")):
            if path.name.startswith("."):
                continue
            if path.parent == self.directory and path.name.endswith(baseline_table.TABLE_SUFFIX):
                entries.update(self.load_table(path))
            else:
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
        write: bool = True,
    ) -> list[EntryChange]:
        """Rewrite the files of the tests that ran, only where something moved; ``remove``: the
        stale entries to delete.  Every other file stays as it was (a table is rewritten only
        when one of its entries changed, its others as they were).  Every entry is read and
        validated under the lock before the first file is written: a bad file, or one larger
        than its reader reads back, stops the update with nothing written, and an entry written
        by a concurrent update is never lost.  ``write=False`` checks all that, writes nothing.
        """
        settings = settings or Settings()
        for record in measured.values():
            if record.backend != self.backend:
                raise BaselineError(f"a {record.backend} record cannot go into {self.describe()}")
        with self._lock():
            entries = self.load()
            self.refuse_shared_files([*entries, *measured])
            changes: list[EntryChange] = []
            writes: list[tuple[Path, str | None]] = []
            tabled = {key: r for key, r in entries.items() if self.in_table(key)}
            moved_in_tables: list[str] = []
            for key in sorted(measured):
                before, after = entries.get(key), measured[key]
                kind, stored = merge(
                    before, after.totals() if self.in_table(key) else after, settings
                )
                changes.append(EntryChange(key, kind, before, stored))
                if kind == "unchanged":
                    continue
                if self.in_table(key):
                    tabled[key] = stored
                    moved_in_tables.append(key)
                else:
                    writes.append((self.file(key), dumps(self.backend, self.variant, key, stored)))
            removals = [key for key in sorted(set(remove) - set(measured)) if key in entries]
            for key in removals:
                if self.in_table(key):
                    del tabled[key]
                    moved_in_tables.append(key)
            writes += baseline_table.rewrites(
                self.directory, self.backend, self.variant, tabled, moved_in_tables
            )
            baseline_table.refuse_oversized(writes, MAX_FILE_BYTES)
            if not write:
                return changes
            for path, text in writes:
                if text is None:
                    path.unlink(missing_ok=True)  # a table whose last entry was removed
                else:
                    write_atomic(path, text)
            for key in removals:
                if not self.in_table(key):
                    path = self.file(key)
                    path.unlink(missing_ok=True)
                    with contextlib.suppress(OSError):
                        path.parent.rmdir()  # the test file's directory, once empty
                changes.append(EntryChange(key, "removed", entries[key], None))
        return changes
