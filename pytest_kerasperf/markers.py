"""The markers.  Each is a typed function: its signature is the marker's API
and its docstring the ``--markers`` help, so a wrong argument fails at
collection with Python's own message."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pytest_kerasperf.budget import BACKENDS, MODES, Budget


class MarkerError(Exception):
    pass


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MarkerError(f"{what} must be a non-negative int, got {value!r}")
    if value < 0:
        raise MarkerError(f"{what} must be a non-negative int, got {value}")
    return value


def _scope(value: object, what: str, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise MarkerError(f"{what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def max_calls(
    n: int, *, function: str | None = None, backend: str | None = None, mode: str | None = None
) -> Budget:
    """max_calls(n, *, function=None, backend=None, mode=None): fail if one workload
    call makes more than n Python calls (cProfile), in total or, with function=, in
    that function (e.g. "isinstance", "keras/src/ops/operation.py:Operation.__call__");
    backend= / mode= ("eager" or "compiled") limit it to that backend / mode."""
    limit = _count(n, "n")
    if function is not None and (not isinstance(function, str) or not function):
        raise MarkerError(f"function must be a non-empty str, got {function!r}")
    return Budget(
        "calls",
        limit,
        function,
        _scope(backend, "backend", BACKENDS),
        _scope(mode, "mode", MODES),
    )


def max_graph_breaks(n: int, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_graph_breaks(n, *, backend=None, mode=None): fail if torch.compile breaks
    the compiled model's forward into more than n+1 graphs (torch._dynamo.explain);
    backend= / mode= limit it to that backend / mode."""
    return Budget(
        "graph_breaks",
        _count(n, "n"),
        None,
        _scope(backend, "backend", BACKENDS),
        _scope(mode, "mode", MODES),
    )


def max_latency(ms: float, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_latency(ms, *, backend=None, mode=None): fail if the median latency of one
    workload call exceeds ms milliseconds; enforced on an accelerator, reported only
    on a CPU unless --kerasperf-gate-latency-on-cpu; backend= / mode= limit it to
    that backend / mode."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not ms > 0:
        raise MarkerError(f"ms must be a positive number of milliseconds, got {ms!r}")
    return Budget(
        "latency",
        float(ms),
        None,
        _scope(backend, "backend", BACKENDS),
        _scope(mode, "mode", MODES),
    )


def max_recompiles(n: int, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_recompiles(n, *, backend=None, mode=None): fail if one workload call after
    warm-up compiles more than n times (torch dynamo graph compiles, jax.jit traces,
    tf.function traces of the compiled forwards); backend= / mode= limit it to that
    backend / mode."""
    return Budget(
        "recompiles",
        _count(n, "n"),
        None,
        _scope(backend, "backend", BACKENDS),
        _scope(mode, "mode", MODES),
    )


def max_instructions(n: int, *, backend: str | None = None, mode: str | None = None) -> Budget:
    """max_instructions(n, *, backend=None, mode=None): fail if one workload call executes
    more than n instructions, counted under callgrind (--kerasperf-instructions, run as
    `kerasperf callgrind -- pytest ...`); backend= / mode= limit it to that backend / mode."""
    return Budget(
        "instructions",
        _count(n, "n"),
        None,
        _scope(backend, "backend", BACKENDS),
        _scope(mode, "mode", MODES),
    )


OVERHEAD_METRICS = ("latency", "calls")


def max_overhead(
    ratio: float,
    *,
    metric: str = "latency",
    backend: str | None = None,
    mode: str | None = None,
) -> Budget:
    """max_overhead(ratio, *, metric="latency", backend=None, mode=None): fail if the
    workload under Keras takes more than ratio times its plain twin
    (plain torch / plain JAX, same process and run): median latency, or with
    metric="calls" Python calls; backend= / mode= limit it to that backend / mode."""
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
        raise MarkerError(f"ratio must be a positive number, got {ratio!r}")
    if metric not in OVERHEAD_METRICS:
        raise MarkerError(
            f"metric must be one of {', '.join(map(repr, OVERHEAD_METRICS))}, got {metric!r}"
        )
    return Budget(
        "overhead",
        float(ratio),
        None,
        _scope(backend, "backend", BACKENDS),
        _scope(mode, "mode", MODES),
        metric,
    )


MARKERS: dict[str, Callable[..., Budget]] = {
    "max_calls": max_calls,
    "max_graph_breaks": max_graph_breaks,
    "max_latency": max_latency,
    "max_recompiles": max_recompiles,
    "max_overhead": max_overhead,
    "max_instructions": max_instructions,
}


def perf_mode(*, mode: str | None = None) -> str | None:
    """kerasperf(*, mode=None): a perf test. Added at collection to every test that
    uses the kerasperf fixture or a budget marker, so -m kerasperf selects perf tests;
    on a unittest.TestCase method it gives self.kerasperf, the measuring handle, and
    mode= ("eager" or "compiled") says which mode its measurement is."""
    return _scope(mode, "mode", MODES)


def help_lines() -> list[str]:
    """``name(signature): docstring`` lines for ``config.addinivalue_line("markers", ...)``."""
    funcs: list[Callable[..., object]] = [*MARKERS.values(), perf_mode]
    return [" ".join((func.__doc__ or "").split()) for func in funcs]


def budget_from_mark(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Budget:
    """Call the marker's function with the mark's arguments; MarkerError if they are wrong."""
    func = MARKERS[name]
    try:
        inspect.signature(func).bind(*args, **kwargs)
    except TypeError as error:
        raise MarkerError(str(error)) from None
    return func(*args, **kwargs)
