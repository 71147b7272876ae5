"""One perf test per quantization workload: the forward of a quantized ``Dense``,
``EinsumDense`` and ``Embedding``, one training step of a model holding it, and the
``quantize`` call itself, in each mode Keras quantizes to without calibration data; and GPTQ and
AWQ, calibrated on data, with the forward of what they make (``quantize_table``)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import quantize, runner
from pytest_kerasperf.census.quantize_table import BROKEN, CALIBRATED, QUANTIZED

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(QUANTIZED))
def test_quantized(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    layer, mode, kind = QUANTIZED[name]
    workload = quantize.workload(name, layer, mode, kind, kerasperf_backend)
    ready = runner.trial(name, kerasperf_backend, workload, (), {}, BROKEN)
    kerasperf(ready.call)


@pytest.mark.parametrize("name", sorted(CALIBRATED))
def test_calibrated(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    mode, kind = CALIBRATED[name]
    workload = quantize.calibrated(name, mode, kind, kerasperf_backend)
    ready = runner.trial(name, kerasperf_backend, workload, (), {}, BROKEN)
    kerasperf(ready.call)
