"""The run's state, kept in ``config.stash``: options, the baseline, what was seen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf import verdict
from pytest_kerasperf.accounting import Collection, RunAccount, Skip
from pytest_kerasperf.baseline import Change, UpdatePolicy
from pytest_kerasperf.options import Options
from pytest_kerasperf.record import GraphRecord, Record


@dataclass
class Compiled:
    """One model's compiled forward and its graph breaks (torch), reused by every test."""

    model: Any  # kept alive so its id() is never reused
    forward: Callable[..., Any]
    graph: GraphRecord | None


@dataclass
class Session:
    options: Options
    backend: str
    baseline_path: Path
    baseline: dict[str, Record]
    settings: verdict.Settings
    policy: UpdatePolicy
    results: list[dict[str, Any]] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    collection: Collection = field(default_factory=Collection)
    perf_tests: int = 0  # perf tests selected in this process (or, on the controller, by workers)
    changes: list[Change] = field(default_factory=list)
    account: RunAccount | None = None
    env: dict[str, str | None] | None = None
    update_error: str | None = None
    framework_missing: str | None = None  # the skip reason when the backend cannot run
    usage_error: str | None = None  # raised on an xdist worker, printed by the controller
    compiled: dict[int, Compiled] = field(default_factory=dict)
    compare: Any = None  # compare_ref.CompareRef with --kerasperf-compare-ref, else None


@dataclass(frozen=True)
class Workload:
    """What a test measured, kept so that it can be run again (e.g. under a profiler)."""

    call: Callable[[], Any]  # the workload call, arguments bound
    sync: Callable[[Any], Any]  # waits for the device: sync(call()) is one timed call


SESSION = pytest.StashKey[Session]()
WORKLOAD = pytest.StashKey[Workload]()
RECORD = pytest.StashKey[Record]()
GRAPHS = pytest.StashKey[list[GraphRecord]]()
COMPILED = pytest.StashKey[list[Callable[..., Any]]]()  # compiled forwards a test used
LATENCY_NOT_MEASURED = pytest.StashKey[str]()
