"""One perf test per ``keras.distillation`` workload (``distillation.DISTILLATION``): a
``Distiller`` trained one step with logits, feature and both distillation losses, and each
loss's ``compute_loss``.  Where Keras cannot train (numpy, openvino) the training steps skip
with Keras's own reason."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import distillation, runner

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(distillation.DISTILLATION))
def test_distillation(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    runner.public(distillation.DISTILLATION[name][0])
    call = distillation.workload(name)
    ready = runner.trial(name, kerasperf_backend, call, (), {}, distillation.BROKEN)
    kerasperf(ready.call)
