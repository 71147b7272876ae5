"""Hot functions by family: the mapping that groups a profile's functions.

A family is a named set of function-name patterns (``families.toml``, or a
file of the same shape given with ``--families``); every function falls in
the first family whose pattern matches it, else in ``other``.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_FAMILIES = Path(__file__).parent / "families.toml"
OTHER = "other"
#: calls_by_function does not add up to calls (should not happen; shown, not hidden).
UNATTRIBUTED = "unattributed"


class FamiliesError(Exception):
    """A families mapping that cannot be used; one line naming the file."""


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    patterns: tuple[str, ...]

    def matches(self, function: str) -> bool:
        return any(fnmatch.fnmatchcase(function, pattern) for pattern in self.patterns)


@dataclass(frozen=True)
class FamilyMapping:
    """Families in priority order: a function belongs to the first that matches."""

    families: tuple[Family, ...]
    source: str

    def family_of(self, function: str) -> str:
        return next((f.name for f in self.families if f.matches(function)), OTHER)

    def group(self, calls_by_function: Mapping[str, int]) -> dict[str, dict[str, int]]:
        """family -> function -> calls; every function lands in exactly one family."""
        grouped: dict[str, dict[str, int]] = {}
        for function, count in calls_by_function.items():
            grouped.setdefault(self.family_of(function), {})[function] = count
        return grouped

    def description(self, name: str) -> str:
        for family in self.families:
            if family.name == name:
                return family.description
        if name == UNATTRIBUTED:
            return "calls not in calls_by_function"
        return "every function no family matches"


_FAMILY_KEYS = {"name", "description", "patterns"}


def load_families(path: Path | None = None) -> FamilyMapping:
    """The mapping in ``path`` (default: the bundled families.toml); FamiliesError if unusable."""
    path = path or DEFAULT_FAMILIES

    def bad(what: str) -> FamiliesError:
        return FamiliesError(f"{path}: not a families mapping: {what}")

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise FamiliesError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise FamiliesError(f"{path}: not valid TOML (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as error:
        message = " ".join(str(error).split())
        raise FamiliesError(f"{path}: not valid TOML ({message})") from None
    extra = sorted(set(data) - {"family"})
    if extra:
        raise bad(f"unknown top-level key {extra[0]!r} (expected [[family]] tables)")
    tables = data.get("family")
    if not isinstance(tables, list) or not tables:
        raise bad("no [[family]] table")
    families: list[Family] = []
    for number, entry in enumerate(tables, start=1):
        if not isinstance(entry, dict):
            raise bad(f"family {number} is not a table")
        missing = sorted(_FAMILY_KEYS - set(entry))
        if missing:
            raise bad(f"family {number}: missing {missing[0]!r}")
        unknown = sorted(set(entry) - _FAMILY_KEYS)
        if unknown:
            raise bad(f"family {number}: unknown key {unknown[0]!r}")
        name, description, patterns = entry["name"], entry["description"], entry["patterns"]
        if not isinstance(name, str) or not name.strip():
            raise bad(f"family {number}: 'name' must be a non-empty string")
        if name in (OTHER, UNATTRIBUTED) or name in {f.name for f in families}:
            raise bad(f"family {number}: name {name!r} is reserved or used twice")
        if not isinstance(description, str):
            raise bad(f"family {number} ({name}): 'description' must be a string")
        if (
            not isinstance(patterns, list)
            or not patterns
            or not all(isinstance(p, str) and p for p in patterns)
        ):
            raise bad(f"family {number} ({name}): 'patterns' must be a non-empty list of strings")
        families.append(Family(name=name, description=description, patterns=tuple(patterns)))
    return FamilyMapping(families=tuple(families), source=str(path))
