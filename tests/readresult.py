"""Reading one result of a results file (schema version 4) in a test: the numbers live in
its record and its verdict's changes, once each."""

from __future__ import annotations

from typing import Any

Result = dict[str, Any]


def failures(result: Result) -> list[str]:
    """The result's failure lines."""
    return [failure["text"] for failure in result["verdict"]["failures"]]


def failure_kinds(result: Result) -> list[str]:
    return [failure["kind"] for failure in result["verdict"]["failures"]]


def change(result: Result, metric: str) -> dict[str, Any] | None:
    """The verdict's change of ``metric`` (``calls``, ``graph_breaks``, ...), or None."""
    for moved in result["verdict"]["changes"]:
        if moved["metric"] == metric:
            found: dict[str, Any] = moved
            return found
    return None


def calls_delta(result: Result) -> int | None:
    calls = change(result, "calls")
    return None if calls is None else int(calls["after"]) - int(calls["before"])


def graph_breaks(result: Result) -> int | None:
    graph = result["record"]["graph_breaks"]
    return None if graph is None else int(graph["breaks"])


def latency(result: Result) -> dict[str, Any] | None:
    """The record's latency (``median``, ``iqr``, ``rounds``, ``device``), or None."""
    found: dict[str, Any] | None = result["record"]["latency_ms"]
    return found


def calls_change(result: Result) -> dict[str, Any]:
    """The verdict's calls change (``entry_points``, ``explanation``, ``function_diff``)."""
    calls = change(result, "calls")
    assert calls is not None, result["verdict"]
    return calls


def group_delta(group: dict[str, Any]) -> int:
    """The change an explanation's group stands for: its items', or the calls its caller
    makes itself (from summaries)."""
    if group["made"] is not None:
        return int(group["made"])
    return sum(int(item["after"]) - int(item["before"]) for item in group["items"])
