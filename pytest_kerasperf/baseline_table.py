"""Census tables: the entries of one test module and variant in one file, totals only
(docs/baselines.md, "Census tables": why, and what a failure against one names).

The entries of a module whose file name matches ``kerasperf_table_baselines``
(``test_census*.py`` by default) go into ``<backend>/<variant>/<module>.table.json``, each with
only what the gate needs to be exact: ``calls``, the digest of the whole profile, the mode,
graph breaks, recompiles, instructions and its environment's digest, whose fields are written
once per file (``environments``).  One line per key and one per value, keys sorted, the comma
between two entries on a line of its own: a re-recorded entry is one changed line, and two
branches that re-record or add different entries touch lines git keeps apart
(``tests/test_baseline_table.py`` merges them with real git).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from pytest_kerasperf.baseline_names import (
    BaselineError,
    module_file_name,
    module_of,
    read_json,
)
from pytest_kerasperf.codec import to_data, validation_text
from pytest_kerasperf.record import (
    Backend,
    Count,
    GraphRecord,
    InstructionsRecord,
    Key,
    Mode,
    Record,
    Variant,
)

__all__ = ["TABLE_SUFFIX", "TableEntry", "TableFile", "dumps", "load", "table_name"]

TABLE_SCHEMA_VERSION = 1
TABLE_SUFFIX = ".table.json"
#: A table larger than this is refused unread (700 entries are about 150 KB).
MAX_TABLE_BYTES = 4 * 1024 * 1024
_DIGEST_LENGTH = 12
EnvDigest = Annotated[str, msgspec.Meta(pattern=f"^[0-9a-f]{{{_DIGEST_LENGTH}}}$")]
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]
Module = Annotated[str, msgspec.Meta(pattern=r"^[^/\\:]+$", max_length=500)]


class TableEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """One test's entry in a table: its totals, the profile's digest, its environment's digest
    (a key of the table's ``environments``); what else was measured, where it was."""

    calls: Count
    env: EnvDigest
    mode: Mode
    profile_sha256: Sha256
    gave_up: tuple[str, ...] = ()
    graph_breaks: GraphRecord | None = None
    instructions: InstructionsRecord | None = None
    instructions_elsewhere: tuple[InstructionsRecord, ...] = ()
    recompile_causes: tuple[str, ...] = ()
    recompiles: Count | None = None


class TableFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One table file: the entries of one test module for one backend and variant
    (schemas/table.schema.json is generated from this type)."""

    schema_version: Literal[1]
    backend: Backend
    variant: Variant
    module: Module
    environments: dict[EnvDigest, dict[str, str | None]]
    entries: dict[Key, TableEntry]


def table_name(module: str) -> str:
    """``test_census_ops.py`` -> ``test_census_ops.py.table.json`` (in the variant directory)."""
    return module_file_name(module) + TABLE_SUFFIX


def env_digest(environment: Mapping[str, str | None]) -> str:
    """A short digest of an environment dict: its key in the table's ``environments``."""
    text = json.dumps(dict(environment), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST_LENGTH]


#: What an entry and its record both hold: every field of the entry but its environment's digest.
_SHARED = tuple(name for name in TableEntry.__struct_fields__ if name != "env")


def entry_of(record: Record) -> TableEntry:
    shared = {name: getattr(record, name) for name in _SHARED}
    return TableEntry(env=env_digest(record.environment), **shared)


def record_of(entry: TableEntry, backend: str, environment: dict[str, str | None]) -> Record:
    shared = {name: getattr(entry, name) for name in _SHARED}
    return Record(backend=backend, environment=dict(environment), totals_only=True, **shared)


def _line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _members(members: Mapping[str, Any]) -> list[str]:
    """An object's members, key sorted: the key on one line, the value on the next, and a
    comma on a line of its own between two members (a value line never changes for a comma,
    and a member added after another lies one unchanged line away from it)."""
    lines: list[str] = []
    for key in sorted(members):
        if lines:
            lines.append(",")
        lines += [_line(key) + ":", "  " + _line(members[key])]
    return lines


def dumps(backend: str, variant: str, module: str, records: Mapping[str, Record]) -> str:
    """A table file's text: each entry's totals, the environments they name, once each."""
    entries = {key: entry_of(record) for key, record in records.items()}
    environments: dict[str, dict[str, str | None]] = {}
    for key, entry in entries.items():
        held = environments.setdefault(entry.env, dict(records[key].environment))
        if held != records[key].environment:  # two environments of one digest: never seen
            raise BaselineError(f"{module}: two environments share the digest {entry.env!r}")
    lines = [
        "{",
        f'"schema_version": {TABLE_SCHEMA_VERSION},',
        f'"backend": {_line(backend)},',
        f'"variant": {_line(variant)},',
        f'"module": {_line(module)},',
        '"environments": {',
        *_members(environments),
        "},",
        '"entries": {',
        *_members({key: to_data(entry) for key, entry in entries.items()}),
        "}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _not_a_table(where: str, problem: str) -> BaselineError:
    return BaselineError(
        f"{where}: not a pytest-kerasperf table file (schema version {TABLE_SCHEMA_VERSION}): "
        f"{problem}; fix it or restore it from git (`git checkout -- {where}`)"
    )


def decode(data: Any, where: str) -> TableFile:
    """A table file's parsed JSON, checked against its type; BaselineError naming ``where``."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and version != TABLE_SCHEMA_VERSION:
        raise _not_a_table(
            where, f"at schema_version: {TABLE_SCHEMA_VERSION} was expected, not {version!r}"
        )
    try:
        return msgspec.convert(data, TableFile)
    except msgspec.ValidationError as error:
        raise _not_a_table(where, validation_text(error, data, TableFile)) from None


def _check(table: TableFile, path: Path, backend: str, variant: str) -> None:
    """What the types cannot say: the file is where its backend, variant and module put it,
    every entry is of its module and names an environment it holds, whose digest it is."""
    if table.backend != backend:
        raise BaselineError(f"{path}: holds backend {table.backend!r}, not {backend!r}")
    if table.variant != variant:
        raise BaselineError(f"{path}: holds variant {table.variant!r}, not {variant!r}")
    if table_name(table.module) != path.name:
        raise BaselineError(
            f"{path}: holds the table of {table.module!r}, whose file is "
            f"{path.with_name(table_name(table.module))}: move it there"
        )
    for digest, environment in table.environments.items():
        if env_digest(environment) != digest:
            raise BaselineError(
                f"{path}: environment {digest!r} is not its fields' digest "
                f"({env_digest(environment)!r}): restore the file from git or re-record its "
                "entries with --kerasperf-update-baseline"
            )
    for key, entry in table.entries.items():
        if module_of(key) != table.module:
            raise BaselineError(
                f"{path}: holds the entry of {key!r}, which belongs in "
                f"{path.with_name(table_name(module_of(key)))}: move it there"
            )
        if entry.env not in table.environments:
            raise BaselineError(
                f"{path}: the entry of {key!r} names environment {entry.env!r}, which the file "
                "does not hold: re-record it with --kerasperf-update-baseline"
            )


def load(path: Path, backend: str, variant: str) -> tuple[str, dict[str, Record]]:
    """(module, key -> totals-only entry) of one table file, validated; BaselineError naming
    the file and the fix."""
    data = read_json(path, MAX_TABLE_BYTES)
    table = decode(data, str(path))
    _check(table, path, backend, variant)
    return table.module, {
        key: record_of(entry, backend, table.environments[entry.env])
        for key, entry in table.entries.items()
    }


def refuse_oversized(writes: Iterable[tuple[Path, str | None]], entry_limit: int) -> None:
    """BaselineError, before anything is written, for a file larger than its reader reads back
    (``MAX_TABLE_BYTES`` for a table, ``entry_limit`` for an entry's own file)."""
    for path, text in writes:
        limit = MAX_TABLE_BYTES if path.name.endswith(TABLE_SUFFIX) else entry_limit
        size = 0 if text is None else len(text.encode("utf-8"))
        if size > limit:
            raise BaselineError(
                f"{path}: would be {size:,} bytes, more than the {limit:,} the gate reads back; "
                "nothing written"
            )


def rewrites(
    directory: Path,
    backend: str,
    variant: str,
    entries: Mapping[str, Record],
    changed: Iterable[str],
) -> list[tuple[Path, str | None]]:
    """(table file, its new text, or None to delete it) for each table holding a key of
    ``changed``: ``entries`` are every table entry of the variant as they are to be stored
    (removed ones left out), so the other entries of a rewritten table keep their bytes."""
    modules = sorted({module_of(key) for key in changed})
    result: list[tuple[Path, str | None]] = []
    for module in modules:
        kept = {key: record for key, record in entries.items() if module_of(key) == module}
        text = dumps(backend, variant, module, kept) if kept else None
        result.append((directory / table_name(module), text))
    return result
