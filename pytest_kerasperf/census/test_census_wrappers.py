"""One perf test per ``keras.wrappers`` workload (``wrappers.WRAPPERS``): each scikit-learn
wrapper's ``fit`` (it builds, compiles and trains its model one epoch) and its ``predict`` or
``transform`` on a fitted wrapper.  Where Keras cannot train (numpy, openvino) they skip with
Keras's own reason; without scikit-learn, with Keras's ``ImportError``."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import runner, wrappers

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(wrappers.WRAPPERS))
def test_wrapper(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    _, method = wrappers.WRAPPERS[name]
    try:
        estimator, x, y = wrappers.wrapper(name)
        if method != "fit":
            runner.attempt(name, kerasperf_backend, wrappers.BROKEN, lambda: estimator.fit(x, y))
        call = wrappers.workload(estimator, method, x, y)
        ready = runner.trial(name, kerasperf_backend, call, (), {}, wrappers.BROKEN)
    except ImportError as error:  # Keras's own, where scikit-learn is not installed
        pytest.skip(f"kerasperf census: {name}: {runner.describe(error)}")
    kerasperf(ready.call)
