"""Reading JSON that came from elsewhere: CI artifacts, a fork's run, a committed file.

Python's ``json`` module accepts what JSON does not (``NaN``, ``Infinity``), keeps
the last of duplicate keys without a word, parses integers of any size and
recurses once per nesting level.  A results file from a fork can use each of
these to slip a value past a schema or to end a command in a traceback.
``loads`` refuses all of them with one line that says where, so a command can
exit 2 having written nothing.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

#: Larger files are refused before they are read (docs/github.md: what real runs write).
MAX_BYTES = 256 * 1024 * 1024
#: Deeper nesting is refused (the formats nest at most 7 levels).
MAX_DEPTH = 32
#: Integers with more digits are refused (a count per call fits in 12).
MAX_INT_DIGITS = 18
#: The characters no text from elsewhere may hold, as a character class's body that both
#: Python's ``re`` and a JSON schema's ``pattern`` read: Unicode category Cc (C0, DEL and C1,
#: U+0080-U+009F, CSI U+009B among them: a terminal obeys them) and the bidirectional controls
#: (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069: they reorder what a reviewer reads).
UNPRINTABLE = "\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"
UNPRINTABLE_RE = re.compile(f"[{UNPRINTABLE}]")
#: The same, where a text may hold several lines (a profile's text): newlines and tabs allowed.
UNPRINTABLE_MULTILINE_RE = re.compile(f"(?![\\n\\t])[{UNPRINTABLE}]")
#: A terminal's escape sequence (CSI ``ESC [ ... final``, as jax colours its errors with).
_ANSI = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]")


def printable(text: str) -> str:
    """``text`` as one line this package's readers accept: escape sequences dropped, any other
    run of whitespace one space, every other control character (``UNPRINTABLE``) as its
    ``\\uXXXX`` escape.  For text this package writes from elsewhere (a skip's reason, an
    exception's message), so that a results file never holds what its own reader refuses."""
    text = " ".join(_ANSI.sub("", text).split())
    return UNPRINTABLE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


#: A JSON string may spell half of a surrogate pair (``"\ud800"``); Python keeps it, and
#: printing or writing it (a file name, the report) then fails with a traceback.
_SURROGATE = re.compile("[\ud800-\udfff]")


class UntrustedInputError(ValueError):
    """The text is not the JSON this package writes; the message says why, in one line."""


def _no_constant(name: str) -> Any:
    raise UntrustedInputError(f"{name} is not a JSON number")


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise UntrustedInputError(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise UntrustedInputError(f"{text[:20]} overflows a float")
    return value


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise UntrustedInputError(f"duplicate key {key[:80]!r}")
        result[key] = value
    return result


#: A JSON string, its escapes included (one left open runs to the end of the text).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


def _depth(text: str) -> int:
    """The deepest nesting of brackets outside strings (checked before parsing)."""
    brackets = re.findall(r"[\[\]{}]", _STRING.sub("", text))
    return max(accumulate((1 if bracket in "[{" else -1 for bracket in brackets), initial=0))


def loads(text: str) -> Any:
    """Parse ``text`` as strict JSON; UntrustedInputError (one line) where it is not."""
    import json

    if _depth(text) > MAX_DEPTH:
        raise UntrustedInputError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except json.JSONDecodeError as error:
        raise UntrustedInputError(
            f"not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    except RecursionError:
        raise UntrustedInputError("nested too deeply") from None
    for string in strings(data):
        if _SURROGATE.search(string):
            raise UntrustedInputError(f"a lone surrogate (not Unicode text) in {string[:60]!a}")
    return data


def read(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """``loads`` of the file at ``path``; every problem is ``path: why`` in one line.

    Only a regular file is read, and at most ``max_bytes`` of it: a symbolic link is not
    followed (an artifact unzipped with ``unzip`` restores links, to ``/dev/zero`` say), a
    FIFO or a device is refused without blocking on it, and a file that grows past the
    limit while it is read is refused all the same.
    """
    try:
        text = _read_regular(path, max_bytes).decode("utf-8")
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UntrustedInputError(
                f"{path}: a symbolic link, not a regular file (links are not followed)"
            ) from None
        raise UntrustedInputError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise UntrustedInputError(f"{path}: not UTF-8 text ({error.reason})") from None
    try:
        return loads(text)
    except UntrustedInputError as error:
        raise UntrustedInputError(f"{path}: {error}") from None


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path`` (no link followed, no block on a FIFO)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for is_, name in _KINDS if is_(info.st_mode)), "not a regular file")
            raise UntrustedInputError(f"{path}: {kind}, not a regular file")
        if info.st_size > max_bytes:
            raise UntrustedInputError(
                f"{path}: {info.st_size:,} bytes, more than the {max_bytes:,} read"
            )
        chunks: list[bytes] = []
        left = max_bytes + 1  # one byte more than allowed tells a file that grew
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:
        raise UntrustedInputError(f"{path}: more than the {max_bytes:,} bytes read")
    return b"".join(chunks)


def strings(data: Any) -> Iterator[str]:
    """Every string in ``data``, keys included (for checks on what will be printed)."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from strings(value)
