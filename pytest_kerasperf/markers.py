"""The markers.  Each is a typed function in its metric's module (``metrics/``): its
signature is the marker's API and its docstring the ``--markers`` help, so a wrong
argument fails at collection with Python's own message.

Light: the markers' names come from ``metrics.REGISTRY``; a metric's module is
imported only when a test carries its marker or ``pytest --markers`` shows them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_kerasperf import metrics
from pytest_kerasperf.budget import MODES, MarkerError, scope

if TYPE_CHECKING:
    from pytest_kerasperf.budget import Budget

MARKER_NAMES = metrics.MARKER_NAMES


def perf_mode(*, mode: str | None = None, latency: bool = True) -> str | None:
    """kerasperf(*, mode=None, latency=True): a perf test. Added at collection to every test
    that uses the kerasperf fixture or a budget marker, so -m kerasperf selects perf tests;
    on a unittest.TestCase method it gives self.kerasperf, the measuring handle, and
    mode= ("eager" or "compiled") says which mode its measurement is; latency=False: no
    timing pass unless --kerasperf-rounds asks for one (the census's small workloads)."""
    if not isinstance(latency, bool):
        raise MarkerError(f"latency must be True or False, got {latency!r}")
    return scope(mode, "mode", MODES)


def help_lines(full: bool = True) -> list[str]:
    """``name(signature): docstring`` lines for ``config.addinivalue_line("markers", ...)``.

    ``full`` (``pytest --markers``): each marker's signature and docstring, which imports
    the metrics; else the names only, which is all ``--strict-markers`` needs.
    """
    if not full:
        brief = "a pytest-kerasperf budget (`pytest --markers` shows its signature)"
        return [f"{name}: {brief}" for name in MARKER_NAMES] + [_line(perf_mode)]
    funcs: list[Callable[..., object]] = [*metrics.MARKERS.values(), perf_mode]
    return [_line(func) for func in funcs]


def _line(func: Callable[..., object]) -> str:
    return " ".join((func.__doc__ or "").split())


def budget_from_mark(name: str, args: tuple[Any, ...], kwargs: dict[str, object]) -> Budget:
    """Call the marker's function with the mark's arguments; MarkerError if they are wrong."""
    func = metrics.marker(name)
    try:
        inspect.signature(func).bind(*args, **kwargs)
    except TypeError as error:
        raise MarkerError(f"{error}{keyword_hint(error, func)}") from None
    return func(*args, **kwargs)


def keyword_hint(error: Exception, func: Callable[..., object]) -> str:
    """``; did you mean function=?`` for Python's "unexpected keyword argument" of a typo."""
    import difflib
    import re

    match = re.search(r"unexpected keyword argument '(\w+)'", str(error))
    if match is None:
        return ""
    params = list(inspect.signature(func).parameters)
    close = difflib.get_close_matches(match[1], params, n=1, cutoff=0.75)
    return f"; did you mean {close[0]}=?" if close else ""


def close_marker(name: str) -> str | None:
    """The kerasperf marker an unknown marker's ``name`` is likely a typo of (``max_call``)."""
    import difflib

    known = [*MARKER_NAMES, "kerasperf"]
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    return close[0] if close else None


def __getattr__(name: str) -> Any:
    """``markers.max_calls`` and the other marker functions, from their metrics' modules."""
    if name in MARKER_NAMES:
        return metrics.marker(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
