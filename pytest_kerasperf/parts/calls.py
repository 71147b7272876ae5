"""The calls metric's part of a record: how profiled functions are named and totalled, and
``ProfileSummary``, what a committed baseline entry keeps of a call profile.

Pure and light (no framework, no profiler): the verdict, the baseline store, the
explanations and the reports all read it.
"""

from __future__ import annotations

import builtins
import functools
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass

#: caller -> callee -> number of calls (cProfile's caller/callee edges).
CallEdges = Mapping[str, Mapping[str, int]]
#: Where Keras's own functions live in profiled names (``keras/src/ops/core.py:cond``).
KERAS_PREFIX = "keras/"
#: The bucket of C functions that belong to no package (``isinstance``, ``list.append``).
BUILTINS = "builtins"


def is_detailed(name: str) -> bool:
    """Is ``name`` a function a baseline entry keeps by itself (``ProfileSummary.functions``)?

    Keras's Python functions (``keras/src/layers/layer.py:Layer.__call__``), and
    those of a test module outside any package (``test_perf.py:work``): the code
    a reviewer acts on.  Everything else is totalled by package.
    """
    if ":" not in name or name.startswith("<"):
        return False
    path = name.split(":", 1)[0]
    if path.startswith(KERAS_PREFIX):
        return True
    return "/" not in path and path.removesuffix(".py") not in sys.stdlib_module_names


def package_of(name: str) -> str:
    """The bucket a profiled function's calls go to in the outside-Keras totals.

    Python functions (``path:qualname``) go to their top-level package
    (``torch/nn/modules/module.py:Module._call_impl`` -> ``torch``), C functions
    (dotted) to their module's (``torch._C._nn.linear`` -> ``torch``).  Python's
    builtins and their types' methods (``isinstance``, ``list.append``) are
    ``builtins``; the standard library, frozen or not, ``stdlib``; generated code
    ``<string>`` (dataclass methods, dynamo's guards), ``<hash>`` (torch
    inductor's kernels) and ``<eval_with_key>`` (torch.fx's graph modules); anything else
    unnamed ``other``.
    """
    if name.startswith("<frozen"):
        return STDLIB
    if name.startswith(("<string>", "<hash>", "<eval_with_key>")):
        return name[: name.index(">") + 1]
    if name.startswith("<"):  # a C function shown by its repr: <jaxlib.utils.safe_map>
        inner = name.strip("<>")
        if inner.startswith("function "):
            return OTHER
        return _module_bucket(inner.split(".", 1)[0]) if "." in inner else OTHER
    if ":" in name:
        path = name.split(":", 1)[0]
        top = path.split("/", 1)[0].removesuffix(".py")
        return STDLIB if top in sys.stdlib_module_names else top
    if "." not in name:
        return BUILTINS
    return _module_bucket(name.split(".", 1)[0])


STDLIB = "stdlib"
OTHER = "other"
_BUILTIN_NAMES = frozenset(dir(builtins)) | {
    t.__name__ for t in vars(types).values() if isinstance(t, type)
}


def _module_bucket(head: str) -> str:
    if head in _BUILTIN_NAMES:
        return BUILTINS
    if head in sys.stdlib_module_names:
        return STDLIB
    return head


#: Packages that are never a contributor's own code, wherever they are installed.
_NOT_PROJECT = frozenset({BUILTINS, STDLIB, OTHER, "keras", "pytest_kerasperf"})


def is_project_code(name: str) -> bool:
    """Is ``name`` a Python function of the user's own code outside Keras: a package of their
    project (``mylib/blocks.py:Scale.call``), imported from outside every installed
    distribution's directory (site-packages), the standard library and generated code?

    Reads where the package is imported from (``importlib.util.find_spec``), so it is for
    naming code in a message, never for a count."""
    if ":" not in name or name.startswith("<"):
        return False
    package = package_of(name)
    return package not in _NOT_PROJECT and _project_cache(package)


def _installed_roots() -> tuple[str, ...]:
    import site
    import sysconfig

    roots = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), sys.base_prefix}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    roots.add(site.getusersitepackages())
    return tuple(sorted(str(root) for root in roots if root))


@functools.cache
def _project_cache(package: str) -> bool:
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    origin = spec.origin if spec is not None else None
    if origin is None or not os.path.isabs(origin):
        return False
    real = os.path.realpath(origin)
    return not any(real.startswith(os.path.realpath(root) + os.sep) for root in _installed_roots())


def profile_digest(calls_by_function: Mapping[str, int], call_edges: CallEdges) -> str:
    """sha256 of a profile's every function count and caller -> callee edge, canonical JSON."""
    import hashlib
    import json

    data = {
        "call_edges": plain_edges(call_edges),
        "calls_by_function": {k: int(v) for k, v in sorted(calls_by_function.items())},
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ProfileSummary:
    """What a committed baseline entry keeps of a call profile (docs/baselines.md).

    ``functions``: each Keras function's calls, and the calls it makes itself
    (the sum of its caller -> callee edges), and the same for the functions of
    a test module outside any package (``is_detailed``); ``outside``: every
    other call, totalled by top-level package (``package_of``); ``sha256``: the
    digest of the whole profile, every function and edge, so that a change
    anywhere is seen even where the totals stay the same.  ``calls`` equals the
    sum of ``functions`` calls and ``outside``.
    """

    functions: Mapping[str, tuple[int, int]]  # function -> (calls, calls it makes)
    outside: Mapping[str, int]  # package -> calls
    sha256: str

    def __post_init__(self) -> None:  # sorted, as an entry writes them
        object.__setattr__(self, "functions", dict(sorted(self.functions.items())))
        object.__setattr__(self, "outside", dict(sorted(self.outside.items())))

    @classmethod
    def of(cls, calls_by_function: Mapping[str, int], call_edges: CallEdges) -> ProfileSummary:
        functions: dict[str, tuple[int, int]] = {}
        outside: dict[str, int] = {}
        for name, count in calls_by_function.items():
            if is_detailed(name):
                made = sum(int(n) for n in call_edges.get(name, {}).values())
                functions[name] = (int(count), made)
            else:
                package = package_of(name)
                outside[package] = outside.get(package, 0) + int(count)
        return cls(functions, outside, profile_digest(calls_by_function, call_edges))

    @property
    def calls(self) -> int:
        return sum(calls for calls, _ in self.functions.values()) + sum(self.outside.values())

    def grouped(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Functions grouped by file (``{"keras/src/layers/layer.py": {"Layer.__call__":
        (7, 91)}}``), as an entry holds them: a diff of a baseline file names the file once."""
        grouped: dict[str, dict[str, tuple[int, int]]] = {}
        for name, (calls, made) in sorted(self.functions.items()):
            path, qualname = name.split(":", 1)
            grouped.setdefault(path, {})[qualname] = (calls, made)
        return grouped

    @classmethod
    def from_grouped(
        cls,
        grouped: Mapping[str, Mapping[str, tuple[int, int]]],
        outside: Mapping[str, int],
        sha256: str,
    ) -> ProfileSummary:
        functions = {
            f"{path}:{qualname}": (int(calls), int(made))
            for path, in_file in grouped.items()
            for qualname, (calls, made) in in_file.items()
        }
        return cls(functions, outside, sha256)


def plain_edges(edges: CallEdges) -> dict[str, dict[str, int]]:
    """Edges as sorted plain dicts (canonical JSON, a digest)."""
    return {
        caller: {callee: int(n) for callee, n in sorted(callees.items())}
        for caller, callees in sorted(edges.items())
    }
