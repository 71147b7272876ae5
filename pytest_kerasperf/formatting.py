"""Text for GitHub: Markdown that shows untrusted text as it is.

A report's cells hold test ids, function names and failure lines, some of
them from a results file a fork's run produced.  GitHub's Markdown would read
``<locals>`` as an HTML tag and drop it, ``@name`` as a mention that notifies
someone, backticks and pipes as code spans and columns.  ``escape`` turns
every such character into its HTML entity, so the text shows exactly, on one
line, and means nothing to the renderer.
"""

from __future__ import annotations

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


def escape(text: str) -> str:
    """``text`` shown as it is in a Markdown table cell or list item: one line, no markup."""
    return " ".join(str(text).translate(_ESCAPE).split())


def code(text: str) -> str:
    """``text`` in a monospace cell, escaped (``<code>`` reads entities; a code span would not)."""
    return f"<code>{escape(text)}</code>"
