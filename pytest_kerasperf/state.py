"""What every pytest process with the plugin keeps in ``config.stash``, perf tests or not.

Light on purpose: the plugin loads in every pytest process of an
environment.  The state of a gated run (baselines, results, the verdicts'
settings) lives in ``gate.Gate``, registered only with ``--kerasperf``; the
measuring caches (compiled models, the environment) in ``handle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_kerasperf.accounting import ChangedAccount
    from pytest_kerasperf.options import Options


@dataclass
class PluginState:
    options: Options
    backend: str
    perf_tests: int = 0  # perf tests selected in this process (or, on the controller, by workers)
    usage_error: str | None = None  # raised on an xdist worker, printed by the controller
    shard_tests: tuple[int, int] | None = None  # --kerasperf-shard: (kept, collected) tests
    changed: ChangedAccount | None = None  # --kerasperf-changed: what ran and why


STATE = pytest.StashKey[PluginState]()
