"""The markers' API: arguments become Budgets, wrong arguments a MarkerError."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from pytest_kerasperf import markers, metrics
from pytest_kerasperf.budget import MarkerError
from pytest_kerasperf.markers import budget_from_mark
from pytest_kerasperf.record import Budget


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "expected"),
    [
        ("max_calls", (0,), {}, Budget("calls", 0)),
        ("max_calls", (10**6,), {}, Budget("calls", 10**6)),
        ("max_calls", (5,), {"function": "isinstance"}, Budget("calls", 5, "isinstance")),
        ("max_calls", (), {"n": 7}, Budget("calls", 7)),
        ("max_calls", (5,), {"function": None}, Budget("calls", 5)),
        ("max_graph_breaks", (0,), {}, Budget("graph_breaks", 0)),
        ("max_graph_breaks", (3,), {}, Budget("graph_breaks", 3)),
        ("max_latency", (2,), {}, Budget("latency", 2.0)),
        ("max_latency", (0.25,), {}, Budget("latency", 0.25)),
        ("max_latency", (), {"ms": 1.5}, Budget("latency", 1.5)),
        (
            "max_calls",
            (9,),
            {"backend": "torch", "mode": "eager"},
            Budget("calls", 9, backend="torch", mode="eager"),
        ),
        ("max_calls", (9,), {"mode": "compiled"}, Budget("calls", 9, mode="compiled")),
        (
            "max_graph_breaks",
            (0,),
            {"backend": "torch"},
            Budget("graph_breaks", 0, backend="torch"),
        ),
        ("max_latency", (1,), {"backend": "jax"}, Budget("latency", 1.0, backend="jax")),
    ],
)
def test_valid_marks_become_budgets(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], expected: Budget
) -> None:
    budget = budget_from_mark(name, args, kwargs)
    assert budget == expected
    assert isinstance(budget.limit, float) == (name == "max_latency")


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "message"),
    [
        ("max_calls", ("x",), {}, "n must be a non-negative int, got 'x'"),
        ("max_calls", (-1,), {}, "n must be a non-negative int, got -1"),
        ("max_calls", (True,), {}, "n must be a non-negative int, got True"),
        ("max_calls", (1.5,), {}, "n must be a non-negative int, got 1.5"),
        ("max_calls", (None,), {}, "n must be a non-negative int, got None"),
        ("max_calls", (), {}, "missing a required argument: 'n'"),
        ("max_calls", (1, 2), {}, "too many positional arguments"),
        ("max_calls", (5,), {"fn": "x"}, "got an unexpected keyword argument 'fn'"),
        ("max_calls", (5, "isinstance"), {}, "too many positional arguments"),
        ("max_calls", (5,), {"function": ""}, "function must be a non-empty str, got ''"),
        ("max_calls", (5,), {"function": 3}, "function must be a non-empty str, got 3"),
        ("max_graph_breaks", (-2,), {}, "n must be a non-negative int, got -2"),
        ("max_graph_breaks", ("1",), {}, "n must be a non-negative int, got '1'"),
        ("max_graph_breaks", (1,), {"function": "f"}, "unexpected keyword argument 'function'"),
        ("max_latency", (0,), {}, "ms must be a positive number of milliseconds, got 0"),
        ("max_latency", (-1.0,), {}, "ms must be a positive number of milliseconds, got -1.0"),
        ("max_latency", ("5",), {}, "ms must be a positive number of milliseconds, got '5'"),
        ("max_latency", (True,), {}, "ms must be a positive number of milliseconds, got True"),
        ("max_latency", (float("nan"),), {}, "ms must be a positive number of milliseconds"),
        ("max_latency", (), {}, "missing a required argument: 'ms'"),
        (
            "max_calls",
            (5,),
            {"backend": "mlx"},
            "backend must be one of 'torch', 'jax', 'tensorflow', 'numpy', 'openvino', got 'mlx'",
        ),
        ("max_calls", (5,), {"mode": "jit"}, "mode must be one of 'eager', 'compiled', got 'jit'"),
        ("max_graph_breaks", (0,), {"mode": 1}, "mode must be one of 'eager', 'compiled', got 1"),
        ("max_latency", (1,), {"backend": ["torch"]}, "backend must be one of"),
        ("max_calls", (5, "torch"), {}, "too many positional arguments"),
        ("max_recompiles", (-1,), {}, "n must be a non-negative int, got -1"),
        ("max_recompiles", (0,), {"mode": "jit"}, "mode must be one of 'eager', 'compiled'"),
        ("max_overhead", (0,), {}, "ratio must be a positive number, got 0"),
        ("max_overhead", ("1.6",), {}, "ratio must be a positive number, got '1.6'"),
        (
            "max_overhead",
            (1.6,),
            {"metric": "memory"},
            "metric must be one of 'latency', 'calls', got 'memory'",
        ),
        ("max_overhead", (1.6, "calls"), {}, "too many positional arguments"),
        ("max_instructions", (-5,), {}, "n must be a non-negative int, got -5"),
        ("max_instructions", (1.5,), {}, "n must be a non-negative int, got 1.5"),
        ("max_instructions", (10,), {"backend": "cuda"}, "backend must be one of"),
    ],
)
def test_wrong_arguments_are_a_marker_error(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(MarkerError) as error:
        budget_from_mark(name, args, kwargs)
    assert message in str(error.value)


def test_every_marker_is_a_typed_function_returning_a_budget() -> None:
    assert set(metrics.MARKERS) == {
        "max_calls",
        "max_graph_breaks",
        "max_latency",
        "max_recompiles",
        "max_overhead",
        "max_instructions",
    }
    for name, func in metrics.MARKERS.items():
        assert func.__name__ == name
        signature = inspect.signature(func)
        assert signature.return_annotation in (Budget, "Budget")
        assert all(
            p.annotation is not inspect.Parameter.empty for p in signature.parameters.values()
        )


def test_help_lines_are_one_line_each_and_start_with_the_signature() -> None:
    lines = markers.help_lines()
    documented: dict[str, Callable[..., Any]] = {**metrics.MARKERS, "kerasperf": markers.perf_mode}
    assert len(lines) == len(documented)
    for line, (name, func) in zip(lines, documented.items(), strict=True):
        assert "\n" not in line
        assert "  " not in line
        assert line.startswith(f"{name}("), line
        signature = line.split("): ", 1)[0]
        for param in inspect.signature(func).parameters:
            assert param in signature, (param, line)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [({}, None), ({"mode": "eager"}, "eager"), ({"mode": "compiled"}, "compiled")],
)
def test_the_kerasperf_marker_takes_a_mode(kwargs: dict[str, Any], expected: str | None) -> None:
    assert markers.perf_mode(**kwargs) == expected
    with pytest.raises(MarkerError, match="mode must be one of 'eager', 'compiled', got 'jit'"):
        markers.perf_mode(mode="jit")


@pytest.mark.parametrize(
    ("budget", "text"),
    [
        (Budget("calls", 1234), "max_calls(1,234)"),
        (Budget("calls", 5, "isinstance"), "max_calls(5, function='isinstance')"),
        (Budget("graph_breaks", 2), "max_graph_breaks(2)"),
        (Budget("latency", 2.5), "max_latency(2.5 ms)"),
        (Budget("latency", 3.0), "max_latency(3 ms)"),
        (
            Budget("calls", 5, "isinstance", backend="torch", mode="eager"),
            "max_calls(5, function='isinstance', backend='torch', mode='eager')",
        ),
        (Budget("graph_breaks", 0, mode="compiled"), "max_graph_breaks(0, mode='compiled')"),
        (Budget("latency", 2.0, backend="jax"), "max_latency(2 ms, backend='jax')"),
    ],
)
def test_budget_describe(budget: Budget, text: str) -> None:
    assert metrics.BY_NAME[budget.kind].describe(budget) == text


def test_the_package_exports_every_marker() -> None:
    import pytest_kerasperf

    for name in metrics.MARKER_NAMES:
        assert name in pytest_kerasperf.__all__
        assert getattr(pytest_kerasperf, name) is metrics.marker(name)
