"""pytest-kerasperf: gate Keras performance in pytest.

Exact Python call counts (cProfile), torch.compile graph breaks
(``torch._dynamo.explain``) and device-synced latency (pytest-benchmark),
judged against baselines committed to the repository.
"""

from __future__ import annotations

from pytest_kerasperf.handle import KerasPerf
from pytest_kerasperf.markers import max_calls, max_graph_breaks, max_latency
from pytest_kerasperf.record import Record
from pytest_kerasperf.workloads import generate

__version__ = "0.1.0"
__all__ = [
    "KerasPerf",
    "Record",
    "__version__",
    "generate",
    "max_calls",
    "max_graph_breaks",
    "max_latency",
]
