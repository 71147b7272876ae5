"""``--kerasperf-json``: every outcome of the run, per schemas/results.schema.json.

Each result carries ``record``: the whole measurement, every function and
edge, so ``kerasperf accept`` can turn a results file from CI into baseline
entries (their compact form), and the history commands can diff it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_kerasperf.accounting import RunAccount
from pytest_kerasperf.baseline import write_atomic
from pytest_kerasperf.outcome import Outcome

RESULTS_SCHEMA_VERSION = 3


def document(outcomes: Sequence[Outcome], summary: RunAccount | None) -> dict[str, Any]:
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "summary": _summary(summary),
        "results": [outcome.to_json() for outcome in outcomes],
    }


def _summary(summary: RunAccount | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    data = asdict(summary)
    data["stale"] = list(summary.stale)
    return data


def write(path: Path, outcomes: Sequence[Outcome], summary: RunAccount | None = None) -> None:
    write_atomic(path, json.dumps(document(outcomes, summary), indent=2, sort_keys=True) + "\n")
