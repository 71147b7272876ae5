"""``--kerasperf-json``: every result of the run, per docs/results.schema.json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_kerasperf.baseline import write_atomic
from pytest_kerasperf.record import Record
from pytest_kerasperf.verdict import Verdict

RESULTS_SCHEMA_VERSION = 1


def result_json(
    nodeid: str,
    key: str,
    record: Record,
    baseline: Record | None,
    verdict: Verdict,
    passed: bool,
    test_failed: bool = False,
) -> dict[str, Any]:
    """One test's result as plain JSON data (it travels in report.user_properties)."""
    base = None
    if baseline is not None:
        base = {
            "calls": baseline.calls,
            "graph_breaks": baseline.graph_breaks.breaks if baseline.graph_breaks else None,
            "latency_median_ms": baseline.latency.median_ms if baseline.latency else None,
            "environment": dict(baseline.environment),
        }
    return {
        "nodeid": nodeid,
        "key": key,
        "record": record.to_json(),
        "test_failed": test_failed,
        "baseline": base,
        "verdict": {
            "status": verdict.status,
            "passed": passed,
            "failures": list(verdict.failures),
            "notes": list(verdict.notes),
            "calls_delta": verdict.calls_delta,
            "graph_breaks_delta": verdict.graph_breaks_delta,
            "latency_delta_pct": verdict.latency_delta_pct,
            "calls_by_function_diff": [
                {"function": name, "baseline": old, "measured": new}
                for name, old, new in verdict.function_diff
            ],
            "new_graph_breaks": [r.to_json() for r in verdict.new_break_reasons],
        },
    }


def document(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    flat = []
    for result in results:
        record = result["record"]
        latency = record["latency_ms"]
        graph = record["graph_breaks"]
        flat.append(
            {
                "nodeid": result["nodeid"],
                "key": result["key"],
                "backend": record["backend"],
                "mode": record["mode"],
                "calls": record["calls"],
                "calls_by_function": record["calls_by_function"],
                "graph_breaks": graph["breaks"] if graph else None,
                "graph_break_reasons": graph["reasons"] if graph else [],
                "graphs": graph["graphs"] if graph else None,
                "latency_median_ms": latency["median"] if latency else None,
                "latency_iqr_ms": latency["iqr"] if latency else None,
                "latency_rounds": latency["rounds"] if latency else None,
                "device": record["environment"].get("device"),
                "environment": record["environment"],
                "baseline": result["baseline"],
                "verdict": result["verdict"],
            }
        )
    return {"schema_version": RESULTS_SCHEMA_VERSION, "results": flat}


def write(path: Path, results: Sequence[dict[str, Any]]) -> None:
    write_atomic(path, json.dumps(document(results), indent=2, sort_keys=True) + "\n")
