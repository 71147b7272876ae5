"""How a test's key names its baseline file: the key's module as a directory, the rest as
the file name (``relative_file``), and ``BaselineError``, what every baseline reader raises.

Kept apart from ``baseline`` so that the table form (``baseline_table``) and the
one-file-per-test form share them without importing each other.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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


def module_file_name(module: str) -> str:
    """A test module's name as a file name holds it (its entries' directory, its table)."""
    return _file_name(module, module)


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
    return Path(module_file_name(module)) / f"{_file_name(name, key)}.json"


def shared_file(keys: Iterable[str]) -> tuple[str, str, Path] | None:
    """Two of ``keys`` whose entries would be one file, and that file; None when none are."""
    seen: dict[Path, str] = {}
    for key in sorted(set(keys)):
        path = relative_file(key)
        other = seen.setdefault(path, key)
        if other != key:
            return other, key, path
    return None


#: The test modules whose entries go into one table file per module and variant (the ini key
#: ``kerasperf_table_baselines``, globs of the module's file name): the census suite's.
DEFAULT_TABLES: tuple[str, ...] = ("test_census*.py",)


def module_of(key: str) -> str:
    """``test_census_ops.py::test_op[add]`` -> ``test_census_ops.py``."""
    return key.partition("::")[0]


def module_in_table(module: str, tables: Iterable[str]) -> bool:
    """Are the entries of ``module`` kept in its table file (its name matches a glob)?"""
    return any(fnmatch.fnmatchcase(module, pattern) for pattern in tables)


def in_table(key: str, tables: Iterable[str]) -> bool:
    """Does the entry of ``key`` go into its module's table file?"""
    return module_in_table(module_of(key), tables)


def read_json(path: Path, limit: int) -> Any:
    """A baseline file's parsed JSON, read as untrusted input; BaselineError naming the fix."""
    from pytest_kerasperf import untrusted

    try:
        return untrusted.read(path, limit)
    except untrusted.UntrustedInputError as error:
        raise BaselineError(
            f"{error}; fix it or restore it from git (`git checkout -- {path}`)"
        ) from None
