"""Readable, machine-independent names for profiled functions and frames."""

from __future__ import annotations

import functools
import os
import re
import types

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_BUILTIN = re.compile(r"^<built-in method (?P<name>.+)>$")
_METHOD = re.compile(r"^<method '(?P<name>[^']+)' of '(?P<owner>[^']+)' objects>$")
_OF_OBJECT = re.compile(r"^(?P<name>\S+) of (?P<owner>.+?) object$")
_MARKERS = ("site-packages", "dist-packages")
#: Content hashes in generated code's names (torch inductor's kernel modules and
#: wrappers are named by a hash of code that embeds local paths): one name.
_CONTENT_HASH = re.compile(r"\b[a-z0-9]{40,}\b")
#: tensorflow's autograph writes each function it converts to a temporary module named
#: ``__autograph_generated_file`` + 8 random characters (``tempfile``): one name, whatever the
#: process drew (two processes gave ``ops.fold`` the same calls under other names).
_AUTOGRAPH_MODULE = re.compile(r"\b__autograph_generated_file[a-z0-9_]{8}\.py\b")
#: torch.fx compiles each GraphModule's code under the file name ``<eval_with_key>.N``, N a
#: counter of every graph the process built before (docs/exact-counts.md#function-names),
#: followed, where fx knows it, by `` from FILE:LINE in NAME`` of the traced code (FILE an
#: absolute path): one name, the origin's file named as any other.
_FX_GRAPH = re.compile(r"<eval_with_key>\.\d+(?: from (?P<origin>.+))?")


@functools.cache
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def relative_path(filename: str) -> str:
    """``.../site-packages/keras/src/ops/operation.py`` -> ``keras/src/ops/operation.py``.

    A file outside site-packages is named from the top of the package that
    holds it (the highest directory with an ``__init__.py`` above it), so a
    Keras git checkout on ``PYTHONPATH`` or an editable install gives the same
    names as an installed wheel, whatever ``sys.path`` holds.  A file in no
    package keeps its base name.
    """
    path = filename.replace(os.sep, "/")
    for marker in _MARKERS:
        index = path.rfind(f"/{marker}/")
        if index >= 0:
            return path[index + len(marker) + 2 :]
    parts = path.split("/")
    top = len(parts) - 1  # index of the file's own name
    while top > 1 and _is_package_dir("/".join(parts[:top]) or "/"):
        top -= 1
    return "/".join(parts[top:])


def function_name(code: types.CodeType | str) -> str:
    """A stable name for a cProfile entry's code.

    Python functions: ``keras/src/ops/operation.py:Operation.__call__``.
    Builtins: ``isinstance``, ``list.append``, ``torch._C._get_tracing_state``.
    Generated code named by a content hash (torch inductor's kernels) becomes
    ``<hash>.kernel.kernel``, ``<hash>.py:Runner.call``; autograph's temporary modules
    ``__autograph_generated_file.py``; torch.fx's graph modules ``<eval_with_key>:forward``.
    """
    name = _CONTENT_HASH.sub("<hash>", _raw_name(code))
    return _AUTOGRAPH_MODULE.sub("__autograph_generated_file.py", name)


def _raw_name(code: types.CodeType | str) -> str:
    if isinstance(code, types.CodeType):
        return f"{_file_name(code.co_filename)}:{code.co_qualname}"
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


def _file_name(filename: str) -> str:
    graph = _FX_GRAPH.fullmatch(filename)
    if graph is None:
        return relative_path(filename)
    origin = graph.group("origin")
    return "<eval_with_key>" + (f" from {relative_path(origin)}" if origin else "")
