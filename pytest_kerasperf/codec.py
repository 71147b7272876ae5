"""JSON data of the typed values, by their generated codec (msgspec)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

_encoder = msgspec.json.Encoder()

#: The largest count a file may hold (calls, instructions, graphs, tests): a real one is far
#: below; a larger one is a file's claim, never a measurement.
MAX_COUNT = 10**12
#: The longest time a file may hold, in milliseconds (a day).
MAX_MS = 86_400_000.0
#: A count read from a file: 0 (a jitted workload's calls) to ``MAX_COUNT``.
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
#: A number of rounds, of tests counted: at least one.
PositiveCount = Annotated[int, msgspec.Meta(ge=1, le=MAX_COUNT)]
#: A time in milliseconds: never negative (a negative one would turn a comparison off).
Milliseconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_MS)]


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
