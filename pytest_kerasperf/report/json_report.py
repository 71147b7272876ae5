"""``--kerasperf-json``: every result of the run, per schemas/results.schema.json.

Each result carries ``record``: exactly the baseline entry the run measured,
so ``kerasperf accept`` can turn a results file from CI into baseline entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_kerasperf.accounting import RunAccount
from pytest_kerasperf.baseline import write_atomic
from pytest_kerasperf.record import Record
from pytest_kerasperf.verdict import Verdict

RESULTS_SCHEMA_VERSION = 3


def verdict_json(verdict: Verdict, passed: bool) -> dict[str, Any]:
    return {
        "status": verdict.status,
        "passed": passed,
        "failures": list(verdict.failures),
        "notes": list(verdict.notes),
        "compared": verdict.compared,
        "not_compared": verdict.not_compared,
        "mismatched": list(verdict.mismatched),
        "calls_delta": verdict.calls_delta,
        "graph_breaks_delta": verdict.graph_breaks_delta,
        "latency_delta_pct": verdict.latency_delta_pct,
        "entry_points": [asdict(point) for point in verdict.entry_points],
        "calls_by_function_diff": [
            {"function": name, "baseline": old, "measured": new}
            for name, old, new in verdict.function_diff
        ],
        "graph_break_changes": [asdict(change) for change in verdict.break_changes],
    }


def _overhead(record: Record) -> dict[str, Any] | None:
    """Keras / plain framework, same process and run: calls and median latency."""
    if record.reference is None:
        return None
    calls, latency = record.calls_overhead, record.latency_overhead
    return {
        "reference": record.reference.name,
        "calls": None if calls is None else round(calls, 4),
        "latency": None if latency is None else round(latency, 4),
    }


def result_json(
    nodeid: str,
    key: str,
    record: Record,
    baseline: Record | None,
    verdict: Verdict,
    *,
    passed: bool,
    test_failed: bool = False,
    latency_not_measured: str | None = None,
    rerecord: str | None = None,
    location: tuple[str, int] | None = None,
    profile: Mapping[str, str] | None = None,
    variant: str | None = None,
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
        "variant": variant,
        "record": record.to_json(),
        "test_failed": test_failed,
        "latency_not_measured": latency_not_measured,
        "rerecord": rerecord,
        "location": {"path": location[0], "line": location[1]} if location else None,
        "profile": dict(profile) if profile is not None else None,
        "overhead": _overhead(record),
        "baseline": base,
        "verdict": verdict_json(verdict, passed),
    }


def record_of(result: Mapping[str, Any]) -> Record:
    return Record.from_json(result["record"])


def document(results: Sequence[Mapping[str, Any]], summary: RunAccount | None) -> dict[str, Any]:
    flat = []
    for result in results:
        record = result["record"]
        latency = record["latency_ms"]
        graph = record["graph_breaks"]
        flat.append(
            {
                "nodeid": result["nodeid"],
                "key": result["key"],
                "variant": result.get("variant"),
                "backend": record["backend"],
                "mode": record["mode"],
                "calls": record["calls"],
                "graph_breaks": graph["breaks"] if graph else None,
                "graphs": graph["graphs"] if graph else None,
                "latency_median_ms": latency["median"] if latency else None,
                "latency_iqr_ms": latency["iqr"] if latency else None,
                "latency_rounds": latency["rounds"] if latency else None,
                "latency_not_measured": result["latency_not_measured"],
                "device": record["environment"].get("device"),
                "test_failed": result["test_failed"],
                "rerecord": result["rerecord"],
                "location": result.get("location"),
                "profile": result.get("profile"),
                "overhead": result.get("overhead"),
                "baseline": result["baseline"],
                "verdict": result["verdict"],
                "record": record,
            }
        )
        if "compared_with" in result:  # --kerasperf-compare-ref: "baseline" is REF's record
            flat[-1]["compared_with"] = result["compared_with"]
            flat[-1]["ab"] = result.get("ab")
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "summary": _summary(summary),
        "results": flat,
    }


def _summary(summary: RunAccount | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    data = asdict(summary)
    data["stale"] = list(summary.stale)
    return data


def write(
    path: Path, results: Sequence[Mapping[str, Any]], summary: RunAccount | None = None
) -> None:
    write_atomic(path, json.dumps(document(results, summary), indent=2, sort_keys=True) + "\n")
