"""Readable, machine-independent names for profiled functions and frames."""

from __future__ import annotations

import os
import re
import sys
import types

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_BUILTIN = re.compile(r"^<built-in method (?P<name>.+)>$")
_METHOD = re.compile(r"^<method '(?P<name>[^']+)' of '(?P<owner>[^']+)' objects>$")
_OF_OBJECT = re.compile(r"^(?P<name>\S+) of (?P<owner>.+?) object$")
_MARKERS = ("site-packages", "dist-packages")
#: Content hashes in generated code's names (torch inductor's kernel modules and
#: wrappers are named by a hash of code that embeds local paths): one name.
_CONTENT_HASH = re.compile(r"\b[a-z0-9]{40,}\b")


def relative_path(filename: str) -> str:
    """``.../site-packages/keras/src/ops/operation.py`` -> ``keras/src/ops/operation.py``.

    Files outside site-packages are made relative to the longest ``sys.path``
    entry that holds them, so a Keras git checkout on ``PYTHONPATH`` gives the
    same names as an installed wheel.
    """
    path = filename.replace(os.sep, "/")
    for marker in _MARKERS:
        index = path.rfind(f"/{marker}/")
        if index >= 0:
            return path[index + len(marker) + 2 :]
    best = ""
    for entry in sys.path:
        root = os.path.abspath(entry or os.getcwd()).replace(os.sep, "/").rstrip("/") + "/"
        if path.startswith(root) and len(root) > len(best):
            best = root
    if best:
        return path[len(best) :]
    return path.rsplit("/", 1)[-1]


def function_name(code: types.CodeType | str) -> str:
    """A stable name for a cProfile entry's code.

    Python functions: ``keras/src/ops/operation.py:Operation.__call__``.
    Builtins: ``isinstance``, ``list.append``, ``torch._C._get_tracing_state``.
    Generated code named by a content hash (torch inductor's kernels) becomes
    ``<hash>.kernel.kernel``, ``<hash>.py:Runner.call``.
    """
    return _CONTENT_HASH.sub("<hash>", _raw_name(code))


def _raw_name(code: types.CodeType | str) -> str:
    if isinstance(code, types.CodeType):
        return f"{relative_path(code.co_filename)}:{code.co_qualname}"
    text = _ADDRESS.sub("", code)
    match = _BUILTIN.match(text)
    if match:
        name = match.group("name")
        if name.startswith("builtins."):
            return name[len("builtins.") :]
        of_object = _OF_OBJECT.match(name)
        if of_object:
            return f"{of_object.group('owner')}.{of_object.group('name')}"
        return name
    match = _METHOD.match(text)
    if match:
        return f"{match.group('owner')}.{match.group('name')}"
    return text
