"""What every pytest process with the plugin keeps in ``config.stash``, perf tests or not.

Light on purpose: the plugin loads in every pytest process of an
environment.  The state of a gated run (baselines, results, the verdicts'
settings) lives in ``gate.Gate``, registered only with ``--kerasperf``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_kerasperf.handle import Compiled, Workload  # noqa: F401 (StashKey args)
    from pytest_kerasperf.options import Options
    from pytest_kerasperf.record import GraphRecord, Record  # noqa: F401 (StashKey args)


@dataclass
class PluginState:
    options: Options
    backend: str
    perf_tests: int = 0  # perf tests selected in this process (or, on the controller, by workers)
    env: dict[str, str | None] | None = None
    framework_missing: str | None = None  # the skip reason when the backend cannot run
    usage_error: str | None = None  # raised on an xdist worker, printed by the controller
    compiled: dict[int, Compiled] = field(default_factory=dict)
    #: (``"train"``, the model's builder, mode) -> the model compiled for training
    trained: dict[tuple[str, str, str], Compiled] = field(default_factory=dict)


STATE = pytest.StashKey[PluginState]()
WORKLOAD = pytest.StashKey["Workload"]()
RECORD = pytest.StashKey["Record"]()
GRAPHS = pytest.StashKey["list[GraphRecord]"]()
COMPILED = pytest.StashKey[list[Callable[..., Any]]]()  # compiled forwards a test used
LATENCY_NOT_MEASURED = pytest.StashKey[str]()
