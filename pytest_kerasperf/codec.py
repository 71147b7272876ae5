"""JSON data of the typed values, by their generated codec (msgspec)."""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Union

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


def validation_text(error: msgspec.ValidationError, data: Any = None, type_: Any = None) -> str:
    """``at entries/test_x.py::test_y/calls: Expected `int` >= 0``: msgspec's message, the
    place first, one line.  msgspec spells a dict key as ``[...]``; given the ``data`` that
    failed and the ``type_`` it was converted to, the key is found and named."""
    text = " ".join(str(error).split())
    message, sep, path = text.rpartition(" - at `$")
    in_key = not sep  # msgspec's "- at `key` in `$...`": a dict's key failed, not its value
    if in_key:
        message, sep, path = text.rpartition(" - at `key` in `$")
    if not sep:
        return f"at <top level>: {text[:300]}"
    steps = _PATH_STEP.findall(path.rstrip("`"))
    keys = _failing_keys(steps, data, type_) if type_ is not None else []
    place = "/".join(
        (printable_key(keys.pop(0)) if keys else "<key>") if step == "[...]" else step.strip(".[]")
        for step in steps
    )
    return f"at {place or '<top level>'}{' (a key)' if in_key else ''}: {message[:300]}"


#: One step of msgspec's path: ``.field``, ``[index]`` or ``[...]`` (a dict key).
_PATH_STEP = re.compile(r"\.[^.\[]+|\[[^\]]*\]")


def printable_key(key: object) -> str:
    """A key of untrusted data as a place may show it: printable, at most 120 characters."""
    text = str(key).encode("unicode_escape").decode("ascii")
    return text if len(text) <= 120 else text[:117] + "..."


def _failing_keys(steps: list[str], data: Any, type_: Any) -> list[object]:
    """The dict keys along msgspec's ``steps`` in ``data``: at each ``[...]``, the first key
    whose value fails to convert to the dict's value type (what msgspec's path leaves out)."""
    keys: list[object] = []
    for step in steps:
        bare = _unwrap(type_, data)
        origin, args = typing.get_origin(bare), typing.get_args(bare)
        if step == "[...]":
            if not isinstance(data, dict) or origin is not dict or len(args) != 2:
                return keys
            for key, value in data.items():
                try:
                    msgspec.convert(value, args[1])
                except msgspec.ValidationError:
                    keys.append(key)
                    data, type_ = value, args[1]
                    break
            else:
                return keys
        elif step.startswith("["):
            index = int(step[1:-1])
            if not isinstance(data, list) or index >= len(data) or origin not in (list, tuple):
                return keys
            data = data[index]
            type_ = args[0] if origin is list or args[-1] is Ellipsis else args[index]
        else:
            name = step[1:]
            if not (isinstance(bare, type) and issubclass(bare, msgspec.Struct)):
                return keys
            fields = {f.encode_name: f.type for f in msgspec.structs.fields(bare)}
            if not isinstance(data, dict) or name not in fields or name not in data:
                return keys
            data, type_ = data[name], fields[name]
    return keys


def _unwrap(type_: Any, data: Any) -> Any:
    """``type_`` without ``Annotated``, and of a union the one member ``data`` can be."""
    while True:
        origin = typing.get_origin(type_)
        if origin is Annotated:
            type_ = typing.get_args(type_)[0]
        elif origin in (Union, types.UnionType):
            members = [t for t in typing.get_args(type_) if t is not type(None)]
            fitting = [t for t in members if _fits(t, data)]
            if len(fitting) != 1:
                return type_
            type_ = fitting[0]
        else:
            return type_


def _fits(type_: Any, data: Any) -> bool:
    """Whether ``data``'s container kind (object or array) is the one ``type_`` decodes."""
    bare = _unwrap(type_, None) if typing.get_origin(type_) is Annotated else type_
    origin = typing.get_origin(bare) or bare
    if isinstance(data, dict):
        return origin is dict or (isinstance(origin, type) and issubclass(origin, msgspec.Struct))
    if isinstance(data, list):
        return origin in (list, tuple)
    return False
