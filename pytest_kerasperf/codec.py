"""JSON data of the typed values, by their generated codec (msgspec)."""

from __future__ import annotations

from typing import Any

import msgspec

_encoder = msgspec.json.Encoder()


def to_data(value: object) -> Any:
    """``value`` as plain JSON data (dicts, lists, numbers, strings), as its type encodes it."""
    return msgspec.json.decode(_encoder.encode(value))


def validation_text(error: msgspec.ValidationError) -> str:
    """``at entry/calls: Expected `int` >= 0``: msgspec's message, the place first, one line."""
    text = " ".join(str(error).split())
    message, sep, path = text.rpartition(" - at `$")
    if not sep:
        return f"at <top level>: {text[:300]}"
    place = path.rstrip("`").lstrip(".").replace(".", "/").replace("[", "/").replace("]", "")
    return f"at {place or '<top level>'}: {message[:300]}"
