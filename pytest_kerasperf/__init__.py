"""pytest-kerasperf: gate Keras performance in pytest.

Exact Python call counts (cProfile), torch.compile graph breaks
(``torch._dynamo.explain``) and device-synced latency (pytest-benchmark),
judged against baselines committed to the repository.

The pytest11 entry point loads ``pytest_kerasperf.plugin`` in every pytest
process of an environment, perf tests or not: importing this package costs
only the names below, each imported on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_kerasperf.budget import REGISTRY

__version__ = "0.4.0"
__all__ = [
    "KerasPerf",
    "Record",
    "__version__",
    "generate",
    "max_calls",
    "max_graph_breaks",
    "max_instructions",
    "max_latency",
    "max_overhead",
    "max_recompiles",
]

_LAZY = {
    "KerasPerf": "pytest_kerasperf.handle",
    "Record": "pytest_kerasperf.record",
    "generate": "pytest_kerasperf.workloads",
    # each marker from its metric's module
    **{marker: f"pytest_kerasperf.metrics.{name}" for name, marker in REGISTRY if marker},
}

if TYPE_CHECKING:
    from pytest_kerasperf.handle import KerasPerf
    from pytest_kerasperf.metrics.calls import max_calls
    from pytest_kerasperf.metrics.graph_breaks import max_graph_breaks
    from pytest_kerasperf.metrics.instructions import max_instructions
    from pytest_kerasperf.metrics.latency import max_latency
    from pytest_kerasperf.metrics.overhead import max_overhead
    from pytest_kerasperf.metrics.recompiles import max_recompiles
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.workloads import generate


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_kerasperf' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
