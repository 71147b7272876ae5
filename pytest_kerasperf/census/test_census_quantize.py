"""One perf test per quantization workload: the forward of a quantized ``Dense``,
``EinsumDense`` and ``Embedding``, one training step of a model holding it, the ``quantize``
call itself and a model holding it saved and loaded, in each mode Keras quantizes to without
calibration data; LoRA on each, float and quantized; and GPTQ and AWQ, calibrated on data, with
the forward of what they make and its saving (``quantize_table``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import quantize, runner
from pytest_kerasperf.census.quantize_table import BROKEN, CALIBRATED, QUANTIZED

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's working directory, where a saving workload writes (``runner.work_in``)."""
    runner.work_in(tmp_path, monkeypatch)


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
