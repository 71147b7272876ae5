"""One perf test per ``keras.distribution`` workload (``distribution.DISTRIBUTION``): the
device queries, a mesh, a layout, a layout map's lookups, ``distribute_tensor``, the global
distribution's getter and setter, and ``fit`` under ``DataParallel`` and ``ModelParallel``.
Where Keras has no distribution for the backend (torch, numpy, openvino) they skip with
Keras's own error."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import distribution, runner

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(distribution.DISTRIBUTION))
def test_distribution(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    runner.public(distribution.DISTRIBUTION[name][0])
    try:
        call = distribution.workload(name)
        ready = runner.trial(name, kerasperf_backend, call, (), {}, distribution.BROKEN)
    except AttributeError as error:
        if distribution.has_distribution():
            raise
        pytest.skip(
            f"kerasperf census: Keras has no distribution on {kerasperf_backend}: "
            f"{runner.describe(error)}"
        )
    kerasperf(ready.call)
