"""How every report writes: numbers, plurals, text tables, Markdown tables, one escaper.

Every report and table formats through here, so a count reads the same everywhere
(``16,003``, ``+546``, ``−546`` with a true minus) and every Markdown cell is escaped the same
way: a cell may hold a fork's text, which GitHub's Markdown would read as tags (``<locals>``),
mentions (``@name``), code spans or columns; ``escape`` writes each such character as its HTML
entity, so the text shows exactly, on one line.  Imports nothing of ours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence


def signed(value: int) -> str:
    """``+546`` / ``\u2212546``: a signed count with thousands separators and a true minus."""
    return f"{value:+,}".replace("-", "\u2212")


def count(value: int | None) -> str:
    """``16,003``, or ``-`` when there is none."""
    return "-" if value is None else f"{value:,}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 perf test``, ``2 perf tests``, ``0 stale baseline entries`` (with ``many``)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


#: (floor, format): how many digits a value from the floor up is shown with (about three)
_DIGITS = ((100.0, ",.0f"), (10.0, ".1f"))


def _digits(value: float | None, floors: Sequence[tuple[float, str]], last: str) -> str:
    """``value`` in the format of the first floor it reaches, else ``last``; ``-`` for None."""
    if value is None:
        return "-"
    return format(value, next((spec for floor, spec in floors if value >= floor), last))


def ms(value: float | None) -> str:
    """Milliseconds to three significant digits or so, as the article prints them."""
    return _digits(value, (*_DIGITS, (1.0, ".2f")), ".3f")


def times(value: float | None) -> str:
    """A ratio: ``1.40×``, ``11.6×``, ``123×``."""
    return "-" if value is None else _digits(value, _DIGITS, ".2f") + "×"


def text_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    """Aligned columns, two spaces apart, under a header and a rule."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))

    return [fmt(header), fmt(["-" * w for w in widths]), *(fmt(row) for row in rows)]


class Markup(str):
    """Text that already is Markdown (``**total**``, a ``<code>`` cell): not escaped again."""

    __slots__ = ()


#: Characters of text that GitHub's Markdown would read as markup, as HTML entities:
#: tags (``<locals>`` is eaten as one), code spans, mentions (``@user`` notifies),
#: emphasis, links, tables and escapes.  Text from a results file is untrusted.
_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "`": "&#96;",
    "@": "&#64;",
    "|": "&#124;",
    "*": "&#42;",
    "_": "&#95;",
    "[": "&#91;",
    "]": "&#93;",
    "\\": "&#92;",
    "~": "&#126;",
    "#": "&#35;",
    "!": "&#33;",
}
_ESCAPE = str.maketrans(_ENTITIES)


#: GitHub turns these into mentions, cross-references and links even through entities
#: (``&#64;name`` is reported to notify): a zero-width space (U+200B) after ``@`` and ``#``,
#: inside ``GH-N`` and after a URL's scheme or ``www`` breaks each, and shows the same text.
_ZWSP = "\u200b"
#: Every alternative is tried at most once per run of characters, so a substitution is linear
#: in the text: the scheme's starts only where a run of scheme characters begins (docs/github.md).
_LIVE = re.compile(
    r"(&#64;|&#35;)|(?<![A-Za-z0-9])(GH-)(?=[0-9])|"
    r"(?<![A-Za-z0-9+.-])([0-9+.-]*[A-Za-z][A-Za-z0-9+.-]*)(?=:/)|"
    r"(?<![A-Za-z0-9])(www)(?=\.)",
    re.IGNORECASE,
)
#: A cell or list item shows at most this many characters of its text, then says how many it
#: left out: a results file's line of millions of characters renders as a line of a screen.
MAX_CELL = 2_000


def _break_live(match: re.Match[str]) -> str:
    return match.group(0) + _ZWSP


def escape(text: str) -> str:
    """``text`` shown as it is in a Markdown table cell or list item: one line, no markup,
    no mention, reference or link."""
    text = " ".join(str(text).split())
    if len(text) > MAX_CELL:
        text = f"{text[:MAX_CELL]}… ({len(text) - MAX_CELL:,} characters more)"
    return _LIVE.sub(_break_live, text.translate(_ESCAPE))


def code(text: str) -> Markup:
    """``text`` in a monospace cell, escaped (``<code>`` reads entities; a code span would not)."""
    return Markup(f"<code>{escape(text)}</code>")


def cell(text: str) -> str:
    """A Markdown cell: ``Markup`` as it is, anything else escaped."""
    return text if isinstance(text, Markup) else escape(text)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A GitHub Markdown table; every cell goes through ``cell``."""
    return [
        "| " + " | ".join(cell(h) for h in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(cell(c) for c in row) + " |" for row in rows),
    ]
