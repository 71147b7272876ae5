"""The index file of ``--kerasperf-index-out``: each perf test's Keras functions, read back.

One file per backend and variant, written by a run on the base (a push to main, a schedule)
and read by ``--kerasperf-changed`` on a pull request.  It is read as untrusted input (a CI
cache or artifact): bounded, strict JSON, the type's checks, and every index in range, each
failure one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from pytest_kerasperf import untrusted
from pytest_kerasperf.codec import validation_text

INDEX_VERSION = 1
FORMAT = "kerasperf-index"
#: An index of the whole census holds about 10,000 names: far below this
MAX_BYTES = 64 * 1024 * 1024

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
Position = Annotated[int, msgspec.Meta(ge=0)]


class IndexFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Each perf test's functions of ``keras/src`` (positions in ``functions``)."""

    format: Literal["kerasperf-index"]
    version: int
    backend: Name
    #: the repository's HEAD when the index was made (None: its rootdir is no git work tree)
    commit: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{40}$")] | None
    #: tracked files differed from HEAD then: its functions are not the commit's
    dirty: bool
    plugin: Name  # pytest-kerasperf's version
    #: the count-relevant environment (``environment.count_fingerprint``)
    fingerprint: dict[Name, str | None]
    functions: list[Name]
    #: what runs for every test: Keras's import, the canonical state, wider-scoped fixtures
    process: list[Position]
    tests: dict[Name, list[Position]]
    #: tests whose profile another profiler replaced: always selected
    incomplete: list[Name] = []


def encode(
    *,
    backend: str,
    commit: str | None,
    dirty: bool,
    plugin: str,
    fingerprint: dict[str, str | None],
    process: set[str],
    tests: dict[str, set[str]],
    incomplete: set[str],
) -> str:
    names = sorted(process.union(*tests.values()))
    position = {name: i for i, name in enumerate(names)}
    document = IndexFile(
        format="kerasperf-index",
        version=INDEX_VERSION,
        backend=backend,
        commit=commit,
        dirty=dirty,
        plugin=plugin,
        fingerprint=fingerprint,
        functions=names,
        process=sorted(position[n] for n in process),
        tests={key: sorted(position[n] for n in tests[key]) for key in sorted(tests)},
        incomplete=sorted(incomplete),
    )
    return msgspec.json.encode(document).decode() + "\n"


class UnusableIndex(ValueError):
    """An index file that cannot be used: one line saying why."""


def load(path: Path) -> IndexFile:
    """The index at ``path``, checked; ``UnusableIndex`` (one line) where it cannot be used."""
    try:
        data: Any = untrusted.read(path, MAX_BYTES)
    except untrusted.UntrustedInputError as error:  # its text starts with the path
        raise UnusableIndex(str(error)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UnusableIndex(f"{path}: not a kerasperf index (--kerasperf-index-out writes one)")
    if data.get("version") != INDEX_VERSION:
        raise UnusableIndex(
            f"{path}: index version {untrusted.printable(str(data.get('version')))[:20]}, "
            f"this pytest-kerasperf reads version {INDEX_VERSION}: make it again"
        )
    try:
        index = msgspec.convert(data, IndexFile)
    except msgspec.ValidationError as error:
        raise UnusableIndex(f"{path}: {validation_text(error, data, IndexFile)}") from None
    size = len(index.functions)
    for key, positions in [("process", index.process), *index.tests.items()]:
        if any(p >= size for p in positions):
            raise UnusableIndex(
                f"{path}: {untrusted.printable(key)[:200]}: a function past the table"
            )
    return index
